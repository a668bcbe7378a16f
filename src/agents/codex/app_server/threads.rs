//! The thread book: what one connection knows of each of the server's threads, and what each
//! message means for its session (observations, the requests to send, token usage), plus the
//! pure decisions over the sessions of those threads (a TUI gone, a thread running headless).
//! No socket and no clock: the connection in [`super::io`] feeds it.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::protocol::{
    str_of, AppServerTokenUsage, ClientRequest, ReplyTo, ServerMessage, ServerQuestion,
    ThreadStatus, TurnEnd, ID_INITIALIZE, ID_LOADED_LIST,
};
use crate::answering::AskCall;
use crate::feeds::FeedOutput;
use crate::model::{Agent, EndReason, EventKind, Observation, ReportedStatus, Source};
use crate::process::PidProbe;
use crate::usage::{TokenUsage, UsageKind, UsageReport};

/// What `waiting_for` says for each kind of wait (the registry reads "permission" as a
/// permission wait, anything else as a wait for input).
pub const WAITING_ON_APPROVAL: &str = "permission prompt";
pub const WAITING_ON_USER_INPUT: &str = "user input";

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
    /// The turn running now (from `turn/started` to `turn/completed`): what a stop interrupts.
    running_turn: Option<String>,
}

/// The result of handling one message.
#[derive(Debug, Default, PartialEq)]
pub struct Handled {
    pub observations: Vec<Observation>,
    pub requests: Vec<ClientRequest>,
    /// Token usage of a session's thread (its running total, which the store reduces to what is
    /// new, so the rollout feed reporting the same thread counts nothing twice).
    pub usage: Vec<UsageReport>,
    /// Questions and approvals the server asks of a session's thread, to offer for an answer
    /// from here.
    pub asks: Vec<ServerAsk>,
    /// The server's requests answered by some client (the TUI, or us): ours close.
    pub resolved: Vec<Value>,
}

/// A request of the server's that can be answered from here: the request opened for it is
/// answered by a reply to `request_id`, shaped as `reply` says.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerAsk {
    pub request_id: Value,
    pub reply: ReplyTo,
    /// The wait it puts the session in (what `thread/status/changed` says too).
    pub observation: Observation,
    pub call: AskCall,
}

/// The tool a command approval is listed under: what Codex's own hook calls it.
pub const COMMAND_TOOL: &str = "Bash";

/// The request to open for a command's approval: the command whole, as the server will run it,
/// with the model's reason. Nothing for the session is offered: Codex's lasting grant
/// (`acceptWithExecpolicyAmendment`) writes a rule beyond the session.
pub fn server_approval_call(
    item_id: Option<&str>,
    command: &str,
    cwd: Option<&str>,
    reason: Option<&str>,
) -> Option<AskCall> {
    use crate::answering::{AskDetail, MAX_INPUT_BYTES};
    let input = serde_json::json!({"command": command, "description": reason}).to_string();
    if input.len() > MAX_INPUT_BYTES {
        return None;
    }
    let input_digest = crate::answering::digest(COMMAND_TOOL, &input);
    Some(AskCall {
        call_id: item_id.map_or_else(|| input_digest.clone(), str::to_string),
        input_digest,
        suggests_for_session: false,
        detail: AskDetail {
            tool: COMMAND_TOOL.to_string(),
            command: Some(command.to_string()),
            description: reason.map(str::to_string),
            cwd: cwd.map(str::to_string),
            input,
            ..AskDetail::default()
        },
    })
}

/// The tool Codex asks with, as requests name it.
pub const QUESTION_TOOL: &str = "request_user_input";

/// The request to open for Codex's questions, or `None` where they cannot be answered from here
/// whole: a secret (a password the terminal hides), none at all, more than a request shows, an
/// option without a label or one twice, a question with no option to choose.
pub fn server_question_call(
    item_id: Option<&str>,
    questions: &[ServerQuestion],
    cwd: Option<&str>,
) -> Option<AskCall> {
    use crate::answering::{AskDetail, Question, QuestionOption, MAX_INPUT_BYTES};
    use agent_tray_domain::question::{MAX_OPTIONS, MAX_QUESTIONS};
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        return None;
    }
    let mut asked = Vec::with_capacity(questions.len());
    for q in questions {
        if q.is_secret || q.options.is_empty() || q.options.len() > MAX_OPTIONS {
            return None;
        }
        let mut options: Vec<QuestionOption> = Vec::with_capacity(q.options.len());
        for (label, description) in &q.options {
            if label.trim().is_empty() || options.iter().any(|o| &o.label == label) {
                return None;
            }
            options.push(QuestionOption {
                label: label.clone(),
                description: description.clone(),
            });
        }
        asked.push(Question {
            question: q.question.clone(),
            header: q.header.clone(),
            options,
            multi_select: false,
            allows_other: q.is_other,
        });
    }
    let input = serde_json::json!({"questions": questions.iter().map(|q| serde_json::json!({
        "id": q.id,
        "header": q.header,
        "question": q.question,
        "isOther": q.is_other,
        "options": q.options.iter().map(|(label, description)| serde_json::json!({"label": label, "description": description})).collect::<Vec<_>>(),
    })).collect::<Vec<_>>()})
    .to_string();
    if input.len() > MAX_INPUT_BYTES {
        return None;
    }
    let input_digest = crate::answering::digest(QUESTION_TOOL, &input);
    Some(AskCall {
        call_id: item_id.map_or_else(|| input_digest.clone(), str::to_string),
        input_digest,
        suggests_for_session: false,
        detail: AskDetail {
            tool: QUESTION_TOOL.to_string(),
            cwd: cwd.map(str::to_string),
            input,
            questions: Some(asked),
            ..AskDetail::default()
        },
    })
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

    /// The turn the thread runs now, where its `turn/started` was seen.
    pub fn running_turn(&self, thread_id: &str) -> Option<&str> {
        self.threads
            .get(thread_id)
            .and_then(|e| e.running_turn.as_deref())
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
            ClientRequest::Unsubscribe(_)
            | ClientRequest::TurnStart { .. }
            | ClientRequest::TurnInterrupt { .. } => {
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

    pub(super) fn observation(
        &self,
        thread_id: &str,
        event: EventKind,
        at: DateTime<Utc>,
    ) -> Observation {
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
            ServerMessage::TurnStarted {
                thread_id,
                turn_id,
                at,
            } => {
                if let Some(entry) = self.threads.get_mut(&thread_id) {
                    entry.running_turn = turn_id;
                }
                if self.is_session(&thread_id) {
                    out.observations.push(self.observation(
                        &thread_id,
                        EventKind::TaskStarted,
                        at.unwrap_or(now),
                    ));
                }
            }
            ServerMessage::TurnCompleted { thread_id, end, at } => {
                if let Some(entry) = self.threads.get_mut(&thread_id) {
                    entry.running_turn = None;
                }
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
            ServerMessage::UserInputRequest {
                request_id,
                thread_id,
                item_id,
                questions,
            } => {
                if !self.is_session(&thread_id) {
                    return out;
                }
                let cwd = self.threads.get(&thread_id).and_then(|e| e.cwd.clone());
                let Some(call) =
                    server_question_call(item_id.as_deref(), &questions, cwd.as_deref())
                else {
                    tracing::debug!(%thread_id, "codex_question_left_to_the_terminal");
                    return out;
                };
                let mut observation = self.observation(&thread_id, EventKind::StatusReport, now);
                observation.status = Some(ReportedStatus::Waiting);
                observation.waiting_for = Some(WAITING_ON_USER_INPUT.to_string());
                out.asks.push(ServerAsk {
                    request_id,
                    reply: ReplyTo::Questions {
                        question_ids: questions.into_iter().map(|q| q.id).collect(),
                    },
                    observation,
                    call,
                });
            }
            ServerMessage::CommandApproval {
                request_id,
                thread_id,
                item_id,
                command,
                cwd,
                reason,
                decisions,
            } => {
                if !self.is_session(&thread_id) {
                    return out;
                }
                let cwd = cwd.or_else(|| self.threads.get(&thread_id).and_then(|e| e.cwd.clone()));
                let (Some(reply), Some(call)) = (
                    ReplyTo::approval(&decisions),
                    server_approval_call(
                        item_id.as_deref(),
                        &command,
                        cwd.as_deref(),
                        reason.as_deref(),
                    ),
                ) else {
                    tracing::debug!(%thread_id, "codex_approval_left_to_the_terminal");
                    return out;
                };
                let mut observation = self.observation(&thread_id, EventKind::StatusReport, now);
                observation.status = Some(ReportedStatus::Waiting);
                observation.waiting_for = Some(WAITING_ON_APPROVAL.to_string());
                out.asks.push(ServerAsk {
                    request_id,
                    reply,
                    observation,
                    call,
                });
            }
            ServerMessage::RequestResolved { request_id, .. } => out.resolved.push(request_id),
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::agents::codex::app_server::protocol::parse_server_message;
    use crate::feeds::{apply_outputs, FeedSink};
    use crate::model::SessionState;
    use crate::registry::SessionsRegistry;
    use chrono::TimeZone;
    use serde_json::{json, Value};

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
        let registry = std::sync::Arc::new(SessionsRegistry::new());
        let sink = FeedSink::without_history(registry.clone());
        let registry = &*registry;
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

    /// The recorded question (Plan mode, two questions) and its `serverRequest/resolved`.
    fn question_fixture() -> Vec<String> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/codex/real-0.171.0/app-server-question.jsonl"
        );
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["msg"].to_string())
            .collect()
    }

    // Issue 39: Codex's `requestUserInput`, as 0.171 sent it to a subscribed client, opens a
    // question request for the session's thread: each question whole (header, options with
    // their descriptions, "Other" where isOther), single-choice, keyed by the model's ids.
    #[test]
    fn a_recorded_request_user_input_becomes_a_question_of_the_thread_s_session() {
        let lines = question_fixture();
        let ServerMessage::UserInputRequest { thread_id, .. } =
            parse_server_message(&lines[0]).unwrap()
        else {
            panic!("not read as a question: {}", lines[0]);
        };
        let mut book = ThreadBook::new();
        // A thread the book does not know as a session's: nothing is opened.
        let h = book.handle(parse_server_message(&lines[0]).unwrap(), t0());
        assert!(h.asks.is_empty());
        known(&mut book, &thread_id);
        let h = book.handle(parse_server_message(&lines[0]).unwrap(), t0());
        assert_eq!(h.asks.len(), 1);
        let ask = &h.asks[0];
        assert_eq!(ask.request_id, json!(0));
        assert_eq!(
            ask.reply,
            ReplyTo::Questions {
                question_ids: vec!["database".into(), "eviction".into()]
            }
        );
        assert_eq!(ask.observation.session_id, thread_id);
        assert_eq!(ask.observation.status, Some(ReportedStatus::Waiting));
        assert_eq!(
            ask.observation.waiting_for.as_deref(),
            Some(WAITING_ON_USER_INPUT)
        );
        assert_eq!(ask.call.call_id, "call_mock_3");
        assert_eq!(ask.call.detail.tool, QUESTION_TOOL);
        assert_eq!(ask.call.detail.cwd.as_deref(), Some("/home/dev/proj"));
        let questions = ask.call.detail.questions.clone().unwrap();
        assert_eq!(questions.len(), 2);
        assert_eq!(
            questions[0].question,
            "Which database should the cache use?"
        );
        assert_eq!(questions[0].header.as_deref(), Some("Database"));
        assert_eq!(
            questions[0]
                .options
                .iter()
                .map(|o| (o.label.as_str(), o.description.as_deref()))
                .collect::<Vec<_>>(),
            [
                ("Postgres", Some("the server you already run")),
                ("SQLite", Some("a file beside the app"))
            ]
        );
        assert!(questions.iter().all(|q| !q.multi_select && q.allows_other));
        // The answer the terminal (or we) gave: resolved, by the same id.
        let h = book.handle(parse_server_message(&lines[1]).unwrap(), t0());
        assert_eq!(h.resolved, [json!(0)]);
    }

    // What cannot be answered whole from here is left to the terminal: a secret, a question with
    // no option, a label twice, more questions than a request shows.
    #[test]
    fn a_secret_or_a_question_not_shown_whole_is_left_to_the_terminal() {
        let q = |id: &str| ServerQuestion {
            id: id.into(),
            header: None,
            question: format!("question {id}?"),
            is_other: false,
            is_secret: false,
            options: vec![("A".into(), None), ("B".into(), Some("b".into()))],
        };
        assert!(server_question_call(Some("c1"), &[q("x")], None).is_some());
        let secret = ServerQuestion {
            is_secret: true,
            ..q("x")
        };
        assert!(server_question_call(Some("c1"), &[q("y"), secret], None).is_none());
        let no_options = ServerQuestion {
            options: vec![],
            ..q("x")
        };
        assert!(server_question_call(Some("c1"), &[no_options], None).is_none());
        let twice = ServerQuestion {
            options: vec![("A".into(), None), ("A".into(), None)],
            ..q("x")
        };
        assert!(server_question_call(Some("c1"), &[twice], None).is_none());
        let many: Vec<_> = (0..=agent_tray_domain::question::MAX_QUESTIONS)
            .map(|i| q(&i.to_string()))
            .collect();
        assert!(server_question_call(Some("c1"), &many, None).is_none());
        assert!(server_question_call(Some("c1"), &[], None).is_none());
        // Without an item id the call is named by its digest, the same for the same questions.
        let a = server_question_call(None, &[q("x")], None).unwrap();
        assert_eq!(a.call_id, a.input_digest);
        assert_eq!(a, server_question_call(None, &[q("x")], None).unwrap());
    }

    // The reply Codex took (seen with 0.171): each answer under its question's id, the labels
    // then the user's own words; a decline is no answers at all.
    #[test]
    fn the_reply_keys_each_answer_by_its_question_id_and_a_decline_answers_none() {
        use agent_tray_domain::question::QuestionAnswer;
        let ids = ["database".to_string(), "eviction".to_string()];
        let answers = [
            QuestionAnswer {
                choices: vec!["SQLite".into()],
                text: None,
            },
            QuestionAnswer {
                choices: vec![],
                text: Some("my own words".into()),
            },
        ];
        assert_eq!(
            crate::agents::codex::app_server::user_input_reply(&json!(0), &ids, Some(&answers)),
            json!({"id": 0, "result": {"answers": {
                "database": {"answers": ["SQLite"]},
                "eviction": {"answers": ["my own words"]}}}})
        );
        assert_eq!(
            crate::agents::codex::app_server::user_input_reply(&json!("r-7"), &ids, None),
            json!({"id": "r-7", "result": {"answers": {}}})
        );
        // A request id that is not a question's, or a resolved without one, is nothing.
        let approval = json!({"id": 3, "method": "item/commandExecution/requestApproval", "params": {"threadId": "t"}});
        assert_eq!(
            parse_server_message(&approval.to_string()).unwrap(),
            ServerMessage::Other
        );
        let resolved = json!({"method": "serverRequest/resolved", "params": {"threadId": "t"}});
        assert_eq!(
            parse_server_message(&resolved.to_string()).unwrap(),
            ServerMessage::Other
        );
    }

    // Issue 39: the recorded approval request of 0.171 opens a permission request of the
    // thread's session with the command whole as the server runs it; Allow accepts, a deny
    // cancels (0.171 offers no plain decline here), nothing is offered for the session.
    #[test]
    fn a_recorded_command_approval_becomes_a_permission_request_answered_by_accept_or_cancel() {
        use crate::agents::codex::app_server::server_reply;
        use crate::answering::HookDecision;
        let line = fixture()
            .into_iter()
            .find(|l| l.contains("item/commandExecution/requestApproval"))
            .unwrap();
        let msg = parse_server_message(&line).unwrap();
        let ServerMessage::CommandApproval {
            ref thread_id,
            ref decisions,
            ..
        } = msg
        else {
            panic!("not read as an approval: {line}");
        };
        assert_eq!(decisions, &["accept", "cancel"]);
        let thread_id = thread_id.clone();
        let mut book = ThreadBook::new();
        assert!(
            book.handle(msg.clone(), t0()).asks.is_empty(),
            "not a known session's thread"
        );
        known(&mut book, &thread_id);
        let h = book.handle(msg, t0());
        let ask = &h.asks[0];
        assert_eq!(
            ask.reply,
            ReplyTo::Approval {
                deny: "cancel".into()
            }
        );
        assert_eq!(
            ask.observation.waiting_for.as_deref(),
            Some(WAITING_ON_APPROVAL)
        );
        assert_eq!(ask.call.call_id, "call_mock_3");
        assert_eq!(ask.call.detail.tool, COMMAND_TOOL);
        assert_eq!(
            ask.call.detail.command.as_deref(),
            Some("/bin/bash -lc 'touch x_file'")
        );
        assert_eq!(
            ask.call.detail.description.as_deref(),
            Some("mock wants to run touch x_file outside the sandbox")
        );
        assert_eq!(ask.call.detail.cwd.as_deref(), Some("/home/dev/proj"));
        assert!(!ask.call.suggests_for_session);
        let id = &ask.request_id;
        assert_eq!(
            server_reply(id, &ask.reply, &HookDecision::Allow),
            Some(json!({"id": 0, "result": {"decision": "accept"}}))
        );
        assert_eq!(
            server_reply(id, &ask.reply, &HookDecision::Deny { message: None }),
            Some(json!({"id": 0, "result": {"decision": "cancel"}}))
        );
        // Nothing else is an answer to it: a grant for the session, answers, no decision.
        assert_eq!(
            server_reply(id, &ask.reply, &HookDecision::AllowForSession),
            None
        );
        assert_eq!(
            server_reply(id, &ask.reply, &HookDecision::Answers { answers: vec![] }),
            None
        );
        assert_eq!(
            server_reply(
                id,
                &ask.reply,
                &HookDecision::None {
                    reason: "moved on".into()
                }
            ),
            None
        );
        // `decline` where offered; neither: left to the terminal.
        assert_eq!(
            ReplyTo::approval(&["accept".into(), "decline".into(), "cancel".into()]),
            Some(ReplyTo::Approval {
                deny: "decline".into()
            })
        );
        assert_eq!(ReplyTo::approval(&["accept".into()]), None);
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

    fn status(thread: &str, status: Value, ms: i64) -> String {
        json!({"method": "thread/status/changed",
               "params": {"threadId": thread, "status": status}, "emittedAtMs": ms})
        .to_string()
    }

    #[test]
    fn waiting_on_user_input_is_a_wait_for_input_and_system_error_an_error() {
        let registry = std::sync::Arc::new(SessionsRegistry::new());
        let sink = FeedSink::without_history(registry.clone());
        let registry = &*registry;
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
        let registry = std::sync::Arc::new(SessionsRegistry::new());
        let sink = FeedSink::without_history(registry.clone());
        let registry = &*registry;
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
}
