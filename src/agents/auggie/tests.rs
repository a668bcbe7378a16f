use std::path::Path;

use serde_json::Value;

use super::*;
use crate::agents::story::{play_story, Step};
use crate::model::SessionState;

const FIXTURE: &str = include_str!("../../../tests/fixtures/auggie/docs-0.36.0/hooks.jsonl");

/// Its payloads, in its own keys, move a session through a turn: the conversation is the
/// session, the first workspace root its folder.
#[test]
fn payloads_from_its_bundle_move_a_session_through_a_turn() {
    let payloads: Vec<&str> = FIXTURE.lines().collect();
    let want = [
        Step::State(SessionState::Starting),
        Step::State(SessionState::Working),
        Step::State(SessionState::Working),
        Step::State(SessionState::Working),
        Step::State(SessionState::Working),
        Step::State(SessionState::Idle),
        Step::State(SessionState::Ended),
    ];
    let record = play_story(Agent::Auggie, &payloads, &want);
    assert_eq!(
        record.session.session_id,
        "c7f1d2a4-93b8-4e61-8d0a-5e2f1b7c3a90"
    );
    assert_eq!(record.session.cwd.as_deref(), Some("/home/dev/proj"));
}

#[test]
fn renaming_keeps_keys_that_are_already_claudes_and_refuses_what_is_no_object() {
    let out = rename_to_claude_keys(
        br#"{"hook_event_name":"PromptSubmit","conversation_id":"a","session_id":"b","workspace_roots":[],"user_prompt":"hi"}"#,
    )
    .unwrap();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["session_id"], "b", "a session_id it sent wins");
    assert_eq!(doc["hook_event_name"], "UserPromptSubmit");
    assert_eq!(doc["prompt"], "hi");
    assert!(doc.get("cwd").is_none(), "no root, no folder invented");
    assert!(rename_to_claude_keys(b"[1,2]").is_none());
    assert!(rename_to_claude_keys(b"not json").is_none());
}

#[test]
fn install_writes_no_matcher_its_validator_refuses_and_uninstall_gives_the_bytes_back() {
    let path = Path::new("/home/dev/.augment/settings.json");
    let bin = Path::new("/opt/agent-tray/bin/agent-tray");
    let old = "{\n  \"model\": \"sonnet4.5\",\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"mine\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    let new = HOOKS
        .plan_text(path, Some(old), bin, Action::Install)
        .unwrap()
        .changes[0]
        .new
        .clone()
        .unwrap();
    let doc: Value = serde_json::from_str(&new).unwrap();
    assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], "mine");
    for (event, _) in EVENTS {
        let groups = doc["hooks"][event].as_array().unwrap();
        for g in groups {
            assert!(
                g.get("matcher").is_none(),
                "{event}: `*` is not a regular expression Auggie accepts: {g}"
            );
        }
    }
    assert!(new.contains("hook --agent auggie"));
    let back = HOOKS
        .plan_text(path, Some(&new), bin, Action::Uninstall)
        .unwrap();
    assert_eq!(back.changes[0].new.as_deref(), Some(old));
}
