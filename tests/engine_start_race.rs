//! Calls that race the engine's start are answered or refused within their deadlines, never hung.
//!
//! Stands for a login that starts the app (or `agent-tray daemon`) while a terminal's prompt runs
//! `agent-tray list` and an agent's hooks fire: engines, `list` processes, hooks and the client
//! library itself are started at the same instant, many times over. Every call must end within
//! its bound, either answered by the engine or refused in words ("no Agent Tray is running", or
//! "starting" when an engine holds its lock but does not listen yet); exactly one engine wins and
//! the others say who runs; every hook exits 0 within its budget and its event reaches the
//! engine (journaled first, replayed by the winner). Runs on Linux and, by
//! scripts/check-windows.sh, under Wine, where the named pipe stands for the socket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::io::Write;
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use agent_tray::control::client::{ClientError, ControlClient};
use agent_tray::control::Request;
use common::{prompt_payload, retrying_start, wait_until, World};

/// Rounds of simultaneous starts: fewer under Wine, where each process start costs what a
/// hundred do on Linux.
const ROUNDS: usize = if cfg!(windows) { 5 } else { 20 };
const ENGINES: usize = 2;
const LISTS: usize = 3;
const HOOKS: usize = 2;
/// Threads of this process that call through the client library during the start.
const CLIENTS: usize = 2;
/// The budget the in-process calls give the client, as the CLI does (its `CLI_BUDGET`).
const CALL_BUDGET: Duration = Duration::from_secs(3);
/// What starting a process may add to a call's bound: Wine's process creation is slow.
const PROCESS_START: Duration = if cfg!(windows) {
    Duration::from_secs(8)
} else {
    Duration::from_secs(2)
};
/// How long the client threads keep calling once released (covers the engines' start).
const CALLING_FOR: Duration = if cfg!(windows) {
    Duration::from_millis(1500)
} else {
    Duration::from_millis(400)
};

/// One participant of a round, run on its own thread once all are ready; what it returns is
/// looked at after the round.
type Task = Box<dyn FnOnce(&World) -> Box<dyn std::any::Any + Send> + Send>;

/// What one in-process call came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    Answered,
    NotRunning,
    Starting,
}

/// A `list --json` run: how long it took and what it said.
struct ListRun {
    took: Duration,
    output: Output,
}

/// Starts `cmd` with its output to nowhere but stderr to `log`.
fn start_engine(world: &World, log: std::path::PathBuf) -> Child {
    let log = std::fs::File::create(log).unwrap();
    let mut cmd = world.command(&["daemon"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    retrying_start(|| cmd.spawn_retrying())
}

fn run_hook(world: &World, session: &str) -> (Duration, std::process::ExitStatus) {
    let cwd = world.path().join("project").display().to_string();
    let mut cmd = world.command(&["hook", "--agent", "claude"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut hook = retrying_start(|| cmd.spawn_retrying());
    let mut stdin = hook.stdin.take().unwrap();
    stdin
        .write_all(prompt_payload(session, &cwd).as_bytes())
        .unwrap();
    drop(stdin);
    let status = wait_until(PROCESS_START + Duration::from_secs(2), || {
        hook.try_wait().unwrap()
    });
    let Some(status) = status else {
        let _ = hook.kill();
        let _ = hook.wait();
        panic!("a hook fired during the engine's start did not end within its bound");
    };
    (started.elapsed(), status)
}

/// Calls `list` through the client library again and again for [`CALLING_FOR`], each call timed.
fn call_repeatedly(socket: &std::path::Path) -> Vec<(Duration, Outcome)> {
    let released = Instant::now();
    let mut calls = Vec::new();
    while released.elapsed() < CALLING_FOR {
        let started = Instant::now();
        let outcome =
            ControlClient::connect(socket, CALL_BUDGET).and_then(|mut c| c.request(&Request::List));
        let took = started.elapsed();
        let outcome = match outcome {
            Ok(reply) => {
                assert!(reply.ok, "the engine refused a list: {reply:?}");
                Outcome::Answered
            }
            Err(ClientError::NotRunning(_)) => Outcome::NotRunning,
            Err(ClientError::Starting(_)) => Outcome::Starting,
            Err(e) => panic!("a call during the start failed otherwise, after {took:?}: {e}"),
        };
        calls.push((took, outcome));
        std::thread::sleep(Duration::from_millis(15));
    }
    calls
}

#[test]
fn calls_fired_as_engines_start_are_answered_or_refused_within_their_deadlines() {
    let mut seen = std::collections::HashMap::<Outcome, usize>::new();
    let mut slowest_call = Duration::ZERO;
    let mut slowest_list = Duration::ZERO;
    for round in 0..ROUNDS {
        let world = Arc::new(World::new());
        let barrier = Arc::new(Barrier::new(ENGINES + LISTS + HOOKS + CLIENTS));
        let spawn = |f: Task| {
            let world = world.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                f(&world)
            })
        };
        let engines: Vec<_> = (0..ENGINES)
            .map(|i| {
                spawn(Box::new(move |w: &World| {
                    Box::new(start_engine(w, w.path().join(format!("engine{i}.log"))))
                }))
            })
            .collect();
        let lists: Vec<_> = (0..LISTS)
            .map(|_| {
                spawn(Box::new(|w: &World| {
                    let started = Instant::now();
                    let output = w.run(&["list", "--json"]);
                    Box::new(ListRun {
                        took: started.elapsed(),
                        output,
                    })
                }))
            })
            .collect();
        let hooks: Vec<_> = (0..HOOKS)
            .map(|i| {
                spawn(Box::new(move |w: &World| {
                    Box::new(run_hook(w, &format!("hook-{i}")))
                }))
            })
            .collect();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| spawn(Box::new(|w: &World| Box::new(call_repeatedly(&w.socket())))))
            .collect();

        let mut engines: Vec<Child> = engines
            .into_iter()
            .map(|h| *h.join().unwrap().downcast::<Child>().unwrap())
            .collect();
        for h in lists {
            let run = h.join().unwrap().downcast::<ListRun>().unwrap();
            let stderr = String::from_utf8_lossy(&run.output.stderr).to_string();
            assert!(
                run.took <= Duration::from_secs(3) + PROCESS_START,
                "round {round}: a list racing the start took {:?} ({stderr})",
                run.took
            );
            slowest_list = slowest_list.max(run.took);
            if run.output.status.success() {
                let list: serde_json::Value = serde_json::from_slice(&run.output.stdout).unwrap();
                assert!(list.is_array(), "list --json answers an array");
                *seen.entry(Outcome::Answered).or_default() += 1;
            } else {
                assert!(
                    stderr.contains("no Agent Tray is running") || stderr.contains("starting"),
                    "round {round}: a refused list says why in words: {stderr}"
                );
            }
        }
        for h in hooks {
            let (took, status) = *h
                .join()
                .unwrap()
                .downcast::<(Duration, std::process::ExitStatus)>()
                .unwrap();
            assert!(status.success(), "round {round}: a hook exits 0, always");
            assert!(
                took <= PROCESS_START + Duration::from_millis(500),
                "round {round}: a hook took {took:?}, past its budget"
            );
        }
        for h in clients {
            let calls = h
                .join()
                .unwrap()
                .downcast::<Vec<(Duration, Outcome)>>()
                .unwrap();
            for (took, outcome) in *calls {
                assert!(
                    took <= CALL_BUDGET + Duration::from_millis(500),
                    "round {round}: a call ({outcome:?}) took {took:?}, past its {CALL_BUDGET:?} budget"
                );
                slowest_call = slowest_call.max(took);
                *seen.entry(outcome).or_default() += 1;
            }
        }

        // Exactly one engine won; the others said who runs and left.
        let left = wait_until(Duration::from_secs(10) + PROCESS_START, || {
            let exited: Vec<_> = engines
                .iter_mut()
                .filter_map(|e| e.try_wait().unwrap())
                .collect();
            (exited.len() == ENGINES - 1).then_some(exited)
        })
        .unwrap_or_else(|| panic!("round {round}: not exactly one engine kept running"));
        assert!(
            left.iter().all(|s| !s.success()),
            "a losing engine exits non-zero"
        );
        let logs: String = (0..ENGINES)
            .map(|i| std::fs::read_to_string(world.path().join(format!("engine{i}.log"))).unwrap())
            .collect();
        assert!(
            logs.contains("already running") || logs.contains("starting up"),
            "round {round}: a losing engine says why: {logs}"
        );
        // The winner serves, and every hook fired during the start reached it.
        let all_seen = wait_until(Duration::from_secs(10), || {
            let list = world.list();
            (0..HOOKS).all(|i| list.iter().any(|s| s["session_id"] == format!("hook-{i}")))
        });
        assert!(
            all_seen.is_some(),
            "round {round}: a hook's event during the start was lost: {:?}",
            world.list()
        );
        for mut engine in engines {
            let _ = engine.kill();
            let _ = engine.wait();
        }
    }
    eprintln!(
        "{ROUNDS} rounds: in-process calls {seen:?}; slowest call {slowest_call:?}, slowest list process {slowest_list:?}"
    );
    // The positive control: calls did meet a live engine during the start.
    assert!(
        seen.get(&Outcome::Answered).copied().unwrap_or(0) > 0,
        "no call was answered: the race never met a running engine"
    );
}
