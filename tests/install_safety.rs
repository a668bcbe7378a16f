//! `agent-tray install` run from a real copy of the binary in folders other users could write:
//! refused with the reason and the fix, nothing written; accepted where only its user can write,
//! and with `--allow-insecure-path`.
//!
//! One test function on purpose: the copy is executed right after it is written, and a fork
//! in a parallel test of the same process could hold its write descriptor (ETXTBSY).

// Permission bits of the hook program's folders: a unix check (Windows has access lists).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_agent-tray");

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for d in ["home", "claude", "codex", "tray"] {
            fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        World { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn install(&self, program: &Path, extra: &[&str]) -> Output {
        Command::new(program)
            .arg("install")
            .args(extra)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.path("home"))
            .env("CLAUDE_CONFIG_DIR", self.path("claude"))
            .env("CODEX_HOME", self.path("codex"))
            .env("AGENT_TRAY_HOME", self.path("tray"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn nothing_written(&self) -> bool {
        !self.path("claude/settings.json").exists()
            && !self.path("codex/hooks.json").exists()
            && !self.path("codex/config.toml").exists()
    }

    fn reset(&self) {
        for f in [
            "claude/settings.json",
            "codex/hooks.json",
            "codex/config.toml",
        ] {
            let _ = fs::remove_file(self.path(f));
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn install_refuses_a_binary_that_other_users_could_replace() {
    let w = World::new();
    let shared = w.path("shared");
    fs::create_dir(&shared).unwrap();
    let copy = shared.join("agent-tray");
    fs::copy(BIN, &copy).unwrap();
    chmod(&copy, 0o755);

    // A world-writable folder (no sticky bit): refused, with the reason and the fix.
    chmod(&shared, 0o777);
    let out = w.install(&copy, &[]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&shared.display().to_string())
            && said.contains("writable by its group and every user (mode 0777)")
            && said.contains("chmod go-w")
            && said.contains("--allow-insecure-path"),
        "{said}"
    );
    assert!(w.nothing_written(), "a refusal writes nothing");

    // doctor run from there says so too.
    let out = Command::new(&copy)
        .arg("doctor")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", w.path("home"))
        .env("CLAUDE_CONFIG_DIR", w.path("claude"))
        .env("CODEX_HOME", w.path("codex"))
        .env("AGENT_TRAY_HOME", w.path("tray"))
        .env("XDG_RUNTIME_DIR", w.path("tray"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = text(&out);
    assert!(
        said.lines()
            .any(|l| l.starts_with('✗') && l.contains("another local user could replace")),
        "{said}"
    );

    // A dry run says the same: it shows what install would do, and install would refuse.
    let out = w.install(&copy, &["--dry-run"]);
    assert!(!out.status.success(), "{}", text(&out));

    // Group-writable is refused too.
    chmod(&shared, 0o775);
    let out = w.install(&copy, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("writable by its group (mode 0775)"),
        "{}",
        text(&out)
    );
    assert!(w.nothing_written());

    // A safe folder, but the binary itself writable by everyone.
    chmod(&shared, 0o755);
    chmod(&copy, 0o757);
    let out = w.install(&copy, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&copy.display().to_string()),
        "{}",
        text(&out)
    );
    assert!(w.nothing_written());

    // Positive controls. The same copy in a folder only its user can write is installed.
    chmod(&copy, 0o755);
    let out = w.install(&copy, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out_doctor = Command::new(&copy)
        .arg("doctor")
        .env_clear()
        .env("HOME", w.path("home"))
        .env("AGENT_TRAY_HOME", w.path("tray"))
        .env("XDG_RUNTIME_DIR", w.path("tray"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        !text(&out_doctor).contains("could replace"),
        "{}",
        text(&out_doctor)
    );
    let settings = fs::read_to_string(w.path("claude/settings.json")).unwrap();
    assert!(
        settings.contains(&format!("{} hook --agent claude", copy.display())),
        "{settings}"
    );
    w.reset();

    // A sticky world-writable folder (like /tmp) protects what its users own: accepted.
    chmod(&shared, 0o1777);
    let out = w.install(&copy, &[]);
    assert!(out.status.success(), "{}", text(&out));
    w.reset();

    // And the user may accept the risk explicitly.
    chmod(&shared, 0o777);
    let out = w.install(&copy, &["--allow-insecure-path"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(fs::read_to_string(w.path("claude/settings.json"))
        .unwrap()
        .contains(&copy.display().to_string()));

    // Uninstall needs no check: it only removes.
    let out = Command::new(&copy)
        .arg("uninstall")
        .env_clear()
        .env("HOME", w.path("home"))
        .env("CLAUDE_CONFIG_DIR", w.path("claude"))
        .env("CODEX_HOME", w.path("codex"))
        .env("AGENT_TRAY_HOME", w.path("tray"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    chmod(&shared, 0o755);
}
