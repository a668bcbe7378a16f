//! Test kit: plays an agent's hook payloads (recorded from its binary, or written from its
//! documentation) through the parser and the transition rules, step by step, so each adapter's
//! tests say only which payloads and which states.

use std::time::Duration;

use chrono::DateTime;

use crate::agents::{observation_from_payload, AgentKnowledge};
use crate::hook_payload::PayloadError;
use crate::model::{Agent, SessionState};
use crate::transition::{apply, create, Now, SessionRecord};

/// What one payload must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Leave the session in this state.
    State(SessionState),
    /// Be known and ignored (nothing to do with the session's state).
    Ignored,
}

fn now(secs: i64) -> Now {
    Now {
        wall: DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default(),
        mono: Duration::from_secs(u64::try_from(secs).unwrap_or(0)),
    }
}

/// Plays `payloads` as `agent`'s hook calls; panics at the first step that differs from `want`.
/// Returns the session's record after the last step.
pub fn play_story(agent: Agent, payloads: &[&str], want: &[Step]) -> SessionRecord {
    assert_eq!(payloads.len(), want.len(), "one expected step per payload");
    let mut record: Option<SessionRecord> = None;
    for (i, (payload, want)) in payloads.iter().zip(want).enumerate() {
        let secs = i64::try_from(i).unwrap_or(0) + 1;
        // As `agent-tray hook --agent <id>` reads it: rewritten first where the adapter does.
        let bytes = agent
            .adapter()
            .standard_shaped_payload(payload.as_bytes())
            .unwrap_or_else(|| payload.as_bytes().to_vec());
        match observation_from_payload(&bytes, Some(agent), None, now(secs).wall) {
            Ok(obs) => {
                assert_eq!(obs.agent, agent, "step {i}");
                match record.as_mut() {
                    None => {
                        record = Some(create(&obs, now(secs)).unwrap_or_else(|e| {
                            panic!("step {i}: the first observation makes no session: {e:?}")
                        }))
                    }
                    Some(r) => {
                        if let Err(e) = apply(r, &obs, now(secs)) {
                            panic!("step {i}: {e:?}");
                        }
                    }
                }
                let state = record.as_ref().map(|r| r.session.state);
                assert_eq!(
                    Step::State(state.unwrap_or(SessionState::Ended)),
                    *want,
                    "step {i}: {payload}"
                );
            }
            Err(PayloadError::KnownIgnored(_)) => {
                assert_eq!(*want, Step::Ignored, "step {i}: {payload}")
            }
            Err(e) => panic!("step {i}: {e}: {payload}"),
        }
    }
    record.unwrap_or_else(|| panic!("no payload made a session"))
}
