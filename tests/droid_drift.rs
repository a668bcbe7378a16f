//! Hook drift (`status --json`) reads Factory Droid's `hooks.json`, whose entries sit at its top
//! level: a removed entry of ours is a change (some of ours are left), not a removal, and
//! `hooksDisabled` makes them untrusted (they will not run). Through the real CLI in a temp home.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::World;
use serde_json::{json, Value};

fn droid_hooks(w: &World) -> Value {
    let out = w.run(&["status", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("status --json prints JSON");
    report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "droid")
        .expect("droid is listed")["hooks"]
        .clone()
}

#[test]
fn drift_counts_our_entries_at_the_top_level_of_hooks_json() {
    let w = World::new();
    let out = w.run(&["install", "--droid"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = w.path().join("home/.factory/hooks.json");
    let healthy = droid_hooks(&w);
    assert_eq!(healthy["installed"], true, "{healthy}");
    assert_eq!(healthy["drifted"], false, "{healthy}");
    assert_eq!(healthy["trusted"], true, "{healthy}");

    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let ours = doc["Stop"].clone();
    doc.as_object_mut().unwrap().remove("Stop");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let changed = droid_hooks(&w);
    assert_eq!(changed["drift"], "changed", "{changed}");

    doc["Stop"] = ours;
    doc["hooksDisabled"] = json!(true);
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let disabled = droid_hooks(&w);
    assert_eq!(disabled["installed"], true, "{disabled}");
    assert_eq!(disabled["trusted"], false, "{disabled}");
}
