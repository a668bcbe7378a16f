//! What the file feeds need to know about processes, read from `/proc` without ever touching the
//! agents' own files in a way they could notice.
//!
//! Two feeds must tie a file to a live process:
//! - a Claude live-session file names its `pid` and that process's start token (`procStart`): the
//!   file is only believed while the process with that pid *and* that start token is alive — a file
//!   left behind by a crash, or a pid recycled since, must not show a session;
//! - a Codex thread is live while its writer lock is held, and the session's pid is found from the
//!   lock's holder (`/proc/locks`) by walking up to the outermost `codex` ancestor.
//!
//! **Why `/proc/locks` instead of trying the lock.** Even a non-blocking shared `flock` attempt
//! takes the lock for an instant: if Codex tried to take it exclusively in that instant (a thread
//! being loaded) it would fail or wait. Reading `/proc/locks` never touches the file, and it names
//! the holder's pid, which the lock attempt cannot. The `flock` probe is only the fallback where
//! `/proc/locks` does not exist (macOS), and it releases at once.
//!
//! **The pid rule** must be the one the hook feed uses, or the two feeds would hand the session back
//! and forth between two pids (the registry treats a new pid as a takeover and then ignores the old
//! pid's events): for Codex the session's pid is the **outermost `codex` ancestor** of the process
//! that holds the lock (the TUI, above the `codex app-server` it started); for Claude it is the
//! `claude` process the live-session file names. That rule is each agent's, in its adapter
//! (Codex's: `crate::agents::codex::lock_owner`); this module only says who holds a lock.
//!
//! Process identity and the process table come from [`crate::process`], and the ancestry walk from
//! [`crate::agent_pid`], so every part of the engine answers "which process, and is it still the
//! same one" the same way.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// One `FLOCK` lock from `/proc/locks`: who holds it, on which file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeldLock {
    pub pid: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
}

/// Parses `/proc/locks` into the held `flock` locks, by inode. Waiters (`->`) and POSIX/OFD locks
/// are left out: Codex's writer lock is a `flock`, and only a granted lock means "held".
pub fn parse_proc_locks(text: &str) -> HashMap<u64, Vec<HeldLock>> {
    let mut held: HashMap<u64, Vec<HeldLock>> = HashMap::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        // "1:" then either "->" (a waiter) or the lock class.
        let _id = fields.next();
        let Some(class) = fields.next() else { continue };
        if class != "FLOCK" {
            continue;
        }
        let _advisory = fields.next();
        let _mode = fields.next();
        let Some(pid) = fields.next().and_then(|p| p.parse::<i64>().ok()) else {
            continue;
        };
        let Some(device) = fields.next() else {
            continue;
        };
        let mut parts = device.split(':');
        let (Some(major), Some(minor), Some(inode)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(major), Ok(minor), Ok(inode)) = (
            u32::from_str_radix(major, 16),
            u32::from_str_radix(minor, 16),
            inode.parse::<u64>(),
        ) else {
            continue;
        };
        // A pid of -1 or 0 (a holder outside our pid namespace) still means "held".
        let pid = u32::try_from(pid).unwrap_or(0);
        held.entry(inode).or_default().push(HeldLock {
            pid,
            dev_major: major,
            dev_minor: minor,
            inode,
        });
    }
    held
}

/// Reads the held `flock` locks of the machine, or `None` where `/proc/locks` does not exist.
pub fn read_proc_locks() -> Option<HashMap<u64, Vec<HeldLock>>> {
    fs::read_to_string("/proc/locks")
        .ok()
        .map(|t| parse_proc_locks(&t))
}

/// Who holds a lock file, as far as the machine can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockProbe {
    /// Nobody holds it.
    Free,
    /// Held; by this pid when `/proc/locks` names one that is visible to us.
    Held(Option<u32>),
    /// The lock file does not exist.
    Missing,
}

/// Finds the holder of `path`'s lock in a parsed `/proc/locks`, matching device and inode.
pub fn lock_holder(path: &Path, locks: &HashMap<u64, Vec<HeldLock>>) -> LockProbe {
    let Ok(meta) = fs::metadata(path) else {
        return LockProbe::Missing;
    };
    #[cfg(not(unix))]
    {
        // No `/proc/locks` to have been read: only the probe can tell.
        let _ = (meta, locks);
        probe_lock_by_flock(path)
    }
    #[cfg(unix)]
    let id = crate::os_fs::FileId::of_unix_metadata(&meta);
    #[cfg(unix)]
    let (major, minor) = (dev_major(id.volume), dev_minor(id.volume));
    #[cfg(unix)]
    match locks.get(&id.index).and_then(|l| {
        l.iter()
            .find(|l| l.dev_major == major && l.dev_minor == minor)
    }) {
        Some(l) => LockProbe::Held((l.pid != 0).then_some(l.pid)),
        None => LockProbe::Free,
    }
}

/// The major number of a Linux `dev_t` (glibc's `gnu_dev_major`).
#[cfg(unix)]
fn dev_major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32
}

/// The minor number of a Linux `dev_t` (glibc's `gnu_dev_minor`).
#[cfg(unix)]
fn dev_minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32
}

/// The fallback where `/proc/locks` does not exist: try a non-blocking **shared** lock and release
/// it at once. Shared, so a concurrent reader of the same kind never fails; non-blocking, so this
/// never waits behind Codex. Only a held exclusive lock makes it fail with `EWOULDBLOCK`.
pub fn probe_lock_by_flock(path: &Path) -> LockProbe {
    use crate::os_fs::{try_lock, unlock, LockKind};
    // Never `File::open`: a FIFO named like a lock would block this feed for good.
    let Ok((file, _)) = super::open_regular_file(path) else {
        return LockProbe::Missing;
    };
    if try_lock(&file, LockKind::Shared) {
        unlock(&file);
        LockProbe::Free
    } else {
        LockProbe::Held(None)
    }
}

/// The machine's view of one lock file: `/proc/locks` where it exists, else the `flock` probe.
pub fn probe_lock(path: &Path, locks: Option<&HashMap<u64, Vec<HeldLock>>>) -> LockProbe {
    match locks {
        Some(locks) => lock_holder(path, locks),
        None => probe_lock_by_flock(path),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lists_granted_flocks_by_inode_and_skips_waiters_and_posix_locks() {
        let text = "1: FLOCK  ADVISORY  WRITE 23684 fe:00:5407259 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 999 fe:00:5407259 0 EOF\n\
                    2: POSIX  ADVISORY  WRITE 23411 fe:00:5308641 0 EOF\n\
                    3: FLOCK  ADVISORY  READ -1 08:1f:77 0 EOF\n\
                    nonsense\n";
        let held = parse_proc_locks(text);
        assert_eq!(held.len(), 2);
        let l = held[&5407259][0];
        assert_eq!((l.pid, l.dev_major, l.dev_minor), (23684, 0xfe, 0));
        assert_eq!(held[&5407259].len(), 1, "the waiter is not a holder");
        assert_eq!(
            held[&77][0].pid, 0,
            "a holder in another namespace is still a holder"
        );
        assert_eq!(held[&77][0].dev_minor, 0x1f);
    }

    #[test]
    #[cfg(target_os = "linux")] // `/proc/locks`
    fn a_lock_held_by_us_is_found_in_proc_locks_with_our_pid_and_free_once_released() {
        // The real kernel table, for a lock this test takes itself.
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.lock");
        let file = fs::File::create(&path).unwrap();
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(rc, 0);
        let locks = read_proc_locks().unwrap();
        assert_eq!(
            lock_holder(&path, &locks),
            LockProbe::Held(Some(std::process::id()))
        );
        assert_eq!(probe_lock_by_flock(&path), LockProbe::Held(None));
        drop(file);
        // Another test thread's fork keeps every descriptor of this process (this lock's too)
        // until its child execs: the lock goes within milliseconds of that, so wait up to 3 s.
        let given_up_at = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let locks = loop {
            let locks = read_proc_locks().unwrap();
            if lock_holder(&path, &locks) == LockProbe::Free
                || std::time::Instant::now() >= given_up_at
            {
                break locks;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(lock_holder(&path, &locks), LockProbe::Free);
        assert_eq!(probe_lock_by_flock(&path), LockProbe::Free);
        assert_eq!(
            lock_holder(&dir.path().join("none.lock"), &locks),
            LockProbe::Missing
        );
    }
}
