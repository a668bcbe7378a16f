//! The app-server's JSON-RPC, as this feed speaks it: the messages it reads from the server
//! ([`ServerMessage`], parsed by [`parse_server_message`], never panicking on what the server
//! sends) and the requests it sends ([`ClientRequest`]). Pure: no socket, no thread state.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};

/// A thread's status as the server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadStatus {
    NotLoaded,
    Idle,
    SystemError,
    Active {
        waiting_on_approval: bool,
        waiting_on_user_input: bool,
    },
    /// A status this version does not know.
    Unknown(String),
}

/// Token counts of `thread/tokenUsage/updated` (the thread's running total).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AppServerTokenUsage {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_output_tokens: u64,
    pub total_tokens: u64,
    pub model_context_window: Option<u64>,
    /// The last turn's `totalTokens` (`tokenUsage.last`): what the context window holds.
    pub last_turn_tokens: Option<u64>,
}

/// How a turn ended (`turn/completed`'s `turn.status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    Completed,
    Interrupted,
    Failed(String),
    Other(String),
}

/// What one message from the server says, as far as sessions are concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    /// A reply to one of our requests.
    Response {
        id: u64,
        result: Option<Value>,
        error: Option<String>,
    },
    ThreadStarted {
        thread_id: String,
        cwd: Option<String>,
        /// Hidden helper threads (title generation): never a session.
        ephemeral: bool,
        /// A subagent's thread: its activity belongs to the parent.
        has_parent: bool,
    },
    ThreadStatus {
        thread_id: String,
        status: ThreadStatus,
        at: Option<DateTime<Utc>>,
    },
    ThreadClosed {
        thread_id: String,
        at: Option<DateTime<Utc>>,
    },
    TurnStarted {
        thread_id: String,
        /// The turn's id (`turn.id`): what `turn/interrupt` names.
        turn_id: Option<String>,
        at: Option<DateTime<Utc>>,
    },
    TurnCompleted {
        thread_id: String,
        end: TurnEnd,
        at: Option<DateTime<Utc>>,
    },
    TokenUsage {
        thread_id: String,
        usage: AppServerTokenUsage,
        at: Option<DateTime<Utc>>,
    },
    Hook {
        thread_id: String,
        event_name: Option<String>,
        completed: bool,
        at: Option<DateTime<Utc>>,
    },
    /// `item/tool/requestUserInput`: the model asks the user (Plan mode), and the server asks
    /// every client subscribed to the thread; the first answer wins.
    UserInputRequest {
        /// The server's id for the request, echoed in the reply (a number in 0.171).
        request_id: Value,
        thread_id: String,
        /// The tool call's id (`itemId`).
        item_id: Option<String>,
        questions: Vec<ServerQuestion>,
    },
    /// `item/commandExecution/requestApproval`: a command waits for the user's approval; the
    /// server asks every client subscribed to the thread while the TUI shows its own dialog.
    CommandApproval {
        request_id: Value,
        thread_id: String,
        item_id: Option<String>,
        /// What runs, as the server will run it (`/bin/bash -lc '…'`).
        command: String,
        cwd: Option<String>,
        /// The model's reason for it.
        reason: Option<String>,
        /// The plain decisions the server offers for it (`accept`, `decline`, `cancel`…).
        decisions: Vec<String>,
    },
    /// `serverRequest/resolved`: a request of the server was answered (by any client).
    RequestResolved {
        thread_id: String,
        request_id: Value,
    },
    /// Anything else (deltas, items, account news, requests to clients).
    Other,
}

/// One question of `item/tool/requestUserInput`, as the server sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerQuestion {
    /// The model's id for it: the answer is keyed by it.
    pub id: String,
    pub header: Option<String>,
    pub question: String,
    /// Whether the user may answer in words of their own (Codex's "None of the above").
    pub is_other: bool,
    /// A secret (a password): the terminal hides what is typed.
    pub is_secret: bool,
    /// Each option's label and description.
    pub options: Vec<(String, Option<String>)>,
}

/// Why a frame is not a message.
#[derive(Debug, thiserror::Error)]
#[error("not a JSON-RPC message from the Codex app-server: {0}")]
pub struct NotAMessage(String);

pub(super) fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Parses one text frame. Tolerant: unknown methods and missing fields are [`ServerMessage::Other`];
/// only a frame that is not a JSON object is an error.
pub fn parse_server_message(text: &str) -> Result<ServerMessage, NotAMessage> {
    let v: Value = serde_json::from_str(text).map_err(|e| NotAMessage(e.to_string()))?;
    if !v.is_object() {
        return Err(NotAMessage("not an object".into()));
    }
    let at = v
        .get("emittedAtMs")
        .and_then(Value::as_i64)
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
    let Some(method) = v.get("method").and_then(Value::as_str) else {
        return Ok(match v.get("id").and_then(Value::as_u64) {
            Some(id) => ServerMessage::Response {
                id,
                result: v.get("result").cloned(),
                error: v
                    .get("error")
                    .map(|e| str_of(e, "message").unwrap_or_else(|| e.to_string())),
            },
            None => ServerMessage::Other,
        });
    };
    let params = v.get("params").cloned().unwrap_or(Value::Null);
    let thread_id = str_of(&params, "threadId");
    // A request from the server to us: a question is answered from here; approvals still go
    // through the hook.
    if let Some(request_id) = v.get("id") {
        return Ok(match (method, thread_id) {
            ("item/tool/requestUserInput", Some(thread_id)) => match server_questions(&params) {
                Some(questions) => ServerMessage::UserInputRequest {
                    request_id: request_id.clone(),
                    thread_id,
                    item_id: str_of(&params, "itemId"),
                    questions,
                },
                None => ServerMessage::Other,
            },
            ("item/commandExecution/requestApproval", Some(thread_id)) => {
                match str_of(&params, "command") {
                    Some(command) => ServerMessage::CommandApproval {
                        request_id: request_id.clone(),
                        thread_id,
                        item_id: str_of(&params, "itemId"),
                        command,
                        cwd: str_of(&params, "cwd"),
                        reason: str_of(&params, "reason"),
                        decisions: params
                            .get("availableDecisions")
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(String::from)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    },
                    None => ServerMessage::Other,
                }
            }
            _ => ServerMessage::Other,
        });
    }
    Ok(match (method, thread_id) {
        ("thread/started", _) => {
            let thread = params.get("thread").cloned().unwrap_or(Value::Null);
            let Some(thread_id) = str_of(&thread, "id") else {
                return Ok(ServerMessage::Other);
            };
            let cwd = thread
                .get("environments")
                .and_then(Value::as_array)
                .and_then(|envs| envs.iter().find_map(|e| str_of(e, "cwd")))
                .or_else(|| str_of(&thread, "cwd"));
            ServerMessage::ThreadStarted {
                thread_id,
                cwd,
                ephemeral: thread.get("ephemeral").and_then(Value::as_bool) == Some(true),
                has_parent: thread.get("parentThreadId").is_some_and(|p| !p.is_null()),
            }
        }
        ("thread/status/changed", Some(thread_id)) => {
            let status = params.get("status").cloned().unwrap_or(Value::Null);
            let status = match status.get("type").and_then(Value::as_str) {
                Some("notLoaded") => ThreadStatus::NotLoaded,
                Some("idle") => ThreadStatus::Idle,
                Some("systemError") => ThreadStatus::SystemError,
                Some("active") => {
                    let flags: Vec<&str> = status
                        .get("activeFlags")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    ThreadStatus::Active {
                        waiting_on_approval: flags.contains(&"waitingOnApproval"),
                        waiting_on_user_input: flags.contains(&"waitingOnUserInput"),
                    }
                }
                other => ThreadStatus::Unknown(other.unwrap_or("").to_string()),
            };
            ServerMessage::ThreadStatus {
                thread_id,
                status,
                at,
            }
        }
        ("thread/closed", Some(thread_id)) => ServerMessage::ThreadClosed { thread_id, at },
        ("turn/started", Some(thread_id)) => ServerMessage::TurnStarted {
            thread_id,
            turn_id: params.get("turn").and_then(|t| str_of(t, "id")),
            at,
        },
        ("turn/completed", Some(thread_id)) => {
            let turn = params.get("turn").cloned().unwrap_or(Value::Null);
            let end = match turn.get("status").and_then(Value::as_str) {
                Some("completed") => TurnEnd::Completed,
                Some("interrupted") => TurnEnd::Interrupted,
                Some("failed") => TurnEnd::Failed(
                    turn.get("error")
                        .and_then(|e| str_of(e, "message"))
                        .unwrap_or_else(|| "turn failed".into()),
                ),
                other => TurnEnd::Other(other.unwrap_or("").to_string()),
            };
            ServerMessage::TurnCompleted { thread_id, end, at }
        }
        ("thread/tokenUsage/updated", Some(thread_id)) => {
            let usage = params.get("tokenUsage").cloned().unwrap_or(Value::Null);
            let total = usage.get("total").cloned().unwrap_or(Value::Null);
            ServerMessage::TokenUsage {
                thread_id,
                usage: AppServerTokenUsage {
                    input_tokens: u64_of(&total, "inputTokens"),
                    cached_input_tokens: u64_of(&total, "cachedInputTokens"),
                    output_tokens: u64_of(&total, "outputTokens"),
                    reasoning_output_tokens: u64_of(&total, "reasoningOutputTokens"),
                    total_tokens: u64_of(&total, "totalTokens"),
                    model_context_window: usage.get("modelContextWindow").and_then(Value::as_u64),
                    last_turn_tokens: usage
                        .get("last")
                        .and_then(|last| last.get("totalTokens"))
                        .and_then(Value::as_u64)
                        .filter(|tokens| *tokens > 0),
                },
                at,
            }
        }
        ("serverRequest/resolved", Some(thread_id)) => match params.get("requestId") {
            Some(request_id) if !request_id.is_null() => ServerMessage::RequestResolved {
                thread_id,
                request_id: request_id.clone(),
            },
            _ => ServerMessage::Other,
        },
        (m @ ("hook/started" | "hook/completed"), Some(thread_id)) => ServerMessage::Hook {
            thread_id,
            event_name: params.get("run").and_then(|r| str_of(r, "eventName")),
            completed: m == "hook/completed",
            at,
        },
        _ => ServerMessage::Other,
    })
}

/// The questions of a `requestUserInput`, or `None` when one is not whole (no id, no text, an
/// option without a label): such a request is left to the terminal.
fn server_questions(params: &Value) -> Option<Vec<ServerQuestion>> {
    let list = params.get("questions")?.as_array()?;
    let mut out = Vec::with_capacity(list.len());
    for q in list {
        let mut options = Vec::new();
        for o in q
            .get("options")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
        {
            options.push((str_of(o, "label")?, str_of(o, "description")));
        }
        out.push(ServerQuestion {
            id: str_of(q, "id")?,
            header: str_of(q, "header"),
            question: str_of(q, "question")?,
            is_other: q.get("isOther").and_then(Value::as_bool) == Some(true),
            is_secret: q.get("isSecret").and_then(Value::as_bool) == Some(true),
            options,
        });
    }
    Some(out)
}

/// The reply to a `requestUserInput`: each question's answer under its id, the labels chosen
/// then the user's own words. `None` (declined) sends no answers at all, which the model reads
/// as the user answering none (`{"answers":{}}`, seen with 0.171).
pub fn user_input_reply(
    request_id: &Value,
    question_ids: &[String],
    answers: Option<&[agent_tray_domain::question::QuestionAnswer]>,
) -> Value {
    let mut by_id = serde_json::Map::new();
    for (id, answer) in question_ids.iter().zip(answers.unwrap_or_default()) {
        let mut words: Vec<String> = answer.choices.clone();
        words.extend(answer.text.iter().filter(|t| !t.trim().is_empty()).cloned());
        by_id.insert(id.clone(), json!({ "answers": words }));
    }
    json!({"id": request_id, "result": {"answers": by_id}})
}

/// How a request of the server's is answered: where each answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyTo {
    /// A `requestUserInput`: the answers keyed by these question ids, in order.
    Questions { question_ids: Vec<String> },
    /// A command's approval: `accept`, or this decision for a deny (`decline` where the server
    /// offers it, else `cancel`, which also ends the turn as the TUI's Esc does).
    Approval { deny: String },
}

impl ReplyTo {
    /// The approval's deny among the decisions offered: `decline`, else `cancel`; `None` where
    /// the server offers neither (the request is then left to the terminal).
    pub fn approval(decisions: &[String]) -> Option<ReplyTo> {
        ["decline", "cancel"]
            .into_iter()
            .find(|d| decisions.iter().any(|o| o == d))
            .map(|deny| ReplyTo::Approval { deny: deny.into() })
    }
}

/// The frame that answers `request_id` with what the user decided; `None` where the decision
/// is not an answer to it (the request closed without one, or a kind it does not take).
pub fn server_reply(
    request_id: &Value,
    reply: &ReplyTo,
    decision: &crate::answering::HookDecision,
) -> Option<Value> {
    use crate::answering::HookDecision;
    match (reply, decision) {
        (ReplyTo::Questions { question_ids }, HookDecision::Answers { answers }) => {
            Some(user_input_reply(request_id, question_ids, Some(answers)))
        }
        (
            ReplyTo::Questions { question_ids },
            HookDecision::Deny { .. } | HookDecision::Dismiss,
        ) => Some(user_input_reply(request_id, question_ids, None)),
        (ReplyTo::Approval { .. }, HookDecision::Allow) => {
            Some(json!({"id": request_id, "result": {"decision": "accept"}}))
        }
        (ReplyTo::Approval { deny }, HookDecision::Deny { .. }) => {
            Some(json!({"id": request_id, "result": {"decision": deny}}))
        }
        _ => None,
    }
}

/// A request this feed sends.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientRequest {
    Initialize,
    Initialized,
    LoadedList,
    Resume(String),
    Unsubscribe(String),
    /// The thread's next prompt (`agent-tray send`): one text input item, the text whole.
    TurnStart {
        thread: String,
        text: String,
    },
    /// Ends the thread's running turn (`agent-tray stop`).
    TurnInterrupt {
        thread: String,
        turn: String,
    },
}

/// Request ids: fixed for the handshake, per thread counted from here for resumes.
pub(super) const ID_INITIALIZE: u64 = 1;
pub(super) const ID_LOADED_LIST: u64 = 2;

impl ClientRequest {
    /// The frame's JSON, with `id` for requests (none for the `initialized` notification).
    pub fn to_json(&self, id: u64) -> Value {
        match self {
            ClientRequest::Initialize => json!({
                "id": ID_INITIALIZE,
                "method": "initialize",
                "params": {
                    "clientInfo": {"name": "agent-tray", "title": "Agent Tray", "version": env!("CARGO_PKG_VERSION")},
                    "capabilities": {"experimentalApi": false},
                },
            }),
            ClientRequest::Initialized => json!({"method": "initialized"}),
            ClientRequest::LoadedList => {
                json!({"id": ID_LOADED_LIST, "method": "thread/loaded/list", "params": {}})
            }
            ClientRequest::Resume(thread) => json!({
                "id": id, "method": "thread/resume",
                "params": {"threadId": thread, "excludeTurns": true},
            }),
            ClientRequest::Unsubscribe(thread) => json!({
                "id": id, "method": "thread/unsubscribe", "params": {"threadId": thread},
            }),
            ClientRequest::TurnStart { thread, text } => json!({
                "id": id, "method": "turn/start",
                "params": {"threadId": thread, "input": [{"type": "text", "text": text}]},
            }),
            ClientRequest::TurnInterrupt { thread, turn } => json!({
                "id": id, "method": "turn/interrupt",
                "params": {"threadId": thread, "turnId": turn},
            }),
        }
    }
}
