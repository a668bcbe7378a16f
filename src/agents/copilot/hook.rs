//! GitHub Copilot CLI's hook payloads, turned into observations: a pure function, tested on
//! every payload the real CLI 1.0.102 was recorded sending (`tests/fixtures/copilot/`).
//!
//! Why it is shaped this way:
//! - **The event comes from our command line.** Copilot's camelCase payloads carry no event
//!   name (only `notification` has a `hook_event_name`), so our hook file registers one command
//!   per event with `--event <name>`.
//! - **Only identifying fields are read.** `toolArgs`, `toolResult`, the prompt and the
//!   assistant's reply are skipped unread (serde ignores unknown keys without allocating them).
//! - **The mapping is onto the events the tray already knows** (spelled as Claude's hooks):
//!   `sessionStart` → SessionStart, `userPromptSubmitted` → UserPromptSubmit, `preToolUse` /
//!   `postToolUse(Failure)` → working, `permissionRequest` and `notification{permission_prompt}`
//!   → waiting for permission, `agentStop` (the turn's end) → Stop, `sessionEnd` → SessionEnd.
//!   Copilot's other notifications (`agent_idle`, `agent_completed`, `shell_completed`, …) are
//!   about background agents and shells, not the session's own state: they change nothing.
//! - **An error ends the turn only when Copilot says it cannot recover** from a model call.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::model::{Agent, EventKind, Observation, Source};

/// The events `agent-tray install --copilot` registers, as Copilot spells them.
pub const EVENTS: [&str; 13] = [
    "sessionStart",
    "userPromptSubmitted",
    "preToolUse",
    "permissionRequest",
    "notification",
    "postToolUse",
    "postToolUseFailure",
    "agentStop",
    "subagentStart",
    "subagentStop",
    "preCompact",
    "errorOccurred",
    "sessionEnd",
];

/// Longest short field kept (ids, tool names, reasons).
const MAX_SHORT: usize = 256;
/// Longest path kept.
const MAX_PATH: usize = 4096;

/// Why a Copilot hook call gave no observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopilotHookError {
    #[error("the Copilot payload is not a JSON object with a sessionId ({0})")]
    NotAPayload(String),
    #[error("the Copilot payload has no sessionId")]
    NoSessionId,
    #[error("no --event was given for a Copilot hook")]
    NoEvent,
    /// An event this version does not know: counted, never an error of the agent's.
    #[error("unknown Copilot hook event {0:?}")]
    UnknownEvent(String),
    /// A known event that says nothing about the session's own state.
    #[error("Copilot event {0:?} says nothing about the session's state")]
    KnownIgnored(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Payload {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    cwd: Option<String>,
    source: Option<String>,
    #[serde(rename = "toolName")]
    tool_name: Option<String>,
    notification_type: Option<String>,
    #[serde(rename = "transcriptPath")]
    transcript_path: Option<String>,
    reason: Option<String>,
    #[serde(rename = "agentName")]
    agent_name: Option<String>,
    #[serde(rename = "agentId")]
    agent_id: Option<String>,
    error: Option<ErrorInfo>,
    #[serde(rename = "errorContext")]
    error_context: Option<String>,
    recoverable: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorInfo {
    message: Option<String>,
    name: Option<String>,
}

/// A Copilot hook call understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopilotHook {
    pub session_id: String,
    pub event: EventKind,
    pub cwd: Option<String>,
    pub tool_name: Option<String>,
    pub notification_type: Option<String>,
    pub start_source: Option<String>,
    pub transcript_path: Option<String>,
    pub subagent_id: Option<String>,
    pub error: Option<String>,
}

/// The tray's event for a Copilot hook event, `Err` when it is ignored or unknown.
fn event_of(name: &str) -> Result<EventKind, CopilotHookError> {
    Ok(match name {
        "sessionStart" => EventKind::SessionStart,
        "userPromptSubmitted" => EventKind::UserPromptSubmit,
        "preToolUse" => EventKind::PreToolUse,
        "permissionRequest" => EventKind::PermissionRequest,
        "notification" => EventKind::Notification,
        "postToolUse" => EventKind::PostToolUse,
        "postToolUseFailure" => EventKind::PostToolUseFailure,
        "agentStop" => EventKind::Stop,
        "subagentStart" => EventKind::SubagentStart,
        "subagentStop" => EventKind::SubagentStop,
        "preCompact" => EventKind::PreCompact,
        "errorOccurred" => EventKind::StopFailure,
        "sessionEnd" => EventKind::SessionEnd,
        "userPromptTransformed" => return Err(CopilotHookError::KnownIgnored(name.to_string())),
        other => {
            return Err(CopilotHookError::UnknownEvent(cap(
                other.to_string(),
                MAX_SHORT,
            )))
        }
    })
}

/// The tools Copilot asks the user about by default (its `shell`, `write` and `url`
/// permission kinds: `bash`; `create`, `edit`; `web_fetch`, as 1.0.102 names them to the
/// model). Its `permissionRequest` hook fires before the user's own rules, for every tool:
/// only these are offered for an answer from the tray; any other call (a read, an MCP tool the
/// user may have allowed) only reports, so no wait is added where Copilot would not ask. A rule
/// of the user's that allows one of these (`--allow-tool`) cannot be seen from here: with
/// answering on, such a call still waits for its wait (4 s by default) before it runs.
pub const ASKING_TOOLS: [&str; 4] = ["bash", "create", "edit", "web_fetch"];

/// What a `permissionRequest` payload asks, when its tool is one Copilot asks the user about
/// ([`ASKING_TOOLS`]); `None` for anything else (a notification, another hook, another tool).
pub fn ask_call(payload: &[u8]) -> Option<crate::answering::AskCall> {
    let value: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let hook_name = value.get("hookName").and_then(serde_json::Value::as_str);
    if hook_name.is_some_and(|name| name != "permissionRequest") {
        return None;
    }
    let tool = value.get("toolName").and_then(serde_json::Value::as_str)?;
    if !ASKING_TOOLS.contains(&tool) {
        return None;
    }
    crate::answering::ask_call_from_payload(&value)
}

/// Parses one Copilot hook call: `event` is our command line's `--event`, `payload` its stdin.
pub fn parse(event: Option<&str>, payload: &[u8]) -> Result<CopilotHook, CopilotHookError> {
    let name = event.ok_or(CopilotHookError::NoEvent)?;
    let kind = event_of(name)?;
    let p: Payload = serde_json::from_slice(payload)
        .map_err(|e| CopilotHookError::NotAPayload(cap(e.to_string(), MAX_SHORT)))?;
    let session_id = p
        .session_id
        .filter(|s| !s.trim().is_empty())
        .ok_or(CopilotHookError::NoSessionId)?;
    let short = |s: Option<String>| s.map(|s| cap(s, MAX_SHORT));
    let mut hook = CopilotHook {
        session_id: cap(session_id, MAX_SHORT),
        event: kind,
        cwd: p.cwd.map(|s| cap(s, MAX_PATH)),
        tool_name: short(p.tool_name),
        notification_type: None,
        start_source: None,
        transcript_path: p.transcript_path.map(|s| cap(s, MAX_PATH)),
        subagent_id: None,
        error: None,
    };
    match kind {
        EventKind::SessionStart => hook.start_source = short(p.source),
        EventKind::Notification => {
            // Only the main loop's own waits change its state; the rest are background news.
            match p.notification_type.as_deref() {
                Some("permission_prompt") | Some("elicitation_dialog") => {
                    hook.notification_type = short(p.notification_type)
                }
                _ => return Err(CopilotHookError::KnownIgnored(name.to_string())),
            }
        }
        EventKind::SubagentStart | EventKind::SubagentStop => {
            hook.subagent_id = short(p.agent_id.or(p.agent_name));
            if hook.subagent_id.is_none() {
                return Err(CopilotHookError::KnownIgnored(name.to_string()));
            }
        }
        EventKind::StopFailure => {
            let fatal =
                p.recoverable == Some(false) && p.error_context.as_deref() == Some("model_call");
            if !fatal {
                return Err(CopilotHookError::KnownIgnored(name.to_string()));
            }
            let e = p.error.unwrap_or_default();
            hook.error = Some(cap(
                match (e.name, e.message) {
                    (Some(n), Some(m)) => format!("{m} ({n})"),
                    (None, Some(m)) => m,
                    (Some(n), None) => n,
                    (None, None) => "model call failed".to_string(),
                },
                1024,
            ));
        }
        EventKind::SessionEnd => {
            // `reason` (user_exit, complete, error, abort, timeout) is not kept: ended is ended.
            let _ = p.reason;
        }
        _ => {}
    }
    Ok(hook)
}

impl CopilotHook {
    /// The observation for `agent` (the caller's registered Copilot agent), with the agent
    /// process when known.
    pub fn into_observation(
        self,
        agent: Agent,
        at: DateTime<Utc>,
        pid: Option<u32>,
    ) -> Observation {
        let mut obs =
            Observation::new(self.session_id, agent, self.event, at).with_source(Source::Hook);
        obs.pid = pid;
        obs.cwd = self.cwd;
        obs.tool_name = self.tool_name;
        obs.notification_type = self.notification_type;
        obs.start_source = self.start_source;
        obs.transcript_path = self.transcript_path;
        obs.subagent_id = self.subagent_id;
        obs.error = self.error;
        obs
    }
}

/// `--event NAME` or `--event=NAME`, anywhere in the arguments.
pub fn event_flag(args: &[String]) -> Option<String> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--event" {
            return it.next().cloned();
        }
        if let Some(v) = arg.strip_prefix("--event=") {
            return Some(v.to_string());
        }
    }
    None
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

    const FIXTURE: &str = include_str!("../../../tests/fixtures/copilot/real-1.0.102/hooks.jsonl");

    /// Every recorded call: (event, payload bytes).
    fn recorded() -> Vec<(String, Vec<u8>)> {
        FIXTURE
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("fixture line");
                let event = v["event"].as_str().expect("event").to_string();
                (event, serde_json::to_vec(&v["payload"]).expect("payload"))
            })
            .collect()
    }

    fn at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-30T23:51:30Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn the_recorded_happy_path_maps_onto_the_trays_events_in_order() {
        // Part A of the recording: prompt, bash tool, permission prompt, approve, turn end, /exit.
        let calls = recorded();
        let a: Vec<EventKind> = calls
            .iter()
            .take(8)
            .map(|(e, p)| parse(Some(e), p).expect("recorded call parses").event)
            .collect();
        assert_eq!(
            a,
            vec![
                EventKind::SessionStart,
                EventKind::UserPromptSubmit,
                EventKind::PreToolUse,
                EventKind::PermissionRequest,
                EventKind::Notification,
                EventKind::PostToolUse,
                EventKind::Stop,
                EventKind::SessionEnd,
            ]
        );
    }

    #[test]
    fn every_recorded_payload_names_its_session_and_folder() {
        for (event, payload) in recorded() {
            let hook = parse(Some(&event), &payload).expect("recorded call parses");
            assert_eq!(hook.session_id.len(), 36, "{event}: a uuid session id");
            assert_eq!(
                hook.cwd.as_deref(),
                Some("/home/dev/lab/rt/work"),
                "{event}"
            );
        }
    }

    #[test]
    fn only_a_permission_request_for_a_tool_copilot_asks_about_is_offered_for_an_answer() {
        let request = |tool: &str| {
            serde_json::json!({
                "hookName": "permissionRequest", "sessionId": "s1", "timestamp": 1,
                "cwd": "/w/api", "toolName": tool, "toolInput": {"command": "touch made"},
                "permissionSuggestions": []
            })
            .to_string()
        };
        let Some(call) = ask_call(request("bash").as_bytes()) else {
            panic!("a shell command is asked about");
        };
        assert_eq!(call.detail.tool, "bash");
        assert_eq!(call.detail.command.as_deref(), Some("touch made"));
        assert_eq!(call.detail.cwd.as_deref(), Some("/w/api"));
        for tool in ["create", "edit", "web_fetch"] {
            assert!(ask_call(request(tool).as_bytes()).is_some(), "{tool}");
        }
        // Reads and other tools only report; so do other hooks and notifications.
        for tool in ["view", "grep", "glob", "github-mcp-server-list_issues"] {
            assert!(ask_call(request(tool).as_bytes()).is_none(), "{tool}");
        }
        let pre = request("bash").replace("\"permissionRequest\"", "\"preToolUse\"");
        assert!(ask_call(pre.as_bytes()).is_none());
        let note = r#"{"sessionId":"s1","notification_type":"permission_prompt","message":"m"}"#;
        assert!(ask_call(note.as_bytes()).is_none());
        assert!(ask_call(b"not json").is_none());
    }

    #[test]
    fn the_permission_prompt_notification_keeps_its_type_and_the_tool_its_name() {
        let calls = recorded();
        let n = parse(Some("notification"), &calls[4].1).expect("notification");
        assert_eq!(n.notification_type.as_deref(), Some("permission_prompt"));
        let pre = parse(Some("preToolUse"), &calls[2].1).expect("preToolUse");
        assert_eq!(pre.tool_name.as_deref(), Some("bash"));
        let start = parse(Some("sessionStart"), &calls[0].1).expect("sessionStart");
        assert_eq!(start.start_source.as_deref(), Some("new"));
        let obs = start.into_observation(Agent::Claude, at(), Some(12681));
        assert_eq!(obs.pid, Some(12681));
        assert_eq!(obs.start_source.as_deref(), Some("new"));
    }

    #[test]
    fn background_notifications_change_nothing() {
        // agent_idle is Copilot's news of a *background* agent finishing, not the main loop.
        let p = br#"{"sessionId":"s1","cwd":"/p","notification_type":"agent_idle","message":"x"}"#;
        assert_eq!(
            parse(Some("notification"), p),
            Err(CopilotHookError::KnownIgnored("notification".into()))
        );
    }

    #[test]
    fn only_an_unrecoverable_model_error_fails_the_turn() {
        let fatal = br#"{"sessionId":"s1","error":{"message":"boom","name":"APIError"},"errorContext":"model_call","recoverable":false}"#;
        let hook = parse(Some("errorOccurred"), fatal).expect("fatal error");
        assert_eq!(hook.event, EventKind::StopFailure);
        assert_eq!(hook.error.as_deref(), Some("boom (APIError)"));
        let retried = br#"{"sessionId":"s1","error":{"message":"boom"},"errorContext":"model_call","recoverable":true}"#;
        assert!(matches!(
            parse(Some("errorOccurred"), retried),
            Err(CopilotHookError::KnownIgnored(_))
        ));
    }

    #[test]
    fn a_call_without_event_or_session_or_json_is_refused_not_guessed() {
        assert_eq!(parse(None, b"{}"), Err(CopilotHookError::NoEvent));
        assert_eq!(
            parse(Some("agentStop"), br#"{"cwd":"/p"}"#),
            Err(CopilotHookError::NoSessionId)
        );
        assert!(matches!(
            parse(Some("agentStop"), b"not json"),
            Err(CopilotHookError::NotAPayload(_))
        ));
        assert_eq!(
            parse(Some("brandNewEvent"), b"{}"),
            Err(CopilotHookError::UnknownEvent("brandNewEvent".into()))
        );
    }

    #[test]
    fn the_bulky_fields_are_never_kept() {
        // A 2 MB toolResult costs a scan: nothing of it reaches the observation.
        let big = "x".repeat(2 << 20);
        let p = format!(
            r#"{{"sessionId":"s1","toolName":"bash","toolResult":{{"textResultForLlm":"{big}"}}}}"#
        );
        let hook = parse(Some("postToolUse"), p.as_bytes()).expect("big payload");
        let obs = hook.into_observation(Agent::Claude, at(), None);
        let line = serde_json::to_string(&obs).expect("serialise");
        assert!(
            line.len() < 1024,
            "observation stays small: {} bytes",
            line.len()
        );
    }

    #[test]
    fn the_event_flag_is_read_in_both_spellings() {
        let args: Vec<String> = ["--agent", "copilot", "--event", "agentStop"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(event_flag(&args).as_deref(), Some("agentStop"));
        assert_eq!(
            event_flag(&["--event=sessionEnd".to_string()]).as_deref(),
            Some("sessionEnd")
        );
        assert_eq!(event_flag(&[]), None);
    }
}
