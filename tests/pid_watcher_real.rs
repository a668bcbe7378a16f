//! The pid watcher against real processes: children started and killed with real signals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tray::liveness::exit_event::{ExitHandle, ExitWatchError};
use agent_tray::liveness::pid_watcher;
use agent_tray::model::{Agent, EndReason, EventKind, Observation, SessionState};
use agent_tray::registry::SessionsRegistry;
use chrono::Utc;
use tokio_util::sync::CancellationToken;

const TICK: Duration = Duration::from_millis(200);

use common::{exited_at_once, short_lived, sleeper};

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
    let pid = exited_at_once();
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

/// The safety-net tick, pushed out of every test below that proves an event did the work.
const HOURS: Duration = Duration::from_secs(3 * 3600);

async fn confirmed(registry: &SessionsRegistry, id: &str) -> bool {
    // A prompted live session is vouched for (its start token stored) once its pid is confirmed.
    wait_for(Duration::from_secs(15), || {
        registry.get(id).and_then(|s| s.pid_start).is_some()
    })
    .await
}

#[tokio::test]
async fn a_sigkilled_agent_ends_by_its_exit_event_with_the_tick_hours_away() {
    // `kill -9` of a running agent while the tray is idle: the engine's watcher, as the engine
    // starts it, but with its tick hours away, so only the process's exit event can end it.
    let registry = Arc::new(SessionsRegistry::new());
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry.clone(), HOURS, token.clone());
    let mut child = sleeper();
    prompted(&registry, "s1", child.id());
    assert!(
        confirmed(&registry, "s1").await,
        "the live agent was never confirmed: the early tick after its first hook must run"
    );
    child.kill().unwrap(); // not reaped: the agent's real parent would reap it, not us
    assert!(
        wait_for(Duration::from_secs(10), || state(&registry, "s1")
            == Some((SessionState::Ended, Some(EndReason::ProcessGone))))
        .await,
        "SIGKILL not seen without a tick: {:?}",
        state(&registry, "s1")
    );
    child.wait().unwrap();
    token.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_live_agent_is_vouched_for_by_every_tick_while_its_exit_event_answers() {
    // After the first tick the watcher answers this pid from its exit event, not from /proc:
    // the session must still be refreshed tick after tick, and its death still end it.
    let registry = Arc::new(SessionsRegistry::new());
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry.clone(), TICK, token.clone());
    let mut child = sleeper();
    prompted(&registry, "s1", child.id());
    assert!(confirmed(&registry, "s1").await, "never confirmed");
    let real_token = agent_tray::process::start_token(child.id());
    let first = registry.get("s1").unwrap().last_seen;
    let mut refreshes = 0;
    let mut last = first;
    for _ in 0..4 {
        tokio::time::sleep(TICK + Duration::from_millis(50)).await;
        let s = registry.get("s1").unwrap();
        assert_eq!(s.state, SessionState::Working, "{:?}", s.end_reason);
        assert_eq!(s.pid_start, real_token);
        if s.last_seen > last {
            refreshes += 1;
            last = s.last_seen;
        }
    }
    assert!(refreshes >= 2, "vouched {refreshes} times in 4 ticks");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_for(TICK * 2, || state(&registry, "s1")
            == Some((SessionState::Ended, Some(EndReason::ProcessGone))))
        .await,
        "{:?}",
        state(&registry, "s1")
    );
    token.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn without_exit_events_the_same_kill_waits_for_the_tick() {
    // The control for the test above: the same watcher with exit events off confirms the agent
    // just the same, and then does not notice its death before the tick, so it is the event that
    // ends a session there.
    let registry = Arc::new(SessionsRegistry::new());
    let token = CancellationToken::new();
    let options = pid_watcher::WatchOptions {
        interval: HOURS,
        confirm_after: Duration::from_millis(100),
        exit_events: None,
    };
    let task = pid_watcher::spawn_with(registry.clone(), options, token.clone());
    let mut child = sleeper();
    prompted(&registry, "s1", child.id());
    assert!(confirmed(&registry, "s1").await, "never confirmed");
    child.kill().unwrap();
    child.wait().unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(state(&registry, "s1"), Some((SessionState::Working, None)));
    token.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_pid_that_cannot_get_an_exit_event_still_ends_by_the_tick() {
    // An old kernel (no pidfd_open) or a descriptor limit: the opener refuses this one pid, and
    // the tick still catches its death. The other agent, with its event, is the control that
    // events are on in this watcher.
    let registry = Arc::new(SessionsRegistry::new());
    let mut refused = sleeper();
    let mut evented = sleeper();
    let refused_pid = refused.id();
    let opener: pid_watcher::ExitOpener = Arc::new(move |pid| {
        if pid == refused_pid {
            return Err(ExitWatchError::Unsupported {
                pid,
                source: std::io::Error::from(std::io::ErrorKind::Unsupported),
            });
        }
        ExitHandle::open(pid)
    });
    let interval = Duration::from_secs(2);
    let options = pid_watcher::WatchOptions {
        interval,
        confirm_after: Duration::from_millis(100),
        exit_events: Some(opener),
    };
    prompted(&registry, "refused", refused_pid);
    prompted(&registry, "evented", evented.id());
    let token = CancellationToken::new();
    let task = pid_watcher::spawn_with(registry.clone(), options, token.clone());
    assert!(confirmed(&registry, "refused").await && confirmed(&registry, "evented").await);
    refused.kill().unwrap();
    refused.wait().unwrap();
    evented.kill().unwrap();
    evented.wait().unwrap();
    assert!(
        wait_for(interval * 3, || state(&registry, "refused")
            == Some((SessionState::Ended, Some(EndReason::ProcessGone))))
        .await,
        "the tick missed a pid without an exit event: {:?}",
        state(&registry, "refused")
    );
    assert_eq!(
        state(&registry, "evented"),
        Some((SessionState::Ended, Some(EndReason::ProcessGone)))
    );
    token.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_hook_shell_alive_when_its_hook_lands_ends_nothing_when_it_exits() {
    // A hook run under `sh -c` reports the shell, alive while the hook runs and gone right
    // after. Confirming it at its first sighting would end the session with the shell; the
    // watcher waits before it confirms a new pid. The agent beside it is the positive control:
    // confirmed, and its death by event seen, by the same watcher.
    let registry = Arc::new(SessionsRegistry::new());
    let token = CancellationToken::new();
    let task = pid_watcher::spawn(registry.clone(), HOURS, token.clone());
    let mut shell = short_lived(Duration::from_millis(300));
    let mut agent = sleeper();
    prompted(&registry, "shell", shell.id());
    prompted(&registry, "agent", agent.id());
    shell.wait().unwrap();
    assert!(confirmed(&registry, "agent").await, "agent never confirmed");
    agent.kill().unwrap();
    agent.wait().unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || state(&registry, "agent")
            == Some((SessionState::Ended, Some(EndReason::ProcessGone))))
        .await,
        "the control's death was not seen: {:?}",
        state(&registry, "agent")
    );
    assert_eq!(
        state(&registry, "shell"),
        Some((SessionState::Working, None)),
        "a pid that lived only through its hook ended its session"
    );
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
