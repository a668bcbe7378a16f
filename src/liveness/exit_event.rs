//! A process's death as an event the tokio reactor wakes on, instead of a poll that finds it.
//!
//! The pid watcher's 10 s tick left a `kill -9`ed agent showing its last state for up to 10 s,
//! and polling faster costs wakeups all day. The kernels we run on can say "this process exited"
//! through a file descriptor that becomes readable:
//!
//! - **Linux ≥ 5.3:** `pidfd_open(2)`. A pidfd refers to one process, not to a number, so it can
//!   never fire for a process that later got the same pid. There is no `libc` wrapper on every
//!   glibc we build against, hence the raw syscall.
//! - **macOS:** a kqueue holding one `EVFILT_PROC`/`NOTE_EXIT` filter for the pid, through the
//!   `kqueue` crate (already in the tree for file watching); the kqueue's descriptor is readable
//!   once the event is pending.
//!
//! Opening ([`ExitHandle::open`]) is plain blocking code, so the watcher does it on its blocking
//! thread right before it probes the pid: a handle opened BEFORE the probe that then finds the
//! expected start token refers to the process the session belongs to. Waiting
//! ([`ExitHandle::exited`]) registers the descriptor with the reactor and costs nothing until the
//! process dies.
//!
//! - **Windows:** a process handle (`OpenProcess(SYNCHRONIZE)`), which becomes signalled when the
//!   process exits, waited on by the system's thread pool (`RegisterWaitForSingleObject`, the way
//!   tokio waits for its own children there): no thread of ours per process. An open handle also
//!   keeps the pid from being given to another process.
//!
//! Where a handle cannot be had (an older kernel, a platform without either, a descriptor limit),
//! [`ExitWatchError::Unsupported`] says so and the watcher keeps that pid on its tick.
//!
//! **The tick asks the same descriptors.** A handle is cheap to clone (the descriptor is shared):
//! the waiting task holds one, and the watcher's safety-net tick asks all of them at once with one
//! `poll(2)` ([`not_exited`]). That answers "still the same process, still running" for every
//! held pid in a fraction of what reading each one's `/proc/<pid>/stat` costs (a stat line is
//! formatted by the kernel on every read; a pidfd's readiness is a flag).

use std::io;

/// Why a process's exit cannot be watched by event.
#[derive(Debug, thiserror::Error)]
pub enum ExitWatchError {
    /// The process was already gone when asked.
    #[error("process {pid} is already gone")]
    Gone { pid: u32 },
    /// The system cannot give an exit event for it; the tick must cover it.
    #[error("cannot watch process {pid} for its exit: {source}")]
    Unsupported {
        pid: u32,
        #[source]
        source: io::Error,
    },
}

/// One process's exit, as a descriptor that becomes readable when it exits. Clones share the
/// descriptor; it is closed when the last one is dropped.
#[derive(Debug, Clone)]
pub struct ExitHandle {
    #[cfg(target_os = "linux")]
    fd: std::sync::Arc<std::os::fd::OwnedFd>,
    #[cfg(target_os = "macos")]
    queue: std::sync::Arc<kqueue::Watcher>,
    #[cfg(windows)]
    process: std::sync::Arc<crate::win_process::ProcessHandle>,
}

impl ExitHandle {
    /// Opens the exit event of the process that has `pid` now. Blocking, no runtime needed.
    #[cfg(target_os = "linux")]
    pub fn open(pid: u32) -> Result<Self, ExitWatchError> {
        use std::os::fd::{FromRawFd, OwnedFd};
        let raw = libc::pid_t::try_from(pid)
            .ok()
            .filter(|p| *p > 0)
            .ok_or(ExitWatchError::Gone { pid })?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; no memory
        // is passed.
        let rc = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        if rc < 0 {
            let source = io::Error::last_os_error();
            return Err(match source.raw_os_error() {
                Some(libc::ESRCH) => ExitWatchError::Gone { pid },
                _ => ExitWatchError::Unsupported { pid, source },
            });
        }
        let fd = libc::c_int::try_from(rc).map_err(|_| ExitWatchError::Unsupported {
            pid,
            source: io::Error::other("descriptor out of range"),
        })?;
        // SAFETY: the syscall returned a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(ExitHandle {
            fd: std::sync::Arc::new(fd),
        })
    }

    /// Opens the exit event of the process that has `pid` now. Blocking, no runtime needed.
    #[cfg(target_os = "macos")]
    pub fn open(pid: u32) -> Result<Self, ExitWatchError> {
        use kqueue::{EventFilter, FilterFlag, Watcher};
        let raw = libc::pid_t::try_from(pid)
            .ok()
            .filter(|p| *p > 0)
            .ok_or(ExitWatchError::Gone { pid })?;
        let unsupported = |source| ExitWatchError::Unsupported { pid, source };
        let mut queue = Watcher::new().map_err(unsupported)?;
        queue
            .add_pid(raw, EventFilter::EVFILT_PROC, FilterFlag::NOTE_EXIT)
            .map_err(unsupported)?;
        // Registering the filter fails with ESRCH when the process is already gone.
        queue
            .watch()
            .map_err(|source| match source.raw_os_error() {
                Some(libc::ESRCH) => ExitWatchError::Gone { pid },
                _ => ExitWatchError::Unsupported { pid, source },
            })?;
        Ok(ExitHandle {
            queue: std::sync::Arc::new(queue),
        })
    }

    /// Opens the exit event of the process that has `pid` now. Blocking, no runtime needed.
    #[cfg(windows)]
    pub fn open(pid: u32) -> Result<Self, ExitWatchError> {
        use crate::win_process::{OpenError, ProcessHandle};
        match ProcessHandle::open(pid) {
            // A process that has exited can still be opened while anyone holds a handle to it:
            // it is gone all the same.
            Ok(process) if process.has_exited() => Err(ExitWatchError::Gone { pid }),
            Ok(process) => Ok(ExitHandle {
                process: std::sync::Arc::new(process),
            }),
            Err(OpenError::Gone) => Err(ExitWatchError::Gone { pid }),
            Err(OpenError::Denied) => Err(ExitWatchError::Unsupported {
                pid,
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            }),
            Err(OpenError::Other(source)) => Err(ExitWatchError::Unsupported { pid, source }),
        }
    }

    /// Elsewhere there is no exit event: the tick covers every pid.
    #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
    pub fn open(pid: u32) -> Result<Self, ExitWatchError> {
        Err(ExitWatchError::Unsupported {
            pid,
            source: io::Error::from(io::ErrorKind::Unsupported),
        })
    }

    /// Resolves when the process has exited. An error means the descriptor could not be
    /// registered with the reactor: the process's fate is unknown, and the tick must tell.
    /// Must be called inside a tokio runtime, on one clone of a handle only (a descriptor is
    /// registered with the reactor once).
    pub async fn exited(self) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: this clone of the shared OwnedFd moves into the AsyncFd, which keeps the
            // descriptor open until dropped, and an OwnedFd always answers the same descriptor.
            let fd = unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(
                    self.fd,
                    tokio::io::Interest::READABLE,
                )
            }?;
            // A pidfd stays readable once its process has exited: the first readiness is the
            // answer, nothing needs reading or clearing.
            let _ready = fd.readable().await?;
            Ok(())
        }
        #[cfg(target_os = "macos")]
        {
            // SAFETY: this clone of the shared kqueue watcher moves into the AsyncFd, which keeps
            // it until dropped; it owns its queue descriptor for its whole life and always
            // answers that one.
            let queue = unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(
                    self.queue,
                    tokio::io::Interest::READABLE,
                )
            }?;
            // The only filter on this queue is NOTE_EXIT for one pid.
            let _ready = queue.readable().await?;
            Ok(())
        }
        #[cfg(windows)]
        {
            windows_wait::exited(self.process).await
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
        {
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
    }
}

/// The thread pool's wait on a process handle, as a future.
#[cfg(windows)]
mod windows_wait {
    use std::ffi::c_void;
    use std::io;
    use std::sync::{Arc, Mutex};

    use tokio::sync::oneshot;
    use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Threading::{
        RegisterWaitForSingleObject, UnregisterWaitEx, INFINITE, WT_EXECUTEINWAITTHREAD,
        WT_EXECUTEONLYONCE,
    };

    use crate::win_process::ProcessHandle;

    type Signal = Mutex<Option<oneshot::Sender<()>>>;

    /// Called by the pool's wait thread once the handle is signalled.
    unsafe extern "system" fn on_signalled(context: *mut c_void, _timed_out: bool) {
        // SAFETY: `context` is the `Arc<Signal>` pointer given at registration, kept alive
        // until the wait is unregistered, which waits for this callback to finish.
        let signal = unsafe { &*(context as *const Signal) };
        if let Some(tx) = signal.lock().ok().and_then(|mut s| s.take()) {
            let _ = tx.send(());
        }
    }

    /// The registration, unregistered (waiting for a running callback) when dropped: a
    /// cancelled wait leaves nothing behind.
    struct Registration {
        wait: HANDLE,
        context: *const Signal,
    }

    impl Drop for Registration {
        fn drop(&mut self) {
            // SAFETY: `wait` came from RegisterWaitForSingleObject; INVALID_HANDLE_VALUE makes
            // the call wait for a callback in progress, after which `context` is ours alone.
            unsafe {
                UnregisterWaitEx(self.wait, INVALID_HANDLE_VALUE);
                drop(Arc::from_raw(self.context));
            }
        }
    }

    // SAFETY: the registration only holds a wait handle and a pointer to a Sync value.
    unsafe impl Send for Registration {}

    /// Registers the pool's wait for `process`; `tx` fires when it is signalled.
    fn register(process: &ProcessHandle, tx: oneshot::Sender<()>) -> io::Result<Registration> {
        let signal: Arc<Signal> = Arc::new(Mutex::new(Some(tx)));
        let context = Arc::into_raw(signal);
        let mut wait: HANDLE = std::ptr::null_mut();
        // SAFETY: a valid process handle (the caller keeps it alive while the registration
        // lives), a callback of the right signature and a context that outlives the
        // registration.
        let ok = unsafe {
            RegisterWaitForSingleObject(
                &mut wait,
                process.raw(),
                Some(on_signalled),
                context as *const c_void,
                INFINITE,
                WT_EXECUTEONLYONCE | WT_EXECUTEINWAITTHREAD,
            )
        };
        if ok == 0 {
            let e = io::Error::last_os_error();
            // SAFETY: never registered: the pointer is ours to take back.
            drop(unsafe { Arc::from_raw(context) });
            return Err(e);
        }
        Ok(Registration { wait, context })
    }

    pub async fn exited(process: Arc<ProcessHandle>) -> io::Result<()> {
        let (tx, rx) = oneshot::channel();
        let _registration = register(&process, tx)?;
        rx.await
            .map_err(|_| io::Error::other("the wait ended without the process exiting"))
    }
}

/// Asks, in one `poll(2)` that does not wait, which of these processes have certainly not exited:
/// `true` where the descriptor reports nothing. `false` where it is readable (the process exited),
/// or reports an error or an invalid descriptor: the caller must then ask the process itself.
/// Blocking only as long as the kernel takes to look; no runtime needed.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub fn not_exited(handles: &[&ExitHandle]) -> io::Result<Vec<bool>> {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<libc::pollfd> = handles
        .iter()
        .map(|h| libc::pollfd {
            #[cfg(target_os = "linux")]
            fd: h.fd.as_raw_fd(),
            #[cfg(target_os = "macos")]
            fd: h.queue.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let count = libc::nfds_t::try_from(fds.len()).map_err(io::Error::other)?;
    loop {
        // SAFETY: `fds` is a live, writable array of `count` pollfd structs; a zero timeout
        // returns at once.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), count, 0) };
        if rc >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(fds.iter().map(|f| f.revents == 0).collect())
}

/// Asks each process handle, without waiting, whether it is still running.
#[cfg(windows)]
pub fn not_exited(handles: &[&ExitHandle]) -> io::Result<Vec<bool>> {
    Ok(handles.iter().map(|h| !h.process.has_exited()).collect())
}

/// Elsewhere no handle can be opened, so none is ever asked about.
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub fn not_exited(handles: &[&ExitHandle]) -> io::Result<Vec<bool>> {
    Ok(vec![false; handles.len()])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::test_support::spawn_sleeper;
    use std::time::Duration;

    #[test]
    fn a_pid_that_is_gone_cannot_be_watched() {
        // A dead hook shell's pid: nothing to wait for.
        let mut child = spawn_sleeper(0);
        let pid = child.id();
        child.wait().unwrap();
        // Windows keeps an exited process while a handle (the Child's) holds it.
        drop(child);
        assert!(matches!(
            ExitHandle::open(pid),
            Err(ExitWatchError::Gone { .. })
        ));
        assert!(matches!(
            ExitHandle::open(0),
            Err(ExitWatchError::Gone { .. })
        ));
    }

    #[tokio::test]
    async fn the_handle_fires_when_the_process_is_killed_and_not_before() {
        let mut child = spawn_sleeper(600);
        let handle = ExitHandle::open(child.id()).unwrap();
        let mut exited = Box::pin(handle.exited());
        // While it lives the event does not fire…
        assert!(
            tokio::time::timeout(Duration::from_millis(200), &mut exited)
                .await
                .is_err(),
            "fired for a live process"
        );
        // …and once SIGKILLed it does (not reaped yet: the event must not need the reap).
        child.kill().unwrap();
        tokio::time::timeout(Duration::from_secs(10), exited)
            .await
            .expect("no exit event within 10 s of SIGKILL")
            .unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn one_poll_tells_the_running_processes_from_the_exited_ones() {
        let spawn = || spawn_sleeper(600);
        let (mut running, mut killed, mut reaped) = (spawn(), spawn(), spawn());
        let handles: Vec<ExitHandle> = [&running, &killed, &reaped]
            .iter()
            .map(|c| ExitHandle::open(c.id()).unwrap())
            .collect();
        let asked: Vec<&ExitHandle> = handles.iter().collect();
        assert_eq!(not_exited(&asked).unwrap(), vec![true, true, true]);
        // Killed and not reaped (a zombie), and killed and reaped: both have exited.
        killed.kill().unwrap();
        reaped.kill().unwrap();
        reaped.wait().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut answer = not_exited(&asked).unwrap();
        while answer != vec![true, false, false] && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            answer = not_exited(&asked).unwrap();
        }
        assert_eq!(answer, vec![true, false, false]);
        // A clone asks the same descriptor.
        let clone = handles[1].clone();
        assert_eq!(not_exited(&[&clone]).unwrap(), vec![false]);
        running.kill().unwrap();
        running.wait().unwrap();
        killed.wait().unwrap();
    }
}
