//! Windows' process table, as the engine asks it: what [`crate::process`] reads from `/proc` on
//! Linux and `proc_pidinfo` on macOS.
//!
//! - **Alive**: `OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION)` and a zero-time
//!   wait on the handle. A process object outlives its process while anyone holds a handle, so
//!   "the handle opened" is not "running": a signalled handle has exited (Windows' zombie).
//!   "Access denied" means it exists and is someone else's, as `EPERM` does on unix.
//! - **Identity**: the creation time from `GetProcessTimes`, in 100 ns ticks since 1601. A pid is
//!   reused only after every handle to the old process is closed, and the new process has
//!   another creation time, so (pid, creation time) names one process.
//! - **Parents and names**: one `CreateToolhelp32Snapshot` of all processes; Windows keeps the
//!   parent's pid even after the parent exits (the number may then name a newer process, which
//!   a creation time later than the child's gives away: [`parent_of`] checks that).
//!
//! The names are pure text work (`process::comm_of_exe`), tested on every OS; the calls are all
//! here.

use std::io;

use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_ACCESS_DENIED, ERROR_INVALID_PARAMETER, FILETIME, HANDLE,
    INVALID_HANDLE_VALUE, WAIT_OBJECT_0, WAIT_TIMEOUT,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{
    GetProcessTimes, OpenProcess, WaitForSingleObject, PROCESS_QUERY_LIMITED_INFORMATION,
    PROCESS_SYNCHRONIZE,
};

/// An open process handle, closed on drop.
#[derive(Debug)]
pub struct ProcessHandle(HANDLE);

// SAFETY: a process handle is a kernel object reference, usable from any thread.
unsafe impl Send for ProcessHandle {}
// SAFETY: as above; every call made through `&ProcessHandle` is thread-safe.
unsafe impl Sync for ProcessHandle {}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        // SAFETY: the handle was returned by OpenProcess and is closed once, here.
        unsafe { CloseHandle(self.0) };
    }
}

/// Why a process could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// No process has that pid.
    Gone,
    /// It exists and is not ours to open.
    Denied,
    Other(io::Error),
}

impl ProcessHandle {
    /// Opens `pid` for waiting and for its times.
    pub fn open(pid: u32) -> Result<ProcessHandle, OpenError> {
        if pid == 0 {
            return Err(OpenError::Gone);
        }
        // SAFETY: plain call; a null handle is the failure.
        let handle = unsafe {
            OpenProcess(
                PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION,
                0,
                pid,
            )
        };
        if handle.is_null() {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error().map(|c| c as u32) {
                Some(ERROR_INVALID_PARAMETER) => OpenError::Gone,
                Some(ERROR_ACCESS_DENIED) => OpenError::Denied,
                _ => OpenError::Other(e),
            });
        }
        Ok(ProcessHandle(handle))
    }

    pub fn raw(&self) -> HANDLE {
        self.0
    }

    /// Has the process exited (the handle is signalled)? Does not wait.
    pub fn has_exited(&self) -> bool {
        // SAFETY: a valid handle; a zero timeout returns at once.
        match unsafe { WaitForSingleObject(self.0, 0) } {
            WAIT_TIMEOUT => false,
            WAIT_OBJECT_0 => true,
            // A failed wait tells nothing good: treat as exited so the caller looks again.
            _ => true,
        }
    }

    /// The creation time, in 100 ns ticks since 1601-01-01 UTC.
    pub fn creation_ticks(&self) -> Option<u64> {
        let zero = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
        // SAFETY: a valid handle and four writable FILETIMEs.
        let ok =
            unsafe { GetProcessTimes(self.0, &mut created, &mut exited, &mut kernel, &mut user) };
        (ok != 0)
            .then(|| (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
    }
}

/// Alive (exists and has not exited), whoever owns it.
pub fn exists(pid: u32) -> bool {
    match ProcessHandle::open(pid) {
        Ok(handle) => !handle.has_exited(),
        Err(OpenError::Denied) => true,
        Err(OpenError::Gone | OpenError::Other(_)) => false,
    }
}

/// Has exited but is still held by a handle somewhere.
pub fn has_exited(pid: u32) -> bool {
    ProcessHandle::open(pid).is_ok_and(|h| h.has_exited())
}

/// The creation time of `pid`, when it can be read.
pub fn creation_ticks(pid: u32) -> Option<u64> {
    ProcessHandle::open(pid).ok()?.creation_ticks()
}

/// One process of the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub pid: u32,
    pub ppid: u32,
    /// The executable's file name, as Windows lists it (`node.exe`).
    pub exe: String,
}

/// Every process on the machine, from one snapshot.
pub fn snapshot() -> io::Result<Vec<SnapshotEntry>> {
    // SAFETY: plain call; INVALID_HANDLE_VALUE is the failure.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    let snap = ProcessHandle(snap);
    // SAFETY: plain data; dwSize must be set before the first call.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    let mut out = Vec::new();
    // SAFETY: a valid snapshot handle and a writable entry of the size it says.
    let mut more = unsafe { Process32FirstW(snap.0, &mut entry) } != 0;
    while more {
        let name_len = entry
            .szExeFile
            .iter()
            .position(|c| *c == 0)
            .unwrap_or(entry.szExeFile.len());
        out.push(SnapshotEntry {
            pid: entry.th32ProcessID,
            ppid: entry.th32ParentProcessID,
            exe: String::from_utf16_lossy(&entry.szExeFile[..name_len]),
        });
        // SAFETY: as above.
        more = unsafe { Process32NextW(snap.0, &mut entry) } != 0;
    }
    Ok(out)
}

/// One process's entry in a fresh snapshot.
pub fn entry(pid: u32) -> Option<SnapshotEntry> {
    snapshot().ok()?.into_iter().find(|e| e.pid == pid)
}

/// `pid`'s parent, when the parent still is the process that started it (created no later than
/// the child): Windows keeps a dead parent's number, which a newer process may have taken.
pub fn parent_of(pid: u32) -> Option<u32> {
    let ppid = entry(pid)?.ppid;
    if ppid == 0 {
        return None;
    }
    match (creation_ticks(ppid), creation_ticks(pid)) {
        (Some(parent), Some(child)) if parent > child => None,
        _ => Some(ppid),
    }
}

/// The direct children of `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    snapshot()
        .map(|all| {
            all.into_iter()
                .filter(|e| e.ppid == pid && e.pid != pid)
                .map(|e| e.pid)
                .collect()
        })
        .unwrap_or_default()
}
