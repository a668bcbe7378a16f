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
//! `claude` process the live-session file names. The walk is [`agent_pid::outermost_codex`], the
//! hook's own.
//!
//! Process identity and the process table come from [`crate::process`], and the ancestry walk from
//! [`crate::agent_pid`], so every part of the engine answers "which process, and is it still the
//! same one" the same way.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use crate::agent_pid;
use crate::process::ProcessTable;

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
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::metadata(path) else {
        return LockProbe::Missing;
    };
    let dev = meta.dev();
    let (major, minor) = (dev_major(dev), dev_minor(dev));
    match locks.get(&meta.ino()).and_then(|l| {
        l.iter()
            .find(|l| l.dev_major == major && l.dev_minor == minor)
    }) {
        Some(l) => LockProbe::Held((l.pid != 0).then_some(l.pid)),
        None => LockProbe::Free,
    }
}

/// The major number of a Linux `dev_t` (glibc's `gnu_dev_major`).
fn dev_major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32
}

/// The minor number of a Linux `dev_t` (glibc's `gnu_dev_minor`).
fn dev_minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32
}

/// The fallback where `/proc/locks` does not exist: try a non-blocking **shared** lock and release
/// it at once. Shared, so a concurrent reader of the same kind never fails; non-blocking, so this
/// never waits behind Codex. Only a held exclusive lock makes it fail with `EWOULDBLOCK`.
pub fn probe_lock_by_flock(path: &Path) -> LockProbe {
    use std::os::fd::AsRawFd;
    // Never `File::open`: a FIFO named like a lock would block this feed for good.
    let Ok((file, _)) = super::open_regular_file(path) else {
        return LockProbe::Missing;
    };
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is a valid open descriptor owned by `file` for the duration of both calls.
    let rc = unsafe { libc::flock(fd, libc::LOCK_SH | libc::LOCK_NB) };
    if rc == 0 {
        // SAFETY: as above; releasing the shared lock we just took.
        unsafe { libc::flock(fd, libc::LOCK_UN) };
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

fn comm_of(table: &impl ProcessTable, pid: u32) -> Option<String> {
    table.info(pid).map(|i| i.comm)
}

fn is_codex(table: &impl ProcessTable, pid: u32) -> bool {
    comm_of(table, pid).is_some_and(|c| c == "codex" || c == "codex.exe")
}

/// Who a Codex thread belongs to, decided from the holder of its writer lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodexOwner {
    /// The session's pid (the outermost `codex` ancestor of the holder).
    Pid(u32),
    /// Only a `codex app-server` left behind by a TUI that is gone holds the lock: its parent is
    /// init (or a subreaper), no `codex` is above it, and no `codex` runs below it. Nobody can see
    /// or drive this thread any more, so the user's session is over.
    DetachedServer,
}

/// Decides [`CodexOwner`] for a lock held by `holder`. The walk up is the hook's own
/// ([`agent_pid::outermost_codex`]), so both feeds name the same pid.
pub fn codex_owner<T: ProcessTable>(table: &T, holder: u32) -> CodexOwner {
    let owner = agent_pid::outermost_codex(table, holder);
    if owner != holder {
        return CodexOwner::Pid(owner);
    }
    let is_server = table
        .cmdline(holder)
        .is_some_and(|argv| argv.iter().skip(1).any(|a| a == "app-server"));
    let orphaned = match table.info(holder).map(|i| i.ppid) {
        Some(0) | Some(1) | None => true,
        Some(parent) => comm_of(table, parent)
            .is_some_and(|c| matches!(c.as_str(), "systemd" | "init" | "tini" | "dumb-init")),
    };
    let drives_a_tui = table
        .children(holder)
        .into_iter()
        .any(|child| is_codex(table, child));
    if is_server && orphaned && !drives_a_tui {
        CodexOwner::DetachedServer
    } else {
        CodexOwner::Pid(holder)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    use crate::process::ProcInfo;

    /// A scripted process table: pid → (ppid, comm, cmdline).
    #[derive(Default)]
    struct Table(HashMap<u32, (u32, &'static str, &'static str)>);

    impl ProcessTable for Table {
        fn info(&self, pid: u32) -> Option<ProcInfo> {
            self.0.get(&pid).map(|p| ProcInfo {
                ppid: p.0,
                comm: p.1.to_string(),
            })
        }
        fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
            self.0
                .get(&pid)
                .map(|p| p.2.split_whitespace().map(String::from).collect())
        }
        fn exists(&self, pid: u32) -> bool {
            self.0.contains_key(&pid)
        }
        fn start_token(&self, _pid: u32) -> Option<String> {
            None
        }
        fn children(&self, pid: u32) -> Vec<u32> {
            self.0
                .iter()
                .filter(|(_, p)| p.0 == pid)
                .map(|(c, _)| *c)
                .collect()
        }
    }

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
        let locks = read_proc_locks().unwrap();
        assert_eq!(lock_holder(&path, &locks), LockProbe::Free);
        assert_eq!(probe_lock_by_flock(&path), LockProbe::Free);
        assert_eq!(
            lock_holder(&dir.path().join("none.lock"), &locks),
            LockProbe::Missing
        );
    }

    #[test]
    fn the_session_pid_is_the_tui_above_the_app_server_that_holds_the_lock() {
        // node launcher (not codex) → codex TUI → codex app-server (holds the lock).
        let t = Table(HashMap::from([
            (10, (1, "bash", "bash")),
            (20, (10, "node", "node /usr/bin/codex")),
            (30, (20, "codex", "codex")),
            (40, (30, "codex", "codex app-server")),
        ]));
        assert_eq!(codex_owner(&t, 40), CodexOwner::Pid(30));
    }

    #[test]
    fn a_single_process_codex_holding_its_own_lock_is_its_own_session_pid() {
        // `codex --no-daemon` or `codex exec`: one process writes and holds the lock.
        let t = Table(HashMap::from([
            (10, (1, "bash", "bash")),
            (30, (10, "codex", "codex exec hi")),
        ]));
        assert_eq!(codex_owner(&t, 30), CodexOwner::Pid(30));
    }

    #[test]
    fn an_app_server_orphaned_by_its_tui_is_a_session_that_is_over() {
        // The TUI was killed; its server was reparented to init and keeps the lock.
        let t = Table(HashMap::from([(40, (1, "codex", "codex app-server"))]));
        assert_eq!(codex_owner(&t, 40), CodexOwner::DetachedServer);
        let reaped = Table(HashMap::from([
            (5, (1, "systemd", "/lib/systemd/systemd --user")),
            (40, (5, "codex", "codex app-server")),
        ]));
        assert_eq!(codex_owner(&reaped, 40), CodexOwner::DetachedServer);
    }

    #[test]
    fn an_app_server_run_by_an_editor_is_a_live_session() {
        // VS Code's extension host runs `codex app-server` as its child: not orphaned.
        let t = Table(HashMap::from([
            (5, (1, "code", "code")),
            (40, (5, "codex", "codex app-server")),
        ]));
        assert_eq!(codex_owner(&t, 40), CodexOwner::Pid(40));
    }

    #[test]
    fn an_orphaned_app_server_that_still_drives_a_codex_child_is_not_over() {
        let t = Table(HashMap::from([
            (40, (1, "codex", "codex app-server")),
            (41, (40, "codex", "codex")),
        ]));
        assert_eq!(codex_owner(&t, 40), CodexOwner::Pid(40));
    }
}
