// Generated from the Rust types by src-tauri/src/bindings.rs. Do not edit by hand:
// UPDATE_BINDINGS=1 cargo test -p agent-tray-desktop bindings

export type Agent = "claude" | "codex";

export type SessionState = "starting" | "working" | "waiting_for_permission" | "waiting_for_input" | "idle" | "ended";

export type EndReason = "session_end" | "process_gone" | "pid_recycled" | "files_say_ended" | "ttl" | "evicted";

export type Session = { session_id: string, agent: Agent, state: SessionState, cwd: string | null, 
/**
 * The git toplevel's folder name, where known.
 */
repo: string | null, branch: string | null, model: string | null, transcript_path: string | null, pid: number | null, 
/**
 * The process identity token the pid watcher captured (opaque).
 */
pid_start: string | null, 
/**
 * A UserPromptSubmit (or equivalent) was seen.
 */
prompted: boolean, 
/**
 * A stream wrapper reports this session; its state is authoritative.
 */
streamed: boolean, started_at: string, last_seen: string, state_since: string, 
/**
 * The last event applied, as the agents spell it.
 */
last_event: string | null, last_tool: string | null, 
/**
 * The API error of a failed turn (StopFailure).
 */
error: string | null, 
/**
 * What a wait is for, where known ("permission prompt", the tool's name).
 */
waiting_for: string | null, end_reason: EndReason | null, title: string | null, tmux: string | null, tty: string | null, 
/**
 * Subagents running under this session now.
 */
subagents: number, 
/**
 * When the current turn began (the last transition into `working` from a non-working state).
 */
turn_started_at: string | null, 
/**
 * Run by Codex's background app-server with no terminal attached (`codex queue`, remote
 * control): live, but with no process of its own to watch or focus.
 */
headless: boolean, };

export type Section = "needs_you" | "working" | "idle" | "ended";

export type SessionView = { session: Session, 
/**
 * The repo's name, else the folder's name, else a short form of the session id.
 */
project: string, section: Section, 
/**
 * The state in words ("needs permission").
 */
state_label: string, 
/**
 * What to type to resume the session (`claude --resume ID` / `codex resume ID`).
 */
resume_command: string, };

export type TrayStatus = "none" | "all_idle" | "working" | "needs_you";

export type AlertKind = "process_died" | "needs_permission" | "needs_input" | "long_turn_finished" | "turn_failed";

export type NotifySettings = { 
/**
 * The master switch.
 */
enabled: boolean, process_died: boolean, needs_permission: boolean, needs_input: boolean, long_turn_finished: boolean, turn_failed: boolean, 
/**
 * A finished turn alerts only when it ran at least this long.
 */
long_turn_secs: number, 
/**
 * At most one alert per session and kind within this many seconds.
 */
cooldown_secs: number, 
/**
 * Alert for a subagent's waits too.
 */
include_subagents: boolean, };

export type AppSettings = { notifications: NotifySettings, 
/**
 * macOS: show the counts (`2 ⚙ 1 !`) beside the menu-bar icon.
 */
menu_bar_counts: boolean, 
/**
 * Which agents' sessions to show and alert about.
 */
agents: Array<Agent>, 
/**
 * Start the app when the user logs in.
 */
launch_at_login: boolean, 
/**
 * End a session silent this long with no live process (seconds); None keeps the engine's
 * default (300 s, or `AGENT_TRAY_SESSION_TTL`).
 */
session_ttl_secs: number | null, 
/**
 * Put back the hooks `install` wrote as soon as they are found removed or changed (off:
 * the alert offers a "Repair" button instead).
 */
repair_hooks_automatically: boolean, };

export type EngineStatus = { "kind": "running", socket: string, } | { "kind": "not_running", message: string, };

export type Snapshot = { 
/**
 * The registry sequence number these rows are current to: they include every change up
 * to it. Events carry the same numbers, so the window can tell which is newer.
 */
seq: number, 
/**
 * The window's rows, by the core's `window_rows` rules: every live session, and the 20
 * most recent endings of the last day that were not dismissed.
 */
sessions: Array<SessionView>, engine: EngineStatus, settings: AppSettings, version: string, };

export type SessionEvent = { "kind": "upsert", seq: number, view: SessionView, } | { "kind": "removed", seq: number, session_id: string, };

export type FocusSession = { session_id: string, };

export type WindowMemory = { 
/**
 * The text filter, as typed.
 */
filter_text: string, 
/**
 * The agent filter; `None` shows every agent.
 */
filter_agent: Agent | null, 
/**
 * The selected session, if any.
 */
selected: string | null, 
/**
 * How far the session list was scrolled, in CSS pixels.
 */
scroll_top: number, 
/**
 * Set by the shell only, read once: open the settings panel at start (the tray's
 * "Settings" was chosen while the window was closed).
 */
open_settings: boolean, 
/**
 * Set by the shell only, read once: the installer's report to show at start (it ran from
 * the tray while the window was closed).
 */
install_report: InstallReport | null, };

export type InstallReport = { ok: boolean, output: string, };

export type ErrorCode = "unknown_session" | "nothing_to_open" | "launch_failed" | "settings_not_saved" | "installer_failed";

export type CommandError = { code: ErrorCode, message: string, };

export type AgentInfo = { agent: Agent, name: string, };

export type SectionInfo = { section: Section, title: string, };

export const AGENTS: AgentInfo[] = [{"agent":"claude","name":"Claude"},{"agent":"codex","name":"Codex"}];

export const SECTIONS: SectionInfo[] = [{"section":"needs_you","title":"Needs you"},{"section":"working","title":"Working"},{"section":"idle","title":"Idle"},{"section":"ended","title":"Ended recently"}];

export const EVENTS = {"sessions":"sessions-changed","focus":"focus-session","settings":"settings-changed","openSettings":"open-settings","installResult":"install-result"} as const;
