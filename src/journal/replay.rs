//! The engine's side of the journal: reading records back (line by line, bounded, skipping what
//! is corrupt), the replay that applies them to the registry, its status for `doctor`, the
//! liveness probe that decides which old journals are worth replaying at start, and the inotify
//! watch that wakes it.

use crate::agent_pid::AgentProcesses;
use crate::os_fs::{self, FileId};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::compaction::{
    drop_totals, enforce_cap, journal_files, read_drops, rewrite_keeping, JournalCap,
    COMPACT_QUIET, KEEP_HEAD, KEEP_TAIL, MAX_AGE, MAX_FILE_BYTES, MAX_TOTAL_BYTES,
};
use super::record::{agent_of_file, parse_line, CorruptRecord, JournalRecord, MAX_RECORD};
use crate::model::{Agent, EventKind};
use crate::paths::{create_private_dir, TrayPaths};
use crate::registry::{AppliedSeqs, ObserveOutcome, SessionsRegistry};

/// How often the engine looks for records it has not applied when inotify said nothing: the
/// safety net for what inotify cannot see (its queue overflowed, the folder was replaced, no
/// watch could be set up). A record the hook appends is applied at once, woken by inotify.
pub const REPLAY_SAFETY_TICK: Duration = Duration::from_secs(60);
/// How long after inotify's first word of a change the replay reads: a turn's hooks come in a
/// burst and are read in one pass. The socket normally delivers a record first anyway; the
/// replay is what applies it when the socket did not.
const WAKE_SETTLE: Duration = Duration::from_millis(200);
/// Compaction and removal run at the first pass and then at a pass at least this long after the
/// last time they ran (nothing there is urgent: a journal is removed after days, compacted past
/// half a megabyte).
pub const MAINTAIN_EVERY: Duration = Duration::from_secs(300);
/// Records dated further than this past the reader's clock are refused: one such record would
/// make every later event of its session look stale.
const MAX_FUTURE: Duration = Duration::from_secs(24 * 3600);
/// The engine's replay status, beside the journals (not ending in `.jsonl`).
pub const STATUS_FILE: &str = "status.json";

/// or why it was skipped), and returns the offset just past the last complete line: a line
/// still being written is left for the next read. Memory stays at one line, whatever the size.
pub fn read_records(
    path: &Path,
    offset: u64,
    mut each: impl FnMut(Result<JournalRecord, CorruptRecord>),
) -> io::Result<u64> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut pos = offset;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = io::Read::take(&mut reader, MAX_RECORD as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(pos);
        }
        if line.last() != Some(&b'\n') {
            if n <= MAX_RECORD {
                return Ok(pos); // being written
            }
            // Longer than any record: skip to its end, if it has one yet.
            let mut skipped = n as u64;
            loop {
                let buf = reader.fill_buf()?;
                if buf.is_empty() {
                    return Ok(pos);
                }
                match buf.iter().position(|b| *b == b'\n') {
                    Some(i) => {
                        reader.consume(i + 1);
                        skipped += i as u64 + 1;
                        break;
                    }
                    None => {
                        let l = buf.len();
                        reader.consume(l);
                        skipped += l as u64;
                    }
                }
            }
            pos += skipped;
            each(Err(CorruptRecord::TooLong(
                usize::try_from(skipped).unwrap_or(usize::MAX),
            )));
            continue;
        }
        pos += n as u64;
        let body = &line[..n - 1];
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(body) {
            Err(bad @ CorruptRecord::BadJson(_)) => {
                each(Err(bad));
                if let Some(record) = glued_record(body) {
                    each(Ok(record));
                }
            }
            parsed => each(parsed),
        }
    }
}

/// The record at the end of a line that a torn write glued onto: a record starts with `{"v":`,
/// which cannot occur inside a JSON string (its quotes would be escaped).
fn glued_record(line: &[u8]) -> Option<JournalRecord> {
    const START: &[u8] = b"{\"v\":";
    let at = line.windows(START.len()).rposition(|w| w == START)?;
    (at > 0).then(|| parse_line(&line[at..]).ok()).flatten()
}

/// Reads the complete records of `path` from byte `offset` (skipping bad lines); returns them
/// and the offset just past the last complete line.
pub fn read_from(path: &Path, offset: u64) -> io::Result<(Vec<JournalRecord>, u64)> {
    let mut records = Vec::new();
    let end = read_records(path, offset, |r| records.extend(r.ok()))?;
    Ok((records, end))
}

/// Parses journal lines, skipping any that are not a record of a version we read.
pub fn parse_lines(bytes: &[u8]) -> Vec<JournalRecord> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| parse_line(l).ok())
        .collect()
}

/// The last complete record of a journal, read from its tail only.
pub fn last_record(path: &Path) -> Option<JournalRecord> {
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(MAX_RECORD as u64 + 1);
    let mut bytes = vec![0u8; usize::try_from(len - start).ok()?];
    os_fs::read_exact_at(&file, &mut bytes, start).ok()?;
    bytes
        .strip_suffix(b"\n")
        .unwrap_or(&bytes)
        .rsplit(|b| *b == b'\n')
        .find_map(|l| parse_line(l).ok())
}

/// The newest journaled event of each agent (for `doctor`): the newest file's last record.
pub fn last_event_per_agent(dir: &Path) -> HashMap<Agent, JournalRecord> {
    let mut newest: HashMap<Agent, (SystemTime, PathBuf)> = HashMap::new();
    for (path, meta) in journal_files(dir) {
        let Some(agent) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(agent_of_file)
        else {
            continue;
        };
        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if newest.get(&agent).is_none_or(|(t, _)| mtime > *t) {
            newest.insert(agent, (mtime, path));
        }
    }
    newest
        .into_iter()
        .filter_map(|(agent, (_, path))| Some((agent, last_record(&path)?)))
        .collect()
}

/// Where the replay stands in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    ino: u64,
    offset: u64,
    /// Passed over at start as not worth replaying (old, its agent gone), not applied.
    skipped: bool,
}

/// What a replay tick did, for logs and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayStats {
    pub applied: usize,
    pub duplicates: usize,
    /// Lines skipped as corrupt: not JSON, torn, too long, an impossible date, invalid.
    pub corrupt: usize,
    pub skipped_files: usize,
    pub removed_files: usize,
    pub compacted_files: usize,
    /// Journals removed and records cut by the cap.
    pub dropped_files: u64,
    pub dropped_records: u64,
}

impl ReplayStats {
    fn add(&mut self, other: &ReplayStats) {
        self.applied += other.applied;
        self.duplicates += other.duplicates;
        self.corrupt += other.corrupt;
        self.skipped_files += other.skipped_files;
        self.removed_files += other.removed_files;
        self.compacted_files += other.compacted_files;
        self.dropped_files += other.dropped_files;
        self.dropped_records += other.dropped_records;
    }
}

/// What the running engine's replay has done since it started, written to [`STATUS_FILE`] for
/// `doctor` and for tests (the load test reads `applied_seqs` and `unapplied_bytes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayStatus {
    pub pid: u32,
    pub at: DateTime<Utc>,
    /// Totals since the engine started.
    pub totals: ReplayStats,
    /// Bytes of journal the engine has not applied yet (files skipped at start not counted).
    pub unapplied_bytes: u64,
    /// Every observation with a sequence id the registry applied, by any feed.
    pub applied_seqs: AppliedSeqs,
}

/// The status the running engine last wrote, if any.
pub fn read_status(dir: &Path) -> Option<ReplayStatus> {
    serde_json::from_slice(&fs::read(dir.join(STATUS_FILE)).ok()?).ok()
}

/// What `doctor` says about the journal: drops by the cap, corrupt records skipped.
pub fn health_notes(dir: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    let drops = drop_totals(dir);
    if drops.files + drops.records > 0 {
        notes.push(format!(
            "the journal reached its cap ({} MiB) and dropped its oldest events: {} journals and {} records, {} KiB in all{}",
            MAX_TOTAL_BYTES >> 20,
            drops.files,
            drops.records,
            drops.bytes / 1024,
            drops
                .at
                .map(|t| format!(", last at {}", t.format("%Y-%m-%d %H:%M UTC")))
                .unwrap_or_default()
        ));
    }
    if let Some(status) = read_status(dir) {
        if status.totals.corrupt > 0 {
            notes.push(format!(
                "the engine (pid {}) skipped {} corrupt journal records since it started",
                status.pid, status.totals.corrupt
            ));
        }
    }
    notes
}

/// Is the process of a journal's last record still the agent that wrote it? The seam the tests
/// replace.
pub type LivenessProbe = dyn Fn(u32, DateTime<Utc>) -> bool + Send + Sync;

/// Replays journal records into the registry: all of a recent file at the first tick, and
/// afterwards whatever was appended since the last tick.
pub struct JournalReplay {
    dir: PathBuf,
    cursors: HashMap<PathBuf, Cursor>,
    started: bool,
    /// When compaction and removal last ran (`None`: not yet).
    maintained_at: Option<SystemTime>,
    probe: Arc<LivenessProbe>,
    totals: ReplayStats,
    /// How far the drop log has been read (and logged).
    drops_read: u64,
    last_status: Option<(ReplayStats, u64, AppliedSeqs)>,
}

impl std::fmt::Debug for JournalReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalReplay")
            .field("dir", &self.dir)
            .field("files", &self.cursors.len())
            .finish_non_exhaustive()
    }
}

impl JournalReplay {
    /// The replay with the default liveness probe ([`agent_still_running`], asking `processes`
    /// which of an agent's processes own no session).
    pub fn new(dir: PathBuf, processes: &'static dyn AgentProcesses) -> Self {
        Self::with_probe(
            dir,
            Arc::new(move |pid, at| agent_still_running(pid, at, processes)),
        )
    }

    pub fn with_probe(dir: PathBuf, probe: Arc<LivenessProbe>) -> Self {
        JournalReplay {
            dir,
            cursors: HashMap::new(),
            started: false,
            maintained_at: None,
            probe,
            totals: ReplayStats::default(),
            drops_read: 0,
            last_status: None,
        }
    }

    /// Totals since this replay started.
    pub fn totals(&self) -> ReplayStats {
        self.totals
    }

    /// Bytes not applied yet in the files this replay follows.
    pub fn unapplied_bytes(&self) -> u64 {
        journal_files(&self.dir)
            .iter()
            .map(|(path, meta)| match self.cursors.get(path) {
                Some(c) if c.ino == os_fs::index_of(path, meta) => {
                    meta.len().saturating_sub(c.offset)
                }
                _ => meta.len(),
            })
            .sum()
    }

    /// One pass: replay what is new, then now and then compact and remove old journals.
    pub fn tick(&mut self, registry: &SessionsRegistry, now: SystemTime) -> ReplayStats {
        let mut stats = ReplayStats::default();
        self.replay(registry, now, &mut stats);
        // After the replay, never before: compaction may only drop what was applied.
        let due = self.maintained_at.is_none_or(|last| {
            now.duration_since(last)
                .is_ok_and(|since| since >= MAINTAIN_EVERY)
        });
        if due {
            self.maintain(now, &mut stats);
            self.maintained_at = Some(now);
        }
        self.totals.add(&stats);
        stats
    }

    fn replay(&mut self, registry: &SessionsRegistry, now: SystemTime, stats: &mut ReplayStats) {
        let first = !self.started;
        self.started = true;
        let files = journal_files(&self.dir);
        let present: std::collections::HashSet<&PathBuf> = files.iter().map(|(p, _)| p).collect();
        self.cursors.retain(|p, _| present.contains(p));
        let ttl = registry.config().session_ttl;
        let ended_ttl = registry.config().ended_ttl;
        let latest = DateTime::<Utc>::from(now)
            .checked_add_signed(chrono::TimeDelta::from_std(MAX_FUTURE).unwrap_or_default())
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        for (path, meta) in &files {
            let ino = os_fs::index_of(path, meta);
            let len = meta.len();
            let offset = match self.cursors.get(path) {
                Some(c) if c.ino == ino && c.offset <= len => c.offset,
                // Replaced by a rewrite we did not make, or truncated: start over; sequence
                // ids de-duplicate what was applied already.
                Some(_) => 0,
                None if first => {
                    if !self.worth_replaying_at_start(path, meta, now, ttl, ended_ttl) {
                        stats.skipped_files += 1;
                        let skipped = Cursor {
                            ino,
                            offset: len,
                            skipped: true,
                        };
                        self.cursors.insert(path.clone(), skipped);
                        continue;
                    }
                    0
                }
                None => 0, // a session that began since the last tick
            };
            if offset == len {
                continue;
            }
            let read = read_records(path, offset, |record| {
                let record = record.and_then(|r| {
                    if r.observation.at > latest {
                        Err(CorruptRecord::BadDate(r.observation.at))
                    } else {
                        Ok(r)
                    }
                });
                match record {
                    Ok(record) => match registry.observe_journaled(record.observation) {
                        Ok(ObserveOutcome::Duplicate) => stats.duplicates += 1,
                        Ok(_) => stats.applied += 1,
                        Err(e) => {
                            stats.corrupt += 1;
                            tracing::debug!(error = %e, file = %path.display(), "journal record rejected");
                        }
                    },
                    Err(e) => {
                        stats.corrupt += 1;
                        tracing::debug!(error = %e, file = %path.display(), "journal record skipped");
                    }
                }
            });
            let Ok(mut end) = read else {
                continue;
            };
            if end < len && age_of(meta, now) > COMPACT_QUIET {
                // A line with no newline in a file nobody has written for a while: torn.
                stats.corrupt += 1;
                end = len;
            }
            self.cursors.insert(
                path.clone(),
                Cursor {
                    ino,
                    offset: end,
                    skipped: false,
                },
            );
        }
    }

    fn worth_replaying_at_start(
        &self,
        path: &Path,
        meta: &fs::Metadata,
        now: SystemTime,
        ttl: Duration,
        ended_ttl: Duration,
    ) -> bool {
        let age = age_of(meta, now);
        let Some(last) = last_record(path) else {
            // Nothing readable at its end: replay it, and let each line speak for itself.
            return age < ttl;
        };
        if last.observation.event == EventKind::SessionEnd {
            // A session that ended cleanly: only worth showing during its ended linger.
            return age < ended_ttl;
        }
        if age < ttl {
            return true;
        }
        last.observation
            .pid
            .is_some_and(|pid| (self.probe)(pid, last.observation.at))
    }

    /// Removes old journals, compacts large quiet ones that were applied in full, keeps the
    /// folder within its cap, and logs drops the hooks recorded.
    fn maintain(&mut self, now: SystemTime, stats: &mut ReplayStats) {
        let mut files = journal_files(&self.dir);
        files.retain(|(path, meta)| {
            if age_of(meta, now) > MAX_AGE && fs::remove_file(path).is_ok() {
                stats.removed_files += 1;
                self.cursors.remove(path);
                return false;
            }
            true
        });
        for (path, meta) in &files {
            let applied_in_full = self.cursors.get(path).is_some_and(|c| {
                !c.skipped && c.ino == os_fs::index_of(path, meta) && c.offset == meta.len()
            });
            if !applied_in_full
                || meta.len() <= MAX_FILE_BYTES
                || age_of(meta, now) <= COMPACT_QUIET
            {
                continue;
            }
            match rewrite_keeping(path, KEEP_HEAD, KEEP_TAIL, u64::MAX) {
                Ok(Some(done)) => {
                    stats.compacted_files += 1;
                    // What we wrote was applied; anything appended after it is read next tick.
                    self.cursors.insert(
                        path.clone(),
                        Cursor {
                            ino: done.ino,
                            offset: done.len,
                            skipped: false,
                        },
                    );
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, file = %path.display(), "journal compaction failed")
                }
            }
        }
        match enforce_cap(&self.dir, JournalCap::DEFAULT, None, "engine", now) {
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "journal cap could not be enforced"),
        }
        let present: std::collections::HashSet<PathBuf> = journal_files(&self.dir)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        self.cursors.retain(|p, _| present.contains(p));
        let (drops, read) = read_drops(&self.dir, self.drops_read);
        self.drops_read = read;
        for drop in drops {
            stats.dropped_files += drop.files;
            stats.dropped_records += drop.records;
            tracing::warn!(
                by = %drop.by,
                files = drop.files,
                records = drop.records,
                bytes = drop.bytes,
                at = ?drop.at,
                "journal_dropped: the journal reached its cap and dropped its oldest events"
            );
        }
        if stats.removed_files + stats.compacted_files > 0 {
            tracing::info!(
                removed = stats.removed_files,
                compacted = stats.compacted_files,
                "journal_maintained"
            );
        }
    }

    /// Writes [`STATUS_FILE`] when something changed since the last write.
    pub fn write_status(&mut self, registry: &SessionsRegistry) -> io::Result<()> {
        let unapplied = self.unapplied_bytes();
        let seqs = registry.applied_seqs();
        let now = (self.totals, unapplied, seqs);
        if self.last_status == Some(now) {
            return Ok(());
        }
        let status = ReplayStatus {
            pid: std::process::id(),
            at: Utc::now(),
            totals: self.totals,
            unapplied_bytes: unapplied,
            applied_seqs: seqs,
        };
        let body = serde_json::to_vec_pretty(&status).map_err(io::Error::other)?;
        create_private_dir(&self.dir).map_err(io::Error::other)?;
        crate::atomic_file::write(&self.dir.join(STATUS_FILE), &body).map_err(io::Error::other)?;
        self.last_status = Some(now);
        Ok(())
    }
}

fn age_of(meta: &fs::Metadata, now: SystemTime) -> Duration {
    meta.modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .unwrap_or_default()
}

/// The default liveness probe: the pid exists, is an agent, and started before the record.
pub fn agent_still_running(
    pid: u32,
    record_at: DateTime<Utc>,
    processes: &dyn AgentProcesses,
) -> bool {
    use crate::agent_pid::{classify, ProcKind, ProcessTable, SystemProcesses};
    let Some(info) = SystemProcesses.info(pid) else {
        return false;
    };
    if !matches!(
        classify(&SystemProcesses, pid, &info, processes),
        ProcKind::Native(_) | ProcKind::Launched(_)
    ) {
        return false;
    }
    match process_started_at(pid) {
        // A process that started after the record is another process under a recycled pid.
        Some(started) => started_before(started, record_at),
        None => true,
    }
}

/// Did a process that started at `started` exist when a record was made at `record_at` (two
/// seconds' slack for clock granularity)? Checked arithmetic: a record dated at the end of time
/// once made this overflow and panic, which stopped replay for the rest of the run.
pub fn started_before(started: DateTime<Utc>, record_at: DateTime<Utc>) -> bool {
    record_at
        .checked_add_signed(chrono::TimeDelta::seconds(2))
        .is_none_or(|limit| started <= limit)
}

/// When a process started (see [`crate::process::started_at`]).
pub fn process_started_at(pid: u32) -> Option<DateTime<Utc>> {
    crate::process::started_at(pid)
}

/// Starts the engine's journal replay: once at start, then whenever inotify says a journal
/// changed, and at the latest every [`REPLAY_SAFETY_TICK`]; each pass on a blocking thread (it
/// reads files), until `token` is cancelled.
pub fn spawn_replay(
    registry: Arc<SessionsRegistry>,
    paths: TrayPaths,
    processes: &'static dyn AgentProcesses,
    token: CancellationToken,
) -> JoinHandle<()> {
    spawn_replay_with(
        registry,
        JournalReplay::new(paths.journal_dir(), processes),
        REPLAY_SAFETY_TICK,
        token,
    )
}

/// [`spawn_replay`] with the replay and the safety tick given (tests).
pub fn spawn_replay_with(
    registry: Arc<SessionsRegistry>,
    replay: JournalReplay,
    safety_tick: Duration,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        // One wake-up waiting is enough: the pass it starts reads everything appended before
        // it, so a signal sent while one waits is dropped (see `JournalWatch`).
        let (wake_tx, wakes) = mpsc::channel(1);
        let dir = replay.dir.clone();
        // Watched before the first pass: a record appended between the pass and the watch
        // would otherwise wait for the safety tick.
        let mut watch = JournalWatch::start(&dir, wake_tx.clone());
        replay_loop(replay, wakes, safety_tick, token, move |current| {
            // The folder removed and made again, or no watch yet: watch (again) first.
            if !watch.watching(&dir) {
                watch = JournalWatch::start(&dir, wake_tx.clone());
            }
            replay_pass(Arc::clone(&registry), current)
        })
        .await;
    })
}

/// One pass on a blocking thread; `None` when the replay cannot go on.
async fn replay_pass(
    registry: Arc<SessionsRegistry>,
    mut current: JournalReplay,
) -> Option<JournalReplay> {
    let done = tokio::task::spawn_blocking(move || {
        // A bug that panics in one pass must not end the replay for the rest of the run.
        let stats = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            current.tick(&registry, SystemTime::now())
        }));
        if let Err(e) = current.write_status(&registry) {
            tracing::debug!(error = %e, "journal status not written");
        }
        (current, stats)
    })
    .await;
    match done {
        Ok((back, Ok(stats))) => {
            if stats.applied + stats.corrupt > 0 {
                tracing::info!(
                    applied = stats.applied,
                    corrupt = stats.corrupt,
                    skipped_files = stats.skipped_files,
                    "journal_replayed"
                );
            }
            Some(back)
        }
        Ok((back, Err(_))) => {
            tracing::error!("a journal replay pass panicked; the next pass goes on");
            Some(back)
        }
        Err(e) => {
            tracing::error!(error = %e, "journal replay stopped");
            None
        }
    }
}

/// When the replay runs a pass: once at once, then [`WAKE_SETTLE`] after a wake-up, and after
/// `safety_tick` with none. Nothing else wakes it: at rest (no hook appending) it sleeps for
/// `safety_tick`. `pass` takes the state and gives it back (`None`: stop).
async fn replay_loop<S, F, Fut>(
    state: S,
    mut wakes: mpsc::Receiver<()>,
    safety_tick: Duration,
    token: CancellationToken,
    mut pass: F,
) where
    F: FnMut(S) -> Fut,
    Fut: std::future::Future<Output = Option<S>>,
{
    let mut state = Some(state);
    let mut wakes_open = true;
    loop {
        let Some(current) = state.take() else {
            return;
        };
        tokio::select! {
            () = token.cancelled() => return,
            next = pass(current) => state = next,
        }
        let safety = tokio::time::sleep(safety_tick);
        tokio::pin!(safety);
        tokio::select! {
            () = token.cancelled() => return,
            () = &mut safety => {}
            got = wakes.recv(), if wakes_open => {
                wakes_open = got.is_some();
                // Let a burst of appends (a turn's hooks) end, then read them in one pass; what
                // woke meanwhile is read by that pass too.
                tokio::select! {
                    () = token.cancelled() => return,
                    () = tokio::time::sleep(WAKE_SETTLE) => {}
                }
                while wakes.try_recv().is_ok() {}
            }
        }
    }
}

/// inotify on the journal folder (the `notify` crate), waking the replay when a journal file
/// is created, written, renamed or removed. Opens and reads are not changes (the replay's own
/// reads would wake it again), nor is the status file the replay writes beside the journals.
struct JournalWatch {
    watcher: Option<notify::RecommendedWatcher>,
    /// The folder's inode when the watch was set: a folder removed and made again is a new
    /// inode the old watch does not see.
    ino: Option<u64>,
}

impl JournalWatch {
    fn start(dir: &Path, wake: mpsc::Sender<()>) -> Self {
        let none = JournalWatch {
            watcher: None,
            ino: None,
        };
        // The hook makes the folder on its first record; made here, it can be watched from the
        // start (private, as the hook makes it).
        if let Err(error) = create_private_dir(dir) {
            tracing::debug!(%error, "journal folder not made; replay polls until it is");
            return none;
        }
        let watcher = match crate::folder_wake::wake_on_change([dir], journal_file, wake) {
            Ok((watcher, failed)) if failed.is_empty() => watcher,
            Ok((_, failed)) => {
                let error = failed.into_iter().next().map(|(_, e)| e.to_string());
                tracing::warn!(
                    ?error,
                    "cannot watch the journal; replay polls every minute"
                );
                return none;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot watch the journal; replay polls every minute");
                return none;
            }
        };
        JournalWatch {
            watcher: Some(watcher),
            ino: FileId::of_path(dir).ok().map(|id| id.index),
        }
    }

    /// Still watching the folder that is there now.
    fn watching(&self, dir: &Path) -> bool {
        self.watcher.is_some() && FileId::of_path(dir).ok().map(|id| id.index) == self.ino
    }
}

/// Whether a change to `path` may mean records the replay has not read: a journal file, not the
/// status file the replay writes beside them.
fn journal_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".jsonl"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::journal::obs;
    use crate::journal::record::{append, encode_line, JournalRecord};
    use crate::model::Observation;
    use std::time::Instant;

    #[test]
    fn a_line_still_being_written_is_left_for_the_next_read() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("claude-s.jsonl");
        let rec = serde_json::to_string(&JournalRecord::new(obs("s", EventKind::Stop, "1"), false))
            .unwrap();
        fs::write(&path, format!("{rec}\n{}", &rec[..10])).unwrap();
        let (records, offset) = read_from(&path, 0).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(offset as usize, rec.len() + 1);
        fs::write(&path, format!("{rec}\ngarbage\n{rec}\n")).unwrap();
        let (records, _) = read_from(&path, 0).unwrap();
        assert_eq!(records.len(), 2, "a bad line is skipped, not fatal");
    }

    #[test]
    fn replay_applies_each_record_once_and_then_only_what_is_new() {
        // The app starts after a session ran with no app: the journal brings it back; records
        // that also came over the socket are not applied twice.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let registry = SessionsRegistry::new();
        append(
            &dir,
            &JournalRecord::new(obs("s1", EventKind::SessionStart, "a"), false),
        )
        .unwrap();
        append(
            &dir,
            &JournalRecord::new(obs("s1", EventKind::UserPromptSubmit, "b"), false),
        )
        .unwrap();
        let mut replay = JournalReplay::new(dir.clone(), &crate::agents::Adapters);
        let stats = replay.tick(&registry, SystemTime::now());
        assert_eq!(stats.applied, 2);
        assert_eq!(
            registry.get("s1").unwrap().state,
            crate::model::SessionState::Working
        );
        // The socket delivered the Stop already; the journal has it too.
        let stop = obs("s1", EventKind::Stop, "c");
        registry.observe(stop.clone()).unwrap();
        append(&dir, &JournalRecord::new(stop, false)).unwrap();
        let stats = replay.tick(&registry, SystemTime::now());
        assert_eq!((stats.applied, stats.duplicates), (0, 1));
        let stats = replay.tick(&registry, SystemTime::now());
        assert_eq!(stats, ReplayStats::default(), "nothing new, nothing read");
        assert_eq!(
            registry.get("s1").unwrap().state,
            crate::model::SessionState::Idle
        );
    }

    #[test]
    fn old_journals_are_replayed_at_start_only_while_their_agent_still_runs() {
        // Last week's sessions must not come back as ghosts; a long-idle live one must.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let mut alive = obs("alive", EventKind::Stop, "1");
        alive.pid = Some(4242);
        let mut dead = obs("dead", EventKind::Stop, "2");
        dead.pid = Some(4343);
        let ended = obs("ended", EventKind::SessionEnd, "3");
        for o in [alive, dead, ended] {
            append(&dir, &JournalRecord::new(o, false)).unwrap();
        }
        let later = SystemTime::now() + Duration::from_secs(3600);
        let registry = SessionsRegistry::new();
        let mut replay = JournalReplay::with_probe(dir, Arc::new(|pid, _| pid == 4242));
        let stats = replay.tick(&registry, later);
        assert_eq!(stats.skipped_files, 2);
        assert!(registry.get("alive").is_some());
        assert!(registry.get("dead").is_none());
        assert!(registry.get("ended").is_none());
    }

    #[test]
    fn a_session_that_began_after_the_start_is_replayed_from_its_first_line() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let registry = SessionsRegistry::new();
        let mut replay = JournalReplay::new(dir.clone(), &crate::agents::Adapters);
        replay.tick(&registry, SystemTime::now());
        append(
            &dir,
            &JournalRecord::new(obs("late", EventKind::SessionStart, "x"), false),
        )
        .unwrap();
        assert_eq!(replay.tick(&registry, SystemTime::now()).applied, 1);
        assert!(registry.get("late").is_some());
    }

    #[test]
    fn corrupt_lines_are_skipped_and_counted_and_the_rest_applied() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let line = |o: Observation| {
            String::from_utf8(encode_line(&JournalRecord::new(o, false)).unwrap()).unwrap()
        };
        let mut future = obs("s", EventKind::Stop, "3");
        future.at = Utc::now() + chrono::Duration::days(400);
        let mut ancient = obs("s", EventKind::Stop, "4");
        ancient.at = DateTime::<Utc>::MIN_UTC;
        let mut far = obs("s", EventKind::Stop, "4b");
        far.at = DateTime::<Utc>::MAX_UTC;
        let mut empty_id = obs("s", EventKind::Stop, "5");
        empty_id.session_id = " ".into();
        let text = [
            line(obs("s", EventKind::SessionStart, "1")),
            "{not json\n".into(),
            r#"{"v":1,"observation":{"session_id":"s","agent""#.to_string() + "\n",
            format!("{{\"v\":2,{}", &line(obs("s", EventKind::Stop, "2"))[7..]),
            line(future),
            line(ancient),
            line(far),
            line(empty_id),
            format!("{}\n", "x".repeat(MAX_RECORD + 10)),
            "\n   \n".into(),
            line(obs("s", EventKind::UserPromptSubmit, "6")),
            "{\"v\":1,\"observ".into(), // torn, at the very end of a quiet file
        ]
        .concat();
        fs::write(dir.join("claude-s.jsonl"), text).unwrap();
        let registry = SessionsRegistry::new();
        let mut replay = JournalReplay::with_probe(dir.clone(), Arc::new(|_, _| false));
        let stats = replay.tick(&registry, SystemTime::now() + COMPACT_QUIET * 2);
        assert_eq!(stats.applied, 2);
        assert_eq!(stats.corrupt, 9);
        assert_eq!(
            registry.get("s").unwrap().state,
            crate::model::SessionState::Working
        );
        assert_eq!(replay.unapplied_bytes(), 0, "the torn end is passed over");
    }

    #[test]
    fn a_torn_last_line_does_not_swallow_the_next_record() {
        // A writer died mid-line; the next hook's record is glued to the fragment.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        fs::write(dir.join("claude-s.jsonl"), "{\"v\":1,\"obs").unwrap();
        append(
            &dir,
            &JournalRecord::new(obs("s", EventKind::SessionStart, "1"), false),
        )
        .unwrap();
        let mut seen = Vec::new();
        read_records(&dir.join("claude-s.jsonl"), 0, |r| seen.push(r.is_ok())).unwrap();
        assert_eq!(seen, [false, true], "the fragment counted, the record read");
    }

    #[test]
    fn the_liveness_check_of_a_record_at_the_end_of_time_does_not_overflow() {
        // Was `record_at + 2s`, which panicked and stopped replay for the rest of the run.
        assert!(started_before(Utc::now(), DateTime::<Utc>::MAX_UTC));
        assert!(!started_before(
            Utc::now(),
            Utc::now() - chrono::Duration::seconds(60)
        ));
        let mut o = obs("s", EventKind::Stop, "1");
        o.at = DateTime::<Utc>::MAX_UTC;
        let line = encode_line(&JournalRecord::new(o, false)).unwrap();
        assert!(matches!(
            parse_line(&line[..line.len() - 1]),
            Err(CorruptRecord::BadDate(_))
        ));
    }

    #[test]
    fn the_newest_event_of_each_agent_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        append(
            &dir,
            &JournalRecord::new(obs("c1", EventKind::Stop, "1"), false),
        )
        .unwrap();
        let mut x = Observation::new("x1", Agent::Codex, EventKind::Interrupt, Utc::now());
        x.seq = Some("2".into());
        append(&dir, &JournalRecord::new(x, false)).unwrap();
        let last = last_event_per_agent(&dir);
        assert_eq!(last[&Agent::Claude].observation.event, EventKind::Stop);
        assert_eq!(last[&Agent::Codex].observation.event, EventKind::Interrupt);
    }

    #[test]
    fn a_live_agent_process_started_before_the_record_counts_and_a_younger_one_does_not() {
        // This test process is no agent: never counts.
        assert!(!agent_still_running(
            std::process::id(),
            Utc::now(),
            &crate::agents::Adapters
        ));
        let started = process_started_at(std::process::id());
        if cfg!(target_os = "linux") {
            let started = started.unwrap();
            let drift = (Utc::now() - started).num_seconds();
            assert!(
                (0..3600).contains(&drift),
                "this process started {drift}s ago"
            );
        }
    }

    /// The times (whole seconds from the start) at which a replay loop ran its passes over
    /// `secs` seconds of paused time, with a wake-up sent at each of `wake_at` (in ms).
    async fn replay_pass_times(secs: u64, wake_at: &[u64]) -> Vec<u64> {
        let start = tokio::time::Instant::now();
        let (wake_tx, wakes) = mpsc::channel(1);
        let token = CancellationToken::new();
        let passes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = passes.clone();
        let task = tokio::spawn(replay_loop(
            (),
            wakes,
            REPLAY_SAFETY_TICK,
            token.clone(),
            move |()| {
                seen.lock()
                    .unwrap()
                    .push(start.elapsed().as_millis() as u64);
                std::future::ready(Some(()))
            },
        ));
        for &ms in wake_at {
            tokio::time::sleep_until(start + Duration::from_millis(ms)).await;
            let _ = wake_tx.try_send(());
        }
        tokio::time::sleep_until(start + Duration::from_secs(secs)).await;
        token.cancel();
        task.await.unwrap();
        let times = passes.lock().unwrap().clone();
        times
    }

    #[tokio::test(start_paused = true)]
    async fn at_rest_the_replay_sleeps_for_its_safety_tick_not_every_two_seconds() {
        // Nothing appended for ten minutes (the tray at rest): a pass at start, then one a
        // minute at most. The replay used to look every 2 s: 300 passes in these ten minutes.
        let idle = replay_pass_times(600, &[]).await;
        assert!((1..=11).contains(&idle.len()), "passes at (ms) {idle:?}");
        // The positive control: a wake-up (a hook appended) brings a pass within the settle
        // time, long before the safety tick would.
        let woken = replay_pass_times(10, &[5_000]).await;
        assert_eq!(woken.len(), 2, "passes at (ms) {woken:?}");
        assert!(
            (5_000..=5_000 + WAKE_SETTLE.as_millis() as u64).contains(&woken[1]),
            "the woken pass came at {} ms",
            woken[1]
        );
        // A burst of wake-ups (a turn's hooks) inside the settle time is read in one pass.
        let burst = replay_pass_times(10, &[5_000, 5_050, 5_100, 5_150]).await;
        assert_eq!(burst.len(), 2, "passes at (ms) {burst:?}");
    }

    #[test]
    fn only_changes_to_journal_files_wake_the_replay() {
        use notify::event::{AccessKind, CreateKind, DataChange, ModifyKind};
        use notify::{Event, EventKind};
        let at = |kind, name: &str| Ok(Event::new(kind).add_path(PathBuf::from("/j").join(name)));
        let wakes_the_replay =
            |event: &notify::Result<Event>| crate::folder_wake::change_wakes(event, journal_file);
        let appended = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        // A hook appended, or began a session's file: read it.
        assert!(wakes_the_replay(&at(appended, "claude-s1.jsonl")));
        assert!(wakes_the_replay(&at(
            EventKind::Create(CreateKind::File),
            "codex-s2.jsonl"
        )));
        // The replay's own reads and the status file it writes must not wake it again.
        assert!(!wakes_the_replay(&at(
            EventKind::Access(AccessKind::Any),
            "claude-s1.jsonl"
        )));
        assert!(!wakes_the_replay(&at(appended, STATUS_FILE)));
        assert!(!wakes_the_replay(&at(
            EventKind::Create(CreateKind::File),
            ".status.json.tmp"
        )));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_record_appended_while_the_engine_runs_is_applied_at_once_not_at_the_safety_tick() {
        // The socket failed (a wedged or restarting listener) and the hook's record is only in
        // the journal: the running engine applies it when inotify says the file grew, not at
        // its safety tick (here three hours, so only inotify can bring it in time).
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        let registry = Arc::new(SessionsRegistry::new());
        let token = CancellationToken::new();
        let task = spawn_replay_with(
            registry.clone(),
            JournalReplay::with_probe(dir.clone(), Arc::new(|_, _| false)),
            Duration::from_secs(3 * 3600),
            token.clone(),
        );
        // The first pass is done once it wrote its status.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !dir.join(STATUS_FILE).exists() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(dir.join(STATUS_FILE).exists(), "the first pass ran");
        let applied_within = |id: &'static str| {
            let registry = registry.clone();
            async move {
                let deadline = Instant::now() + Duration::from_secs(10);
                while registry.get(id).is_none() && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                registry.get(id).is_some()
            }
        };
        // A new session's file (created), then a second record in it (appended), then another.
        append(
            &dir,
            &JournalRecord::new(obs("live-1", EventKind::SessionStart, "l1"), false),
        )
        .unwrap();
        assert!(applied_within("live-1").await, "a new journal file is read");
        append(
            &dir,
            &JournalRecord::new(obs("live-1", EventKind::UserPromptSubmit, "l2"), false),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while registry.get("live-1").unwrap().state != crate::model::SessionState::Working
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            registry.get("live-1").unwrap().state,
            crate::model::SessionState::Working,
            "an append to a file already read is read"
        );
        append(
            &dir,
            &JournalRecord::new(obs("live-2", EventKind::SessionStart, "l3"), false),
        )
        .unwrap();
        assert!(applied_within("live-2").await, "and the next session's too");
        token.cancel();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the replay stops when cancelled")
            .unwrap();
    }
}
