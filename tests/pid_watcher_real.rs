//! The pid watcher against real processes: children started and killed with real signals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tray::liveness::pid_watcher;
use agent_tray::model::{Agent, EndReason, EventKind, Observation, SessionState};
use agent_tray::registry::SessionsRegistry;
use chrono::Utc;
use tokio_util::sync::CancellationToken;

const TICK: Duration = Duration::from_millis(200);

fn sleeper() -> Child {
    Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn prompted(registry: &SessionsRegistry, id: &str, pid: u32) {
    let obs = Observation::new(id, Agent::Claude, EventKind::UserPromptSubmit, Utc::now())
        .with_pid(Some(pid));
    registry.observe(obs).unwrap();
}

async fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}

fn state(registry: &SessionsRegistry, id: &str) -> Option<(SessionState, Option<EndReason>)> {
    registry.get(id).map(|s| (s.state, s.end_reason))
}

#[tokio::test]
async fn a_confirmed_child_killed_with_sigkill_ends_within_one_tick() {
    let registry = Arc::new(SessionsRegistry::new());
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry.clone(), TICK, token.clone());
    let mut child = sleeper();
    prompted(&registry, "s1", child.id());
    assert!(
        wait_for(TICK * 5, || registry
            .get("s1")
            .and_then(|s| s.pid_start)
            .is_some())
        .await,
        "the live child was never confirmed"
    );
    child.kill().unwrap();
    child.wait().unwrap(); // reap: a zombie still answers kill(0)
    let killed = Instant::now();
    assert!(
        wait_for(TICK * 2 + Duration::from_millis(100), || {
            state(&registry, "s1") == Some((SessionState::Ended, Some(EndReason::ProcessGone)))
        })
        .await,
        "not ended within one tick of SIGKILL: {:?}",
        state(&registry, "s1")
    );
    assert!(killed.elapsed() <= TICK * 2 + Duration::from_millis(100));
    token.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_changed_identity_token_ends_the_session_as_a_recycled_pid() {
    // Simulates the kernel giving the number to a new process: the stored token is not the
    // live process's.
    let registry = Arc::new(SessionsRegistry::new());
    let mut child = sleeper();
    prompted(&registry, "s1", child.id());
    assert!(registry.confirm_pid_liveness("s1", "token-of-a-process-long-gone"));
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry.clone(), TICK, token.clone());
    assert!(
        wait_for(TICK * 3, || {
            state(&registry, "s1") == Some((SessionState::Ended, Some(EndReason::PidRecycled)))
        })
        .await,
        "got {:?}",
        state(&registry, "s1")
    );
    token.cancel();
    task.await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn a_short_lived_shell_pid_never_ends_anything() {
    let registry = Arc::new(SessionsRegistry::new());
    let mut shell = Command::new("sh").args(["-c", "true"]).spawn().unwrap();
    let pid = shell.id();
    shell.wait().unwrap();
    prompted(&registry, "s1", pid);
    // Positive control in the same watcher: a live child is confirmed and its death is seen, so
    // "s1 still working" below cannot pass on a watcher that never ticks.
    let mut child = sleeper();
    prompted(&registry, "control", child.id());
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry.clone(), TICK, token.clone());
    assert!(
        wait_for(TICK * 10, || registry
            .get("control")
            .and_then(|s| s.pid_start)
            .is_some())
        .await,
        "the live child was never confirmed"
    );
    tokio::time::sleep(TICK * 3).await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_for(TICK * 10, || state(&registry, "control")
            == Some((SessionState::Ended, Some(EndReason::ProcessGone))))
        .await,
        "the watcher missed the control's death: {:?}",
        state(&registry, "control")
    );
    assert_eq!(state(&registry, "s1"), Some((SessionState::Working, None)));
    token.cancel();
    task.await.unwrap();
}

#[test]
fn a_ttl_shorter_than_the_watchers_tick_keeps_a_live_idle_agent() {
    // The real daemon with a 1 s TTL and the default 10 s watcher tick: the reaper must ask the
    // process before ending its session, whatever the two settings.
    let world = common::World::new().with_env("AGENT_TRAY_SESSION_TTL", "1");
    let _daemon = world.start_daemon();
    let mut agent = sleeper();
    let pid = agent.id().to_string();
    for (id, pid) in [("alive", Some(pid.as_str())), ("silent", None)] {
        for event in ["UserPromptSubmit", "Stop"] {
            let mut args = vec!["--session", id, "--event", event];
            if let Some(pid) = pid {
                args.extend(["--pid", pid]);
            }
            world.observe(&args);
        }
    }
    // Positive control: the reaper runs, and ends the session nobody vouches for.
    let reaped = common::wait_until(Duration::from_secs(10), || {
        let s = world.state_of("silent");
        s.is_none() || s.as_deref() == Some("ended")
    });
    assert!(
        reaped.is_some(),
        "the reaper never ended the silent session"
    );
    std::thread::sleep(Duration::from_secs(3));
    let s = world
        .session("alive")
        .expect("the live agent's session was dropped");
    assert_eq!(
        (s["state"].as_str(), &s["end_reason"]),
        (Some("idle"), &serde_json::Value::Null),
        "ended while its process lives: {s}"
    );
    // And once the process is gone, the TTL applies again.
    agent.kill().unwrap();
    agent.wait().unwrap();
    let ended = common::wait_until(Duration::from_secs(10), || {
        let s = world.state_of("alive");
        s.is_none() || s.as_deref() == Some("ended")
    });
    assert!(
        ended.is_some(),
        "still {:?} with its process gone",
        world.state_of("alive")
    );
}

#[tokio::test]
async fn cancelling_the_token_stops_the_watcher_promptly() {
    let registry = Arc::new(SessionsRegistry::new());
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry, Duration::from_secs(3600), token.clone());
    tokio::time::sleep(Duration::from_millis(50)).await;
    token.cancel();
    tokio::time::timeout(Duration::from_secs(2), task)
        .await
        .expect("the watcher must stop when cancelled, not sleep out its hour")
        .unwrap();
}
