//! Crush through the real `agent-tray` binary: `install`/`uninstall --crush` in a user's
//! `crush.json` (byte-safe, `--dry-run`, a backup kept), and the hook command line install wrote
//! delivering Crush's payloads from under a process named `crush` (a renamed shell standing for
//! the TUI, which runs its hooks as children): the session is listed with that process's pid, and
//! `kill -9` of it ends the row. The real Crush is not run here: its binary is a download its npm
//! package's install step makes (`tests/fixtures/crush/docs-0.96.1/README.md`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

#[cfg(unix)]
use std::io::Write as _;
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::process::{Command, Stdio};
#[cfg(unix)]
use std::time::Duration;

use common::World;
#[cfg(unix)]
use common::{bin, wait_until};
use serde_json::Value;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/crush/docs-0.96.1"
);

fn world() -> (World, PathBuf) {
    let w = World::new();
    let cfg = w.path().join("crush-config");
    std::fs::create_dir_all(&cfg).unwrap();
    let w = w.with_env("CRUSH_GLOBAL_CONFIG", &cfg.display().to_string());
    (w, cfg.join("crush.json"))
}

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[cfg(unix)]
fn payloads() -> Vec<String> {
    std::fs::read_to_string(Path::new(FIXTURES).join("payloads.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn install_crush_merges_into_the_users_crush_json_and_uninstall_gives_it_back() {
    // A user with providers, options and two hooks of their own installs: a dry run shows the
    // diff and writes nothing; the install adds one flat entry per event and keeps a backup; a
    // second install changes nothing; the uninstall gives the file back byte for byte.
    let (w, file) = world();
    let theirs = std::fs::read_to_string(Path::new(FIXTURES).join("crush.json")).unwrap();
    std::fs::write(&file, &theirs).unwrap();
    let dry = w.run(&["install", "--crush", "--dry-run", "--allow-insecure-path"]);
    assert!(dry.status.success(), "{}", out(&dry));
    assert!(out(&dry).contains("hook --agent crush"), "{}", out(&dry));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        theirs,
        "--dry-run wrote"
    );
    let first = w.run(&["install", "--crush", "--allow-insecure-path"]);
    assert!(first.status.success(), "{}", out(&first));
    let text = std::fs::read_to_string(&file).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["hooks"]["TurnEnd"][0]["name"], "play-complete-sound");
    assert_eq!(doc["hooks"]["TurnEnd"][1]["name"], "agent-tray");
    assert_eq!(doc["hooks"]["PermissionRequest"][0]["timeout"], 5);
    let backups = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("agent-tray-backup")
        })
        .count();
    assert_eq!(backups, 1, "a backup of the user's file is kept");
    let again = w.run(&["install", "--crush", "--allow-insecure-path"]);
    assert!(again.status.success(), "{}", out(&again));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "second install"
    );
    let gone = w.run(&["uninstall", "--crush"]);
    assert!(gone.status.success(), "{}", out(&gone));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);
}

#[test]
#[cfg(unix)] // a renamed `sh` stands for Crush's process
fn a_crush_session_is_listed_with_its_process_and_ends_when_that_process_is_killed() {
    let (w, file) = world();
    // The watcher ticks often, so the live `crush` is confirmed (seen alive) within the test.
    let w = w.with_env("AGENT_TRAY_PID_WATCH_INTERVAL_MS", "200");
    let _daemon = w.start_daemon();
    let install = w.run(&["install", "--crush", "--allow-insecure-path"]);
    assert!(install.status.success(), "{}", out(&install));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let command = doc["hooks"]["TurnStart"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(command.contains(&bin().display().to_string()), "{command}");

    // `crush` runs the hook line install wrote for each payload of a turn, then stays (reading
    // its stdin, which this test holds open) as the TUI would.
    let parents = w.path().join("parents");
    std::fs::create_dir_all(&parents).unwrap();
    let crush = parents.join("crush");
    common::copy_executable(&std::fs::canonicalize("/bin/sh").unwrap(), &crush);
    let lines = payloads();
    let turn = w.path().join("turn.jsonl");
    std::fs::write(&turn, lines[..4].join("\n") + "\n").unwrap();
    let script = format!(
        "while IFS= read -r line; do printf '%s\\n' \"$line\" | {command}; done < '{}'; read -r _",
        turn.display()
    );
    let mut cmd = Command::new(&crush);
    cmd.arg("-c")
        .arg(&script)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    for (k, v) in &w.envs {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    let pid = child.id();
    let id = "c6f2b8a4-5d1e-4f3a-9b7c-2e8d1a0f4c55";
    let listed = wait_until(Duration::from_secs(10), || {
        w.session(id)
            .filter(|s| s["state"] == "waiting_for_permission")
    });
    let Some(s) = listed else {
        common::kill_hard(pid);
        let _ = child.wait();
        panic!("the Crush session never waited: {:?}", w.list());
    };
    assert_eq!(s["agent"], "crush");
    assert_eq!(s["cwd"], "/home/dev/api");
    assert_eq!(s["pid"], pid, "the crush process above the hook owns it");
    // Positive control for what follows: the live process is vouched for (its start token is
    // captured), so its death, not a hook's shell's, is what ends the row.
    let vouched = wait_until(Duration::from_secs(10), || {
        w.session(id).filter(|s| !s["pid_start"].is_null())
    });
    if vouched.is_none() {
        common::kill_hard(pid);
        let _ = child.wait();
        panic!("the live crush was never vouched for: {:?}", w.session(id));
    }

    common::kill_hard(pid);
    let _ = child.wait();
    drop(child.stdin.take().map(|mut i| i.flush()));
    let ended = wait_until(Duration::from_secs(10), || {
        w.state_of(id).filter(|s| s == "ended")
    });
    assert!(
        ended.is_some(),
        "kill -9 of crush did not end it: {:?}",
        w.session(id)
    );
}
