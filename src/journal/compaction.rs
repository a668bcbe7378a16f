//! The journal folder's upkeep: which files are journals, rewriting one down to its first and
//! last records under an exclusive lock (compaction by the engine, the cap by the hook and the
//! engine), the cap itself and the drop log it writes. Apart from the record so the hook's
//! append and the engine's maintenance share it without either reaching into the other.

use crate::os_fs::{self, FileId, LockKind};
use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Journals untouched this long are removed.
pub const MAX_AGE: Duration = Duration::from_secs(3 * 24 * 3600);
/// A fully applied journal larger than this is compacted once it has been quiet for
/// [`COMPACT_QUIET`].
pub const MAX_FILE_BYTES: u64 = 512 * 1024;
/// How long a journal must go unwritten before it is compacted, or before a line at its end that
/// never got its newline counts as torn.
pub const COMPACT_QUIET: Duration = Duration::from_secs(30);
/// Records kept from the start and from the end of a compacted journal.
pub(super) const KEEP_HEAD: usize = 2;
pub(super) const KEEP_TAIL: usize = 200;
/// At most this many journals, and this many bytes in all; past either the oldest go first.
/// A record is about 300 bytes; a heavy week (three sessions at once, eight hours a day, an
/// event every three seconds each: about 200,000 events) is about 60 MB, so this keeps a heavy
/// week with room to spare.
pub const MAX_FILES: usize = 2000;
pub const MAX_TOTAL_BYTES: u64 = 128 * 1024 * 1024;
/// How long a rewrite waits for the exclusive lock before giving up until next time.
const REWRITE_LOCK_WAIT: Duration = Duration::from_millis(500);
/// Where the cap records its drops (not ending in `.jsonl`, so never taken for a journal).
pub const DROP_LOG: &str = "dropped.log";
/// The drop log is rotated past this size (a line is ~100 bytes; a drop is rare).
const MAX_DROP_LOG_BYTES: u64 = 256 * 1024;

/// Takes a `kind` lock on `file`, trying until `wait` has passed. The lock goes with the open
/// file.
pub(super) fn lock_within(file: &File, kind: LockKind, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        if os_fs::try_lock(file, kind) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What a rewrite did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rewritten {
    pub(super) ino: u64,
    pub(super) len: u64,
    dropped_lines: u64,
    dropped_bytes: u64,
}

/// Rewrites `path` keeping its first `head` lines and its last lines (at most `tail_lines`,
/// at most `tail_bytes`), under an exclusive lock so no concurrent append is lost. `None`
/// when there was nothing to drop or the lock was not free in time.
pub(super) fn rewrite_keeping(
    path: &Path,
    head: usize,
    tail_lines: usize,
    tail_bytes: u64,
) -> io::Result<Option<Rewritten>> {
    rewrite_keeping_then(path, head, tail_lines, tail_bytes, || {})
}

/// [`rewrite_keeping`], calling `before_rename` between writing the copy and renaming it (where
/// a test appends as a hook that could not get its lock in time would).
fn rewrite_keeping_then(
    path: &Path,
    head: usize,
    tail_lines: usize,
    tail_bytes: u64,
    before_rename: impl FnOnce(),
) -> io::Result<Option<Rewritten>> {
    let file = os_fs::private_options().read(true).open(path)?;
    if !lock_within(&file, LockKind::Exclusive, REWRITE_LOCK_WAIT) {
        return Ok(None);
    }
    if FileId::of_path(path)? != FileId::of_file(&file)? {
        return Ok(None); // replaced meanwhile: the next pass looks at the new one
    }
    let mut reader = BufReader::new(&file);
    let mut kept_head: Vec<Vec<u8>> = Vec::new();
    let mut tail: VecDeque<Vec<u8>> = VecDeque::new();
    let mut tail_size: u64 = 0;
    let (mut dropped_lines, mut dropped_bytes) = (0u64, 0u64);
    let mut read_len = 0u64;
    loop {
        let mut line = Vec::new();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        read_len += n as u64;
        if line.last() != Some(&b'\n') {
            line.push(b'\n'); // a torn last line stays (and is counted when read)
        }
        if kept_head.len() < head {
            kept_head.push(line);
            continue;
        }
        tail_size += line.len() as u64;
        tail.push_back(line);
        while tail.len() > tail_lines || (tail_size > tail_bytes && tail.len() > 1) {
            if let Some(old) = tail.pop_front() {
                tail_size -= old.len() as u64;
                dropped_lines += 1;
                dropped_bytes += old.len() as u64;
            }
        }
    }
    if dropped_lines == 0 {
        return Ok(None);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Not `atomic_file`: this rewrite streams lines, must learn the new file's inode for the
    // cursor, and keeps the old file's flock until after the rename (see above).
    let tmp = path.with_file_name(format!(".{name}.rewrite"));
    let mut len = 0u64;
    let ino = {
        let mut out = os_fs::private_options()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&tmp)?;
        let mut writer = io::BufWriter::new(&mut out);
        for line in kept_head.iter().chain(&tail) {
            writer.write_all(line)?;
            len += line.len() as u64;
        }
        writer.flush()?;
        drop(writer);
        out.sync_all()?;
        FileId::of_file(&out)?.index
    };
    before_rename();
    fs::rename(&tmp, path)?;
    // A hook waits for our lock only briefly (it must not stall its agent), then appends to the
    // file it opened: whatever reached the old file after we read it would go with it. Copied
    // to the new file after our rename; a hook whose line lands in the old file after this
    // look sees the path names another file and appends it again ([`append_line`]). These
    // lines are after `len`, so the engine reads and applies them on its next tick.
    let mut late = Vec::new();
    let mut at = read_len;
    loop {
        let mut buf = [0u8; 16 * 1024];
        let n = os_fs::read_at(&file, &mut buf, at)?;
        if n == 0 {
            break;
        }
        late.extend_from_slice(&buf[..n]);
        at += n as u64;
    }
    if !late.is_empty() {
        let mut new = os_fs::private_options().append(true).open(path)?;
        new.write_all(&late)?;
    }
    // The lock on the old file is released here, after the rename: a hook that waited for it
    // finds the path names the new file and appends there.
    drop(file);
    Ok(Some(Rewritten {
        ino,
        len,
        dropped_lines,
        dropped_bytes,
    }))
}

/// One entry of the drop log: the cap took these away.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropRecord {
    pub at: Option<DateTime<Utc>>,
    /// `hook` or `engine`.
    pub by: String,
    /// Whole journals removed (oldest first).
    pub files: u64,
    /// Records cut from the start of a journal larger than the cap on its own.
    pub records: u64,
    pub bytes: u64,
}

/// How much journal the folder may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalCap {
    pub max_bytes: u64,
    pub max_files: usize,
}

impl JournalCap {
    /// [`MAX_TOTAL_BYTES`] and [`MAX_FILES`].
    pub const DEFAULT: JournalCap = JournalCap {
        max_bytes: MAX_TOTAL_BYTES,
        max_files: MAX_FILES,
    };
}

/// Keeps the folder within `cap`: removes the oldest journals (never `current`, the one being
/// written); if `current` alone is still over, cuts its oldest records down to half the cap.
/// Records what it dropped in the drop log.
pub fn enforce_cap(
    dir: &Path,
    cap: JournalCap,
    current: Option<&Path>,
    by: &str,
    now: SystemTime,
) -> io::Result<Option<DropRecord>> {
    let mut files = journal_files(dir);
    let mut total: u64 = files.iter().map(|(_, m)| m.len()).sum();
    let mut count = files.len();
    if total <= cap.max_bytes && count <= cap.max_files {
        return Ok(None);
    }
    files.sort_by_key(|(_, m)| m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
    let mut dropped = DropRecord {
        at: Some(DateTime::<Utc>::from(now)),
        by: by.to_string(),
        ..DropRecord::default()
    };
    for (path, meta) in &files {
        if total <= cap.max_bytes && count <= cap.max_files {
            break;
        }
        if Some(path.as_path()) == current {
            continue;
        }
        if fs::remove_file(path).is_ok() {
            dropped.files += 1;
            dropped.bytes += meta.len();
            count -= 1;
            total = total.saturating_sub(meta.len());
        }
    }
    if total > cap.max_bytes {
        if let Some(current) = current {
            if let Some(done) = rewrite_keeping(current, KEEP_HEAD, usize::MAX, cap.max_bytes / 2)?
            {
                dropped.records += done.dropped_lines;
                dropped.bytes += done.dropped_bytes;
            }
        }
    }
    if dropped.files + dropped.records == 0 {
        return Ok(None);
    }
    record_drop(dir, &dropped)?;
    Ok(Some(dropped))
}

fn record_drop(dir: &Path, dropped: &DropRecord) -> io::Result<()> {
    let path = dir.join(DROP_LOG);
    if fs::metadata(&path).is_ok_and(|m| m.len() > MAX_DROP_LOG_BYTES) {
        let _ = fs::rename(&path, dir.join(format!("{DROP_LOG}.1")));
    }
    let mut line = serde_json::to_vec(dropped).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut file = os_fs::private_options()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(&line)
}

/// Every drop recorded in the drop log from byte `offset`, and the offset past the last one.
pub fn read_drops(dir: &Path, offset: u64) -> (Vec<DropRecord>, u64) {
    let Ok(text) = fs::read(dir.join(DROP_LOG)) else {
        return (Vec::new(), 0);
    };
    let start = if (offset as usize) <= text.len() {
        offset as usize
    } else {
        0 // rotated: start over
    };
    let end = text[start..]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(start, |i| start + i + 1);
    let drops = text[start..end]
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    (drops, end as u64)
}

/// The sum of every drop recorded in the drop log.
pub fn drop_totals(dir: &Path) -> DropRecord {
    read_drops(dir, 0)
        .0
        .into_iter()
        .fold(DropRecord::default(), |mut sum, d| {
            sum.at = sum.at.max(d.at);
            sum.files += d.files;
            sum.records += d.records;
            sum.bytes += d.bytes;
            sum
        })
}

pub(super) fn journal_files(dir: &Path) -> Vec<(PathBuf, fs::Metadata)> {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::journal::obs;
    use crate::journal::record::{append, file_name, JournalRecord, APPEND_LOCK_WAIT};
    use crate::journal::replay::{health_notes, read_from, JournalReplay};
    use crate::model::{Agent, EventKind};
    use crate::registry::SessionsRegistry;
    use std::sync::Arc;

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Wine 8 cannot rename over a file held open; Windows 10 can (POSIX rename semantics, which std uses)"
    )]
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

    /// Appends `n` tool events to session `id` (after a SessionStart with a model) and a Stop.
    fn long_session(dir: &Path, id: &str, n: usize) -> PathBuf {
        let mut start = obs(id, EventKind::SessionStart, &format!("{id}-start"));
        start.model = Some("m".into());
        append(dir, &JournalRecord::new(start, false)).unwrap();
        let prompt = obs(id, EventKind::UserPromptSubmit, &format!("{id}-prompt"));
        append(dir, &JournalRecord::new(prompt, false)).unwrap();
        for i in 0..n {
            let o = obs(id, EventKind::PreToolUse, &format!("{id}-t{i}"));
            append(dir, &JournalRecord::new(o, false)).unwrap();
        }
        let stop = obs(id, EventKind::Stop, &format!("{id}-stop"));
        append(dir, &JournalRecord::new(stop, false)).unwrap()
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Wine 8 cannot rename over a file held open; Windows 10 can (POSIX rename semantics, which std uses)"
    )]
    fn a_large_quiet_backlog_is_applied_in_full_before_it_is_compacted() {
        // The bug: at start a journal over 512 KiB, quiet for 30 s, was compacted first and its
        // cursor set to the end, so a whole session run while no app ran never came back.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let path = long_session(&dir, "long", 3500);
        assert!(fs::metadata(&path).unwrap().len() > MAX_FILE_BYTES);
        let registry = SessionsRegistry::new();
        let mut replay = JournalReplay::with_probe(dir.clone(), Arc::new(|_, _| false));
        let stats = replay.tick(&registry, SystemTime::now() + COMPACT_QUIET * 2);
        assert_eq!(stats.applied, 3503, "every record applied");
        assert_eq!(
            registry.get("long").unwrap().state,
            crate::model::SessionState::Idle,
            "in its last state"
        );
        assert_eq!(stats.compacted_files, 1, "and compacted after that");
        assert_eq!(replay.unapplied_bytes(), 0);
        // A record appended after the compaction is read from the rewritten file.
        append(
            &dir,
            &JournalRecord::new(obs("long", EventKind::UserPromptSubmit, "after"), false),
        )
        .unwrap();
        let stats = replay.tick(&registry, SystemTime::now());
        assert_eq!((stats.applied, stats.duplicates), (1, 0));
        assert_eq!(
            registry.get("long").unwrap().state,
            crate::model::SessionState::Working
        );
    }

    #[test]
    fn a_journal_not_applied_is_never_compacted() {
        // Skipped at start (old, agent gone): not applied, so compaction leaves it whole.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let path = long_session(&dir, "old", 3500);
        let len = fs::metadata(&path).unwrap().len();
        let registry = SessionsRegistry::new();
        let mut replay = JournalReplay::with_probe(dir.clone(), Arc::new(|_, _| false));
        let stats = replay.tick(&registry, SystemTime::now() + Duration::from_secs(3600));
        assert_eq!((stats.skipped_files, stats.compacted_files), (1, 0));
        assert_eq!(fs::metadata(&path).unwrap().len(), len);
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Wine 8 cannot rename over a file held open; Windows 10 can (POSIX rename semantics, which std uses)"
    )]
    fn the_cap_drops_the_oldest_journals_first_and_records_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let now = SystemTime::now();
        let mut paths = Vec::new();
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            let p = long_session(&dir, id, 100);
            File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(now - Duration::from_secs(100 - i as u64))
                .unwrap();
            paths.push(p);
        }
        let one = fs::metadata(&paths[0]).unwrap().len();
        let cap = JournalCap {
            max_bytes: one * 2 + one / 2,
            max_files: 10,
        };
        let dropped = enforce_cap(&dir, cap, Some(&paths[0]), "hook", now)
            .unwrap()
            .unwrap();
        assert_eq!((dropped.files, dropped.records), (1, 0));
        assert!(paths[0].exists(), "never the journal being written");
        assert!(!paths[1].exists(), "the oldest of the others");
        assert!(paths[2].exists());
        assert!(enforce_cap(&dir, cap, None, "engine", now)
            .unwrap()
            .is_none());

        // One session larger than the cap alone loses its oldest records, not its start.
        let small = JournalCap {
            max_bytes: one / 2,
            max_files: 10,
        };
        fs::remove_file(&paths[2]).unwrap();
        let dropped = enforce_cap(&dir, small, Some(&paths[0]), "hook", now)
            .unwrap()
            .unwrap();
        assert!(dropped.records > 50, "{dropped:?}");
        let (kept, _) = read_from(&paths[0], 0).unwrap();
        assert_eq!(kept[0].observation.event, EventKind::SessionStart);
        assert_eq!(kept.last().unwrap().observation.event, EventKind::Stop);
        assert!(fs::metadata(&paths[0]).unwrap().len() <= one / 4 + 1024);
        let totals = drop_totals(&dir);
        assert_eq!((totals.files, totals.records), (1, dropped.records));
        assert_eq!(health_notes(&dir).len(), 1, "doctor shows it");
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Wine 8 cannot rename over a file held open; Windows 10 can (POSIX rename semantics, which std uses)"
    )]
    fn a_rewrite_waits_for_appends_in_progress_and_gives_up_in_bounded_time() {
        // A hook holds the shared lock while it appends: a compaction must not copy and
        // rename under it (the append would land in the replaced file and be lost).
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let path = long_session(&dir, "s", 300);
        let hook = File::open(&path).unwrap();
        assert!(lock_within(&hook, LockKind::Shared, Duration::ZERO));
        let t = Instant::now();
        assert_eq!(
            rewrite_keeping(&path, KEEP_HEAD, 10, u64::MAX).unwrap(),
            None
        );
        assert!(t.elapsed() < REWRITE_LOCK_WAIT * 4);
        drop(hook);
        let done = rewrite_keeping(&path, KEEP_HEAD, 10, u64::MAX)
            .unwrap()
            .unwrap();
        assert_eq!(done.dropped_lines, 300 + 3 - 12);
        assert_eq!(FileId::of_path(&path).unwrap().index, done.ino);
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Wine 8 cannot rename over a file held open; Windows 10 can (POSIX rename semantics, which std uses)"
    )]
    fn a_hook_that_appends_without_its_lock_during_a_rewrite_loses_nothing() {
        // Under a heavy load a compaction can hold its lock past a hook's bounded wait (50 ms,
        // so the agent is not stalled): the hook then appends to the file it opened, which the
        // rewrite has read already and is about to rename over. The line must reach the new
        // file, and the engine must read it as not yet applied (after the rewrite's `len`).
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let path = long_session(&dir, "s", 300);
        let late = JournalRecord::new(obs("s", EventKind::UserPromptSubmit, "s-late"), false);
        let mut waited = Duration::ZERO;
        let done = rewrite_keeping_then(&path, KEEP_HEAD, 10, u64::MAX, || {
            let t = Instant::now();
            append(&dir, &late).unwrap();
            waited = t.elapsed();
        })
        .unwrap()
        .unwrap();
        assert!(
            waited >= APPEND_LOCK_WAIT,
            "the hook did not wait for the rewrite's lock ({waited:?}): the test proves nothing"
        );
        let (records, _) = read_from(&path, 0).unwrap();
        let seqs: Vec<_> = records
            .iter()
            .filter_map(|r| r.observation.seq.as_deref())
            .collect();
        assert!(
            seqs.contains(&"s-late"),
            "the late append was lost: {seqs:?}"
        );
        assert_eq!(seqs.first(), Some(&"s-start"), "the head was kept");
        let (unread, _) = read_from(&path, done.len).unwrap();
        assert_eq!(
            unread.last().and_then(|r| r.observation.seq.as_deref()),
            Some("s-late"),
            "the late line is after what the rewrite counts as applied"
        );
    }
}
