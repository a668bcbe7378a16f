//! The one way this project replaces a file: whole or not at all, and still there after a crash.
//!
//! Agents, session managers and the app itself read these files at any moment (the agents'
//! settings, the autostart entry, the app's settings, a compacted journal), so a reader must see
//! either the old text or the new one, never half of it; and a power cut right after a write
//! must not leave an empty file behind (a rename that reached the disk before the data did).
//! So: the new bytes go to a temp file in the same folder (a rename across file systems is not
//! atomic), the file is fsynced, renamed over the target, then the folder is fsynced so the
//! rename itself is durable.
//!
//! Two things people rely on are kept: the file's permission bits (a `0600` settings file stays
//! private), and a symlinked file (dotfile managers link `~/.claude/settings.json` into a
//! repository) is written at its target, the link staying a link.
//!
//! [`AtomicWrite::expect_current`] guards a read-modify-write: right before the rename the file
//! is read again and compared with what the caller read, and the write stops with
//! [`AtomicWriteError::ChangedMeanwhile`] if someone (an agent saving its own settings) wrote it
//! in between, instead of silently undoing their change. A writer that slips in after that check
//! and before the rename (a window of one syscall) still loses: no advisory lock would stop an
//! agent that takes none.
//!
//! The temp file comes from `tempfile` (a random name opened with `O_EXCL`, removed if anything
//! fails); the rest is a handful of std calls.
//!
//! **Windows** refuses to rename over a file another process holds open without
//! `FILE_SHARE_DELETE` (an editor, a virus scanner, an agent reading its settings): the rename
//! fails with "access denied" or "sharing violation" for as long as they hold it, usually
//! milliseconds. The rename is tried again for up to [`HELD_OPEN_RETRY`] before the write gives
//! up with the error; nothing is lost either way (the temp file is removed). Permission bits are
//! unix's; on Windows the file keeps the folder's access list.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a rename over a file held open by someone else is tried again (Windows).
pub const HELD_OPEN_RETRY: Duration = Duration::from_secs(2);

/// Whether a failed rename is worth trying again: on Windows, the target was held open
/// (`ERROR_ACCESS_DENIED` 5, `ERROR_SHARING_VIOLATION` 32, `ERROR_LOCK_VIOLATION` 33). Never on
/// unix, where a rename does not care who holds the file.
pub fn rename_may_succeed_later(error: &io::Error, on_windows: bool) -> bool {
    on_windows && matches!(error.raw_os_error(), Some(5 | 32 | 33))
}

/// What the caller believes the file holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Current<'a> {
    /// No check: last writer wins.
    Any,
    /// The file does not exist.
    Absent,
    /// The file holds exactly these bytes.
    Bytes(&'a [u8]),
}

#[derive(Debug, thiserror::Error)]
pub enum AtomicWriteError {
    #[error("{path} was changed by another program while this one was writing it; nothing was written. Run this again to apply the change to the new version.")]
    ChangedMeanwhile { path: PathBuf },
    #[error("cannot write {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

impl From<AtomicWriteError> for io::Error {
    fn from(e: AtomicWriteError) -> Self {
        match e {
            AtomicWriteError::Io { source, .. } => source,
            other => io::Error::other(other),
        }
    }
}

/// One atomic replacement of a file; see the module comment.
pub struct AtomicWrite<'a> {
    path: &'a Path,
    new_file_mode: u32,
    current: Current<'a>,
    before_rename: Option<&'a dyn Fn(&Path)>,
}

impl<'a> AtomicWrite<'a> {
    pub fn new(path: &'a Path) -> Self {
        AtomicWrite {
            path,
            new_file_mode: 0o600,
            current: Current::Any,
            before_rename: None,
        }
    }

    /// The permission bits of a file that does not exist yet (default `0600`); an existing
    /// file keeps its own.
    pub fn new_file_mode(mut self, mode: u32) -> Self {
        self.new_file_mode = mode;
        self
    }

    /// Refuse to replace the file unless it still holds what `current` says.
    pub fn expect_current(mut self, current: Current<'a>) -> Self {
        self.current = current;
        self
    }

    /// Runs `hook` (given the file's real path) after the temp file is complete and before the
    /// comparison and the rename: the seam where tests play the other writer.
    pub fn before_rename(mut self, hook: &'a dyn Fn(&Path)) -> Self {
        self.before_rename = Some(hook);
        self
    }

    /// Writes `bytes`; returns the path actually written (a symlink's target).
    pub fn write(self, bytes: &[u8]) -> Result<PathBuf, AtomicWriteError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AtomicWriteError::Io { path, source }
        };
        let target = resolve_symlinks(self.path).map_err(err(self.path))?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&dir).map_err(err(&dir))?;
        let mode = match fs::metadata(&target) {
            Ok(m) => permission_bits(&m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.new_file_mode,
            Err(e) => return Err(err(&target)(e)),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(err(&dir))?;
        (|| {
            tmp.write_all(bytes)?;
            set_permission_bits(tmp.as_file(), mode)?;
            tmp.as_file().sync_all()
        })()
        .map_err(err(tmp.path()))?;
        if let Some(hook) = self.before_rename {
            hook(&target);
        }
        if !holds(&target, self.current).map_err(err(&target))? {
            // The temp file is removed when `tmp` drops.
            return Err(AtomicWriteError::ChangedMeanwhile {
                path: self.path.to_path_buf(),
            });
        }
        let give_up_at = Instant::now() + HELD_OPEN_RETRY;
        let mut pending = tmp;
        loop {
            match pending.persist(&target) {
                Ok(_) => break,
                Err(e)
                    if rename_may_succeed_later(&e.error, cfg!(windows))
                        && Instant::now() < give_up_at =>
                {
                    pending = e.file;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(err(&target)(e.error)),
            }
        }
        // The rename is durable once the folder is; a file system that cannot fsync a folder
        // (some network ones) has done what it can. (Windows cannot open a folder as a file;
        // NTFS journals the rename itself.)
        #[cfg(unix)]
        if let Ok(d) = fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(target)
    }
}

#[cfg(unix)]
fn permission_bits(meta: &fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn permission_bits(_meta: &fs::Metadata) -> u32 {
    0o600
}

#[cfg(unix)]
fn set_permission_bits(file: &fs::File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_permission_bits(_file: &fs::File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Writes `bytes` to `path` atomically, no questions asked (a new file gets mode 0600).
pub fn write(path: &Path, bytes: &[u8]) -> Result<PathBuf, AtomicWriteError> {
    AtomicWrite::new(path).write(bytes)
}

fn holds(path: &Path, current: Current<'_>) -> io::Result<bool> {
    match current {
        Current::Any => Ok(true),
        Current::Absent => match fs::symlink_metadata(path) {
            Ok(_) => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(e),
        },
        Current::Bytes(expected) => match fs::read(path) {
            Ok(now) => Ok(now == expected),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        },
    }
}

/// Follows `path` through symlinks to the file they name, which may not exist yet (a dangling
/// link is written at its target, as `echo > link` would).
fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    // The kernel's own limit on links followed in one lookup.
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn only_a_windows_rename_over_a_held_file_is_tried_again() {
        let held = |code| io::Error::from_raw_os_error(code);
        for code in [5, 32, 33] {
            assert!(rename_may_succeed_later(&held(code), true), "{code}");
            assert!(!rename_may_succeed_later(&held(code), false), "{code}");
        }
        assert!(
            !rename_may_succeed_later(&held(2), true),
            "not found is final"
        );
        assert!(!rename_may_succeed_later(
            &io::Error::other("no code"),
            true
        ));
    }

    #[test]
    fn a_file_another_process_holds_open_is_still_replaced_whole() {
        // On Windows a plain `File::open` shares neither delete nor rename: the write waits for
        // the holder to let go (here after 300 ms) instead of failing.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(&path, b"old").unwrap();
        let holder = fs::File::open(&path).unwrap();
        let released = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(holder);
        });
        write(&path, b"new").unwrap();
        released.join().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert!(leftovers(tmp.path()).is_empty());
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    #[cfg(unix)] // permission bits
    fn a_new_file_gets_the_asked_mode_and_an_existing_one_keeps_its_own() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("deep/er/settings.json");
        AtomicWrite::new(&path)
            .new_file_mode(0o644)
            .write(b"one")
            .unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&path), 0o644, "created with its folders");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(mode(&path), 0o640, "an existing file keeps its mode");
        assert!(leftovers(path.parent().unwrap()).is_empty());
    }

    #[test]
    #[cfg(unix)] // symlinks need a privilege on Windows
    fn a_symlinked_file_is_written_at_its_target_and_the_link_stays() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("dotfiles/claude/settings.json");
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::write(&real, "{}").unwrap();
        // A relative link, through a second link, as stow and chezmoi make them.
        let middle = tmp.path().join("middle.json");
        symlink("dotfiles/claude/settings.json", &middle).unwrap();
        let link = tmp.path().join("settings.json");
        symlink(&middle, &link).unwrap();
        let written = write(&link, b"{\"a\":1}").unwrap();
        assert_eq!(written, tmp.path().join("dotfiles/claude/settings.json"));
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(fs::symlink_metadata(&middle)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"{\"a\":1}");
        // A dangling link: the file appears at its target.
        let dangling = tmp.path().join("dangling.json");
        symlink("dotfiles/new.json", &dangling).unwrap();
        write(&dangling, b"x").unwrap();
        assert_eq!(
            fs::read(tmp.path().join("dotfiles/new.json")).unwrap(),
            b"x"
        );
        assert!(fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_file_changed_between_read_and_rename_is_not_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(&path, "mine").unwrap();
        let agent_writes = |p: &Path| fs::write(p, "the agent's").unwrap();
        let err = AtomicWrite::new(&path)
            .expect_current(Current::Bytes(b"mine"))
            .before_rename(&agent_writes)
            .write(b"ours")
            .unwrap_err();
        assert!(
            matches!(err, AtomicWriteError::ChangedMeanwhile { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("changed by another program"));
        assert_eq!(fs::read_to_string(&path).unwrap(), "the agent's");
        assert!(leftovers(tmp.path()).is_empty(), "the temp file is gone");
        // Positive control: the same write with nobody in between goes through.
        AtomicWrite::new(&path)
            .expect_current(Current::Bytes(b"the agent's"))
            .before_rename(&|_| {})
            .write(b"ours")
            .unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "ours");
        // A file that appeared while we were creating it is not overwritten either.
        let fresh = tmp.path().join("hooks.json");
        let err = AtomicWrite::new(&fresh)
            .expect_current(Current::Absent)
            .before_rename(&|p| fs::write(p, "theirs").unwrap())
            .write(b"ours")
            .unwrap_err();
        assert!(matches!(err, AtomicWriteError::ChangedMeanwhile { .. }));
        assert_eq!(fs::read_to_string(&fresh).unwrap(), "theirs");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        // The target is a folder: the rename fails after the temp file was written.
        let path = tmp.path().join("busy");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inside"), "x").unwrap();
        assert!(write(&path, b"data").is_err());
        assert!(path.join("inside").is_file());
        assert!(leftovers(tmp.path()).is_empty());
    }
}
