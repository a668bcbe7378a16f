//! The engine's "alive at" mark, once a second, in a file of its own beside the store.
//!
//! After a crash the intervals still open in the store are closed where the engine was last
//! known alive, and the history promises that this loses at most a second. Written as a SQLite
//! transaction, that mark was the idle engine's largest cost: a wake-up of the writer's thread
//! and a WAL frame every second, all day (benches/at_rest.sh, per-thread schedstat). Here it is
//! one `pwrite` of 21 bytes into the page cache from the writer's forwarder, which is awake for
//! the tick anyway: no thread wakes, no fsync, nothing grows. A `kill -9` cannot tear it (a
//! write of that size lands whole or not at all in the page cache); a power cut can leave
//! anything, so a mark that does not parse is ignored and one in the future is clamped to now.
//! The store keeps its own `alive_at` (written when the engine stops, and by the writer when
//! this file cannot be written): recovery takes the later of the two.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

/// Milliseconds since the epoch, zero-padded to a fixed width, and a newline.
const WIDTH: usize = 20;

/// Where the mark of the store at `store` lives: beside it, `<store>.alive`.
pub fn alive_mark_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(".alive");
    PathBuf::from(name)
}

/// The open mark file; [`AliveMark::write`] overwrites it in place.
#[derive(Debug)]
pub struct AliveMark {
    file: File,
}

impl AliveMark {
    /// Opens (creating, 0600, in a private folder) the mark file at `path`.
    pub fn open(path: &Path) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            crate::paths::create_private_dir(dir).map_err(io::Error::other)?;
        }
        let file = crate::os_fs::private_options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        Ok(AliveMark { file })
    }

    /// The engine is alive at `at`.
    pub fn write(&self, at: DateTime<Utc>) -> io::Result<()> {
        let line = format!("{:0WIDTH$}\n", at.timestamp_millis().max(0));
        crate::os_fs::write_all_at(&self.file, line.as_bytes(), 0)
    }
}

/// The mark at `path` in epoch milliseconds, no later than `now`; `None` when there is none or
/// it does not parse.
pub fn read_alive_mark(path: &Path, now: DateTime<Utc>) -> Option<i64> {
    let text = std::fs::read_to_string(path).ok()?;
    let ms: i64 = text.trim().parse().ok()?;
    Some(ms.min(now.timestamp_millis()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_last_mark_written_is_read_back_and_each_overwrites_the_one_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = alive_mark_path(&dir.path().join("history").join("history.sqlite3"));
        assert_eq!(path.file_name().unwrap(), "history.sqlite3.alive");
        let now = t("2026-03-02T10:00:00Z");
        assert_eq!(read_alive_mark(&path, now), None, "no mark yet");
        let mark = AliveMark::open(&path).unwrap();
        mark.write(t("2026-03-02T09:00:07Z")).unwrap();
        mark.write(t("2026-03-02T09:00:08.250Z")).unwrap();
        assert_eq!(
            read_alive_mark(&path, now),
            Some(t("2026-03-02T09:00:08.250Z").timestamp_millis())
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), WIDTH as u64 + 1);
    }

    #[test]
    fn a_mark_that_does_not_parse_is_ignored_and_one_in_the_future_is_clamped_to_now() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.alive");
        let now = t("2026-03-02T10:00:00Z");
        std::fs::write(&path, b"\0\0\0\0garbage").unwrap();
        assert_eq!(read_alive_mark(&path, now), None);
        AliveMark::open(&path)
            .unwrap()
            .write(t("2027-01-01T00:00:00Z"))
            .unwrap();
        assert_eq!(read_alive_mark(&path, now), Some(now.timestamp_millis()));
    }
}
