//! Gemini CLI through the real binary: `install/uninstall --gemini` with the installers'
//! guarantees, `install` with no flag covering it when it is found, `doctor` checking it, and
//! the payloads recorded from Gemini CLI 0.61.0 moving a session through the real hook and
//! daemon.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{bin, run_hook_via, wait_until, World};
use serde_json::Value;

fn settings(w: &World) -> PathBuf {
    w.path().join("home/.gemini/settings.json")
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A settings.json Gemini CLI wrote, with another tool's hook on one of our events.
const EXISTING: &str = r#"{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "hooks": {
    "AfterAgent": [
      { "hooks": [ { "type": "command", "command": "/usr/local/bin/notify-me", "timeout": 1e3 } ] }
    ]
  }
}
"#;

/// The real situation: someone runs `agent-tray install --gemini` over the settings.json
/// Gemini already has. Ours is merged in (the other hook and every byte stay), the previous
/// version is kept as a backup, `--dry-run` only shows the diff, a second install changes
/// nothing, and uninstall gives the original bytes back.
#[test]
fn install_gemini_merges_keeps_a_backup_and_uninstall_restores_the_file() {
    let w = World::new();
    let path = settings(&w);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, EXISTING).unwrap();

    let dry = w.run(&["install", "--gemini", "--dry-run", "--allow-insecure-path"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(text(&dry).contains("hook --agent gemini"), "{}", text(&dry));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        EXISTING,
        "dry run writes nothing"
    );

    let out = w.run(&["install", "--gemini", "--allow-insecure-path"]);
    assert!(out.status.success(), "{}", text(&out));
    let new = std::fs::read_to_string(&path).unwrap();
    assert!(new.contains(r#""command": "/usr/local/bin/notify-me", "timeout": 1e3"#));
    let doc: Value = serde_json::from_str(&new).unwrap();
    let cmd = common::installed_hook_command(agent_tray::model::Agent::Gemini);
    for event in [
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "Notification",
        "AfterTool",
        "AfterAgent",
        "SessionEnd",
    ] {
        let ours = doc["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| h["command"] == cmd.as_str())
            .count();
        assert_eq!(ours, 1, "{event}");
    }
    assert!(doc["hooks"].get("BeforeModel").is_none());
    assert!(
        !w.path().join("claude/settings.json").exists(),
        "--gemini touches only Gemini's file"
    );
    let backups = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("settings.json.agent-tray-backup-")
        })
        .count();
    assert_eq!(backups, 1, "the previous version is kept");

    let again = w.run(&["install", "--gemini", "--allow-insecure-path"]);
    assert!(text(&again).contains("nothing changed"), "{}", text(&again));

    let un = w.run(&["uninstall", "--gemini"]);
    assert!(un.status.success(), "{}", text(&un));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), EXISTING);
}

/// A settings.json that is not JSON is refused and left as it is.
#[test]
fn an_invalid_gemini_settings_file_is_refused_untouched() {
    let w = World::new();
    let path = settings(&w);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{ \"hooks\": ").unwrap();
    let out = w.run(&["install", "--gemini", "--allow-insecure-path"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("is not valid JSON"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ \"hooks\": ");
}

/// `install` with no flag covers every agent found here: Gemini's folder present means it is
/// installed; with no folder (and no `gemini` on PATH) it is left alone (the positive and the
/// negative case, in two worlds).
#[test]
fn install_with_no_flag_covers_gemini_only_when_it_is_found() {
    let absent = World::new();
    let out = absent.run(&["install", "--allow-insecure-path"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(absent.path().join("claude/settings.json").exists());
    assert!(
        !settings(&absent).exists(),
        "no Gemini here: {}",
        text(&out)
    );

    let present = World::new();
    std::fs::create_dir_all(present.path().join("home/.gemini")).unwrap();
    let out = present.run(&["install", "--allow-insecure-path"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(settings(&present).exists(), "{}", text(&out));
    assert!(present.path().join("claude/settings.json").exists());
}

/// `doctor` names Gemini CLI's hooks: missing before install, installed after.
#[test]
fn doctor_checks_gemini_hooks() {
    let w = World::new();
    std::fs::create_dir_all(w.path().join("home/.gemini")).unwrap();
    let before = text(&w.run(&["doctor"]));
    assert!(
        before.contains("Gemini CLI hooks are not installed"),
        "{before}"
    );
    let out = w.run(&["install", "--gemini", "--allow-insecure-path"]);
    assert!(out.status.success(), "{}", text(&out));
    let after = text(&w.run(&["doctor"]));
    assert!(
        !after.contains("Gemini CLI hooks are not installed"),
        "{after}"
    );
    assert!(after.contains("Gemini CLI"), "{after}");
}

/// The recorded session (Gemini CLI 0.61.0) replayed through the real `agent-tray hook
/// --agent gemini` into a real daemon: the session is listed as `gemini`, waits for
/// permission at the ToolPermission notification, is idle after AfterAgent and ended after
/// the (three) SessionEnds.
#[test]
fn recorded_gemini_hooks_move_a_live_session_through_the_daemon() {
    let w = World::new();
    let daemon = w.start_daemon();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gemini/real-0.61.0/hooks.jsonl"
    );
    let id = "048a26ea-45f8-4cb0-bcc3-d849903714a3";
    let command = format!("{} hook --agent gemini", bin().display());
    let sh = std::path::Path::new("/bin/sh");
    let mut seen = Vec::new();
    for line in std::fs::read_to_string(fixture).unwrap().lines() {
        let rec: Value = serde_json::from_str(line).unwrap();
        if rec["payload"]["session_id"] != id {
            continue;
        }
        let event = rec["event"].as_str().unwrap().to_string();
        run_hook_via(&w, sh, &command, &rec["payload"].to_string(), &[]);
        let want = match event.as_str() {
            "SessionStart" => Some("starting"),
            "BeforeAgent" | "AfterTool" => Some("working"),
            "Notification" => Some("waiting_for_permission"),
            "AfterAgent" => Some("idle"),
            "SessionEnd" => Some("ended"),
            _ => None,
        };
        if let Some(want) = want {
            let got = wait_until(Duration::from_secs(5), || {
                w.state_of(id).filter(|s| s == want)
            });
            assert_eq!(got.as_deref(), Some(want), "after {event}");
            seen.push(want);
        }
    }
    assert_eq!(seen.last(), Some(&"ended"));
    let session = w.session(id).unwrap();
    assert_eq!(session["agent"], "gemini");
    drop(daemon);
}
