//! Running a link: the `ssh` child and its arguments, reading its lines (bounded, paced by a
//! read budget) into the registry, the loop that retries after a failure, and the supervisor
//! ([`spawn`]) that keeps one link per entry of `remotes.json`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::io::{AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::failure::{
    classify_failure, should_retry_early, Backoff, LinkFailure, NetworkMark, ProtocolProblem,
    UNUSABLE_RETRY,
};
use super::state::{LinkState, RemoteLinkStatus, RemoteLinks};
use crate::bounded_lines::{BoundedLine, LineRead};
use crate::model::Session;
use crate::plan_limits::{GateOutcome, RemoteLimitsGate};
use crate::registry::{SessionsRegistry, ENDED_TTL};
use crate::remote::config::{self, RemoteEntry};
use crate::remote::reconcile::{mark_unreachable, reconcile};
use crate::remote::wire::{parse_line, RemoteLine, MAX_REMOTE_LINE, MAX_REMOTE_SESSIONS};
use crate::remote::REMOTE_PROTOCOL;

/// Lines longer than this are parsed on a blocking thread.
const BLOCKING_PARSE_FROM: usize = 256 * 1024;
/// How often a waiting link looks for a wake from sleep or a change of routes.
const WAKE_PROBE: Duration = Duration::from_secs(5);
/// How much of `ssh`'s stderr is kept to explain a failure (the end of it).
const STDERR_TAIL: usize = 4096;
/// How long a finished child is given to report its exit status.
const EXIT_WAIT: Duration = Duration::from_secs(3);
/// How long the supervisor waits for a stopped link.
const LINK_STOP: Duration = Duration::from_secs(3);
/// `AGENT_TRAY_SSH`: the ssh program (default `ssh`, from PATH).
pub const SSH_PROGRAM_KNOB: &str = "AGENT_TRAY_SSH";
/// `AGENT_TRAY_SSH_CONFIG`: an ssh config file given to every link as `-F` (default: ssh's own).
pub const SSH_CONFIG_KNOB: &str = "AGENT_TRAY_SSH_CONFIG";
/// The shortest time between two publications of one link's news: a remote that changes faster
/// is shown at this pace, its changes in between folded into the next (its last word always
/// lands). Ten a second is faster than a person reads a row.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(100);
/// What one link may read: lines at this rate…
const READ_LINES_PER_SEC: f64 = 1000.0;
/// …after a burst of this many (an honest remote sends a line per change of a session);
const READ_LINES_BURST: f64 = 2000.0;
/// and bytes at this rate…
const READ_BYTES_PER_SEC: f64 = 1024.0 * 1024.0;
/// …after a burst of this many (two of the longest lines). A remote that sends more waits for
/// the link to read it: ssh's pipe fills and the remote's `watch` drops a reader that far
/// behind. What one remote makes this machine parse stays bounded.
const READ_BYTES_BURST: f64 = 2.0 * MAX_REMOTE_LINE as f64;
/// What runs on the remote.
pub const REMOTE_COMMAND: &str = "agent-tray watch --json --protocol 1";

/// How `ssh` is run: the program and an optional config file (`-F`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshCommand {
    pub program: PathBuf,
    pub config_file: Option<PathBuf>,
}

impl Default for SshCommand {
    fn default() -> Self {
        SshCommand {
            program: PathBuf::from("ssh"),
            config_file: None,
        }
    }
}

impl SshCommand {
    /// `AGENT_TRAY_SSH` and `AGENT_TRAY_SSH_CONFIG`, where set and not empty.
    pub fn from_env() -> Self {
        let knob = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        SshCommand {
            program: knob(SSH_PROGRAM_KNOB).map_or_else(|| PathBuf::from("ssh"), PathBuf::from),
            config_file: knob(SSH_CONFIG_KNOB).map(PathBuf::from),
        }
    }

    /// The arguments for one link to `destination`. Options on the command line win over the
    /// user's config: never prompt, give up on a dead network within a bound.
    pub fn args(&self, destination: &str) -> Vec<OsString> {
        self.args_running(destination, REMOTE_COMMAND)
    }

    /// [`SshCommand::args`] running `remote_command` (one string the remote's login shell reads;
    /// its words quoted by the caller) instead of the link's `watch`.
    pub fn args_running(&self, destination: &str, remote_command: &str) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
            .into_iter()
            .chain([
                "-o",
                "ServerAliveInterval=15",
                "-o",
                "ServerAliveCountMax=3",
            ])
            .map(OsString::from)
            .collect();
        if let Some(config) = &self.config_file {
            args.push("-F".into());
            args.push(config.clone().into_os_string());
        }
        args.push("--".into());
        args.push(destination.into());
        args.push(remote_command.into());
        args
    }
}

/// Two token buckets over what a link reads, lines and bytes: each line is charged by
/// [`ReadBudget::charge`], and the link reads the next only at [`ReadBudget::ready_at`].
#[derive(Debug, Clone)]
struct ReadBudget {
    lines: f64,
    bytes: f64,
    at: Instant,
}

impl ReadBudget {
    fn new(now: Instant) -> Self {
        Self {
            lines: READ_LINES_BURST,
            bytes: READ_BYTES_BURST,
            at: now,
        }
    }

    /// Adds what accrued between the last reckoning and `now`.
    fn refill(&mut self, now: Instant) {
        let secs = now.saturating_duration_since(self.at).as_secs_f64();
        self.lines = (self.lines + secs * READ_LINES_PER_SEC).min(READ_LINES_BURST);
        self.bytes = (self.bytes + secs * READ_BYTES_PER_SEC).min(READ_BYTES_BURST);
        self.at = now;
    }

    /// Takes a line of `bytes` read at `now` (the budget may go below zero: the line is read).
    fn charge(&mut self, bytes: usize, now: Instant) {
        self.refill(now);
        self.lines -= 1.0;
        self.bytes -= bytes as f64;
    }

    /// When both buckets are back to zero, if one is below: the next line is read then.
    fn ready_at(&self) -> Option<Instant> {
        let owed = (-self.lines / READ_LINES_PER_SEC).max(-self.bytes / READ_BYTES_PER_SEC);
        (owed > 0.0).then(|| {
            // Rounded up to the millisecond, so the wake finds the budget whole.
            self.at + Duration::from_secs_f64((owed * 1000.0).ceil() / 1000.0)
        })
    }
}

/// One big line at a time, across every link: a line that grows past [`BLOCKING_PARSE_FROM`]
/// is read on (and parsed) only while holding this, so 32 remotes each sending the longest line
/// cost this machine one such line's memory, not 32.
static BIG_LINE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// The last [`STDERR_TAIL`] bytes a child writes to stderr.
async fn stderr_tail(mut stderr: impl AsyncRead + Unpin) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 1024];
    while let Ok(n) = stderr.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// How one try ended.
enum Attempt {
    Cancelled,
    Ended {
        failure: LinkFailure,
        connected_for: Option<Duration>,
    },
}

/// One remote's link: what it holds of the remote, and where it puts it.
struct Link {
    registry: Arc<SessionsRegistry>,
    links: Arc<RemoteLinks>,
    entry: RemoteEntry,
    ssh: SshCommand,
    picture: HashMap<String, Session>,
    /// Sessions found ended at a reconnect, dropped when their linger is over.
    lingering: HashMap<String, Instant>,
    /// What changed in `picture` since the registry last heard: the whole of it, or these ids.
    news: News,
    /// When the registry last heard from this link (see [`PUBLISH_EVERY`]).
    published_at: Option<Instant>,
    /// The remote's plan windows, taken at most every few seconds (see
    /// [`crate::plan_limits::RemoteLimitsGate`]).
    limits_gate: RemoteLimitsGate<Instant>,
}

/// What a link has not yet told the registry.
#[derive(Debug, Default)]
struct News {
    whole: bool,
    ids: std::collections::HashSet<String>,
}

impl News {
    fn is_empty(&self) -> bool {
        !self.whole && self.ids.is_empty()
    }
}

impl Link {
    /// Tells the registry what changed since it last heard: the whole picture after a snapshot,
    /// a resync or a cut link, else only the sessions that changed (cheap under its lock).
    fn publish(&mut self) {
        let news = std::mem::take(&mut self.news);
        self.published_at = Some(Instant::now());
        if news.whole {
            let sessions: Vec<Session> = self.picture.values().cloned().collect();
            self.registry
                .set_remote_sessions(&self.entry.name, sessions);
        } else if !news.ids.is_empty() {
            let mut upserts = Vec::new();
            let mut removed = Vec::new();
            for id in news.ids {
                match self.picture.get(&id) {
                    Some(session) => upserts.push(session.clone()),
                    None => removed.push(id),
                }
            }
            self.registry
                .update_remote_sessions(&self.entry.name, upserts, &removed);
        } else {
            return;
        }
        let count = u32::try_from(self.picture.len()).unwrap_or(u32::MAX);
        self.links.update(&self.entry.name, |s| s.sessions = count);
    }

    /// When the news may be published: now if the last publication is [`PUBLISH_EVERY`] old,
    /// else at that age; `None` when there is no news.
    fn publish_due(&self) -> Option<Instant> {
        if self.news.is_empty() {
            return None;
        }
        Some(match self.published_at {
            Some(at) => at + PUBLISH_EVERY,
            None => Instant::now(),
        })
    }

    /// Publishes the news if its time has come (see [`Self::publish_due`]).
    fn publish_if_due(&mut self) {
        if self.publish_due().is_some_and(|due| due <= Instant::now()) {
            self.publish();
        }
    }

    fn set_state(&self, state: LinkState, message: Option<String>) {
        let now = Utc::now();
        self.links.update(&self.entry.name, |s| {
            if s.state != state {
                s.since = now;
            }
            s.state = state;
            s.message = message;
        });
    }

    /// Applies one line; `Err` when the line ends the attempt (a first line that is not a
    /// usable snapshot).
    fn apply(&mut self, line: RemoteLine, connected: bool) -> Result<bool, ProtocolProblem> {
        match line {
            RemoteLine::Snapshot {
                protocol,
                version,
                live,
                ended,
            } => {
                match protocol {
                    None => return Err(ProtocolProblem::NoProtocol),
                    Some(p) if p != REMOTE_PROTOCOL => return Err(ProtocolProblem::Other(p)),
                    Some(_) => {}
                }
                let out = reconcile(&self.picture, live, ended, Utc::now());
                let linger_end = Instant::now() + ENDED_TTL;
                for id in &out.ended_while_cut {
                    self.lingering.insert(id.clone(), linger_end);
                }
                if !out.ended_while_cut.is_empty() {
                    tracing::info!(remote = %self.entry.name, ended = ?out.ended_while_cut, "remote_sessions_ended_while_cut");
                }
                self.picture = out.picture;
                self.news.whole = true;
                self.links
                    .update(&self.entry.name, |s| s.remote_version = version);
                self.set_state(LinkState::Connected, None);
                tracing::info!(remote = %self.entry.name, sessions = self.picture.len(), "remote_connected");
                return Ok(true);
            }
            _ if !connected => return Err(ProtocolProblem::NotWatchOutput),
            RemoteLine::Resync(sessions) => {
                self.picture = sessions
                    .into_iter()
                    .map(|s| (s.session_id.clone(), s))
                    .collect();
                self.news.whole = true;
            }
            RemoteLine::Upsert(session) => {
                let room = self.picture.len() < MAX_REMOTE_SESSIONS
                    || self.picture.contains_key(&session.session_id);
                if room {
                    self.lingering.remove(&session.session_id);
                    self.news.ids.insert(session.session_id.clone());
                    self.picture.insert(session.session_id.clone(), session);
                }
            }
            RemoteLine::Removed(id) => {
                if self.picture.remove(&id).is_some() {
                    self.news.ids.insert(id);
                }
            }
            RemoteLine::Limits(windows) => {
                match self.limits_gate.offer(windows, Instant::now()) {
                    GateOutcome::Take(windows) => {
                        self.links.limits.replace_host(&self.entry.name, windows);
                    }
                    GateOutcome::Held { burst_began: true } => {
                        tracing::info!(
                            remote = %self.entry.name,
                            every_secs = crate::plan_limits::REMOTE_LIMITS_EVERY.as_secs(),
                            dropped_before = self.limits_gate.dropped(),
                            "remote_limits_held: lines faster than the remote's pace; the newest is taken every few seconds"
                        );
                    }
                    GateOutcome::Held { burst_began: false } => {}
                }
                return Ok(false);
            }
            RemoteLine::Nothing => return Ok(false),
        }
        Ok(true)
    }

    fn drop_lingered(&mut self, now: Instant) -> bool {
        let done: Vec<String> = self
            .lingering
            .iter()
            .filter(|(_, end)| **end <= now)
            .map(|(id, _)| id.clone())
            .collect();
        let dropped = !done.is_empty();
        for id in done {
            self.lingering.remove(&id);
            self.picture.remove(&id);
            self.news.ids.insert(id);
        }
        dropped
    }

    async fn attempt(&mut self, token: &CancellationToken) -> Attempt {
        let destination = self.entry.destination.clone();
        let mut command = tokio::process::Command::new(&self.ssh.program);
        command
            .args(self.ssh.args(&destination))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own group: a terminal's Ctrl-C meant for the host does not cut the link first.
        #[cfg(unix)]
        command.process_group(0);
        #[cfg(windows)]
        command.creation_flags(0x0000_0200); // CREATE_NEW_PROCESS_GROUP
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return Attempt::Ended {
                    failure: LinkFailure::Unreachable(format!(
                        "cannot run {}: {e}",
                        self.ssh.program.display()
                    )),
                    connected_for: None,
                }
            }
        };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Attempt::Ended {
                failure: LinkFailure::Unreachable("ssh started without its pipes".into()),
                connected_for: None,
            };
        };
        let stderr_task = tokio::spawn(stderr_tail(stderr));
        let mut stdout = BufReader::with_capacity(64 * 1024, stdout);
        let mut lines = BoundedLine::new(MAX_REMOTE_LINE).with_gate(BLOCKING_PARSE_FROM, &BIG_LINE);
        let mut connected_at: Option<Instant> = None;
        let mut problem = None;
        let mut bad_lines: u64 = 0;
        let mut budget = ReadBudget::new(Instant::now());
        loop {
            let linger = self.lingering.values().min().copied();
            let publish_due = self.publish_due();
            let limits_due = self.limits_gate.due_at();
            let read_at = budget.ready_at();
            let read = tokio::select! {
                () = token.cancelled() => {
                    let _ = child.start_kill();
                    let _ = tokio::time::timeout(EXIT_WAIT, child.wait()).await;
                    stderr_task.abort();
                    return Attempt::Cancelled;
                }
                () = sleep_until_some(linger) => {
                    if self.drop_lingered(Instant::now()) {
                        self.publish_if_due();
                    }
                    continue;
                }
                () = sleep_until_some(publish_due) => {
                    self.publish();
                    continue;
                }
                () = sleep_until_some(limits_due) => {
                    if let Some(windows) = self.limits_gate.take_due(Instant::now()) {
                        self.links.limits.replace_host(&self.entry.name, windows);
                    }
                    continue;
                }
                // Over its budget, the link waits before reading on (see READ_BURST).
                () = sleep_until_some(read_at) => {
                    budget.refill(Instant::now());
                    continue;
                }
                read = lines.read(&mut stdout), if read_at.is_none() => read,
            };
            let charged = match read {
                Ok(LineRead::TooLong) => MAX_REMOTE_LINE,
                _ => lines.bytes().len(),
            };
            budget.charge(charged, Instant::now());
            match read {
                Ok(LineRead::Line) => {}
                Ok(LineRead::TooLong) => {
                    tracing::warn!(remote = %self.entry.name, limit = MAX_REMOTE_LINE, "remote line too long; skipped");
                    continue;
                }
                Ok(LineRead::Eof) | Err(_) => break,
            }
            // A long line is parsed on a blocking thread: a remote's megabytes must never hold
            // an async worker that local hooks and the CLI need. Its big-line permit is held
            // until the parse is done.
            let big = lines.take_permit();
            let line = lines.take();
            let parsed = if line.len() > BLOCKING_PARSE_FROM {
                let name = self.entry.name.clone();
                match tokio::task::spawn_blocking(move || parse_line(&line, &name)).await {
                    Ok(parsed) => parsed,
                    Err(_) => break,
                }
            } else {
                parse_line(&line, &self.entry.name)
            };
            drop(big);
            let line = match parsed {
                Ok(line) => line,
                Err(e) if connected_at.is_some() => {
                    bad_lines += 1;
                    if bad_lines.is_power_of_two() {
                        tracing::warn!(remote = %self.entry.name, error = %e, bad_lines, "remote line skipped");
                    }
                    continue;
                }
                Err(_) => {
                    problem = Some(ProtocolProblem::NotWatchOutput);
                    break;
                }
            };
            match self.apply(line, connected_at.is_some()) {
                Ok(changed) => {
                    connected_at.get_or_insert_with(Instant::now);
                    if changed {
                        self.publish_if_due();
                    }
                }
                Err(p) => {
                    problem = Some(p);
                    break;
                }
            }
        }
        let _ = child.start_kill();
        let exit = match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
            Ok(Ok(status)) => status.code(),
            _ => None,
        };
        let stderr = tokio::time::timeout(EXIT_WAIT, stderr_task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Attempt::Ended {
            failure: classify_failure(&destination, exit, &stderr, problem),
            connected_for: connected_at.map(|at| at.elapsed()),
        }
    }
}

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Waits `wait`, or less: until cancelled (false), a reload asks every link to try now, or the
/// machine wakes from sleep or its routes change.
async fn wait_before_retry(
    wait: Duration,
    token: &CancellationToken,
    retry: &mut watch::Receiver<u64>,
) -> bool {
    let deadline = Instant::now() + wait;
    let mut mark = NetworkMark::read();
    let mut probe = tokio::time::interval_at(Instant::now() + WAKE_PROBE, WAKE_PROBE);
    let mut retry_open = true;
    loop {
        tokio::select! {
            () = token.cancelled() => return false,
            () = tokio::time::sleep_until(deadline) => return true,
            changed = retry.changed(), if retry_open => {
                if changed.is_ok() {
                    return true;
                }
                retry_open = false;
            }
            _ = probe.tick() => {
                let now = NetworkMark::read();
                if should_retry_early(&mark, &now) {
                    tracing::info!("machine woke or routes changed; retrying remotes now");
                    return true;
                }
                mark = now;
            }
        }
    }
}

async fn run_link(
    registry: Arc<SessionsRegistry>,
    links: Arc<RemoteLinks>,
    entry: RemoteEntry,
    ssh: SshCommand,
    token: CancellationToken,
    mut retry: watch::Receiver<u64>,
) {
    links.set(RemoteLinkStatus {
        name: entry.name.clone(),
        destination: entry.destination.clone(),
        state: LinkState::Connecting,
        since: Utc::now(),
        message: None,
        sessions: 0,
        remote_version: None,
    });
    let mut link = Link {
        registry: registry.clone(),
        links: links.clone(),
        entry: entry.clone(),
        ssh,
        picture: HashMap::new(),
        lingering: HashMap::new(),
        news: News::default(),
        published_at: None,
        limits_gate: RemoteLimitsGate::new(crate::plan_limits::REMOTE_LIMITS_EVERY),
    };
    let mut backoff = Backoff::default();
    let mut last_failure: Option<LinkFailure> = None;
    loop {
        let (failure, connected_for) = match link.attempt(&token).await {
            Attempt::Cancelled => break,
            Attempt::Ended {
                failure,
                connected_for,
            } => (failure, connected_for),
        };
        if token.is_cancelled() {
            break;
        }
        mark_unreachable(&mut link.picture, Utc::now());
        link.news.whole = true;
        link.publish();
        // One line per new reason, not one per try.
        if connected_for.is_some() || last_failure.as_ref() != Some(&failure) {
            tracing::warn!(remote = %entry.name, state = ?failure.state(), message = failure.message(), "remote_link_down");
        }
        let wait = match failure.state() {
            LinkState::Unusable => UNUSABLE_RETRY,
            _ => backoff.after_attempt(connected_for),
        };
        link.set_state(failure.state(), Some(failure.message().to_string()));
        last_failure = Some(failure);
        if !wait_before_retry(wait, &token, &mut retry).await {
            break;
        }
        link.set_state(
            LinkState::Connecting,
            last_failure.as_ref().map(|f| f.message().to_string()),
        );
    }
    registry.set_remote_sessions(&entry.name, Vec::new());
    links.remove(&entry.name);
}

struct RunningLink {
    entry: RemoteEntry,
    token: CancellationToken,
    task: JoinHandle<()>,
}

async fn stop_link(link: RunningLink) {
    link.token.cancel();
    let mut task = link.task;
    if tokio::time::timeout(LINK_STOP, &mut task).await.is_err() {
        task.abort();
    }
}

/// Keeps one link per entry of `remotes.json` (at `remotes_file`) until `token` is cancelled;
/// rereads the file when [`RemoteLinks::request_reload`] asks.
pub fn spawn(
    registry: Arc<SessionsRegistry>,
    links: Arc<RemoteLinks>,
    remotes_file: PathBuf,
    ssh: SshCommand,
    token: CancellationToken,
) -> JoinHandle<()> {
    // One slot: a reload asked while one is pending is the same reload.
    let (reload_tx, mut reload_rx) = mpsc::channel::<()>(1);
    links.set_reload(reload_tx);
    tokio::spawn(async move {
        let (retry_tx, _) = watch::channel(0_u64);
        let mut running: HashMap<String, RunningLink> = HashMap::new();
        loop {
            let path = remotes_file.clone();
            // A small file, read off the async workers.
            let read = tokio::task::spawn_blocking(move || std::fs::read(path))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e)));
            let wanted = match read {
                Ok(bytes) => config::RemotesFile::parse(&bytes, &remotes_file)
                    .map(|f| f.remotes)
                    .unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "remotes not read; keeping the links as they are");
                        running.values().map(|r| r.entry.clone()).collect()
                    }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => {
                    tracing::warn!(error = %e, "remotes not read; keeping the links as they are");
                    running.values().map(|r| r.entry.clone()).collect()
                }
            };
            let stale: Vec<String> = running
                .iter()
                .filter(|(name, link)| !wanted.iter().any(|w| &w.name == *name && *w == link.entry))
                .map(|(name, _)| name.clone())
                .collect();
            for name in stale {
                if let Some(link) = running.remove(&name) {
                    tracing::info!(remote = %name, "remote_link_stopped");
                    stop_link(link).await;
                }
            }
            for entry in wanted {
                if running.contains_key(&entry.name) {
                    continue;
                }
                let link_token = token.child_token();
                let task = tokio::spawn(run_link(
                    registry.clone(),
                    links.clone(),
                    entry.clone(),
                    ssh.clone(),
                    link_token.clone(),
                    retry_tx.subscribe(),
                ));
                tracing::info!(remote = %entry.name, destination = %entry.destination, "remote_link_started");
                running.insert(
                    entry.name.clone(),
                    RunningLink {
                        entry,
                        token: link_token,
                        task,
                    },
                );
            }
            tokio::select! {
                () = token.cancelled() => break,
                asked = reload_rx.recv() => {
                    if asked.is_none() {
                        break;
                    }
                    retry_tx.send_modify(|n| *n += 1);
                }
            }
        }
        for (_, link) in running.drain() {
            stop_link(link).await;
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    // A burst of honest news is read at once; past it, lines are read at the budget's rate;
    // one long line costs by its bytes; idle time refills, but never beyond the burst.
    #[test]
    fn the_read_budget_lets_a_burst_through_then_paces_lines_and_bytes() {
        let t0 = Instant::now();
        let mut budget = ReadBudget::new(t0);
        for _ in 0..READ_LINES_BURST as usize {
            assert!(budget.ready_at().is_none());
            budget.charge(200, t0);
        }
        assert!(budget.ready_at().is_none(), "the burst itself is free");
        budget.charge(200, t0);
        let wait = budget.ready_at().unwrap() - t0;
        assert_eq!(
            wait,
            Duration::from_millis(1),
            "one line over: one line's time"
        );
        budget.refill(t0 + Duration::from_secs(3600));
        assert!(budget.lines <= READ_LINES_BURST && budget.bytes <= READ_BYTES_BURST);
        // Bytes: two of the longest lines, then a third waits for a long line's worth of time.
        let t1 = t0 + Duration::from_secs(3600);
        budget.charge(MAX_REMOTE_LINE, t1);
        budget.charge(MAX_REMOTE_LINE, t1);
        assert!(budget.ready_at().is_none());
        budget.charge(MAX_REMOTE_LINE, t1);
        let wait = budget.ready_at().unwrap() - t1;
        assert_eq!(wait.as_secs(), 16, "16 MiB at 1 MiB/s: {wait:?}");
    }

    #[test]
    fn the_ssh_command_never_prompts_and_ends_options_before_the_destination() {
        let ssh = SshCommand {
            program: "ssh".into(),
            config_file: Some("/t/ssh_config".into()),
        };
        let args: Vec<String> = ssh
            .args("dev@box")
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |w: &str| args.iter().position(|a| a == w).unwrap();
        assert!(args.contains(&"BatchMode=yes".to_string()));
        assert_eq!(args[at("-F") + 1], "/t/ssh_config");
        assert_eq!(args[at("--") + 1], "dev@box");
        assert_eq!(args.last().map(String::as_str), Some(REMOTE_COMMAND));
        assert!(args.contains(&"-T".to_string()));
    }
}
