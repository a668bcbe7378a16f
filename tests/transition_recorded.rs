//! The transition rules (in the domain crate) applied to observations made from payloads recorded
//! from the real Claude Code: the parse lives in the core, the rules below it, so the story is
//! told here, where both are.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agent_tray::model::Agent;
use agent_tray::transition::{apply, create, Now, SessionRecord};
use chrono::{DateTime, Utc};

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
}

fn now(secs: i64) -> Now {
    Now {
        wall: t(secs),
        mono: Duration::from_secs(u64::try_from(secs).unwrap()),
    }
}

/// The events Claude Code added after 2.1.240, as one session's story (the fixture's README
/// says how the payloads were built): each line's `expect` is what the session must show.
#[test]
fn claudes_newer_events_move_the_session_as_the_fixture_expects() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/claude/shapes-2.1.332/new_events.jsonl"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut record: Option<SessionRecord> = None;
    for (i, line) in text.lines().enumerate() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        let payload = serde_json::to_vec(&line["payload"]).unwrap();
        let secs = i64::try_from(i).unwrap() + 1;
        let o = agent_tray::agents::observation_from_payload(&payload, None, None, t(secs))
            .unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        assert_eq!(o.agent, Agent::Claude, "line {}", i + 1);
        match record.as_mut() {
            None => record = Some(create(&o, now(secs)).unwrap()),
            Some(r) => {
                apply(r, &o, now(secs)).unwrap();
            }
        }
        let s = &record.as_ref().unwrap().session;
        let expect = &line["expect"];
        let what = format!("line {} ({})", i + 1, line["payload"]["hook_event_name"]);
        assert_eq!(
            s.state.as_str(),
            expect["state"].as_str().unwrap(),
            "{what}"
        );
        for (field, got) in [
            ("title", s.title.as_deref()),
            ("model", s.model.as_deref()),
            ("cwd", s.cwd.as_deref()),
        ] {
            if let Some(want) = expect[field].as_str() {
                assert_eq!(got, Some(want), "{what}: {field}");
            }
        }
        if let Some(kind) = expect["error"].as_str() {
            let error = s.error.as_deref().unwrap_or_default();
            assert!(
                error.contains(kind) && error.len() > kind.len() + 3,
                "{what}: the error names its kind and says what it means: {error:?}"
            );
        }
    }
}
