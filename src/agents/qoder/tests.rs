use std::path::Path;

use serde_json::Value;

use super::*;
use crate::agents::story::{play_story, Step};
use crate::model::SessionState;

const FIXTURE: &str = include_str!("../../../tests/fixtures/qoder/docs-1.1.52/hooks.jsonl");

/// The payloads its bundle builds move a session through a turn like Claude's, its own
/// bookkeeping events change nothing, and the permission request makes it wait.
#[test]
fn payloads_from_its_bundle_move_a_session_through_a_turn() {
    let payloads: Vec<&str> = FIXTURE.lines().collect();
    let want = [
        Step::State(SessionState::Starting),
        Step::State(SessionState::Working),
        Step::State(SessionState::Working),
        Step::State(SessionState::WaitingForPermission),
        Step::State(SessionState::Working),
        Step::Ignored,
        Step::State(SessionState::Idle),
        Step::State(SessionState::Ended),
    ];
    let record = play_story(Agent::Qoder, &payloads, &want);
    assert_eq!(record.session.cwd.as_deref(), Some("/home/dev/proj"));
    assert_eq!(record.session.model.as_deref(), Some("auto"));
}

#[test]
fn install_merges_into_its_settings_and_uninstall_gives_the_bytes_back() {
    let path = Path::new("/home/dev/.qoder/settings.json");
    let bin = Path::new("/opt/agent-tray/bin/agent-tray");
    let old = "{\n  \"theme\": \"dark\",\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"mine\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    let plan = HOOKS
        .plan_text(path, Some(old), bin, Action::Install)
        .unwrap();
    let new = plan.changes[0].new.clone().unwrap();
    let doc: Value = serde_json::from_str(&new).unwrap();
    assert_eq!(doc["theme"], "dark");
    assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], "mine");
    for (event, _) in EVENTS {
        assert!(
            new.contains(&format!("\"{event}\"")),
            "{event} not registered: {new}"
        );
    }
    assert!(new.contains("/opt/agent-tray/bin/agent-tray hook --agent qoder"));
    let again = HOOKS
        .plan_text(path, Some(&new), bin, Action::Install)
        .unwrap();
    assert!(
        again.changes[0].new.is_none(),
        "a second install changes nothing"
    );
    let back = HOOKS
        .plan_text(path, Some(&new), bin, Action::Uninstall)
        .unwrap();
    assert_eq!(back.changes[0].new.as_deref(), Some(old));
    let broken = HOOKS.plan_text(path, Some("{ not json"), bin, Action::Install);
    assert!(
        broken.is_err(),
        "a file that is not JSON is refused untouched"
    );
}

#[test]
fn doctor_says_what_to_run_when_the_hooks_are_missing() {
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new("/opt/agent-tray/bin/agent-tray");
    let (findings, command) = HOOKS.doctor(Some(dir.path().join("settings.json")), "", bin);
    assert!(command.is_none());
    assert!(
        findings.iter().any(|f| matches!(f, Finding::Problem(p) | Finding::Note(p) if p.contains("agent-tray install --qoder"))),
        "{findings:?}"
    );
    let (findings, _) = HOOKS.doctor(None, "set HOME or QODER_CONFIG_DIR", bin);
    assert!(matches!(&findings[0], Finding::Problem(p) if p.contains("QODER_CONFIG_DIR")));
}
