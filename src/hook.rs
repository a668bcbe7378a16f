//! `agent-tray hook` and `agent-tray notify`: what the agents run, on every event.
//!
//! Users pay for this on every tool call, and a hook that misbehaves can block or steer the agent
//! (a PermissionRequest hook's stdout can approve a tool; exit 2 blocks some events). So:
//! - **Exit 0 and print nothing, always.** `main` routes here before any argument parsing,
//!   logging setup or runtime start; panics are caught and silenced; errors go to a small log
//!   file under the data folder, never to the agent's stdout or stderr.
//! - **Bounded.** stdin is read up to 1 MiB (past that the payload is marked cut and the rest is
//!   not read), and for at most [`STDIN_BUDGET`]; connect + write to the app get what is left of
//!   [`SEND_BUDGET`], measured from the hook's start. A socket that accepts and never reads costs
//!   at most that budget.
//! - **The journal first** (see [`crate::journal`]): the record is on disk before the send, so an
//!   app that is down, wedged or slow loses nothing.
//! - **No work it does not need**: no async runtime, no tracing subscriber, one `/proc` read per
//!   step of the process walk, one append, one connect, one write.

use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::agent_pid;
use crate::agents::AgentKnowledge;
use crate::catalogue::InCatalogue;
use crate::control::client::{ClientError, ControlClient};
use crate::control::Request;
use crate::delivery;
use crate::hook_payload::{self, ForeignCaller, PayloadError};
use crate::journal::record::{self as journal_record, JournalRecord};
use crate::model::{Agent, EventKind, Observation};
use crate::paths::TrayPaths;

/// The most of stdin a hook reads.
pub const MAX_STDIN: usize = 1 << 20;
/// How long a hook waits for its stdin (the agents write it at once and close it).
pub const STDIN_BUDGET: Duration = Duration::from_millis(1000);
/// Connect + write to the app, counted from the hook's start.
pub const SEND_BUDGET: Duration = Duration::from_millis(100);
/// The hook log is rotated past this size.
const MAX_LOG_BYTES: u64 = 256 * 1024;

static SEQ_COUNTER: AtomicU64 = AtomicU64::new(0);

/// `agent-tray hook [--agent claude|codex]`. `args` are the arguments after `hook` (the full
/// argv works too: only `--agent` is looked at). Never fails, never prints.
pub fn run_hook(args: &[String]) {
    let started = Instant::now();
    let at = Utc::now();
    silence_panics();
    let _ = std::panic::catch_unwind(|| {
        let agent = agent_flag(args);
        let (payload, cut) = read_stdin(MAX_STDIN, STDIN_BUDGET);
        let mut payload = payload;
        if let Some(agent) = agent {
            if let Some(call) = agent.adapter().own_hook_call(agent, args, &payload, at) {
                // A permission request or a question the adapter can offer for an answer
                // (OpenCode's).
                let ask = (!cut)
                    .then(|| agent.adapter().own_ask_call(&payload))
                    .flatten();
                own_shape_hook(agent, call, ask, cut, at, started);
                return;
            }
            // Claude's meaning under other keys (Auggie's): rewritten, then read as Claude's.
            if let Some(rewritten) = agent.adapter().standard_shaped_payload(&payload) {
                payload = rewritten;
            }
        }
        hook_once(agent, &payload, cut, at, started);
    });
}

/// `agent-tray notify --agent <id> JSON`: the program an agent runs at each turn's end (Codex's
/// `notify`), read by that agent's adapter
/// ([`AgentAdapter::notify_observation`](crate::agents::AgentAdapter::notify_observation)).
/// The JSON is the last argument. Without a known `--agent`, the first registered agent that has
/// such a program reads it. Never fails, never prints.
pub fn run_notify(args: &[String]) {
    let started = Instant::now();
    let at = Utc::now();
    silence_panics();
    let _ = std::panic::catch_unwind(|| {
        let Ok(paths) = TrayPaths::from_env() else {
            return;
        };
        let Some(json) = args.last() else {
            return;
        };
        let named = args
            .iter()
            .position(|a| a == "--agent")
            .and_then(|i| args.get(i + 1))
            .and_then(|name| crate::agents::by_name(name));
        let read = named
            .into_iter()
            .chain(Agent::ALL.iter().copied())
            .find_map(|agent| {
                agent
                    .adapter()
                    .notify_observation(agent, json, at)
                    .map(|result| (agent, result))
            });
        let Some((agent, result)) = read else {
            return log_error(&paths, "notify: no registered agent runs a notify program");
        };
        match result {
            Ok(mut obs) => {
                obs.pid = agent_pid::agent_pid_of_this_hook(Some(agent), &crate::agents::Adapters)
                    .map(|(p, _)| p);
                obs.seq = Some(sequence_id(at));
                deliver(&paths, obs, false, started);
            }
            // A notification type this version does not know: counted like an unknown hook.
            Err(PayloadError::UnknownEvent(event)) => {
                let request = Request::UnknownEvent {
                    event,
                    agent: Some(agent),
                };
                send_only(&paths, &request, started);
            }
            Err(e) => log_error(&paths, &format!("notify: {e}")),
        }
    });
}

fn hook_once(agent: Option<Agent>, payload: &[u8], cut: bool, at: DateTime<Utc>, started: Instant) {
    let Ok(paths) = TrayPaths::from_env() else {
        return; // no HOME and no AGENT_TRAY_HOME: nowhere to write, not even a log
    };
    let parsed = match hook_payload::parse_hook(payload, agent, &crate::agents::Adapters) {
        // A `doctor` probe: proof that this command line reaches the engine. Never journaled
        // (the replay would make it a session), only sent.
        // `doctor`'s probe of the answer path: asked like a real request, never journaled;
        // the engine answers it at once (a deny the probe reads from this hook's stdout).
        Ok(parsed)
            if delivery::is_probe_id(&parsed.session_id)
                && parsed.event == EventKind::PermissionRequest
                && parsed.agent.and_then(|a| a.entry().answer_path).is_some() =>
        {
            let Some(path) = parsed.agent.and_then(|a| a.entry().answer_path) else {
                return;
            };
            let obs = parsed.into_observation(at, None, &crate::agents::Adapters);
            ask_and_print(
                &paths,
                obs,
                standard_ask(payload, cut),
                path,
                cut,
                started,
                false,
            );
            return;
        }
        Ok(parsed) if delivery::is_probe_id(&parsed.session_id) => {
            let probe = Request::Probe {
                probe_id: parsed.session_id,
                agent: parsed.agent,
            };
            send_only(&paths, &probe, started);
            return;
        }
        Ok(parsed) => parsed,
        // An event this version does not know is nothing to complain about, but it is counted
        // (by the engine, shown by `doctor`): the first sign that an agent grew new hooks.
        Err(PayloadError::UnknownEvent(event)) => {
            send_only(&paths, &Request::UnknownEvent { event, agent }, started);
            return;
        }
        // Known, and nothing to do with a session's state (Claude's Setup, FileChanged, …).
        Err(PayloadError::KnownIgnored(_)) => return,
        // Another agent ran our hook (it loads `.claude/settings.json` too): counted, never a
        // session.
        Err(PayloadError::Foreign { caller, event }) => {
            send_foreign(&paths, caller, event, agent, started);
            return;
        }
        Err(e) => {
            let what = if cut { " (payload cut at 1 MiB)" } else { "" };
            log_error(&paths, &format!("hook: {e}{what}"));
            return;
        }
    };
    let walked = agent_pid::agent_pid_of_this_hook(parsed.agent, &crate::agents::Adapters);
    if walked.is_none() {
        // No agent of ours above the hook: the process that ran it, or the environment it gave,
        // may name another agent whose payloads look like Claude's.
        let caller = agent_pid::caller_name_of_this_hook()
            .and_then(|comm| ForeignCaller::by_process_name(&comm))
            .or_else(|| ForeignCaller::by_env(|k| std::env::var(k).ok()));
        if let Some(caller) = caller {
            let event = parsed.event.as_str().to_string();
            send_foreign(&paths, caller, event, parsed.agent, started);
            return;
        }
    }
    let mut obs = parsed.into_observation(at, walked, &crate::agents::Adapters);
    if obs.event == EventKind::CwdChanged {
        // The session moved: its repository and branch are the new folder's (a few small reads).
        if let Some((repo, branch)) = obs.cwd.as_deref().and_then(|c| git_place(Path::new(c))) {
            obs.repo = Some(repo);
            obs.branch = branch;
        }
    }
    obs.seq = Some(sequence_id(at));
    // An agent that asks the engine through a route of its own (Codex's managed server: the
    // app-server feed answers its requests while the TUI's dialog stays up): the hook only
    // reports, and never holds the request back from the terminal.
    let answered_by_server = obs.event == EventKind::PermissionRequest
        && crate::process::parent_of_this_process().is_some_and(|parent| {
            obs.agent
                .adapter()
                .asked_elsewhere(&crate::process::SystemProcesses, parent)
        });
    // An MCP server's form (Claude's `Elicitation`): asked where the agent has a route for forms
    // (opt-in: while our hook waits, the terminal shows no form).
    if obs.event == EventKind::Elicitation {
        if let Some(path) = obs.agent.entry().form_path {
            let asked = (!cut)
                .then(|| serde_json::from_slice::<serde_json::Value>(payload).ok())
                .flatten()
                .and_then(|v| crate::answering::forms::form_call_from_payload(&v).map(|c| (v, c)));
            ask_and_print(&paths, obs, asked, path, cut, started, true);
            return;
        }
    }
    if obs.event == EventKind::PermissionRequest && !answered_by_server {
        if let Some(path) = obs.agent.entry().answer_path {
            let offered = standard_ask(payload, cut).filter(|(_, call)| {
                crate::agents::adapter_of(obs.agent).offers_answer_for(&call.detail.tool)
            });
            ask_and_print(&paths, obs, offered, path, cut, started, true);
            return;
        }
    }
    deliver(&paths, obs, cut, started);
}

/// What a standard (Claude-shaped) `PermissionRequest` payload asks, with the payload itself (its
/// suggestions make "allow for this session"); `None` for a cut or unreadable one.
fn standard_ask(
    payload: &[u8],
    cut: bool,
) -> Option<(serde_json::Value, crate::answering::AskCall)> {
    if cut {
        return None;
    }
    serde_json::from_slice::<serde_json::Value>(payload)
        .ok()
        .and_then(|v| crate::answering::ask_call_from_payload(&v).map(|call| (v, call)))
}

/// How long the hook waits for the engine's first reply to a permission request. Only a running
/// engine can cost this (a hook with no engine learns it at connect); the agent's own dialog is
/// on screen meanwhile.
const ASK_REPLY_BUDGET: Duration = Duration::from_millis(1000);

/// A permission request: journaled like every event, then sent as an `ask`; the hook waits on
/// the connection for an answer and prints it in the agent's shape
/// ([`crate::answering::hook_output`]). Every failure prints nothing, so the agent asks in its
/// terminal as it would without us.
fn ask_and_print(
    paths: &TrayPaths,
    obs: Observation,
    asked: Option<(serde_json::Value, crate::answering::AskCall)>,
    path: crate::answering::AnswerPath,
    cut: bool,
    started: Instant,
    journaled: bool,
) {
    use crate::answering::{self, HookDecision, Printed};
    use crate::control::protocol::{AskReply, TypedReply};
    let Some((payload, call)) = asked else {
        if journaled {
            deliver(paths, obs, cut, started);
        }
        return;
    };
    let obs = match obs.admit() {
        Ok(obs) => obs,
        Err(e) => return log_error(paths, &format!("refused: {e}")),
    };
    let record = JournalRecord::new(obs, cut);
    // A `doctor` probe is never journaled: replayed, it would become a session.
    if journaled {
        if let Err(e) = journal_record::append(&paths.journal_dir(), &record) {
            log_error(paths, &format!("journal: {e}"));
        }
    }
    let left = SEND_BUDGET.saturating_sub(started.elapsed());
    if left.is_zero() {
        return log_error(
            paths,
            "ask skipped: the hook's time budget was spent before the send",
        );
    }
    let mut client = match ControlClient::connect(&paths.socket, left) {
        Ok(client) => client,
        Err(ClientError::NotRunning(_) | ClientError::Starting(_)) => return,
        Err(e) => return log_error(paths, &format!("ask: {e}")),
    };
    client.set_deadline(Instant::now() + ASK_REPLY_BUDGET);
    let ask = Request::Ask {
        observation: record.observation.clone(),
        call,
    };
    let reply = client
        .send(&ask)
        .and_then(|()| client.read_reply_as::<TypedReply<AskReply>>());
    let asked = match reply.map(TypedReply::into_result) {
        Ok(Ok(asked)) => asked,
        // An engine from before answering does not know `ask`: it still gets the event.
        Ok(Err(_)) => {
            return send_observation(paths, record.observation, started);
        }
        Err(e) => return log_error(paths, &format!("ask: {e}")),
    };
    let (Some(id), Some(answer_by)) = (asked.id, asked.answer_by) else {
        return; // not offered: the terminal's dialog is the answer
    };
    // The engine's deadline, but never past what the agent allows from this hook's start.
    let engine_wait = (answer_by - Utc::now()).to_std().unwrap_or_default();
    let by_agent = Duration::from_secs(path.max_wait_secs).saturating_sub(started.elapsed());
    client.set_deadline(Instant::now() + engine_wait.min(by_agent));
    let decision = match client.read_reply_as::<HookDecision>() {
        Ok(decision) => decision,
        Err(_) => return, // the deadline, or the engine went away: nothing printed
    };
    let Some(text) = answering::hook_output(path.reply, &decision, &payload) else {
        return;
    };
    let mut out = io::stdout().lock();
    if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
        return; // the agent is not reading: do not claim it has the answer
    }
    drop(out);
    client.set_deadline(Instant::now() + Duration::from_millis(500));
    let _ = client.send_json(&Printed { printed: id });
}

/// A hook call parsed by the agent's adapter ([`AgentAdapter::own_hook_call`]): journaled and
/// delivered like every other hook.
///
/// [`AgentAdapter::own_hook_call`]: crate::agents::AgentAdapter::own_hook_call
fn own_shape_hook(
    agent: Agent,
    call: crate::agents::OwnHookCall,
    ask: Option<crate::answering::AskCall>,
    cut: bool,
    at: DateTime<Utc>,
    started: Instant,
) {
    use crate::agents::OwnHookCall;
    let Ok(paths) = TrayPaths::from_env() else {
        return;
    };
    let mut obs = match call {
        OwnHookCall::Observation(obs) => *obs,
        OwnHookCall::Unknown(event) => {
            let request = Request::UnknownEvent {
                event,
                agent: Some(agent),
            };
            send_only(&paths, &request, started);
            return;
        }
        OwnHookCall::Ignored => return,
        OwnHookCall::Invalid(e) => {
            let what = if cut { " (payload cut at 1 MiB)" } else { "" };
            log_error(&paths, &format!("hook: {e}{what}"));
            return;
        }
    };
    if delivery::is_probe_id(&obs.session_id) {
        // `doctor`'s probe of the answer path: asked, never journaled.
        if obs.event == EventKind::PermissionRequest {
            if let (Some(call), Some(path)) = (ask, agent.entry().answer_path) {
                let asked = Some((serde_json::Value::Null, call));
                ask_and_print(&paths, obs, asked, path, cut, started, false);
                return;
            }
        }
        let probe = Request::Probe {
            probe_id: obs.session_id,
            agent: Some(agent),
        };
        send_only(&paths, &probe, started);
        return;
    }
    obs.seq = Some(sequence_id(at));
    // A permission request, or a question (OpenCode's `question.asked`), the adapter can offer.
    let asks = obs.event == EventKind::PermissionRequest
        || ask.as_ref().is_some_and(|c| c.detail.questions.is_some());
    if asks {
        if let (Some(call), Some(path)) = (ask, agent.entry().answer_path) {
            let asked = Some((serde_json::Value::Null, call));
            ask_and_print(&paths, obs, asked, path, cut, started, true);
            return;
        }
    }
    deliver(&paths, obs, cut, started);
}

/// The repository (its folder's name) and branch a folder is in: the nearest `.git` above it
/// (a folder, or a worktree's `gitdir:` file), and its `HEAD` (`None` when detached). At most
/// [`GIT_DEPTH`] folders up; no git process is run.
pub fn git_place(dir: &Path) -> Option<(String, Option<String>)> {
    const GIT_DEPTH: usize = 32;
    for folder in dir.ancestors().take(GIT_DEPTH) {
        let dot_git = folder.join(".git");
        let git_dir = match fs::metadata(&dot_git) {
            Ok(m) if m.is_dir() => dot_git,
            Ok(m) if m.is_file() && m.len() < 4096 => {
                let text = fs::read_to_string(&dot_git).ok()?;
                let target = text.trim().strip_prefix("gitdir:")?.trim();
                folder.join(target)
            }
            _ => continue,
        };
        let repo = folder.file_name()?.to_string_lossy().into_owned();
        let head = fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default();
        let branch = head
            .trim()
            .strip_prefix("ref: refs/heads/")
            .map(|b| hook_payload::cap(b.to_string(), 256));
        return Some((repo, branch));
    }
    None
}

/// Journals the observation, then sends it within what is left of the budget.
fn deliver(paths: &TrayPaths, obs: Observation, cut: bool, started: Instant) {
    // The core's gate, applied before anything is written: a crafted session id is refused here
    // already (and logged), not journaled and replayed into the registry's refusal later.
    let obs = match obs.admit() {
        Ok(obs) => obs,
        Err(e) => {
            log_error(paths, &format!("refused: {e}"));
            return;
        }
    };
    let record = JournalRecord::new(obs, cut);
    if let Err(e) = journal_record::append(&paths.journal_dir(), &record) {
        log_error(paths, &format!("journal: {e}"));
    }
    let left = SEND_BUDGET.saturating_sub(started.elapsed());
    if left.is_zero() {
        log_error(
            paths,
            "send skipped: the hook's time budget was spent before the send",
        );
        return;
    }
    let result = ControlClient::connect(&paths.socket, left).and_then(|mut client| {
        client.send(&Request::Observe {
            observation: record.observation,
        })
    });
    match result {
        Ok(()) | Err(ClientError::NotRunning(_) | ClientError::Starting(_)) => {}
        Err(e) => log_error(paths, &format!("send: {e}")),
    }
}

/// Sends an already journaled observation within what is left of the budget (the fallback
/// when an engine does not take an `ask`).
fn send_observation(paths: &TrayPaths, observation: Observation, started: Instant) {
    let left = SEND_BUDGET
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(100));
    let result = ControlClient::connect(&paths.socket, left)
        .and_then(|mut client| client.send(&Request::Observe { observation }));
    match result {
        Ok(()) | Err(ClientError::NotRunning(_) | ClientError::Starting(_)) => {}
        Err(e) => log_error(paths, &format!("send: {e}")),
    }
}

/// Sends a request that is not journaled (a probe, an unknown event's count) within what is left
/// of the budget. An engine that is not running loses it, on purpose: neither is a session.
fn send_only(paths: &TrayPaths, request: &Request, started: Instant) {
    let left = SEND_BUDGET.saturating_sub(started.elapsed());
    if left.is_zero() {
        return;
    }
    let result = ControlClient::connect(&paths.socket, left).and_then(|mut c| c.send(request));
    match result {
        Ok(()) | Err(ClientError::NotRunning(_) | ClientError::Starting(_)) => {}
        Err(e) => log_error(paths, &format!("send: {e}")),
    }
}

/// Counts a foreign caller's call on the engine (`doctor` names it). Never journaled.
fn send_foreign(
    paths: &TrayPaths,
    caller: ForeignCaller,
    event: String,
    agent: Option<Agent>,
    started: Instant,
) {
    let request = Request::ForeignCall {
        caller: caller.as_str().to_string(),
        event: hook_payload::cap(event, 64),
        agent,
    };
    send_only(paths, &request, started);
}

/// A sequence id no other hook call shares: this process's pid, its start in nanoseconds, and
/// a counter.
pub fn sequence_id(at: DateTime<Utc>) -> String {
    let nanos = at.timestamp_nanos_opt().unwrap_or_default();
    let n = SEQ_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}-{nanos}-{n}", std::process::id())
}

/// `--agent X` or `--agent=X`, anywhere in the arguments; an unknown value counts as absent.
pub fn agent_flag(args: &[String]) -> Option<Agent> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--agent" {
            return it.next().and_then(|v| v.parse().ok());
        }
        if let Some(v) = arg.strip_prefix("--agent=") {
            return v.parse().ok();
        }
    }
    None
}

/// Reads stdin: at most `max` bytes, for at most `budget`. Returns the bytes and whether more
/// was there (the payload was cut).
#[cfg(unix)]
pub fn read_stdin(max: usize, budget: Duration) -> (Vec<u8>, bool) {
    let (mut buf, cut) = read_stdin_past(max, budget);
    buf.truncate(max);
    (buf, cut)
}

/// [`read_stdin`], but a cut read keeps the bytes it took past `max` (the status-line bridge
/// hands all of its input on, and reads the rest of stdin after them).
#[cfg(unix)]
pub fn read_stdin_past(max: usize, budget: Duration) -> (Vec<u8>, bool) {
    use std::os::fd::AsRawFd;
    let stdin = io::stdin();
    let mut lock = stdin.lock();
    read_bounded_past(&mut lock, io::stdin().as_raw_fd(), max, budget)
}

/// Reads stdin: at most `max` bytes, for at most `budget`. Windows cannot wait on a pipe's
/// readiness, so a thread reads and this waits for what it hands over, up to the deadline; a
/// thread still blocked then ends with the hook's process, a moment later.
#[cfg(windows)]
pub fn read_stdin(max: usize, budget: Duration) -> (Vec<u8>, bool) {
    let (mut buf, cut) = read_stdin_past(max, budget);
    buf.truncate(max);
    (buf, cut)
}

/// [`read_stdin`], but a cut read keeps the bytes it took past `max`.
#[cfg(windows)]
pub fn read_stdin_past(max: usize, budget: Duration) -> (Vec<u8>, bool) {
    read_bounded_by_thread_past(io::stdin(), max, budget)
}

/// Reads from `reader` up to `max` bytes or until `budget` passes, where its readiness cannot
/// be waited on (Windows' pipes): a thread reads and hands over what it gets; one still blocked
/// at the deadline ends with the hook's process, a moment later.
#[cfg(windows)]
pub fn read_bounded_by_thread(
    reader: impl Read + Send + 'static,
    max: usize,
    budget: Duration,
) -> (Vec<u8>, bool) {
    let (mut buf, cut) = read_bounded_by_thread_past(reader, max, budget);
    buf.truncate(max);
    (buf, cut)
}

/// [`read_bounded_by_thread`], keeping what a cut read took past `max`.
#[cfg(windows)]
fn read_bounded_by_thread_past(
    mut reader: impl Read + Send + 'static,
    max: usize,
    budget: Duration,
) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + budget;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
    let spawned = std::thread::Builder::new()
        .name("hook-stdin".into())
        .spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut chunk) {
                    Ok(0) => return,
                    Ok(n) => {
                        if tx.send(chunk[..n].to_vec()).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return,
                }
            }
        });
    let mut buf = Vec::with_capacity(16 * 1024);
    if spawned.is_err() {
        return (buf, false);
    }
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(part) => {
                buf.extend_from_slice(&part);
                if buf.len() > max {
                    return (buf, true);
                }
            }
            // The end of input, or out of time: what arrived is the payload.
            Err(_) => return (buf, false),
        }
    }
}

/// Reads from `reader` (whose descriptor is `fd`) up to `max` bytes or until `budget` passes.
#[cfg(unix)]
pub fn read_bounded(
    reader: &mut dyn Read,
    fd: i32,
    max: usize,
    budget: Duration,
) -> (Vec<u8>, bool) {
    let (mut buf, cut) = read_bounded_past(reader, fd, max, budget);
    buf.truncate(max);
    (buf, cut)
}

/// [`read_bounded`], keeping the byte a cut read took past `max`.
#[cfg(unix)]
fn read_bounded_past(
    reader: &mut dyn Read,
    fd: i32,
    max: usize,
    budget: Duration,
) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + budget;
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !wait_readable(fd, left) {
            // Out of time: what arrived is the payload; if it is not all, the parse says so.
            return (buf, false);
        }
        // Read one byte past the limit to know whether there was more.
        let room = (max + 1).saturating_sub(buf.len()).min(chunk.len());
        match reader.read(&mut chunk[..room]) {
            Ok(0) => return (buf, false),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > max {
                    return (buf, true);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return (buf, false),
        }
    }
}

/// Waits until `fd` can be read (data or end of file), for at most `timeout`.
#[cfg(unix)]
fn wait_readable(fd: i32, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
    loop {
        // SAFETY: one valid pollfd, for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc >= 0 {
            // POLLHUP/POLLERR/POLLNVAL also end the wait: the read then says what happened.
            return rc > 0;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return true; // cannot poll (not pollable): let the read decide
        }
    }
}

/// A panic must not print to the agent's stderr; the process exits 0 after it regardless.
pub(crate) fn silence_panics() {
    std::panic::set_hook(Box::new(|info| {
        if let Ok(paths) = TrayPaths::from_env() {
            log_error(&paths, &format!("panic: {info}"));
        }
    }));
}

/// Appends one line to the hook log (`<data>/logs/hook.log`, rotated at a small size). Best
/// effort: a hook that cannot even log stays silent.
pub fn log_error(paths: &TrayPaths, message: &str) {
    let dir = paths.log_dir();
    let path = dir.join("hook.log");
    let _ = write_log(&dir, &path, message);
}

fn write_log(dir: &Path, path: &Path, message: &str) -> io::Result<()> {
    if fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = fs::rename(path, path.with_extension("log.1"));
    }
    let open = || {
        crate::os_fs::private_options()
            .create(true)
            .append(true)
            .open(path)
    };
    let mut file = match open() {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            crate::paths::create_private_dir(dir).map_err(io::Error::other)?;
            open()?
        }
        Err(e) => return Err(e),
    };
    let line = format!(
        "{} pid={} {}\n",
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        std::process::id(),
        message.replace('\n', " ")
    );
    file.write_all(line.as_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_flag_is_read_in_either_spelling_and_anywhere() {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(agent_flag(&s(&["--agent", "codex"])), Some(Agent::Codex));
        assert_eq!(
            agent_flag(&s(&["agent-tray", "hook", "--agent=claude"])),
            Some(Agent::Claude)
        );
        assert_eq!(agent_flag(&s(&["--agent", "gemini"])), Some(Agent::Gemini));
        assert_eq!(agent_flag(&s(&["--agent", "kimi"])), None, "not registered");
        assert_eq!(agent_flag(&s(&["--agent"])), None);
        assert_eq!(agent_flag(&[]), None);
    }

    #[test]
    fn a_folder_inside_a_repository_names_the_repository_and_its_branch() {
        // CwdChanged into a subfolder of a checkout, a worktree (`.git` is a file), a detached
        // HEAD, and a folder in no repository at all.
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("api-server");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(repo.join("src/deep")).unwrap();
        fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(
            git_place(&repo.join("src/deep")),
            Some(("api-server".into(), Some("feature/x".into())))
        );
        let wt = tmp.path().join("wt-one");
        fs::create_dir_all(repo.join(".git/worktrees/one")).unwrap();
        fs::write(repo.join(".git/worktrees/one/HEAD"), "0123abcd\n").unwrap();
        fs::create_dir_all(&wt).unwrap();
        fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", repo.join(".git/worktrees/one").display()),
        )
        .unwrap();
        assert_eq!(git_place(&wt), Some(("wt-one".into(), None)), "detached");
        let plain = tmp.path().join("plain");
        fs::create_dir_all(&plain).unwrap();
        assert_eq!(git_place(&plain), None);
    }

    #[test]
    fn sequence_ids_never_repeat_within_a_process() {
        let at = Utc::now();
        let a = sequence_id(at);
        let b = sequence_id(at);
        assert_ne!(a, b, "same instant, still distinct");
        assert!(a.starts_with(&format!("{}-", std::process::id())));
    }

    /// The hook's bounded read of `r`, the way this desktop does it.
    #[cfg(unix)]
    fn read_like_the_hook(
        mut r: std::io::PipeReader,
        max: usize,
        budget: Duration,
    ) -> (Vec<u8>, bool) {
        use std::os::fd::AsRawFd;
        let fd = r.as_raw_fd();
        read_bounded(&mut r, fd, max, budget)
    }

    #[cfg(windows)]
    fn read_like_the_hook(r: std::io::PipeReader, max: usize, budget: Duration) -> (Vec<u8>, bool) {
        read_bounded_by_thread(r, max, budget)
    }

    #[test]
    fn stdin_past_the_limit_is_cut_and_not_read_further() {
        let (r, mut w) = std::io::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            // 3 MiB: the reader stops at 1 MiB + 1 and the rest is never read (EPIPE here).
            let _ = w.write_all(&vec![b'x'; 3 << 20]);
        });
        let (bytes, cut) = read_like_the_hook(r, MAX_STDIN, Duration::from_secs(5));
        assert!(cut);
        assert_eq!(bytes.len(), MAX_STDIN);
        writer.join().unwrap();
    }

    #[test]
    fn a_stdin_that_never_closes_costs_at_most_the_budget() {
        // A person running the hook in a terminal, or an agent that keeps the pipe open.
        let (r, mut w) = std::io::pipe().unwrap();
        w.write_all(b"{\"session_id\":").unwrap();
        let t = Instant::now();
        let (bytes, cut) = read_like_the_hook(r, MAX_STDIN, Duration::from_millis(150));
        assert!(t.elapsed() < Duration::from_millis(1000));
        assert_eq!(bytes, b"{\"session_id\":");
        assert!(!cut);
        drop(w);
    }

    #[test]
    fn errors_land_in_a_private_log_that_stays_small() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = TrayPaths::under(tmp.path());
        let big = "e".repeat(10_000);
        for _ in 0..60 {
            log_error(&paths, &big);
        }
        let log = paths.log_dir().join("hook.log");
        assert!(fs::metadata(&log).unwrap().len() <= MAX_LOG_BYTES + 20_000);
        assert!(
            paths.log_dir().join("hook.log.1").exists(),
            "rotated once full"
        );
    }
}
