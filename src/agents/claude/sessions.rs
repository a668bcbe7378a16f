//! Claude Code's live-session files: `<claude>/sessions/<pid>.json`.
//!
//! Each running interactive `claude` keeps one small file named after its pid, rewrites it when its
//! status changes (`busy`, `idle`, `waiting` with `waitingFor`), and deletes it on a clean exit.
//! That makes it the best hook-free signal there is: the state, the pid, the tmux pane and the
//! session's name, from the agent itself.
//!
//! **Why the file alone is never believed.** A `claude` killed with `kill -9` leaves its file behind
//! (seen), and pids are recycled. So a file counts only while the process it names is alive *and*
//! has the start token the file recorded (`procStart` equals field 22 of `/proc/<pid>/stat`). A
//! stale file produces nothing; a file we had reported whose process is now gone (or whose pid now
//! belongs to another process) ends its session as a death, not as a clean exit — that difference
//! is the one the "a session died" alert is made of. A removed file is the clean exit.
//!
//! The feed checks the processes it vouched for on every tick, so a `kill -9` is seen within one
//! tick even before the pid watcher's own.
//!
//! Qwen Code keeps the same kind of file (`~/.qwen/sessions/<pid>.json`, with no status and a
//! `procStart` of `<boot id>:<start token>`), so the feed is shared: a [`LiveFileKind`] says whose
//! files it reads.
//!
//! It also publishes which session ids have a live file ([`LiveClaudeSessions`]): the transcript
//! feed uses that to tell a live session's transcript from one whose `claude` exited a minute ago.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::feeds::watch::{Feed, WatchDepth, WatchRoot};
use crate::feeds::{mtime_of, FeedOutput, FeedStats};
use crate::model::{Agent, EndReason, EventKind, Observation, ReportedStatus, Source};
use crate::process::{ProcessTable, SystemProcesses};

/// A live-session file is a few hundred bytes; anything bigger is not one.
const MAX_FILE: u64 = 64 * 1024;

/// What a live-session file says, fields as Claude Code 2.1 writes them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionsFile {
    pub pid: Option<u32>,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    /// The process's start token when the file was written.
    pub proc_start: Option<String>,
    pub name: Option<String>,
    pub status: Option<String>,
    pub waiting_for: Option<String>,
    pub tmux: Option<String>,
    /// Milliseconds since the epoch.
    pub updated_at: Option<i64>,
    pub status_updated_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionsFileError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("no sessionId")]
    NoSessionId,
}

/// Parses a live-session file, tolerating unknown fields and fields of an unexpected type (they
/// count as absent): the format is internal to Claude Code and changes between versions.
pub fn parse_sessions_file(bytes: &[u8]) -> Result<SessionsFile, SessionsFileError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| SessionsFileError::NotJson(e.to_string()))?;
    let obj = value.as_object().ok_or(SessionsFileError::NotAnObject)?;
    let text = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(String::from)
    };
    let file = SessionsFile {
        pid: obj
            .get("pid")
            .and_then(Value::as_u64)
            .and_then(|p| u32::try_from(p).ok()),
        session_id: text("sessionId"),
        cwd: text("cwd"),
        // Seen as a string; a number is accepted too.
        proc_start: obj.get("procStart").and_then(|v| match v {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }),
        name: text("name"),
        status: text("status"),
        waiting_for: text("waitingFor"),
        tmux: text("tmux"),
        updated_at: obj.get("updatedAt").and_then(Value::as_i64),
        status_updated_at: obj.get("statusUpdatedAt").and_then(Value::as_i64),
    };
    if file.session_id.is_none() {
        return Err(SessionsFileError::NoSessionId);
    }
    Ok(file)
}

/// Whether the process a file names is the one that wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Alive, with the recorded start token (or none to compare).
    Live,
    /// No process with that pid: left behind by a crash.
    NotRunning,
    /// A process with that pid, but another one: the pid was recycled.
    PidReused,
    /// Claude Code's own helper (a `--bg-spare` pool process, `claude daemon`): not a session.
    Helper,
}

/// Whose live-session files a feed reads, and what differs between them.
#[derive(Debug, Clone, Copy)]
pub struct LiveFileKind {
    pub agent: Agent,
    /// The feed's name in the engine's stats and logs.
    pub feed_name: &'static str,
    /// Whether a process the file names is the agent's own helper, not a session.
    pub is_helper: fn(&[String]) -> bool,
    /// Whether the file's `name` is the session's title (Claude's is; Qwen's is a generated
    /// `<folder>-<n>` handle).
    pub name_is_title: bool,
    /// The process start token in the file's `procStart` (Claude's is the token itself; Qwen's
    /// is `<boot id>:<token>`). A kind's own rule: a start token of another platform may hold a
    /// `:` of its own.
    pub start_token: fn(&str) -> &str,
}

/// Claude Code's files.
pub const CLAUDE_FILES: LiveFileKind = LiveFileKind {
    agent: Agent::Claude,
    feed_name: "claude_sessions",
    is_helper: super::is_agent_helper,
    name_is_title: true,
    start_token: whole_token,
};

/// Claude's `procStart`: the start token as it is.
fn whole_token(recorded: &str) -> &str {
    recorded
}

/// Decides whether to believe a file of Claude's. Pure but for the injected process table.
pub fn judge(pid: u32, proc_start: Option<&str>, table: &impl ProcessTable) -> Verdict {
    judge_with(pid, proc_start, table, &CLAUDE_FILES)
}

/// The process start token in Qwen's `procStart` of `<boot id>:<token>`: the part after the last
/// `:`.
pub fn start_token_of(recorded: &str) -> &str {
    recorded.rsplit(':').next().unwrap_or(recorded)
}

/// Decides whether to believe a file of `kind`'s, its recorded start read by the kind's rule.
pub fn judge_with(
    pid: u32,
    proc_start: Option<&str>,
    table: &impl ProcessTable,
    kind: &LiveFileKind,
) -> Verdict {
    let is_helper = kind.is_helper;
    if !table.exists(pid) {
        return Verdict::NotRunning;
    }
    let recorded = proc_start.map(kind.start_token);
    match (recorded, table.start_token(pid)) {
        (Some(recorded), Some(current)) if recorded != current => Verdict::PidReused,
        _ if table.cmdline(pid).is_some_and(|argv| is_helper(&argv)) => Verdict::Helper,
        // Nothing to compare (an older Claude, or a platform where the token is unreadable):
        // the live pid is the best evidence there is.
        _ => Verdict::Live,
    }
}

/// The observation a believed file of Claude's makes.
pub fn observation_of(file: &SessionsFile, pid: u32, mtime: DateTime<Utc>) -> Option<Observation> {
    observation_for(&CLAUDE_FILES, file, pid, mtime)
}

/// The observation a believed file makes.
pub fn observation_for(
    kind: &LiveFileKind,
    file: &SessionsFile,
    pid: u32,
    mtime: DateTime<Utc>,
) -> Option<Observation> {
    let session_id = file.session_id.clone()?;
    let status = match file.status.as_deref() {
        Some("busy") => Some(ReportedStatus::Busy),
        Some("idle") => Some(ReportedStatus::Idle),
        Some("waiting") => Some(ReportedStatus::Waiting),
        _ => None,
    };
    let event = if status.is_some() {
        EventKind::StatusReport
    } else {
        // An SDK-driven session may write no status: it exists, nothing more is known.
        EventKind::Sighting
    };
    let at = file
        .status_updated_at
        .or(file.updated_at)
        .and_then(DateTime::from_timestamp_millis)
        .unwrap_or(mtime);
    let mut obs = Observation::new(session_id, kind.agent, event, at)
        .with_source(Source::SessionsFile)
        .with_pid(Some(pid))
        .with_cwd(file.cwd.clone());
    obs.status = status;
    obs.waiting_for = if status == Some(ReportedStatus::Waiting) {
        file.waiting_for.clone()
    } else {
        None
    };
    obs.title = file.name.clone().filter(|_| kind.name_is_title);
    obs.tmux = file.tmux.clone();
    Some(obs)
}

/// Session ids that have a believed live-session file, shared with the transcript feed.
#[derive(Debug, Clone, Default)]
pub struct LiveClaudeSessions {
    inner: Arc<Mutex<LiveIndex>>,
}

#[derive(Debug, Default)]
struct LiveIndex {
    ids: HashSet<String>,
    /// Config folders whose `sessions/` folder exists: their Claude writes live-session files.
    dirs_with_sessions: HashSet<PathBuf>,
}

impl LiveClaudeSessions {
    fn with<T>(&self, f: impl FnOnce(&mut LiveIndex) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn contains(&self, session_id: &str) -> bool {
        self.with(|i| i.ids.contains(session_id))
    }

    /// True when this Claude config folder has a `sessions/` folder, so a session without a file
    /// there is not a running interactive one.
    pub fn writes_sessions_files(&self, claude_dir: &Path) -> bool {
        self.with(|i| i.dirs_with_sessions.contains(claude_dir))
    }

    fn set(&self, ids: HashSet<String>, dirs: HashSet<PathBuf>) {
        self.with(|i| {
            i.ids = ids;
            i.dirs_with_sessions = dirs;
        });
    }
}

/// What we reported for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reported {
    session_id: String,
    pid: u32,
    proc_start: Option<String>,
}

#[derive(Debug, Clone)]
struct Tracked {
    /// A hash of the bytes last read. Not mtime and length: Claude rewrites the file from `busy`
    /// to `idle` at the same length, possibly within one mtime tick, and that change must not be
    /// missed. The file is a few hundred bytes, so reading it on each event costs nothing.
    content: u64,
    reported: Option<Reported>,
}

fn content_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// The feed. Generic over the process table so tests can script processes.
pub struct ClaudeSessionsFeed<T: ProcessTable = SystemProcesses> {
    kind: LiveFileKind,
    claude_dirs: Vec<PathBuf>,
    table: T,
    files: HashMap<PathBuf, Tracked>,
    live: LiveClaudeSessions,
    stats: Arc<FeedStats>,
}

impl ClaudeSessionsFeed<SystemProcesses> {
    pub fn new(claude_dirs: Vec<PathBuf>, live: LiveClaudeSessions, stats: Arc<FeedStats>) -> Self {
        Self::with_table(claude_dirs, live, stats, SystemProcesses)
    }

    /// A feed of another agent's files of the same kind (`<dir>/sessions/<pid>.json`).
    pub fn of_kind(kind: LiveFileKind, dirs: Vec<PathBuf>, stats: Arc<FeedStats>) -> Self {
        let mut feed = Self::new(dirs, LiveClaudeSessions::default(), stats);
        feed.kind = kind;
        feed
    }
}

impl<T: ProcessTable> ClaudeSessionsFeed<T> {
    pub fn with_table(
        claude_dirs: Vec<PathBuf>,
        live: LiveClaudeSessions,
        stats: Arc<FeedStats>,
        table: T,
    ) -> Self {
        ClaudeSessionsFeed {
            kind: CLAUDE_FILES,
            claude_dirs,
            table,
            files: HashMap::new(),
            live,
            stats,
        }
    }

    fn sessions_dirs(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.claude_dirs.iter().map(|d| d.join("sessions"))
    }

    /// `<digits>.json` directly in one of our `sessions/` folders.
    fn is_sessions_file(&self, path: &Path) -> bool {
        let named_by_pid = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
            .is_some_and(|stem| !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()));
        named_by_pid
            && self
                .sessions_dirs()
                .any(|d| path.parent() == Some(d.as_path()))
    }

    fn examine(&mut self, path: &Path, out: &mut Vec<FeedOutput>) {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(_) => {
                self.removed(path, out);
                return;
            }
        };
        let bytes = read_small(path, &self.stats);
        let content = bytes.as_deref().map(content_hash).unwrap_or(0);
        if let Some(t) = self.files.get(path) {
            if bytes.is_some() && t.content == content {
                return;
            }
        }
        let previous = self.files.get(path).and_then(|t| t.reported.clone());
        let mut tracked = Tracked {
            content,
            reported: None,
        };
        let parsed = bytes.map(|bytes| parse_sessions_file(&bytes));
        let file = match parsed {
            Some(Ok(file)) => file,
            Some(Err(error)) => {
                // Maybe caught mid-write: the next write changes the mtime and it is read again.
                FeedStats::add(&self.stats.bad_lines, 1);
                tracing::debug!(path = %path.display(), %error, "sessions_file_unreadable");
                tracked.reported = previous;
                self.files.insert(path.to_path_buf(), tracked);
                return;
            }
            None => {
                tracked.reported = previous;
                self.files.insert(path.to_path_buf(), tracked);
                return;
            }
        };
        let pid = file.pid.or_else(|| pid_from_name(path));
        let verdict = pid.map(|pid| {
            let proc_start = file.proc_start.as_deref();
            (pid, judge_with(pid, proc_start, &self.table, &self.kind))
        });
        match verdict {
            Some((pid, Verdict::Live)) => {
                let session_id = file.session_id.clone().unwrap_or_default();
                if let Some(old) = previous.as_ref() {
                    if old.session_id != session_id {
                        // `/clear` or `/resume` inside the same process: the old session is over.
                        out.push(gone(self.kind.agent, old, mtime_of(&meta)));
                    }
                }
                if let Some(obs) = observation_for(&self.kind, &file, pid, mtime_of(&meta)) {
                    out.push(FeedOutput::observe(obs));
                }
                tracked.reported = Some(Reported {
                    session_id,
                    pid,
                    proc_start: file
                        .proc_start
                        .as_deref()
                        .map(|r| (self.kind.start_token)(r).to_string()),
                });
            }
            Some((_, verdict)) => {
                if let Some(old) = previous {
                    out.push(died(&old, verdict));
                }
                tracing::debug!(path = %path.display(), ?verdict, "sessions_file_stale");
            }
            None => {}
        }
        self.files.insert(path.to_path_buf(), tracked);
    }

    fn removed(&mut self, path: &Path, out: &mut Vec<FeedOutput>) {
        if let Some(Tracked {
            reported: Some(old),
            ..
        }) = self.files.remove(path)
        {
            // Deleted by `claude` itself on a clean exit. No file time is left to stamp it with;
            // an end is final whatever its stamp, so now is as good as any.
            out.push(gone(self.kind.agent, &old, chrono::Utc::now()));
        }
    }

    fn publish_live(&self) {
        let ids = self
            .files
            .values()
            .filter_map(|t| t.reported.as_ref().map(|r| r.session_id.clone()))
            .collect();
        let dirs = self
            .claude_dirs
            .iter()
            .filter(|d| d.join("sessions").is_dir())
            .cloned()
            .collect();
        self.live.set(ids, dirs);
    }
}

fn gone(agent: Agent, old: &Reported, at: DateTime<Utc>) -> FeedOutput {
    FeedOutput::observe(
        Observation::new(old.session_id.clone(), agent, EventKind::Gone, at)
            .with_source(Source::SessionsFile)
            .with_pid(Some(old.pid)),
    )
}

fn died(old: &Reported, verdict: Verdict) -> FeedOutput {
    FeedOutput::EndOwnedBy {
        session_id: old.session_id.clone(),
        pid: old.pid,
        pid_start: old.proc_start.clone(),
        reason: match verdict {
            Verdict::PidReused => EndReason::PidRecycled,
            _ => EndReason::ProcessGone,
        },
    }
}

fn pid_from_name(path: &Path) -> Option<u32> {
    path.file_stem()?.to_str()?.parse().ok()
}

fn read_small(path: &Path, stats: &FeedStats) -> Option<Vec<u8>> {
    let (file, _) = crate::feeds::open_regular_file(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE).read_to_end(&mut bytes).ok()?;
    FeedStats::add(&stats.bytes_read, bytes.len() as u64);
    Some(bytes)
}

impl<T: ProcessTable + Send + 'static> Feed for ClaudeSessionsFeed<T> {
    fn name(&self) -> &'static str {
        self.kind.feed_name
    }

    fn stats(&self) -> Arc<FeedStats> {
        self.stats.clone()
    }

    fn watch_roots(&self) -> Vec<WatchRoot> {
        self.sessions_dirs()
            .map(|d| WatchRoot::new(d, WatchDepth::Flat))
            .collect()
    }

    fn on_paths(&mut self, paths: &HashSet<PathBuf>, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        for path in paths {
            if self.is_sessions_file(path) {
                self.examine(path, &mut out);
            } else if self.sessions_dirs().any(|d| d == *path) {
                // The folder itself appeared or went: look at all of it.
                out.extend(self.rescan(now));
            }
        }
        self.publish_live();
        out
    }

    fn rescan(&mut self, _now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        let mut present = HashSet::new();
        let dirs: Vec<PathBuf> = self.sessions_dirs().collect();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if self.is_sessions_file(&path) {
                    self.examine(&path, &mut out);
                    present.insert(path);
                }
            }
        }
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| !present.contains(*p))
            .cloned()
            .collect();
        for path in gone {
            self.removed(&path, &mut out);
        }
        self.stats.followed.store(
            self.files.len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        self.publish_live();
        out
    }

    fn wants_tick(&self) -> bool {
        self.files.values().any(|t| t.reported.is_some())
    }

    /// Re-checks every process this feed vouched for: a `kill -9` leaves the file behind.
    fn tick(&mut self, _now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        for tracked in self.files.values_mut() {
            let Some(reported) = tracked.reported.as_ref() else {
                continue;
            };
            let proc_start = reported.proc_start.as_deref();
            let verdict = judge_with(reported.pid, proc_start, &self.table, &self.kind);
            if verdict != Verdict::Live {
                out.push(died(reported, verdict));
                tracked.reported = None;
            }
        }
        if !out.is_empty() {
            self.publish_live();
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn fixture(name: &str) -> Vec<u8> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/real-2.1.328");
        std::fs::read(dir.join(name)).unwrap()
    }

    /// pid → start token of the processes alive in a scripted world.
    #[derive(Default)]
    struct Procs(
        RefCell<HashMap<u32, String>>,
        RefCell<HashMap<u32, Vec<String>>>,
    );

    impl ProcessTable for Procs {
        fn info(&self, _: u32) -> Option<crate::process::ProcInfo> {
            None
        }
        fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
            self.1.borrow().get(&pid).cloned()
        }
        fn exists(&self, pid: u32) -> bool {
            self.0.borrow().contains_key(&pid)
        }
        fn start_token(&self, pid: u32) -> Option<String> {
            self.0.borrow().get(&pid).cloned()
        }
        fn children(&self, _: u32) -> Vec<u32> {
            Vec::new()
        }
    }

    #[test]
    fn the_recorded_files_parse_into_pid_status_wait_and_pane() {
        let idle = parse_sessions_file(&fixture("sessions-idle.json")).unwrap();
        assert_eq!(idle.pid, Some(2861));
        assert_eq!(
            idle.session_id.as_deref(),
            Some("33413ec6-95b9-4336-8b7d-2d91c4d8b30c")
        );
        assert_eq!(idle.proc_start.as_deref(), Some("124349"));
        assert_eq!(idle.status.as_deref(), Some("idle"));
        assert_eq!(idle.tmux.as_deref(), Some("work:@0.%0"));
        assert_eq!(idle.name.as_deref(), Some("proj-ae"));
        let waiting = parse_sessions_file(&fixture("sessions-waiting.json")).unwrap();
        assert_eq!(waiting.waiting_for.as_deref(), Some("permission prompt"));
        assert_eq!(waiting.status_updated_at, Some(1795978883118));
    }

    #[test]
    fn a_believed_file_reports_its_status_stamped_with_status_updated_at() {
        // The permission dialog is open: the file says so, at the time it says.
        let file = parse_sessions_file(&fixture("sessions-waiting.json")).unwrap();
        let obs = observation_of(&file, 2861, Utc::now()).unwrap();
        assert_eq!(obs.event, EventKind::StatusReport);
        assert_eq!(obs.status, Some(ReportedStatus::Waiting));
        assert_eq!(obs.waiting_for.as_deref(), Some("permission prompt"));
        assert_eq!(obs.source, Source::SessionsFile);
        assert_eq!(obs.pid, Some(2861));
        assert_eq!(obs.cwd.as_deref(), Some("/home/dev/proj"));
        assert_eq!(obs.title.as_deref(), Some("proj-ae"));
        assert_eq!(obs.at.timestamp_millis(), 1795978883118);
    }

    #[test]
    fn a_file_without_status_is_a_sighting_and_a_file_without_a_session_is_an_error() {
        // An SDK-driven session may write no status.
        let file = parse_sessions_file(br#"{"pid": 7, "sessionId": "s"}"#).unwrap();
        assert_eq!(
            observation_of(&file, 7, Utc::now()).unwrap().event,
            EventKind::Sighting
        );
        assert_eq!(
            parse_sessions_file(br#"{"pid": 7}"#),
            Err(SessionsFileError::NoSessionId)
        );
        assert!(matches!(
            parse_sessions_file(b"{\"pid\": 7, \"sess"),
            Err(SessionsFileError::NotJson(_))
        ));
        assert!(matches!(
            parse_sessions_file(b"\xff\xfe"),
            Err(SessionsFileError::NotJson(_))
        ));
        // A field of an unexpected type counts as absent, not as a broken file.
        let odd = parse_sessions_file(br#"{"pid": "x", "sessionId": "s", "status": 3}"#).unwrap();
        assert_eq!((odd.pid, odd.status), (None, None));
    }

    #[test]
    fn a_file_is_believed_only_while_its_process_lives_with_the_recorded_start() {
        let procs = Procs::default();
        procs.0.borrow_mut().insert(2861, "124349".into());
        assert_eq!(judge(2861, Some("124349"), &procs), Verdict::Live);
        // The pid now belongs to another process.
        assert_eq!(judge(2861, Some("999"), &procs), Verdict::PidReused);
        // Left behind by a crash.
        assert_eq!(judge(4000, Some("124349"), &procs), Verdict::NotRunning);
        // Nothing recorded to compare: the live pid is the evidence.
        assert_eq!(judge(2861, None, &procs), Verdict::Live);
    }

    #[test]
    fn a_file_naming_a_background_pool_helper_is_not_a_session() {
        // `claude --bg-spare` waits in a pool; a live-session file naming it must not show a
        // session that lives as long as the pool.
        let procs = Procs::default();
        procs.0.borrow_mut().insert(3100, "7".into());
        procs
            .1
            .borrow_mut()
            .insert(3100, vec!["claude".into(), "--bg-spare".into()]);
        assert_eq!(judge(3100, Some("7"), &procs), Verdict::Helper);
        // Positive control: the same process without the flag is believed.
        procs.1.borrow_mut().insert(3100, vec!["claude".into()]);
        assert_eq!(judge(3100, Some("7"), &procs), Verdict::Live);
    }

    fn feed_in(dir: &Path, procs: Procs) -> ClaudeSessionsFeed<Procs> {
        ClaudeSessionsFeed::with_table(
            vec![dir.to_path_buf()],
            LiveClaudeSessions::default(),
            Arc::new(FeedStats::default()),
            procs,
        )
    }

    #[test]
    fn a_stale_file_says_nothing_and_a_live_one_reports_and_is_published_as_live() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sessions")).unwrap();
        std::fs::write(
            dir.path().join("sessions/2861.json"),
            fixture("sessions-idle.json"),
        )
        .unwrap();
        let mut feed = feed_in(dir.path(), Procs::default());
        assert!(
            feed.rescan(SystemTime::now()).is_empty(),
            "no process 2861: a crash left it"
        );
        assert!(!feed.live.contains("33413ec6-95b9-4336-8b7d-2d91c4d8b30c"));
        assert!(feed.live.writes_sessions_files(dir.path()));

        let procs = Procs::default();
        procs.0.borrow_mut().insert(2861, "124349".into());
        let mut feed = feed_in(dir.path(), procs);
        let out = feed.rescan(SystemTime::now());
        assert_eq!(out.len(), 1);
        assert!(feed.live.contains("33413ec6-95b9-4336-8b7d-2d91c4d8b30c"));
        assert!(
            feed.rescan(SystemTime::now()).is_empty(),
            "an unchanged file is not reported again"
        );
    }

    #[test]
    fn a_same_length_rewrite_within_one_mtime_tick_is_still_read() {
        // Claude rewrites `"status": "busy"` to `"status": "idle"`: the same length, and on a
        // coarse clock the same mtime. The change must not be taken for "unchanged".
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sessions")).unwrap();
        let path = dir.path().join("sessions/2861.json");
        let idle = String::from_utf8(fixture("sessions-idle.json")).unwrap();
        let busy = idle.replace("\"idle\"", "\"busy\"");
        std::fs::write(&path, &busy).unwrap();
        let stamp = std::fs::metadata(&path).unwrap().modified().unwrap();
        let procs = Procs::default();
        procs.0.borrow_mut().insert(2861, "124349".into());
        let mut feed = feed_in(dir.path(), procs);
        assert_eq!(feed.rescan(SystemTime::now()).len(), 1);

        assert_eq!(idle.len(), busy.len());
        std::fs::write(&path, &idle).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(stamp)
            .unwrap();
        let out = feed.rescan(SystemTime::now());
        assert_eq!(out.len(), 1, "the idle rewrite is reported");
    }

    #[test]
    fn a_removed_file_is_a_clean_end_and_a_dead_process_is_a_death() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let path = sessions.join("2861.json");
        std::fs::write(&path, fixture("sessions-idle.json")).unwrap();
        let procs = Procs::default();
        procs.0.borrow_mut().insert(2861, "124349".into());
        let mut feed = feed_in(dir.path(), procs);
        feed.rescan(SystemTime::now());

        // kill -9: the file stays, the process is gone.
        feed.table.0.borrow_mut().clear();
        let out = feed.tick(SystemTime::now());
        assert_eq!(
            out,
            vec![FeedOutput::EndOwnedBy {
                session_id: "33413ec6-95b9-4336-8b7d-2d91c4d8b30c".into(),
                pid: 2861,
                pid_start: Some("124349".into()),
                reason: EndReason::ProcessGone
            }]
        );
        assert!(feed.tick(SystemTime::now()).is_empty(), "reported once");

        // A new process with the pid: the file is believed again; then a clean exit removes it.
        feed.table.0.borrow_mut().insert(2861, "124349".into());
        std::fs::write(&path, fixture("sessions-after-turn.json")).unwrap();
        assert_eq!(feed.rescan(SystemTime::now()).len(), 1);
        std::fs::remove_file(&path).unwrap();
        let out = feed.on_paths(&HashSet::from([path]), SystemTime::now());
        match &out[..] {
            [FeedOutput::Observe(o)] => {
                assert_eq!(o.event, EventKind::Gone);
                assert_eq!(o.pid, Some(2861));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_new_session_in_the_same_process_ends_the_previous_one() {
        // `/clear` starts a new session id in the same claude; its file is rewritten.
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let path = sessions.join("2861.json");
        std::fs::write(&path, fixture("sessions-idle.json")).unwrap();
        let procs = Procs::default();
        procs.0.borrow_mut().insert(2861, "124349".into());
        let mut feed = feed_in(dir.path(), procs);
        feed.rescan(SystemTime::now());
        let text = String::from_utf8(fixture("sessions-after-turn.json"))
            .unwrap()
            .replace("33413ec6-95b9-4336-8b7d-2d91c4d8b30c", "new-session");
        std::fs::write(&path, text).unwrap();
        let out = feed.on_paths(&HashSet::from([path]), SystemTime::now());
        let events: Vec<(String, EventKind)> = out
            .iter()
            .filter_map(|o| match o {
                FeedOutput::Observe(o) => Some((o.session_id.clone(), o.event)),
                _ => None,
            })
            .collect();
        assert_eq!(
            events,
            vec![
                (
                    "33413ec6-95b9-4336-8b7d-2d91c4d8b30c".to_string(),
                    EventKind::Gone
                ),
                ("new-session".to_string(), EventKind::StatusReport)
            ]
        );
    }

    #[test]
    fn key_files_and_other_names_beside_the_sessions_files_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let feed = feed_in(dir.path(), Procs::default());
        let s = dir.path().join("sessions");
        assert!(feed.is_sessions_file(&s.join("2861.json")));
        assert!(!feed.is_sessions_file(&s.join("2861.abc.key")));
        assert!(!feed.is_sessions_file(&s.join("x.json")));
        assert!(!feed.is_sessions_file(&dir.path().join("2861.json")));
    }
}
