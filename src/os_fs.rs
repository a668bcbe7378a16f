//! The few file operations whose spelling differs between unix and Windows, in one place, so the
//! journal, the feeds and the control channel read the same on every desktop.
//!
//! Why each exists:
//! - **Private files** ([`private_options`]): on unix a file we create is 0600 and no open follows
//!   a symlink planted in our folder (`O_NOFOLLOW`) or leaks into a child (`O_CLOEXEC`). On Windows
//!   a file inherits the protected DACL of our folder ([`folder_dacl`]); what matters there is that every
//!   file we hold open also lets others *rename over or delete it* (`FILE_SHARE_DELETE`), or the
//!   journal's rewrite and every atomic replace would fail while a hook or a feed has it open.
//! - **Advisory locks** ([`try_lock`]): `flock` on unix. On Windows `LockFileEx` locks are
//!   mandatory: a shared lock over the file's bytes would forbid the very appends it protects, so
//!   the lock covers one byte far past any real end of file, where it guards nothing but itself.
//! - **File identity** ([`FileId`]): device and inode on unix; volume serial number and file index
//!   on Windows. Creation times are no substitute: Windows "tunnels" a deleted file's creation
//!   time to a new file of the same name made within 15 s, which is exactly a rewrite.
//! - **Positioned reads and writes** ([`read_exact_at`], [`write_all_at`]).

pub mod folder_dacl;
#[cfg(windows)]
pub mod windows_security;

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Options for opening a file of ours or an agent's: see the module comment.
pub fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW);
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        use windows_sys::Win32::Storage::FileSystem::{
            FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE,
        };
        options.share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE);
    }
    options
}

/// Opens an agent's file for reading without blocking on a FIFO or a device (unix's
/// `O_NONBLOCK`; a regular file ignores it) and without following a symlink (unix's
/// `O_NOFOLLOW`; Windows' `FILE_FLAG_OPEN_REPARSE_POINT`, which opens the link itself: see
/// [`open_for_reading`], which then refuses it).
pub fn reading_options() -> OpenOptions {
    let mut options = private_options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
        options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
    }
    options
}

/// Opens an agent's file for reading ([`reading_options`]), never through a link: on unix the
/// open of a symlink fails (`O_NOFOLLOW`); on Windows a reparse point (a symbolic link, a
/// junction, a mount point) is opened as itself, not followed, and then refused here. A look at
/// the path before the open cannot promise this: the path can be swapped for a link between the
/// look and the open; the handle cannot.
pub fn open_for_reading(path: &Path) -> io::Result<File> {
    let file = reading_options().open(path)?;
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt;
        use windows_sys::Win32::Storage::FileSystem::FILE_ATTRIBUTE_REPARSE_POINT;
        if file.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a link (a reparse point): not followed",
                    path.display()
                ),
            ));
        }
    }
    Ok(file)
}

/// Makes `path` readable and writable by its owner only (unix). On Windows a file is left as it
/// is: it inherits the protected DACL of the folder it is made in (a folder of ours is made
/// private by [`folder_dacl::make_private`], through `paths::create_private_dir`).
pub fn make_owner_only(path: &Path, is_dir: bool) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if is_dir { 0o700 } else { 0o600 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, is_dir);
        Ok(())
    }
}

/// The kind of advisory lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    Shared,
    Exclusive,
}

/// Tries once to take an advisory lock on `file`, without waiting. `true` when taken; the lock
/// goes with the open file (released when it is closed, or by [`unlock`]).
pub fn try_lock(file: &File, kind: LockKind) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let op = match kind {
            LockKind::Shared => libc::LOCK_SH,
            LockKind::Exclusive => libc::LOCK_EX,
        };
        // SAFETY: flock on a descriptor the caller borrows to us; no memory is passed.
        unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) == 0 }
    }
    #[cfg(windows)]
    {
        windows_lock::try_lock(file, kind)
    }
}

/// Gives back a lock taken by [`try_lock`].
pub fn unlock(file: &File) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: as in try_lock.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
    }
    #[cfg(windows)]
    windows_lock::unlock(file);
}

#[cfg(windows)]
mod windows_lock {
    use super::LockKind;
    use std::fs::File;
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        LockFileEx, UnlockFileEx, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
    };
    use windows_sys::Win32::System::IO::OVERLAPPED;

    /// The locked byte: the last offset a file can have, which no file of ours reaches.
    const LOCK_OFFSET: u64 = u64::MAX - 1;

    fn at_lock_offset() -> OVERLAPPED {
        // SAFETY: OVERLAPPED is plain data; all-zero is its documented initial state.
        let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
        overlapped.Anonymous.Anonymous.Offset = LOCK_OFFSET as u32;
        overlapped.Anonymous.Anonymous.OffsetHigh = (LOCK_OFFSET >> 32) as u32;
        overlapped
    }

    pub fn try_lock(file: &File, kind: LockKind) -> bool {
        let mut flags = LOCKFILE_FAIL_IMMEDIATELY;
        if kind == LockKind::Exclusive {
            flags |= LOCKFILE_EXCLUSIVE_LOCK;
        }
        let mut overlapped = at_lock_offset();
        // SAFETY: a valid handle borrowed from `file`; `overlapped` lives across the call, and
        // LOCKFILE_FAIL_IMMEDIATELY makes the call complete before it returns.
        unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &mut overlapped) != 0 }
    }

    pub fn unlock(file: &File) {
        let mut overlapped = at_lock_offset();
        // SAFETY: as above.
        unsafe { UnlockFileEx(file.as_raw_handle(), 0, 1, 0, &mut overlapped) };
    }
}

/// Which file an open file or a path is, across renames: equal only for the same file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    /// The device (unix) or the volume's serial number (Windows).
    pub volume: u64,
    /// The inode (unix) or the file index (Windows).
    pub index: u64,
}

impl FileId {
    /// The identity of an open file.
    pub fn of_file(file: &File) -> io::Result<FileId> {
        #[cfg(unix)]
        {
            Ok(Self::of_unix_metadata(&file.metadata()?))
        }
        #[cfg(windows)]
        {
            windows_id::of_file(file)
        }
    }

    /// The identity of what `path` names, not following a final symlink.
    pub fn of_path(path: &Path) -> io::Result<FileId> {
        #[cfg(unix)]
        {
            Ok(Self::of_unix_metadata(&std::fs::symlink_metadata(path)?))
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            use windows_sys::Win32::Storage::FileSystem::{
                FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
            };
            // No access asked: only the identity is read; folders need backup semantics.
            let file = private_options()
                .access_mode(0)
                .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
                .open(path)?;
            windows_id::of_file(&file)
        }
    }

    #[cfg(unix)]
    pub fn of_unix_metadata(meta: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            volume: meta.dev(),
            index: meta.ino(),
        }
    }
}

#[cfg(windows)]
mod windows_id {
    use super::FileId;
    use std::fs::File;
    use std::io;
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION,
    };

    pub fn of_file(file: &File) -> io::Result<FileId> {
        // SAFETY: plain data, written by the call below.
        let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: a valid handle borrowed from `file`; `info` is a writable struct of the type
        // the call fills.
        if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(FileId {
            volume: u64::from(info.dwVolumeSerialNumber),
            index: (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
        })
    }
}

/// The file index (inode) of what `path` names, given its metadata already read: free on unix,
/// one open on Windows, where metadata does not carry it. `u64::MAX` when it cannot be read (it
/// then matches no recorded index, which callers treat as "replaced").
pub fn index_of(path: &Path, meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        let _ = path;
        FileId::of_unix_metadata(meta).index
    }
    #[cfg(windows)]
    {
        let _ = meta;
        FileId::of_path(path).map_or(u64::MAX, |id| id.index)
    }
}

/// The file names a program called `name` may have on this desktop: itself on unix; on Windows
/// the names with each of `PATHEXT`'s extensions (`.COM;.EXE;.BAT;.CMD` when unset) first, as
/// the shell tries them, then the bare name.
pub fn executable_names(name: &str) -> Vec<String> {
    let pathext = std::env::var("PATHEXT").ok();
    executable_names_on(cfg!(windows), name, pathext.as_deref())
}

/// [`executable_names`] for a given desktop and `PATHEXT`: pure, tested on every OS.
pub fn executable_names_on(windows: bool, name: &str, pathext: Option<&str>) -> Vec<String> {
    if !windows {
        return vec![name.to_string()];
    }
    let has_extension = Path::new(name).extension().is_some();
    let mut names: Vec<String> = if has_extension {
        Vec::new()
    } else {
        pathext
            .filter(|p| !p.trim().is_empty())
            .unwrap_or(".COM;.EXE;.BAT;.CMD")
            .split(';')
            .filter(|e| e.starts_with('.') && e.len() > 1)
            .map(|e| format!("{name}{}", e.to_ascii_lowercase()))
            .collect()
    };
    names.push(name.to_string());
    names
}

/// A file this user could run: an executable bit on unix; on Windows, a file (Windows runs by
/// extension, which [`executable_names`] supplies).
pub fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// Reads exactly `buf.len()` bytes at `offset`, leaving no cursor a reader depends on.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            match read_at(file, &mut buf[done..], offset + done as u64)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Reads what there is at `offset`, up to `buf.len()` bytes; 0 at the end.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        match file.seek_read(buf, offset) {
            // Reading at or past the end is an error on Windows, the end elsewhere.
            Err(e) if e.raw_os_error() == Some(38) => Ok(0), // ERROR_HANDLE_EOF
            other => other,
        }
    }
}

/// Writes all of `bytes` at `offset`.
pub fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let mut done = 0;
        while done < bytes.len() {
            match file.seek_write(&bytes[done..], offset + done as u64)? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// The first executable called `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let names = executable_names(name);
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| is_executable(p))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn windows_tries_pathext_names_before_the_bare_one() {
        assert_eq!(executable_names_on(false, "codex", None), ["codex"]);
        assert_eq!(
            executable_names_on(true, "codex", None),
            ["codex.com", "codex.exe", "codex.bat", "codex.cmd", "codex"]
        );
        assert_eq!(
            executable_names_on(true, "claude", Some(".EXE;.CMD;;bad")),
            ["claude.exe", "claude.cmd", "claude"]
        );
        assert_eq!(
            executable_names_on(true, "agent-tray.exe", Some(".EXE")),
            ["agent-tray.exe"]
        );
    }

    #[test]
    fn a_shared_lock_admits_shared_and_keeps_out_exclusive_and_appends_still_work() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let open = || {
            private_options()
                .create(true)
                .read(true)
                .append(true)
                .open(&path)
                .unwrap()
        };
        let (a, b, c) = (open(), open(), open());
        assert!(try_lock(&a, LockKind::Shared));
        assert!(try_lock(&b, LockKind::Shared));
        assert!(!try_lock(&c, LockKind::Exclusive));
        // The lock guards nothing but itself: a holder and others still append.
        use std::io::Write;
        (&a).write_all(b"one\n").unwrap();
        (&c).write_all(b"two\n").unwrap();
        unlock(&a);
        drop(b);
        assert!(try_lock(&c, LockKind::Exclusive));
        assert!(!try_lock(&a, LockKind::Shared));
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\n");
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Wine 8 cannot rename over a file held open; Windows 10 can (POSIX rename semantics, which std uses)"
    )]
    fn a_file_renamed_over_while_held_open_is_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let tmp = dir.path().join("f.tmp");
        std::fs::write(&path, b"old").unwrap();
        let held = private_options().read(true).open(&path).unwrap();
        let before = FileId::of_file(&held).unwrap();
        assert_eq!(FileId::of_path(&path).unwrap(), before);
        std::fs::write(&tmp, b"new").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_ne!(FileId::of_path(&path).unwrap(), before);
        assert_eq!(FileId::of_file(&held).unwrap(), before);
        let mut buf = [0u8; 3];
        read_exact_at(&held, &mut buf, 0).unwrap();
        assert_eq!(&buf, b"old");
    }

    /// An agent's folder where a file was replaced by a link to another file of the user's (or
    /// a device): the feed opens the path and must not read the link's target. Windows: a
    /// symbolic link made with `CreateSymbolicLinkW` (Wine makes one as a unix symlink).
    #[test]
    fn an_agents_file_that_is_a_link_is_not_opened_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("secret");
        std::fs::write(&target, b"not the agent's").unwrap();
        let link = dir.path().join("session.jsonl");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&target, &link).unwrap();
        #[cfg(windows)]
        std::os::windows::fs::symlink_file(&target, &link).unwrap();
        assert!(
            open_for_reading(&link).is_err(),
            "a link is refused, not followed to its target"
        );
        let mut text = String::new();
        use std::io::Read;
        open_for_reading(&target)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "not the agent's", "a plain file opens as before");
    }

    #[test]
    fn positioned_reads_and_writes_meet_the_end_of_the_file_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let file = private_options()
            .create(true)
            .read(true)
            .write(true)
            .truncate(true)
            .open(dir.path().join("p"))
            .unwrap();
        write_all_at(&file, b"abcdef", 0).unwrap();
        write_all_at(&file, b"XY", 2).unwrap();
        let mut buf = [0u8; 4];
        read_exact_at(&file, &mut buf, 1).unwrap();
        assert_eq!(&buf, b"bXYe");
        assert_eq!(read_at(&file, &mut buf, 6).unwrap(), 0);
        assert!(read_exact_at(&file, &mut buf, 4).is_err());
    }
}
