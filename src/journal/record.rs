//! The journal's record and the append the hook does: one line of JSON per observation,
//! appended under a shared lock to its session's file, then the folder kept within its cap.
//! The hook needs nothing else from the journal, so this is all it imports.

use crate::os_fs::{self, FileId, LockKind};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use super::compaction::{enforce_cap, lock_within, JournalCap};
use crate::model::{Agent, InvalidObservation, Observation};
use crate::paths::create_private_dir;

/// The record format's version.
pub const RECORD_VERSION: u32 = 1;
/// A hook re-checks the folder against the cap each time its file grows past another multiple
/// of this (and whenever it starts a file), so a check costs one `readdir` per ~200 events.
pub const CAP_CHECK_BYTES: u64 = 64 * 1024;
/// A record line longer than this is skipped on replay (a hook never writes one).
pub(super) const MAX_RECORD: usize = 64 * 1024;
/// How long a hook waits for the shared lock before appending without it.
pub(super) const APPEND_LOCK_WAIT: Duration = Duration::from_millis(50);

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

/// Why a journal line was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorruptRecord {
    #[error("a record line of {0} bytes is longer than a hook writes")]
    TooLong(usize),
    #[error("not a journal record: {0}")]
    BadJson(String),
    #[error("record version {0} is not one this version reads")]
    UnknownVersion(u32),
    #[error("record dated {0}, which cannot be right")]
    BadDate(DateTime<Utc>),
    #[error("the record's observation is invalid: {0}")]
    Invalid(#[from] InvalidObservation),
}

/// The earliest and latest dates a record may carry, whatever the clock says.
fn plausible_dates() -> (DateTime<Utc>, DateTime<Utc>) {
    let first = Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).single();
    let last = Utc.with_ymd_and_hms(2200, 1, 1, 0, 0, 0).single();
    (
        first.unwrap_or(DateTime::<Utc>::MIN_UTC),
        last.unwrap_or(DateTime::<Utc>::MAX_UTC),
    )
}

/// Parses one journal line (without its newline). Never panics, whatever the bytes.
pub fn parse_line(line: &[u8]) -> Result<JournalRecord, CorruptRecord> {
    if line.len() > MAX_RECORD {
        return Err(CorruptRecord::TooLong(line.len()));
    }
    let record: JournalRecord =
        serde_json::from_slice(line).map_err(|e| CorruptRecord::BadJson(e.to_string()))?;
    if record.v != RECORD_VERSION {
        return Err(CorruptRecord::UnknownVersion(record.v));
    }
    let (first, last) = plausible_dates();
    if record.observation.at < first || record.observation.at >= last {
        return Err(CorruptRecord::BadDate(record.observation.at));
    }
    record.observation.validate()?;
    Ok(record)
}

/// One record as a journal line, newline included.
pub fn encode_line(record: &JournalRecord) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
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

/// Appends one record to its session's journal (creating the folder 0700 and the file 0600),
/// then keeps the folder within the cap. Returns the journal's path.
pub fn append(dir: &Path, record: &JournalRecord) -> io::Result<PathBuf> {
    let path = dir.join(file_name(
        record.observation.agent,
        &record.observation.session_id,
    ));
    let line = encode_line(record)?;
    let (before, after) = append_line(dir, &path, &line)?;
    if before == 0 || before / CAP_CHECK_BYTES != after / CAP_CHECK_BYTES {
        // Best effort: a cap that cannot be enforced now is enforced by the next check.
        let _ = enforce_cap(
            dir,
            JournalCap::DEFAULT,
            Some(&path),
            "hook",
            SystemTime::now(),
        );
    }
    Ok(path)
}

/// Appends `line` to `path` under a shared lock; returns the file's length before and after.
fn append_line(dir: &Path, path: &Path, line: &[u8]) -> io::Result<(u64, u64)> {
    let open = || {
        os_fs::private_options()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
    };
    for attempt in 0..3 {
        let file = match open() {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                create_private_dir(dir).map_err(io::Error::other)?;
                open()?
            }
            Err(e) => return Err(e),
        };
        let locked = lock_within(&file, LockKind::Shared, APPEND_LOCK_WAIT);
        let meta = file.metadata()?;
        let id = FileId::of_file(&file)?;
        // A rewrite replaced the file between our open and our lock: append to the new one.
        let replaced = || FileId::of_path(path).map(|now| now != id).unwrap_or(true);
        if replaced() && attempt < 2 {
            continue;
        }
        let len = meta.len();
        // One write of the whole line: with O_APPEND the kernel places it at the end atomically.
        (&file).write_all(line)?;
        // Without the lock (a rewrite held it past our wait), a rewrite may have renamed its copy
        // over the path between our check and our write, and our line went to the old file: the
        // rewrite copies what reached the old file before it looked again after its rename
        // ([`rewrite_keeping`]), and a line written later is appended again here. A line in
        // both is harmless: replay applies a sequence id once.
        if !locked && attempt < 2 && replaced() {
            continue;
        }
        return Ok((len, len + line.len() as u64));
    }
    Err(io::Error::other("the journal kept being replaced"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::journal::compaction::journal_files;
    use crate::journal::obs;
    use crate::journal::replay::{last_record, read_from};
    use crate::model::EventKind;
    #[cfg(unix)]
    use std::fs;

    /// Private: 0700 and 0600 on unix; on Windows the folder's protected DACL (this user and
    /// SYSTEM only), which every file made in it inherits.
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
        let files = journal_files(&dir);
        assert_eq!(files.len(), 2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir), 0o700);
            for (path, _) in &files {
                assert_eq!(mode(path), 0o600, "{}", path.display());
            }
        }
        #[cfg(windows)]
        {
            use crate::os_fs::folder_dacl::{check, read, Rule};
            let me = crate::os_fs::windows_security::this_user_sid().unwrap();
            let security = read(&dir).unwrap();
            assert_eq!(check(&me, &security, Rule::Private), Ok(()), "{security:?}");
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
}
