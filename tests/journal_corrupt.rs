//! Corrupt journal records cost only themselves: a line that is not JSON, a line cut in half, a
//! record with an impossible date are skipped and counted, and replay goes on, at start and
//! for the rest of the run. Before, a record dated at the end of time whose pid was a live
//! agent made the liveness check overflow and panic, which stopped replay for good, and a
//! far-future record made every later event of its session look stale.

// A copy of /bin/sleep stands for the agent whose records are corrupt: unix here.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::{wait_until, World};
use serde_json::{json, Value};

fn record(session: &str, event: &str, at: &str, seq: &str, pid: Option<u32>) -> String {
    let mut obs = json!({
        "session_id": session,
        "agent": "claude",
        "event": event,
        "source": "hook",
        "at": at,
        "cwd": "/home/dev/w",
        "seq": seq,
    });
    if let Some(pid) = pid {
        obs["pid"] = json!(pid);
    }
    json!({"v": 1, "observation": obs}).to_string()
}

fn status(world: &World) -> Option<Value> {
    serde_json::from_slice(&fs::read(world.tray_home().join("journal/status.json")).ok()?).ok()
}

#[test]
fn corrupt_records_are_skipped_and_counted_and_replay_goes_on() {
    let world = World::new().with_env("AGENT_TRAY_NO_FILE_DISCOVERY", "1");
    let journal = world.tray_home().join("journal");
    fs::create_dir_all(&journal).unwrap();
    let now = chrono::Utc::now();
    let at = |secs_ago: i64| (now - chrono::Duration::seconds(secs_ago)).to_rfc3339();

    // A live "agent": a sleeping process whose name is `claude`.
    let bin = world.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    common::copy_executable(std::path::Path::new("/bin/sleep"), &bin.join("claude"));
    let mut agent = Command::new(bin.join("claude"))
        .arg("600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();

    // An old journal whose last record is dated at the end of time, from that live agent.
    let end_of_time = journal.join("claude-end-of-time.jsonl");
    fs::write(
        &end_of_time,
        format!(
            "{}\n{}\n",
            record("end-of-time", "SessionStart", &at(900), "e1", None),
            record(
                "end-of-time",
                "Stop",
                "+262142-12-31T23:59:59Z",
                "e2",
                Some(agent.id())
            )
        ),
    )
    .unwrap();
    let old = SystemTime::now() - Duration::from_secs(600);
    fs::File::options()
        .write(true)
        .open(&end_of_time)
        .unwrap()
        .set_modified(old)
        .unwrap();

    // A recent session with every kind of damage between good records.
    let mixed = [
        record("mixed", "SessionStart", &at(20), "m1", None),
        "this is not JSON".to_string(),
        r#"{"v":1,"observation":{"session_id":"mix"#.to_string(), // a line cut in half
        record("mixed", "UserPromptSubmit", &at(15), "m2", None),
        record("mixed", "Stop", "9999-01-01T00:00:00Z", "m3", None), // far future
        record("mixed", "Stop", &at(10), "m4", None),
    ];
    fs::write(journal.join("claude-mixed.jsonl"), mixed.join("\n") + "\n").unwrap();

    let daemon = world.start_daemon();
    let replayed = wait_until(Duration::from_secs(15), || {
        world.state_of("mixed").filter(|s| s == "idle")
    });
    assert!(
        replayed.is_some(),
        "the good records around the bad ones are applied, the far-future one does not make the last Stop look stale: {:?}\n{}",
        world.session("mixed"),
        daemon.log_text()
    );

    // Replay is still alive after the start: a session journaled now is picked up.
    let mut late = fs::File::create(journal.join("claude-late.jsonl")).unwrap();
    writeln!(
        late,
        "{}",
        record("late", "SessionStart", &at(0), "l1", None)
    )
    .unwrap();
    writeln!(
        late,
        "{}",
        record("late", "UserPromptSubmit", &at(0), "l2", None)
    )
    .unwrap();
    drop(late);
    let alive = wait_until(Duration::from_secs(15), || {
        world.state_of("late").filter(|s| s == "working")
    });
    assert!(
        alive.is_some(),
        "replay goes on after a corrupt record\n{}",
        daemon.log_text()
    );
    assert!(
        !daemon.log_text().contains("panicked"),
        "{}",
        daemon.log_text()
    );

    // Counted: the three damaged lines of `mixed` (the end-of-time file was skipped at start as
    // old, after its bad last record was passed over).
    let counted = wait_until(Duration::from_secs(10), || {
        status(&world).filter(|s| s["totals"]["corrupt"] == 3)
    });
    assert!(counted.is_some(), "status: {:?}", status(&world));
    let doctor = world.run(&["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains("skipped 3 corrupt journal records"),
        "doctor shows the count: {text}"
    );

    daemon.terminate();
    let _ = agent.kill();
    let _ = agent.wait();
}
