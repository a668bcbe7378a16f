//! Hook drift, end to end: hooks installed by the real `install`, a real daemon whose watcher
//! sees the real file system, and Claude Code's kind of rewrite (a new `settings.json` renamed
//! over the old one, from a snapshot without our hooks). The engine must notice within 5 s,
//! `status --json` must say so per agent, and `install` (the repair) must restore the hooks
//! through the same byte-safe merge, keeping what the agent wrote meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::World;
use serde_json::Value;

fn status(w: &World) -> (bool, Value) {
    let out = w.run(&["status", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status --json: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), json)
}

fn hooks_of<'a>(status: &'a Value, agent: &str) -> &'a Value {
    let agents = status["agents"].as_array().unwrap();
    &agents.iter().find(|a| a["agent"] == agent).unwrap()["hooks"]
}

#[test]
fn hooks_removed_by_a_settings_rewrite_are_noticed_within_5_s_and_repaired_byte_safely() {
    let w = World::new();
    let settings = w.path().join("claude/settings.json");
    // The user's settings before install, in their own layout.
    std::fs::write(
        &settings,
        "{\n    \"model\": \"opus\",\n    \"n\": 1e3\n}\n",
    )
    .unwrap();
    let out = w.run(&["install", "--trust"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let daemon = w.start_daemon();

    // Positive control first: installed, trusted, not drifted, and the watcher is quiet.
    let (ok, s) = status(&w);
    assert!(ok, "{s:#}");
    for agent in ["claude", "codex"] {
        let h = hooks_of(&s, agent);
        assert_eq!(h["installed"], true, "{agent}: {h:#}");
        assert_eq!(h["trusted"], true, "{agent}: {h:#}");
        assert_eq!(h["drifted"], false, "{agent}: {h:#}");
    }
    assert!(s["engine"]["pid"].as_u64().is_some(), "{s:#}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !daemon.log_text().contains("hook_drift"),
        "{}",
        daemon.log_text()
    );

    // Claude Code saves a setting from a stale snapshot: write a new file, rename it over.
    let rewritten = "{\n  \"model\": \"sonnet\",\n  \"n\": 1e3\n}\n";
    let tmp = w.path().join("claude/.settings.json.tmp");
    std::fs::write(&tmp, rewritten).unwrap();
    let t = Instant::now();
    std::fs::rename(&tmp, &settings).unwrap();
    common::wait_until(Duration::from_secs(5), || {
        daemon.log_text().contains("hook_drift")
    })
    .unwrap_or_else(|| panic!("not noticed within 5 s:\n{}", daemon.log_text()));
    let noticed = t.elapsed();
    let line = daemon
        .log_text()
        .lines()
        .find(|l| l.contains("hook_drift"))
        .unwrap()
        .to_string();
    assert!(
        line.contains("claude") && line.contains("Removed"),
        "{line}"
    );

    let (ok, s) = status(&w);
    assert!(!ok, "status exits non-zero while hooks drifted");
    let h = hooks_of(&s, "claude");
    assert_eq!(
        (&h["drifted"], &h["drift"]),
        (&Value::Bool(true), &Value::from("removed")),
        "{h:#}"
    );
    assert_eq!(
        hooks_of(&s, "codex")["drifted"],
        false,
        "only Claude's file changed"
    );

    // The repair: the same merge as install, over the agent's new text.
    let out = w.run(&["install", "--claude"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(
        text.starts_with("{\n  \"model\": \"sonnet\",\n  \"n\": 1e3,\n"),
        "the agent's change and its bytes are kept: {text}"
    );
    let (ok, s) = status(&w);
    assert!(ok, "{s:#}");
    assert_eq!(hooks_of(&s, "claude")["drifted"], false);
    println!("drift noticed {} ms after the rewrite", noticed.as_millis());
    drop(daemon);
}

/// An install from before answering wrote Claude's PermissionRequest entry as async (Claude then
/// ignores what the hook prints): that is drift, and the repair makes it the synchronous entry the
/// answer path needs, with nothing else changed.
#[test]
fn a_permission_entry_from_before_answering_is_drift_and_the_repair_makes_it_synchronous() {
    let w = World::new();
    let out = w.run(&["install", "--claude"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings = w.path().join("claude/settings.json");
    let installed: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let entry = &installed["hooks"]["PermissionRequest"][0]["hooks"][0];
    assert_eq!(entry["timeout"], 600, "{entry:#}");
    assert!(entry.get("async").is_none(), "synchronous: {entry:#}");
    let (ok, s) = status(&w);
    assert!(ok && hooks_of(&s, "claude")["drifted"] == false, "{s:#}");

    // The entry as the previous version wrote it.
    let mut old = installed.clone();
    old["hooks"]["PermissionRequest"][0]["hooks"][0]["async"] = Value::Bool(true);
    old["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"] = Value::from(10);
    std::fs::write(&settings, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let (ok, s) = status(&w);
    assert!(!ok, "status exits 1 while hooks drifted: {s:#}");
    assert_eq!(hooks_of(&s, "claude")["drifted"], true, "{s:#}");

    let out = w.run(&["install", "--claude"]);
    assert!(out.status.success());
    let repaired: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        repaired, installed,
        "the repair writes exactly what install writes"
    );
    let (ok, s) = status(&w);
    assert!(ok && hooks_of(&s, "claude")["drifted"] == false, "{s:#}");
}
