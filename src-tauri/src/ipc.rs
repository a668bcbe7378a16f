//! Every type that crosses the boundary between the shell and the web UI, in one place.
//!
//! The UI's TypeScript types are generated from these (and from the core types they contain) by
//! the test in `bindings.rs`; the committed `ui/src/bindings.ts` must match, or that test fails.
//! Event names live here too, so the shell and the UI wrapper (`ui/src/ipc.ts`) spell them from
//! one list.

use agent_tray::model::{Agent, SessionKey};
use agent_tray::notify_policy::NotifySettings;
use agent_tray::tray_model::SessionView;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A session was added or changed (`Upsert`), or must leave the window (`Removed`).
pub const EVENT_SESSIONS: &str = "sessions-changed";
/// The user chose a session in the tray menu or a notification: show it.
pub const EVENT_FOCUS: &str = "focus-session";
/// Settings changed (from the window or elsewhere).
pub const EVENT_SETTINGS: &str = "settings-changed";
/// The tray's "Settings" item: open the settings panel.
pub const EVENT_OPEN_SETTINGS: &str = "open-settings";
/// The installer ran (from the tray menu): its [`InstallReport`].
pub const EVENT_INSTALL_RESULT: &str = "install-result";

/// The payload of [`EVENT_SESSIONS`]. `seq` is the registry sequence number the row was
/// computed at: the window drops an event older than what it shows (see [`Snapshot::seq`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionEvent {
    Upsert {
        #[ts(type = "number")]
        seq: u64,
        view: Box<SessionView>,
    },
    Removed {
        #[ts(type = "number")]
        seq: u64,
        session_id: String,
        /// The removed row's host (`null`: this machine): rows are keyed by host and id.
        #[serde(default)]
        host: Option<String>,
    },
}

/// The payload of [`EVENT_FOCUS`]: the session to show, by host (`null`: this machine) and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct FocusSession {
    pub session_id: String,
    #[serde(default)]
    pub host: Option<String>,
    /// Put the keyboard in its reply field (an alert's Reply where the server takes no typed
    /// reply itself).
    #[serde(default)]
    pub reply: bool,
}

/// What the user had in the window: kept by the shell, because the window (and its webview) is
/// destroyed when closed and created again when opened, and must come back as it was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct WindowMemory {
    /// The text filter, as typed.
    pub filter_text: String,
    /// The agent filter; `None` shows every agent.
    pub filter_agent: Option<Agent>,
    /// The selected session (host and id), if any.
    pub selected: Option<SessionKey>,
    /// How far the session list was scrolled, in CSS pixels.
    pub scroll_top: f64,
    /// Set by the shell only, read once: open the settings panel at start (the tray's
    /// "Settings" was chosen while the window was closed).
    #[serde(default)]
    pub open_settings: bool,
    /// Set by the shell only, read once: the installer's report to show at start (it ran from
    /// the tray while the window was closed).
    #[serde(default)]
    pub install_report: Option<InstallReport>,
    /// Set by the shell only, read once: show this session, with no filter hiding it (the tray
    /// menu or an alert chose it while the window's page was not yet listening).
    #[serde(default)]
    pub focus: Option<SessionKey>,
    /// Set by the shell only, read once with `focus`: put the keyboard in that session's reply
    /// field (an alert's Reply chose it).
    #[serde(default)]
    pub focus_reply: bool,
}

/// Whether this app hosts the engine, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EngineStatus {
    /// The app owns the control socket: hooks, `agent-tray list` and `doctor` talk to it.
    Running { socket: String },
    /// The engine could not start; `message` says why in words (e.g. a daemon owns the socket).
    NotRunning { message: String },
}

/// Everything the window needs at load; events keep it current afterwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Snapshot {
    /// The registry sequence number these rows are current to: they include every change up
    /// to it. Events carry the same numbers, so the window can tell which is newer.
    #[ts(type = "number")]
    pub seq: u64,
    /// The window's rows, by the core's `window_rows` rules: every live session, and the 20
    /// most recent endings of the last day that were not dismissed.
    pub sessions: Vec<SessionView>,
    pub engine: EngineStatus,
    pub settings: AppSettings,
    pub version: String,
    /// Each remote's link (`agent-tray remote add`), by name.
    #[serde(default)]
    pub remotes: Vec<agent_tray::remote::RemoteLinkStatus>,
    /// The plans' rate-limit windows the agents reported, still current
    /// ([`agent_tray::plan_limits`]); empty where none did.
    #[serde(default)]
    pub limits: Vec<agent_tray::plan_limits::PlanWindow>,
}

/// The app's settings, persisted as JSON in the data folder and applied live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct AppSettings {
    pub notifications: NotifySettings,
    /// macOS: show how many sessions need you (`2`) beside the menu-bar icon.
    pub menu_bar_counts: bool,
    /// Which agents' sessions to show and alert about.
    pub agents: Vec<Agent>,
    /// Start the app when the user logs in.
    pub launch_at_login: bool,
    /// End a session silent this long with no live process (seconds); None keeps the engine's
    /// default (300 s, or `AGENT_TRAY_SESSION_TTL`).
    pub session_ttl_secs: Option<u32>,
    /// Put back the hooks `install` wrote as soon as they are found removed or changed (off:
    /// the alert offers a "Repair" button instead).
    pub repair_hooks_automatically: bool,
    /// Keep history this many days (1 to 36500); None keeps the engine's default (90 days, or
    /// `AGENT_TRAY_HISTORY_DAYS`).
    pub history_days: Option<u32>,
}

impl Default for AppSettings {
    fn default() -> Self {
        AppSettings {
            notifications: NotifySettings::default(),
            menu_bar_counts: true,
            agents: Agent::ALL.to_vec(),
            launch_at_login: false,
            session_ttl_secs: None,
            repair_hooks_automatically: false,
            history_days: None,
        }
    }
}

impl AppSettings {
    pub fn watches(&self, agent: Agent) -> bool {
        self.agents.contains(&agent)
    }
}

/// What the UI receives when a command fails: a stable code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, thiserror::Error)]
#[error("{message}")]
pub struct CommandError {
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    UnknownSession,
    NothingToOpen,
    LaunchFailed,
    SettingsNotSaved,
    InstallerFailed,
    HistoryUnavailable,
    /// An answer to a permission request was refused (unknown, answered, expired, moved on).
    AnswerRefused,
    /// An answer was accepted but the agent's hook had stopped waiting for it.
    AnswerNotDelivered,
    /// A send or a stop was checked and not done: nothing reached the agent (not idle, no way
    /// in, a remote's session, text that cannot be typed).
    TalkRefused,
    /// A send or a stop was tried and the agent's side failed or did not answer in time: it may
    /// or may not have taken it (never retried).
    TalkNotDelivered,
    /// The window's call named no command the app has, or its arguments were not the
    /// command's (a page and an app of different versions).
    BadRequest,
}

/// Which answer a button or key gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AnswerChoice {
    Allow,
    AllowForSession,
    Deny,
}

/// Where in the app an answer was given (recorded with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AnswerFrom {
    Window,
    Popover,
}

impl CommandError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        CommandError {
            code,
            message: message.into(),
        }
    }
}

/// The result of "Install hooks…": what the installer printed, for the window to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct InstallReport {
    pub ok: bool,
    pub output: String,
}

/// What the History view asks for (the filters of `agent-tray history`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct HistoryQuery {
    /// Text in the folder, repo, branch, title or model (any case); empty: everything.
    pub search: String,
    pub agent: Option<Agent>,
    /// A project's name (the repo's, else the folder's); None: every project.
    pub project: Option<String>,
    /// At most this many sessions, most recent first (0: the default, 200).
    pub limit: u32,
}
