//! `agent-tray-desktop --version` and `--help` answer at once, with no display and no running
//! app, and touch nothing: they once went on to start GTK (a panic with no display) or, with an
//! app running, opened its window.

use std::process::{Command, Stdio};

fn run(arg: &str, home: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_agent-tray-desktop"))
        .arg(arg)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("AGENT_TRAY_HOME", home.join("tray"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn version_and_help_answer_without_a_display_and_create_nothing() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (arg, expected) in [
        (
            "--version",
            format!("agent-tray-desktop {}\n", env!("CARGO_PKG_VERSION")),
        ),
        (
            "-V",
            format!("agent-tray-desktop {}\n", env!("CARGO_PKG_VERSION")),
        ),
    ] {
        let out = run(arg, home.path());
        assert!(out.status.success(), "{arg}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{arg}");
    }
    for arg in ["--help", "-h"] {
        let out = run(arg, home.path());
        assert!(out.status.success(), "{arg}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Usage: agent-tray-desktop [--background]"),
            "{arg}: {text}"
        );
        assert!(
            out.stderr.is_empty(),
            "{arg}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Nothing was started: no runtime folder, no app home, no lock.
    let made = created_in(home.path());
    assert!(made.is_empty(), "created {made:?}");
}

/// What a run left in its home folder.
fn created_in(home: &std::path::Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(home)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.file_name())
        .collect()
}

#[cfg(unix)]
#[test]
fn a_window_host_started_by_hand_refuses_before_any_gui_and_creates_nothing() {
    // The app starts `--window-host` itself with a socket on its standard input; from a
    // terminal (here: /dev/null) it says what to run instead, with no display needed.
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = run("--window-host", home.path());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("the app starts its window host itself"),
        "{said}"
    );
    assert!(
        said.contains("run agent-tray-desktop to open the window"),
        "{said}"
    );
    let made = created_in(home.path());
    assert!(made.is_empty(), "created {made:?}");
}
