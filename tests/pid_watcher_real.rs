//! The pid watcher against real processes: children started and killed with real signals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry.clone(), TICK, token.clone());
    tokio::time::sleep(TICK * 5).await;
    assert_eq!(state(&registry, "s1"), Some((SessionState::Working, None)));
    token.cancel();
    task.await.unwrap();
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
