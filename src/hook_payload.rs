//! Turns what a hook reads on stdin into an [`Observation`]: a pure function, tested on every
//! line the real agents were recorded sending.
//!
//! Why it is shaped this way:
//! - **Only the fields the state needs are kept.** A payload carries the user's prompt, the tool's
//!   input and output and the assistant's last message; none of them is read into memory as
//!   text, journaled or sent. Unknown and unwanted values are skipped with `IgnoredAny`, so a
//!   megabyte of `tool_input` costs a scan, not an allocation.
//! - **A cut payload still counts.** The hook reads at most 1 MiB; past that the JSON is cut off
//!   in the middle. Both agents write the identifying fields (`session_id`, `hook_event_name`,
//!   `cwd`, …) before the bulky ones, so the fields are gathered one by one into a struct that
//!   survives a parse error half way: whatever was read before the cut is kept.
//! - **The agent is told, or inferred.** The installers pass `--agent`; without it, Codex is
//!   recognised by its `turn_id`, a rollout `transcript_path`, or a `model` outside SessionStart
//!   (Claude sends `model` only there), and Claude by a transcript under `.claude`. The process
//!   walk ([`crate::agent_pid`]) is the last resort, decided by the caller.
//! - **Every string is capped** so a hostile payload cannot make a record or a socket line large.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use crate::catalogue::ForeignProgram;
use crate::catalogue::InCatalogue;
use crate::model::{Agent, EventKind, Observation, Source};

/// Longest path kept (cwd, transcript path).
pub(crate) const MAX_PATH: usize = 4096;
/// Longest short field kept (model, tool name, notification type, error kind, ids).
pub(crate) const MAX_SHORT: usize = 256;

/// The fields of a hook payload the tray cares about, as read so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HookFields {
    pub session_id: Option<String>,
    pub hook_event_name: Option<String>,
    /// The event's name where a Claude-compatible agent's payload calls it `event` (read only
    /// when there is no `hook_event_name`).
    pub event: Option<String>,
    pub cwd: Option<String>,
    pub transcript_path: Option<String>,
    pub model: Option<String>,
    pub source: Option<String>,
    pub notification_type: Option<String>,
    pub tool_name: Option<String>,
    /// A tool event's call id (Claude's `tool_use_id`).
    pub tool_use_id: Option<String>,
    pub agent_id: Option<String>,
    pub error: Option<String>,
    pub turn_id: Option<String>,
    pub prompt_id: Option<String>,
    /// Claude's session title (SessionStart, UserPromptSubmit).
    pub session_title: Option<String>,
    /// CwdChanged's new directory.
    pub new_cwd: Option<String>,
    /// Pre/PostModelSwitch's models.
    pub from_model: Option<String>,
    pub to_model: Option<String>,
    /// Elicitation's MCP server (a configuration name, not the user's text).
    pub mcp_server_name: Option<String>,
    /// Another agent's payload, told by a field only that agent sends.
    pub foreign: Option<ForeignCaller>,
    /// Tokens the turn's last request held (Qwen Code's `Stop`: `input_tokens`).
    pub input_tokens: Option<u64>,
    /// The model's context window in tokens (Qwen Code's `Stop`: `context_limit`).
    pub context_limit: Option<u64>,
}

/// Another program running an agent's hooks as if it were that agent (GitHub Copilot CLI and
/// Cursor load a project's Claude Code hooks). Its calls must not become sessions. Which
/// programs do that, and how each is told apart, is the host agent's catalogue row
/// ([`crate::catalogue::Entry::foreign_callers`]); this is a
/// handle on one of them. Compared, hashed and ordered by its stable name.
#[derive(Clone, Copy)]
pub struct ForeignCaller(&'static ForeignProgram);

impl PartialEq for ForeignCaller {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}
impl Eq for ForeignCaller {}
impl std::hash::Hash for ForeignCaller {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}
impl PartialOrd for ForeignCaller {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ForeignCaller {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}
impl fmt::Debug for ForeignCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ForeignCaller {
    /// Every known foreign program, in the order the registered agents list them.
    fn all() -> impl Iterator<Item = ForeignCaller> {
        crate::catalogue::foreign_programs().map(ForeignCaller)
    }

    /// The name `doctor` shows.
    pub fn display_name(self) -> &'static str {
        self.0.name
    }

    /// The stable name on the control socket.
    pub fn as_str(self) -> &'static str {
        self.0.id
    }

    /// The agent whose hooks it runs, and why (for `doctor`).
    pub fn program(self) -> &'static ForeignProgram {
        self.0
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().find(|c| c.as_str() == name)
    }

    /// By a payload key only that program sends.
    fn by_key(key: &str) -> Option<Self> {
        Self::all().find(|c| c.0.payload_keys.contains(&key))
    }

    /// By the process that ran the hook (its first ancestor that is not a shell).
    pub fn by_process_name(comm: &str) -> Option<Self> {
        Self::all().find(|c| c.0.process_names.contains(&comm))
    }

    /// By the environment the caller gives its hooks. Only believed when no process of the
    /// host agent is above the hook: the host run in the caller's terminal inherits its
    /// variables.
    pub fn by_env(get: impl Fn(&str) -> Option<String>) -> Option<Self> {
        Self::all().find(|c| c.0.env_vars.iter().any(|v| get(v).is_some()))
    }
}

/// Why a payload gave no observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("the payload is not a JSON object with a session_id ({0})")]
    NotAHookPayload(String),
    #[error("the payload has no session_id")]
    NoSessionId,
    #[error("the payload has no hook_event_name")]
    NoEvent,
    /// A hook this version does not know: not an error of the agent's, just nothing to report.
    #[error("unknown hook event {0:?}")]
    UnknownEvent(String),
    /// A hook event the agent has and that says nothing about a session's state (Claude's
    /// `Setup`, `FileChanged`, …): known, so neither counted as unknown nor logged.
    #[error("hook event {0:?} says nothing about a session's state")]
    KnownIgnored(String),
    /// Another agent's payload (see [`ForeignCaller`]): not a Claude or Codex session.
    #[error("a {} payload ({event:?}) reached the hook", caller.display_name())]
    Foreign {
        caller: ForeignCaller,
        event: String,
    },
}

/// Reads the fields from a payload, keeping whatever came before a parse error (a cut payload).
/// Returns the fields and, when the JSON did not parse to the end, the error.
pub fn read_fields(payload: &[u8]) -> (HookFields, Option<String>) {
    let mut fields = HookFields::default();
    let mut de = serde_json::Deserializer::from_slice(payload);
    let result = FieldsSeed(&mut fields)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    (fields, result.err().map(|e| e.to_string()))
}

/// A hook call understood: its event, and the agent where the flag or the payload tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedHook {
    pub session_id: String,
    pub event: EventKind,
    /// From `--agent`, else from the payload; `None` when neither tells (the process walk may).
    pub agent: Option<Agent>,
    pub fields: HookFields,
}

/// What a hook event name means for one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// It moves a session: this event.
    Event(EventKind),
    /// The agent has it and it says nothing about a session's state (known, not logged).
    Ignored,
    /// Not a name this version knows.
    Unknown,
}

/// Claude Code's hook event names (the default mapping, shared by Claude-compatible agents).
pub fn standard_hook_event(name: &str) -> HookEvent {
    match hook_event(name) {
        Some(event) => HookEvent::Event(event),
        None if EventKind::IGNORED_HOOK_EVENTS.contains(&name) => HookEvent::Ignored,
        None => HookEvent::Unknown,
    }
}

/// How each agent reads its own hook payloads: the port this parser asks, implemented by the
/// adapters one floor up (`crate::agents::Adapters`) and handed in by whoever parses. The parser
/// stays below the adapters (they use its fields), so it never names them.
pub trait HookVocabulary {
    /// What a `hook_event_name` means for `agent`.
    fn hook_event(&self, agent: Agent, name: &str, fields: &HookFields) -> HookEvent;
    /// Adjusts the observation built from a payload (fields an agent spells its own way).
    fn refine_observation(&self, agent: Agent, fields: &HookFields, obs: &mut Observation);
    /// Which agent a payload looks like, where no `--agent` was given.
    fn infer_agent(&self, fields: &HookFields, event: EventKind) -> Option<Agent>;
}

/// Parses one hook payload. `agent_hint` is `--agent` when given.
pub fn parse_hook(
    payload: &[u8],
    agent_hint: Option<Agent>,
    vocabulary: &dyn HookVocabulary,
) -> Result<ParsedHook, PayloadError> {
    let (fields, parse_error) = read_fields(payload);
    // Only an agent whose hooks others run (Claude's `.claude/settings.json`) has foreign
    // payloads to refuse; another agent's own hook (`--agent gemini`) may send any key.
    let foreign_possible = agent_hint.is_none_or(|a| a.entry().refuses_foreign_payloads());
    if let Some(caller) = fields.foreign.filter(|_| foreign_possible) {
        return Err(PayloadError::Foreign {
            caller,
            event: fields.hook_event_name.unwrap_or_default(),
        });
    }
    let Some(session_id) = fields.session_id.clone().filter(|s| !s.trim().is_empty()) else {
        return Err(match parse_error {
            Some(e) => PayloadError::NotAHookPayload(e),
            None => PayloadError::NoSessionId,
        });
    };
    let event_name = fields
        .hook_event_name
        .clone()
        .or_else(|| fields.event.clone())
        .ok_or(PayloadError::NoEvent)?;
    let mapping = match agent_hint {
        Some(agent) => vocabulary.hook_event(agent, &event_name, &fields),
        None => standard_hook_event(&event_name),
    };
    let event = match mapping {
        HookEvent::Event(event) => event,
        HookEvent::Ignored => return Err(PayloadError::KnownIgnored(event_name)),
        HookEvent::Unknown => return Err(PayloadError::UnknownEvent(event_name)),
    };
    let agent = agent_hint.or_else(|| vocabulary.infer_agent(&fields, event));
    Ok(ParsedHook {
        session_id,
        event,
        agent,
        fields,
    })
}

impl ParsedHook {
    /// The observation, with the agent process the walk found (`None`: no pid is sent). The
    /// walk's agent decides only when neither the flag nor the payload did; Claude otherwise.
    pub fn into_observation(
        self,
        at: DateTime<Utc>,
        walked: Option<(u32, Agent)>,
        vocabulary: &dyn HookVocabulary,
    ) -> Observation {
        let agent = self
            .agent
            .or(walked.map(|(_, a)| a))
            .unwrap_or(crate::catalogue::LEGACY_HOOK_AGENT);
        let fields = self.fields;
        let fields_for_refine = fields.clone();
        let event = self.event;
        let mut obs = Observation::new(self.session_id, agent, event, at).with_source(Source::Hook);
        obs.pid = walked.filter(|(_, a)| *a == agent).map(|(pid, _)| pid);
        obs.cwd = fields.cwd;
        obs.transcript_path = fields.transcript_path;
        obs.model = fields.model;
        obs.subagent_id = fields.agent_id;
        obs.tool_name = fields.tool_name;
        if matches!(
            event,
            EventKind::PreToolUse | EventKind::PostToolUse | EventKind::PostToolUseFailure
        ) {
            obs.tool_call_id = fields.tool_use_id;
        }
        if event == EventKind::SessionStart {
            obs.start_source = fields.source;
        } else if event == EventKind::UserPromptSubmit {
            obs.prompt_source = fields.source;
        }
        if event == EventKind::Notification {
            obs.notification_type = fields.notification_type;
        }
        // Only StopFailure's `error` is an error kind (rate_limit, …). PostToolUseFailure's
        // `error` is the tool's own output and may hold anything the command printed: never kept.
        if event == EventKind::StopFailure {
            obs.error = fields.error.map(|kind| stop_failure_text(&kind));
        }
        obs.title = fields.session_title.filter(|t| !t.trim().is_empty());
        match event {
            EventKind::CwdChanged => {
                if let Some(new_cwd) = fields.new_cwd {
                    obs.cwd = Some(new_cwd);
                }
            }
            EventKind::PreModelSwitch => obs.model = fields.from_model.or(obs.model),
            EventKind::PostModelSwitch => obs.model = fields.to_model.or(obs.model),
            EventKind::Elicitation => {
                obs.waiting_for = Some(match fields.mcp_server_name {
                    Some(server) => format!("input for MCP server {server}"),
                    None => "input for an MCP server".to_string(),
                });
            }
            _ => {}
        }
        vocabulary.refine_observation(agent, &fields_for_refine, &mut obs);
        obs
    }
}

/// StopFailure's `error` as people read it, its kind kept in brackets (the 13 kinds of the
/// standard hook contract; a kind not in it is shown as it came).
pub fn stop_failure_text(kind: &str) -> String {
    let reason = match kind {
        "authentication_failed" => "authentication failed",
        "oauth_org_not_allowed" => "this organisation may not use this agent",
        "account_on_hold" => "the account is on hold",
        "verification_required" => "the account needs verifying",
        "billing_error" => "billing problem",
        "rate_limit" => "rate limit reached",
        "overloaded" => "the API is overloaded",
        "invalid_request" => "the API refused the request",
        "model_not_found" => "model not found",
        "server_error" => "API server error",
        "unknown" => "unknown API error",
        "max_output_tokens" => "the reply hit the output token limit",
        "cloud_credential_error" => "cloud credentials failed",
        other => return other.to_string(),
    };
    format!("{reason} ({kind})")
}

/// Parse and build in one step, for callers with the walk's answer at hand (and the tests).
pub fn observation_from_payload(
    payload: &[u8],
    agent_hint: Option<Agent>,
    walked: Option<(u32, Agent)>,
    at: DateTime<Utc>,
    vocabulary: &dyn HookVocabulary,
) -> Result<Observation, PayloadError> {
    Ok(parse_hook(payload, agent_hint, vocabulary)?.into_observation(at, walked, vocabulary))
}

/// The hook event for a `hook_event_name`. Only real hook names: a payload cannot claim to be a
/// file feed's derived event.
pub fn hook_event(name: &str) -> Option<EventKind> {
    EventKind::HOOK_EVENTS
        .into_iter()
        .find(|kind| kind.as_str() == name)
}

/// Cuts a string to at most `max` bytes, on a character boundary.
pub fn cap(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

struct FieldsSeed<'a>(&'a mut HookFields);

impl<'de> DeserializeSeed<'de> for FieldsSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FieldsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a hook payload object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let fields = self.0;
        while let Some(key) = map.next_key::<KeyName>()? {
            let number = match key.0.as_str() {
                "input_tokens" => Some(&mut fields.input_tokens),
                "context_limit" => Some(&mut fields.context_limit),
                _ => None,
            };
            if let Some(slot) = number {
                // Any other type counts as absent, as for the text fields.
                *slot = map.next_value::<IgnoredOrU64>()?.0;
                continue;
            }
            let (slot, max) = match key.0.as_str() {
                "session_id" => (&mut fields.session_id, MAX_SHORT),
                "hook_event_name" => (&mut fields.hook_event_name, MAX_SHORT),
                "event" => (&mut fields.event, MAX_SHORT),
                "cwd" => (&mut fields.cwd, MAX_PATH),
                "transcript_path" => (&mut fields.transcript_path, MAX_PATH),
                "model" => (&mut fields.model, MAX_SHORT),
                "source" => (&mut fields.source, MAX_SHORT),
                "notification_type" => (&mut fields.notification_type, MAX_SHORT),
                "tool_name" => (&mut fields.tool_name, MAX_SHORT),
                "tool_use_id" => (&mut fields.tool_use_id, MAX_SHORT),
                "agent_id" => (&mut fields.agent_id, MAX_SHORT),
                "error" => (&mut fields.error, MAX_SHORT),
                "turn_id" => (&mut fields.turn_id, MAX_SHORT),
                "prompt_id" => (&mut fields.prompt_id, MAX_SHORT),
                "session_title" => (&mut fields.session_title, MAX_SHORT),
                "new_cwd" => (&mut fields.new_cwd, MAX_PATH),
                "from_model" => (&mut fields.from_model, MAX_SHORT),
                "to_model" => (&mut fields.to_model, MAX_SHORT),
                "mcp_server_name" => (&mut fields.mcp_server_name, MAX_SHORT),
                other => {
                    if let Some(caller) = ForeignCaller::by_key(other) {
                        fields.foreign.get_or_insert(caller);
                    }
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if let Some(text) = map.next_value::<MaybeString>()?.0 {
                *slot = Some(cap(text, max));
            }
        }
        Ok(())
    }
}

/// A whole non-negative number, or nothing (a value of any other type, skipped).
struct IgnoredOrU64(Option<u64>);

impl<'de> de::Deserialize<'de> for IgnoredOrU64 {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        Ok(IgnoredOrU64(value.as_u64()))
    }
}

/// A key, owned (keys are short; escapes make borrowing impossible in general).
struct KeyName(String);

impl<'de> de::Deserialize<'de> for KeyName {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(KeyName)
    }
}

/// A string value, or nothing when the value is of another type (skipped, never an error: the
/// agents' formats change between versions).
struct MaybeString(Option<String>);

impl<'de> de::Deserialize<'de> for MaybeString {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeString;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MaybeString, E> {
                Ok(MaybeString(Some(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<MaybeString, E> {
                Ok(MaybeString(Some(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<MaybeString, E> {
                Ok(MaybeString(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<MaybeString, E> {
                Ok(MaybeString(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<MaybeString, E> {
                Ok(MaybeString(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<MaybeString, E> {
                Ok(MaybeString(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<MaybeString, E> {
                Ok(MaybeString(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<MaybeString, E> {
                Ok(MaybeString(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeString, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeString(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeString, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeString(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    // The parser with every adapter's vocabulary, as the hook runs it.
    fn parse_hook(payload: &[u8], agent_hint: Option<Agent>) -> Result<ParsedHook, PayloadError> {
        super::parse_hook(payload, agent_hint, &crate::agents::Adapters)
    }

    fn observation_from_payload(
        payload: &[u8],
        agent_hint: Option<Agent>,
        walked: Option<(u32, Agent)>,
        at: DateTime<Utc>,
    ) -> Result<Observation, PayloadError> {
        crate::agents::observation_from_payload(payload, agent_hint, walked, at)
    }
    use std::path::PathBuf;

    fn fixtures() -> PathBuf {
        // Recorded from the real agents (tests/fixtures/*/README.md says how).
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    fn fixture_lines(rel: &str) -> Vec<serde_json::Value> {
        crate::test_support::recorded_json_lines(rel)
    }

    fn at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T19:07:13Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn every_recorded_claude_hook_becomes_an_observation_of_its_event() {
        // The real Claude Code 2.1.328 run: start, prompt, a Bash command needing approval,
        // approval, the end of the turn, /exit.
        let lines = fixture_lines("claude/real-2.1.328/hooks.jsonl");
        assert_eq!(lines.len(), 8);
        for line in lines {
            let payload = serde_json::to_vec(&line["payload"]).unwrap();
            // No --agent: the payload alone must say it is Claude.
            let obs = observation_from_payload(&payload, None, None, at()).unwrap();
            let p = &line["payload"];
            assert_eq!(obs.agent, Agent::Claude, "{p}");
            assert_eq!(obs.session_id, p["session_id"].as_str().unwrap());
            assert_eq!(obs.event.as_str(), p["hook_event_name"].as_str().unwrap());
            assert_eq!(obs.cwd.as_deref(), Some("/home/dev/proj"));
            assert_eq!(
                obs.transcript_path.as_deref(),
                p["transcript_path"].as_str()
            );
            assert_eq!(obs.source, Source::Hook);
            assert_eq!(obs.at, at());
            assert_eq!(obs.pid, None, "the parser never invents a pid");
            assert_eq!(obs.tool_name.as_deref(), p["tool_name"].as_str());
            // The call id ties a PostToolUse to its PreToolUse (a tool event only).
            match obs.event {
                EventKind::PreToolUse | EventKind::PostToolUse => assert_eq!(
                    obs.tool_call_id.as_deref(),
                    Some(p["tool_use_id"].as_str().unwrap())
                ),
                _ => assert_eq!(obs.tool_call_id, None, "{p}"),
            }
            match obs.event {
                EventKind::SessionStart => {
                    assert_eq!(obs.start_source.as_deref(), Some("startup"));
                    assert_eq!(obs.model.as_deref(), Some("claude-opus-5-5"));
                }
                EventKind::Notification => {
                    assert_eq!(obs.notification_type.as_deref(), Some("permission_prompt"))
                }
                _ => assert_eq!(obs.start_source, None),
            }
        }
    }

    #[test]
    fn every_recorded_codex_hook_becomes_a_codex_observation() {
        // Several real Codex 0.169.0 sessions, Interrupt (Esc at the approval) and SessionEnd
        // (which carries neither turn_id nor model) included.
        let lines = fixture_lines("codex/real-0.169.0/hooks.jsonl");
        assert_eq!(lines.len(), 31);
        let mut events = std::collections::BTreeSet::new();
        for line in lines {
            let payload = serde_json::to_vec(&line["payload"]).unwrap();
            let obs = observation_from_payload(&payload, None, None, at()).unwrap();
            let p = &line["payload"];
            assert_eq!(obs.agent, Agent::Codex, "inferred from the payload: {p}");
            assert_eq!(obs.session_id, p["session_id"].as_str().unwrap());
            assert_eq!(obs.event.as_str(), p["hook_event_name"].as_str().unwrap());
            assert_eq!(obs.model.as_deref(), p["model"].as_str());
            events.insert(obs.event.as_str());
            // And with the flag the installers pass, the same.
            let flagged =
                observation_from_payload(&payload, Some(Agent::Codex), None, at()).unwrap();
            assert_eq!(flagged, obs);
        }
        for e in [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
            "Interrupt",
            "SessionEnd",
        ] {
            assert!(events.contains(e), "{e} is in the recording");
        }
    }

    #[test]
    fn prompts_tool_input_and_assistant_text_never_reach_the_observation() {
        // Privacy: the journal and the socket carry the observation; none of the user's text.
        for rel in [
            "claude/real-2.1.328/hooks.jsonl",
            "codex/real-0.169.0/hooks.jsonl",
        ] {
            for line in fixture_lines(rel) {
                let payload = serde_json::to_vec(&line["payload"]).unwrap();
                let obs = observation_from_payload(&payload, None, None, at()).unwrap();
                let text = serde_json::to_string(&obs).unwrap();
                for secret in [
                    "prompt",
                    "tool_input",
                    "last_assistant_message",
                    "tool_response",
                ] {
                    if let Some(v) = line["payload"][secret].as_str().filter(|v| v.len() > 3) {
                        assert!(!text.contains(v), "{secret} leaked: {text}");
                    }
                }
                assert!(!text.contains("touch "), "a command leaked: {text}");
                assert!(!text.contains("make a file"), "a prompt leaked: {text}");
            }
        }
    }

    #[test]
    fn a_payload_cut_after_its_identifying_fields_still_gives_the_event() {
        // A 5 MiB tool_input is cut at 1 MiB by the hook: the JSON ends mid-string.
        let mut payload = br#"{"session_id":"s-cut","transcript_path":"/home/dev/.claude/projects/p/s-cut.jsonl","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":""#.to_vec();
        payload.extend(std::iter::repeat_n(b'x', 1 << 20));
        let obs = observation_from_payload(&payload, None, None, at()).unwrap();
        assert_eq!(obs.session_id, "s-cut");
        assert_eq!(obs.event, EventKind::PreToolUse);
        assert_eq!(obs.tool_name.as_deref(), Some("Write"));
        assert_eq!(obs.agent, Agent::Claude);
    }

    #[test]
    fn garbage_and_half_payloads_are_errors_not_panics() {
        // Whatever an agent or a person pipes in, the parser answers.
        let cases: [&[u8]; 9] = [
            b"",
            b"not json",
            b"[1,2,3]",
            b"\xff\xfe\x00",
            b"{}",
            br#"{"session_id":"s"}"#,
            br#"{"session_id":"","hook_event_name":"Stop"}"#,
            br#"{"session_id":7,"hook_event_name":"Stop"}"#,
            br#"{"hook_event_name":"Stop","session_id":"s"#,
        ];
        for case in cases {
            assert!(
                observation_from_payload(case, None, None, at()).is_err(),
                "{case:?}"
            );
        }
        assert_eq!(
            observation_from_payload(
                br#"{"session_id":"s","hook_event_name":"TeammateIdles"}"#,
                None,
                None,
                at()
            ),
            Err(PayloadError::UnknownEvent("TeammateIdles".into()))
        );
        // Derived events are the file feeds' words, not a hook's.
        assert!(observation_from_payload(
            br#"{"session_id":"s","hook_event_name":"Gone"}"#,
            None,
            None,
            at()
        )
        .is_err());
    }

    #[test]
    fn claudes_events_that_say_nothing_of_state_are_known_not_unknown() {
        // Setup, ConfigChange, FileChanged, MessageDisplay, …: a version that sends them is not a
        // version we do not understand, so they must not be counted as unknown events.
        let path = fixtures().join("claude/shapes-2.1.332/known_ignored.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let mut n = 0;
        for line in text.lines() {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            let name = line["payload"]["hook_event_name"]
                .as_str()
                .unwrap()
                .to_string();
            let payload = serde_json::to_vec(&line["payload"]).unwrap();
            assert_eq!(
                parse_hook(&payload, Some(Agent::Claude)).map(|p| p.event),
                Err(PayloadError::KnownIgnored(name.clone())),
                "{name}"
            );
            n += 1;
        }
        assert_eq!(n, 9);
        // Positive control: a name no Claude Code has is still unknown.
        assert_eq!(
            parse_hook(
                br#"{"session_id":"s","hook_event_name":"SomethingNew"}"#,
                Some(Agent::Claude)
            )
            .map(|p| p.event),
            Err(PayloadError::UnknownEvent("SomethingNew".into()))
        );
    }

    #[test]
    fn new_events_keep_their_state_fields_and_never_the_users_text() {
        let path = fixtures().join("claude/shapes-2.1.332/new_events.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines() {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            let payload = serde_json::to_vec(&line["payload"]).unwrap();
            let obs = observation_from_payload(&payload, None, None, at()).unwrap();
            let json = serde_json::to_string(&obs).unwrap();
            for secret in [
                "fix the flaky test please",
                "rm -rf build",
                "Which repository?",
                "secret plan text",
                "partial answer",
                "429 Too Many",
            ] {
                assert!(!json.contains(secret), "{secret} leaked: {json}");
            }
            match obs.event.as_str() {
                "SessionStart" | "UserPromptSubmit" => assert_eq!(
                    obs.title.as_deref(),
                    line["payload"]["session_title"].as_str(),
                    "{json}"
                ),
                "CwdChanged" => assert_eq!(obs.cwd.as_deref(), Some("/home/dev/proj/sub")),
                "PostModelSwitch" => assert_eq!(obs.model.as_deref(), Some("claude-sonnet-5")),
                "PreModelSwitch" => assert_eq!(obs.model.as_deref(), Some("claude-opus-5-5")),
                _ => {}
            }
        }
    }

    #[test]
    fn a_prompts_source_says_whether_a_person_or_a_loop_submitted_it() {
        let payload = br#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"tick","source":"loop_wakeup"}"#;
        let obs = observation_from_payload(payload, Some(Agent::Claude), None, at()).unwrap();
        assert_eq!(obs.prompt_source.as_deref(), Some("loop_wakeup"));
        assert_eq!(obs.start_source, None);
        // SessionStart's `source` is the start's, never a prompt's.
        let payload = br#"{"session_id":"s","hook_event_name":"SessionStart","source":"resume"}"#;
        let obs = observation_from_payload(payload, Some(Agent::Claude), None, at()).unwrap();
        assert_eq!(obs.prompt_source, None);
        assert_eq!(obs.start_source.as_deref(), Some("resume"));
    }

    #[test]
    fn unexpected_value_types_are_skipped_not_fatal() {
        // A future version might send `model` as an object: the event still counts.
        let payload = br#"{"session_id":"s","hook_event_name":"SessionStart","model":{"id":"m","display_name":"M"},"cwd":null,"source":["x"]}"#;
        let obs = observation_from_payload(payload, Some(Agent::Claude), None, at()).unwrap();
        assert_eq!(obs.event, EventKind::SessionStart);
        assert_eq!(obs.model, None);
        assert_eq!(obs.cwd, None);
        assert_eq!(obs.start_source, None);
    }

    #[test]
    fn the_flag_wins_then_the_payload_then_the_process() {
        let bare = br#"{"session_id":"s","hook_event_name":"Stop"}"#;
        let obs = |hint, walked| observation_from_payload(bare, hint, walked, at()).unwrap();
        let got = obs(None, Some((42, Agent::Codex)));
        assert_eq!((got.agent, got.pid), (Agent::Codex, Some(42)));
        let got = obs(Some(Agent::Claude), Some((42, Agent::Codex)));
        assert_eq!(
            (got.agent, got.pid),
            (Agent::Claude, None),
            "never the other agent's pid"
        );
        assert_eq!(obs(None, None).agent, Agent::Claude);
        let codex = br#"{"session_id":"s","hook_event_name":"Stop","turn_id":"t"}"#;
        let got = observation_from_payload(codex, None, Some((7, Agent::Claude)), at()).unwrap();
        assert_eq!(
            got.agent,
            Agent::Codex,
            "the payload outranks the process walk"
        );
        assert_eq!(got.pid, None);
    }

    #[test]
    fn only_stop_failure_keeps_its_error_and_long_strings_are_capped() {
        let fail = br#"{"session_id":"s","hook_event_name":"StopFailure","error":"rate_limit"}"#;
        let obs = observation_from_payload(fail, Some(Agent::Claude), None, at()).unwrap();
        assert_eq!(
            obs.error.as_deref(),
            Some("rate limit reached (rate_limit)")
        );
        let tool = br#"{"session_id":"s","hook_event_name":"PostToolUseFailure","error":"secret output of the command","tool_name":"Bash"}"#;
        let obs = observation_from_payload(tool, Some(Agent::Claude), None, at()).unwrap();
        assert_eq!(
            obs.error, None,
            "a tool's error text is its output: never kept"
        );
        let long = format!(
            r#"{{"session_id":"s","hook_event_name":"Stop","cwd":"/{}é"}}"#,
            "a".repeat(5000)
        );
        let obs =
            observation_from_payload(long.as_bytes(), Some(Agent::Claude), None, at()).unwrap();
        assert!(obs.cwd.unwrap().len() <= MAX_PATH);
    }

    #[test]
    fn subagent_events_carry_the_agent_id() {
        let p = br#"{"session_id":"s","hook_event_name":"PreToolUse","agent_id":"a1","agent_type":"Explore","tool_name":"Read"}"#;
        let obs = observation_from_payload(p, Some(Agent::Claude), None, at()).unwrap();
        assert_eq!(obs.subagent_id.as_deref(), Some("a1"));
    }
}
