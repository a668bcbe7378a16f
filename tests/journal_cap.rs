//! While no app runs the journal is capped: the hook drops the oldest journals first once the
//! folder holds more than its cap (128 MiB), records that it did, and the engine and `doctor`
//! say so. Before, the folder grew without bound until an engine started.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::fs;
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use common::{wait_until, World};
use serde_json::Value;

const MIB: u64 = 1024 * 1024;

fn hook(world: &World, session: &str) {
    let mut child = world
        .command(&["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    let payload = format!(
        r#"{{"session_id":"{session}","hook_event_name":"UserPromptSubmit","cwd":"/home/dev/w"}}"#
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    let status = wait_until(Duration::from_secs(20), || child.try_wait().unwrap());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(status.is_some_and(|s| s.success()));
}

#[test]
fn the_hook_caps_the_journal_oldest_first_and_records_the_drop() {
    let world = World::new().with_env("AGENT_TRAY_NO_FILE_DISCOVERY", "1");
    let journal = world.tray_home().join("journal");
    fs::create_dir_all(&journal).unwrap();
    // Three journals of 50 MiB each (sparse: no disk is used), written 3, 2 and 1 hours ago:
    // 150 MiB, over the cap.
    let now = SystemTime::now();
    let files: Vec<_> = (1..=3)
        .map(|n| {
            let path = journal.join(format!("claude-old-{n}.jsonl"));
            let file = fs::File::create(&path).unwrap();
            file.set_len(50 * MIB).unwrap();
            file.set_modified(now - Duration::from_secs(3600 * (4 - n)))
                .unwrap();
            path
        })
        .collect();

    hook(&world, "fresh-session");

    assert!(!files[0].exists(), "the oldest journal is dropped first");
    assert!(
        files[1].exists() && files[2].exists(),
        "only as much as the cap needs"
    );
    let fresh = fs::read_to_string(journal.join("claude-fresh-session.jsonl")).unwrap();
    assert!(fresh.contains("UserPromptSubmit"), "the new event is kept");
    let log = fs::read_to_string(journal.join("dropped.log")).unwrap();
    let drop: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(drop["by"], "hook");
    assert_eq!(drop["files"], 1);
    assert_eq!(drop["bytes"], 50 * MIB);

    // A second hook under the cap drops nothing more.
    hook(&world, "fresh-session");
    assert!(files[1].exists());
    assert_eq!(
        fs::read_to_string(journal.join("dropped.log"))
            .unwrap()
            .lines()
            .count(),
        1
    );

    // `doctor` shows it, and an engine that starts logs it.
    let doctor = world.run(&["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains(
            "the journal reached its cap (128 MiB) and dropped its oldest events: 1 journals"
        ),
        "{text}"
    );
    let daemon = world.start_daemon();
    let logged = wait_until(Duration::from_secs(10), || {
        daemon.log_text().contains("journal_dropped")
    });
    assert!(logged.is_some(), "{}", daemon.log_text());
    daemon.terminate();
}
