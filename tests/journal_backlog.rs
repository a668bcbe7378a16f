//! A long backlog written while no app ran is replayed in full when the app starts.
//!
//! The scenario of the issue, with the real hook binary and a real daemon: with nothing
//! listening, the hook journals one session of 2,500 events (a ~700 KB journal, larger than the
//! compaction threshold) and 300 short sessions; 31 s later (longer than the journal's quiet
//! threshold, so the long file is eligible for compaction) the daemon starts. Every session
//! must be there, each in its last state, and every journaled event applied exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::collections::VecDeque;
use std::fs;
use std::io::Write;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{wait_until, World};
use serde_json::{json, Value};

/// A session id shaped like the agents' (a UUID).
fn session_id(n: u64) -> String {
    format!("{n:08x}-7a1c-4e2b-9d3f-{n:012x}")
}

fn payload(session: &str, event: &str, tool: Option<&str>) -> Vec<u8> {
    let mut p = json!({
        "session_id": session,
        "hook_event_name": event,
        "cwd": "/home/dev/projects/agent-tray-backlog",
        "transcript_path": format!("/home/dev/.claude/projects/-home-dev-projects-agent-tray-backlog/{session}.jsonl"),
    });
    if let Some(tool) = tool {
        p["tool_name"] = json!(tool);
        p["tool_input"] = json!({"command": "cargo test"});
    }
    if event == "SessionStart" {
        p["source"] = json!("startup");
        p["model"] = json!("claude-opus-4");
    }
    serde_json::to_vec(&p).unwrap()
}

/// Runs `agent-tray hook --agent claude` once with `input` on stdin, and waits (bounded).
pub fn run_hook(world: &World, input: &[u8]) {
    let mut child = world
        .command(&["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(input);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the hook exits 0, always");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a hook ran for 20 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Runs each job (a list of payloads, in order) on one of `threads` workers.
fn run_jobs(world: &Arc<World>, jobs: Vec<Vec<Vec<u8>>>, threads: usize) {
    let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<VecDeque<_>>()));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let world = Arc::clone(world);
            std::thread::spawn(move || loop {
                let Some(job) = queue.lock().unwrap().pop_front() else {
                    return;
                };
                for input in job {
                    run_hook(&world, &input);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

/// The 64-bit FNV-1a hash summed over ids: what the engine reports as `applied_seqs.digest`.
fn digest<'a>(seqs: impl Iterator<Item = &'a str>) -> (u64, u64) {
    seqs.fold((0, 0), |(n, sum), seq| {
        let h = seq.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        (n + 1, sum.wrapping_add(h))
    })
}

/// Every sequence id in the journal folder.
fn journal_seqs(world: &World) -> Vec<String> {
    let mut seqs = Vec::new();
    for entry in fs::read_dir(world.tray_home().join("journal")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            for line in fs::read_to_string(&path)
                .unwrap()
                .lines()
                .filter(|l| !l.is_empty())
            {
                // blank lines are skipped by every reader
                let record: Value = serde_json::from_str(line).unwrap();
                seqs.push(record["observation"]["seq"].as_str().unwrap().to_string());
            }
        }
    }
    seqs
}

fn status(world: &World) -> Option<Value> {
    let text = fs::read(world.tray_home().join("journal/status.json")).ok()?;
    serde_json::from_slice(&text).ok()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "2,800 hook processes: each start under Wine costs what a hundred do on Windows"
)]
fn a_long_backlog_written_while_no_app_ran_is_replayed_in_full_and_once() {
    let world = Arc::new(World::new().with_env("AGENT_TRAY_NO_FILE_DISCOVERY", "1"));
    let long = session_id(0);
    let t0 = Instant::now();

    // The long session: it starts and gets a prompt, then 2,497 tool events (four hooks at a
    // time, as parallel tool calls do), then it stops: 2,500 events.
    run_jobs(
        &world,
        vec![vec![
            payload(&long, "SessionStart", None),
            payload(&long, "UserPromptSubmit", None),
        ]],
        1,
    );
    let tools: Vec<Vec<Vec<u8>>> = (0..2497u32)
        .map(|i| {
            let event = if i.is_multiple_of(2) {
                "PreToolUse"
            } else {
                "PostToolUse"
            };
            vec![payload(&long, event, Some("Bash"))]
        })
        .collect();
    run_jobs(&world, tools, 4);
    run_jobs(&world, vec![vec![payload(&long, "Stop", None)]], 1);

    // 300 short sessions; even ones end idle, odd ones are still working.
    let short: Vec<Vec<Vec<u8>>> = (1..=300)
        .map(|n| {
            let id = session_id(n);
            let mut job = vec![
                payload(&id, "SessionStart", None),
                payload(&id, "UserPromptSubmit", None),
            ];
            if n.is_multiple_of(2) {
                job.push(payload(&id, "Stop", None));
            }
            job
        })
        .collect();
    run_jobs(&world, short, 4);
    let written = t0.elapsed();

    let journal = world.tray_home().join("journal");
    let long_file = journal.join(format!("claude-{long}.jsonl"));
    let long_size = fs::metadata(&long_file).unwrap().len();
    assert!(
        long_size > 600_000,
        "the scenario needs a journal of about 700 KB, larger than the compaction threshold: {long_size} bytes"
    );
    let seqs = journal_seqs(&world);
    assert_eq!(seqs.len(), 2500 + 150 * 3 + 150 * 2, "every hook journaled");
    let (count, sum) = digest(seqs.iter().map(String::as_str));

    // Quiet for longer than the journal's quiet threshold (30 s), as in the report.
    std::thread::sleep(Duration::from_secs(31));
    let daemon = world.start_daemon();

    let want_state = |n: u64| {
        if n.is_multiple_of(2) {
            "idle"
        } else {
            "working"
        }
    };
    let all_there = wait_until(Duration::from_secs(60), || {
        let list = world.list();
        let ok = list.len() == 301
            && list.iter().all(|s| {
                let id = s["session_id"].as_str().unwrap_or_default();
                let n = u64::from_str_radix(&id[id.len() - 12..], 16).unwrap_or(u64::MAX);
                s["state"] == want_state(n)
            });
        ok.then_some(())
    });
    let list = world.list();
    let long_state = list
        .iter()
        .find(|s| s["session_id"] == long.as_str())
        .map(|s| s["state"].clone());
    assert_eq!(
        long_state,
        Some(json!("idle")),
        "the long session is back, in its last state"
    );
    assert!(
        all_there.is_some(),
        "301 sessions, each in its last state; got {} sessions\n{}",
        list.len(),
        daemon.log_text()
    );

    // Exactly once: the engine applied as many sequence ids as the journal held, and the same
    // ones (an id applied twice and one missed would change the digest).
    let settled = wait_until(Duration::from_secs(20), || {
        let s = status(&world)?;
        (s["unapplied_bytes"] == 0 && s["applied_seqs"]["count"] == count).then_some(s)
    });
    let s = settled.unwrap_or_else(|| panic!("status: {:?}", status(&world)));
    assert_eq!(s["applied_seqs"]["digest"], json!(sum));
    assert_eq!(s["totals"]["applied"], json!(count));
    assert_eq!(s["totals"]["duplicates"], json!(0));
    assert_eq!(s["totals"]["corrupt"], json!(0));

    // The long journal was compacted, after it was applied: the next start still has its
    // first records and its last state.
    let compacted = wait_until(Duration::from_secs(10), || {
        fs::metadata(&long_file).unwrap().len() < long_size / 2
    });
    assert!(compacted.is_some(), "the applied long journal is compacted");
    let kept = fs::read_to_string(&long_file).unwrap();
    assert!(kept.lines().next().unwrap().contains("SessionStart"));
    assert!(kept.lines().last().unwrap().contains("\"Stop\""));
    eprintln!(
        "backlog: {} events written by the hook in {:.1}s, long journal {} KB",
        count,
        written.as_secs_f64(),
        long_size / 1000
    );
    daemon.terminate();
}
