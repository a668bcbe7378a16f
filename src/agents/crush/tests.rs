#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use chrono::DateTime;

use super::*;
use crate::agents::observation_from_payload;
use crate::hook_payload::PayloadError;
use crate::install::{ownership, Ownership};
use crate::model::SessionState;
use crate::test_support::{recorded_json_lines, ScriptedTable};
use crate::transition::{apply, create, Now, SessionRecord};

const FIXTURES: &str = "crush/docs-0.96.1";
const BIN: &str = "/opt/agent tray/bin/agent-tray";

fn now(secs: i64) -> Now {
    Now {
        wall: DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap(),
        mono: Duration::from_secs(u64::try_from(secs).unwrap()),
    }
}

fn user_config() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(FIXTURES)
        .join("crush.json");
    std::fs::read_to_string(path).unwrap()
}

fn installed(old: Option<&str>) -> String {
    let plan = plan_text(
        Path::new("/h/.config/crush/crush.json"),
        old,
        Path::new(BIN),
        Action::Install,
    )
    .unwrap();
    plan.changes[0]
        .new
        .clone()
        .expect("install changes the file")
}

/// A turn as Crush's guide says its hooks see it (a tool that asks, an interrupted turn, a
/// failed one, a compaction, the end): with `--agent crush` each payload, named by `event`,
/// moves the session as the same moment of a Claude session would.
#[test]
fn crushs_documented_payloads_move_a_session_through_a_turn() {
    let want = [
        SessionState::Starting,             // SessionStart
        SessionState::Working,              // TurnStart
        SessionState::Working,              // PreToolUse
        SessionState::WaitingForPermission, // PermissionRequest
        SessionState::Working,              // PermissionResult
        SessionState::Working,              // PostToolUse
        SessionState::Idle,                 // TurnEnd
        SessionState::Working,              // TurnStart
        SessionState::Idle,                 // Interrupt
        SessionState::Working,              // TurnStart
        SessionState::Idle,                 // StopFailure
        SessionState::Idle,                 // PreCompact
        SessionState::Idle,                 // PostCompact
        SessionState::Ended,                // SessionEnd
    ];
    let lines = recorded_json_lines(&format!("{FIXTURES}/payloads.jsonl"));
    assert_eq!(lines.len(), want.len(), "one expectation per payload");
    let mut record: Option<SessionRecord> = None;
    for (i, (line, want)) in lines.iter().zip(want).enumerate() {
        let secs = i64::try_from(i).unwrap() + 1;
        let payload = serde_json::to_vec(line).unwrap();
        let obs = observation_from_payload(&payload, Some(Agent::Crush), None, now(secs).wall)
            .unwrap_or_else(|e| panic!("step {i} ({}): {e}", line["event"]));
        assert_eq!(obs.agent, Agent::Crush);
        assert_eq!(obs.cwd.as_deref(), Some("/home/dev/api"));
        match record.as_mut() {
            None => record = Some(create(&obs, now(secs)).unwrap()),
            Some(r) => {
                apply(r, &obs, now(secs)).unwrap();
            }
        }
        assert_eq!(
            record.as_ref().unwrap().session.state,
            want,
            "step {i}: {}",
            line["event"]
        );
    }
}

/// The tool a payload names is kept (the row shows what runs), and an event Crush may add
/// later is counted as unknown rather than guessed at.
#[test]
fn a_tool_event_keeps_its_tool_and_an_unknown_event_is_refused() {
    let pre = br#"{"event":"PreToolUse","session_id":"c1","cwd":"/w","tool_name":"bash","tool_input":{"command":"ls"}}"#;
    let obs = observation_from_payload(pre, Some(Agent::Crush), None, now(1).wall).unwrap();
    assert_eq!(obs.tool_name.as_deref(), Some("bash"));
    let new = br#"{"event":"SubagentStart","session_id":"c1","cwd":"/w"}"#;
    assert_eq!(
        observation_from_payload(new, Some(Agent::Crush), None, now(1).wall),
        Err(PayloadError::UnknownEvent("SubagentStart".into()))
    );
    // Claude's names that Crush does not send mean nothing under `--agent crush`.
    let stop = br#"{"event":"Stop","session_id":"c1"}"#;
    assert!(observation_from_payload(stop, Some(Agent::Crush), None, now(1).wall).is_err());
}

/// A payload that names its event both ways is read by `hook_event_name` (what every other
/// agent sends), so `event` can never override a Claude-shaped payload.
#[test]
fn hook_event_name_wins_over_event_when_both_are_sent() {
    let both = br#"{"event":"TurnEnd","hook_event_name":"UserPromptSubmit","session_id":"c1"}"#;
    let obs = observation_from_payload(both, Some(Agent::Claude), None, now(1).wall).unwrap();
    assert_eq!(obs.event, EventKind::UserPromptSubmit);
    let none = br#"{"session_id":"c1","cwd":"/w"}"#;
    assert_eq!(
        observation_from_payload(none, Some(Agent::Crush), None, now(1).wall),
        Err(PayloadError::NoEvent)
    );
}

/// Install into a real user's `crush.json`: every byte of theirs stays, each event gets one flat
/// entry of ours (no `hooks` group, no matcher, a timeout), their own hooks keep their places,
/// a second install changes nothing, and uninstall gives the file back byte for byte.
#[test]
fn install_merges_flat_entries_into_crush_json_and_uninstall_gives_the_bytes_back() {
    let old = user_config();
    let new = installed(Some(&old));
    let doc: Value = serde_json::from_str(&new).expect("strict JSON, as Crush reads it");
    assert_eq!(
        doc["providers"],
        serde_json::from_str::<Value>(&old).unwrap()["providers"]
    );
    assert!(
        new.contains(r#""api_key": "sk-\u00e9t\u00e9-1234""#),
        "escapes kept"
    );
    assert!(
        new.contains(r#""tui": { "compact_mode": true }"#),
        "layout kept"
    );
    let ours = format!("'{BIN}' hook --agent crush");
    for (event, _) in EVENTS {
        let entries = doc["hooks"][event].as_array().expect(event);
        let mine: Vec<&Value> = entries
            .iter()
            .filter(|e| e["command"] == ours.as_str())
            .collect();
        assert_eq!(mine.len(), 1, "{event}: {new}");
        assert_eq!(mine[0]["timeout"], TIMEOUT_SECS);
        assert_eq!(mine[0]["name"], HOOK_NAME);
        assert!(mine[0].get("matcher").is_none(), "every tool");
        assert!(mine[0].get("hooks").is_none(), "flat, not grouped");
    }
    assert_eq!(doc["hooks"]["PreToolUse"][0]["name"], "no-rm-rf");
    assert_eq!(doc["hooks"]["TurnEnd"][0]["name"], "play-complete-sound");
    assert_eq!(
        plan_text(Path::new("/c"), Some(&new), Path::new(BIN), Action::Install)
            .unwrap()
            .changes[0]
            .new,
        None,
        "installed: nothing to do"
    );
    let back = plan_text(
        Path::new("/c"),
        Some(&new),
        Path::new(BIN),
        Action::Uninstall,
    )
    .unwrap();
    assert_eq!(back.changes[0].new.as_deref(), Some(old.as_str()));
}

/// No file yet: install writes one holding only our hooks, and uninstall leaves `{}`-like text
/// without a `hooks` key; a binary that moved has its entries re-pointed, not doubled.
#[test]
fn install_creates_the_file_and_follows_a_moved_binary() {
    let new = installed(None);
    let doc: Value = serde_json::from_str(&new).unwrap();
    assert_eq!(doc["hooks"].as_object().unwrap().len(), EVENTS.len());
    let moved = plan_text(
        Path::new("/c"),
        Some(&new),
        Path::new("/usr/bin/agent-tray"),
        Action::Install,
    )
    .unwrap();
    let text = moved.changes[0].new.clone().unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    for (event, _) in EVENTS {
        let entries = doc["hooks"][event].as_array().unwrap();
        assert_eq!(entries.len(), 1, "{event}: re-pointed, not added");
        assert_eq!(
            ownership(
                entries[0]["command"].as_str().unwrap(),
                Path::new("/usr/bin/agent-tray"),
                Agent::Crush
            ),
            Ownership::Current
        );
    }
    let gone = plan_text(
        Path::new("/c"),
        Some(&text),
        Path::new("/usr/bin/agent-tray"),
        Action::Uninstall,
    )
    .unwrap();
    let left: Value = serde_json::from_str(gone.changes[0].new.as_deref().unwrap()).unwrap();
    assert!(left.get("hooks").is_none(), "{left}");
}

/// A file Crush would refuse is refused here too, untouched.
#[test]
fn a_crush_json_that_is_not_json_is_refused() {
    let broken = "{\n  // a comment Crush itself refuses\n  \"options\": {}\n}\n";
    assert!(matches!(
        plan_text(
            Path::new("/c"),
            Some(broken),
            Path::new(BIN),
            Action::Install
        ),
        Err(InstallError::Unparsable { .. })
    ));
}

/// `doctor` reads the flat entries: after install every event is ours and the line to probe is
/// the one Crush runs; before, it says how to install.
#[test]
fn doctor_finds_the_flat_entries_and_the_command_to_probe() {
    let events: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
    let doc: Value = serde_json::from_str(&installed(Some(&user_config()))).unwrap();
    let (findings, command) = hook_findings(
        "Crush",
        Path::new("/c/crush.json"),
        &hooks_json::flat_as_grouped(&doc),
        &events,
        Path::new(BIN),
        Agent::Crush,
        "agent-tray install --crush",
    );
    assert_eq!(command, Some(format!("'{BIN}' hook --agent crush")));
    assert!(
        !findings.iter().any(|f| matches!(f, Finding::Problem(_))),
        "{findings:?}"
    );
    let bare: Value = serde_json::from_str(&user_config()).unwrap();
    let (findings, command) = hook_findings(
        "Crush",
        Path::new("/c/crush.json"),
        &hooks_json::flat_as_grouped(&bare),
        &events,
        Path::new(BIN),
        Agent::Crush,
        "agent-tray install --crush",
    );
    assert_eq!(command, None);
    assert!(
        findings
            .iter()
            .any(|f| matches!(f, Finding::Problem(p) if p.contains("agent-tray install --crush"))),
        "{findings:?}"
    );
}

/// The folder follows Crush's own order: `CRUSH_GLOBAL_CONFIG`, then `XDG_CONFIG_HOME/crush`,
/// then `~/.config/crush`; an empty variable counts as unset.
#[test]
fn the_config_folder_follows_crushs_variables() {
    assert_eq!(
        config_dir_from(Some("/g".into()), Some("/x".into()), Some("/h".into())),
        Some(PathBuf::from("/g"))
    );
    assert_eq!(
        config_dir_from(Some("".into()), Some("/x".into()), Some("/h".into())),
        Some(PathBuf::from("/x/crush"))
    );
    assert_eq!(
        config_dir_from(None, None, Some("/h".into())),
        Some(PathBuf::from("/h/.config/crush"))
    );
    assert_eq!(config_dir_from(None, None, None), None);
    assert_eq!(
        Crush.hooks_file(Path::new("/g")),
        PathBuf::from("/g/crush.json")
    );
}

/// The TUI that ran the hook owns its session (so its death ends the row); Crush's server, which
/// runs every client's hooks in client/server mode, owns none.
#[test]
fn the_tui_owns_its_session_and_the_server_owns_none() {
    let table = ScriptedTable::default()
        .with(
            100,
            1,
            "node",
            &["node", "/n/@charmland/crush/run-crush.js"],
        )
        .with(200, 100, "crush", &["/n/@charmland/crush/bin/crush"])
        .with(
            300,
            1,
            "crush",
            &["crush", "server", "--host", "unix:///tmp/c.sock"],
        );
    assert_eq!(Crush.session_process(&table, 200), Some(200));
    assert_eq!(Crush.session_process(&table, 300), None);
    let walked =
        crate::agent_pid::find_agent_pid(&table, 200, Some(Agent::Crush), &super::super::Adapters);
    assert_eq!(
        walked,
        Some((200, Agent::Crush)),
        "the binary, not its launcher"
    );
}

/// `doctor`'s probe is shaped as Crush sends a session's start, and parses as one.
#[test]
fn the_probe_payload_is_a_crush_session_start() {
    let payload = Crush.probe_payload("probe-1");
    let obs = observation_from_payload(&payload, Some(Agent::Crush), None, now(1).wall).unwrap();
    assert_eq!(obs.event, EventKind::SessionStart);
    assert_eq!(obs.session_id, "probe-1");
}

/// A session is resumed with `crush --session ID`; nothing answers its requests from here.
#[test]
fn a_session_resumes_with_crush_session_and_is_answered_in_the_terminal() {
    assert_eq!(
        crate::tray_model::resume_command(Agent::Crush, "c-1"),
        "crush --session c-1"
    );
    assert!(Crush.entry().answer_path.is_none());
}
