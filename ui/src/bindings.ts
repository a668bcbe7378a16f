// Generated from the Rust types by src-tauri/src/bindings.rs. Do not edit by hand:
// UPDATE_BINDINGS=1 cargo test -p agent-tray-desktop bindings

export type Agent = "claude" | "codex" | "gemini" | "qwen" | "copilot" | "opencode" | "kilo" | "pi" | "cline" | "droid" | "crush" | "qoder" | "auggie";

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
 * The remote this session runs on (its name from `agent-tray remote add`); `null` for a
 * session of this machine. Text from configuration: shown as text, never markup.
 */
host: string | null, 
/**
 * Set while the remote's link is down: since when nothing could be heard from it. The state
 * is the last one the remote reported; the session is neither ended nor alerted about.
 */
unreachable_since: string | null, 
/**
 * Run by Codex's background app-server with no terminal attached (`codex queue`, remote
 * control): live, but with no process of its own to watch or focus.
 */
headless: boolean, 
/**
 * The permission requests the agent waits on that can be answered from here (see
 * [`crate::pending`]), oldest first; empty when none. Kept by the engine's book, never by
 * the transition rules.
 */
pending: Array<PendingView>, 
/**
 * Tokens the last turn held in the model's context window, as the agent wrote them (Claude's
 * last main-thread `usage`: input, cache reads and writes, output; Codex's `token_count`
 * `last_token_usage`); `null` where the agent does not tell.
 */
context_tokens: number | null, 
/**
 * The model's context window in tokens, only where the agent itself says it (Codex's
 * `model_context_window`); `null` otherwise: never guessed from a model's name.
 */
context_window: number | null, 
/**
 * When the agent last compacted the conversation (Claude's and Codex's `PreCompact` and
 * `PostCompact`, a `compact` SessionStart); `null` when none was seen.
 */
compacted_at: string | null, 
/**
 * Until when a used-up plan window stops the session (the window's reset time), as the
 * agent reported it (Claude's status line: a window at 100 %); `null` when nothing stops
 * it or nothing was said. Past that time it no longer holds.
 */
blocked_until: string | null, 
/**
 * Whether `agent-tray send` can give the session its next prompt now: it is idle and there
 * is a way in (the agent's own interface, or a terminal that can be typed into). Worked
 * out by the engine each time it lists; never stored.
 */
can_send: boolean, 
/**
 * Whether `agent-tray stop` can end its running turn now (working or waiting, and a way in).
 */
can_stop: boolean, };

export type SessionKey = { host: string | null, session_id: string, };

export type RequestId = string;

export type Accepts = { 
/**
 * "Allow for this session" (Claude's `updatedPermissions`, OpenCode's `always`).
 */
allow_for_session: boolean, 
/**
 * A message with a denial, shown to the model.
 */
deny_message: boolean, };

export type AskDetail = { 
/**
 * The tool, as the agent names it (`Bash`, `Write`, `WebFetch`).
 */
tool: string, 
/**
 * The exact command line, for a shell tool.
 */
command: string | null, 
/**
 * The file a change is to, for an editing tool.
 */
file_path: string | null, 
/**
 * The size in bytes of the change (the new content or the replacement), where it has one.
 */
change_bytes: bigint | null, 
/**
 * The address, for a fetching tool.
 */
url: string | null, 
/**
 * The agent's own one-line description of the call, where it gives one.
 */
description: string | null, 
/**
 * The folder the agent runs in.
 */
cwd: string | null, 
/**
 * The tool's whole input as JSON text.
 */
input: string, 
/**
 * What "allow for this session" would grant, in words; `null` where the agent suggests
 * nothing for the session (`pending --json`'s `for_session`).
 */
for_session: SessionGrant | null, 
/**
 * The questions, for a question (Claude's `AskUserQuestion`): answered with choices and
 * text ([`Answer::Questions`]), never allowed or allowed for the session. Absent for a
 * permission.
 */
questions?: Array<Question> | null, };

export type SessionGrant = { 
/**
 * Each thing granted, in the agent's order, in words ("switch to accept-edits for this
 * session", "add /tmp/api to allowed folders", "allow `Bash(npm test:*)` for this
 * session"); agent text in it is made visible ([`crate::visible`]), never cut.
 */
items: Array<GrantItem>, 
/**
 * Why there is no session grant though the agent suggested one (something in it cannot be
 * shown faithfully); `items` is then empty and "allow for the session" is refused.
 */
withheld: string | null, };

export type GrantItem = { kind: GrantKind, 
/**
 * The item in words.
 */
text: string, };

export type GrantKind = "add_rules" | "replace_rules" | "remove_rules" | "set_mode" | "add_directories" | "remove_directories" | "patterns";

export type ShownRequest = { 
/**
 * The tool and what it does, on one line: `Bash: touch x`. Never cut.
 */
line: string, 
/**
 * What it does (the command; else the address; else the file, for a tool that changes
 * none; else the tool's whole input), each line on a line of its own ending in `⏎`, so a
 * window shows every line. Never cut.
 */
text: string, 
/**
 * How many lines `text` has.
 */
line_count: number, 
/**
 * Whether `line` is the whole request in one short plain line
 * ([`crate::visible::fits_one_line`]): only then may a place that shows one line (an
 * alert's body, a tray menu item) offer Allow beside it. False for a change whose content
 * it does not carry, for an input holding more than its command (and a description or a
 * timeout), and for a remote's request (its fields are bounded, maybe cut).
 */
fits_one_line: boolean, 
/**
 * What kind of request it is and how long, for a place that cannot show it whole:
 * `Bash: a command of 41 lines`.
 */
kind: string, 
/**
 * The agent's own description of the call on one line, made visible (it is the agent's
 * text too: a newline or a bidi control in it must not hide or reorder what is read beside
 * the buttons). Never cut.
 */
description: string | null, 
/**
 * A question's questions as every place shows them, index by index with the asked ones
 * (whose labels are what an answer sends back): every text made visible on one line.
 * Empty for a permission.
 */
questions: Array<ShownQuestion>, };

export type ShownQuestion = { question: string, header: string | null, options: Array<ShownOption>, };

export type ShownOption = { label: string, description: string | null, };

export type RequestKind = "permission" | "question";

export type Question = { 
/**
 * The question's text.
 */
question: string, 
/**
 * The agent's short title for it (Claude's `header`).
 */
header: string | null, options: Array<QuestionOption>, 
/**
 * Whether several options may be chosen.
 */
multi_select: boolean, 
/**
 * Whether the user may answer in words of their own ("Other").
 */
allows_other: boolean, };

export type QuestionOption = { 
/**
 * What the user picks, and what the agent receives.
 */
label: string, 
/**
 * What the agent says the choice means.
 */
description: string | null, };

export type QuestionAnswer = { choices: Array<string>, text: string | null, };

export type PendingView = { id: RequestId, session_id: string, 
/**
 * The remote the session runs on; `null` on this machine.
 */
host: string | null, agent: Agent, 
/**
 * `"permission"` or `"question"`.
 */
kind: RequestKind, asked_at: string, 
/**
 * Until when an answer from here can reach the agent; after it the agent asks in its
 * terminal.
 */
answer_by: string, accepts: Accepts, 
/**
 * What the request does as every place shows it: made visible, its line count, and
 * whether a one-line place may offer Allow beside it.
 */
shown: ShownRequest, 
/**
 * The tool, as the agent names it (`Bash`, `Write`, `WebFetch`).
 */
tool: string, 
/**
 * The exact command line, for a shell tool.
 */
command: string | null, 
/**
 * The file a change is to, for an editing tool.
 */
file_path: string | null, 
/**
 * The size in bytes of the change (the new content or the replacement), where it has one.
 */
change_bytes: bigint | null, 
/**
 * The address, for a fetching tool.
 */
url: string | null, 
/**
 * The agent's own one-line description of the call, where it gives one.
 */
description: string | null, 
/**
 * The folder the agent runs in.
 */
cwd: string | null, 
/**
 * The tool's whole input as JSON text.
 */
input: string, 
/**
 * What "allow for this session" would grant, in words; `null` where the agent suggests
 * nothing for the session (`pending --json`'s `for_session`).
 */
for_session: SessionGrant | null, 
/**
 * The questions, for a question (Claude's `AskUserQuestion`): answered with choices and
 * text ([`Answer::Questions`]), never allowed or allowed for the session. Absent for a
 * permission.
 */
questions?: Array<Question> | null, };

export type AnswerChoice = "allow" | "allow_for_session" | "deny";

export type EffectiveChoice = { agent: Agent, enabled: boolean, wait_secs: number, default_wait_secs: number, max_wait_secs: number, on_by_default: boolean, 
/**
 * Whether the terminal keeps its own dialog while the hook waits.
 */
terminal_stays_open: boolean, accepts: Accepts, };

export type AnswerFrom = "window" | "popover";

export type Section = "needs_you" | "working" | "idle" | "ended";

export type ContextView = { 
/**
 * "46% of 258k" where the window is known, else "92k in context".
 */
text: string, 
/**
 * 0–100, where the agent says its window.
 */
percent: number | null, 
/**
 * At or past [`crate::model::CONTEXT_NEARLY_FULL_PERCENT`] (where the alert comes too).
 */
nearly_full: boolean, 
/**
 * Where the window is unknown until something is turned on (Claude Code's status-line
 * bridge): what to do, for the tooltip. Never a guessed size.
 */
window_hint: string | null, };

export type PlanWindow = { agent: Agent, 
/**
 * The remote the account's agent runs on (`null`: this machine).
 */
host: string | null, 
/**
 * Which plan or limit the agent named (Codex's `plan_type`, else its `limit_id`).
 */
account: string, 
/**
 * The window in words: `5h`, `weekly`, `daily`, or its length (`90m`, `3d`).
 */
window: string, 
/**
 * Its length in minutes, where the agent said.
 */
window_minutes: number | null, 
/**
 * Percent of the window used, 0 to 100, as reported.
 */
used_percent: number, 
/**
 * When the window resets, where the agent said.
 */
resets_at: string | null, 
/**
 * When the agent was told (the report's own time).
 */
seen_at: string, 
/**
 * The session whose files carried the report (a click on its alert opens it).
 */
session_id: string, };

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
resume_command: string, 
/**
 * How full the context window is, where the agent says; `null`: it says nothing.
 */
context: ContextView | null, };

export type TrayStatus = "none" | "all_idle" | "working" | "needs_you";

export type AlertKind = "process_died" | "needs_permission" | "needs_input" | "long_turn_finished" | "turn_failed" | "context_nearly_full" | "plan_limit_nearly_used";

export type NotifySettings = { 
/**
 * The master switch.
 */
enabled: boolean, process_died: boolean, needs_permission: boolean, needs_input: boolean, long_turn_finished: boolean, turn_failed: boolean, 
/**
 * A session's context window past [`CONTEXT_ALERT_PERCENT`].
 */
context_nearly_full: boolean, 
/**
 * A plan window past [`LIMIT_ALERT_PERCENT`].
 */
plan_limit_nearly_used: boolean, 
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
 * macOS: show how many sessions need you (`2`) beside the menu-bar icon.
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
repair_hooks_automatically: boolean, 
/**
 * Keep history this many days (1 to 36500); None keeps the engine's default (90 days, or
 * `AGENT_TRAY_HISTORY_DAYS`).
 */
history_days: number | null, };

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
sessions: Array<SessionView>, engine: EngineStatus, settings: AppSettings, version: string, 
/**
 * Each remote's link (`agent-tray remote add`), by name.
 */
remotes: Array<RemoteLinkStatus>, 
/**
 * The plans' rate-limit windows the agents reported, still current
 * ([`agent_tray::plan_limits`]); empty where none did.
 */
limits: Array<PlanWindow>, };

export type SessionEvent = { "kind": "upsert", seq: number, view: SessionView, } | { "kind": "removed", seq: number, session_id: string, 
/**
 * The removed row's host (`null`: this machine): rows are keyed by host and id.
 */
host: string | null, };

export type FocusSession = { session_id: string, host: string | null, 
/**
 * Put the keyboard in its reply field (an alert's Reply where the server takes no typed
 * reply itself).
 */
reply: boolean, };

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
 * The selected session (host and id), if any.
 */
selected: SessionKey | null, 
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
install_report: InstallReport | null, 
/**
 * Set by the shell only, read once: show this session, with no filter hiding it (the tray
 * menu or an alert chose it while the window's page was not yet listening).
 */
focus: SessionKey | null, 
/**
 * Set by the shell only, read once with `focus`: put the keyboard in that session's reply
 * field (an alert's Reply chose it).
 */
focus_reply: boolean, };

export type InstallReport = { ok: boolean, output: string, };

export type ErrorCode = "unknown_session" | "nothing_to_open" | "launch_failed" | "settings_not_saved" | "installer_failed" | "history_unavailable" | "answer_refused" | "answer_not_delivered" | "talk_refused" | "talk_not_delivered" | "bad_request";

export type CommandError = { code: ErrorCode, message: string, };

export type AgentInfo = { agent: Agent, name: string, 
/**
 * The colour the window shows the agent's name in (a CSS colour, from its adapter).
 */
colour: string, 
/**
 * Its icon's characters (white on its colour).
 */
monogram: string, 
/**
 * Whether its permission requests can be answered from outside its terminal at all (see
 * [`crate::answering`]); where not, a wait says to answer in the terminal.
 */
answerable: boolean, };

export type SectionInfo = { section: Section, title: string, };

export type LinkState = "connecting" | "connected" | "unreachable" | "not_running" | "unusable";

export type RemoteLinkStatus = { name: string, destination: string, state: LinkState, 
/**
 * Since when the link has been in this state.
 */
since: string, 
/**
 * One line for people: why it is not connected.
 */
message: string | null, 
/**
 * How many of its sessions the tray holds.
 */
sessions: number, 
/**
 * The remote's `agent-tray` version, once it answered.
 */
remote_version: string | null, };

export type HistoryQuery = { 
/**
 * Text in the folder, repo, branch, title or model (any case); empty: everything.
 */
search: string, agent: Agent | null, 
/**
 * A project's name (the repo's, else the folder's); None: every project.
 */
project: string | null, 
/**
 * At most this many sessions, most recent first (0: the default, 200).
 */
limit: number, };

export type TimeSplit = { working_secs: number, 
/**
 * Waiting for permission, for input, or idle after a turn (see [`waiting`]).
 */
waiting_on_you_secs: number, waiting_for_permission_secs: number, waiting_for_input_secs: number, idle_after_turn_secs: number, 
/**
 * Alive and neither working nor waiting on you.
 */
idle_secs: number, };

export type HourBucket = { 
/**
 * The local hour it starts at, 0 to 23 (a DST day repeats or skips one).
 */
hour: number, from: string, working_secs: number, 
/**
 * Waiting for permission, for input, or idle after a turn (see [`waiting`]).
 */
waiting_on_you_secs: number, waiting_for_permission_secs: number, waiting_for_input_secs: number, idle_after_turn_secs: number, 
/**
 * Alive and neither working nor waiting on you.
 */
idle_secs: number, };

export type KeyedSplit = { key: string, working_secs: number, 
/**
 * Waiting for permission, for input, or idle after a turn (see [`waiting`]).
 */
waiting_on_you_secs: number, waiting_for_permission_secs: number, waiting_for_input_secs: number, idle_after_turn_secs: number, 
/**
 * Alive and neither working nor waiting on you.
 */
idle_secs: number, };

export type WaitWhy = "permission" | "input" | "idle_after_turn";

export type LongWait = { session_id: string, agent: Agent, project: string, kind: WaitWhy, waiting_for: string | null, from: string, to: string, secs: number, };

export type DayReport = { from: string, now: string, time_zone: string, totals: TimeSplit, 
/**
 * Every local hour of the day, midnight to midnight (hours after `now` are zero).
 */
hours: Array<HourBucket>, by_agent: Array<KeyedSplit>, by_project: Array<KeyedSplit>, longest_waits: Array<LongWait>, 
/**
 * The day's estimated cost in US dollars, when the store knows the sessions' usage.
 */
cost_estimate_usd: number | null, 
/**
 * The day's tokens (input, output and cache), when known.
 */
tokens: number | null, 
/**
 * The day's permission requests: answered from the tray, in the terminal, expired.
 */
answers: AnswerCounts, };

export type TimelineInterval = { state: SessionState, from: string, 
/**
 * `None` while it is the session's current state.
 */
to: string | null, waiting_for: string | null, };

export type SessionDetail = { session: Session, project: string, intervals: Array<TimelineInterval>, totals: TimeSplit, 
/**
 * The session's estimated cost in US dollars, when its usage is known.
 */
cost_estimate_usd: number | null, tokens: number | null, 
/**
 * Its permission requests, how each ended and from where.
 */
requests: Array<RequestRecord>, };

export type RequestRecord = { request_id: string, tool: string, asked_at: string, closed_at: string, 
/**
 * `allowed`, `allowed_for_session`, `denied`, `answered_in_terminal`, `expired`,
 * `session_ended`, `replaced`, `abandoned`.
 */
outcome: string, 
/**
 * `window`, `popover`, `tray_menu`, `alert`, `cli`, `terminal`, `timeout`; `null` otherwise.
 */
source: string | null, 
/**
 * How long the agent waited, in seconds.
 */
waited_secs: number, };

export type AnswerCounts = { 
/**
 * Answered from Agent Tray (any of its places).
 */
from_tray: number, 
/**
 * Per place: `window`, `popover`, `tray_menu`, `alert`, `cli`.
 */
by_source: Record<string, number>, 
/**
 * Answered in the agent's terminal (the agent moved past the request).
 */
in_terminal: number, 
/**
 * Nobody answered in time: the agent asked in its terminal.
 */
expired: number, 
/**
 * The median wait of the answers from the tray, and of those in the terminal, in seconds.
 */
tray_median_wait_secs: number | null, terminal_median_wait_secs: number | null, 
/**
 * An estimate of the waiting the tray's answers saved: for each, the terminal's median wait
 * less its own (never below zero). `null` until both kinds of answer are known.
 */
waiting_saved_estimate_secs: number | null, };

export type HistoryEntry = { session: Session, project: string, };

export const AGENTS: AgentInfo[] = [{"agent":"claude","name":"Claude","colour":"#c15f3c","monogram":"C","answerable":true},{"agent":"codex","name":"Codex","colour":"#10a37f","monogram":"Cx","answerable":true},{"agent":"gemini","name":"Gemini","colour":"#4285f4","monogram":"G","answerable":false},{"agent":"qwen","name":"Qwen","colour":"#615ced","monogram":"Q","answerable":true},{"agent":"copilot","name":"Copilot","colour":"#8957e5","monogram":"Cp","answerable":true},{"agent":"opencode","name":"OpenCode","colour":"#c78a00","monogram":"OC","answerable":true},{"agent":"kilo","name":"Kilo","colour":"#8a8d00","monogram":"K","answerable":true},{"agent":"pi","name":"Pi","colour":"#0f8f8f","monogram":"π","answerable":false},{"agent":"cline","name":"Cline","colour":"#d9467a","monogram":"Cl","answerable":false},{"agent":"droid","name":"Droid","colour":"#e8590c","monogram":"D","answerable":false},{"agent":"crush","name":"Crush","colour":"#c13ec9","monogram":"Cr","answerable":false},{"agent":"qoder","name":"Qoder","colour":"#2f9e6e","monogram":"Qd","answerable":false},{"agent":"auggie","name":"Auggie","colour":"#a61e4d","monogram":"A","answerable":false}];

export const SECTIONS: SectionInfo[] = [{"section":"needs_you","title":"Needs you"},{"section":"working","title":"Working"},{"section":"idle","title":"Idle"},{"section":"ended","title":"Ended recently"}];

export const STATE_LABELS: Record<SessionState, string> = {"starting":"starting","working":"working","waiting_for_permission":"needs permission","waiting_for_input":"needs input","idle":"idle","ended":"ended"};

export const ANSWER_PLACES: Record<string, string> = {"window":"the window","popover":"the popover","tray_menu":"the tray menu","alert":"an alert","cli":"the command line","terminal":"the terminal","timeout":"nobody (expired)"};

export const REQUEST_OUTCOMES: Record<string, string> = {"allowed":"allowed","allowed_for_session":"allowed for the session","denied":"denied","answered_in_terminal":"answered in the terminal","expired":"expired","session_ended":"session ended","replaced":"asked again","abandoned":"abandoned"};

export const LIMITS = {"historyDaysDefault":90,"historyDaysMax":36500,"sessionTtlSecsDefault":300,"sessionTtlSecsMax":2592000} as const;

export const EVENTS = {"sessions":"sessions-changed","focus":"focus-session","settings":"settings-changed","openSettings":"open-settings","installResult":"install-result","limits":"limits-changed"} as const;
