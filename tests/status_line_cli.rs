//! `agent-tray status-line`, the real binary: the user's own status line prints unchanged
//! whatever the engine does, and what Claude Code's input says reaches the engine (recorded
//! inputs: `tests/fixtures/claude/real-2.1.332/status-line-*.json`).
#![cfg(unix)] // the user's command runs through `sh`
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{wait_until, World};
use serde_json::Value;

const AFTER_TURN: &str = include_str!("fixtures/claude/real-2.1.332/status-line-after-turn.json");
const OAUTH: &str = include_str!("fixtures/claude/real-2.1.332/status-line-oauth-after-turn.json");

/// The bridge as Claude runs it: `args`, the input on stdin, stdout and stderr kept.
fn bridge(w: &World, args: &[&str], input: &[u8]) -> (Output, Duration) {
    let mut all = vec!["status-line"];
    all.extend_from_slice(args);
    let mut cmd = w.command(&all);
    cmd.current_dir(w.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn_retrying().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (out, started.elapsed())
}

/// The OAuth recording with its windows resetting in the future (as they did when recorded).
fn plan_input(five_hour_used: u64) -> String {
    let mut doc: Value = serde_json::from_str(OAUTH).unwrap();
    let now = chrono::Utc::now().timestamp();
    doc["rate_limits"]["five_hour"]["resets_at"] = (now + 95 * 60).into();
    doc["rate_limits"]["five_hour"]["used_percentage"] = five_hour_used.into();
    doc["rate_limits"]["seven_day"]["resets_at"] = (now + 3 * 86_400).into();
    doc.to_string()
}

// A user with a coloured status line of their own: with no engine running, it prints its
// exact bytes, gets exactly Claude's input, and its exit status is the bridge's.
#[test]
fn the_users_own_line_prints_unchanged_with_its_input_and_exit_status_and_no_engine() {
    let w = World::new();
    let user =
        "printf '\\033[1;31mMINE\\033[0m %s' \"$(pwd)\"; cat > got.json; echo oops >&2; exit 3";
    let (out, took) = bridge(
        &w,
        &["--agent", "claude", "--then", user],
        AFTER_TURN.as_bytes(),
    );
    let cwd = w.path().display().to_string();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("\u{1b}[1;31mMINE\u{1b}[0m {cwd}"),
        "the user's bytes, colours and all"
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "oops\n");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        std::fs::read_to_string(w.path().join("got.json")).unwrap(),
        AFTER_TURN,
        "the same input"
    );
    assert!(
        took < Duration::from_secs(1),
        "no engine costs nothing: {took:?}"
    );
}

// Input past the bridge's read limit (2 MiB), or garbage: the user's command still gets all of
// it and prints; nothing reaches the engine.
#[test]
fn a_huge_or_garbage_input_still_reaches_the_users_line_whole_and_changes_nothing() {
    let w = World::new();
    let daemon = w.start_daemon();
    let mut huge: Value = serde_json::from_str(AFTER_TURN).unwrap();
    huge["padding"] = "x".repeat(2 << 20).into();
    let huge = huge.to_string();
    for input in [huge.as_bytes(), b"\x00\xffnot json{{{", b"{}", b""] {
        let (out, _) = bridge(&w, &["--agent", "claude", "--then", "wc -c"], input);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            input.len().to_string(),
            "the user's command read every byte"
        );
    }
    // Positive control: the recorded input itself does make a row (below); these made none.
    assert!(w.list().is_empty(), "{:?}", w.list());
    let (out, _) = bridge(
        &w,
        &["--agent", "claude", "--then", "true"],
        AFTER_TURN.as_bytes(),
    );
    assert!(out.status.success());
    let row = wait_until(Duration::from_secs(5), || {
        w.session("82326879-ce47-4343-afa6-e196e431201b")
    })
    .unwrap_or_else(|| panic!("no row from the recorded input: {}", daemon.log_text()));
    assert_eq!(row["context_window"], 1_000_000);
}

// Claude's status line with the bridge: the row gets the window Claude named and the last
// turn's tokens, the plan windows appear in `limits`, a used-up window stops the session until
// its reset, and without a command of the user's the bridge prints a short line of its own.
#[test]
fn the_recorded_input_gives_the_row_its_window_and_the_plan_its_windows() {
    let w = World::new();
    let daemon = w.start_daemon();
    let id = "177d16e6-73fc-4c25-af71-cd6ab4c4f2cf";
    // The session as the hooks know it: working on a turn.
    w.observe(&[
        "--agent",
        "claude",
        "--session",
        id,
        "--event",
        "UserPromptSubmit",
    ]);
    let (out, _) = bridge(&w, &["--agent", "claude"], plan_input(42).as_bytes());
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "claude-sonnet-5-5 · 0% of 1.0M context · 5h 42% · weekly 12%\n"
    );
    let row = wait_until(Duration::from_secs(5), || {
        w.session(id).filter(|s| s["context_window"] == 1_000_000)
    })
    .unwrap_or_else(|| {
        panic!(
            "the window never came: {:?} {}",
            w.session(id),
            daemon.log_text()
        )
    });
    assert_eq!(row["context_tokens"], 110);
    assert_eq!(row["state"], "working", "a status line moves no state");
    assert_eq!(row["blocked_until"], Value::Null);
    let limits: Vec<Value> = serde_json::from_slice(&w.run(&["limits", "--json"]).stdout).unwrap();
    let windows: Vec<(&str, &str, &str, f64)> = limits
        .iter()
        .map(|l| {
            (
                l["agent"].as_str().unwrap(),
                l["account"].as_str().unwrap(),
                l["window"].as_str().unwrap(),
                l["used_percent"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        windows,
        [
            ("claude", "plan", "5h", 42.0),
            ("claude", "plan", "weekly", 12.0)
        ]
    );
    let table = String::from_utf8_lossy(&w.run(&["limits"]).stdout).into_owned();
    assert!(
        table.contains("Claude plan: 5h window 42% used, resets "),
        "{table}"
    );
    // The five-hour window used up: the session is stopped until it resets.
    let (out, _) = bridge(&w, &["--agent", "claude"], plan_input(100).as_bytes());
    assert!(out.status.success());
    let row = wait_until(Duration::from_secs(5), || {
        w.session(id).filter(|s| s["blocked_until"].is_string())
    })
    .unwrap_or_else(|| panic!("no blocked_until: {:?}", w.session(id)));
    let until = chrono::DateTime::parse_from_rfc3339(row["blocked_until"].as_str().unwrap())
        .unwrap()
        .timestamp();
    let reset = chrono::Utc::now().timestamp() + 95 * 60;
    assert!((until - reset).abs() <= 5, "until the window's reset");
    let table = String::from_utf8_lossy(&w.run(&["list"]).stdout).into_owned();
    assert!(table.contains("working, limit until "), "{table}");
}

// No engine, and one that accepts and never reads: the user's line prints at once either way.
#[test]
fn a_wedged_engine_costs_the_users_line_no_more_than_the_send_budget() {
    let w = World::new();
    let socket = w.socket();
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    // Bound, listening, never accepting: a connect completes (backlog), a write may block.
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let (out, took) = bridge(
        &w,
        &["--agent", "claude", "--then", "echo MINE"],
        plan_input(42).as_bytes(),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "MINE\n");
    assert!(out.status.success());
    assert!(took < Duration::from_millis(900), "{took:?}");
}

// Without the bridge, Claude's row says the window is unknown and how to turn the bridge on;
// it never guesses a size.
#[test]
fn without_the_bridge_the_row_says_the_window_is_unknown_and_how_to_learn_it() {
    let w = World::new();
    let _daemon = w.start_daemon();
    w.observe(&[
        "--agent",
        "claude",
        "--session",
        "s-claude",
        "--event",
        "SessionStart",
    ]);
    let table = String::from_utf8_lossy(&w.run(&["list"]).stdout).into_owned();
    assert!(table.contains("window unknown"), "{table}");
    assert!(
        table.contains("Claude Code: window unknown: `agent-tray install --claude --status-line`"),
        "{table}"
    );
    let row = w.session("s-claude").unwrap();
    assert_eq!(row["context_window"], Value::Null, "never a guessed size");
}

// `install --claude --status-line` puts the bridge in front of the user's line; `uninstall
// --claude` gives the setting back byte for byte; `doctor` says whether the bridge is on.
#[test]
fn install_runs_the_users_line_behind_the_bridge_and_uninstall_gives_it_back() {
    let w = World::new();
    let settings = w.path().join("claude/settings.json");
    let theirs = "{\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"command\": \"~/bin/my\\u0020line.sh\",\n    \"padding\": 1\n  }\n}\n";
    std::fs::write(&settings, theirs).unwrap();
    let out = w.run(&[
        "install",
        "--claude",
        "--status-line",
        "--allow-insecure-path",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let command = doc["statusLine"]["command"].as_str().unwrap();
    assert!(
        command.ends_with("status-line --agent claude --then '~/bin/my line.sh'"),
        "{command}"
    );
    assert_eq!(doc["statusLine"]["padding"], 1);
    assert!(doc["hooks"]["Stop"].is_array(), "the hooks too");
    let doctor = String::from_utf8_lossy(&w.run(&["doctor"]).stdout).into_owned();
    assert!(doctor.contains("status-line bridge: on"), "{doctor}");
    // Install again without the flag: the bridge stays as it is.
    let again = w.run(&["install", "--claude", "--allow-insecure-path"]);
    assert!(again.status.success());
    let out = w.run(&["uninstall", "--claude"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), theirs);
    let doctor = String::from_utf8_lossy(&w.run(&["doctor"]).stdout).into_owned();
    assert!(doctor.contains("status-line bridge: off"), "{doctor}");
}
