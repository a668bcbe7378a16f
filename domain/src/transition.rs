//! The transition rules of `docs/behaviour.md`, as one pure function.
//!
//! [`apply`] takes a session's record, one observation and the time, and changes the record; it
//! does no I/O and reads no clock, so every rule is tested here case by case and the registry only
//! has to hold a lock around it. The rules that other trackers get wrong live here:
//!
//! - **Order.** Hooks run in parallel and arrive out of order; a PostToolUse of a background
//!   command can land after Stop. An observation stamped earlier than the newest one already
//!   applied fills in missing fields but never moves the state. The exception is an end announced
//!   by the session's own process (SessionEnd, files saying it is gone): an end is final whatever
//!   its stamp, or parallel Stop/SessionEnd hooks would leave ghosts.
//! - **Revival.** An ended session comes back only on evidence of a new beginning: a SessionStart
//!   or a prompt from a real hook, or a new process taking it over. A late tool event or a passive
//!   file sighting never revives it.
//! - **Ownership.** A sighting from a new pid takes the session over (a resumed session reuses its
//!   id); the old pid is remembered so its late events, and its late SessionEnd, are ignored.
//! - **Subagents.** Their tool activity does not move the parent; their permission waits show on
//!   the parent until that subagent acts again, and any event of the parent itself clears them.
//! - **Fields fill in, never blank out**, and a streamed session listens only to its stream.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};

pub use crate::clock::Now;
use crate::model::{
    EndReason, EventKind, Observation, ReportedStatus, Session, SessionState, Source,
};

/// How long after a PermissionRequest the PreToolUse hook of the same tool call may still start.
/// Both hooks are spawned together (PreToolUse first) as separate processes; on a loaded machine
/// the PreToolUse process was seen starting 31 ms after the PermissionRequest one.
const PRE_TOOL_USE_LAG: chrono::TimeDelta = chrono::TimeDelta::seconds(2);

/// How many replaced pids a session remembers. A session is resumed a handful of times at most;
/// the bound only keeps a pathological client from growing it.
const MAX_REPLACED_PIDS: usize = 16;

/// How many tool calls a session tracks as running (a turn runs a handful in parallel); past it a
/// new call is not tracked, and its late PostToolUse moves the state as any tool event does.
const MAX_TRACKED_TOOL_CALLS: usize = 64;

/// A session and the bookkeeping the rules need, which people never see.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub session: Session,
    /// The session's own state, before subagent waits are laid over it.
    pub own_state: SessionState,
    /// The stamp of the newest observation applied.
    pub newest_event_at: DateTime<Utc>,
    pub replaced_pids: Vec<u32>,
    /// Subagents waiting for the user, by subagent id.
    pub subagent_waits: BTreeMap<String, SessionState>,
    pub active_subagents: BTreeSet<String>,
    /// Monotonic time of the last signal: what the TTL measures.
    pub last_signal: Duration,
    /// Monotonic time at which the session ended: what the linger measures.
    pub ended_at: Option<Duration>,
    /// The tool and stamp of the PermissionRequest that opened the session's own permission wait.
    pub permission_asked: Option<(Option<String>, DateTime<Utc>)>,
    /// The session's own tool calls (by call id) whose PreToolUse came and PostToolUse has not.
    pub tools_running: BTreeSet<String>,
    /// The calls still running when the last turn ended. Their PostToolUse may land after the
    /// turn's Stop (Claude spawns the hooks together, and a slow hook process stamps its event
    /// late): it finishes a call of a turn that is over, and must not make the session working.
    pub tools_of_ended_turn: BTreeSet<String>,
}

/// Why an observation changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// It came from a process that a newer one replaced.
    ReplacedPid,
    /// The session has ended and this is no evidence of a new beginning.
    EndedSession,
    /// An end for a session never seen: nothing to show.
    EndOfUnknownSession,
    /// A finished turn of a thread never seen: Codex runs hidden turns (title generation) on
    /// threads of their own and calls `notify` for them; a session made from that is a ghost.
    TurnOfUnknownThread,
}

/// What applying an observation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Something people see changed.
    Visible,
    /// Only liveness bookkeeping changed (`last_seen`, stamps).
    Quiet,
}

/// Builds the record for a session seen for the first time, or `None` when the observation is an
/// end of a session never seen (showing it only to remove it would be noise).
pub fn create(obs: &Observation, now: Now) -> Result<SessionRecord, Ignored> {
    let initial = match obs.event {
        EventKind::SessionEnd | EventKind::Gone => return Err(Ignored::EndOfUnknownSession),
        EventKind::TurnComplete => return Err(Ignored::TurnOfUnknownThread),
        // Discovered from its files with nothing known about its turn: it sits at its prompt.
        EventKind::Sighting => SessionState::Idle,
        // A transcript found growing: a turn is running.
        EventKind::TranscriptActivity => SessionState::Working,
        _ => SessionState::Starting,
    };
    let mut session = Session::new(obs.session_id.clone(), obs.agent, initial, now.wall);
    session.pid = obs.pid;
    session.streamed = obs.source == Source::Stream;
    if initial == SessionState::Working {
        session.turn_started_at = Some(obs.at);
    }
    let mut record = SessionRecord {
        session,
        own_state: initial,
        newest_event_at: if orders_events(obs.event) {
            obs.at
        } else {
            DateTime::<Utc>::MIN_UTC
        },
        replaced_pids: Vec::new(),
        subagent_waits: BTreeMap::new(),
        active_subagents: BTreeSet::new(),
        last_signal: now.mono,
        ended_at: None,
        permission_asked: None,
        tools_running: BTreeSet::new(),
        tools_of_ended_turn: BTreeSet::new(),
    };
    apply(&mut record, obs, now)?;
    Ok(record)
}

/// Applies one observation to a record. Pure: the time comes in as `now`.
pub fn apply(record: &mut SessionRecord, obs: &Observation, now: Now) -> Result<Applied, Ignored> {
    let before = record.session.clone();

    // Ownership first: an event from a replaced process is ignored whole.
    let stale = obs.at < record.newest_event_at && !asks_after_its_own_pre_tool_use(record, obs);
    let mut took_over = false;
    if let Some(pid) = obs.pid {
        match record.session.pid {
            Some(current) if current == pid => {}
            _ if record.replaced_pids.contains(&pid) => return Err(Ignored::ReplacedPid),
            None => record.session.pid = Some(pid),
            Some(current) => {
                if stale {
                    // An old event from a process we never knew: no reason to hand it the session.
                    return Err(Ignored::ReplacedPid);
                }
                record.replaced_pids.push(current);
                if record.replaced_pids.len() > MAX_REPLACED_PIDS {
                    record.replaced_pids.remove(0);
                }
                record.session.pid = Some(pid);
                record.session.pid_start = None;
                record.session.streamed = false;
                took_over = true;
            }
        }
    }

    let terminal = matches!(obs.event, EventKind::SessionEnd | EventKind::Gone);
    if record.own_state == SessionState::Ended && !terminal {
        let new_beginning = !stale
            && (took_over
                || (!obs.source.is_passive() && matches!(obs.event, EventKind::UserPromptSubmit)
                    || (!obs.source.is_passive()
                        && obs.event == EventKind::SessionStart
                        && obs.start_source.as_deref() != Some("compact"))));
        if !new_beginning {
            return Err(Ignored::EndedSession);
        }
        revive(record, now);
    }

    fill_fields(&mut record.session, obs, stale);
    if obs.source == Source::Stream {
        record.session.streamed = true;
    }
    record.session.last_seen = record.session.last_seen.max(now.wall);
    record.last_signal = now.mono;
    if !stale && orders_events(obs.event) {
        record.newest_event_at = record.newest_event_at.max(obs.at);
    }

    // A status line reports fields (the context, the plan's windows), never a state: it runs
    // whenever the agent redraws, and says nothing about the turn.
    let state_may_move = (!stale || terminal) && obs.source != Source::StatusLine;
    // A streamed session's state belongs to its stream; others may still end it.
    let listens = !record.session.streamed || obs.source == Source::Stream || terminal;
    // A turn was seen, even when its event came late (a hook that missed its send budget is
    // replayed from the journal after the events that followed it): `prompted` is a fact about
    // the session, not its state, so a stale prompt still sets it.
    if listens
        && obs.source != Source::StatusLine
        && (matches!(
            obs.event,
            EventKind::UserPromptSubmit
                | EventKind::TaskStarted
                | EventKind::TaskComplete
                | EventKind::TurnComplete
                | EventKind::TurnEnded
                | EventKind::Stop
        ) || obs.status == Some(ReportedStatus::Busy))
    {
        record.session.prompted = true;
    }
    if state_may_move && listens {
        let fresh_session_start = opens_a_fresh_session(record, obs);
        record.session.last_event = Some(obs.event.as_str().to_string());
        match obs.subagent_id.as_deref() {
            Some(subagent) => apply_subagent(record, obs, subagent),
            None => {
                record.subagent_waits.clear();
                let target = target_state(record.own_state, obs)
                    .or_else(|| fresh_session_start.then_some(SessionState::Starting))
                    .filter(|_| !is_pre_tool_use_of_the_asked_call(record, obs))
                    .filter(|_| !finishes_a_call_of_an_ended_turn(record, obs));
                if let Some(target) = target {
                    move_own_state(record, target, obs, now);
                }
                track_tool_calls(record, obs, target);
            }
        }
        if obs.event == EventKind::UserPromptSubmit {
            // Who submitted it: a person, or a loop or a schedule (unknown counts as a person).
            record.session.prompt_source.clone_from(&obs.prompt_source);
        }
        if obs.event == EventKind::StopFailure {
            record.session.error = obs.error.clone().or_else(|| Some("unknown error".into()));
        }
    }
    refresh_effective_state(record, now);

    let mut seen = before.clone();
    seen.last_seen = record.session.last_seen;
    Ok(if seen == record.session && !took_over {
        Applied::Quiet
    } else {
        Applied::Visible
    })
}

/// A PostToolUse (or its failure) of a call that was running when the turn ended: late news of a
/// turn that is over, not a turn going on.
fn finishes_a_call_of_an_ended_turn(record: &SessionRecord, obs: &Observation) -> bool {
    matches!(
        obs.event,
        EventKind::PostToolUse | EventKind::PostToolUseFailure
    ) && obs
        .tool_call_id
        .as_ref()
        .is_some_and(|id| record.tools_of_ended_turn.contains(id))
}

/// Keeps the session's running tool calls: begun by PreToolUse, finished by PostToolUse, and
/// set aside as the ended turn's when the session's own state goes idle.
fn track_tool_calls(record: &mut SessionRecord, obs: &Observation, target: Option<SessionState>) {
    match (obs.event, obs.tool_call_id.as_ref()) {
        (EventKind::PreToolUse, Some(id))
            if record.tools_running.len() < MAX_TRACKED_TOOL_CALLS =>
        {
            record.tools_running.insert(id.clone());
        }
        (EventKind::PostToolUse | EventKind::PostToolUseFailure, Some(id)) => {
            record.tools_running.remove(id);
            record.tools_of_ended_turn.remove(id);
        }
        // Whatever the state table says makes the session idle ends its turn; a later idle sign
        // with nothing running (an idle-prompt notification) keeps what was set aside.
        _ if target == Some(SessionState::Idle) && !record.tools_running.is_empty() => {
            record.tools_of_ended_turn = std::mem::take(&mut record.tools_running);
        }
        _ => {}
    }
}

/// Whether an observation's stamp is the time of something that happened in the session, which
/// later observations stamped earlier must not undo. A sighting is not: it only says the session
/// exists, and it is stamped with a file's mtime or the moment it was seen, later than the events
/// in that file. Counting it would make a real event read a moment later from another file look
/// stale (a transcript seen at its first write, then the `busy` Claude wrote just before it).
fn orders_events(event: EventKind) -> bool {
    event != EventKind::Sighting
}

/// Ends a session for a reason that no observation carries (the pid watcher, the reaper).
pub fn end(record: &mut SessionRecord, reason: EndReason, now: Now) -> bool {
    if record.own_state == SessionState::Ended {
        return false;
    }
    record.subagent_waits.clear();
    record.active_subagents.clear();
    record.own_state = SessionState::Ended;
    record.session.end_reason = Some(reason);
    record.ended_at = Some(now.mono);
    refresh_effective_state(record, now);
    true
}

fn revive(record: &mut SessionRecord, now: Now) {
    record.own_state = SessionState::Starting;
    record.ended_at = None;
    record.session.end_reason = None;
    record.session.error = None;
    record.session.state_since = now.wall;
}

/// A SessionStart hook for a session only a file has shown so far (no hook yet, no turn).
/// Claude writes `idle` to its sessions file as it runs the hook; on a loaded machine the file
/// was read first and the new session showed idle, never starting (a CI run of the real-agent
/// suite). It is starting, as if the hook had come first. Once a hook has spoken, SessionStart
/// (a `/clear`) leaves the state alone, as before.
fn opens_a_fresh_session(record: &SessionRecord, obs: &Observation) -> bool {
    let seen_only_in_files = record.session.last_event.as_deref().is_none_or(|last| {
        last == EventKind::Sighting.as_str() || last == EventKind::StatusReport.as_str()
    });
    obs.event == EventKind::SessionStart
        && !obs.source.is_passive()
        && record.own_state == SessionState::Idle
        && record.session.turn_started_at.is_none()
        && seen_only_in_files
}

/// Where an event moves the session's own state, or `None` for "unchanged".
pub fn target_state(current: SessionState, obs: &Observation) -> Option<SessionState> {
    use SessionState::*;
    match obs.event {
        // Claude's question tool is a wait for the user's answer, not for an approval: its
        // PreToolUse (and a PermissionRequest, where the mode asks) open the question dialog.
        EventKind::PreToolUse | EventKind::PermissionRequest
            if is_question_tool(obs.tool_name.as_deref()) =>
        {
            Some(WaitingForInput)
        }
        EventKind::SessionStart => None,
        EventKind::UserPromptSubmit
        | EventKind::PreToolUse
        | EventKind::PostToolUse
        | EventKind::PostToolUseFailure
        | EventKind::SubagentStart
        | EventKind::TaskStarted => Some(Working),
        EventKind::PermissionRequest => Some(WaitingForPermission),
        // Claude asks its questions through its permission path, and says "permission_prompt"
        // of a question's dialog a few seconds on: a wait for input stays one.
        EventKind::Notification => notification_state(obs.notification_type.as_deref())
            .filter(|s| !(current == WaitingForInput && *s == WaitingForPermission)),
        EventKind::Elicitation => Some(WaitingForInput),
        // The answer to an elicitation, a refused tool call (auto mode: the turn goes on), a
        // finished batch of tools and a decided permission prompt are all signs of a running
        // turn (a turn a denial ends says so with its own event). They follow something the turn
        // did, so none begins one: in an idle session they are late news of the turn that ended
        // (seen with Claude Code 2.1.332 on a loaded machine: the PostToolBatch hook's process
        // stamped its event 14 ms after the Stop one, and the idle row went back to working).
        EventKind::ElicitationResult
        | EventKind::PermissionDenied
        | EventKind::PostToolBatch
        | EventKind::PermissionResult => (current != Idle).then_some(Working),
        // Fields (cwd, model) or bookkeeping of a running session: its state stays.
        EventKind::CwdChanged
        | EventKind::PreModelSwitch
        | EventKind::PostModelSwitch
        | EventKind::TaskCreated
        | EventKind::TaskCompleted
        | EventKind::TeammateIdle => None,
        EventKind::Stop
        | EventKind::StopFailure
        | EventKind::Interrupt
        | EventKind::TurnComplete
        | EventKind::TaskComplete
        | EventKind::TurnAborted
        | EventKind::TurnEnded => Some(Idle),
        EventKind::SubagentStop | EventKind::PreCompact | EventKind::PostCompact => None,
        EventKind::Sighting => None,
        EventKind::SessionEnd | EventKind::Gone => Some(Ended),
        // Claude writes the tool call to its transcript before it asks for permission, and a
        // resumed session's old process writes as it exits: growth never leaves those states.
        EventKind::TranscriptActivity => match current {
            Starting | WaitingForPermission | WaitingForInput | Ended => None,
            _ => Some(Working),
        },
        EventKind::StatusReport => match obs.status? {
            ReportedStatus::Busy => Some(Working),
            ReportedStatus::Idle => Some(Idle),
            ReportedStatus::Waiting => Some(wait_named_by(obs.waiting_for.as_deref())),
        },
    }
}

/// A PreToolUse of the tool call the open permission dialog is about. Claude runs the PreToolUse
/// hooks of a call, then asks; the two hook processes start together and the PreToolUse one can
/// start (and arrive) after the PermissionRequest one, stamped a few ms later. It says nothing
/// about the dialog being answered (nothing fires on an answer; the tool's PostToolUse follows),
/// so it does not end the wait. The call is recognised by its tool name and a stamp within
/// [`PRE_TOOL_USE_LAG`] of the ask (hooks carry no tool-call id on PermissionRequest).
fn is_pre_tool_use_of_the_asked_call(record: &SessionRecord, obs: &Observation) -> bool {
    let Some((tool, asked_at)) = record.permission_asked.as_ref() else {
        return false;
    };
    obs.event == EventKind::PreToolUse
        && !obs.asks_before_tool_hooks
        && record.own_state == SessionState::WaitingForPermission
        && tool.is_some()
        && *tool == obs.tool_name
        && obs.at - *asked_at <= PRE_TOOL_USE_LAG
}

/// A PermissionRequest whose own PreToolUse (the same tool) was applied first though it started
/// later: the two hook processes start together and either may be stamped first (see
/// [`PRE_TOOL_USE_LAG`]). Taken as stale, the session would show "working" beside the agent's
/// permission dialog and the request would never be offered (a CI run of the real app).
fn asks_after_its_own_pre_tool_use(record: &SessionRecord, obs: &Observation) -> bool {
    obs.event == EventKind::PermissionRequest
        && obs.subagent_id.is_none()
        && obs.tool_name.is_some()
        && record.session.last_event.as_deref() == Some(EventKind::PreToolUse.as_str())
        && record.session.last_tool == obs.tool_name
        && matches!(
            record.own_state,
            SessionState::Working | SessionState::WaitingForInput
        )
        && record.newest_event_at - obs.at <= PRE_TOOL_USE_LAG
}

/// Claude Code's tool that asks the user multiple-choice questions.
pub const QUESTION_TOOL: &str = "AskUserQuestion";

fn is_question_tool(tool: Option<&str>) -> bool {
    tool == Some(QUESTION_TOOL)
}

/// A Notification's state. `agent_needs_input` and `agent_completed` are about a *background*
/// agent (Claude names it in the message), whose own session shows its own wait: they change
/// nothing here, or a post-Stop `agent_needs_input` would leave this session waiting forever.
fn notification_state(kind: Option<&str>) -> Option<SessionState> {
    match kind? {
        "permission_prompt" => Some(SessionState::WaitingForPermission),
        "elicitation_dialog" | "elicitation_url_dialog" => Some(SessionState::WaitingForInput),
        "idle_prompt" => Some(SessionState::Idle),
        _ => None,
    }
}

/// A live-session file's `waitingFor` text: "permission prompt" is a permission wait; anything
/// else the agent waits on is the user's input.
fn wait_named_by(waiting_for: Option<&str>) -> SessionState {
    match waiting_for {
        Some(text) if text.to_ascii_lowercase().contains("permission") => {
            SessionState::WaitingForPermission
        }
        _ => SessionState::WaitingForInput,
    }
}

fn apply_subagent(record: &mut SessionRecord, obs: &Observation, subagent: &str) {
    match obs.event {
        EventKind::SubagentStart => {
            record.active_subagents.insert(subagent.to_string());
            // The parent spawned it: the parent is working.
            if record.own_state != SessionState::Ended {
                record.own_state = SessionState::Working;
            }
        }
        EventKind::SubagentStop => {
            record.active_subagents.remove(subagent);
            record.subagent_waits.remove(subagent);
        }
        kind if kind.is_tool_activity() => {
            record.subagent_waits.remove(subagent);
        }
        _ => {
            if let Some(wait) = target_state(record.own_state, obs).filter(|s| s.is_wait()) {
                record.subagent_waits.insert(subagent.to_string(), wait);
            }
        }
    }
}

fn move_own_state(record: &mut SessionRecord, target: SessionState, obs: &Observation, now: Now) {
    let from = record.own_state;
    if target == SessionState::Working && !matches!(from, SessionState::Working) && !from.is_wait()
    {
        // A new turn: what a long-turn alert measures from, and a fresh start for errors.
        record.session.turn_started_at = Some(obs.at);
        record.session.error = None;
    }
    if target == SessionState::Ended {
        record.session.end_reason = Some(match obs.event {
            EventKind::SessionEnd => EndReason::SessionEnd,
            _ if obs.source == Source::SessionsFile => EndReason::SessionEnd,
            _ => EndReason::FilesSayEnded,
        });
        record.ended_at = Some(now.mono);
        record.active_subagents.clear();
        record.subagent_waits.clear();
    }
    if target != SessionState::WaitingForPermission {
        record.permission_asked = None;
    } else if obs.event == EventKind::PermissionRequest {
        record.permission_asked = Some((obs.tool_name.clone(), obs.at));
    }
    record.own_state = target;
}

fn refresh_effective_state(record: &mut SessionRecord, now: Now) {
    let overlay = if record.own_state == SessionState::Ended {
        None
    } else if record
        .subagent_waits
        .values()
        .any(|s| *s == SessionState::WaitingForPermission)
    {
        Some(SessionState::WaitingForPermission)
    } else if record.subagent_waits.is_empty() {
        None
    } else {
        Some(SessionState::WaitingForInput)
    };
    let state = overlay.unwrap_or(record.own_state);
    if state != record.session.state {
        record.session.state = state;
        record.session.state_since = now.wall;
    }
    if !state.is_wait() {
        record.session.waiting_for = None;
    }
    record.session.subagents = u32::try_from(record.active_subagents.len()).unwrap_or(u32::MAX);
}

/// Fields fill in and never blank out; a stale observation only fills what is still missing.
fn fill_fields(session: &mut Session, obs: &Observation, stale: bool) {
    fn fill(slot: &mut Option<String>, value: &Option<String>, stale: bool) {
        if let Some(v) = value.as_deref().filter(|v| !v.trim().is_empty()) {
            if (slot.is_none() || !stale) && slot.as_deref() != Some(v) {
                *slot = Some(v.to_string());
            }
        }
    }
    fill(&mut session.cwd, &obs.cwd, stale);
    fill(&mut session.repo, &obs.repo, stale);
    fill(&mut session.branch, &obs.branch, stale);
    fill(&mut session.model, &obs.model, stale);
    fill(&mut session.transcript_path, &obs.transcript_path, stale);
    fill(&mut session.title, &obs.title, stale);
    fill(&mut session.tmux, &obs.tmux, stale);
    fill(&mut session.tty, &obs.tty, stale);
    if let (Some(headless), false) = (obs.headless, stale) {
        session.headless = headless;
    }
    // The context figure is taken in the order it arrives, stale or not: it comes from one file
    // read in order (a transcript, a rollout), and its lines are stamped before the hook events
    // of the same turn that reach us first. One measured before the last compact is not: a
    // transcript read late would otherwise bring back the figure the compact just dropped.
    if obs.subagent_id.is_none() {
        let before_compact = session.compacted_at.is_some_and(|at| obs.at < at);
        if let (Some(tokens), false) = (obs.context_tokens, before_compact) {
            session.context_tokens = Some(tokens);
        }
        if let Some(window) = obs.context_window.filter(|w| *w > 0) {
            session.context_window = Some(window);
        }
    }
    if !stale && obs.subagent_id.is_none() {
        if let Some(until) = obs.blocked_until {
            // A report of the plan's windows; one with none used up says "until now": free.
            session.blocked_until = (until > obs.at).then_some(until);
        } else if obs.event == EventKind::UserPromptSubmit
            && session.blocked_until.is_some_and(|until| until <= obs.at)
        {
            session.blocked_until = None;
        }
        let compacted = obs.event == EventKind::PostCompact
            || (obs.event == EventKind::SessionStart
                && obs.start_source.as_deref() == Some("compact"));
        if compacted || obs.event == EventKind::PreCompact {
            session.compacted_at = Some(obs.at);
        }
        if compacted {
            // The last turn's figure described the conversation before it was compacted; the
            // next turn tells the new one.
            session.context_tokens = obs.context_tokens;
        }
    }
    if obs.subagent_id.is_none() {
        fill(&mut session.last_tool, &obs.tool_name, stale);
    }
    if !stale {
        let wait = obs
            .tool_name
            .clone()
            .or_else(|| obs.waiting_for.clone())
            .filter(|w| !w.trim().is_empty());
        let question =
            obs.event == EventKind::PreToolUse && is_question_tool(obs.tool_name.as_deref());
        if (question
            || matches!(
                obs.event,
                EventKind::PermissionRequest
                    | EventKind::Notification
                    | EventKind::StatusReport
                    | EventKind::Elicitation
            ))
            && wait.is_some()
        {
            session.waiting_for = wait;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::model::Agent;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    fn now(secs: i64) -> Now {
        Now {
            wall: t(secs),
            mono: Duration::from_secs(u64::try_from(secs).unwrap()),
        }
    }

    fn obs(event: EventKind, at: i64) -> Observation {
        Observation::new("s1", Agent::Claude, event, t(at))
    }

    fn started() -> SessionRecord {
        create(&obs(EventKind::SessionStart, 1).with_pid(Some(100)), now(1)).unwrap()
    }

    fn run(record: &mut SessionRecord, o: Observation, at: i64) -> Result<Applied, Ignored> {
        apply(record, &o, now(at))
    }

    #[test]
    fn a_prompt_replayed_after_the_events_that_followed_it_still_marks_the_turn_seen() {
        let mut r = started();
        run(&mut r, obs(EventKind::PreToolUse, 5), 5).unwrap();
        // The prompt's hook missed its send budget: the journal delivers it after the tool event.
        let _ = run(&mut r, obs(EventKind::UserPromptSubmit, 3), 6);
        assert!(r.session.prompted, "a late prompt is still a turn seen");
        assert_eq!(
            r.session.state,
            SessionState::Working,
            "and it moves no state back"
        );
    }

    #[test]
    fn a_session_start_creates_a_starting_session_owned_by_its_pid() {
        let r = started();
        assert_eq!(r.session.state, SessionState::Starting);
        assert_eq!(r.session.pid, Some(100));
        assert!(!r.session.prompted);
    }

    #[test]
    fn a_background_agents_needs_input_after_stop_does_not_leave_the_session_waiting() {
        // `agent_needs_input` / `agent_completed` speak of a background agent (Claude names it
        // in the message), whose own session shows its own wait. Taken as this session's state,
        // nothing would ever clear it (seen sticking in other trackers after Stop).
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        run(&mut r, obs(EventKind::Stop, 3), 3).unwrap();
        for (at, kind) in [(4, "agent_needs_input"), (5, "agent_completed")] {
            let mut n = obs(EventKind::Notification, at);
            n.notification_type = Some(kind.into());
            run(&mut r, n, at).unwrap();
            assert_eq!(r.session.state, SessionState::Idle, "{kind}");
        }
        // Positive control: this session's own question does make it wait.
        let mut n = obs(EventKind::Notification, 6);
        n.notification_type = Some("elicitation_dialog".into());
        run(&mut r, n, 6).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForInput);
    }

    // Recorded with Claude Code 2.1.332: its question dialog (AskUserQuestion) goes through the
    // permission path, and ~6 s on Claude sends Notification "permission_prompt" for it. The
    // session waits for the user's answer, not an approval: it stays waiting for input (a
    // question listed for an answer stays listed). A real permission prompt still moves it.
    #[test]
    fn a_permission_prompt_notification_of_a_question_leaves_it_waiting_for_input() {
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        let mut ask = obs(EventKind::PermissionRequest, 3);
        ask.tool_name = Some(QUESTION_TOOL.into());
        run(&mut r, ask, 3).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForInput);
        let mut n = obs(EventKind::Notification, 9);
        n.notification_type = Some("permission_prompt".into());
        run(&mut r, n, 9).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForInput);
        // Answered: the tool ran; then a real permission prompt is one.
        let mut done = obs(EventKind::PostToolUse, 10);
        done.tool_name = Some(QUESTION_TOOL.into());
        run(&mut r, done, 10).unwrap();
        let mut n = obs(EventKind::Notification, 11);
        n.notification_type = Some("permission_prompt".into());
        run(&mut r, n, 11).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForPermission);
    }

    #[test]
    fn every_hook_event_maps_to_the_state_of_the_spec() {
        use SessionState::*;
        let cases = [
            (EventKind::UserPromptSubmit, None, Working),
            (EventKind::PreToolUse, None, Working),
            (EventKind::PostToolUse, None, Working),
            (EventKind::PostToolUseFailure, None, Working),
            (EventKind::SubagentStart, None, Working),
            (EventKind::PermissionRequest, None, WaitingForPermission),
            (
                EventKind::Notification,
                Some("permission_prompt"),
                WaitingForPermission,
            ),
            (
                EventKind::Notification,
                Some("elicitation_dialog"),
                WaitingForInput,
            ),
            (EventKind::Notification, Some("idle_prompt"), Idle),
            (EventKind::Stop, None, Idle),
            (EventKind::StopFailure, None, Idle),
            (EventKind::Interrupt, None, Idle),
            (EventKind::TurnComplete, None, Idle),
            (EventKind::TaskStarted, None, Working),
            (EventKind::TaskComplete, None, Idle),
            (EventKind::TurnAborted, None, Idle),
            (EventKind::TurnEnded, None, Idle),
            (EventKind::SessionEnd, None, Ended),
            (EventKind::Gone, None, Ended),
        ];
        for (event, kind, expected) in cases {
            // From `working`, except where that is already the expected state.
            let mut r = started();
            let from = if expected == Working {
                EventKind::Stop
            } else {
                EventKind::UserPromptSubmit
            };
            run(&mut r, obs(from, 2), 2).unwrap();
            let mut o = obs(event, 3);
            o.notification_type = kind.map(String::from);
            run(&mut r, o, 3).unwrap();
            assert_eq!(r.session.state, expected, "{event:?} {kind:?}");
        }
    }

    #[test]
    fn liveness_only_events_leave_the_state_alone() {
        for event in [
            EventKind::SubagentStop,
            EventKind::PreCompact,
            EventKind::PostCompact,
            EventKind::Sighting,
            EventKind::SessionStart,
        ] {
            let mut r = started();
            run(&mut r, obs(EventKind::Stop, 2), 2).unwrap();
            run(&mut r, obs(event, 3), 3).unwrap();
            assert_eq!(r.session.state, SessionState::Idle, "{event:?}");
        }
        // An unknown notification type says nothing about the state either.
        let mut r = started();
        let mut o = obs(EventKind::Notification, 2);
        o.notification_type = Some("auth_success".into());
        run(&mut r, o, 2).unwrap();
        assert_eq!(r.session.state, SessionState::Starting);
    }

    #[test]
    fn a_late_post_tool_use_after_stop_does_not_leave_the_session_working() {
        // A background command's PostToolUse hook started before Stop but arrived after it.
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        run(&mut r, obs(EventKind::Stop, 10), 10).unwrap();
        let late = run(&mut r, obs(EventKind::PostToolUse, 9), 11).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        assert_eq!(late, Applied::Quiet);
    }

    fn tool_call(event: EventKind, id: &str, at: i64) -> Observation {
        let mut o = obs(event, at);
        o.tool_name = Some("Bash".into());
        o.tool_call_id = Some(id.into());
        o
    }

    #[test]
    fn a_tool_call_of_an_ended_turn_finishing_after_its_stop_leaves_the_session_idle() {
        // Seen with Claude Code 2.1.332 on a loaded machine: the PostToolUse hook process started
        // late and stamped its event 22 ms after the turn's Stop, and the session showed working
        // with nothing running.
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        run(&mut r, tool_call(EventKind::PreToolUse, "toolu_1", 3), 3).unwrap();
        run(&mut r, obs(EventKind::PermissionRequest, 4), 4).unwrap();
        run(&mut r, obs(EventKind::PostToolBatch, 5), 5).unwrap();
        run(&mut r, obs(EventKind::Stop, 6), 6).unwrap();
        let late = tool_call(EventKind::PostToolUse, "toolu_1", 7);
        run(&mut r, late.clone(), 7).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        assert_eq!(
            r.session.last_tool.as_deref(),
            Some("Bash"),
            "fields still fill"
        );
        assert!(r.tools_running.is_empty() && r.tools_of_ended_turn.is_empty());
        // A Stop hook that blocks the stop makes the turn go on: its new calls are work.
        run(&mut r, tool_call(EventKind::PreToolUse, "toolu_2", 8), 8).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        run(&mut r, obs(EventKind::Stop, 9), 9).unwrap();
        // A call the tray never saw begin (its PreToolUse lost or not hooked) is taken as work,
        // as before: only calls known to belong to the ended turn are set aside.
        run(&mut r, tool_call(EventKind::PostToolUse, "toolu_x", 10), 10).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        // A failure of an ended turn's call (the user pressed Esc while it ran) is the same.
        run(&mut r, tool_call(EventKind::PreToolUse, "toolu_3", 11), 11).unwrap();
        run(&mut r, obs(EventKind::Interrupt, 12), 12).unwrap();
        run(
            &mut r,
            tool_call(EventKind::PostToolUseFailure, "toolu_3", 13),
            13,
        )
        .unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
    }

    #[test]
    fn late_news_of_an_ended_turn_stamped_after_its_stop_leaves_the_session_idle() {
        // The order a CI run recorded (Claude Code 2.1.332): a permission answered, the tool run,
        // Stop, then the batch's PostToolBatch hook stamped 14 ms after Stop.
        for late in [
            EventKind::PostToolBatch,
            EventKind::PermissionDenied,
            EventKind::ElicitationResult,
            EventKind::PermissionResult,
        ] {
            let mut r = started();
            run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
            run(&mut r, tool_call(EventKind::PreToolUse, "toolu_1", 3), 3).unwrap();
            run(&mut r, obs(EventKind::PermissionRequest, 4), 4).unwrap();
            run(&mut r, tool_call(EventKind::PostToolUse, "toolu_1", 5), 5).unwrap();
            run(&mut r, obs(EventKind::Stop, 6), 6).unwrap();
            run(&mut r, obs(late, 7), 7).unwrap();
            assert_eq!(r.session.state, SessionState::Idle, "{late:?} after Stop");
            // Within a turn they are work: a permission prompt decided, a batch finished.
            let mut r = started();
            run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
            run(&mut r, obs(EventKind::PermissionRequest, 3), 3).unwrap();
            run(&mut r, obs(late, 4), 4).unwrap();
            assert_eq!(r.session.state, SessionState::Working, "{late:?} in a turn");
        }
    }

    #[test]
    fn the_running_tool_calls_a_session_tracks_are_bounded() {
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        for i in 0..MAX_TRACKED_TOOL_CALLS + 10 {
            run(
                &mut r,
                tool_call(EventKind::PreToolUse, &format!("t{i}"), 3),
                3,
            )
            .unwrap();
        }
        assert_eq!(r.tools_running.len(), MAX_TRACKED_TOOL_CALLS);
        run(&mut r, obs(EventKind::Stop, 4), 4).unwrap();
        assert_eq!(r.tools_of_ended_turn.len(), MAX_TRACKED_TOOL_CALLS);
        assert!(r.tools_running.is_empty());
        // The next turn's end replaces the set aside calls; they never pile up.
        run(&mut r, obs(EventKind::UserPromptSubmit, 5), 5).unwrap();
        run(&mut r, tool_call(EventKind::PreToolUse, "next", 6), 6).unwrap();
        run(&mut r, obs(EventKind::Stop, 7), 7).unwrap();
        assert_eq!(r.tools_of_ended_turn.len(), 1);
    }

    #[test]
    fn a_session_end_stamped_before_a_parallel_stop_still_ends_the_session() {
        // Stop and SessionEnd hooks run in parallel; whichever arrives last, the end is final.
        let mut r = started();
        run(&mut r, obs(EventKind::Stop, 10), 10).unwrap();
        run(&mut r, obs(EventKind::SessionEnd, 9), 11).unwrap();
        assert_eq!(r.session.state, SessionState::Ended);
        assert_eq!(r.session.end_reason, Some(EndReason::SessionEnd));
    }

    #[test]
    fn a_stale_event_fills_missing_fields_but_overwrites_none() {
        let mut r = started();
        let mut fresh = obs(EventKind::UserPromptSubmit, 10);
        fresh.model = Some("new-model".into());
        run(&mut r, fresh, 10).unwrap();
        let mut stale = obs(EventKind::PreToolUse, 5);
        stale.model = Some("old-model".into());
        stale.cwd = Some("/home/dev/proj".into());
        run(&mut r, stale, 11).unwrap();
        assert_eq!(r.session.model.as_deref(), Some("new-model"));
        assert_eq!(r.session.cwd.as_deref(), Some("/home/dev/proj"));
    }

    #[test]
    fn a_later_event_without_cwd_or_model_does_not_erase_them() {
        let mut r = started();
        let mut o = obs(EventKind::UserPromptSubmit, 2);
        o.cwd = Some("/w".into());
        o.model = Some("m".into());
        run(&mut r, o, 2).unwrap();
        let mut blank = obs(EventKind::Stop, 3);
        blank.cwd = Some("  ".into());
        run(&mut r, blank, 3).unwrap();
        assert_eq!(r.session.cwd.as_deref(), Some("/w"));
        assert_eq!(r.session.model.as_deref(), Some("m"));
    }

    #[test]
    fn transcript_growth_never_leaves_starting_a_wait_or_ended() {
        // Claude writes the tool call to its transcript before asking for permission.
        let mut r = started();
        run(
            &mut r,
            obs(EventKind::TranscriptActivity, 2).with_source(Source::Transcript),
            2,
        )
        .unwrap();
        assert_eq!(r.session.state, SessionState::Starting);
        run(&mut r, obs(EventKind::PermissionRequest, 3), 3).unwrap();
        run(
            &mut r,
            obs(EventKind::TranscriptActivity, 4).with_source(Source::Transcript),
            4,
        )
        .unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForPermission);
        run(&mut r, obs(EventKind::Stop, 5), 5).unwrap();
        run(
            &mut r,
            obs(EventKind::TranscriptActivity, 6).with_source(Source::Transcript),
            6,
        )
        .unwrap();
        assert_eq!(
            r.session.state,
            SessionState::Working,
            "from idle, growth is a turn"
        );
        run(&mut r, obs(EventKind::SessionEnd, 7), 7).unwrap();
        let res = run(
            &mut r,
            obs(EventKind::TranscriptActivity, 8).with_source(Source::Transcript),
            8,
        );
        assert_eq!(res, Err(Ignored::EndedSession));
        assert_eq!(r.session.state, SessionState::Ended);
    }

    #[test]
    fn a_session_start_hook_read_after_the_sessions_file_s_idle_still_says_starting() {
        // Claude at launch writes `idle` to sessions/<pid>.json and runs its SessionStart hook;
        // on a loaded machine the file was read first and the session stayed idle.
        let mut idle = obs(EventKind::StatusReport, 5).with_source(Source::SessionsFile);
        idle.status = Some(ReportedStatus::Idle);
        let mut r = create(&idle, now(5)).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        run(&mut r, obs(EventKind::SessionStart, 6), 6).unwrap();
        assert_eq!(r.session.state, SessionState::Starting);
        // After a turn, a SessionStart (a /clear) leaves an idle session idle.
        run(&mut r, obs(EventKind::UserPromptSubmit, 8), 8).unwrap();
        run(&mut r, obs(EventKind::Stop, 9), 9).unwrap();
        run(&mut r, obs(EventKind::SessionStart, 10), 10).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
    }

    #[test]
    fn a_sighting_stamped_later_does_not_make_an_earlier_status_report_stale() {
        // Claude without hooks: at the prompt it writes `busy` to sessions/<pid>.json, then the
        // first lines of its transcript. The transcript feed reported the new transcript first
        // (a sighting stamped with its mtime); `busy`, read 10 ms later, was dropped as stale and
        // the session went from idle straight to waiting_for_permission, never working.
        let report = |status, at| {
            let mut o = obs(EventKind::StatusReport, at).with_source(Source::SessionsFile);
            o.status = Some(status);
            o
        };
        let mut r = create(&report(ReportedStatus::Idle, 1), now(1)).unwrap();
        run(
            &mut r,
            obs(EventKind::Sighting, 5).with_source(Source::Transcript),
            5,
        )
        .unwrap();
        run(&mut r, report(ReportedStatus::Busy, 4), 5).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        // The same when the sighting is what first showed the session.
        let mut r = create(
            &obs(EventKind::Sighting, 5).with_source(Source::Transcript),
            now(5),
        )
        .unwrap();
        run(&mut r, report(ReportedStatus::Busy, 4), 5).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        // Real events still order each other: a busy older than the idle after it stays stale.
        run(&mut r, report(ReportedStatus::Idle, 7), 7).unwrap();
        run(&mut r, report(ReportedStatus::Busy, 6), 8).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
    }

    #[test]
    fn a_pre_tool_use_arriving_after_the_permission_request_of_its_call_keeps_the_wait() {
        // Claude with hooks, on a loaded machine: the PermissionRequest hook process started at
        // .799 and the PreToolUse one of the same Bash call at .830; the session went
        // waiting_for_permission -> working while the dialog stayed open, until the
        // permission_prompt notification 6 s later.
        let tool = |event, name: &str, at| {
            let mut o = obs(event, at);
            o.tool_name = Some(name.into());
            o
        };
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        run(&mut r, tool(EventKind::PermissionRequest, "Bash", 10), 10).unwrap();
        run(&mut r, tool(EventKind::PreToolUse, "Bash", 11), 11).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForPermission);
        assert_eq!(r.session.waiting_for.as_deref(), Some("Bash"));
        // The approved tool ran: its PostToolUse ends the wait.
        run(&mut r, tool(EventKind::PostToolUse, "Bash", 15), 15).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        // Another tool's PreToolUse, or one long after the ask, is a tool running: working.
        run(&mut r, tool(EventKind::PermissionRequest, "Bash", 20), 20).unwrap();
        run(&mut r, tool(EventKind::PreToolUse, "Read", 20), 20).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        run(&mut r, tool(EventKind::PermissionRequest, "Bash", 30), 30).unwrap();
        run(&mut r, tool(EventKind::PreToolUse, "Bash", 33), 33).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
    }

    #[test]
    fn where_the_agent_asks_before_its_tool_hooks_a_quick_answer_is_working_at_once() {
        // Qwen Code 0.24.4: PermissionRequest, then (once answered, here 0.5 s on) the call's
        // PreToolUse. That PreToolUse is the tool starting, so the wait ends with it; a second
        // ask in the same turn waits again, and its own answer ends it.
        let tool = |event, name: &str, ms: i64| {
            let mut o = obs(event, 0);
            o.at = t(0) + chrono::TimeDelta::milliseconds(ms);
            o.tool_name = Some(name.into());
            o.asks_before_tool_hooks = true;
            o
        };
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        let asks = |r: &mut SessionRecord, ms| {
            run(
                r,
                tool(EventKind::PermissionRequest, "run_shell_command", ms),
                10,
            )
            .unwrap();
            assert_eq!(r.session.state, SessionState::WaitingForPermission);
            run(
                r,
                tool(EventKind::PreToolUse, "run_shell_command", ms + 500),
                10,
            )
            .unwrap();
            assert_eq!(
                r.session.state,
                SessionState::Working,
                "answered: the tool runs"
            );
            run(
                r,
                tool(EventKind::PostToolUse, "run_shell_command", ms + 900),
                10,
            )
            .unwrap();
            assert_eq!(r.session.state, SessionState::Working);
        };
        asks(&mut r, 10_000);
        asks(&mut r, 11_000);
    }

    #[test]
    fn a_permission_request_arriving_after_its_own_later_stamped_pre_tool_use_still_waits() {
        // The other order of the same race: the PreToolUse process stamped after the
        // PermissionRequest one, and delivered first. The ask is no older news: it waits.
        let tool = |event, name: &str, at| {
            let mut o = obs(event, at);
            o.tool_name = Some(name.into());
            o
        };
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        run(&mut r, tool(EventKind::PreToolUse, "Bash", 11), 11).unwrap();
        run(&mut r, tool(EventKind::PermissionRequest, "Bash", 10), 11).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForPermission);
        assert_eq!(
            r.newest_event_at,
            t(11),
            "the newest stamp stays the newest"
        );
        // A later PostToolUse of the call ends the wait as ever.
        run(&mut r, tool(EventKind::PostToolUse, "Bash", 15), 15).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        // Another tool's PreToolUse, or one far past the lag, leaves an older ask stale.
        run(&mut r, tool(EventKind::PreToolUse, "Read", 21), 21).unwrap();
        run(&mut r, tool(EventKind::PermissionRequest, "Bash", 20), 21).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        run(&mut r, tool(EventKind::PreToolUse, "Bash", 34), 34).unwrap();
        run(&mut r, tool(EventKind::PermissionRequest, "Bash", 30), 34).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
    }

    #[test]
    fn a_passive_sighting_never_revives_an_ended_session_but_a_real_start_does() {
        let mut r = started();
        run(&mut r, obs(EventKind::SessionEnd, 5), 5).unwrap();
        for passive in [Source::Transcript, Source::Rollout, Source::SessionsFile] {
            let res = run(
                &mut r,
                obs(EventKind::SessionStart, 6).with_source(passive),
                6,
            );
            assert_eq!(res, Err(Ignored::EndedSession), "{passive:?}");
        }
        // A late tool event from a real hook is no new beginning either.
        assert_eq!(
            run(&mut r, obs(EventKind::PostToolUse, 7), 7),
            Err(Ignored::EndedSession)
        );
        let mut resume = obs(EventKind::SessionStart, 8);
        resume.start_source = Some("resume".into());
        run(&mut r, resume, 8).unwrap();
        assert_eq!(r.session.state, SessionState::Starting);
        assert_eq!(r.session.end_reason, None);
    }

    #[test]
    fn a_new_pid_takes_the_session_over_and_the_old_pids_late_end_is_ignored() {
        // `claude --resume ID` starts a new process for an id the old process still holds.
        let mut r = started();
        run(
            &mut r,
            obs(EventKind::UserPromptSubmit, 2).with_pid(Some(100)),
            2,
        )
        .unwrap();
        r.session.pid_start = Some("tok".into());
        r.session.streamed = true;
        let mut resume = obs(EventKind::SessionStart, 3).with_pid(Some(200));
        resume.start_source = Some("resume".into());
        assert_eq!(run(&mut r, resume, 3), Ok(Applied::Visible));
        assert_eq!(r.session.pid, Some(200));
        assert_eq!(
            r.session.pid_start, None,
            "the identity token belongs to the old process"
        );
        assert!(!r.session.streamed);
        assert_eq!(r.replaced_pids, vec![100]);
        let late_end = run(&mut r, obs(EventKind::SessionEnd, 4).with_pid(Some(100)), 4);
        assert_eq!(late_end, Err(Ignored::ReplacedPid));
        assert_ne!(r.session.state, SessionState::Ended);
    }

    #[test]
    fn an_ended_session_taken_over_by_a_new_process_comes_back() {
        let mut r = started();
        run(&mut r, obs(EventKind::SessionEnd, 2).with_pid(Some(100)), 2).unwrap();
        let file = obs(EventKind::StatusReport, 3)
            .with_pid(Some(300))
            .with_source(Source::SessionsFile);
        let mut file = file;
        file.status = Some(ReportedStatus::Idle);
        run(&mut r, file, 3).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        assert_eq!(r.session.pid, Some(300));
    }

    #[test]
    fn a_subagents_tool_activity_does_not_move_the_parent() {
        let mut r = started();
        run(&mut r, obs(EventKind::Stop, 2), 2).unwrap();
        let mut sub = obs(EventKind::PreToolUse, 3);
        sub.subagent_id = Some("a1".into());
        sub.tool_name = Some("Grep".into());
        run(&mut r, sub, 3).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        assert_eq!(
            r.session.last_tool, None,
            "a subagent's tool is not the parent's"
        );
    }

    #[test]
    fn a_subagents_permission_wait_shows_on_the_parent_until_it_acts_again() {
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        let mut start = obs(EventKind::SubagentStart, 3);
        start.subagent_id = Some("a1".into());
        run(&mut r, start, 3).unwrap();
        assert_eq!(r.session.subagents, 1);
        let mut wait = obs(EventKind::PermissionRequest, 4);
        wait.subagent_id = Some("a1".into());
        run(&mut r, wait, 4).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForPermission);
        let mut acts = obs(EventKind::PostToolUse, 5);
        acts.subagent_id = Some("a1".into());
        run(&mut r, acts, 5).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
    }

    #[test]
    fn any_event_of_the_parent_clears_subagent_waits() {
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        let mut wait = obs(EventKind::PermissionRequest, 3);
        wait.subagent_id = Some("a1".into());
        run(&mut r, wait, 3).unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForPermission);
        run(&mut r, obs(EventKind::Stop, 4), 4).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        assert!(r.subagent_waits.is_empty());
    }

    #[test]
    fn a_streamed_session_listens_only_to_its_stream_but_can_still_end() {
        let mut r = started();
        run(
            &mut r,
            obs(EventKind::UserPromptSubmit, 2).with_source(Source::Stream),
            2,
        )
        .unwrap();
        assert!(r.session.streamed);
        run(&mut r, obs(EventKind::Stop, 3), 3).unwrap();
        assert_eq!(
            r.session.state,
            SessionState::Working,
            "the hook's Stop is not authoritative"
        );
        run(
            &mut r,
            obs(EventKind::Stop, 4).with_source(Source::Stream),
            4,
        )
        .unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        run(&mut r, obs(EventKind::SessionEnd, 5), 5).unwrap();
        assert_eq!(r.session.state, SessionState::Ended);
    }

    #[test]
    fn a_live_session_file_status_maps_busy_idle_and_the_named_wait() {
        let mut r = started();
        let report = |status, waiting: Option<&str>, at| {
            let mut o = obs(EventKind::StatusReport, at).with_source(Source::SessionsFile);
            o.status = Some(status);
            o.waiting_for = waiting.map(String::from);
            o
        };
        run(&mut r, report(ReportedStatus::Busy, None, 2), 2).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        run(
            &mut r,
            report(ReportedStatus::Waiting, Some("permission prompt"), 3),
            3,
        )
        .unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForPermission);
        assert_eq!(r.session.waiting_for.as_deref(), Some("permission prompt"));
        run(
            &mut r,
            report(ReportedStatus::Waiting, Some("input needed"), 4),
            4,
        )
        .unwrap();
        assert_eq!(r.session.state, SessionState::WaitingForInput);
        run(&mut r, report(ReportedStatus::Idle, None, 5), 5).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        assert_eq!(r.session.waiting_for, None);
    }

    #[test]
    fn a_compact_session_start_does_not_revive_an_ended_session() {
        let mut r = started();
        run(&mut r, obs(EventKind::SessionEnd, 2), 2).unwrap();
        let mut compact = obs(EventKind::SessionStart, 3);
        compact.start_source = Some("compact".into());
        assert_eq!(run(&mut r, compact, 3), Err(Ignored::EndedSession));
    }

    #[test]
    fn stop_failure_keeps_its_error_until_the_next_turn() {
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        let mut fail = obs(EventKind::StopFailure, 3);
        fail.error = Some("rate_limit".into());
        run(&mut r, fail, 3).unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
        assert_eq!(r.session.error.as_deref(), Some("rate_limit"));
        run(&mut r, obs(EventKind::UserPromptSubmit, 4), 4).unwrap();
        assert_eq!(r.session.error, None);
    }

    #[test]
    fn state_since_moves_only_when_the_state_changes() {
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        assert_eq!(r.session.state_since, t(2));
        run(&mut r, obs(EventKind::PreToolUse, 3), 3).unwrap();
        assert_eq!(r.session.state_since, t(2));
        assert_eq!(r.session.last_seen, t(3));
        assert_eq!(r.session.turn_started_at, Some(t(2)));
    }

    #[test]
    fn only_last_seen_moving_is_a_quiet_change() {
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        // A second prompt in the same turn moves nothing people see: no change is published.
        assert_eq!(
            run(&mut r, obs(EventKind::UserPromptSubmit, 3), 3),
            Ok(Applied::Quiet)
        );
        assert_eq!(
            run(&mut r, obs(EventKind::Stop, 4), 4),
            Ok(Applied::Visible)
        );
    }

    #[test]
    fn an_end_of_a_session_never_seen_creates_nothing() {
        assert_eq!(
            create(&obs(EventKind::SessionEnd, 1), now(1)).err(),
            Some(Ignored::EndOfUnknownSession)
        );
    }

    #[test]
    fn a_notify_for_a_thread_never_seen_creates_no_ghost_but_ends_a_known_turn() {
        // Codex's hidden title-generation turn calls notify with a thread id of its own.
        let title_turn = obs(EventKind::TurnComplete, 1).with_source(Source::Notify);
        assert_eq!(
            create(&title_turn, now(1)).err(),
            Some(Ignored::TurnOfUnknownThread)
        );
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        run(
            &mut r,
            obs(EventKind::TurnComplete, 3).with_source(Source::Notify),
            3,
        )
        .unwrap();
        assert_eq!(r.session.state, SessionState::Idle);
    }

    #[test]
    fn ending_records_the_reason_and_is_done_once() {
        let mut r = started();
        assert!(end(&mut r, EndReason::ProcessGone, now(5)));
        assert!(!end(&mut r, EndReason::Ttl, now(6)));
        assert_eq!(r.session.end_reason, Some(EndReason::ProcessGone));
        assert_eq!(r.ended_at, Some(Duration::from_secs(5)));
    }

    fn with_context(mut o: Observation, tokens: Option<u64>, window: Option<u64>) -> Observation {
        o.context_tokens = tokens;
        o.context_window = window;
        o
    }

    #[test]
    fn a_status_line_fills_the_context_and_the_stop_but_never_moves_the_state() {
        // Claude's status line runs while a turn works (and after it): it tells the window,
        // its use and whether a plan window is used up, and nothing about the turn.
        let mut r = started();
        run(&mut r, obs(EventKind::UserPromptSubmit, 2), 2).unwrap();
        assert_eq!(r.session.state, SessionState::Working);
        let mut line = with_context(obs(EventKind::Sighting, 3), Some(110), Some(1_000_000));
        line.source = Source::StatusLine;
        line.blocked_until = Some(t(3600));
        run(&mut r, line.clone(), 3).unwrap();
        assert_eq!(r.session.state, SessionState::Working, "no state from it");
        assert_eq!(r.session.last_event.as_deref(), Some("UserPromptSubmit"));
        assert_eq!(r.session.context_window, Some(1_000_000));
        assert_eq!(r.session.context_tokens, Some(110));
        assert_eq!(r.session.blocked_until, Some(t(3600)));
        assert_eq!(r.session.blocked_at(t(100)), Some(t(3600)));
        assert_eq!(
            r.session.blocked_at(t(3600)),
            None,
            "past the reset it holds no more"
        );
        // A hook saying nothing of limits keeps it; so does a status line without windows (an
        // API-key login, a cut payload). One whose windows are all left says "until now".
        run(&mut r, obs(EventKind::Stop, 4), 4).unwrap();
        assert_eq!(r.session.blocked_until, Some(t(3600)));
        line.at = t(5);
        line.blocked_until = None;
        run(&mut r, line.clone(), 5).unwrap();
        assert_eq!(
            r.session.blocked_until,
            Some(t(3600)),
            "a line that says nothing of limits"
        );
        line.blocked_until = Some(t(5));
        run(&mut r, line.clone(), 5).unwrap();
        assert_eq!(
            r.session.blocked_until, None,
            "windows reported, none used up"
        );
        // A stop whose reset has passed is forgotten when the next prompt goes in.
        line.at = t(6);
        line.blocked_until = Some(t(7));
        run(&mut r, line, 6).unwrap();
        run(&mut r, obs(EventKind::UserPromptSubmit, 8), 8).unwrap();
        assert_eq!(r.session.blocked_until, None);
    }

    #[test]
    fn the_context_figure_follows_the_latest_turn_and_a_compact_forgets_it() {
        let mut r = started();
        assert_eq!(
            (r.session.context_tokens, r.session.context_window),
            (None, None)
        );
        let turn = with_context(
            obs(EventKind::TaskComplete, 2),
            Some(120_000),
            Some(258_400),
        );
        run(&mut r, turn, 2).unwrap();
        assert_eq!(r.session.context_tokens, Some(120_000));
        assert_eq!(r.session.context_window, Some(258_400));
        assert_eq!(r.session.context_percent(), Some(46));
        // A later event that says nothing of the context keeps the figure.
        run(&mut r, obs(EventKind::UserPromptSubmit, 3), 3).unwrap();
        assert_eq!(r.session.context_tokens, Some(120_000));
        // A transcript line stamped before the hook events that already arrived still tells
        // the figure: the file is read in order, after the hooks of its turn.
        run(&mut r, obs(EventKind::Stop, 4), 4).unwrap();
        let line = with_context(obs(EventKind::TranscriptActivity, 3), Some(125_000), None);
        run(&mut r, line, 5).unwrap();
        assert_eq!(r.session.context_tokens, Some(125_000));
        assert_eq!(
            r.session.state,
            SessionState::Idle,
            "the stale line moves no state"
        );
        // A subagent's usage is not the session's context.
        let mut sub = with_context(obs(EventKind::PostToolUse, 5), Some(9), None);
        sub.subagent_id = Some("a1".into());
        run(&mut r, sub, 5).unwrap();
        assert_eq!(r.session.context_tokens, Some(125_000));
        // PreCompact notes the compact; PostCompact also forgets the figure until the next turn.
        run(&mut r, obs(EventKind::PreCompact, 6), 6).unwrap();
        assert_eq!(r.session.compacted_at, Some(t(6)));
        assert_eq!(r.session.context_tokens, Some(125_000));
        run(&mut r, obs(EventKind::PostCompact, 7), 7).unwrap();
        assert_eq!(r.session.compacted_at, Some(t(7)));
        assert_eq!(r.session.context_tokens, None);
        assert_eq!(r.session.context_percent(), None, "no figure, no percent");
        assert_eq!(
            r.session.context_window,
            Some(258_400),
            "the window stays the model's"
        );
        // The transcript of the turn before the compact, read only now, no longer tells it.
        let late = with_context(obs(EventKind::TranscriptActivity, 5), Some(125_000), None);
        run(&mut r, late, 8).unwrap();
        assert_eq!(
            r.session.context_tokens, None,
            "measured before the compact"
        );
        let next = with_context(obs(EventKind::TaskComplete, 8), Some(30_000), None);
        run(&mut r, next, 8).unwrap();
        assert_eq!(r.session.context_percent(), Some(11));
    }

    #[test]
    fn a_compact_session_start_counts_as_a_compact_and_other_starts_do_not() {
        let mut r = started();
        run(
            &mut r,
            with_context(obs(EventKind::Stop, 2), Some(50), None),
            2,
        )
        .unwrap();
        let mut resume = obs(EventKind::SessionStart, 3);
        resume.start_source = Some("resume".into());
        run(&mut r, resume, 3).unwrap();
        assert_eq!(
            (r.session.compacted_at, r.session.context_tokens),
            (None, Some(50))
        );
        let mut compact = obs(EventKind::SessionStart, 4);
        compact.start_source = Some("compact".into());
        run(&mut r, compact, 4).unwrap();
        assert_eq!(
            (r.session.compacted_at, r.session.context_tokens),
            (Some(t(4)), None)
        );
    }

    #[test]
    fn the_percent_is_bounded_and_needs_both_figures() {
        let mut s = Session::new("s", Agent::Codex, SessionState::Idle, t(0));
        s.context_tokens = Some(300);
        assert_eq!(s.context_percent(), None);
        s.context_window = Some(0);
        assert_eq!(s.context_percent(), None);
        s.context_window = Some(200);
        assert_eq!(
            s.context_percent(),
            Some(100),
            "past the window reads as full"
        );
        s.context_window = Some(1000);
        assert_eq!(s.context_percent(), Some(30));
    }
}
