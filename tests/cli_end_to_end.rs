//! The CLI end to end, as scripts and the agents drive it on every desktop: a real `agent-tray
//! daemon`, the real `hook` fed a recorded Claude payload on stdin, `observe` with a pid, and
//! `list --json` read back, all through the control channel (the unix socket, or the named pipe
//! on Windows, where scripts/check-windows.sh runs this under Wine). Last, a watched process
//! killed from outside ends its session by its exit event: the pid watcher's tick is set to ten
//! minutes, so nothing else could end it within the bound.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{prompt_payload, sleeper, wait_until, World};

#[test]
fn hook_observe_and_list_json_meet_through_the_control_channel() {
    let world = World::new();
    let _daemon = world.start_daemon();
    let cwd = world.path().join("project").display().to_string();

    let mut hook = world
        .command(&["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retrying()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(prompt_payload("from-hook", &cwd).as_bytes())
        .unwrap();
    let out = hook.wait_with_output().unwrap();
    assert!(out.status.success(), "the hook exits 0");
    assert!(out.stdout.is_empty(), "the hook prints nothing");

    world.observe(&["--session", "from-observe", "--event", "Stop"]);

    let seen = wait_until(Duration::from_secs(10), || {
        let list = world.list();
        let state = |id: &str| {
            list.iter()
                .find(|s| s["session_id"] == id)
                .map(|s| s["state"].as_str().unwrap_or("").to_string())
        };
        (state("from-hook").as_deref() == Some("working")
            && state("from-observe").as_deref() == Some("idle"))
        .then_some(list)
    })
    .unwrap_or_else(|| panic!("not both seen: {:?}", world.list()));
    let hooked = seen
        .iter()
        .find(|s| s["session_id"] == "from-hook")
        .unwrap();
    assert_eq!(hooked["agent"], "claude");
    assert_eq!(hooked["cwd"], cwd.as_str());
}

#[test]
fn a_watched_process_killed_from_outside_ends_its_session_by_its_exit_event() {
    // Ten minutes between ticks: only the exit event can end the session within the bound.
    let world = World::new().with_env("AGENT_TRAY_PID_WATCH_INTERVAL_MS", "600000");
    let _daemon = world.start_daemon();
    let mut agent = sleeper();
    let pid = agent.id().to_string();
    world.observe(&[
        "--session",
        "victim",
        "--event",
        "SessionStart",
        "--pid",
        &pid,
    ]);
    world.observe(&[
        "--session",
        "victim",
        "--event",
        "UserPromptSubmit",
        "--pid",
        &pid,
    ]);
    // The watcher confirms a new pid (its identity token read) at once, then waits for its exit.
    let confirmed = wait_until(Duration::from_secs(10), || {
        world
            .session("victim")
            .map(|s| !s["pid_start"].is_null())
            .unwrap_or(false)
    });
    assert!(confirmed.is_some(), "the live pid was never confirmed");
    assert_eq!(world.state_of("victim").as_deref(), Some("working"));

    agent.kill().unwrap();
    agent.wait().unwrap();
    drop(agent); // on Windows our handle would keep the process object (not the process) alive
    let killed_at = Instant::now();
    let ended = wait_until(Duration::from_secs(10), || {
        world.state_of("victim").as_deref() == Some("ended")
    });
    assert!(
        ended.is_some(),
        "still {:?} 10 s after the kill, with the tick 10 minutes away",
        world.state_of("victim")
    );
    let session = world.session("victim").unwrap();
    assert_eq!(session["end_reason"], "process_gone");
    eprintln!("ended {:?} after the kill", killed_at.elapsed());
}
