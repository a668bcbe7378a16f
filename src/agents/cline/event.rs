//! Cline's hook payloads, turned into observations: a pure function, tested on every payload
//! the real CLI 3.0.65 was recorded sending (`tests/fixtures/cline/real-3.0.65/`).
//!
//! Why it is shaped this way:
//! - **The event is in the payload** (`hookName`: `agent_start`, `tool_call`, …, Cline's own
//!   names for the files `TaskStart`, `PreToolUse`, …), so every script of ours runs the same
//!   command line.
//! - **The session is `sessionContext.rootSessionId`**: the id Cline keeps the session under
//!   (`~/.cline/data/sessions/<id>/`) and resumes with `cline --id <id>`. `taskId` (a
//!   conversation id) is the fallback when a payload has no root id.
//! - **What each event really means, seen with 3.0.65**: `agent_start` fires at every turn's
//!   start (a second prompt in the same session fires it again; `agent_resume` only when a
//!   session is resumed), `agent_end` at the turn's end; `tool_call` / `tool_result` around
//!   each tool. Pressing Esc during a turn fires `session_shutdown`, *not* `agent_abort`, and
//!   the session goes on (the next prompt fires `agent_start` with the same ids): so
//!   `session_shutdown` and `agent_abort` both end the turn (idle), never the session. Leaving
//!   the CLI fires nothing at all: its end is the process's, or the session's time-out.
//! - **A sub-agent's events are skipped** (`parent_agent_id` set): its start and end are not
//!   the session's turn.
//! - **Only identifying fields are read**; the tool's input and output, the prompt and the
//!   reply are skipped unread.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::model::{Agent, EventKind, Observation, Source};

/// Longest short field kept (ids, tool names).
const MAX_SHORT: usize = 256;
/// Longest path kept.
const MAX_PATH: usize = 4096;
/// Longest error text kept.
const MAX_ERROR: usize = 1024;

/// Why a Cline hook call gave no observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClineEventError {
    #[error("the Cline payload is not a JSON object with a hookName ({0})")]
    NotAPayload(String),
    #[error("the Cline payload names no session (no sessionContext.rootSessionId nor taskId)")]
    NoSessionId,
    /// An event this version does not know: counted, never an error of the agent's.
    #[error("unknown Cline hook event {0:?}")]
    UnknownEvent(String),
    /// A known event that says nothing about the session's own state.
    #[error("Cline event {0:?} says nothing about the session's state")]
    KnownIgnored(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Payload {
    #[serde(rename = "hookName")]
    hook_name: Option<String>,
    #[serde(rename = "taskId")]
    task_id: Option<String>,
    #[serde(rename = "sessionContext")]
    session_context: Option<SessionContext>,
    #[serde(rename = "workspaceRoots")]
    workspace_roots: Option<Vec<String>>,
    parent_agent_id: Option<String>,
    tool_call: Option<ToolRef>,
    tool_result: Option<ToolResult>,
    error: Option<ErrorInfo>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SessionContext {
    #[serde(rename = "rootSessionId")]
    root_session_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolRef {
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolResult {
    name: Option<String>,
    error: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorInfo {
    message: Option<String>,
    name: Option<String>,
}

/// The tray's event for a Cline `hookName`, `Err` when unknown.
fn event_of(name: &str) -> Result<EventKind, ClineEventError> {
    Ok(match name {
        // A turn starts (TaskStart), or a session resumed by `cline --id` does (TaskResume).
        "agent_start" | "agent_resume" => EventKind::UserPromptSubmit,
        "prompt_submit" => EventKind::UserPromptSubmit,
        "tool_call" => EventKind::PreToolUse,
        "tool_result" => EventKind::PostToolUse,
        "agent_end" => EventKind::Stop,
        // The run was aborted (Esc fires session_shutdown in 3.0.65): the turn ends, the
        // session goes on.
        "agent_abort" | "session_shutdown" => EventKind::Interrupt,
        "agent_error" => EventKind::StopFailure,
        other => {
            return Err(ClineEventError::UnknownEvent(cap(
                other.to_string(),
                MAX_SHORT,
            )))
        }
    })
}

/// Parses one Cline hook call (the payload on our stdin) into an observation for `agent`.
pub fn parse(
    agent: Agent,
    payload: &[u8],
    at: DateTime<Utc>,
    pid: Option<u32>,
) -> Result<Observation, ClineEventError> {
    let p: Payload = serde_json::from_slice(payload)
        .map_err(|e| ClineEventError::NotAPayload(cap(e.to_string(), MAX_SHORT)))?;
    let name = p
        .hook_name
        .ok_or_else(|| ClineEventError::NotAPayload("no hookName".into()))?;
    let kind = event_of(&name)?;
    if p.parent_agent_id.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(ClineEventError::KnownIgnored(name));
    }
    let session_id = p
        .session_context
        .and_then(|c| c.root_session_id)
        .or(p.task_id)
        .filter(|s| !s.trim().is_empty())
        .ok_or(ClineEventError::NoSessionId)?;
    let mut obs =
        Observation::new(cap(session_id, MAX_SHORT), agent, kind, at).with_source(Source::Hook);
    obs.pid = pid;
    obs.cwd = p
        .workspace_roots
        .and_then(|r| r.into_iter().next())
        .map(|s| cap(s, MAX_PATH));
    match kind {
        EventKind::PreToolUse => {
            obs.tool_name = p.tool_call.and_then(|t| t.name).map(|s| cap(s, MAX_SHORT))
        }
        EventKind::PostToolUse => {
            let result = p.tool_result.unwrap_or_default();
            if result.error.as_ref().is_some_and(|e| !e.is_null()) {
                obs.event = EventKind::PostToolUseFailure;
            }
            obs.tool_name = result.name.map(|s| cap(s, MAX_SHORT));
        }
        EventKind::StopFailure => {
            let e = p.error.unwrap_or_default();
            obs.error = Some(cap(
                match (e.name, e.message) {
                    (Some(n), Some(m)) => format!("{m} ({n})"),
                    (None, Some(m)) => m,
                    (Some(n), None) => n,
                    (None, None) => "the run failed".to_string(),
                },
                MAX_ERROR,
            ));
        }
        _ => {}
    }
    Ok(obs)
}

fn cap(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../../tests/fixtures/cline/real-3.0.65/hooks.jsonl");

    /// Every recorded call: (the hook file that ran, payload bytes).
    fn recorded() -> Vec<(String, Vec<u8>)> {
        FIXTURE
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("fixture line");
                let file = v["file"].as_str().expect("file").to_string();
                (file, serde_json::to_vec(&v["payload"]).expect("payload"))
            })
            .collect()
    }

    fn at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-06T06:46:16Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    // The recording: a turn with a tool, a turn stopped with Esc, a third turn, then the CLI
    // left with Ctrl-C twice (which fired nothing).
    #[test]
    fn the_recorded_session_maps_onto_the_trays_events_in_order() {
        let events: Vec<(String, EventKind)> = recorded()
            .iter()
            .map(|(f, p)| {
                let obs = parse(Agent::Cline, p, at(), Some(7)).expect("recorded call parses");
                (f.clone(), obs.event)
            })
            .collect();
        let want = [
            ("TaskStart", EventKind::UserPromptSubmit),
            ("PreToolUse", EventKind::PreToolUse),
            ("PostToolUse", EventKind::PostToolUse),
            ("TaskComplete", EventKind::Stop),
            ("TaskStart", EventKind::UserPromptSubmit),
            ("SessionShutdown", EventKind::Interrupt),
            ("TaskStart", EventKind::UserPromptSubmit),
            ("TaskComplete", EventKind::Stop),
        ];
        let want: Vec<(String, EventKind)> =
            want.iter().map(|(f, e)| (f.to_string(), *e)).collect();
        assert_eq!(events, want);
    }

    #[test]
    fn every_recorded_payload_names_the_root_session_and_its_folder() {
        for (file, payload) in recorded() {
            let obs = parse(Agent::Cline, &payload, at(), None).expect("parses");
            assert_eq!(obs.session_id, "1796539572804_hx0m0", "{file}");
            assert_eq!(obs.cwd.as_deref(), Some("/tmp/clx/rec/home/proj"), "{file}");
            assert_eq!(obs.agent, Agent::Cline);
        }
    }

    #[test]
    fn a_tool_call_names_its_tool_and_a_failed_result_is_a_failure() {
        let calls = recorded();
        let pre = parse(Agent::Cline, &calls[1].1, at(), None).unwrap();
        assert_eq!(pre.tool_name.as_deref(), Some("run_commands"));
        let post = parse(Agent::Cline, &calls[2].1, at(), None).unwrap();
        assert_eq!(post.tool_name.as_deref(), Some("run_commands"));
        let mut failed: serde_json::Value = serde_json::from_slice(&calls[2].1).unwrap();
        failed["tool_result"]["error"] = "exit status 1".into();
        let obs = parse(Agent::Cline, failed.to_string().as_bytes(), at(), None).unwrap();
        assert_eq!(obs.event, EventKind::PostToolUseFailure);
    }

    // Shapes from the 3.0.65 bundle that the recording did not trigger: a failed run, a
    // sub-agent's start, a payload without a root id.
    #[test]
    fn an_error_ends_the_turn_with_its_message_and_sub_agents_are_skipped() {
        let err = br#"{"hookName":"agent_error","taskId":"conv_1","sessionContext":{"rootSessionId":"s1"},
            "parent_agent_id":null,"error":{"name":"APIError","message":"502 Bad Gateway"}}"#;
        let obs = parse(Agent::Cline, err, at(), None).unwrap();
        assert_eq!(obs.event, EventKind::StopFailure);
        assert_eq!(obs.error.as_deref(), Some("502 Bad Gateway (APIError)"));
        let sub = br#"{"hookName":"agent_start","sessionContext":{"rootSessionId":"s1"},"parent_agent_id":"lead"}"#;
        assert_eq!(
            parse(Agent::Cline, sub, at(), None),
            Err(ClineEventError::KnownIgnored("agent_start".into()))
        );
        let no_root = br#"{"hookName":"agent_end","taskId":"conv_9"}"#;
        assert_eq!(
            parse(Agent::Cline, no_root, at(), None).unwrap().session_id,
            "conv_9"
        );
    }

    #[test]
    fn bad_input_gets_a_clear_error() {
        assert!(matches!(
            parse(Agent::Cline, b"not json", at(), None),
            Err(ClineEventError::NotAPayload(_))
        ));
        assert_eq!(
            parse(Agent::Cline, br#"{"hookName":"agent_end"}"#, at(), None),
            Err(ClineEventError::NoSessionId)
        );
        assert_eq!(
            parse(
                Agent::Cline,
                br#"{"hookName":"brand_new","taskId":"t"}"#,
                at(),
                None
            ),
            Err(ClineEventError::UnknownEvent("brand_new".into()))
        );
    }
}
