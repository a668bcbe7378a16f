//! The hook journal: what the hooks heard, kept on disk so nothing is lost while no app runs.
//!
//! Every `agent-tray hook` appends its observation here **before** it tries the socket: with no
//! app running, a wedged one, or a send that runs out of its budget, the event is still on disk,
//! and the engine replays it when it (re)starts and on every tick while it runs. Records carry
//! the hook's sequence id and the registry drops a sequence id it has applied already, so a
//! record that also came over the socket is applied once.
//!
//! Why it is shaped this way:
//! - **One append-only file per session** (`<agent>-<session id>.jsonl`): an append of one short
//!   line with `O_APPEND` is a single `write`, so hooks running in parallel for the same session
//!   never interleave inside a line; and a session's history can be dropped as a whole.
//! - **Private**: the folder is 0700 and the files 0600. Records hold only what an observation
//!   holds (ids, paths, the model, a tool's name): never prompt text, tool input or replies.
//! - **The engine reads only what was appended**: a cursor (inode + offset) per file; a tick
//!   costs a `readdir` and a `stat` per file when nothing changed.
//! - **Replay at start is selective**: replaying a week of journals would raise ghosts that the
//!   TTL then takes five minutes to clear. A file is replayed at start when it was written within
//!   the session TTL, or when the process of its last record is still a live agent that started
//!   before that record (so not a recycled pid); the rest is skipped, never deleted early.
//! - **Bounded**: files untouched for [`MAX_AGE`] are removed; a file over [`MAX_FILE_BYTES`]
//!   that has been quiet for a while is compacted to its first records (SessionStart carries the
//!   model) and its last ones; past [`MAX_FILES`] or [`MAX_TOTAL_BYTES`] the oldest go first.
//!   Compaction rewrites through a temp file and a rename; a hook appending in that instant
//!   writes to the replaced file, which costs that record only if its socket send failed too.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::model::{Agent, EventKind, Observation};
use crate::paths::{create_private_dir, TrayPaths};
use crate::registry::{ObserveOutcome, SessionsRegistry};

/// The record format's version.
pub const RECORD_VERSION: u32 = 1;
/// How often the engine looks for records it has not applied.
pub const REPLAY_INTERVAL: Duration = Duration::from_secs(2);
/// Compaction and removal run every this many replay ticks.
const COMPACT_EVERY_TICKS: u64 = 30;
/// Journals untouched this long are removed.
pub const MAX_AGE: Duration = Duration::from_secs(3 * 24 * 3600);
/// A journal larger than this is compacted once it has been quiet for [`COMPACT_QUIET`].
pub const MAX_FILE_BYTES: u64 = 512 * 1024;
const COMPACT_QUIET: Duration = Duration::from_secs(30);
/// Records kept from the start and from the end of a compacted journal.
const KEEP_HEAD: usize = 2;
const KEEP_TAIL: usize = 200;
/// At most this many journals, and this many bytes in all; the oldest go first.
pub const MAX_FILES: usize = 2000;
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
/// A record line longer than this is skipped on replay (a hook never writes one).
const MAX_RECORD: usize = 64 * 1024;

/// One line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalRecord {
    pub v: u32,
    pub observation: Observation,
    /// The hook's stdin was longer than it reads: the payload was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

impl JournalRecord {
    pub fn new(observation: Observation, cut: bool) -> Self {
        JournalRecord {
            v: RECORD_VERSION,
            observation,
            cut,
        }
    }
}

/// The file name of a session's journal. Session ids are UUIDs in practice; anything else is
/// made safe for a file name and keeps a hash of the original so two ids never share a file.
pub fn file_name(agent: Agent, session_id: &str) -> String {
    let mut safe: String = session_id
        .chars()
        .take(128)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.starts_with('.') {
        safe.replace_range(0..1, "_");
    }
    if safe != session_id {
        safe.push_str(&format!("-{:016x}", fnv1a(session_id.as_bytes())));
    }
    format!("{}-{}.jsonl", agent.as_str(), safe)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The agent a journal file belongs to, from its name.
pub fn agent_of_file(name: &str) -> Option<Agent> {
    let (agent, _) = name.split_once('-')?;
    if !name.ends_with(".jsonl") {
        return None;
    }
    agent.parse().ok()
}

/// Appends one record to its session's journal (creating the folder 0700 and the file 0600).
pub fn append(dir: &Path, record: &JournalRecord) -> io::Result<PathBuf> {
    let path = dir.join(file_name(
        record.observation.agent,
        &record.observation.session_id,
    ));
    let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
    line.push(b'\n');
    let open = || {
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&path)
    };
    let mut file = match open() {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_private_dir(dir).map_err(io::Error::other)?;
            open()?
        }
        Err(e) => return Err(e),
    };
    // One write of the whole line: with O_APPEND the kernel places it at the end atomically.
    file.write_all(&line)?;
    Ok(path)
}

/// Reads the complete records of `path` from byte `offset`; returns them and the offset just
/// past the last complete line (a line still being written is left for the next read).
pub fn read_from(path: &Path, offset: u64) -> io::Result<(Vec<JournalRecord>, u64)> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let complete = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => i + 1,
        None => 0,
    };
    let records = parse_lines(&bytes[..complete]);
    Ok((records, offset + complete as u64))
}

/// Parses journal lines, skipping any that are not a record of a version we read.
pub fn parse_lines(bytes: &[u8]) -> Vec<JournalRecord> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty() && l.len() <= MAX_RECORD)
        .filter_map(|l| serde_json::from_slice::<JournalRecord>(l).ok())
        .filter(|r| r.v == RECORD_VERSION)
        .collect()
}

/// The last complete record of a journal, read from its tail only.
pub fn last_record(path: &Path) -> Option<JournalRecord> {
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(MAX_RECORD as u64);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let line = text.rsplit(|b| *b == b'\n').next()?;
    parse_lines(line).pop()
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

fn journal_files(dir: &Path) -> Vec<(PathBuf, fs::Metadata)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.ends_with(".jsonl"))
        })
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| (e.path(), meta))
        })
        .collect()
}

/// Where the replay stands in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    ino: u64,
    offset: u64,
}

/// What a replay tick did, for logs and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReplayStats {
    pub applied: usize,
    pub duplicates: usize,
    pub skipped_files: usize,
    pub removed_files: usize,
    pub compacted_files: usize,
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
    ticks: u64,
    probe: Arc<LivenessProbe>,
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
    pub fn new(dir: PathBuf) -> Self {
        Self::with_probe(dir, Arc::new(agent_still_running))
    }

    pub fn with_probe(dir: PathBuf, probe: Arc<LivenessProbe>) -> Self {
        JournalReplay {
            dir,
            cursors: HashMap::new(),
            started: false,
            ticks: 0,
            probe,
        }
    }

    /// One pass: replay what is new, and now and then compact and remove old journals.
    pub fn tick(&mut self, registry: &SessionsRegistry, now: SystemTime) -> ReplayStats {
        let mut stats = ReplayStats::default();
        if self.ticks.is_multiple_of(COMPACT_EVERY_TICKS) {
            self.maintain(now, &mut stats);
        }
        self.ticks += 1;
        let first = !self.started;
        self.started = true;
        let files = journal_files(&self.dir);
        let present: std::collections::HashSet<&PathBuf> = files.iter().map(|(p, _)| p).collect();
        self.cursors.retain(|p, _| present.contains(p));
        let ttl = registry.config().session_ttl;
        let ended_ttl = registry.config().ended_ttl;
        for (path, meta) in &files {
            let ino = meta.ino();
            let len = meta.len();
            let offset = match self.cursors.get(path) {
                Some(c) if c.ino == ino && c.offset <= len => c.offset,
                Some(_) => 0, // replaced (compacted) or truncated: start over; seqs de-duplicate
                None if first => {
                    if !self.worth_replaying_at_start(path, meta, now, ttl, ended_ttl) {
                        stats.skipped_files += 1;
                        self.cursors
                            .insert(path.clone(), Cursor { ino, offset: len });
                        continue;
                    }
                    0
                }
                None => 0, // a session that began since the last tick
            };
            if offset == len {
                continue;
            }
            let Ok((records, new_offset)) = read_from(path, offset) else {
                continue;
            };
            self.cursors.insert(
                path.clone(),
                Cursor {
                    ino,
                    offset: new_offset,
                },
            );
            for record in records {
                match registry.observe(record.observation) {
                    Ok(ObserveOutcome::Duplicate) => stats.duplicates += 1,
                    Ok(_) => stats.applied += 1,
                    Err(e) => {
                        tracing::debug!(error = %e, file = %path.display(), "journal record rejected")
                    }
                }
            }
        }
        stats
    }

    fn worth_replaying_at_start(
        &self,
        path: &Path,
        meta: &fs::Metadata,
        now: SystemTime,
        ttl: Duration,
        ended_ttl: Duration,
    ) -> bool {
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        let Some(last) = last_record(path) else {
            return false;
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

    /// Removes old journals, compacts large quiet ones, and keeps the folder within its bounds.
    fn maintain(&mut self, now: SystemTime, stats: &mut ReplayStats) {
        let mut files = journal_files(&self.dir);
        let age_of = |meta: &fs::Metadata| {
            meta.modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .unwrap_or_default()
        };
        files.retain(|(path, meta)| {
            if age_of(meta) > MAX_AGE && fs::remove_file(path).is_ok() {
                stats.removed_files += 1;
                return false;
            }
            true
        });
        for (path, meta) in &mut files {
            if meta.len() > MAX_FILE_BYTES && age_of(meta) > COMPACT_QUIET {
                match compact(path) {
                    Ok(()) => {
                        stats.compacted_files += 1;
                        if let Ok(m) = fs::metadata(&path) {
                            // Already applied up to here; the rewritten file starts anew.
                            self.cursors.insert(
                                path.clone(),
                                Cursor {
                                    ino: m.ino(),
                                    offset: m.len(),
                                },
                            );
                            *meta = m;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, file = %path.display(), "journal compaction failed")
                    }
                }
            }
        }
        // Oldest first; drop until within the bounds.
        files.sort_by_key(|(_, m)| m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
        let mut total: u64 = files.iter().map(|(_, m)| m.len()).sum();
        let mut count = files.len();
        for (path, meta) in &files {
            if count <= MAX_FILES && total <= MAX_TOTAL_BYTES {
                break;
            }
            if fs::remove_file(path).is_ok() {
                stats.removed_files += 1;
                count -= 1;
                total = total.saturating_sub(meta.len());
                self.cursors.remove(path);
            }
        }
        if stats.removed_files + stats.compacted_files > 0 {
            tracing::info!(
                removed = stats.removed_files,
                compacted = stats.compacted_files,
                "journal_maintained"
            );
        }
    }
}

/// Rewrites a journal keeping its first and last records.
fn compact(path: &Path) -> io::Result<()> {
    let (records, _) = read_from(path, 0)?;
    if records.len() <= KEEP_HEAD + KEEP_TAIL {
        return Ok(());
    }
    let tail_start = records.len() - KEEP_TAIL;
    let mut out = Vec::new();
    for record in records[..KEEP_HEAD].iter().chain(&records[tail_start..]) {
        serde_json::to_writer(&mut out, record).map_err(io::Error::other)?;
        out.push(b'\n');
    }
    let tmp = path.with_extension("jsonl.compact");
    {
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&out)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)
}

/// The default liveness probe: the pid exists, is an agent, and started before the record.
pub fn agent_still_running(pid: u32, record_at: DateTime<Utc>) -> bool {
    use crate::agent_pid::{classify, ProcKind, ProcessTable, SystemProcesses};
    let Some(info) = SystemProcesses.info(pid) else {
        return false;
    };
    if !matches!(
        classify(&SystemProcesses, pid, &info),
        ProcKind::Native(_) | ProcKind::Launched(_)
    ) {
        return false;
    }
    match process_started_at(pid) {
        // A process that started after the record is another process under a recycled pid.
        Some(started) => started <= record_at + chrono::Duration::seconds(2),
        None => true,
    }
}

/// When a process started (see [`crate::process::started_at`]).
pub fn process_started_at(pid: u32) -> Option<DateTime<Utc>> {
    crate::process::started_at(pid)
}

/// Starts the engine's journal replay: once at start, then every [`REPLAY_INTERVAL`], each pass
/// on a blocking thread (it reads files), until `token` is cancelled.
pub fn spawn_replay(
    registry: Arc<SessionsRegistry>,
    paths: TrayPaths,
    token: CancellationToken,
) -> JoinHandle<()> {
    spawn_replay_with(
        registry,
        JournalReplay::new(paths.journal_dir()),
        REPLAY_INTERVAL,
        token,
    )
}

/// [`spawn_replay`] with the replay and the interval given (tests).
pub fn spawn_replay_with(
    registry: Arc<SessionsRegistry>,
    replay: JournalReplay,
    interval: Duration,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut replay = Some(replay);
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                _ = ticker.tick() => {}
            }
            let Some(mut current) = replay.take() else {
                return;
            };
            let registry = Arc::clone(&registry);
            let done = tokio::task::spawn_blocking(move || {
                let stats = current.tick(&registry, SystemTime::now());
                (current, stats)
            })
            .await;
            match done {
                Ok((back, stats)) => {
                    if stats.applied > 0 {
                        tracing::info!(
                            applied = stats.applied,
                            skipped_files = stats.skipped_files,
                            "journal_replayed"
                        );
                    }
                    replay = Some(back);
                }
                Err(e) => {
                    // A panic in a pass is a bug; the replay stops rather than loop on it.
                    tracing::error!(error = %e, "journal replay stopped");
                    return;
                }
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn obs(session: &str, event: EventKind, seq: &str) -> Observation {
        let mut o = Observation::new(session, Agent::Claude, event, Utc::now());
        o.seq = Some(seq.to_string());
        o.cwd = Some("/w".into());
        o
    }

    #[test]
    fn the_journal_is_private_and_one_file_per_session() {
        // Other users on the machine must not read which projects the user works on.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        append(
            &dir,
            &JournalRecord::new(obs("s1", EventKind::SessionStart, "1"), false),
        )
        .unwrap();
        append(
            &dir,
            &JournalRecord::new(obs("s1", EventKind::Stop, "2"), false),
        )
        .unwrap();
        append(
            &dir,
            &JournalRecord::new(obs("s2", EventKind::Stop, "3"), true),
        )
        .unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let files = journal_files(&dir);
        assert_eq!(files.len(), 2);
        for (path, _) in &files {
            assert_eq!(mode(path), 0o600, "{}", path.display());
        }
        let (records, end) = read_from(&dir.join(file_name(Agent::Claude, "s1")), 0).unwrap();
        assert_eq!(records.len(), 2);
        assert!(end > 0);
        assert!(
            last_record(&dir.join(file_name(Agent::Claude, "s2")))
                .unwrap()
                .cut
        );
    }

    #[test]
    fn hostile_session_ids_never_escape_the_folder_or_collide() {
        let a = file_name(Agent::Claude, "../../etc/passwd");
        let b = file_name(Agent::Claude, "__.._etc_passwd");
        assert!(!a.contains('/'));
        assert_ne!(a, b);
        assert!(!file_name(Agent::Codex, ".hidden").starts_with('.'));
        assert_eq!(
            file_name(Agent::Codex, "01a228b2-64f3"),
            "codex-01a228b2-64f3.jsonl"
        );
        assert_eq!(agent_of_file(&a), Some(Agent::Claude));
        assert!(file_name(Agent::Claude, &"x".repeat(5000)).len() < 200);
    }

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
        let mut replay = JournalReplay::new(dir.clone());
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
        let mut replay = JournalReplay::new(dir.clone());
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
    fn large_quiet_journals_are_compacted_and_old_ones_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let mut start = obs("big", EventKind::SessionStart, "start");
        start.model = Some("m".into());
        append(&dir, &JournalRecord::new(start, false)).unwrap();
        let mut i = 0;
        while fs::metadata(dir.join(file_name(Agent::Claude, "big")))
            .unwrap()
            .len()
            <= MAX_FILE_BYTES
        {
            append(
                &dir,
                &JournalRecord::new(obs("big", EventKind::PreToolUse, &format!("t{i}")), false),
            )
            .unwrap();
            i += 1;
        }
        append(
            &dir,
            &JournalRecord::new(obs("old", EventKind::Stop, "o"), false),
        )
        .unwrap();
        let registry = SessionsRegistry::new();
        let mut replay = JournalReplay::with_probe(dir.clone(), Arc::new(|_, _| false));
        // Pretend four days passed: "old" (and "big") are past MAX_AGE... so keep "big" fresh.
        let now = SystemTime::now() + Duration::from_secs(60);
        let stats = replay.tick(&registry, now);
        assert_eq!(stats.compacted_files, 1);
        let big = dir.join(file_name(Agent::Claude, "big"));
        let (records, _) = read_from(&big, 0).unwrap();
        assert_eq!(records.len(), KEEP_HEAD + KEEP_TAIL);
        assert_eq!(
            records[0].observation.model.as_deref(),
            Some("m"),
            "SessionStart is kept"
        );
        assert_eq!(
            records.last().unwrap().observation.seq.as_deref(),
            Some(&*format!("t{}", i - 1))
        );
        let mut replay = JournalReplay::with_probe(dir.clone(), Arc::new(|_, _| false));
        let stats = replay.tick(
            &registry,
            SystemTime::now() + MAX_AGE + Duration::from_secs(60),
        );
        assert_eq!(stats.removed_files, 2);
        assert!(journal_files(&dir).is_empty());
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
        assert!(!agent_still_running(std::process::id(), Utc::now()));
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
}
