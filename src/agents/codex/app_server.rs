//! Codex's shared background server (`codex app-server --managed-daemon`), read through its
//! control socket.
//!
//! Since 0.171 the Codex TUI starts, by default, one managed app-server per `CODEX_HOME` that
//! runs every thread, outlives every TUI and holds the threads' writer locks. Two things follow:
//!
//! - **It knows what no file says.** An approval wait is never written to the rollout, and
//!   without hooks nothing else tells it; the server broadcasts `thread/status/changed` to every
//!   connection (`active` with `waitingOnApproval` / `waitingOnUserInput`, `idle`, `systemError`,
//!   `notLoaded`) the moment it happens. So this feed connects to
//!   `$CODEX_HOME/app-server-control/app-server-control.sock` (a WebSocket over a unix socket,
//!   one JSON-RPC message a text frame), does the `initialize` / `initialized` handshake, and
//!   turns those notifications into [`Observation`]s stamped with the server's `emittedAtMs`.
//!   Turns, token usage and hook runs come only to a connection subscribed to the thread:
//!   `thread/resume` with `excludeTurns` (a thread that is running is rejoined, not reloaded)
//!   once the thread has a rollout, and `thread/unsubscribe` when its TUI is gone, so we never
//!   keep a thread loaded that nobody uses.
//! - **Its pid is nobody's session.** Observations from here carry no pid; the TUI's pid comes
//!   from the hook and rollout feeds. Since the server keeps a dead TUI's thread loaded (and its
//!   lock held) for up to a minute, the lock can no longer say the TUI died: while connected, this
//!   feed probes the pids of the Codex sessions whose threads the server holds every
//!   [`TUI_CHECK_INTERVAL`] and ends a session whose process is gone at once
//!   ([`tui_deaths`]). A thread the server runs with no terminal attached (`codex queue`, remote
//!   control) has no pid: it stays live, and is marked `headless`.
//!
//! The feed never starts a server: it connects only when the socket exists and the pid in
//! `app-server-daemon/daemon.pid` is alive, and retries with a capped backoff ([`Backoff`]).
//! While no server runs it does not poll: inotify on the folders of the socket and the pid file
//! wakes it when one starts, with a look every [`ABSENT_RECHECK`] as the safety net.
//! Parsing ([`parse_server_message`]) and every decision ([`ThreadBook::handle`], [`tui_deaths`])
//! are pure; the socket lives in [`spawn`].

use std::collections::{HashMap, HashSet};
#[cfg(unix)]
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};
#[cfg(unix)]
use tokio::task::JoinHandle;
#[cfg(unix)]
use tokio_util::sync::CancellationToken;

use crate::feeds::FeedOutput;
#[cfg(any(unix, test))]
use crate::feeds::{apply_outputs, FeedSink};
#[cfg(any(unix, test))]
use crate::model::SessionState;
use crate::model::{Agent, EndReason, EventKind, Observation, ReportedStatus, Source};
use crate::process::PidProbe;
use crate::usage::{TokenUsage, UsageKind, UsageReport};

/// The control socket under a `CODEX_HOME`.
pub const CONTROL_SOCKET: &str = "app-server-control/app-server-control.sock";
/// The managed server's pid file under a `CODEX_HOME` (JSON: `{"pid": N, …}`).
pub const DAEMON_PID_FILE: &str = "app-server-daemon/daemon.pid";
/// How often the pids of the server's threads' TUIs are probed while connected.
pub const TUI_CHECK_INTERVAL: Duration = Duration::from_millis(250);
/// The longest wait between two connection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// While no server runs (most of the time for most users), how often the feed looks again when
/// inotify said nothing: the safety net for a watch that could not be set up (no `CODEX_HOME`
/// yet, the inotify limit). A server that starts is noticed at once, by inotify on the folders
/// its socket and pid file are in.
pub const ABSENT_RECHECK: Duration = Duration::from_secs(60);
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// A connect or handshake that takes longer than this is given up (and retried).
#[cfg(unix)]
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// What `waiting_for` says for each kind of wait (the registry reads "permission" as a
/// permission wait, anything else as a wait for input).
pub const WAITING_ON_APPROVAL: &str = "permission prompt";
pub const WAITING_ON_USER_INPUT: &str = "user input";

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
    /// Anything else (deltas, items, account news, requests to clients).
    Other,
}

/// Why a frame is not a message.
#[derive(Debug, thiserror::Error)]
#[error("not a JSON-RPC message from the Codex app-server: {0}")]
pub struct NotAMessage(String);

fn str_of(v: &Value, key: &str) -> Option<String> {
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
    // A request from the server to us (approvals go to the TUI that runs the turn, not here).
    if v.get("id").is_some() {
        return Ok(ServerMessage::Other);
    }
    let params = v.get("params").cloned().unwrap_or(Value::Null);
    let thread_id = str_of(&params, "threadId");
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
        ("turn/started", Some(thread_id)) => ServerMessage::TurnStarted { thread_id, at },
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
        (m @ ("hook/started" | "hook/completed"), Some(thread_id)) => ServerMessage::Hook {
            thread_id,
            event_name: params.get("run").and_then(|r| str_of(r, "eventName")),
            completed: m == "hook/completed",
            at,
        },
        _ => ServerMessage::Other,
    })
}

/// The pid in `app-server-daemon/daemon.pid` (JSON `{"pid": N, …}`, or a bare number).
pub fn parse_daemon_pid(text: &str) -> Option<u32> {
    let text = text.trim();
    if let Ok(pid) = text.parse::<u32>() {
        return (pid > 0).then_some(pid);
    }
    let v: Value = serde_json::from_str(text).ok()?;
    let pid = u32::try_from(v.get("pid")?.as_u64()?).ok()?;
    (pid > 0).then_some(pid)
}

/// A request this feed sends.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientRequest {
    Initialize,
    Initialized,
    LoadedList,
    Resume(String),
    Unsubscribe(String),
}

/// Request ids: fixed for the handshake, per thread counted from here for resumes.
const ID_INITIALIZE: u64 = 1;
const ID_LOADED_LIST: u64 = 2;

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
        }
    }
}

/// What the feed knows about one thread of the server.
#[derive(Debug, Clone, Default)]
struct ThreadEntry {
    cwd: Option<String>,
    /// Never a session (a helper or a subagent thread).
    ignored: bool,
    /// A `thread/resume` was sent (it fails before the thread has a rollout; then retried on
    /// the next activity).
    subscribing: bool,
    subscribed: bool,
    usage: Option<AppServerTokenUsage>,
    /// Known to be a session's thread: its `thread/started` said so, or a resume answered with a
    /// thread that is neither ephemeral nor a subagent's. A thread first heard of in a status
    /// change or the loaded list may be Codex's hidden title thread, whose `thread/started` went
    /// out just before we connected: until a resume says what it is, its latest status waits in
    /// `pending` instead of becoming a ghost session.
    confirmed: bool,
    pending: Option<Observation>,
}

/// The result of handling one message.
#[derive(Debug, Default, PartialEq)]
pub struct Handled {
    pub observations: Vec<Observation>,
    pub requests: Vec<ClientRequest>,
    /// Token usage of a session's thread (its running total, which the store reduces to what is
    /// new, so the rollout feed reporting the same thread counts nothing twice).
    pub usage: Vec<UsageReport>,
}

/// The threads one connection knows, and what each message means for their sessions. Pure: the
/// time of a message without a stamp is passed in.
#[derive(Debug, Default)]
pub struct ThreadBook {
    /// At most [`MAX_THREADS`]: a server announcing more is not followed past it.
    threads: HashMap<String, ThreadEntry>,
    /// Outstanding resume requests: id → thread (one at most per thread: bounded with them).
    resumes: HashMap<u64, String>,
    next_id: u64,
    /// Sessions whose TUI is gone: no more observations from this connection. At most
    /// [`MAX_CLOSED`], oldest out first.
    closed: HashSet<String>,
    closed_order: std::collections::VecDeque<String>,
}

/// The most threads one connection follows: the registry's own live cap. The server is another
/// program on this machine; what it announces is bounded like any input.
pub const MAX_THREADS: usize = crate::registry::MAX_LIVE_SESSIONS;
/// The most ended threads remembered, so that their late events stay ignored.
pub const MAX_CLOSED: usize = 4 * MAX_THREADS;
/// The largest WebSocket message or frame read from the server; a larger one ends the connection.
pub const MAX_MESSAGE: usize = 4 << 20;

impl ThreadBook {
    pub fn new() -> Self {
        ThreadBook {
            next_id: 100,
            ..Default::default()
        }
    }

    /// The threads the server holds that may be sessions.
    pub fn session_threads(&self) -> HashSet<String> {
        self.threads
            .iter()
            .filter(|(_, e)| e.confirmed && !e.ignored)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The thread's last reported token usage.
    pub fn token_usage(&self, thread_id: &str) -> Option<AppServerTokenUsage> {
        self.threads.get(thread_id).and_then(|e| e.usage)
    }

    /// Allocates an id for a request that needs one.
    pub fn id_for(&mut self, request: &ClientRequest) -> u64 {
        match request {
            ClientRequest::Initialize => ID_INITIALIZE,
            ClientRequest::LoadedList => ID_LOADED_LIST,
            ClientRequest::Initialized => 0,
            ClientRequest::Resume(thread) => {
                self.next_id += 1;
                self.resumes.insert(self.next_id, thread.clone());
                self.next_id
            }
            ClientRequest::Unsubscribe(_) => {
                self.next_id += 1;
                self.next_id
            }
        }
    }

    /// Whether `thread_id` is followed, or there is room to follow it.
    fn room_for(&self, thread_id: &str) -> bool {
        self.threads.contains_key(thread_id) || self.threads.len() < MAX_THREADS
    }

    /// How many threads are followed.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// The TUI of `thread_id` is gone: its session is over, and we let go of the thread.
    pub fn tui_gone(&mut self, thread_id: &str) -> Option<ClientRequest> {
        if self.closed.insert(thread_id.to_string()) {
            self.closed_order.push_back(thread_id.to_string());
            while self.closed_order.len() > MAX_CLOSED {
                if let Some(oldest) = self.closed_order.pop_front() {
                    self.closed.remove(&oldest);
                }
            }
        }
        let entry = self.threads.get_mut(thread_id)?;
        let was = entry.subscribed || entry.subscribing;
        entry.subscribed = false;
        entry.subscribing = false;
        was.then(|| ClientRequest::Unsubscribe(thread_id.to_string()))
    }

    fn observation(&self, thread_id: &str, event: EventKind, at: DateTime<Utc>) -> Observation {
        let mut obs =
            Observation::new(thread_id, Agent::Codex, event, at).with_source(Source::AppServer);
        if let Some(entry) = self.threads.get(thread_id) {
            obs.cwd.clone_from(&entry.cwd);
        }
        obs
    }

    /// A thread seen active: subscribe to it (for turns, usage and hooks) if not yet.
    fn subscribe(&mut self, thread_id: &str, out: &mut Handled) {
        if let Some(entry) = self.threads.get_mut(thread_id) {
            if !entry.ignored && !entry.subscribed && !entry.subscribing {
                entry.subscribing = true;
                out.requests
                    .push(ClientRequest::Resume(thread_id.to_string()));
            }
        }
    }

    /// What `msg` means, received at `now`.
    pub fn handle(&mut self, msg: ServerMessage, now: DateTime<Utc>) -> Handled {
        let mut out = Handled::default();
        match msg {
            ServerMessage::Response { id, result, error } => {
                if id == ID_INITIALIZE && error.is_none() {
                    out.requests
                        .extend([ClientRequest::Initialized, ClientRequest::LoadedList]);
                } else if id == ID_LOADED_LIST {
                    let ids = result
                        .as_ref()
                        .and_then(|r| r.get("data"))
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    for id in ids.iter().filter_map(Value::as_str) {
                        if !self.room_for(id) {
                            break;
                        }
                        self.threads.entry(id.to_string()).or_default();
                        self.subscribe(id, &mut out);
                    }
                } else if let Some(thread) = self.resumes.remove(&id) {
                    let described = result.as_ref().and_then(|r| r.get("thread"));
                    let helper = described.is_some_and(|t| {
                        t.get("ephemeral").and_then(Value::as_bool) == Some(true)
                            || t.get("parentThreadId").is_some_and(|p| !p.is_null())
                    });
                    if let Some(entry) = self.threads.get_mut(&thread) {
                        entry.subscribing = false;
                        entry.subscribed = error.is_none();
                        if helper {
                            entry.ignored = true;
                            entry.pending = None;
                        } else if error.is_none() && !entry.confirmed {
                            entry.confirmed = true;
                            if let Some(obs) = entry.pending.take() {
                                if !self.closed.contains(&thread) {
                                    out.observations.push(obs);
                                }
                            }
                        }
                        if let Some(cwd) = result
                            .as_ref()
                            .and_then(|r| r.get("thread"))
                            .and_then(|t| str_of(t, "cwd"))
                        {
                            entry.cwd.get_or_insert(cwd);
                        }
                    }
                }
            }
            ServerMessage::ThreadStarted {
                thread_id,
                cwd,
                ephemeral,
                has_parent,
            } => {
                if !self.room_for(&thread_id) {
                    return out;
                }
                let entry = self.threads.entry(thread_id.clone()).or_default();
                entry.ignored = ephemeral || has_parent;
                entry.confirmed = !entry.ignored;
                if cwd.is_some() {
                    entry.cwd = cwd;
                }
                if !entry.ignored && !self.closed.contains(&thread_id) {
                    out.observations
                        .push(self.observation(&thread_id, EventKind::Sighting, now));
                }
            }
            ServerMessage::ThreadStatus {
                thread_id,
                status,
                at,
            } => {
                if self.closed.contains(&thread_id) || !self.room_for(&thread_id) {
                    return out;
                }
                if self.threads.entry(thread_id.clone()).or_default().ignored {
                    return out;
                }
                let at = at.unwrap_or(now);
                let confirmed = self.threads.get(&thread_id).is_some_and(|e| e.confirmed);
                let obs = match status {
                    ThreadStatus::Active {
                        waiting_on_approval,
                        waiting_on_user_input,
                    } => {
                        self.subscribe(&thread_id, &mut out);
                        let mut obs = self.observation(&thread_id, EventKind::StatusReport, at);
                        if waiting_on_approval || waiting_on_user_input {
                            obs.status = Some(ReportedStatus::Waiting);
                            obs.waiting_for = Some(
                                if waiting_on_approval {
                                    WAITING_ON_APPROVAL
                                } else {
                                    WAITING_ON_USER_INPUT
                                }
                                .to_string(),
                            );
                        } else {
                            obs.status = Some(ReportedStatus::Busy);
                        }
                        obs
                    }
                    ThreadStatus::Idle => {
                        let mut obs = self.observation(&thread_id, EventKind::StatusReport, at);
                        obs.status = Some(ReportedStatus::Idle);
                        obs
                    }
                    ThreadStatus::SystemError => {
                        let mut obs = self.observation(&thread_id, EventKind::StopFailure, at);
                        obs.error = Some("Codex reported a system error".into());
                        obs
                    }
                    ThreadStatus::NotLoaded => {
                        self.threads.remove(&thread_id);
                        self.observation(&thread_id, EventKind::Gone, at)
                    }
                    ThreadStatus::Unknown(_) => return out,
                };
                if confirmed {
                    out.observations.push(obs);
                } else if let Some(entry) = self.threads.get_mut(&thread_id) {
                    // Not yet known to be a session: its latest status waits for the resume.
                    entry.pending = Some(obs);
                }
            }
            ServerMessage::ThreadClosed { thread_id, at } => {
                if self.is_session(&thread_id) {
                    out.observations.push(self.observation(
                        &thread_id,
                        EventKind::Gone,
                        at.unwrap_or(now),
                    ));
                }
                self.threads.remove(&thread_id);
            }
            ServerMessage::TurnStarted { thread_id, at } => {
                if self.is_session(&thread_id) {
                    out.observations.push(self.observation(
                        &thread_id,
                        EventKind::TaskStarted,
                        at.unwrap_or(now),
                    ));
                }
            }
            ServerMessage::TurnCompleted { thread_id, end, at } => {
                if self.is_session(&thread_id) {
                    let at = at.unwrap_or(now);
                    let obs = match end {
                        TurnEnd::Completed | TurnEnd::Other(_) => {
                            self.observation(&thread_id, EventKind::TaskComplete, at)
                        }
                        TurnEnd::Interrupted => {
                            self.observation(&thread_id, EventKind::TurnAborted, at)
                        }
                        TurnEnd::Failed(message) => {
                            let mut obs = self.observation(&thread_id, EventKind::StopFailure, at);
                            obs.error = Some(message);
                            obs
                        }
                    };
                    out.observations.push(obs);
                }
            }
            ServerMessage::TokenUsage {
                thread_id,
                usage,
                at,
            } => {
                if let Some(entry) = self.threads.get_mut(&thread_id) {
                    entry.usage = Some(usage);
                }
                tracing::debug!(%thread_id, total = usage.total_tokens, "codex_token_usage");
                if self.is_session(&thread_id)
                    && (usage.last_turn_tokens.is_some() || usage.model_context_window.is_some())
                {
                    let mut obs =
                        self.observation(&thread_id, EventKind::Sighting, at.unwrap_or(now));
                    obs.context_tokens = usage.last_turn_tokens;
                    obs.context_window = usage.model_context_window.filter(|w| *w > 0);
                    out.observations.push(obs);
                }
                if self.is_session(&thread_id) {
                    out.usage.push(UsageReport {
                        session_id: thread_id,
                        agent: Agent::Codex,
                        at: at.unwrap_or(now),
                        turn_id: None,
                        model: None,
                        kind: UsageKind::ThreadTotal,
                        usage: TokenUsage::from_openai(
                            usage.input_tokens,
                            usage.cached_input_tokens,
                            0,
                            usage.output_tokens,
                        ),
                    });
                }
            }
            ServerMessage::Hook { thread_id, at, .. } => {
                // A hook run is a sign of life; what the hook says comes through the hook itself.
                if self.is_session(&thread_id) {
                    out.observations.push(self.observation(
                        &thread_id,
                        EventKind::Sighting,
                        at.unwrap_or(now),
                    ));
                }
            }
            ServerMessage::Other => {}
        }
        out
    }

    /// A thread whose messages may become observations: not a helper, its TUI not known dead.
    /// A thread first heard of in a status change or the loaded list is one only once a resume
    /// has said what it is (see `ThreadEntry::confirmed`).
    fn is_session(&mut self, thread_id: &str) -> bool {
        if self.closed.contains(thread_id) {
            return false;
        }
        self.threads
            .get(thread_id)
            .is_some_and(|e| e.confirmed && !e.ignored)
    }
}

/// A session of one of the server's threads, as the TUI-death check sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSession {
    pub session_id: String,
    pub pid: u32,
    pub pid_start: Option<String>,
}

/// The sessions whose TUI is gone although the server still holds their thread: each is ended
/// now (only if it still belongs to that process: a resume in another TUI keeps it).
pub fn tui_deaths(
    sessions: &[ThreadSession],
    server_pid: Option<u32>,
    mut probe: impl FnMut(u32) -> PidProbe,
) -> Vec<FeedOutput> {
    sessions
        .iter()
        // Never the server itself (a session bound to it by mistake is not "its TUI").
        .filter(|s| Some(s.pid) != server_pid)
        .filter(|s| match probe(s.pid) {
            PidProbe::Gone => true,
            PidProbe::Alive { token } => {
                matches!((&s.pid_start, &token), (Some(want), Some(have)) if want != have)
            }
        })
        .map(|s| FeedOutput::EndOwnedBy {
            session_id: s.session_id.clone(),
            pid: s.pid,
            pid_start: s.pid_start.clone(),
            reason: EndReason::ProcessGone,
        })
        .collect()
}

/// Who holds one of the server's threads' writer lock, as far as a TUI is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadHolder {
    /// The server with a TUI above it (or a TUI itself).
    Tui,
    /// The server alone: no terminal drives the thread.
    ServerAlone,
    /// Not held, or not visible.
    Unknown,
}

/// A live session of one of the server's threads, as the headless check sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveThread {
    pub session_id: String,
    pub has_pid: bool,
    pub headless: bool,
}

/// Which sessions now run headless (`true`) or have a terminal again (`false`): a session with
/// no process of its own whose thread only the server holds runs headless; a TUI's pid or lock
/// ends that.
pub fn headless_marks(
    threads: &[LiveThread],
    holder_of: impl Fn(&str) -> ThreadHolder,
) -> Vec<(String, bool)> {
    threads
        .iter()
        .filter_map(|t| {
            let holder = holder_of(&t.session_id);
            let headless = match holder {
                ThreadHolder::ServerAlone => !t.has_pid,
                ThreadHolder::Tui => false,
                ThreadHolder::Unknown => t.headless && !t.has_pid,
            };
            (headless != t.headless).then(|| (t.session_id.clone(), headless))
        })
        .collect()
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Reads who holds each thread's lock under `codex_home` (`/proc/locks` and the process table).
fn holders(codex_home: &Path, threads: &[LiveThread]) -> HashMap<String, ThreadHolder> {
    use super::lock_owner::{codex_owner, CodexOwner};
    use crate::feeds::procfs::{self, LockProbe};
    let locks = procfs::read_proc_locks();
    let table = crate::process::SystemProcesses;
    threads
        .iter()
        .map(|t| {
            let path = codex_home
                .join("thread-writer-locks")
                .join(format!("{}.lock", t.session_id));
            let holder = match procfs::probe_lock(&path, locks.as_ref()) {
                LockProbe::Held(Some(pid)) => match codex_owner(&table, pid) {
                    CodexOwner::Pid(_) => ThreadHolder::Tui,
                    CodexOwner::DetachedServer => ThreadHolder::ServerAlone,
                },
                _ => ThreadHolder::Unknown,
            };
            (t.session_id.clone(), holder)
        })
        .collect()
}

/// Capped exponential backoff between connection attempts.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: FIRST_BACKOFF,
        }
    }
}

impl Backoff {
    /// The wait after a failure (doubling, at most [`MAX_BACKOFF`]).
    pub fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        wait
    }

    /// A connection worked: the next failure waits the shortest time again.
    pub fn reset(&mut self) {
        self.next = FIRST_BACKOFF;
    }
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Whether a managed server runs for `codex_home`: its socket exists and its pid is alive.
fn running_server(codex_home: &Path) -> Option<u32> {
    if !codex_home.join(CONTROL_SOCKET).exists() {
        return None;
    }
    let text = std::fs::read_to_string(codex_home.join(DAEMON_PID_FILE)).ok()?;
    let pid = parse_daemon_pid(&text)?;
    matches!(crate::process::probe_pid(pid), PidProbe::Alive { .. }).then_some(pid)
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Starts one connection task per Codex home; each runs until `token` is cancelled.
pub fn spawn(
    sink: FeedSink,
    codex_homes: Vec<PathBuf>,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let tasks: Vec<_> = codex_homes
            .into_iter()
            .map(|home| tokio::spawn(follow_home(sink.clone(), home, token.clone())))
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    })
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
async fn follow_home(sink: FeedSink, home: PathBuf, token: CancellationToken) {
    let mut backoff = Backoff::default();
    loop {
        let look = Arc::new(|home: &Path| running_server(home));
        let Some(server_pid) = wait_for_server(&home, look, ABSENT_RECHECK, &token).await else {
            return;
        };
        let mut handshake_done = false;
        let ended = connection(&sink, &home, server_pid, &token, &mut handshake_done).await;
        if handshake_done {
            // It worked: retry soon (a TUI's death can reset the connection; see below).
            backoff.reset();
        }
        if let Err(error) = ended {
            tracing::debug!(home = %home.display(), %error, "codex_app_server_connection_ended");
        }
        let wait = backoff.failed();
        tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Looks for a running server under a `CODEX_HOME` ([`running_server`]; tests script it).
#[cfg(unix)]
type ServerLook = dyn Fn(&Path) -> Option<u32> + Send + Sync;

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Waits until `look` finds a server for `home` (its pid), looking at once, then whenever
/// inotify reports a change to the server's socket or pid file (or the folders holding them),
/// and at the latest every `recheck`; `None` when `token` is cancelled. The watch is set before
/// each look, so a server that appears between the two is not missed.
async fn wait_for_server(
    home: &Path,
    look: Arc<ServerLook>,
    recheck: Duration,
    token: &CancellationToken,
) -> Option<u32> {
    loop {
        // One signal waiting is enough: it makes the next look, which sees everything.
        let (tx, mut signals) = tokio::sync::mpsc::channel(1);
        // No watch (no CODEX_HOME yet: Codex not installed) drops the sender: then only the
        // recheck looks (a closed channel must not count as a signal, or this loop spins).
        let _watch = watch_server_files(home, tx);
        let found = {
            let (home, look) = (home.to_path_buf(), Arc::clone(&look));
            tokio::task::spawn_blocking(move || look(&home))
                .await
                .ok()
                .flatten()
        };
        if found.is_some() {
            return found;
        }
        tokio::select! {
            () = token.cancelled() => return None,
            () = tokio::time::sleep(recheck) => {}
            Some(()) = signals.recv() => {}
        }
    }
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// inotify (the `notify` crate) on `home` and the folders of [`CONTROL_SOCKET`] and
/// [`DAEMON_PID_FILE`] that exist, signalling a change to one of those names. `None` when no
/// watch could be set (then only the recheck looks).
fn watch_server_files(
    home: &Path,
    signals: tokio::sync::mpsc::Sender<()>,
) -> Option<notify::RecommendedWatcher> {
    let names: Vec<std::ffi::OsString> = [CONTROL_SOCKET, DAEMON_PID_FILE]
        .iter()
        .flat_map(|rel| Path::new(rel).iter().map(|part| part.to_os_string()))
        .collect();
    let folders: Vec<PathBuf> = std::iter::once(home.to_path_buf())
        .chain(
            [CONTROL_SOCKET, DAEMON_PID_FILE]
                .iter()
                .filter_map(|rel| home.join(rel).parent().map(Path::to_path_buf)),
        )
        .filter(|folder| folder.is_dir())
        .collect();
    // No folder (no CODEX_HOME: Codex not installed): no watcher at all, since making one costs
    // an inotify instance and a thread, once a recheck for as long as Codex is absent.
    if folders.is_empty() {
        return None;
    }
    let ours = move |path: &Path| {
        path.file_name()
            .is_some_and(|n| names.iter().any(|m| m == n))
    };
    // A signal's look sees every change since the last one.
    let (watcher, failed) =
        crate::folder_wake::wake_on_change(folders.iter().map(PathBuf::as_path), ours, signals)
            .ok()?;
    (failed.len() < folders.len()).then_some(watcher)
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("websocket: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("timed out")]
    Timeout,
    #[error("refused: {0}")]
    Untrusted(#[from] UntrustedSocket),
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Why Codex's control socket is not trusted (see [`trusted_socket`]).
#[derive(Debug, thiserror::Error)]
enum UntrustedSocket {
    #[error("{0} is a symlink in a folder that is not yours alone")]
    SharedLinkFolder(String),
    #[error("{path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Owner(#[from] crate::control::client::ClientError),
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Codex's control socket, checked like ours before anything is sent to it: a socket of another
/// user, one others may write, or one in a folder others may write is not Codex's server,
/// whatever answers there. Codex 0.171 keeps a symlink in its own private folder
/// (`app-server-control/`, 0700) pointing at the socket in `/tmp/codex-daemon-<uid>/` (0700): a
/// symlink is followed only from a folder that is ours and private, and its target is checked.
fn trusted_socket(path: &Path) -> Result<PathBuf, UntrustedSocket> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(path.to_path_buf()); // nothing there yet: the connect says so
    };
    let target = if meta.file_type().is_symlink() {
        let folder = path.parent().unwrap_or_else(|| Path::new("/"));
        let unreadable = |at: &Path| {
            let path = at.display().to_string();
            move |source| UntrustedSocket::Unreadable { path, source }
        };
        let folder_meta = std::fs::metadata(folder).map_err(unreadable(folder))?;
        // SAFETY: geteuid has no failure mode and touches no memory.
        let me = unsafe { libc::geteuid() };
        if folder_meta.uid() != me || folder_meta.mode() & 0o022 != 0 {
            return Err(UntrustedSocket::SharedLinkFolder(
                path.display().to_string(),
            ));
        }
        std::fs::canonicalize(path).map_err(unreadable(path))?
    } else {
        path.to_path_buf()
    };
    crate::control::client::check_socket_owner(&target)?;
    Ok(target)
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// One connection, until the server goes or `token` is cancelled. `handshake_done` says whether
/// the server answered `initialize` (then the backoff starts over, however it ended).
///
/// The server resets every connection when a TUI it serves is killed (seen with 0.171): so when
/// the connection ends, the TUIs of the threads it held are checked once more before returning,
/// and a killed TUI's session still ends at once.
async fn connection(
    sink: &FeedSink,
    home: &Path,
    server_pid: u32,
    token: &CancellationToken,
    handshake_done: &mut bool,
) -> Result<(), ConnectionError> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let socket = trusted_socket(&home.join(CONTROL_SOCKET)).map_err(ConnectionError::Untrusted)?;
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::UnixStream::connect(&socket))
        .await
        .map_err(|_| ConnectionError::Timeout)??;
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let (mut ws, _) = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio_tungstenite::client_async_with_config("ws://localhost/", stream, Some(config)),
    )
    .await
    .map_err(|_| ConnectionError::Timeout)??;
    tracing::info!(home = %home.display(), server_pid, "codex_app_server_connected");
    let mut book = ThreadBook::new();
    let first = ClientRequest::Initialize.to_json(ID_INITIALIZE);
    ws.send(Message::text(first.to_string())).await?;
    let mut ticks = tokio::time::interval(TUI_CHECK_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tick_count: u64 = 0;
    loop {
        let requests;
        tokio::select! {
            () = token.cancelled() => {
                let _ = ws.close(None).await;
                return Ok(());
            }
            frame = ws.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => {
                        check_threads(sink, home, server_pid, &mut book, false).await;
                        return Ok(());
                    }
                    Some(Err(e)) => {
                        check_threads(sink, home, server_pid, &mut book, false).await;
                        return Err(e.into());
                    }
                    Some(Ok(_)) => continue,
                };
                let msg = match parse_server_message(text.as_str()) {
                    Ok(msg) => msg,
                    Err(error) => {
                        tracing::debug!(%error, "codex_app_server_frame_skipped");
                        continue;
                    }
                };
                if matches!(msg, ServerMessage::Response { id: ID_INITIALIZE, .. }) {
                    *handshake_done = true;
                }
                let handled = book.handle(msg, Utc::now());
                requests = handled.requests;
                let usage = handled
                    .usage
                    .into_iter()
                    .map(|report| FeedOutput::Usage(Box::new(report)));
                apply_outputs(
                    sink,
                    handled.observations.into_iter().map(FeedOutput::observe).chain(usage).collect(),
                );
            }
            _ = ticks.tick() => {
                tick_count += 1;
                // Headless threads change slowly: every 8th tick (2 s) is enough.
                let headless_too = tick_count.is_multiple_of(8);
                requests = check_threads(sink, home, server_pid, &mut book, headless_too).await;
            }
        }
        for request in requests {
            let id = book.id_for(&request);
            ws.send(Message::text(request.to_json(id).to_string()))
                .await?;
        }
    }
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Ends the sessions of the server's threads whose TUI is gone and, with `headless_too`, marks
/// which run with no terminal; returns the requests that follow (unsubscribing).
async fn check_threads(
    sink: &FeedSink,
    home: &Path,
    server_pid: u32,
    book: &mut ThreadBook,
    headless_too: bool,
) -> Vec<ClientRequest> {
    let threads = book.session_threads();
    let live: Vec<crate::model::Session> = sink
        .registry
        .list()
        .into_iter()
        .filter(|s| s.agent == Agent::Codex && s.state != SessionState::Ended)
        .filter(|s| threads.contains(&s.session_id))
        .collect();
    let sessions: Vec<ThreadSession> = live
        .iter()
        .filter_map(|s| {
            Some(ThreadSession {
                pid: s.pid?,
                session_id: s.session_id.clone(),
                pid_start: s.pid_start.clone(),
            })
        })
        .collect();
    let live_threads: Vec<LiveThread> = if headless_too {
        live.iter()
            .map(|s| LiveThread {
                session_id: s.session_id.clone(),
                has_pid: s.pid.is_some(),
                headless: s.headless,
            })
            .collect()
    } else {
        Vec::new()
    };
    if sessions.is_empty() && live_threads.is_empty() {
        return Vec::new();
    }
    let home = home.to_path_buf();
    let (outputs, marks) = tokio::task::spawn_blocking(move || {
        let deaths = tui_deaths(&sessions, Some(server_pid), crate::process::probe_pid);
        let marks = if live_threads.is_empty() {
            Vec::new()
        } else {
            let held = holders(&home, &live_threads);
            headless_marks(&live_threads, |id| {
                held.get(id).copied().unwrap_or(ThreadHolder::Unknown)
            })
        };
        (deaths, marks)
    })
    .await
    .unwrap_or_default();
    let mut requests = Vec::new();
    for output in &outputs {
        if let FeedOutput::EndOwnedBy { session_id, .. } = output {
            tracing::info!(%session_id, "codex_tui_gone_while_server_holds_thread");
            requests.extend(book.tui_gone(session_id));
        }
    }
    apply_outputs(sink, outputs);
    let now = Utc::now();
    let marks: Vec<FeedOutput> = marks
        .into_iter()
        .map(|(id, headless)| {
            tracing::info!(session_id = %id, headless, "codex_thread_terminal_changed");
            let mut obs = book.observation(&id, EventKind::Sighting, now);
            obs.headless = Some(headless);
            FeedOutput::observe(obs)
        })
        .collect();
    apply_outputs(sink, marks);
    requests
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::registry::SessionsRegistry;

    fn fixture() -> Vec<String> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/codex/real-0.171.0/app-server-messages.jsonl"
        );
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["msg"].to_string()
            })
            .collect()
    }

    fn t0() -> DateTime<Utc> {
        Utc.timestamp_millis_opt(1_796_094_000_000).unwrap()
    }

    /// Feeds every recorded message through a book, as the connection does.
    fn replay(book: &mut ThreadBook, lines: &[String]) -> Handled {
        let mut all = Handled::default();
        for line in lines {
            let h = book.handle(answered_to(book, parse_server_message(line).unwrap()), t0());
            for request in &h.requests {
                book.id_for(request);
            }
            all.observations.extend(h.observations);
            all.requests.extend(h.requests);
        }
        all
    }

    /// A recorded resume answer, with the id this book gave its own resume of that thread (the
    /// recorder's client numbered its requests its own way).
    fn answered_to(book: &ThreadBook, msg: ServerMessage) -> ServerMessage {
        match msg {
            ServerMessage::Response { id, result, error } => {
                let thread = result
                    .as_ref()
                    .and_then(|r| r.get("thread"))
                    .and_then(|t| str_of(t, "id"));
                let ours = thread.and_then(|t| {
                    book.resumes
                        .iter()
                        .find(|(_, asked)| **asked == t)
                        .map(|(id, _)| *id)
                });
                ServerMessage::Response {
                    id: ours.unwrap_or(id),
                    result,
                    error,
                }
            }
            other => other,
        }
    }

    fn resume_answer(id: u64, thread: &str, ephemeral: bool) -> ServerMessage {
        parse_server_message(
            &json!({"id": id, "result": {"thread": {"id": thread, "ephemeral": ephemeral,
                "parentThreadId": null, "cwd": "/home/dev/proj"}}})
            .to_string(),
        )
        .unwrap()
    }

    #[test]
    fn a_hidden_thread_first_heard_of_in_a_status_change_never_becomes_a_ghost_session() {
        // We connected just after Codex announced its title thread: all we hear of it is a
        // status change. It waits for the resume's answer, which says it is ephemeral.
        let mut book = ThreadBook::new();
        let active = json!({"type": "active", "activeFlags": []});
        let h = book.handle(
            parse_server_message(&status("title", active.clone(), 1)).unwrap(),
            t0(),
        );
        assert!(h.observations.is_empty(), "{h:?}");
        assert_eq!(h.requests, vec![ClientRequest::Resume("title".into())]);
        let id = book.id_for(&h.requests[0]);
        let h = book.handle(resume_answer(id, "title", true), t0());
        let h2 = book.handle(
            parse_server_message(&status("title", json!({"type": "idle"}), 2)).unwrap(),
            t0(),
        );
        assert!(h.observations.is_empty() && h2.observations.is_empty());
        assert!(book.session_threads().is_empty());
        // The positive control: the TUI's thread, heard of the same way, is a session as soon as
        // the resume says so, with the status it had meanwhile.
        let h = book.handle(
            parse_server_message(&status("tui", active, 3)).unwrap(),
            t0(),
        );
        assert!(h.observations.is_empty());
        let id = book.id_for(&h.requests[0]);
        let h = book.handle(resume_answer(id, "tui", false), t0());
        assert_eq!(h.observations.len(), 1, "{h:?}");
        assert_eq!(h.observations[0].session_id, "tui");
        assert_eq!(h.observations[0].status, Some(ReportedStatus::Busy));
        assert_eq!(book.session_threads(), HashSet::from(["tui".to_string()]));
    }

    #[test]
    fn a_recorded_approval_wait_is_a_permission_wait_of_the_tui_thread_only() {
        let lines = fixture();
        let mut book = ThreadBook::new();
        let all = replay(&mut book, &lines);
        let waits: Vec<&Observation> = all
            .observations
            .iter()
            .filter(|o| o.status == Some(ReportedStatus::Waiting))
            .collect();
        assert_eq!(waits.len(), 1, "{:#?}", all.observations);
        let wait = waits[0];
        assert_eq!(wait.waiting_for.as_deref(), Some(WAITING_ON_APPROVAL));
        assert_eq!(wait.source, Source::AppServer);
        assert_eq!(wait.pid, None, "never the server's pid");
        // The hidden title-generation thread (ephemeral) never becomes a session.
        let ids: HashSet<&str> = all
            .observations
            .iter()
            .map(|o| o.session_id.as_str())
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        assert!(ids.contains(wait.session_id.as_str()));
        // Stamped with the server's time, not the time it was read.
        assert_ne!(wait.at, t0());
    }

    #[test]
    fn the_registry_shows_waiting_for_permission_from_the_recorded_messages() {
        let sink = FeedSink::without_history(SessionsRegistry::new());
        let registry = &*sink.registry;
        let mut book = ThreadBook::new();
        let lines = fixture();
        let upto = lines
            .iter()
            .position(|l| l.contains("waitingOnApproval"))
            .unwrap();
        let all = replay(&mut book, &lines[..=upto]);
        let id = all.observations.last().unwrap().session_id.clone();
        apply_outputs(
            &sink,
            all.observations
                .into_iter()
                .map(FeedOutput::observe)
                .collect(),
        );
        let s = registry.get(&id).unwrap();
        assert_eq!(s.state, SessionState::WaitingForPermission);
        assert_eq!(s.pid, None);
        // Esc: active without flags, then idle.
        let rest = replay(&mut book, &lines[upto + 1..]);
        apply_outputs(
            &sink,
            rest.observations
                .into_iter()
                .map(FeedOutput::observe)
                .collect(),
        );
        assert_eq!(registry.get(&id).unwrap().state, SessionState::Idle);
    }

    #[test]
    fn recorded_turns_token_usage_and_hook_runs_of_a_subscribed_thread_are_read() {
        let lines = fixture();
        let mut book = ThreadBook::new();
        let all = replay(&mut book, &lines);
        let events: Vec<EventKind> = all.observations.iter().map(|o| o.event).collect();
        assert!(events.contains(&EventKind::TaskStarted), "{events:?}");
        assert!(events.contains(&EventKind::TaskComplete), "{events:?}");
        // The turn refused at the approval prompt (Esc) ends as interrupted.
        assert!(events.contains(&EventKind::TurnAborted), "{events:?}");
        let thread = all.observations[0].session_id.clone();
        let usage = book.token_usage(&thread).unwrap();
        assert!(usage.total_tokens > 0 && usage.total_tokens >= usage.input_tokens);
        let hooks = lines
            .iter()
            .filter_map(|l| match parse_server_message(l).unwrap() {
                ServerMessage::Hook { event_name, .. } => event_name,
                _ => None,
            })
            .collect::<Vec<_>>();
        assert!(hooks.iter().any(|h| h == "permissionRequest"), "{hooks:?}");
        // The first thing heard of the thread (it started before we connected) asks to subscribe.
        assert!(all
            .requests
            .contains(&ClientRequest::Resume(thread.clone())));
    }

    /// The book hears `thread/started` for `thread` (a session's thread, not a helper's).
    fn known(book: &mut ThreadBook, thread: &str) {
        let started = json!({"method": "thread/started", "params": {"thread": {"id": thread,
            "ephemeral": false, "parentThreadId": null, "cwd": "/home/dev/proj"}}});
        book.handle(parse_server_message(&started.to_string()).unwrap(), t0());
    }

    // Issue 27 point 8: the server is another program; what it announces is bounded like any
    // input. Past MAX_THREADS no thread is followed, and ended ones are remembered up to MAX_CLOSED.
    #[test]
    fn a_server_announcing_endless_threads_is_followed_up_to_the_cap() {
        let mut book = ThreadBook::new();
        for n in 0..MAX_THREADS + 300 {
            known(&mut book, &format!("thread-{n}"));
        }
        assert_eq!(book.thread_count(), MAX_THREADS);
        for n in 0..MAX_CLOSED + 50 {
            book.tui_gone(&format!("gone-{n}"));
        }
        assert!(book.closed.len() <= MAX_CLOSED && book.closed_order.len() <= MAX_CLOSED);
    }

    // Issue 27 point 8: Codex's socket is checked like ours before anything is sent to it.
    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[test]
    fn a_codex_socket_others_could_write_is_refused_before_connecting() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let socket = home.path().join(CONTROL_SOCKET);
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        std::fs::set_permissions(
            socket.parent().unwrap(),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let sink = FeedSink::without_history(SessionsRegistry::new());
        let mut done = false;
        let result = runtime.block_on(connection(
            &sink,
            home.path(),
            1,
            &CancellationToken::new(),
            &mut done,
        ));
        let error = result.unwrap_err().to_string();
        assert!(error.contains("writable by others"), "{error}");
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "nothing connected to it");
        // A symlink in its place is refused too.
        drop(listener);
        std::fs::remove_file(&socket).unwrap();
        std::os::unix::fs::symlink("/tmp", &socket).unwrap();
        let error = runtime
            .block_on(connection(
                &sink,
                home.path(),
                1,
                &CancellationToken::new(),
                &mut done,
            ))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a socket"), "{error}");
        // As Codex lays it out: a symlink in its private folder to a private socket elsewhere.
        let daemon_dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(daemon_dir.path(), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        let real = daemon_dir.path().join("sock");
        let _server = std::os::unix::net::UnixListener::bind(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::remove_file(&socket).unwrap();
        std::os::unix::fs::symlink(&real, &socket).unwrap();
        assert_eq!(
            trusted_socket(&socket).unwrap(),
            std::fs::canonicalize(&real).unwrap()
        );
        // The same link in a folder others may write is not followed.
        std::fs::set_permissions(
            socket.parent().unwrap(),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        assert!(trusted_socket(&socket)
            .unwrap_err()
            .to_string()
            .contains("not yours alone"));
    }

    fn status(thread: &str, status: Value, ms: i64) -> String {
        json!({"method": "thread/status/changed",
               "params": {"threadId": thread, "status": status}, "emittedAtMs": ms})
        .to_string()
    }

    #[test]
    fn waiting_on_user_input_is_a_wait_for_input_and_system_error_an_error() {
        let sink = FeedSink::without_history(SessionsRegistry::new());
        let registry = &*sink.registry;
        let mut book = ThreadBook::new();
        known(&mut book, "t1");
        let ms = t0().timestamp_millis();
        for (i, line) in [
            status("t1", json!({"type": "active", "activeFlags": []}), ms),
            status(
                "t1",
                json!({"type": "active", "activeFlags": ["waitingOnUserInput"]}),
                ms + 1,
            ),
        ]
        .iter()
        .enumerate()
        {
            let h = book.handle(parse_server_message(line).unwrap(), t0());
            apply_outputs(
                &sink,
                h.observations
                    .into_iter()
                    .map(FeedOutput::observe)
                    .collect(),
            );
            if i == 0 {
                assert_eq!(registry.get("t1").unwrap().state, SessionState::Working);
                assert_eq!(h.requests, vec![ClientRequest::Resume("t1".into())]);
            }
        }
        assert_eq!(
            registry.get("t1").unwrap().state,
            SessionState::WaitingForInput
        );
        let h = book.handle(
            parse_server_message(&status("t1", json!({"type": "systemError"}), ms + 2)).unwrap(),
            t0(),
        );
        apply_outputs(
            &sink,
            h.observations
                .into_iter()
                .map(FeedOutput::observe)
                .collect(),
        );
        let s = registry.get("t1").unwrap();
        assert_eq!(s.state, SessionState::Idle);
        assert_eq!(s.error.as_deref(), Some("Codex reported a system error"));
        let h = book.handle(
            parse_server_message(&status("t1", json!({"type": "notLoaded"}), ms + 3)).unwrap(),
            t0(),
        );
        apply_outputs(
            &sink,
            h.observations
                .into_iter()
                .map(FeedOutput::observe)
                .collect(),
        );
        assert_eq!(registry.get("t1").unwrap().state, SessionState::Ended);
    }

    #[test]
    fn turns_token_usage_and_hooks_are_parsed() {
        let turn = json!({"method": "turn/completed", "params": {"threadId": "t1",
            "turn": {"id": "u1", "items": [], "status": "failed", "error": {"message": "quota"}}}});
        assert_eq!(
            parse_server_message(&turn.to_string()).unwrap(),
            ServerMessage::TurnCompleted {
                thread_id: "t1".into(),
                end: TurnEnd::Failed("quota".into()),
                at: None
            }
        );
        let usage = json!({"method": "thread/tokenUsage/updated", "params": {"threadId": "t1", "turnId": "u1",
            "tokenUsage": {"modelContextWindow": 200000,
              "last": {"inputTokens": 1, "cachedInputTokens": 0, "outputTokens": 1, "reasoningOutputTokens": 0, "totalTokens": 2},
              "total": {"inputTokens": 120, "cachedInputTokens": 20, "outputTokens": 30, "reasoningOutputTokens": 5, "totalTokens": 150}}}});
        let msg = parse_server_message(&usage.to_string()).unwrap();
        let mut book = ThreadBook::new();
        known(&mut book, "t1");
        book.handle(
            parse_server_message(&status("t1", json!({"type": "idle"}), 1)).unwrap(),
            t0(),
        );
        let handled = book.handle(msg, t0());
        // The running total goes to the store as the thread's total, cached input apart.
        assert_eq!(handled.usage.len(), 1, "{handled:?}");
        assert_eq!(handled.usage[0].session_id, "t1");
        assert_eq!(handled.usage[0].kind, UsageKind::ThreadTotal);
        assert_eq!(
            handled.usage[0].usage,
            TokenUsage::from_openai(120, 20, 0, 30)
        );
        assert_eq!(
            book.token_usage("t1"),
            Some(AppServerTokenUsage {
                input_tokens: 120,
                cached_input_tokens: 20,
                output_tokens: 30,
                reasoning_output_tokens: 5,
                total_tokens: 150,
                model_context_window: Some(200_000),
                last_turn_tokens: Some(2),
            })
        );
        // The session's context: the last turn's tokens in the model's window.
        let context: Vec<_> = handled
            .observations
            .iter()
            .map(|o| (o.context_tokens, o.context_window))
            .collect();
        assert_eq!(context, vec![(Some(2), Some(200_000))]);
        let hook = json!({"method": "hook/started", "params": {"threadId": "t1", "turnId": null,
            "run": {"eventName": "permissionRequest", "id": "h"}}});
        assert!(matches!(
            parse_server_message(&hook.to_string()).unwrap(),
            ServerMessage::Hook { completed: false, event_name: Some(ref e), .. } if e == "permissionRequest"
        ));
        assert!(parse_server_message("[1]").is_err());
        assert_eq!(
            parse_server_message(r#"{"method":"item/agentMessage/delta","params":{}}"#).unwrap(),
            ServerMessage::Other
        );
    }

    #[test]
    fn the_handshake_is_initialize_then_initialized_and_the_loaded_threads() {
        let mut book = ThreadBook::new();
        let reply = json!({"id": 1, "result": {"userAgent": "codex"}}).to_string();
        let h = book.handle(parse_server_message(&reply).unwrap(), t0());
        assert_eq!(
            h.requests,
            vec![ClientRequest::Initialized, ClientRequest::LoadedList]
        );
        assert_eq!(ClientRequest::Initialized.to_json(0).get("id"), None);
        let list = json!({"id": 2, "result": {"data": ["t9"], "nextCursor": null}}).to_string();
        let h = book.handle(parse_server_message(&list).unwrap(), t0());
        assert_eq!(h.requests, vec![ClientRequest::Resume("t9".into())]);
        let id = book.id_for(&h.requests[0]);
        // A resume that fails (no rollout yet) is retried on the next activity.
        let err = json!({"id": id, "error": {"code": -32600, "message": "no rollout"}}).to_string();
        book.handle(parse_server_message(&err).unwrap(), t0());
        let h = book.handle(
            parse_server_message(&status(
                "t9",
                json!({"type": "active", "activeFlags": []}),
                5,
            ))
            .unwrap(),
            t0(),
        );
        assert_eq!(h.requests, vec![ClientRequest::Resume("t9".into())]);
        // Once its TUI is gone: unsubscribed, and nothing more from it.
        assert_eq!(
            book.tui_gone("t9"),
            Some(ClientRequest::Unsubscribe("t9".into()))
        );
        let h = book.handle(
            parse_server_message(&status("t9", json!({"type": "idle"}), 6)).unwrap(),
            t0(),
        );
        assert!(h.observations.is_empty());
    }

    #[test]
    fn a_dead_tui_ends_its_session_and_the_server_pid_never_counts() {
        let sessions = vec![
            ThreadSession {
                session_id: "alive".into(),
                pid: 10,
                pid_start: Some("a".into()),
            },
            ThreadSession {
                session_id: "dead".into(),
                pid: 11,
                pid_start: None,
            },
            ThreadSession {
                session_id: "recycled".into(),
                pid: 12,
                pid_start: Some("old".into()),
            },
            ThreadSession {
                session_id: "server".into(),
                pid: 99,
                pid_start: None,
            },
        ];
        let out = tui_deaths(&sessions, Some(99), |pid| match pid {
            10 => PidProbe::Alive {
                token: Some("a".into()),
            },
            12 => PidProbe::Alive {
                token: Some("new".into()),
            },
            _ => PidProbe::Gone,
        });
        let ended: Vec<&str> = out
            .iter()
            .map(|o| match o {
                FeedOutput::EndOwnedBy { session_id, .. } => session_id.as_str(),
                FeedOutput::Observe(_) | FeedOutput::Usage(_) | FeedOutput::Limits(_) => "",
            })
            .collect();
        assert_eq!(ended, vec!["dead", "recycled"]);
    }

    #[test]
    fn a_thread_only_the_server_holds_runs_headless_until_a_tui_takes_it() {
        let t = |id: &str, has_pid, headless| LiveThread {
            session_id: id.into(),
            has_pid,
            headless,
        };
        let threads = vec![
            t("queued", false, false),
            t("tui", true, false),
            t("back-in-a-tui", false, true),
            t("still-headless", false, true),
            t("not-visible", false, false),
        ];
        let marks = headless_marks(&threads, |id| match id {
            "queued" | "still-headless" => ThreadHolder::ServerAlone,
            "tui" | "back-in-a-tui" => ThreadHolder::Tui,
            _ => ThreadHolder::Unknown,
        });
        assert_eq!(
            marks,
            vec![
                ("queued".to_string(), true),
                ("back-in-a-tui".to_string(), false)
            ]
        );
        // Through the registry: the session says so, and stays live.
        let sink = FeedSink::without_history(SessionsRegistry::new());
        let registry = &*sink.registry;
        let mut book = ThreadBook::new();
        known(&mut book, "queued");
        let h = book.handle(
            parse_server_message(&status(
                "queued",
                json!({"type": "active", "activeFlags": []}),
                t0().timestamp_millis(),
            ))
            .unwrap(),
            t0(),
        );
        apply_outputs(
            &sink,
            h.observations
                .into_iter()
                .map(FeedOutput::observe)
                .collect(),
        );
        let mut obs = book.observation("queued", EventKind::Sighting, t0());
        obs.headless = Some(true);
        apply_outputs(&sink, vec![FeedOutput::observe(obs)]);
        let s = registry.get("queued").unwrap();
        assert!(s.headless);
        assert_eq!((s.state, s.pid), (SessionState::Working, None));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_starts_over_after_a_connection() {
        let mut b = Backoff::default();
        let waits: Vec<Duration> = (0..8).map(|_| b.failed()).collect();
        assert_eq!(waits[0], FIRST_BACKOFF);
        assert_eq!(waits[1], FIRST_BACKOFF * 2);
        assert!(waits.iter().all(|w| *w <= MAX_BACKOFF));
        assert_eq!(*waits.last().unwrap(), MAX_BACKOFF);
        b.reset();
        assert_eq!(b.failed(), FIRST_BACKOFF);
    }

    #[test]
    fn the_daemon_pid_file_is_json_with_a_pid() {
        assert_eq!(
            parse_daemon_pid(r#"{"pid":6972,"processStartTime":"Tue Dec  1 03:07:36 2026"}"#),
            Some(6972)
        );
        assert_eq!(parse_daemon_pid("123\n"), Some(123));
        assert_eq!(parse_daemon_pid(r#"{"pid":0}"#), None);
        assert_eq!(parse_daemon_pid("garbage"), None);
    }
    /// How many times `wait_for_server` looks for a server at `home` within `within`, with
    /// `recheck`, when none ever runs.
    #[cfg(unix)]
    async fn looks_for_no_server(home: &Path, recheck: Duration, within: Duration) -> u32 {
        let looks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = looks.clone();
        let look = Arc::new(move |_: &Path| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            None
        });
        let token = CancellationToken::new();
        let waited =
            tokio::time::timeout(within, wait_for_server(home, look, recheck, &token)).await;
        assert!(waited.is_err(), "no server was found");
        looks.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[tokio::test(start_paused = true)]
    async fn with_no_codex_server_the_feed_looks_once_a_minute_not_every_two_seconds() {
        // Most users run no Codex app server: the feed looked for one every 2 s all day (300
        // looks in ten minutes).
        let home = tempfile::tempdir().unwrap();
        let looks =
            looks_for_no_server(home.path(), ABSENT_RECHECK, Duration::from_secs(600)).await;
        assert!((1..=11).contains(&looks), "{looks} looks in ten minutes");
    }

    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_no_codex_home_at_all_the_feed_waits_for_the_recheck_and_does_not_spin() {
        // Codex not installed: no folder to watch. The feed once looked again at once, forever
        // (a core at 100 %, a thread made and ended every 2.5 ms).
        let parent = tempfile::tempdir().unwrap();
        let home = parent.path().join("no-codex-here");
        let looks =
            looks_for_no_server(&home, Duration::from_secs(3600), Duration::from_millis(500)).await;
        assert_eq!(
            looks, 1,
            "{looks} looks in half a second with an hour's recheck"
        );
    }

    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_codex_server_that_starts_is_found_at_once_not_at_the_recheck() {
        // The positive control, with real files and real inotify: a server starting (its
        // socket listening, its pid file written) is found although the recheck is an hour.
        let home = tempfile::tempdir().unwrap();
        let token = CancellationToken::new();
        let look = Arc::new(|home: &Path| running_server(home));
        let found = tokio::spawn({
            let (home, token) = (home.path().to_path_buf(), token.clone());
            async move { wait_for_server(&home, look, Duration::from_secs(3600), &token).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let socket = home.path().join(CONTROL_SOCKET);
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let pid_file = home.path().join(DAEMON_PID_FILE);
        std::fs::create_dir_all(pid_file.parent().unwrap()).unwrap();
        std::fs::write(&pid_file, format!("{{\"pid\": {}}}", std::process::id())).unwrap();
        let Ok(found) = tokio::time::timeout(Duration::from_secs(10), found).await else {
            panic!("not found within 10 s: only the hour's recheck would have found it");
        };
        let found = found.unwrap();
        assert_eq!(found, Some(std::process::id()));
        token.cancel();
    }
}
