//! The load test: 50 fake agents at once, each sending 1,000 events through the real hook
//! binary, while the daemon is killed with SIGKILL and restarted twice. Every event must be
//! applied exactly once by the daemon that is left (counted by sequence id: the count and an
//! order-free digest of the ids it applied, against the ids in the journal), nothing may be
//! left unapplied in the journal, every session must end in its last state, and the daemon's
//! memory must come back to what an idle one uses.
//!
//! `AGENT_TRAY_LOAD_AGENTS` and `AGENT_TRAY_LOAD_EVENTS` shrink the run for a quick local try;
//! CI runs the figures above.

// Linux only: the deadline waits on a pidfd and the memory is read from /proc.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::fs;
use std::io::{Seek, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{wait_until, World};
use serde_json::{json, Value};

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn session_id(n: usize) -> String {
    format!("{n:08x}-10ad-4e2b-9d3f-{n:012x}")
}

/// The `i`-th of `total` events of a session: it starts, gets a prompt, calls tools, stops.
fn payload(session: &str, i: usize, total: usize) -> Vec<u8> {
    let event = match i {
        0 => "SessionStart",
        1 => "UserPromptSubmit",
        i if i + 1 == total => "Stop",
        i if i.is_multiple_of(2) => "PreToolUse",
        _ => "PostToolUse",
    };
    let mut p = json!({
        "session_id": session,
        "hook_event_name": event,
        "cwd": "/home/dev/projects/load",
        "transcript_path": format!("/home/dev/.claude/projects/-home-dev-projects-load/{session}.jsonl"),
    });
    if event.ends_with("ToolUse") {
        p["tool_name"] = json!("Bash");
        p["tool_input"] = json!({"command": "cargo check"});
    }
    serde_json::to_vec(&p).unwrap()
}

fn run_hook(world: &World, input: &[u8]) {
    // The payload is on stdin before the hook starts, as when an agent has written it: the hook
    // reads stdin for at most its budget (1 s), and on this 2-core machine under the whole
    // load a writer thread can wait longer than that to be scheduled, which would lose events
    // to the test's own pacing rather than to anything this test is about.
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(input).unwrap();
    file.seek(std::io::SeekFrom::Start(0)).unwrap();
    let mut child = world
        .command(&["hook", "--agent", "claude"])
        .stdin(Stdio::from(file))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    let status = wait_with_deadline(&mut child, Duration::from_secs(30));
    assert!(
        status.is_some_and(|s| s.success()),
        "the hook exits 0, always, and within 30 s: {status:?}"
    );
}

/// Waits for `child` without polling: 50 threads polling their hooks every millisecond cost
/// more CPU than the hooks. A pidfd becomes readable when the process exits; poll it with the
/// deadline. Kills the child if the deadline passes.
fn wait_with_deadline(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    // SAFETY: pidfd_open on our own child's pid; the descriptor is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
    if fd >= 0 {
        let mut pfd = libc::pollfd {
            fd: fd as i32,
            events: libc::POLLIN,
            revents: 0,
        };
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
            // SAFETY: one valid pollfd, for the duration of the call.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            let interrupted =
                rc < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
            if !interrupted || left.is_zero() {
                break;
            }
        }
        // SAFETY: closes the descriptor pidfd_open gave us, once.
        unsafe { libc::close(fd as i32) };
    } else {
        // No pidfd (a kernel before 5.3): poll the old way.
        let _ = wait_until(limit, || child.try_wait().unwrap());
    }
    match child.try_wait().unwrap() {
        Some(status) => Some(status),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }
}

/// A daemon this test started: killed by its pid when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_daemon(world: &World, n: usize) -> Daemon {
    let log = fs::File::create(world.path().join(format!("daemon-{n}.log"))).unwrap();
    let child = world
        .command(&["daemon"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn_retrying()
        .unwrap();
    let daemon = Daemon(child);
    // A machine busy with 50 agents' hooks is slow to answer: a generous deadline.
    let up = wait_until(Duration::from_secs(30), || {
        world.run(&["list", "--json"]).status.success()
    });
    assert!(
        up.is_some(),
        "daemon {n} did not come up: {}",
        fs::read_to_string(world.path().join(format!("daemon-{n}.log"))).unwrap_or_default()
    );
    daemon
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Every sequence id in the journal folder, as (count, digest) the way the engine sums them.
fn journal_digest(world: &World) -> (u64, u64) {
    let mut out = (0u64, 0u64);
    for entry in fs::read_dir(world.tray_home().join("journal")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
        {
            // blank lines are skipped by every reader
            let record: Value = serde_json::from_str(line).unwrap();
            let seq = record["observation"]["seq"].as_str().unwrap();
            let h = seq.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            out = (out.0 + 1, out.1.wrapping_add(h));
        }
    }
    out
}

fn status(world: &World) -> Option<Value> {
    serde_json::from_slice(&fs::read(world.tray_home().join("journal/status.json")).ok()?).ok()
}

#[test]
fn fifty_agents_through_the_hook_while_the_daemon_is_killed_twice_lose_nothing() {
    let agents = knob("AGENT_TRAY_LOAD_AGENTS", 50);
    let events = knob("AGENT_TRAY_LOAD_EVENTS", 1000).max(4);
    let total = agents * events;
    let world = Arc::new(World::new().with_env("AGENT_TRAY_NO_FILE_DISCOVERY", "1"));
    let t0 = Instant::now();

    let mut daemon = start_daemon(&world, 1);
    std::thread::sleep(Duration::from_millis(500));
    let baseline = rss_kib(daemon.0.id());

    let sent = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..agents)
        .map(|a| {
            let world = Arc::clone(&world);
            let sent = Arc::clone(&sent);
            std::thread::spawn(move || {
                let id = session_id(a);
                for i in 0..events {
                    run_hook(&world, &payload(&id, i, events));
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    // SIGKILL the daemon at a third and at two thirds of the load, and start a new one.
    for (n, fraction) in [(2, 1), (3, 2)] {
        let at = total * fraction / 3;
        let reached = wait_until(Duration::from_secs(600), || {
            sent.load(Ordering::Relaxed) >= at
        });
        assert!(reached.is_some(), "the load stalled before {at} events");
        let killed = daemon.0.id();
        daemon.0.kill().unwrap(); // SIGKILL
        daemon.0.wait().unwrap();
        assert!(!std::path::Path::new(&format!("/proc/{killed}")).exists());
        // A moment with no daemon at all: those hooks only reach the journal.
        std::thread::sleep(Duration::from_millis(300));
        daemon = start_daemon(&world, n);
    }
    for w in workers {
        w.join().unwrap();
    }
    let sent_in = t0.elapsed();

    // The journal holds every event once (each hook appends before it sends).
    let (journaled, digest) = journal_digest(&world);
    assert_eq!(journaled as usize, total, "every hook journaled its event");

    // The last daemon applied each of them exactly once, and left nothing unapplied.
    let pid = daemon.0.id();
    let settled = wait_until(Duration::from_secs(60), || {
        let s = status(&world)?;
        (s["pid"] == pid
            && s["unapplied_bytes"] == 0
            && s["applied_seqs"]["count"].as_u64() >= Some(journaled))
        .then_some(s)
    });
    let s =
        settled.unwrap_or_else(|| panic!("the last daemon did not settle: {:?}", status(&world)));
    assert_eq!(
        s["applied_seqs"]["count"],
        json!(journaled),
        "applied exactly once: {s}"
    );
    assert_eq!(
        s["applied_seqs"]["digest"],
        json!(digest),
        "the ids applied are the ids journaled"
    );
    assert_eq!(s["totals"]["corrupt"], json!(0));

    // Every session in its last state.
    let list = world.list();
    assert_eq!(list.len(), agents, "{list:?}");
    assert!(
        list.iter().all(|s| s["state"] == "idle"),
        "every session stopped last: {list:?}"
    );

    // Memory back to an idle daemon's, give or take what the live sessions and the bounded
    // memories of applied sequence ids hold (a few MB at their bounds).
    std::thread::sleep(Duration::from_secs(1));
    let after = rss_kib(pid);
    eprintln!(
        "load: {total} events from {agents} agents in {:.1}s ({:.0}/s), {:.1}s in all; daemon RSS idle {baseline} KiB, after {after} KiB",
        sent_in.as_secs_f64(),
        total as f64 / sent_in.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    assert!(
        after <= baseline + 12 * 1024,
        "daemon RSS {after} KiB after the load, {baseline} KiB idle"
    );
    drop(daemon);
}
