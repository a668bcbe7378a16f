//! Codex rollouts: `<codex>/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`, and the
//! thread's writer lock `<codex>/thread-writer-locks/<thread id>.lock`.
//!
//! The rollout says what the thread does: `session_meta` (first line: id, cwd, source),
//! `turn_context` (model), and `event_msg` `task_started` → working, `task_complete` /
//! `turn_aborted` → idle. It cannot tell "running a command" from "waiting for approval" (the
//! approval request is not written): hooks can.
//!
//! **The lock says whether anybody still has the thread.** Codex holds it with an exclusive
//! `flock` while the thread is loaded, and the kernel releases it when the process dies (`kill -9`
//! writes no `turn_aborted`). A lock seen held and then free means the session is over. It is read
//! from `/proc/locks` (see [`crate::feeds::procfs`]), which also names the holder, from which the
//! session's pid is the outermost `codex` ancestor — the same rule the hook feed follows, so the
//! two never take the session from each other. Codex's default background `codex app-server`
//! holds the lock and outlives a killed TUI: when only such an orphaned server holds it, nobody can
//! see or drive the thread any more, and the session is over too.
//!
//! Which rollouts are followed: those modified within the TTL, and those whose lock is held (an
//! idle TUI writes nothing for hours). A rollout whose lock exists but is free at first sight is a
//! finished thread, not shown (it would be a ghost). Subagent threads (`source` is an object) are
//! skipped: their activity belongs to the parent. A rollout moved to `archived_sessions/` is over.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::lock_owner::{codex_owner, CodexOwner};
use crate::feeds::procfs::{self, HeldLock, LockProbe};
use crate::feeds::tail::{self, TailReader};
use crate::feeds::watch::{Feed, WatchDepth, WatchRoot};
use crate::feeds::{age_of, mtime_of, parse_time, FeedOutput, FeedStats};
use crate::model::{Agent, EventKind, Observation, Source};
use crate::process::{ProcessTable, SystemProcesses};
use crate::usage::{TokenUsage, UsageKind, UsageReport};

/// What one rollout line means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RolloutLine {
    Meta {
        id: Option<String>,
        cwd: Option<String>,
        /// A subagent thread (`source` is an object): not a session of its own.
        subagent: bool,
        at: Option<DateTime<Utc>>,
    },
    Context {
        model: Option<String>,
        cwd: Option<String>,
    },
    TaskStarted(Option<DateTime<Utc>>),
    TaskComplete(Option<DateTime<Utc>>),
    TurnAborted(Option<DateTime<Utc>>),
    /// The thread's token usage so far (`token_usage_record`'s `thread_token_usage`, or an
    /// `event_msg`/`token_count`'s `info.total_token_usage`): also a sign of life.
    Usage {
        at: Option<DateTime<Utc>>,
        turn_id: Option<String>,
        total: TokenUsage,
        /// What the last turn held in the context window (`info.last_token_usage`'s
        /// `total_tokens`) and the model's window (`info.model_context_window`), where said.
        context_tokens: Option<u64>,
        context_window: Option<u64>,
        /// The plan's rate-limit windows the server reported with it (`rate_limits`), as written.
        rate_limits: Option<Value>,
    },
    /// History, anything else: a sign of life at its time.
    Other(Option<DateTime<Utc>>),
}

#[derive(Debug, Deserialize)]
struct RawLine {
    timestamp: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    payload: RawPayload,
}

#[derive(Debug, Deserialize, Default)]
struct RawPayload {
    #[serde(rename = "type")]
    kind: Option<Value>,
    id: Option<Value>,
    cwd: Option<Value>,
    source: Option<Value>,
    model: Option<Value>,
    turn_id: Option<Value>,
    thread_token_usage: Option<Value>,
    info: Option<Value>,
    rate_limits: Option<Value>,
}

/// An OpenAI-shaped usage object (`input_tokens` include `cached_input_tokens`).
fn openai_usage(v: &Value) -> Option<TokenUsage> {
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    v.is_object().then(|| {
        TokenUsage::from_openai(
            n("input_tokens"),
            n("cached_input_tokens"),
            n("cache_write_input_tokens"),
            n("output_tokens"),
        )
    })
}

/// The tokens a turn's usage puts in the context window: its `total_tokens` (input, cached
/// input included, and output), or input plus output where the total is missing.
fn context_of(v: &Value) -> Option<u64> {
    let n = |k: &str| v.get(k).and_then(Value::as_u64);
    n("total_tokens")
        .or_else(|| Some(n("input_tokens")?.saturating_add(n("output_tokens").unwrap_or(0))))
        .filter(|tokens| *tokens > 0)
}

fn text(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// Parses one rollout line; an error is a line to skip and count.
pub fn parse_rollout_line(bytes: &[u8]) -> Result<RolloutLine, serde_json::Error> {
    let raw: RawLine = serde_json::from_slice(bytes)?;
    let at = raw.timestamp.as_deref().and_then(parse_time);
    let p = raw.payload;
    Ok(match raw.kind.as_deref() {
        Some("session_meta") => RolloutLine::Meta {
            subagent: matches!(p.source, Some(Value::Object(_))),
            id: text(p.id),
            cwd: text(p.cwd),
            at,
        },
        Some("turn_context") => RolloutLine::Context {
            model: text(p.model),
            cwd: text(p.cwd),
        },
        Some("event_msg") => match text(p.kind).as_deref() {
            Some("task_started") => RolloutLine::TaskStarted(at),
            Some("task_complete") => RolloutLine::TaskComplete(at),
            Some("turn_aborted") => RolloutLine::TurnAborted(at),
            Some("token_count") => match p
                .info
                .as_ref()
                .and_then(|i| i.get("total_token_usage"))
                .and_then(openai_usage)
            {
                Some(total) => {
                    let info = p.info.as_ref();
                    RolloutLine::Usage {
                        at,
                        turn_id: None,
                        total,
                        context_tokens: info
                            .and_then(|i| i.get("last_token_usage"))
                            .and_then(context_of),
                        context_window: info
                            .and_then(|i| i.get("model_context_window"))
                            .and_then(Value::as_u64)
                            .filter(|w| *w > 0),
                        rate_limits: p.rate_limits.filter(Value::is_object),
                    }
                }
                None => RolloutLine::Other(at),
            },
            _ => RolloutLine::Other(at),
        },
        Some("token_usage_record") => match p.thread_token_usage.as_ref().and_then(openai_usage) {
            Some(total) => RolloutLine::Usage {
                at,
                turn_id: text(p.turn_id),
                total,
                context_tokens: None,
                context_window: None,
                rate_limits: None,
            },
            None => RolloutLine::Other(at),
        },
        _ => RolloutLine::Other(at),
    })
}

/// What a Codex rollout's `rate_limits` object says: its windows (`primary`, `secondary`) with a
/// percent, for the session `session_id`, reported at `at`. `None` when it names no window (the
/// mock servers' `null`s, an API-key login).
pub fn plan_windows(
    rate_limits: &Value,
    session_id: &str,
    at: DateTime<Utc>,
) -> Option<Vec<crate::plan_limits::PlanWindow>> {
    let text = |k: &str| {
        rate_limits
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let mut account = text("plan_type")
        .or_else(|| text("limit_id"))
        .unwrap_or_else(|| "codex".into());
    crate::model::cut_to(&mut account, crate::model::FieldLimit::Name.bytes());
    let windows: Vec<crate::plan_limits::PlanWindow> = ["primary", "secondary"]
        .iter()
        .filter_map(|slot| {
            let w = rate_limits.get(*slot)?;
            let used_percent = w.get("used_percent").and_then(Value::as_f64)?;
            if !used_percent.is_finite() {
                return None;
            }
            let window_minutes = w.get("window_minutes").and_then(Value::as_u64);
            let resets_at = match (
                w.get("resets_at").and_then(Value::as_i64),
                w.get("resets_in_seconds").and_then(Value::as_i64),
            ) {
                (Some(unix), _) => DateTime::from_timestamp(unix, 0),
                (None, Some(secs)) => at.checked_add_signed(chrono::Duration::seconds(secs)),
                (None, None) => None,
            };
            Some(crate::plan_limits::PlanWindow {
                agent: Agent::Codex,
                host: None,
                account: account.clone(),
                window: crate::plan_limits::window_name(window_minutes, slot),
                window_minutes,
                used_percent: used_percent.clamp(0.0, 100.0),
                resets_at,
                seen_at: at,
                session_id: session_id.to_string(),
            })
        })
        .collect();
    (!windows.is_empty()).then_some(windows)
}

/// The thread id in a rollout's file name (its last 36 characters before `.jsonl`).
pub fn thread_id_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    (id.bytes().filter(|b| *b == b'-').count() == 4).then(|| id.to_string())
}

/// Whether first sight of a rollout should show its session.
pub fn adopt_on_sight(lock: LockProbe, age: Duration, ttl: Duration) -> bool {
    match lock {
        LockProbe::Held(_) => true,
        // The thread was unloaded or its process died: a finished session, not a live one.
        LockProbe::Free => false,
        // No lock to ask (an older Codex, or not created yet): recency is all there is.
        LockProbe::Missing => age <= ttl,
    }
}

/// One followed thread.
#[derive(Debug)]
struct Thread {
    codex_home: PathBuf,
    thread_id: String,
    reader: TailReader,
    mtime: Option<SystemTime>,
    len: u64,
    cwd: Option<String>,
    model: Option<String>,
    pid: Option<u32>,
    lock_seen_held: bool,
    /// The turn the latest usage line named.
    turn: Option<String>,
    context_tokens: Option<u64>,
    context_window: Option<u64>,
}

impl Thread {
    fn lock_path(&self) -> PathBuf {
        lock_path(&self.codex_home, &self.thread_id)
    }

    fn observation(&self, path: &Path, event: EventKind, at: DateTime<Utc>) -> Observation {
        let mut obs = Observation::new(self.thread_id.clone(), Agent::Codex, event, at)
            .with_source(Source::Rollout)
            .with_pid(self.pid)
            .with_cwd(self.cwd.clone());
        obs.model.clone_from(&self.model);
        obs.context_tokens = self.context_tokens;
        obs.context_window = self.context_window;
        obs.transcript_path = Some(path.to_string_lossy().into_owned());
        obs
    }

    /// Turns lines into observations, updating the fields they carry. Task events are kept in
    /// order; other lines only become one trailing sign of life when nothing else was said.
    /// The thread totals in `lines`, as usage reports (each total also names the turn it was
    /// read in, when a line said). Only the newest total matters, but each is passed on so the
    /// store can tell which turn added what.
    fn usage_of(&mut self, lines: &[RolloutLine]) -> Vec<UsageReport> {
        let mut out = Vec::new();
        for line in lines {
            let RolloutLine::Usage {
                at, turn_id, total, ..
            } = line
            else {
                continue;
            };
            if turn_id.is_some() {
                self.turn.clone_from(turn_id);
            }
            let Some(at) = at else { continue };
            out.push(UsageReport {
                session_id: self.thread_id.clone(),
                agent: Agent::Codex,
                at: *at,
                turn_id: self.turn.clone(),
                model: self.model.clone(),
                kind: UsageKind::ThreadTotal,
                usage: *total,
            });
        }
        out
    }

    /// The plan's windows as the newest report in `lines` says them (each report repeats every
    /// window, so the newest is all there is to say).
    fn limits_of(&self, lines: &[RolloutLine]) -> Option<Vec<crate::plan_limits::PlanWindow>> {
        lines.iter().rev().find_map(|line| match line {
            RolloutLine::Usage {
                at: Some(at),
                rate_limits: Some(limits),
                ..
            } => plan_windows(limits, &self.thread_id, *at),
            _ => None,
        })
    }

    fn observations_of(&mut self, path: &Path, lines: &[RolloutLine]) -> Vec<Observation> {
        let mut out = Vec::new();
        let mut last_other = None;
        for line in lines {
            let (event, at) = match line {
                RolloutLine::Meta { cwd, .. } => {
                    if cwd.is_some() {
                        self.cwd.clone_from(cwd);
                    }
                    continue;
                }
                RolloutLine::Context { model, cwd } => {
                    if model.is_some() {
                        self.model.clone_from(model);
                    }
                    if cwd.is_some() {
                        self.cwd.clone_from(cwd);
                    }
                    continue;
                }
                RolloutLine::TaskStarted(at) => (EventKind::TaskStarted, at),
                RolloutLine::TaskComplete(at) => (EventKind::TaskComplete, at),
                RolloutLine::TurnAborted(at) => (EventKind::TurnAborted, at),
                RolloutLine::Usage {
                    at,
                    context_tokens,
                    context_window,
                    ..
                } => {
                    if context_tokens.is_some() {
                        self.context_tokens = *context_tokens;
                    }
                    if context_window.is_some() {
                        self.context_window = *context_window;
                    }
                    last_other = at.or(last_other);
                    continue;
                }
                RolloutLine::Other(at) => {
                    last_other = at.or(last_other);
                    continue;
                }
            };
            if let Some(at) = at {
                out.push(self.observation(path, event, *at));
            }
        }
        if out.is_empty() {
            if let Some(at) = last_other {
                out.push(self.observation(path, EventKind::Sighting, at));
            }
        }
        out
    }
}

fn lock_path(codex_home: &Path, thread_id: &str) -> PathBuf {
    codex_home
        .join("thread-writer-locks")
        .join(format!("{thread_id}.lock"))
}

/// The feed. Generic over the process table so tests can script process trees.
pub struct CodexRolloutsFeed<T: ProcessTable = SystemProcesses> {
    codex_homes: Vec<PathBuf>,
    ttl: Duration,
    table: T,
    threads: HashMap<PathBuf, Thread>,
    /// Rollouts looked at and not followed (subagents, finished threads, unreadable), with the
    /// mtime and size they had, so they are not read again until they change.
    dormant: HashMap<PathBuf, (Option<SystemTime>, u64)>,
    stats: Arc<FeedStats>,
}

type Locks = Option<HashMap<u64, Vec<HeldLock>>>;

impl CodexRolloutsFeed<SystemProcesses> {
    pub fn new(codex_homes: Vec<PathBuf>, ttl: Duration, stats: Arc<FeedStats>) -> Self {
        Self::with_table(codex_homes, ttl, stats, SystemProcesses)
    }
}

impl<T: ProcessTable> CodexRolloutsFeed<T> {
    pub fn with_table(
        codex_homes: Vec<PathBuf>,
        ttl: Duration,
        stats: Arc<FeedStats>,
        table: T,
    ) -> Self {
        CodexRolloutsFeed {
            codex_homes,
            ttl,
            table,
            threads: HashMap::new(),
            dormant: HashMap::new(),
            stats,
        }
    }

    fn home_of(&self, path: &Path) -> Option<PathBuf> {
        thread_id_of(path)?;
        self.codex_homes
            .iter()
            .find(|h| path.starts_with(h.join("sessions")))
            .cloned()
    }

    fn is_archived(&self, path: &Path) -> bool {
        thread_id_of(path).is_some()
            && self
                .codex_homes
                .iter()
                .any(|h| path.starts_with(h.join("archived_sessions")))
    }

    fn parse_lines(&self, raw: &[Vec<u8>]) -> Vec<RolloutLine> {
        FeedStats::add(&self.stats.lines, raw.len() as u64);
        raw.iter()
            .filter_map(|bytes| match parse_rollout_line(bytes) {
                Ok(line) => Some(line),
                Err(error) => {
                    FeedStats::add(&self.stats.bad_lines, 1);
                    tracing::debug!(%error, total = FeedStats::get(&self.stats.bad_lines), "rollout_line_skipped");
                    None
                }
            })
            .collect()
    }

    /// Looks at one rollout path under `sessions/` (which may have been removed).
    fn examine(&mut self, path: &Path, now: SystemTime, locks: &Locks, out: &mut Vec<FeedOutput>) {
        let Some(home) = self.home_of(path) else {
            return;
        };
        // Gone, or not a regular file (a FIFO must never be opened for a blocking read).
        let Ok((mut file, meta)) = crate::feeds::open_regular_file(path) else {
            self.dormant.remove(path);
            if let Some(thread) = self.threads.remove(path) {
                // Moved away; archived means over, anything else is left to the lock and the TTL.
                let name = path.file_name().map(PathBuf::from).unwrap_or_default();
                if archived_file_exists(&home.join("archived_sessions"), &name) {
                    out.push(gone(&thread, path));
                }
            }
            return;
        };
        let (mtime, len) = (meta.modified().ok(), meta.len());
        if let Some(&(m, l)) = self.dormant.get(path) {
            if m == mtime && l == len {
                return;
            }
            self.dormant.remove(path);
        }
        let Some(thread) = self.threads.get_mut(path) else {
            self.discover(path, home, &mut file, &meta, now, locks, out);
            return;
        };
        if thread.mtime == mtime && thread.len == len {
            return;
        }
        thread.mtime = mtime;
        thread.len = len;
        let mut raw = Vec::new();
        let appended = match thread
            .reader
            .read_appended(&mut file, &meta, &mut |l| raw.push(l.to_vec()))
        {
            Ok(a) => a,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "rollout_unreadable");
                return;
            }
        };
        FeedStats::add(&self.stats.bytes_read, appended.bytes_read);
        FeedStats::add(&self.stats.bad_lines, appended.oversized);
        if appended.reset {
            // Rewritten: look at it afresh (from its last window, never all of it).
            self.threads.remove(path);
            self.discover(path, home, &mut file, &meta, now, locks, out);
            return;
        }
        let lines = self.parse_lines(&raw);
        if let Some(thread) = self.threads.get_mut(path) {
            let obs = thread.observations_of(path, &lines);
            out.extend(obs.into_iter().map(FeedOutput::observe));
            // After the observations: the registry takes usage only for a session it knows.
            let usage = thread.usage_of(&lines);
            out.extend(usage.into_iter().map(|u| FeedOutput::Usage(Box::new(u))));
            out.extend(thread.limits_of(&lines).map(FeedOutput::Limits));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn discover(
        &mut self,
        path: &Path,
        codex_home: PathBuf,
        file: &mut std::fs::File,
        meta: &std::fs::Metadata,
        now: SystemTime,
        locks: &Locks,
        out: &mut Vec<FeedOutput>,
    ) {
        let dormant = (meta.modified().ok(), meta.len());
        let first = match tail::read_first_line(file) {
            Ok(Some((line, read))) => {
                FeedStats::add(&self.stats.bytes_read, read);
                line
            }
            // Empty, or its first line not finished yet: the next change brings it.
            Ok(None) | Err(_) => return,
        };
        let (id, cwd, started_at) = match parse_rollout_line(&first) {
            Ok(RolloutLine::Meta {
                subagent: false,
                id,
                cwd,
                at,
            }) => (id, cwd, at),
            Ok(RolloutLine::Meta { subagent: true, .. }) => {
                self.dormant.insert(path.to_path_buf(), dormant);
                return;
            }
            other => {
                if other.is_err() {
                    FeedStats::add(&self.stats.bad_lines, 1);
                }
                tracing::debug!(path = %path.display(), "rollout_without_session_meta");
                self.dormant.insert(path.to_path_buf(), dormant);
                return;
            }
        };
        let Some(thread_id) = id.or_else(|| thread_id_of(path)) else {
            self.dormant.insert(path.to_path_buf(), dormant);
            return;
        };
        let lock = procfs::probe_lock(&lock_path(&codex_home, &thread_id), locks.as_ref());
        if !adopt_on_sight(lock, age_of(meta, now), self.ttl) {
            self.dormant.insert(path.to_path_buf(), dormant);
            return;
        }
        let mut pid = None;
        if let LockProbe::Held(Some(holder)) = lock {
            match codex_owner(&self.table, holder) {
                CodexOwner::Pid(p) => pid = Some(p),
                CodexOwner::DetachedServer => {
                    self.dormant.insert(path.to_path_buf(), dormant);
                    return;
                }
            }
        }
        let last = match tail::read_last_lines(file, meta, tail::DISCOVERY_WINDOW) {
            Ok(last) => last,
            Err(_) => return,
        };
        FeedStats::add(&self.stats.bytes_read, last.bytes_read);
        let lines = self.parse_lines(&last.lines);
        let mut thread = Thread {
            codex_home,
            thread_id,
            reader: TailReader::at(last.resume_at, Some(last.identity)),
            mtime: meta.modified().ok(),
            len: meta.len(),
            cwd,
            model: None,
            pid,
            lock_seen_held: matches!(lock, LockProbe::Held(_)),
            turn: None,
            context_tokens: None,
            context_window: None,
        };
        // Only the newest task event matters at first sight; the fields from every line.
        let newest_task = lines.iter().rev().find(|l| {
            matches!(
                l,
                RolloutLine::TaskStarted(_)
                    | RolloutLine::TaskComplete(_)
                    | RolloutLine::TurnAborted(_)
            )
        });
        let fields_only: Vec<RolloutLine> = lines
            .iter()
            .filter(|l| {
                matches!(
                    l,
                    RolloutLine::Context { .. }
                        | RolloutLine::Meta { .. }
                        | RolloutLine::Usage { .. }
                )
            })
            .cloned()
            .collect();
        thread.observations_of(path, &fields_only);
        let sighted = started_at.unwrap_or_else(|| mtime_of(meta));
        out.push(FeedOutput::observe(thread.observation(
            path,
            EventKind::Sighting,
            sighted,
        )));
        if let Some(task) = newest_task {
            let obs = thread.observations_of(path, std::slice::from_ref(task));
            out.extend(obs.into_iter().map(FeedOutput::observe));
        }
        // The newest total is everything the thread used until now; the newest turn named
        // before it is the turn it is counted in.
        thread.turn = lines.iter().rev().find_map(|l| match l {
            RolloutLine::Usage { turn_id, .. } => turn_id.clone(),
            _ => None,
        });
        let newest_total: Vec<RolloutLine> = lines
            .iter()
            .rev()
            .find(|l| matches!(l, RolloutLine::Usage { .. }))
            .cloned()
            .into_iter()
            .collect();
        let usage = thread.usage_of(&newest_total);
        out.extend(usage.into_iter().map(|u| FeedOutput::Usage(Box::new(u))));
        out.extend(thread.limits_of(&lines).map(FeedOutput::Limits));
        tracing::debug!(session_id = %thread.thread_id, pid = ?thread.pid, "codex_thread_followed");
        self.threads.insert(path.to_path_buf(), thread);
    }

    /// Checks every followed thread's lock: held → who owns it; seen held and now free → over.
    fn check_locks(&mut self, locks: &Locks, now: SystemTime, out: &mut Vec<FeedOutput>) {
        let mut over = Vec::new();
        for (path, thread) in self.threads.iter_mut() {
            match procfs::probe_lock(&thread.lock_path(), locks.as_ref()) {
                LockProbe::Held(holder) => {
                    thread.lock_seen_held = true;
                    let Some(holder) = holder else { continue };
                    match codex_owner(&self.table, holder) {
                        CodexOwner::Pid(pid) if thread.pid != Some(pid) => {
                            thread.pid = Some(pid);
                            // Seen now: the lock has no time of its own.
                            out.push(FeedOutput::observe(thread.observation(
                                path,
                                EventKind::Sighting,
                                DateTime::<Utc>::from(now),
                            )));
                        }
                        CodexOwner::Pid(_) => {}
                        CodexOwner::DetachedServer => {
                            tracing::debug!(session_id = %thread.thread_id, holder, reason = "orphaned_app_server", "codex_thread_over");
                            over.push(path.clone());
                        }
                    }
                }
                LockProbe::Free | LockProbe::Missing if thread.lock_seen_held => {
                    tracing::debug!(session_id = %thread.thread_id, reason = "lock_released", "codex_thread_over");
                    over.push(path.clone());
                }
                _ => {}
            }
        }
        for path in over {
            if let Some(thread) = self.threads.remove(&path) {
                out.push(gone(&thread, &path));
                self.dormant.insert(path, (thread.mtime, thread.len));
            }
        }
    }

    /// Thread ids whose lock is held now, without opening any lock file (inode from the
    /// directory entry, matched against `/proc/locks`).
    fn held_thread_ids(&self, locks: &Locks) -> HashSet<String> {
        let mut held = HashSet::new();
        for home in &self.codex_homes {
            let Ok(entries) = std::fs::read_dir(home.join("thread-writer-locks")) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else {
                    continue;
                };
                let is_held = match locks {
                    Some(locks) => {
                        let path = entry.path();
                        let index = std::fs::metadata(&path)
                            .map(|m| crate::os_fs::index_of(&path, &m))
                            .unwrap_or(u64::MAX);
                        locks.contains_key(&index)
                            && matches!(
                                procfs::lock_holder(&entry.path(), locks),
                                LockProbe::Held(_)
                            )
                    }
                    None => matches!(
                        procfs::probe_lock_by_flock(&entry.path()),
                        LockProbe::Held(_)
                    ),
                };
                if is_held {
                    held.insert(id.to_string());
                }
            }
        }
        held
    }

    fn check_archived(&mut self, archived: &Path, out: &mut Vec<FeedOutput>) {
        let Some(id) = thread_id_of(archived) else {
            return;
        };
        let followed: Vec<PathBuf> = self
            .threads
            .iter()
            .filter(|(_, t)| t.thread_id == id)
            .map(|(p, _)| p.clone())
            .collect();
        for path in followed {
            if let Some(thread) = self.threads.remove(&path) {
                tracing::debug!(session_id = %id, reason = "archived", "codex_thread_over");
                out.push(gone(&thread, &path));
            }
        }
    }
}

fn gone(thread: &Thread, path: &Path) -> FeedOutput {
    FeedOutput::observe(thread.observation(path, EventKind::Gone, Utc::now()))
}

/// Whether `name` exists in `archived_sessions/`, flat or under date folders.
fn archived_file_exists(dir: &Path, name: &Path) -> bool {
    if dir.join(name).exists() {
        return true;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            } else if entry.file_name() == name.as_os_str() {
                return true;
            }
        }
    }
    false
}

/// Every `rollout-*.jsonl` under `dir`, recursively.
fn rollouts_under(dir: &Path) -> Vec<(PathBuf, std::fs::DirEntry)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if thread_id_of(Path::new(&entry.file_name())).is_some() {
                found.push((entry.path(), entry));
            }
        }
    }
    found
}

impl<T: ProcessTable + Send + 'static> Feed for CodexRolloutsFeed<T> {
    fn name(&self) -> &'static str {
        "codex_rollouts"
    }

    fn stats(&self) -> Arc<FeedStats> {
        self.stats.clone()
    }

    fn watch_roots(&self) -> Vec<WatchRoot> {
        self.codex_homes
            .iter()
            .flat_map(|h| {
                [
                    WatchRoot::new(h.join("sessions"), WatchDepth::Recursive),
                    WatchRoot::new(h.join("archived_sessions"), WatchDepth::Recursive),
                ]
            })
            .collect()
    }

    fn on_paths(&mut self, paths: &HashSet<PathBuf>, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        let locks = procfs::read_proc_locks();
        for path in paths {
            if self.is_archived(path) {
                self.check_archived(path, &mut out);
            } else if self.home_of(path).is_some() {
                self.examine(path, now, &locks, &mut out);
            } else if path.is_dir()
                && self
                    .codex_homes
                    .iter()
                    .any(|h| path.starts_with(h.join("sessions")))
            {
                // A new day folder: its first rollout may predate the watch on it.
                for (rollout, _) in rollouts_under(path) {
                    self.examine(&rollout, now, &locks, &mut out);
                }
            }
        }
        out
    }

    fn rescan(&mut self, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        let locks = procfs::read_proc_locks();
        let held = self.held_thread_ids(&locks);
        for home in self.codex_homes.clone() {
            for (path, entry) in rollouts_under(&home.join("sessions")) {
                let known = self.threads.contains_key(&path) || self.dormant.contains_key(&path);
                let recent = entry.metadata().is_ok_and(|m| age_of(&m, now) <= self.ttl);
                let lock_held = thread_id_of(&path).is_some_and(|id| held.contains(&id));
                if known || recent || lock_held {
                    self.examine(&path, now, &locks, &mut out);
                }
            }
            for (path, _) in rollouts_under(&home.join("archived_sessions")) {
                if let Some(id) = thread_id_of(&path) {
                    if self.threads.values().any(|t| t.thread_id == id) {
                        self.check_archived(&path, &mut out);
                    }
                }
            }
        }
        // Followed files that vanished without an event.
        let vanished: Vec<PathBuf> = self
            .threads
            .keys()
            .filter(|p| !p.exists())
            .cloned()
            .collect();
        for path in vanished {
            self.examine(&path, now, &locks, &mut out);
        }
        let ttl = self.ttl;
        self.dormant.retain(|p, (mtime, _)| {
            mtime
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age <= ttl)
                && p.exists()
        });
        self.check_locks(&locks, now, &mut out);
        self.stats.followed.store(
            self.threads.len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        out
    }

    fn wants_tick(&self) -> bool {
        !self.threads.is_empty()
    }

    fn tick(&mut self, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        if !self.threads.is_empty() {
            let locks = procfs::read_proc_locks();
            self.check_locks(&locks, now, &mut out);
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ROLLOUT: &str = "rollout-2026-11-29T19-07-13-01a228b4-48e5-7151-b535-fa0e4e9093ad.jsonl";

    fn fixture() -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/codex/real-0.169.0")
            .join(ROLLOUT);
        std::fs::read(path).unwrap()
    }

    /// A followed thread as first sight leaves it, for the parsing tests.
    fn test_thread(thread_id: &str, pid: Option<u32>) -> Thread {
        Thread {
            codex_home: PathBuf::from("/c"),
            thread_id: thread_id.into(),
            reader: TailReader::at(0, None),
            mtime: None,
            len: 0,
            cwd: None,
            model: None,
            pid,
            lock_seen_held: true,
            turn: None,
            context_tokens: None,
            context_window: None,
        }
    }

    fn fixture_lines() -> Vec<RolloutLine> {
        fixture()
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| parse_rollout_line(l).unwrap())
            .collect()
    }

    #[test]
    fn the_recorded_rollout_reads_as_meta_a_turn_and_its_abort() {
        let lines = fixture_lines();
        assert_eq!(
            lines[0],
            RolloutLine::Meta {
                id: Some("01a228b4-48e5-7151-b535-fa0e4e9093ad".into()),
                cwd: Some("/home/dev/proj".into()),
                subagent: false,
                at: parse_time("2026-11-29T19:07:35.825Z"),
            }
        );
        assert_eq!(
            lines[1],
            RolloutLine::TaskStarted(parse_time("2026-11-29T19:07:35.825Z"))
        );
        assert!(lines.contains(&RolloutLine::Context {
            model: Some("mock-model".into()),
            cwd: Some("/home/dev/proj".into())
        }));
        assert_eq!(
            lines.last(),
            Some(&RolloutLine::TurnAborted(parse_time(
                "2026-11-29T19:07:40.081Z"
            )))
        );
    }

    #[test]
    fn the_recorded_rollout_reports_its_thread_totals_with_the_turn_and_model() {
        let mut thread = test_thread("t", None);
        let lines = fixture_lines();
        thread.observations_of(Path::new("/c/r.jsonl"), &lines);
        let usage = thread.usage_of(&lines);
        // token_usage_record (with the turn) then token_count (without: the same turn).
        assert_eq!(usage.len(), 2, "{usage:?}");
        let total = TokenUsage {
            input: 100,
            output: 10,
            cache_read: 0,
            cache_write: 0,
        };
        for u in &usage {
            assert_eq!(u.usage, total);
            assert_eq!(u.kind, UsageKind::ThreadTotal);
            assert_eq!(
                u.turn_id.as_deref(),
                Some("01a228b4-a007-7fe1-a7a4-7dafa3d59e8e")
            );
            assert_eq!(u.model.as_deref(), Some("mock-model"));
        }
        assert_eq!(usage[0].at.to_rfc3339(), "2026-11-29T19:07:36.508+00:00");
        // OpenAI counts cached tokens inside input_tokens; ours apart.
        let line = br#"{"timestamp":"2026-11-29T19:07:39.818Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":7}}}}"#;
        match parse_rollout_line(line).unwrap() {
            RolloutLine::Usage { total, turn_id, .. } => {
                assert_eq!(turn_id, None);
                assert_eq!((total.input, total.cache_read, total.output), (200, 800, 7));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_recorded_rollout_becomes_working_then_idle_stamped_by_its_lines() {
        let mut thread = test_thread("t", Some(30));
        let obs = thread.observations_of(Path::new("/c/r.jsonl"), &fixture_lines());
        let events: Vec<EventKind> = obs.iter().map(|o| o.event).collect();
        assert_eq!(events, vec![EventKind::TaskStarted, EventKind::TurnAborted]);
        assert_eq!(obs[1].model.as_deref(), Some("mock-model"));
        // The recorded token_count: the mock's 100 in + 10 out, in Codex's own 258400 window;
        // the turn's start, before it, knew neither.
        assert_eq!((obs[0].context_tokens, obs[0].context_window), (None, None));
        assert_eq!(
            (obs[1].context_tokens, obs[1].context_window),
            (Some(110), Some(258_400))
        );
        assert_eq!(obs[1].pid, Some(30));
        assert_eq!(obs[1].source, Source::Rollout);
        assert_eq!(obs[1].agent, Agent::Codex);
    }

    // Recorded from the real codex 0.171.0 with the mock's rate-limit headers: each token_count
    // carries both plan windows; the newest report is the one passed on, for its thread.
    #[test]
    fn the_recorded_token_counts_report_the_plans_windows() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/codex/real-0.171.0/token-count-rate-limits.jsonl");
        let lines: Vec<RolloutLine> = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| parse_rollout_line(l.as_bytes()).unwrap())
            .collect();
        let thread = test_thread("t9", None);
        let first = thread.limits_of(&lines[..1]).unwrap();
        let windows: Vec<(&str, f64, Option<u64>)> = first
            .iter()
            .map(|w| (w.window.as_str(), w.used_percent, w.window_minutes))
            .collect();
        assert_eq!(
            windows,
            vec![("5h", 42.5, Some(300)), ("weekly", 12.0, Some(10080))]
        );
        assert_eq!(
            first[0].account, "codex",
            "no plan_type with an API key: the limit id"
        );
        assert_eq!(first[0].session_id, "t9");
        assert_eq!(first[0].resets_at.unwrap().timestamp(), 1_796_363_272);
        let newest = thread.limits_of(&lines).unwrap();
        assert_eq!(newest[0].used_percent, 93.0, "the newest report wins");
    }

    #[test]
    fn rate_limits_read_with_their_percent_length_and_reset_and_nothing_is_invented() {
        let at = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap();
        let v = serde_json::json!({
            "limit_id": "codex", "plan_type": "pro",
            "primary": {"used_percent": 42.0, "window_minutes": 300, "resets_at": 1_800_003_600},
            "secondary": {"used_percent": 12.5, "window_minutes": 10080, "resets_at": 1_800_600_000},
        });
        let windows = plan_windows(&v, "t1", at(0)).unwrap();
        assert_eq!(windows.len(), 2);
        assert_eq!(
            (windows[0].window.as_str(), windows[0].account.as_str()),
            ("5h", "pro")
        );
        assert_eq!(
            (windows[0].used_percent, windows[0].resets_at),
            (42.0, Some(at(3600)))
        );
        assert_eq!(windows[1].window, "weekly");
        // Nothing reported: no row (the mock servers and API-key logins).
        let empty = serde_json::json!({"limit_id": "codex", "primary": null, "secondary": null});
        assert_eq!(plan_windows(&empty, "t1", at(0)), None);
        // An older Codex said how long until the reset; a percent out of range is bounded.
        let older = serde_json::json!({"primary": {"used_percent": 140.0, "window_minutes": 90, "resets_in_seconds": 60}});
        let w = &plan_windows(&older, "t1", at(0)).unwrap()[0];
        assert_eq!((w.window.as_str(), w.used_percent), ("90m", 100.0));
        assert_eq!((w.account.as_str(), w.resets_at), ("codex", Some(at(60))));
    }

    #[test]
    fn a_token_count_without_a_window_or_a_last_turn_says_nothing_of_either() {
        let line = br#"{"timestamp":"2026-11-29T19:07:39.818Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"output_tokens":7}}}}"#;
        match parse_rollout_line(line).unwrap() {
            RolloutLine::Usage {
                context_tokens,
                context_window,
                ..
            } => assert_eq!((context_tokens, context_window), (None, None)),
            other => panic!("{other:?}"),
        }
        // An older Codex with no `total_tokens`: input (cached included) plus output.
        let line = br#"{"timestamp":"2026-11-29T19:07:39.818Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"output_tokens":7},"last_token_usage":{"input_tokens":900,"cached_input_tokens":800,"output_tokens":7},"model_context_window":0}}}"#;
        match parse_rollout_line(line).unwrap() {
            RolloutLine::Usage {
                context_tokens,
                context_window,
                ..
            } => assert_eq!((context_tokens, context_window), (Some(907), None)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_subagent_thread_is_recognised_by_its_object_source() {
        let line = br#"{"timestamp":"2026-11-29T19:07:35.825Z","type":"session_meta","payload":{"id":"x","source":{"subagent":{"thread_spawn":{}}}}}"#;
        assert!(matches!(
            parse_rollout_line(line).unwrap(),
            RolloutLine::Meta { subagent: true, .. }
        ));
    }

    #[test]
    fn broken_and_unknown_lines_are_errors_or_signs_of_life_never_panics() {
        assert!(
            parse_rollout_line(br#"{"timestamp":"2026-11-29T19:07:35.825Z","type":"event_m"#)
                .is_err()
        );
        assert!(parse_rollout_line(b"\xff\xfe{}").is_err());
        assert_eq!(
            parse_rollout_line(br#"{"type":"world_state","payload":{"type":5,"id":[1]}}"#).unwrap(),
            RolloutLine::Other(None)
        );
        assert_eq!(
            parse_rollout_line(br#"{"type":"event_msg"}"#).unwrap(),
            RolloutLine::Other(None)
        );
    }

    #[test]
    fn the_thread_id_is_the_uuid_at_the_end_of_the_file_name() {
        assert_eq!(
            thread_id_of(Path::new(ROLLOUT)).as_deref(),
            Some("01a228b4-48e5-7151-b535-fa0e4e9093ad")
        );
        assert_eq!(thread_id_of(Path::new("rollout-x.jsonl")), None);
        assert_eq!(thread_id_of(Path::new("notes.jsonl")), None);
    }

    #[test]
    fn first_sight_shows_a_held_thread_and_never_a_released_one() {
        let ttl = Duration::from_secs(300);
        let old = Duration::from_secs(3600);
        assert!(
            adopt_on_sight(LockProbe::Held(Some(1)), old, ttl),
            "an idle TUI writes nothing for hours"
        );
        assert!(
            !adopt_on_sight(LockProbe::Free, Duration::ZERO, ttl),
            "exited a moment ago"
        );
        assert!(adopt_on_sight(LockProbe::Missing, Duration::ZERO, ttl));
        assert!(!adopt_on_sight(LockProbe::Missing, old, ttl));
    }
}
