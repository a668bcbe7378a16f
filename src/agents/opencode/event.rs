//! OpenCode's bus events, as our plugin forwards them to `agent-tray hook --agent opencode`,
//! turned into observations: a pure function, tested on the events OpenCode 1.18.33 was
//! recorded emitting (`tests/fixtures/opencode/`).
//!
//! The plugin sends one JSON object per event on the hook's stdin:
//! `{"v":1,"pid":N,"directory":"…","ts":<epoch ms>,"type":"session.status","properties":{…}}`
//! with only the properties below kept (never a prompt or a reply; a command only in a
//! permission request, which the user reads before answering it: see [`ask_call`]).
//!
//! Mapping (recorded order and meanings in the fixture's README):
//! - `session.created` → SessionStart (at the first prompt; none on `--continue`, where the
//!   first status event makes the session instead).
//! - `session.status` `busy` → working (it repeats within a turn: a level, not an edge);
//!   `retry` → working, with the retry's message shown as what the turn waits for;
//!   `idle` and `session.idle` → idle (both arrive, sometimes twice: the registry's "quiet").
//! - `permission.asked` → waiting for permission; `permission.replied` → working (the tool runs,
//!   or after `reject` the idle that follows at once ends the turn).
//! - `question.asked` → waiting for input; `question.replied` / `question.rejected` → working.
//! - Asks and replies are paired by request id (`permission.asked.id` =
//!   `permission.replied.requestID`). OpenCode asks several at once when the model calls tools in
//!   parallel, and they are answered one by one: a reply that leaves requests open keeps the
//!   session waiting (for the newest one still open), and a reply to an id that was never asked,
//!   or was answered already, changes nothing. The pairing needs every ask and reply in order,
//!   which only the plugin sees (each event runs a hook process of its own, and the engine's
//!   rules are the same for every agent), so the plugin keeps the open requests and adds to a
//!   reply whether its id was open (`known`) and which stay open (`pending`). A plugin written by
//!   an older install sends neither: its replies end the wait, as before (`doctor` says it is
//!   out of date).
//! - `session.error` → the turn failed (its error's name and message), except
//!   `MessageAbortedError`, which is the user's Esc Esc: an interrupt.
//! - `session.deleted` → ended.
//!
//! Answering: for `permission.asked` the plugin also keeps what is asked (`patterns`, the
//! `metadata` fields a person reads, `always`, the tool call's id) and reads the hook's stdout;
//! [`ask_call`] makes the ask, and the hook prints `{"reply":"once"|"always"|"reject"}`, which
//! the plugin gives to OpenCode's own API. OpenCode's dialog stays usable meanwhile: the first
//! answer wins, and a reply in the terminal ends the plugin's wait (it kills that hook).
//!
//! The plugin's `ts` stamps the observation: each event runs its own hook process, and two of
//! them (busy, then idle 40 ms later) may reach the engine in either order.

use chrono::{DateTime, TimeZone, Utc};
use serde::Deserialize;

use crate::model::{Agent, EventKind, Observation, ReportedStatus, Source};

/// The bus events the plugin forwards (every other type is dropped in the plugin itself).
pub const FORWARDED: [&str; 11] = [
    "session.created",
    "session.status",
    "session.idle",
    "session.error",
    "session.deleted",
    "permission.asked",
    "permission.replied",
    "question.asked",
    "question.replied",
    "question.rejected",
    "server.instance.disposed",
];

const MAX_SHORT: usize = 256;
const MAX_PATH: usize = 4096;
const MAX_TEXT: usize = 1024;

/// Why a forwarded event gave no observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenCodeEventError {
    #[error("the OpenCode event is not a JSON object ({0})")]
    NotAnEvent(String),
    #[error("the OpenCode event {0:?} names no session")]
    NoSession(String),
    #[error("unknown OpenCode event {0:?}")]
    UnknownEvent(String),
    #[error("OpenCode event {0:?} says nothing about a session's state")]
    KnownIgnored(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Forwarded {
    pid: Option<u32>,
    directory: Option<String>,
    ts: Option<i64>,
    #[serde(rename = "type")]
    kind: String,
    properties: Props,
    /// On a reply: whether its request id was open (the plugin's pairing).
    known: Option<bool>,
    /// On an ask or a reply: the session's requests still open after it, oldest first.
    pending: Option<Vec<Pending>>,
}

/// A request still waiting for the user, as the plugin lists it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Pending {
    #[serde(rename = "type")]
    kind: Option<String>,
    permission: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Props {
    #[serde(rename = "sessionID")]
    session_id: Option<String>,
    info: Option<Info>,
    status: Option<Status>,
    permission: Option<String>,
    reply: Option<String>,
    error: Option<ErrorInfo>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Info {
    id: Option<String>,
    directory: Option<String>,
    title: Option<String>,
    #[serde(rename = "parentID")]
    parent_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Status {
    #[serde(rename = "type")]
    kind: Option<String>,
    attempt: Option<u32>,
    message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorInfo {
    name: Option<String>,
    data: Option<ErrorData>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorData {
    message: Option<String>,
}

/// A forwarded bus event as the hook reports it (OpenCode's and Kilo's, whose plugins are one).
pub fn hook_call(agent: Agent, payload: &[u8], at: DateTime<Utc>) -> crate::agents::OwnHookCall {
    use crate::agents::OwnHookCall;
    match parse(agent, payload, at) {
        Ok(obs) => OwnHookCall::Observation(Box::new(obs)),
        Err(OpenCodeEventError::UnknownEvent(e)) => OwnHookCall::Unknown(e),
        Err(OpenCodeEventError::KnownIgnored(_)) => OwnHookCall::Ignored,
        Err(e) => OwnHookCall::Invalid(e.to_string()),
    }
}

/// An observation from one forwarded event, for `agent` (the registered OpenCode agent).
/// `now` stamps an event the plugin sent without `ts`.
pub fn parse(
    agent: Agent,
    payload: &[u8],
    now: DateTime<Utc>,
) -> Result<Observation, OpenCodeEventError> {
    let f: Forwarded = serde_json::from_slice(payload)
        .map_err(|e| OpenCodeEventError::NotAnEvent(cap(e.to_string(), MAX_SHORT)))?;
    let p = f.properties;
    let kind = f.kind.as_str();
    let is_reply = matches!(
        kind,
        "permission.replied" | "question.replied" | "question.rejected"
    );
    // A reply to a request the plugin never saw open (answered already, or asked before it
    // loaded) says nothing about this session's wait.
    if is_reply && f.known == Some(false) {
        return Err(OpenCodeEventError::KnownIgnored(kind.to_string()));
    }
    // A reply that leaves requests open: the session still waits, for the newest one.
    let still_open = if is_reply {
        f.pending.unwrap_or_default().pop()
    } else {
        None
    };
    let info_id = p.info.as_ref().and_then(|i| i.id.clone());
    let session_id = p
        .session_id
        .clone()
        .or(info_id)
        .filter(|s| !s.trim().is_empty());
    let ignored = || OpenCodeEventError::KnownIgnored(kind.to_string());
    let mut status = None;
    let mut waiting_for = None;
    let mut tool = None;
    let mut error = None;
    let mut title = None;
    let mut cwd = f.directory.map(|d| cap(d, MAX_PATH));
    let event = match (kind, still_open) {
        (_, Some(open)) => {
            if open.kind.as_deref() == Some("question") {
                waiting_for = Some("an answer to a question".to_string());
                EventKind::Elicitation
            } else {
                tool = open.permission.map(|t| cap(t, MAX_SHORT));
                EventKind::PermissionRequest
            }
        }
        ("session.created", None) => {
            let info = p.info.unwrap_or_default();
            // A subagent's child session (the `task` tool) is not a session of its own here.
            if info.parent_id.is_some() {
                return Err(ignored());
            }
            title = info.title.map(|t| cap(t, MAX_TEXT));
            if let Some(d) = info.directory {
                cwd = Some(cap(d, MAX_PATH));
            }
            EventKind::SessionStart
        }
        ("session.status", None) => {
            let s = p.status.unwrap_or_default();
            match s.kind.as_deref() {
                Some("busy") => {
                    status = Some(ReportedStatus::Busy);
                    EventKind::StatusReport
                }
                Some("idle") => EventKind::Stop,
                Some("retry") => {
                    status = Some(ReportedStatus::Busy);
                    let attempt = s
                        .attempt
                        .map(|a| format!(" (attempt {a})"))
                        .unwrap_or_default();
                    let message = s.message.unwrap_or_else(|| "the model".to_string());
                    waiting_for = Some(cap(format!("retrying{attempt}: {message}"), MAX_TEXT));
                    EventKind::StatusReport
                }
                _ => return Err(ignored()),
            }
        }
        ("session.idle", None) => EventKind::Stop,
        ("session.error", None) => {
            let e = p.error.unwrap_or_default();
            if e.name.as_deref() == Some("MessageAbortedError") {
                EventKind::Interrupt
            } else {
                let message = e.data.and_then(|d| d.message);
                error = Some(cap(
                    match (e.name, message) {
                        (Some(n), Some(m)) => format!("{m} ({n})"),
                        (None, Some(m)) => m,
                        (Some(n), None) => n,
                        (None, None) => "the turn failed".to_string(),
                    },
                    MAX_TEXT,
                ));
                EventKind::StopFailure
            }
        }
        ("session.deleted", None) => EventKind::SessionEnd,
        ("permission.asked", None) => {
            tool = p.permission.map(|t| cap(t, MAX_SHORT));
            EventKind::PermissionRequest
        }
        ("permission.replied", None) => {
            let _ = p.reply;
            tool = p.permission.map(|t| cap(t, MAX_SHORT));
            EventKind::PreToolUse
        }
        ("question.asked", None) => {
            waiting_for = Some("an answer to a question".to_string());
            EventKind::Elicitation
        }
        ("question.replied" | "question.rejected", None) => EventKind::ElicitationResult,
        ("server.instance.disposed", None) => return Err(ignored()),
        (other, None) => {
            return Err(OpenCodeEventError::UnknownEvent(cap(
                other.to_string(),
                MAX_SHORT,
            )))
        }
    };
    let session_id = session_id.ok_or_else(|| OpenCodeEventError::NoSession(kind.to_string()))?;
    let at =
        f.ts.and_then(|ms| Utc.timestamp_millis_opt(ms).single())
            .unwrap_or(now);
    let mut obs =
        Observation::new(cap(session_id, MAX_SHORT), agent, event, at).with_source(Source::Hook);
    obs.pid = f.pid.filter(|p| *p > 1);
    obs.cwd = cwd;
    obs.status = status;
    obs.waiting_for = waiting_for;
    obs.tool_name = tool;
    obs.error = error;
    obs.title = title.filter(|t| !t.trim().is_empty());
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

/// What a `permission.asked` line asks, for an answer from outside the terminal: the tool (the
/// permission's name, `bash`, `edit`), what it will run or touch (the metadata's command, file
/// or URL, else the patterns), and whether "always" has anything to allow. `None` for every
/// other line, and for an input too large to show whole.
pub fn ask_call(payload: &[u8]) -> Option<crate::answering::AskCall> {
    use crate::answering::{AskCall, AskDetail, MAX_INPUT_BYTES};
    use serde_json::Value;
    let line: Value = serde_json::from_slice(payload).ok()?;
    if line.get("type").and_then(Value::as_str) == Some("question.asked") {
        return question_call(&line);
    }
    if line.get("type").and_then(Value::as_str) != Some("permission.asked") {
        return None;
    }
    let p = line.get("properties")?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let request_id = text(p.get("id"))?;
    let tool = text(p.get("permission")).filter(|t| !t.trim().is_empty())?;
    let metadata = p.get("metadata").cloned().unwrap_or(Value::Null);
    let patterns = p.get("patterns").cloned().unwrap_or(Value::Null);
    let input = serde_json::json!({"patterns": patterns, "metadata": metadata});
    let input_text = serde_json::to_string(&input).ok()?;
    if input_text.len() > MAX_INPUT_BYTES {
        return None;
    }
    let field = |keys: &[&str]| keys.iter().find_map(|k| text(metadata.get(*k)));
    let joined_patterns = patterns.as_array().map(|list| {
        list.iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    });
    let command =
        field(&["command"]).or_else(|| (tool == "bash").then_some(joined_patterns).flatten());
    let call_id = p
        .get("tool")
        .and_then(|t| text(t.get("callID")))
        .unwrap_or(request_id);
    let for_session = always_grant(p, &tool);
    Some(AskCall {
        call_id,
        input_digest: crate::answering::asked_digest(&tool, &input_text, for_session.as_ref()),
        suggests_for_session: for_session
            .as_ref()
            .is_some_and(crate::answering::SessionGrant::is_offered),
        detail: AskDetail {
            for_session,
            command,
            file_path: field(&["filepath", "filePath", "path"]),
            change_bytes: field(&["diff"]).map(|d| d.len() as u64),
            url: field(&["url"]),
            description: field(&["description"]),
            cwd: text(line.get("directory")),
            input: input_text,
            tool,
            questions: None,
        },
    })
}

/// What a `question.asked` line asks (OpenCode's question tool: `questions[{question, header,
/// options[{label, description}], multiple}]`; its dialog adds "Type your own answer" unless a
/// question says `custom: false`). `None` where the plugin could not forward them whole, or they
/// cannot be answered exactly as asked (an empty or repeated label, no option, a blank question).
fn question_call(line: &serde_json::Value) -> Option<crate::answering::AskCall> {
    use crate::answering::{AskCall, AskDetail, Question, QuestionOption, MAX_INPUT_BYTES};
    use agent_tray_domain::question::{MAX_OPTIONS, MAX_QUESTIONS};
    use serde_json::Value;
    let p = line.get("properties")?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let request_id = text(p.get("id"))?;
    if p.get("questionsWhole").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    let list = p.get("questions")?.as_array()?;
    if list.is_empty() || list.len() > MAX_QUESTIONS {
        return None;
    }
    let mut asked: Vec<Question> = Vec::with_capacity(list.len());
    for q in list {
        let question = text(q.get("question")).filter(|t| !t.trim().is_empty())?;
        let options = q.get("options")?.as_array()?;
        if options.is_empty() || options.len() > MAX_OPTIONS {
            return None;
        }
        let mut parsed: Vec<QuestionOption> = Vec::with_capacity(options.len());
        for o in options {
            let label = text(o.get("label")).filter(|l| !l.trim().is_empty())?;
            if parsed.iter().any(|p| p.label == label) {
                return None;
            }
            parsed.push(QuestionOption {
                label,
                description: text(o.get("description")),
            });
        }
        asked.push(Question {
            question,
            header: text(q.get("header")),
            options: parsed,
            multi_select: q.get("multiple").and_then(Value::as_bool).unwrap_or(false),
            allows_other: q.get("custom").and_then(Value::as_bool).unwrap_or(true),
        });
    }
    let input_text =
        serde_json::to_string(&serde_json::json!({"questions": p.get("questions")})).ok()?;
    if input_text.len() > MAX_INPUT_BYTES {
        return None;
    }
    let tool = "question".to_string();
    let call_id = p
        .get("tool")
        .and_then(|t| text(t.get("callID")))
        .unwrap_or(request_id);
    Some(AskCall {
        call_id,
        input_digest: crate::answering::digest(&tool, &input_text),
        suggests_for_session: false,
        detail: AskDetail {
            tool,
            cwd: text(line.get("directory")),
            input: input_text,
            questions: Some(asked),
            ..AskDetail::default()
        },
    })
}

/// What OpenCode's "always" would allow: each of its `always` patterns, for this session.
/// `None` where it suggests none; withheld where the plugin could not forward them whole (one
/// not a string, or more than it forwards: `alwaysWhole` false), since "always" grants
/// OpenCode's whole list, not the part shown.
fn always_grant(p: &serde_json::Value, tool: &str) -> Option<crate::answering::SessionGrant> {
    use crate::answering::{GrantItem, GrantKind, SessionGrant};
    use agent_tray_domain::visible::visible_line;
    use serde_json::Value;
    let always = p.get("always")?;
    if p.get("alwaysWhole").and_then(Value::as_bool) == Some(false) {
        return Some(SessionGrant::withheld(
            "OpenCode's patterns could not all be shown",
        ));
    }
    let Some(list) = always.as_array() else {
        return Some(SessionGrant::withheld("OpenCode's patterns are not a list"));
    };
    if list.is_empty() {
        return None;
    }
    let tool = visible_line(tool);
    let items: Option<Vec<GrantItem>> = list
        .iter()
        .map(|pattern| {
            pattern.as_str().map(|pattern| GrantItem {
                kind: GrantKind::Patterns,
                text: format!(
                    "allow `{tool}` calls matching `{}` for this session",
                    visible_line(pattern)
                ),
            })
        })
        .collect();
    Some(match items {
        Some(items) => SessionGrant::of(items),
        None => SessionGrant::withheld("one of OpenCode's patterns is not text"),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const FIXTURE: &str =
        include_str!("../../../tests/fixtures/opencode/real-1.18.33/events.jsonl");

    fn now() -> DateTime<Utc> {
        Utc.timestamp_millis_opt(1_796_000_000_000)
            .single()
            .unwrap_or_default()
    }

    /// The recorded events, as our plugin would forward them (the recorder kept the same
    /// `type`/`properties`, the pid and the time).
    fn forwarded() -> Vec<(String, Vec<u8>)> {
        FIXTURE
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["kind"] == "event")
            .filter(|v| FORWARDED.contains(&v["type"].as_str().unwrap_or("")))
            .map(|v| {
                let body = serde_json::json!({
                    "v": 1, "pid": v["pid"], "directory": "/home/dev/proj", "ts": v["ts"],
                    "type": v["type"], "properties": v["properties"],
                });
                (
                    v["type"].as_str().unwrap_or("").to_string(),
                    serde_json::to_vec(&body).expect("json"),
                )
            })
            .collect()
    }

    #[test]
    fn the_recorded_turn_maps_onto_start_working_permission_working_idle() {
        let mut seen = Vec::new();
        for (_, body) in forwarded() {
            match parse(Agent::Claude, &body, now()) {
                Ok(obs) => {
                    let label = match (obs.event, obs.status) {
                        (EventKind::StatusReport, Some(ReportedStatus::Busy)) => "busy",
                        (EventKind::SessionStart, _) => "start",
                        (EventKind::PermissionRequest, _) => "ask",
                        (EventKind::PreToolUse, _) => "replied",
                        (EventKind::Stop, _) => "idle",
                        (EventKind::Interrupt, _) => "interrupt",
                        _ => "other",
                    };
                    if seen.last() != Some(&label) {
                        seen.push(label);
                    }
                }
                Err(OpenCodeEventError::KnownIgnored(_)) => {}
                Err(e) => panic!("a recorded event was refused: {e}"),
            }
        }
        // Scenario A: created, busy, permission asked, approved, busy, idle.
        assert_eq!(
            &seen[..6],
            &["start", "busy", "ask", "replied", "busy", "idle"],
            "{seen:?}"
        );
    }

    #[test]
    fn every_forwarded_event_names_its_session_pid_and_time() {
        for (kind, body) in forwarded() {
            let Ok(obs) = parse(Agent::Claude, &body, now()) else {
                continue;
            };
            assert!(
                obs.session_id.starts_with("ses_"),
                "{kind}: {}",
                obs.session_id
            );
            assert!(obs.pid.is_some(), "{kind}: the plugin's process.pid");
            assert_ne!(obs.at, now(), "{kind}: stamped by the plugin's ts");
        }
    }

    #[test]
    fn a_retry_is_working_with_the_retry_shown() {
        let body = br#"{"pid":7,"ts":1796000000000,"type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"retry","attempt":2,"message":"Cannot connect to API","next":1}}}"#;
        let obs = parse(Agent::Claude, body, now()).expect("retry");
        assert_eq!(obs.status, Some(ReportedStatus::Busy));
        assert_eq!(
            obs.waiting_for.as_deref(),
            Some("retrying (attempt 2): Cannot connect to API")
        );
    }

    #[test]
    fn esc_esc_is_an_interrupt_and_other_errors_fail_the_turn() {
        let abort = br#"{"pid":7,"type":"session.error","properties":{"sessionID":"ses_1","error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}}"#;
        assert_eq!(
            parse(Agent::Claude, abort, now()).expect("abort").event,
            EventKind::Interrupt
        );
        let fail = br#"{"pid":7,"type":"session.error","properties":{"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"bad key"}}}}"#;
        let obs = parse(Agent::Claude, fail, now()).expect("error");
        assert_eq!(obs.event, EventKind::StopFailure);
        assert_eq!(obs.error.as_deref(), Some("bad key (APIError)"));
        assert_eq!(obs.at, now(), "no ts: stamped on arrival");
    }

    #[test]
    fn a_question_is_a_wait_for_input_and_its_answer_resumes_the_turn() {
        let ask =
            br#"{"pid":7,"type":"question.asked","properties":{"sessionID":"ses_1","id":"que_1"}}"#;
        assert_eq!(
            parse(Agent::Claude, ask, now()).expect("ask").event,
            EventKind::Elicitation
        );
        let reply = br#"{"pid":7,"type":"question.replied","properties":{"sessionID":"ses_1","requestID":"que_1"}}"#;
        assert_eq!(
            parse(Agent::Claude, reply, now()).expect("reply").event,
            EventKind::ElicitationResult
        );
    }

    /// The recorded ask and reply of scenario A, as the plugin forwards them with its pairing.
    fn paired(kind: &str, id: &str, known: Option<bool>, pending: &str) -> Vec<u8> {
        let (id_key, extra) = if kind.ends_with(".asked") {
            (
                "id",
                r#","permission":"bash","patterns":["echo hello-from-mock > tool_ran.txt"]"#,
            )
        } else {
            ("requestID", r#","reply":"once""#)
        };
        let known = known
            .map(|k| format!(r#","known":{k}"#))
            .unwrap_or_default();
        format!(
            r#"{{"v":1,"pid":7723,"directory":"/p","ts":1796082597546,"type":"{kind}","properties":{{"sessionID":"ses_dd1229c72ffen4TkoQjVFBx9Vv","{id_key}":"{id}"{extra}}}{known},"pending":{pending}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn a_reply_that_leaves_requests_open_keeps_the_session_waiting_for_the_newest() {
        // Two bash calls asked at once; the first answered: the session still waits for the
        // second. The last answered: working.
        let body = paired(
            "permission.replied",
            "per_22edd7d6b001QoDrnGEiFEJpPJ",
            Some(true),
            r#"[{"type":"permission","permission":"edit"},{"type":"permission","permission":"bash"}]"#,
        );
        let obs = parse(Agent::Claude, &body, now()).expect("still waiting");
        assert_eq!(obs.event, EventKind::PermissionRequest);
        assert_eq!(
            obs.tool_name.as_deref(),
            Some("bash"),
            "the newest open one"
        );
        let body = paired(
            "permission.replied",
            "per_22edd7d6b001QoDrnGEiFEJpPJ",
            Some(true),
            r#"[{"type":"question"}]"#,
        );
        let obs = parse(Agent::Claude, &body, now()).expect("a question still open");
        assert_eq!(obs.event, EventKind::Elicitation);
        let last = paired(
            "permission.replied",
            "per_22edd7d6b001QoDrnGEiFEJpPJ",
            Some(true),
            "[]",
        );
        assert_eq!(
            parse(Agent::Claude, &last, now()).expect("answered").event,
            EventKind::PreToolUse
        );
        let answer = br#"{"pid":7,"type":"question.replied","properties":{"sessionID":"ses_1","requestID":"que_2"},"known":true,"pending":[{"type":"question"}]}"#;
        assert_eq!(
            parse(Agent::Claude, answer, now())
                .expect("another question")
                .event,
            EventKind::Elicitation
        );
    }

    #[test]
    fn a_reply_to_a_request_never_open_changes_nothing() {
        for kind in [
            "permission.replied",
            "question.replied",
            "question.rejected",
        ] {
            let body = paired(kind, "per_old", Some(false), "[]");
            assert!(
                matches!(
                    parse(Agent::Claude, &body, now()),
                    Err(OpenCodeEventError::KnownIgnored(_))
                ),
                "{kind}"
            );
        }
        // Positive control, and an older plugin (no pairing): the reply ends the wait.
        let old_plugin = paired("permission.replied", "per_1", None, "[]");
        assert_eq!(
            parse(Agent::Claude, &old_plugin, now())
                .expect("old plugin")
                .event,
            EventKind::PreToolUse
        );
        // An ask lists itself among the open requests: still the ask.
        let ask = paired(
            "permission.asked",
            "per_2",
            None,
            r#"[{"type":"permission","permission":"bash"}]"#,
        );
        let obs = parse(Agent::Claude, &ask, now()).expect("ask");
        assert_eq!(obs.event, EventKind::PermissionRequest);
        assert_eq!(obs.tool_name.as_deref(), Some("bash"));
    }

    #[test]
    fn a_subagents_child_session_and_sessionless_events_make_no_session() {
        let child = br#"{"pid":7,"type":"session.created","properties":{"info":{"id":"ses_2","parentID":"ses_1"}}}"#;
        assert!(matches!(
            parse(Agent::Claude, child, now()),
            Err(OpenCodeEventError::KnownIgnored(_))
        ));
        let none = br#"{"pid":7,"type":"session.idle","properties":{}}"#;
        assert!(matches!(
            parse(Agent::Claude, none, now()),
            Err(OpenCodeEventError::NoSession(_))
        ));
        assert!(matches!(
            parse(
                Agent::Claude,
                br#"{"type":"todo.updated","properties":{}}"#,
                now()
            ),
            Err(OpenCodeEventError::UnknownEvent(_))
        ));
        assert!(matches!(
            parse(Agent::Claude, b"[", now()),
            Err(OpenCodeEventError::NotAnEvent(_))
        ));
    }

    // The ask made from a recorded `permission.asked` (the plugin keeps these fields): the
    // command as OpenCode shows it, the call's id, "always" offered because OpenCode suggests a
    // rule; a reply, another event or a permission without a name asks nothing.
    #[test]
    fn a_recorded_permission_ask_shows_its_command_and_offers_always() {
        let line = br#"{"v":1,"pid":7,"directory":"/w/api","ts":1764500000000,"type":"permission.asked","properties":{"id":"per_22edd7d6b001QoDrnGEiFEJpPJ","sessionID":"ses_dd1229c72ffen4TkoQjVFBx9Vv","permission":"bash","patterns":["echo hello-from-mock > tool_ran.txt"],"metadata":{"command":"echo hello-from-mock > tool_ran.txt"},"always":["echo *"],"tool":{"messageID":"msg_22edd6679001HZAonb7A2lfM2e","callID":"call_mock_2"}}}"#;
        let call = ask_call(line).unwrap();
        assert_eq!(call.detail.tool, "bash");
        assert_eq!(
            call.detail.command.as_deref(),
            Some("echo hello-from-mock > tool_ran.txt")
        );
        assert_eq!(call.detail.cwd.as_deref(), Some("/w/api"));
        assert_eq!(call.call_id, "call_mock_2");
        assert!(call.suggests_for_session);
        assert!(call.detail.input.contains("tool_ran.txt"));
        // Other input is another request.
        let other = String::from_utf8_lossy(line).replace("hello-from-mock", "other");
        assert_ne!(
            ask_call(other.as_bytes()).unwrap().input_digest,
            call.input_digest
        );
        let replied =
            String::from_utf8_lossy(line).replace("permission.asked", "permission.replied");
        assert!(ask_call(replied.as_bytes()).is_none());
        let nameless = String::from_utf8_lossy(line).replace(r#""permission":"bash","#, "");
        assert!(ask_call(nameless.as_bytes()).is_none());
        assert!(ask_call(b"not json").is_none());
    }

    // OpenCode's "always" grants its whole `always` list: each pattern is shown in words, and
    // where the plugin could not forward the whole list (one not text, more than it forwards)
    // there is no session grant at all.
    #[test]
    fn always_says_each_pattern_it_would_allow_or_is_withheld_when_not_all_are_shown() {
        let line = |always: &str| {
            format!(
                r#"{{"v":1,"pid":7,"directory":"/w","ts":1,"type":"permission.asked","properties":{{"id":"per_1","sessionID":"ses_1","permission":"bash","patterns":["echo hi"],"metadata":{{"command":"echo hi"}},{always},"tool":{{"callID":"c1"}}}}}}"#
            )
        };
        let call =
            ask_call(line(r#""always":["echo *","ls\n*"],"alwaysWhole":true"#).as_bytes()).unwrap();
        let grant = call.detail.for_session.unwrap();
        let texts: Vec<&str> = grant.items.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "allow `bash` calls matching `echo *` for this session",
                "allow `bash` calls matching `ls⏎*` for this session"
            ]
        );
        assert!(call.suggests_for_session);
        let cut = ask_call(line(r#""always":["echo *"],"alwaysWhole":false"#).as_bytes()).unwrap();
        assert!(!cut.suggests_for_session);
        assert!(cut.detail.for_session.is_some_and(|g| g.withheld.is_some()));
        let odd = ask_call(line(r#""always":["echo *", 3]"#).as_bytes()).unwrap();
        assert!(!odd.suggests_for_session);
        let none = ask_call(line(r#""always":[]"#).as_bytes()).unwrap();
        assert_eq!(none.detail.for_session, None);
    }
}
