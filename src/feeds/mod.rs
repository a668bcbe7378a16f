//! Zero-config discovery: every session seen from the agents' own files, with or without hooks.
//!
//! Hooks are fast but absent until installed, held back in untrusted folders, skipped by Codex
//! until trusted, and silent on Esc and on a crash. The agents' own files fill those holes:
//!
//! - Claude Code's live-session files and transcripts (`crate::agents::claude::{sessions,
//!   transcripts}`), Codex's rollouts and app-server (`crate::agents::codex::{rollouts,
//!   app_server}`), Copilot's session state: each agent's feeds live in its adapter's folder and
//!   are started by the engine (`crate::engine::agent_feeds`) with that agent's folders.
//!
//! Each feed turns file changes into [`Observation`]s and keeps no session state of its own beyond
//! what it needs to notice a change (offsets, mtimes, lock states seen): the registry decides what
//! they mean. Every observation is stamped with the time the *file* says the thing happened (a
//! line's timestamp, `statusUpdatedAt`, the file's mtime), so a hook event stamped later wins
//! through the registry's ordering rule and a file never drags a session back.
//!
//! How they watch (file-system events into a bounded channel, a debounce, a slow rescan as the
//! safety net, folders that appear later) lives in [`watch`]. The engine calls [`spawn_all`].
//!
//! **Every agent file is opened with [`open_regular_file`]**, never `File::open`: the folders are
//! writable by any program the user runs, and a FIFO named like a transcript blocks a plain open
//! forever (the feed stops, and with it the daemon's shutdown). The open cannot block or follow a
//! symlink, and anything that is not a regular file is skipped.

pub mod procfs;
pub mod tail;
pub mod watch;

use std::collections::BTreeMap;
use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::model::{Agent, EndReason, Observation, Session};
use crate::registry::{PidOwner, SessionsRegistry};
use crate::usage::UsageStream;

pub use watch::FeedTiming;

/// Where each agent keeps its files, by agent: the feeds an adapter starts read its folders
/// only. Tests point these at temporary folders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedDirs(BTreeMap<Agent, Vec<PathBuf>>);

impl FeedDirs {
    /// These folders for `agent` (replacing any it had).
    pub fn with(mut self, agent: Agent, dirs: Vec<PathBuf>) -> Self {
        self.0.insert(agent, dirs);
        self
    }

    /// `agent`'s folders (none when not given).
    pub fn of(&self, agent: Agent) -> &[PathBuf] {
        self.0.get(&agent).map(Vec::as_slice).unwrap_or_default()
    }
}

/// Counters a feed keeps about its own cost, read by the benchmark and by `doctor`.
#[derive(Debug, Default)]
pub struct FeedStats {
    /// Bytes read from the agents' files.
    pub bytes_read: AtomicU64,
    /// Complete lines parsed.
    pub lines: AtomicU64,
    /// Lines skipped: not JSON, not UTF-8, too long.
    pub bad_lines: AtomicU64,
    /// Full rescans completed.
    pub rescans: AtomicU64,
    /// Batches of file-system events handled.
    pub event_batches: AtomicU64,
    /// Paths dropped because the event channel was full (found again by the next rescan).
    pub dropped_paths: AtomicU64,
    /// Files followed right now.
    pub followed: AtomicU64,
}

impl FeedStats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// What a feed asks of the registry.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedOutput {
    Observe(Box<Observation>),
    /// The process a file named is gone (or its pid now belongs to another process): end the
    /// session — but only if it is still owned by that pid, and by that process when the file
    /// recorded its start token (a resumed session may have moved on).
    EndOwnedBy {
        session_id: String,
        pid: u32,
        pid_start: Option<String>,
        reason: EndReason,
    },
    /// Token usage read from the session's files ([`crate::usage`]).
    Usage(Box<crate::usage::UsageReport>),
    /// The plan's rate-limit windows, as the session's files last reported them
    /// ([`crate::plan_limits`]).
    Limits(Vec<crate::plan_limits::PlanWindow>),
}

impl FeedOutput {
    pub fn observe(obs: Observation) -> Self {
        FeedOutput::Observe(Box::new(obs))
    }
}

/// What a feed may do to the sessions: the narrow port the adapters' feeds get instead of the
/// registry itself. A feed observes, ends a session whose files say its process is gone, asks
/// whether a session is known, and reads the sessions there are; a feed that carries the
/// agent's own requests (Codex's server asks every client its questions) opens them and closes
/// them. Nothing else of the registry (other answers, history, settings) is within its reach.
/// The registry implements it.
pub trait SessionPort: Send + Sync {
    /// Applies an observation; `Err` says why it was refused.
    fn observe(&self, obs: Observation) -> Result<(), String>;
    /// Ends `session_id` if `owner` still owns it (checked and applied at once).
    fn end_if_owned(&self, session_id: &str, owner: &PidOwner, reason: EndReason) -> bool;
    /// Whether a session with this id is known.
    fn knows(&self, session_id: &str) -> bool;
    /// The sessions there are now.
    fn sessions(&self) -> Vec<Session>;
    /// Opens a request the agent itself sent (with the observation of the wait it causes), as a
    /// hook's ask does ([`SessionsRegistry::ask`]); `Err` says why the observation was refused.
    fn ask(
        &self,
        obs: Observation,
        call: crate::answering::AskCall,
        wait: std::time::Duration,
        accepts: agent_tray_domain::pending::Accepts,
    ) -> Result<crate::registry::answers::AskOutcome, String>;
    /// The agent says the request was answered without us: it closes, its waiter is told.
    fn answered_elsewhere(&self, id: &crate::answering::RequestId);
    /// Whoever was to send the answer is gone (the connection to the agent ended).
    fn request_over(&self, id: &crate::answering::RequestId);
}

impl SessionPort for SessionsRegistry {
    fn observe(&self, obs: Observation) -> Result<(), String> {
        SessionsRegistry::observe(self, obs)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn end_if_owned(&self, session_id: &str, owner: &PidOwner, reason: EndReason) -> bool {
        SessionsRegistry::end_if_owned(self, session_id, owner, reason)
    }
    fn knows(&self, session_id: &str) -> bool {
        SessionsRegistry::knows(self, session_id)
    }
    fn sessions(&self) -> Vec<Session> {
        self.list()
    }
    fn ask(
        &self,
        obs: Observation,
        call: crate::answering::AskCall,
        wait: std::time::Duration,
        accepts: agent_tray_domain::pending::Accepts,
    ) -> Result<crate::registry::answers::AskOutcome, String> {
        SessionsRegistry::ask(self, obs, call, wait, accepts).map_err(|e| e.to_string())
    }
    fn answered_elsewhere(&self, id: &crate::answering::RequestId) {
        SessionsRegistry::request_answered_elsewhere(self, id);
    }
    fn request_over(&self, id: &crate::answering::RequestId) {
        SessionsRegistry::request_over(self, id);
    }
}

/// Where a feed's outputs go: observations and endings to the sessions (through
/// [`SessionPort`]), token usage to the engine's [`UsageStream`] (for a session that is known),
/// plan windows to the engine's book. Cheap to clone.
#[derive(Clone)]
pub struct FeedSink {
    sessions: Arc<dyn SessionPort>,
    pub usage: Arc<UsageStream>,
    /// The plans' windows ([`crate::plan_limits`]): the engine's.
    pub limits: Arc<crate::plan_limits::PlanLimitsBook>,
    /// Where a feed that holds a way in to its sessions registers it ([`crate::talk_back`]):
    /// the engine's.
    pub talk: Arc<crate::talk_back::TalkInboxes>,
}

impl std::fmt::Debug for FeedSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedSink").finish_non_exhaustive()
    }
}

impl FeedSink {
    pub fn new(sessions: Arc<dyn SessionPort>, usage: Arc<UsageStream>) -> Self {
        FeedSink {
            sessions,
            usage,
            limits: Arc::default(),
            talk: Arc::default(),
        }
    }

    /// The same sink, registering ways in with `talk`.
    pub fn with_talk(mut self, talk: Arc<crate::talk_back::TalkInboxes>) -> Self {
        self.talk = talk;
        self
    }

    /// The same sink, reporting plan limits into `limits`.
    pub fn with_limits(mut self, limits: Arc<crate::plan_limits::PlanLimitsBook>) -> Self {
        self.limits = limits;
        self
    }

    /// A sink whose usage reports go to no store (tests, and tools that keep no history).
    pub fn without_history(sessions: Arc<dyn SessionPort>) -> Self {
        FeedSink::new(sessions, Arc::default())
    }

    /// What the feeds may do to the sessions.
    pub fn sessions(&self) -> &dyn SessionPort {
        &*self.sessions
    }
}

pub(crate) fn apply_outputs(sink: &FeedSink, outputs: Vec<FeedOutput>) {
    let sessions = sink.sessions();
    for output in outputs {
        match output {
            FeedOutput::Observe(obs) => {
                if let Err(why) = sessions.observe(*obs) {
                    tracing::debug!(reason = %why, "feed_observation_rejected");
                }
            }
            FeedOutput::EndOwnedBy {
                session_id,
                pid,
                pid_start,
                reason,
            } => {
                // Checked and applied under one lock: a resume landing in between keeps it.
                let owner = PidOwner { pid, pid_start };
                if sessions.end_if_owned(&session_id, &owner, reason) {
                    tracing::info!(%session_id, pid, reason = ?reason, "session_files_say_process_gone");
                }
            }
            FeedOutput::Usage(report) => {
                if sessions.knows(&report.session_id) {
                    sink.usage.send(*report);
                }
            }
            FeedOutput::Limits(windows) => {
                // A finished session's old rollout, read at first sight, is no news of the plan.
                let session = windows.first().map(|w| w.session_id.as_str());
                if session.is_some_and(|id| sessions.knows(id)) {
                    sink.limits.apply(windows);
                }
            }
        }
    }
}

/// Everything the feeds need besides the folders.
#[derive(Debug, Clone)]
pub struct FeedConfig {
    pub dirs: FeedDirs,
    pub timing: FeedTiming,
    /// Files not modified for this long are not followed (the registry's session TTL).
    pub ttl: Duration,
    /// Where each feed counts its cost.
    pub stats: FeedStatsSet,
    /// Whether an adapter may also run the agent's own program once to ask it about its live
    /// sessions (the engine does; tests that only follow files do not).
    pub ask_programs: bool,
}

impl FeedConfig {
    pub fn new(dirs: FeedDirs, ttl: Duration) -> Self {
        FeedConfig {
            dirs,
            timing: FeedTiming::default(),
            ttl,
            stats: FeedStatsSet::default(),
            ask_programs: false,
        }
    }
}

/// One [`FeedStats`] per feed, by the feed's task name; shared by clones (the bench and `doctor`
/// read what the running feeds count).
#[derive(Debug, Clone, Default)]
pub struct FeedStatsSet(Arc<Mutex<BTreeMap<&'static str, Arc<FeedStats>>>>);

impl FeedStatsSet {
    /// The counters of the feed named `feed` (made on first use).
    pub fn of(&self, feed: &'static str) -> Arc<FeedStats> {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(feed).or_default().clone()
    }
}

/// What an adapter's feeds are started with (by the engine: `crate::engine::agent_feeds`).
pub struct FeedContext<'a> {
    pub sink: &'a FeedSink,
    /// This agent's folders.
    pub dirs: &'a [PathBuf],
    pub config: &'a FeedConfig,
    pub token: &'a CancellationToken,
}

/// A running feed and the name the engine knows its task by.
pub type NamedTask = (&'static str, JoinHandle<()>);

/// Opens one of the agents' files for reading without ever blocking: `O_NONBLOCK` so a FIFO (or a
/// device) cannot hang the open, `O_NOFOLLOW` so a symlink planted in the agent's folder is not
/// followed, then `fstat` on the open descriptor (no race with a rename) so anything but a
/// regular file is refused. A regular file ignores `O_NONBLOCK`; reads behave as usual.
pub fn open_regular_file(path: &Path) -> io::Result<(File, Metadata)> {
    // A cheap look first, so a device or a FIFO is not even opened.
    if !std::fs::symlink_metadata(path)?.file_type().is_file() {
        return Err(not_regular(path));
    }
    let file = crate::os_fs::open_for_reading(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular(path));
    }
    Ok((file, meta))
}

fn not_regular(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} is not a regular file", path.display()),
    )
}

/// A file's modification time as a timestamp, for observations with nothing better.
pub(crate) fn mtime_of(meta: &std::fs::Metadata) -> DateTime<Utc> {
    meta.modified()
        .map(DateTime::<Utc>::from)
        .unwrap_or_else(|_| Utc::now())
}

/// How long ago `meta`'s file was modified, as of `now` (zero for a time in the future).
pub(crate) fn age_of(meta: &std::fs::Metadata, now: SystemTime) -> Duration {
    meta.modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .unwrap_or_default()
}

/// Parses an RFC 3339 timestamp as the agents write them.
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, EventKind};

    fn prompt(registry: &SessionsRegistry, pid: u32, secs: i64) {
        let at = Utc::now() + chrono::Duration::seconds(secs);
        let obs = Observation::new("s1", Agent::Claude, EventKind::UserPromptSubmit, at)
            .with_pid(Some(pid));
        registry.observe(obs).unwrap();
    }

    fn end_owned_by(pid: u32, pid_start: Option<&str>) -> FeedOutput {
        FeedOutput::EndOwnedBy {
            session_id: "s1".into(),
            pid,
            pid_start: pid_start.map(String::from),
            reason: EndReason::ProcessGone,
        }
    }

    #[test]
    fn a_death_the_files_report_ends_only_the_process_it_was_about() {
        let registry = Arc::new(SessionsRegistry::new());
        let sink = FeedSink::without_history(registry.clone());
        let registry = &*registry;
        prompt(registry, 100, 0);
        assert!(registry.confirm_pid_liveness("s1", "t100"));
        // The file's process had another start token: another process under the same pid.
        apply_outputs(&sink, vec![end_owned_by(100, Some("older"))]);
        // The session was resumed in process 200 after the feed decided.
        prompt(registry, 200, 1);
        apply_outputs(&sink, vec![end_owned_by(100, Some("t100"))]);
        let s = registry.get("s1").unwrap();
        assert_eq!((s.pid, s.end_reason), (Some(200), None));
        // Positive control: about the process that owns it, it applies.
        apply_outputs(&sink, vec![end_owned_by(200, None)]);
        assert_eq!(
            registry.get("s1").unwrap().end_reason,
            Some(EndReason::ProcessGone)
        );
    }

    #[test]
    fn usage_goes_to_the_stream_only_for_a_session_the_registry_knows_and_only_if_it_says_something(
    ) {
        use crate::usage::{TokenUsage, UsageKind, UsageReport};
        let registry = Arc::new(SessionsRegistry::new());
        let sink = FeedSink::without_history(registry.clone());
        let mut heard = sink.usage.subscribe();
        let report = |session: &str, output: u64| {
            FeedOutput::Usage(Box::new(UsageReport {
                session_id: session.into(),
                agent: Agent::Claude,
                at: Utc::now(),
                turn_id: None,
                model: None,
                kind: UsageKind::Delta { key: "m1".into() },
                usage: TokenUsage {
                    output,
                    ..Default::default()
                },
            }))
        };
        apply_outputs(&sink, vec![report("s1", 7)]);
        assert!(heard.try_recv().is_err(), "an unknown session's usage");
        prompt(&registry, 100, 0);
        apply_outputs(&sink, vec![report("s1", 0)]);
        assert!(heard.try_recv().is_err(), "a delta of nothing");
        apply_outputs(&sink, vec![report("s1", 7)]);
        let got = heard.try_recv().unwrap();
        assert_eq!((got.session_id.as_str(), got.usage.output), ("s1", 7));
    }
}
