//! Codex's `notify` program: Codex runs `agent-tray notify --agent codex JSON` at each turn's
//! end (set in `config.toml` by our installer); the JSON argument becomes a turn-complete
//! observation. The front door (`crate::hook::run_notify`) asks the adapter
//! ([`crate::agents::AgentAdapter::notify_observation`]).

use chrono::{DateTime, Utc};

use crate::hook_payload::{cap, PayloadError, MAX_PATH, MAX_SHORT};
use crate::model::{Agent, EventKind, Observation, Source};

/// Codex's `notify` argument: `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", …}`.
/// Only the thread id and cwd are kept; the input messages and the assistant's reply are not.
pub fn observation_from_notify(json: &str, at: DateTime<Utc>) -> Result<Observation, PayloadError> {
    #[derive(serde::Deserialize)]
    struct Notify {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(rename = "thread-id", default)]
        thread_id: Option<String>,
        #[serde(default)]
        cwd: Option<String>,
    }
    let notify: Notify =
        serde_json::from_str(json).map_err(|e| PayloadError::NotAHookPayload(e.to_string()))?;
    match notify.kind.as_deref() {
        Some("agent-turn-complete") => {}
        Some(other) => {
            return Err(PayloadError::UnknownEvent(cap(
                other.to_string(),
                MAX_SHORT,
            )))
        }
        None => return Err(PayloadError::NoEvent),
    }
    let thread_id = notify
        .thread_id
        .filter(|t| !t.trim().is_empty())
        .ok_or(PayloadError::NoSessionId)?;
    let mut obs = Observation::new(
        cap(thread_id, MAX_SHORT),
        Agent::Codex,
        EventKind::TurnComplete,
        at,
    )
    .with_source(Source::Notify);
    obs.cwd = notify.cwd.map(|c| cap(c, MAX_PATH));
    Ok(obs)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fixture_lines() -> Vec<serde_json::Value> {
        crate::test_support::recorded_json_lines("codex/real-0.169.0/notify-argv.jsonl")
    }

    fn at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T19:07:13Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn every_recorded_notify_call_becomes_a_turn_complete_for_its_thread() {
        for line in fixture_lines() {
            let argv: Vec<String> = serde_json::from_value(line["argv"].clone()).unwrap();
            let json = argv.last().unwrap();
            let obs = observation_from_notify(json, at()).unwrap();
            let expected: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(obs.session_id, expected["thread-id"].as_str().unwrap());
            assert_eq!(obs.event, EventKind::TurnComplete);
            assert_eq!(obs.source, Source::Notify);
            assert_eq!(obs.agent, Agent::Codex);
            let text = serde_json::to_string(&obs).unwrap();
            assert!(
                !text.contains("input-messages") && !text.contains("Generate a concise"),
                "{text}"
            );
        }
        assert!(observation_from_notify("{}", at()).is_err());
        assert!(observation_from_notify("nope", at()).is_err());
        assert!(observation_from_notify(r#"{"type":"other","thread-id":"t"}"#, at()).is_err());
    }
}
