//! What the core costs (issue 2): one pid-watcher tick, and registry throughput.
//!
//! - **Tick:** `plan` with the watcher's probe over 1, 100 and 1,000 live pids — real sleeping
//!   children spawned for the run — after the first tick has confirmed them all, so it measures
//!   the steady state the watcher runs every 10 s. Two ticks:
//!   - **the engine's**: every pid holds its exit event (a pidfd), as the watcher keeps them once
//!     confirmed, so the tick is one `poll(2)` over them all and the tokens read when they were
//!     opened (`TickProbe`);
//!   - **stat only**: pids that could not get an exit event (older kernels, a descriptor limit),
//!     one `/proc/<pid>/stat` read per pid into reused buffers (`StatProbe`).
//!
//!   Beside them, in the same run, the older probe (`kill(0)` and two stat reads per pid,
//!   `probe_pid`) as the baseline, and the floor of the stat-only tick: the same stat files
//!   opened, read into one buffer and closed in a tight loop, nothing parsed or decided (that tick
//!   cannot cost less than the reads it must make; the ratio to it is what the machine's load
//!   does not move).
//! - **Registry:** observations applied per second through `SessionsRegistry::observe`, from one
//!   thread and from 8 threads at once, over 500 sessions cycling through a turn
//!   (UserPromptSubmit, PreToolUse, PostToolUse, Stop), with a subscriber attached so changes are
//!   really published.
//!
//! ```text
//! cargo bench --bench core                 # full run
//! cargo bench --bench core -- --quick      # smaller, for a smoke check
//! ```
//! Figures are medians of repeated runs; the machine is shared, so compare ratios measured in
//! the same run rather than absolute numbers across runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tray::liveness::exit_event::ExitHandle;
use agent_tray::liveness::pid_watcher::{plan, ConfirmedPids, HeldExit, TickProbe};
use agent_tray::model::{Agent, EventKind, Observation};
use agent_tray::process::{
    probe_pid as probe_process, start_token as process_start_token, StatProbe,
};
use agent_tray::registry::{PidCandidate, RegistryConfig, SessionsRegistry};
use chrono::Utc;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn spawn_sleepers(n: usize) -> Vec<Child> {
    (0..n)
        .map(|_| {
            Command::new("sleep")
                .arg("600")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn sleep")
        })
        .collect()
}

/// Opens, reads and closes `/proc/<pid>/stat` for every pid: the floor under a tick.
fn read_stat_files(pids: &[u32], buf: &mut [u8]) -> usize {
    use std::fmt::Write;
    use std::io::Read;
    let mut total = 0;
    let mut path = String::with_capacity(32);
    for pid in pids {
        path.clear();
        let _ = write!(path, "/proc/{pid}/stat");
        if let Ok(mut f) = std::fs::File::open(&path) {
            total += f.read(buf).unwrap_or(0);
        }
    }
    total
}

/// One size's medians over `rounds`.
struct TickCost {
    engine: Duration,
    stat_only: Duration,
    baseline: Duration,
    floor: Duration,
}

/// The engine's tick, the stat-only tick, the baseline probe's and the floor's medians.
fn tick_cost(n: usize, rounds: usize) -> TickCost {
    let mut children = spawn_sleepers(n);
    let candidates: Vec<PidCandidate> = children
        .iter()
        .enumerate()
        .map(|(i, c)| PidCandidate {
            session_id: format!("s{i}"),
            pid: c.id(),
            pid_start: process_start_token(c.id()),
            prompted: true,
            streamed: false,
            last_seen: Utc::now(),
        })
        .collect();
    let held: Vec<HeldExit> = candidates
        .iter()
        .map(|c| HeldExit {
            pid: c.pid,
            exit: ExitHandle::open(c.pid).expect("pidfd_open (Linux >= 5.3)"),
            token: c.pid_start.clone(),
        })
        .collect();
    let mut confirmed = ConfirmedPids::default();
    let first = plan(&candidates, &mut confirmed, probe_process);
    assert_eq!(first.len(), n, "every live prompted pid is vouched for");
    let mut engine = Vec::with_capacity(rounds);
    let mut stat_only = Vec::with_capacity(rounds);
    let mut baseline = Vec::with_capacity(rounds);
    let mut floor = Vec::with_capacity(rounds);
    let mut tick_probe = TickProbe::default();
    let mut stat_probe = StatProbe::default();
    let pids: Vec<u32> = children.iter().map(Child::id).collect();
    let mut buf = vec![0u8; 1024];
    for _ in 0..rounds {
        let start = Instant::now();
        let read = read_stat_files(&pids, &mut buf);
        floor.push(start.elapsed());
        assert!(read > 0);
        let start = Instant::now();
        tick_probe.begin(&held);
        let decisions = plan(&candidates, &mut confirmed, |pid| tick_probe.probe(pid));
        engine.push(start.elapsed());
        assert_eq!(decisions.len(), n);
        assert_eq!(
            tick_probe.asked_directly(),
            0,
            "every pid answered by its event"
        );
        let start = Instant::now();
        let decisions = plan(&candidates, &mut confirmed, |pid| stat_probe.probe(pid));
        stat_only.push(start.elapsed());
        assert_eq!(decisions.len(), n);
        let start = Instant::now();
        let decisions = plan(&candidates, &mut confirmed, probe_process);
        baseline.push(start.elapsed());
        assert_eq!(decisions.len(), n);
    }
    drop(held);
    for c in &mut children {
        let _ = c.kill();
    }
    for c in &mut children {
        let _ = c.wait();
    }
    TickCost {
        engine: median(engine),
        stat_only: median(stat_only),
        baseline: median(baseline),
        floor: median(floor),
    }
}

const TURN: [EventKind; 4] = [
    EventKind::UserPromptSubmit,
    EventKind::PreToolUse,
    EventKind::PostToolUse,
    EventKind::Stop,
];

/// Applies `per_thread` observations from each of `threads` threads; returns observations/s.
fn throughput(threads: usize, per_thread: usize, sessions: usize) -> f64 {
    let registry = Arc::new(SessionsRegistry::with_config(
        RegistryConfig::default(),
        Arc::new(agent_tray::clock::SystemClock),
    ));
    let mut rx = registry.subscribe();
    let drain = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut seen = 0u64;
            loop {
                match rx.recv().await {
                    Ok(_) => seen += 1,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => seen += n,
                    Err(_) => break seen,
                }
            }
        })
    });
    // Observations are built before the clock starts: the registry is what is measured.
    let batches: Vec<Vec<Observation>> = (0..threads)
        .map(|t| {
            let base = Utc::now();
            (0..per_thread)
                .map(|i| {
                    let session =
                        (t * sessions / threads.max(1)) + (i % (sessions / threads.max(1)).max(1));
                    let at = base + chrono::Duration::microseconds(i as i64);
                    Observation::new(
                        format!("session-{session}"),
                        Agent::Claude,
                        TURN[(i / (sessions / threads.max(1)).max(1)) % 4],
                        at,
                    )
                    .with_pid(Some(1_000_000 + session as u32))
                })
                .collect()
        })
        .collect();
    let start = Instant::now();
    let handles: Vec<_> = batches
        .into_iter()
        .map(|batch| {
            let registry = registry.clone();
            std::thread::spawn(move || {
                for obs in batch {
                    registry.observe(obs).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let elapsed = start.elapsed();
    drop(registry);
    let published = drain.join().unwrap();
    assert!(published > 0, "changes were published");
    (threads * per_thread) as f64 / elapsed.as_secs_f64()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    println!(
        "# agent-tray core benchmark ({} cores)",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    );
    println!("\n## pid watcher: one steady-state tick (plan + real probe), median");
    println!(
        "{:>6}  {:>12}  {:>12}  {:>14}  {:>14}  {:>14}  {:>16}",
        "pids",
        "tick",
        "per pid",
        "stat-only tick",
        "floor (reads)",
        "stat/floor",
        "baseline probe"
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (n, rounds) in [
        (1usize, 200usize),
        (100, 50),
        (1000, if quick { 5 } else { 20 }),
    ] {
        let cost = tick_cost(n, rounds);
        println!(
            "{:>6}  {:>10.1}µs  {:>10.2}µs  {:>12.1}µs  {:>12.1}µs  {:>13.2}×  {:>14.1}µs",
            n,
            us(cost.engine),
            us(cost.engine) / n as f64,
            us(cost.stat_only),
            us(cost.floor),
            cost.stat_only.as_secs_f64() / cost.floor.as_secs_f64(),
            us(cost.baseline)
        );
    }
    let per_thread = if quick { 20_000 } else { 200_000 };
    println!("\n## registry: observations applied per second (500 sessions, a subscriber attached), median of 5");
    for threads in [1usize, 8] {
        let mut runs: Vec<f64> = (0..5)
            .map(|_| throughput(threads, per_thread / threads, 500))
            .collect();
        runs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("{:>2} writer(s): {:>12.0} obs/s", threads, runs[2]);
    }
}
