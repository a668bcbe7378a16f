//! Environment knobs with values they cannot mean: the daemon refuses to start, naming the knob
//! and what it expects, instead of panicking (`AGENT_TRAY_SESSION_TTL=1e20` used to abort in
//! `Duration::from_secs_f64`) or silently ignoring it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::process::Stdio;
use std::time::Duration;

use common::{wait_until, World};

/// Runs `agent-tray daemon` in `world`; returns its exit code and stderr (bounded wait).
fn daemon_refusal(world: &World) -> (Option<i32>, String) {
    let err = world.path().join("refusal.log");
    let mut child = world
        .command(&["daemon"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn_retrying()
        .unwrap();
    let status = wait_until(Duration::from_secs(10), || child.try_wait().unwrap());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    (
        status.and_then(|s| s.code()),
        std::fs::read_to_string(err).unwrap(),
    )
}

#[test]
fn knobs_set_to_what_they_cannot_mean_are_refused_with_a_clear_error() {
    let cases = [
        (
            "AGENT_TRAY_SESSION_TTL",
            "1e20",
            "seconds from 1 to 2592000",
        ),
        ("AGENT_TRAY_SESSION_TTL", "-3", "seconds from 1 to 2592000"),
        ("AGENT_TRAY_PID_WATCH_INTERVAL_MS", "soon", "milliseconds"),
        (
            "AGENT_TRAY_NO_FILE_DISCOVERY",
            "perhaps",
            "0, false, no, off",
        ),
        ("AGENT_TRAY_HOME", "relative/tray", "absolute path"),
    ];
    for (name, value, expected) in cases {
        let world = World::new().with_env(name, value);
        let (code, stderr) = daemon_refusal(&world);
        assert!(!stderr.contains("panicked"), "{name}={value}: {stderr}");
        assert_eq!(
            code,
            Some(1),
            "{name}={value} exits with an error: {stderr}"
        );
        assert!(
            stderr.contains(name) && stderr.contains(value) && stderr.contains(expected),
            "{name}={value}: the error names the knob, the value and what is expected: {stderr}"
        );
        assert!(
            !world.socket().exists(),
            "{name}={value}: no engine started"
        );
    }
    // The positive control: the same knobs with good values start the daemon.
    let world = World::new()
        .with_env("AGENT_TRAY_SESSION_TTL", "2.5")
        .with_env("AGENT_TRAY_PID_WATCH_INTERVAL_MS", "300")
        .with_env("AGENT_TRAY_NO_FILE_DISCOVERY", "1");
    let daemon = world.start_daemon();
    assert!(world.list().is_empty());
    daemon.terminate();
}
