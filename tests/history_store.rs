//! The history store against a real `agent-tray daemon`: scripted figures that survive a
//! restart, a `kill -9` in the middle of a write burst, and a folder the store cannot write.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// The scripted figures' helpers serve a unix-only test (its graceful stop is a SIGTERM).
#![cfg_attr(windows, allow(dead_code))]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use common::{kill_hard, wait_until, World};
use serde_json::{json, Value};

fn store_file(world: &World) -> PathBuf {
    world.tray_home().join("history/history.sqlite3")
}

fn json_of(world: &World, args: &[&str]) -> Value {
    let out = world.run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The Codex session's thread id (its rollout's file name ends with it).
const S2: &str = "01a228b4-48e5-7151-b535-fa0e4e9093ad";

/// s1's transcript as Claude writes it during its first turn: a prompt, then two messages (the
/// first written twice, partial then final), with cache reads and writes.
const S1_TRANSCRIPT: &str = r#"{"type":"user","timestamp":"2026-03-02T09:05:00Z","promptId":"p1","cwd":"/w/shop","sessionId":"s1","message":{"role":"user","content":"fix the build"}}
{"type":"assistant","timestamp":"2026-03-02T09:06:00Z","cwd":"/w/shop","sessionId":"s1","message":{"id":"msg_a","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"…"}],"usage":{"input_tokens":1000,"cache_creation_input_tokens":2000,"cache_read_input_tokens":10000,"output_tokens":1}}}
{"type":"assistant","timestamp":"2026-03-02T09:06:01Z","cwd":"/w/shop","sessionId":"s1","message":{"id":"msg_a","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","name":"Bash"}],"usage":{"input_tokens":1000,"cache_creation_input_tokens":2000,"cache_read_input_tokens":10000,"output_tokens":500}}}
{"type":"assistant","timestamp":"2026-03-02T09:08:00Z","cwd":"/w/shop","sessionId":"s1","message":{"id":"msg_b","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"…"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":12000,"output_tokens":300}}}
"#;

/// S2's rollout during its turn: a usage record naming the turn, then the thread's total.
const S2_ROLLOUT: &str = r#"{"timestamp":"2026-03-02T11:00:00Z","type":"session_meta","payload":{"id":"01a228b4-48e5-7151-b535-fa0e4e9093ad","cwd":"/w/api","source":"cli"}}
{"timestamp":"2026-03-02T11:01:00Z","type":"turn_context","payload":{"model":"gpt-5","cwd":"/w/api"}}
{"timestamp":"2026-03-02T11:02:00Z","type":"token_usage_record","payload":{"turn_id":"turn-1","thread_token_usage":{"input_tokens":5000,"cached_input_tokens":4000,"output_tokens":200}}}
{"timestamp":"2026-03-02T11:02:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5000,"cached_input_tokens":4000,"output_tokens":200}}}}
"#;

/// Writes an agent's file the way the agent does: all at once, then the feed sees it.
fn write_agent_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Waits until `history --json` shows `session` with `output` output tokens.
fn wait_for_tokens(world: &World, session: &str, output: u64) {
    wait_until(Duration::from_secs(20), || {
        json_of(world, &["history", "--json"])
            .as_array()
            .and_then(|a| a.iter().find(|s| s["session_id"] == session).cloned())
            .is_some_and(|s| s["tokens"]["output"] == output)
    })
    .unwrap_or_else(|| panic!("{session}'s tokens recorded"));
}

/// The README's worked example, and a short Codex session, driven through `observe --at`.
const SCRIPT: &[(&str, &str, &str, &[&str])] = &[
    (
        "s1",
        "claude",
        "2026-03-02T09:00:00Z",
        &["--event", "SessionStart", "--cwd", "/w/shop"],
    ),
    (
        "s1",
        "claude",
        "2026-03-02T09:05:00Z",
        &["--event", "UserPromptSubmit"],
    ),
    (
        "s1",
        "claude",
        "2026-03-02T09:15:00Z",
        &["--event", "PermissionRequest", "--tool", "Bash"],
    ),
    (
        "s1",
        "claude",
        "2026-03-02T09:18:00Z",
        &["--event", "PostToolUse", "--tool", "Bash"],
    ),
    ("s1", "claude", "2026-03-02T09:30:00Z", &["--event", "Stop"]),
    (
        "s1",
        "claude",
        "2026-03-02T09:50:00Z",
        &["--event", "UserPromptSubmit"],
    ),
    (
        "s1",
        "claude",
        "2026-03-02T09:55:00Z",
        &[
            "--event",
            "Notification",
            "--notification-type",
            "elicitation_dialog",
        ],
    ),
    ("s1", "claude", "2026-03-02T10:00:00Z", &["--event", "Stop"]),
    (
        "s1",
        "claude",
        "2026-03-02T10:10:00Z",
        &["--event", "SessionEnd"],
    ),
    (
        S2,
        "codex",
        "2026-03-02T11:00:00Z",
        &[
            "--event",
            "SessionStart",
            "--cwd",
            "/w/api",
            "--model",
            "gpt-5",
        ],
    ),
    (
        S2,
        "codex",
        "2026-03-02T11:01:00Z",
        &["--event", "UserPromptSubmit"],
    ),
    (S2, "codex", "2026-03-02T11:04:00Z", &["--event", "Stop"]),
    (
        S2,
        "codex",
        "2026-03-02T11:07:00Z",
        &["--event", "SessionEnd"],
    ),
];

#[test]
#[cfg(unix)] // its check is the graceful stop (SIGTERM) writing the last second; Windows ends it by TerminateProcess here
fn scripted_figures_survive_a_restart_to_the_second() {
    // The script is dated March 2026: keep history long enough that a restart does not prune it.
    let world = World::new()
        .with_env("TZ", "Europe/Paris")
        .with_env("AGENT_TRAY_HISTORY_DAYS", "36500");
    let daemon = world.start_daemon();
    for (session, agent, at, args) in SCRIPT {
        let mut all = vec!["--session", session, "--agent", agent, "--at", at];
        all.extend_from_slice(args);
        world.observe(&all);
        // Each agent writes its file during its first turn; the feeds read the usage from it.
        if *session == "s1" && *at == "2026-03-02T09:05:00Z" {
            write_agent_file(
                &world.path().join("claude/projects/-w-shop/s1.jsonl"),
                S1_TRANSCRIPT,
            );
            wait_for_tokens(&world, "s1", 800);
        }
        if *session == S2 && *at == "2026-03-02T11:01:00Z" {
            write_agent_file(
                &world.path().join(format!(
                    "codex/sessions/2026/03/02/rollout-2026-03-02T11-00-00-{S2}.jsonl"
                )),
                S2_ROLLOUT,
            );
            wait_for_tokens(&world, S2, 200);
        }
    }
    // Both sessions' ends reach the store before the stop (the writer drains on shutdown too).
    wait_until(Duration::from_secs(10), || {
        json_of(&world, &["history", "--json"])
            .as_array()
            .is_some_and(|a| a.len() == 2 && a.iter().all(|s| s["state"] == "ended"))
    })
    .expect("both sessions recorded as ended");
    assert!(daemon.terminate().is_some_and(|s| s.success()));
    // The agents' files go (cleaned up, archived): what was read from them stays in history.
    // (Left in place, a fresh engine would take the recent files for live sessions again.)
    std::fs::remove_dir_all(world.path().join("claude/projects")).unwrap();
    std::fs::remove_dir_all(world.path().join("codex/sessions")).unwrap();

    let daemon = world.start_daemon();
    let history = json_of(&world, &["history", "--json"]);
    let sessions = history.as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{history:#}");
    let (s2, s1) = (&sessions[0], &sessions[1]);
    assert_eq!(s2["session_id"], S2, "most recently active first");
    // Tokens per session, cache apart, and their estimated cost at the shipped prices:
    // sonnet 3 / 15 / 0.30 / 3.75 $ per million (in, out, cache read, cache write), so
    // 1010 × 3 + 800 × 15 + 22000 × 0.3 + 2000 × 3.75 = 29130 µ$.
    assert_eq!(
        s1["tokens"],
        json!({"input": 1010, "output": 800, "cache_read": 22000, "cache_write": 2000})
    );
    assert_eq!(s1["cost_estimate_usd"], 0.02913);
    // gpt-5 1.25 / 10 / 0.125: OpenAI's input includes the cached 4000, so 1000 fresh:
    // 1000 × 1.25 + 200 × 10 + 4000 × 0.125 = 3750 µ$.
    assert_eq!(
        s2["tokens"],
        json!({"input": 1000, "output": 200, "cache_read": 4000, "cache_write": 0})
    );
    assert_eq!(s2["cost_estimate_usd"], 0.00375);
    assert_eq!(s1["started_at"], "2026-03-02T09:00:00Z");
    assert_eq!(
        s1["state_since"], "2026-03-02T10:10:00Z",
        "when it ended: {s1:#}"
    );
    assert_eq!(s1["end_reason"], "session_end");
    assert_eq!(s1["cwd"], "/w/shop");
    assert_eq!(s2["model"], "gpt-5");
    assert_eq!(s2["agent"], "codex");
    // Every field of the `list --json` Session object is there.
    for field in [
        "pid",
        "prompted",
        "streamed",
        "last_seen",
        "waiting_for",
        "title",
        "subagents",
    ] {
        assert!(s1.get(field).is_some(), "{field} missing: {s1:#}");
    }
    let found = json_of(&world, &["history", "--json", "--search", "SHOP"]);
    assert_eq!(found.as_array().unwrap().len(), 1);
    let found = json_of(&world, &["history", "--json", "--agent", "codex"]);
    assert_eq!(found[0]["session_id"], S2);

    let stats = json_of(
        &world,
        &[
            "stats",
            "--since",
            "2026-03-02",
            "--by",
            "agent",
            "--json",
            "--now",
            "2026-03-02T18:00:00Z",
        ],
    );
    assert_eq!(stats["time_zone"], "Europe/Paris");
    assert_eq!(
        stats["from"], "2026-03-01T23:00:00Z",
        "local midnight in Paris"
    );
    let claude = stats["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "claude")
        .unwrap();
    assert_eq!(claude["waiting_for_permission_secs"], 180);
    assert_eq!(claude["waiting_for_input_secs"], 300);
    assert_eq!(claude["idle_after_turn_secs"], 1200 + 600);
    assert_eq!(claude["waiting_on_you_secs"], 180 + 300 + 1800);
    assert_eq!(claude["working_secs"], 600 + 720 + 300);
    let codex = stats["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "codex")
        .unwrap();
    assert_eq!(codex["waiting_on_you_secs"], 180);
    assert_eq!(codex["working_secs"], 180);
    assert_eq!(claude["tokens"]["cache_read"], 22000);
    assert_eq!(claude["cost_estimate_usd"], 0.02913);
    assert_eq!(codex["tokens"]["output"], 200);
    assert_eq!(codex["cost_estimate_usd"], 0.00375);
    assert_eq!(stats["usage"]["cost_estimate_usd"], 0.03288);
    assert_eq!(stats["usage"]["tokens"]["output"], 1000);
    assert_eq!(stats["prices_as_of"].as_str().map(str::len), Some(10));
    assert_eq!(stats["totals"]["waiting_on_you_secs"], 2280 + 180);
    let longest = &stats["longest_waits"][0];
    assert_eq!(longest["secs"], 1200);
    assert_eq!(longest["kind"], "idle_after_turn");
    assert_eq!(longest["from"], "2026-03-02T09:30:00Z");

    let by_day = json_of(
        &world,
        &[
            "stats",
            "--today",
            "--by",
            "day",
            "--json",
            "--now",
            "2026-03-02T18:00:00Z",
        ],
    );
    assert_eq!(by_day["groups"][0]["key"], "2026-03-02");
    assert_eq!(by_day["totals"], stats["totals"]);
    // The window's Today view reads the same store after the restart, with the same figures.
    let today = agent_tray::store::views::today(
        &store_file(&world),
        "2026-03-02T18:00:00Z".parse().unwrap(),
        chrono_tz::Europe::Paris,
    )
    .unwrap();
    assert_eq!(today.totals.waiting_on_you_secs, 2280 + 180);
    assert_eq!(today.totals.working_secs, 600 + 720 + 300 + 180);
    assert_eq!(
        today.tokens,
        Some(1010 + 800 + 22000 + 2000 + 1000 + 200 + 4000)
    );
    assert_eq!(
        today.longest_waits[0].from,
        longest["from"]
            .as_str()
            .unwrap()
            .parse::<DateTime<Utc>>()
            .unwrap()
    );
    let by_project = json_of(
        &world,
        &[
            "stats",
            "--week",
            "--by",
            "project",
            "--json",
            "--now",
            "2026-03-03T18:00:00Z",
        ],
    );
    let keys: Vec<&str> = by_project["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["api", "shop"]);

    let out = world.run(&["history", "--export", "csv"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.starts_with("session_id,agent,state,project"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    let export = json_of(&world, &["history", "--export", "json"]);
    let turns = export[1]["usage"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(turns[0]["turn_id"], "p1");
    assert_eq!(turns[0]["tokens"]["output"], 800);
    assert_eq!(export[0]["usage"]["turns"][0]["turn_id"], "turn-1");
    let states: Vec<&str> = export[1]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "starting",
            "working",
            "waiting_for_permission",
            "working",
            "idle",
            "working",
            "waiting_for_input",
            "idle"
        ]
    );
    let human = world.run(&[
        "stats",
        "--since",
        "2026-03-02",
        "--now",
        "2026-03-02T18:00:00Z",
    ]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("Waiting on you: 41m"), "{text}");
    drop(daemon);
}

fn observation(session: &str, event: &str, at: DateTime<Utc>) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"v": 1, "op": "observe", "observation": {
        "session_id": session, "agent": "claude", "event": event, "at": at.to_rfc3339(),
        "cwd": format!("/home/dev/project-{session}"),
    }}))
    .unwrap();
    line.push(b'\n');
    line
}

#[test]
fn kill_9_in_a_write_burst_leaves_a_sound_store_missing_at_most_the_last_second() {
    let world = World::new();
    let daemon = world.start_daemon();
    let mut stream = common::connect_raw(&world.socket());
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    // 20 sessions flip between working and idle, several hundred changes a second (more than
    // eight busy agents' hooks make); every answered observation opens an interval
    // stamped with its own time.
    let mut acked: Vec<(String, DateTime<Utc>)> = Vec::new();
    let start = Instant::now();
    let mut i = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        let session = format!("burst-{}", i % 20);
        let event = if (i / 20).is_multiple_of(2) {
            "UserPromptSubmit"
        } else {
            "Stop"
        };
        let at = Utc::now();
        stream.write_all(&observation(&session, event, at)).unwrap();
        let mut reply = String::new();
        reader.read_line(&mut reply).unwrap();
        assert!(reply.contains("\"ok\":true"), "{reply}");
        acked.push((session, at));
        i += 1;
        std::thread::sleep(Duration::from_micros(700));
    }
    let killed_at = Utc::now();
    kill_hard(daemon.pid());
    drop(daemon);
    eprintln!("burst: {} observations in 3 s before kill -9", acked.len());

    let conn = rusqlite::Connection::open(store_file(&world)).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let mut missing = Vec::new();
    let mut stmt = conn
        .prepare(
            "SELECT count(*) FROM intervals i JOIN sessions s ON s.id = i.session
             WHERE s.session_id = ?1 AND i.from_ms = ?2",
        )
        .unwrap();
    let mut lost_last_second = 0;
    for (session, at) in &acked {
        let n: i64 = stmt
            .query_row(rusqlite::params![session, at.timestamp_millis()], |r| {
                r.get(0)
            })
            .unwrap();
        if n == 0 && *at < killed_at - chrono::TimeDelta::seconds(1) {
            missing.push((session.clone(), *at));
        } else if n == 0 {
            lost_last_second += 1;
        }
    }
    eprintln!("intervals lost in the last second before kill -9: {lost_last_second}");
    assert!(
        missing.is_empty(),
        "{} intervals older than 1 s before the kill are missing: {:?}\n{}",
        missing.len(),
        &missing[..missing.len().min(5)],
        std::fs::read_to_string(world.path().join("daemon.log")).unwrap_or_default()
    );
    drop(stmt);
    drop(conn);

    // A new engine opens it, closes what the dead one left open, and history reads it.
    let daemon = world.start_daemon();
    let history = json_of(&world, &["history", "--json", "--limit", "100"]);
    assert_eq!(history.as_array().unwrap().len(), 20);
    let conn = rusqlite::Connection::open(store_file(&world)).unwrap();
    wait_until(Duration::from_secs(10), || {
        conn.query_row(
            "SELECT count(*) FROM intervals WHERE to_ms IS NULL",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
            == 0
    })
    .expect("the dead engine's open intervals are closed");
    drop(daemon);
}

#[test]
fn kill_9_at_rest_closes_the_open_interval_within_a_second_of_the_kill() {
    // Nothing happens for three seconds, then kill -9: the open interval must end where the
    // engine was last alive (its once-a-second mark), not where it began.
    let world = World::new();
    let daemon = world.start_daemon();
    world.observe(&["--session", "rest-1", "--event", "UserPromptSubmit"]);
    assert_eq!(world.state_of("rest-1").as_deref(), Some("working"));
    std::thread::sleep(Duration::from_secs(3));
    let killed_at = Utc::now().timestamp_millis();
    kill_hard(daemon.pid());
    drop(daemon); // reaped: it writes nothing after this
    let dead_at = Utc::now().timestamp_millis();
    let conn = rusqlite::Connection::open(store_file(&world)).unwrap();
    let open_interval = || -> Option<(i64, Option<i64>)> {
        conn.query_row(
            "SELECT i.from_ms, i.to_ms FROM intervals i JOIN sessions s ON s.id = i.session
             WHERE s.session_id = 'rest-1' ORDER BY i.from_ms DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok()
    };
    let (from_ms, to_ms) = open_interval().expect("the interval was written");
    assert_eq!(to_ms, None, "open when the engine died");
    let daemon = world.start_daemon();
    let closed_at = wait_until(Duration::from_secs(10), || {
        open_interval().and_then(|(_, to)| to)
    })
    .expect("the next engine closes it");
    assert!(
        closed_at >= killed_at - 1500 && closed_at <= dead_at,
        "closed at {} ms after it began, the kill {} ms after",
        closed_at - from_ms,
        killed_at - from_ms
    );
    drop(daemon);
}

#[cfg(unix)] // a read-only folder by its mode, a full disk by RLIMIT_FSIZE: unix's
/// A read-only mount on the store's folder (root ignores file modes; others get a 0555 folder).
struct ReadOnly(PathBuf, bool);

#[cfg(unix)]
impl ReadOnly {
    fn make(dir: &Path) -> ReadOnly {
        std::fs::create_dir_all(dir).unwrap();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            let status = Command::new("mount")
                .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
                .arg(dir)
                .status()
                .unwrap();
            assert!(
                status.success(),
                "mount a read-only tmpfs on {}",
                dir.display()
            );
        } else {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        ReadOnly(dir.to_path_buf(), root)
    }
}

#[cfg(unix)]
impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.1 {
            let _ = Command::new("umount").arg(&self.0).status();
        } else {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o700));
        }
    }
}

#[cfg(unix)] // a read-only folder by its mode, a full disk by RLIMIT_FSIZE: unix's
#[test]
fn a_read_only_store_folder_is_reported_once_and_the_engine_runs_on() {
    let world = World::new();
    let readonly = ReadOnly::make(&world.tray_home().join("history"));
    let daemon = world.start_daemon();
    for (event, at) in [
        ("SessionStart", "2026-03-02T09:00:00Z"),
        ("UserPromptSubmit", "2026-03-02T09:01:00Z"),
    ] {
        world.observe(&["--session", "ro-1", "--event", event, "--at", at]);
    }
    assert_eq!(
        world.state_of("ro-1").as_deref(),
        Some("working"),
        "the engine tracks sessions"
    );
    // The writer retries each second (the alive mark goes into the store when its own file
    // cannot be made, as here): let several attempts fail.
    std::thread::sleep(Duration::from_secs(3));
    world.observe(&[
        "--session",
        "ro-1",
        "--event",
        "Stop",
        "--at",
        "2026-03-02T09:02:00Z",
    ]);
    assert_eq!(world.state_of("ro-1").as_deref(), Some("idle"));
    let log = daemon.log_text();
    assert_eq!(
        log.matches("history_unavailable").count(),
        1,
        "reported once: {log}"
    );
    assert!(log.contains("history"), "{log}");
    // Without a store, `history` still answers from the engine; `stats` answers zero.
    assert!(world.run(&["history", "--json"]).status.success());
    let stats = json_of(&world, &["stats", "--json"]);
    assert_eq!(stats["totals"]["waiting_on_you_secs"], 0);
    assert!(!store_file(&world).exists());
    drop(daemon);
    drop(readonly);
}

#[cfg(unix)]
/// The most any file the daemon writes may grow to: a disk that is full at 1 MiB, for real
/// (writes past it fail with EFBIG), without root.
const FULL_AT: u64 = 1024 * 1024;

#[cfg(unix)] // a read-only folder by its mode, a full disk by RLIMIT_FSIZE: unix's
/// Starts a daemon whose files cannot grow past [`FULL_AT`] bytes. SIGXFSZ is ignored (its
/// default would kill the process at the first write past the limit) so writes fail instead,
/// as on a full disk.
fn start_daemon_on_a_full_disk(world: &World) -> common::Daemon {
    use std::os::unix::process::CommandExt;
    let log = world.path().join("daemon.log");
    let mut cmd = world.command(&["daemon"]);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    // SAFETY: between fork and exec only async-signal-safe calls (signal, setrlimit).
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: FULL_AT,
                rlim_max: FULL_AT,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let daemon = common::Daemon {
        child: cmd.spawn_retrying().unwrap(),
        log,
    };
    wait_until(Duration::from_secs(10), || {
        world.run(&["list", "--json"]).status.success()
    })
    .unwrap_or_else(|| panic!("daemon did not come up: {}", daemon.log_text()));
    daemon
}

#[cfg(unix)] // a read-only folder by its mode, a full disk by RLIMIT_FSIZE: unix's
#[test]
fn a_full_disk_is_reported_once_and_the_engine_runs_on_without_history() {
    let world = World::new();
    let daemon = start_daemon_on_a_full_disk(&world);
    let mut stream = common::connect_raw(&world.socket());
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut send = |session: &str, event: &str| {
        // A long folder name: each new session costs the store a few KiB.
        let mut line = serde_json::to_vec(&json!({"v": 1, "op": "observe", "observation": {
            "session_id": session, "agent": "claude", "event": event, "at": Utc::now().to_rfc3339(),
            "cwd": format!("/home/dev/{session}/{}", "deep/".repeat(700)),
        }}))
        .unwrap();
        line.push(b'\n');
        stream.write_all(&line).unwrap();
        let mut reply = String::new();
        reader.read_line(&mut reply).unwrap();
        assert!(reply.contains("\"ok\":true"), "{reply}");
    };
    let reports =
        |daemon: &common::Daemon| daemon.log_text().matches("history_unavailable").count();
    // Positive control first: history is written while there is room.
    send("first", "UserPromptSubmit");
    wait_until(Duration::from_secs(10), || {
        json_of(&world, &["history", "--json"])
            .as_array()
            .is_some_and(|a| a.len() == 1)
    })
    .expect("history written while the disk has room");
    // Fill the disk: sessions until the store says it cannot write.
    let mut n = 0;
    let filled = wait_until(Duration::from_secs(60), || {
        for _ in 0..20 {
            send(&format!("fill-{n}"), "UserPromptSubmit");
            n += 1;
        }
        reports(&daemon) > 0
    });
    assert!(
        filled.is_some(),
        "the store never filled: {}",
        daemon.log_text()
    );
    // Keep working well past it: changes, new sessions, the writer's retries.
    for i in 0..300 {
        send(
            &format!("fill-{}", i % 50),
            if i % 2 == 0 {
                "Stop"
            } else {
                "UserPromptSubmit"
            },
        );
        send(&format!("after-{i}"), "UserPromptSubmit");
    }
    std::thread::sleep(Duration::from_millis(1500));
    let log = daemon.log_text();
    assert_eq!(reports(&daemon), 1, "reported once: {log}");
    assert!(log.contains("the engine runs on without history"), "{log}");
    // The engine runs on: every session is live and a new observation moves one.
    assert!(world.session("after-299").is_some());
    world.observe(&[
        "--session",
        "after-299",
        "--agent",
        "claude",
        "--event",
        "Stop",
    ]);
    assert_eq!(world.state_of("after-299").as_deref(), Some("idle"));
    // No file grew past the disk, and what was written is sound.
    for name in ["history.sqlite3", "history.sqlite3-wal"] {
        let path = world.tray_home().join("history").join(name);
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(len <= FULL_AT, "{name}: {len} bytes");
    }
    assert!(daemon.terminate().is_some());
    let conn = rusqlite::Connection::open(store_file(&world)).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[cfg(unix)] // file modes and umask are unix's; Windows' folder is the user's own
/// Starts `agent-tray daemon` with the process umask at 0, as a shell that ran `umask 000` (or a
/// service manager with `UMask=0000`) would: every file it creates gets exactly the mode it asks
/// for, so a file opened with the library's default (0644) is readable by everyone.
fn start_daemon_with_umask_0(world: &World) -> common::Daemon {
    use std::os::unix::process::CommandExt;
    let log = world.path().join("daemon.log");
    let mut cmd = world.command(&["daemon"]);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    // SAFETY: between fork and exec only an async-signal-safe call (umask).
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let daemon = common::Daemon {
        child: cmd.spawn_retrying().unwrap(),
        log,
    };
    wait_until(Duration::from_secs(10), || {
        world.run(&["list", "--json"]).status.success()
    })
    .unwrap_or_else(|| panic!("daemon did not come up: {}", daemon.log_text()));
    daemon
}

#[cfg(unix)] // file modes and umask are unix's; Windows' folder is the user's own
#[test]
fn the_history_database_and_its_wal_and_shm_are_0600_under_umask_000() {
    // What the store keeps (folders, repos, branches, titles, timings) is as private as the
    // journal: another user on the machine must not read it even when the engine runs with a
    // umask of 0 (a user's shell, a service unit), so its files must be 0600 by themselves.
    use std::os::unix::fs::PermissionsExt;
    let world = World::new();
    let daemon = start_daemon_with_umask_0(&world);
    world.observe(&["--session", "umask-1", "--event", "UserPromptSubmit"]);
    let db = store_file(&world);
    let wal = db.with_file_name("history.sqlite3-wal");
    let shm = db.with_file_name("history.sqlite3-shm");
    wait_until(Duration::from_secs(10), || {
        json_of(&world, &["history", "--json"])
            .as_array()
            .is_some_and(|a| a.len() == 1)
            && wal.exists()
            && shm.exists()
    })
    .unwrap_or_else(|| panic!("the store was not written: {}", daemon.log_text()));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // The umask really is 0 in the engine (else the test proves nothing): a file it creates
    // without asking for 0600 is readable by everyone.
    let umask_line = std::fs::read_to_string(format!("/proc/{}/status", daemon.pid()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Umask:"))
                .map(String::from)
        });
    if let Some(line) = umask_line {
        assert!(
            line.ends_with("0000"),
            "the engine runs with umask 0: {line}"
        );
    }
    for file in [&db, &wal, &shm] {
        assert_eq!(
            mode(file),
            0o600,
            "{} must be readable by its owner only",
            file.display()
        );
    }
    // Everything else the engine wrote under its home is private too.
    let mut loose = Vec::new();
    let mut dirs = vec![world.tray_home()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            let m = meta.permissions().mode() & 0o777;
            if meta.is_dir() {
                if m & 0o077 != 0 {
                    loose.push(format!("{} {m:o}", entry.path().display()));
                }
                dirs.push(entry.path());
            } else if m & 0o077 != 0 {
                loose.push(format!("{} {m:o}", entry.path().display()));
            }
        }
    }
    assert!(
        loose.is_empty(),
        "files others can read or write: {loose:?}"
    );
    drop(daemon);
}
