//! What carries the control protocol: a unix socket on Linux and macOS, a named pipe on Windows.
//!
//! Everything above this module (the protocol, the limits, the deadlines, the pools) is the same
//! on every desktop; only how a connection is made and who may make it differ.
//!
//! **Windows.** The pipe's name is derived from the socket path the engine would use elsewhere
//! ([`pipe_name`]), so `AGENT_TRAY_HOME` gives a private world there too and the CLI, the hook
//! and the desktop app find it the same way. Pipe names are one namespace for the whole machine,
//! so the engine:
//! - creates the first instance with `FILE_FLAG_FIRST_PIPE_INSTANCE`: if any process (another
//!   user's included) created that name first, binding fails and says so instead of serving
//!   beside an impostor;
//! - gives every instance a DACL that grants access to this user's SID only (no one else's, not
//!   even Administrators'), and refuses remote clients.
//!
//! The client, before it sends a byte, asks which process serves the pipe and checks that
//! process runs as the same user, and that the pipe object itself is owned by this user (a
//! process of ours could serve a pipe another user created) ([`ClientError::Untrusted`](super::client::ClientError)
//! otherwise). Reads and writes use overlapped I/O so every one has a deadline, as the socket's
//! `SO_RCVTIMEO` gives on unix.

use std::path::Path;

/// The named pipe that stands for `socket` on Windows: `\\.\pipe\agent-tray-` and the first 16
/// hex digits of the SHA-256 of the socket path, read as Windows reads paths (case-folded, `/`
/// and `\` alike), so `C:\a/run\x` and `c:\A\run\x` are one pipe. Pure, so it is tested on
/// every OS.
pub fn pipe_name(socket: &Path) -> String {
    use sha2::{Digest, Sha256};
    let folded = socket.to_string_lossy().to_lowercase().replace('/', "\\");
    let digest = Sha256::digest(folded.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!(r"\\.\pipe\agent-tray-{hex}")
}

#[cfg(unix)]
pub use unix::*;
#[cfg(windows)]
pub use windows::*;

#[cfg(unix)]
mod unix {
    use std::io;

    /// One accepted connection, split into halves that work at once (a watcher reads for a
    /// hang-up while it writes changes).
    pub type ServerConn = tokio::net::UnixStream;
    pub type ServerReader = tokio::net::unix::OwnedReadHalf;
    pub type ServerWriter = tokio::net::unix::OwnedWriteHalf;

    pub fn split(conn: ServerConn) -> (ServerReader, ServerWriter) {
        conn.into_split()
    }

    /// A listener of the app's second-launch channel.
    pub type LocalListener = tokio::net::UnixListener;

    pub async fn accept_local(listener: &mut LocalListener) -> io::Result<ServerConn> {
        listener.accept().await.map(|(stream, _)| stream)
    }

    /// The peer is this user (its uid, as the kernel saw it connect).
    pub fn peer_is_this_user(conn: &ServerConn) -> io::Result<bool> {
        let cred = conn.peer_cred()?;
        // SAFETY: geteuid has no failure mode and touches no memory.
        let me = unsafe { libc::geteuid() };
        if cred.uid() != me {
            tracing::warn!(
                peer_uid = cred.uid(),
                "refused a connection from another user"
            );
        }
        Ok(cred.uid() == me)
    }
}

#[cfg(windows)]
mod windows {
    use std::ffi::c_void;
    use std::io::{self, Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};
    use windows_sys::Win32::Foundation::{
        CloseHandle, GetLastError, LocalFree, ERROR_BAD_PATHNAME, ERROR_FILE_NOT_FOUND,
        ERROR_IO_PENDING, ERROR_PIPE_BUSY, ERROR_SEM_TIMEOUT, GENERIC_READ, GENERIC_WRITE, HANDLE,
        INVALID_HANDLE_VALUE, WAIT_OBJECT_0,
    };
    use windows_sys::Win32::Security::Authorization::{GetSecurityInfo, SE_KERNEL_OBJECT};
    use windows_sys::Win32::Security::{
        OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, SECURITY_ATTRIBUTES,
    };
    use windows_sys::Win32::Storage::FileSystem::{
        CreateFileW, ReadFile, WriteFile, FILE_FLAG_OVERLAPPED, OPEN_EXISTING,
        SECURITY_IDENTIFICATION, SECURITY_SQOS_PRESENT,
    };
    use windows_sys::Win32::System::Pipes::{GetNamedPipeServerProcessId, WaitNamedPipeW};
    use windows_sys::Win32::System::Threading::{
        CreateEventW, OpenProcess, WaitForSingleObject, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    use windows_sys::Win32::System::IO::{CancelIoEx, GetOverlappedResult, OVERLAPPED};

    pub type ServerConn = NamedPipeServer;
    pub type ServerReader = tokio::io::ReadHalf<NamedPipeServer>;
    pub type ServerWriter = tokio::io::WriteHalf<NamedPipeServer>;

    pub fn split(conn: ServerConn) -> (ServerReader, ServerWriter) {
        tokio::io::split(conn)
    }

    /// A listener of the app's second-launch channel.
    pub type LocalListener = Listener;

    pub async fn accept_local(listener: &mut LocalListener) -> io::Result<ServerConn> {
        listener.accept().await
    }

    /// The pipe's DACL admits this user only and remote clients are refused: whoever connected
    /// is this user.
    pub fn peer_is_this_user(_conn: &ServerConn) -> io::Result<bool> {
        Ok(true)
    }

    fn wide(text: &str) -> Vec<u16> {
        text.encode_utf16().chain(std::iter::once(0)).collect()
    }

    /// An owned kernel handle, closed on drop.
    #[derive(Debug)]
    struct Owned(HANDLE);
    // SAFETY: kernel handles may be used from any thread.
    unsafe impl Send for Owned {}
    // SAFETY: as above; overlapped calls on one handle from several threads are allowed.
    unsafe impl Sync for Owned {}
    impl Drop for Owned {
        fn drop(&mut self) {
            // SAFETY: a handle this value owns, closed once.
            unsafe { CloseHandle(self.0) };
        }
    }

    use crate::os_fs::windows_security::{
        descriptor_from_sddl, sid_text, this_user_sid, token_user_sid,
    };

    /// A security descriptor that grants everything to `sid` and nothing to anyone else, for
    /// every instance of the pipe.
    pub struct PrivateDescriptor {
        descriptor: PSECURITY_DESCRIPTOR,
        attributes: SECURITY_ATTRIBUTES,
    }
    // SAFETY: the descriptor is only read after creation.
    unsafe impl Send for PrivateDescriptor {}
    // SAFETY: as above.
    unsafe impl Sync for PrivateDescriptor {}

    impl PrivateDescriptor {
        /// Owned by this user (named, not left to the token's default owner, which for an
        /// elevated administrator is the Administrators group) and open to this user only.
        pub fn for_this_user() -> io::Result<Box<PrivateDescriptor>> {
            let me = this_user_sid()?;
            Self::from_sddl(&format!("O:{me}D:P(A;;GA;;;{me})"))
        }

        /// A descriptor from its SDDL text (tests build foreign-owned pipes with it).
        pub fn from_sddl(sddl: &str) -> io::Result<Box<PrivateDescriptor>> {
            let descriptor = descriptor_from_sddl(sddl)?;
            let mut boxed = Box::new(PrivateDescriptor {
                descriptor,
                attributes: SECURITY_ATTRIBUTES {
                    nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
                    lpSecurityDescriptor: descriptor,
                    bInheritHandle: 0,
                },
            });
            boxed.attributes.lpSecurityDescriptor = boxed.descriptor;
            Ok(boxed)
        }

        fn attributes(&self) -> *mut c_void {
            &self.attributes as *const SECURITY_ATTRIBUTES as *mut c_void
        }
    }

    impl Drop for PrivateDescriptor {
        fn drop(&mut self) {
            // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
            unsafe { LocalFree(self.descriptor) };
        }
    }

    /// The engine's pipe: one instance waits for the next client at any time.
    pub struct Listener {
        name: String,
        next: NamedPipeServer,
        descriptor: Box<PrivateDescriptor>,
    }

    impl std::fmt::Debug for Listener {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Listener")
                .field("name", &self.name)
                .finish()
        }
    }

    fn instance(
        name: &str,
        descriptor: &PrivateDescriptor,
        first: bool,
    ) -> io::Result<NamedPipeServer> {
        let mut options = ServerOptions::new();
        options
            .first_pipe_instance(first)
            .reject_remote_clients(true);
        // SAFETY: the attributes point at a descriptor that lives as long as the listener.
        unsafe { options.create_with_security_attributes_raw(name, descriptor.attributes()) }
    }

    impl Listener {
        /// Creates the pipe's first instance. Fails with `PermissionDenied` when the name is
        /// already taken (by an engine of ours or by anyone else).
        pub fn bind(name: &str) -> io::Result<Listener> {
            // Asked first as well: `FILE_FLAG_FIRST_PIPE_INSTANCE` is what Windows enforces,
            // but not every implementation does (Wine 8 lets a second "first" instance in).
            if pipe_exists(name) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("the pipe {name} already exists"),
                ));
            }
            let descriptor = PrivateDescriptor::for_this_user()?;
            let next = instance(name, &descriptor, true)?;
            Ok(Listener {
                name: name.to_string(),
                next,
                descriptor,
            })
        }

        /// Waits for the next client; a new instance takes its place before it is handed over.
        pub async fn accept(&mut self) -> io::Result<ServerConn> {
            self.next.connect().await?;
            let fresh = instance(&self.name, &self.descriptor, false)?;
            Ok(std::mem::replace(&mut self.next, fresh))
        }
    }

    /// Whether any process serves a pipe of this name now (an instance free or all busy).
    fn pipe_exists(name: &str) -> bool {
        let wide_name = wide(name);
        // SAFETY: a NUL-terminated name; waits at most 1 ms.
        if unsafe { WaitNamedPipeW(wide_name.as_ptr(), 1) } != 0 {
            return true;
        }
        // SAFETY: reads this thread's last error.
        let code = unsafe { GetLastError() };
        // Only "no such pipe" says nobody serves it; a timeout means every instance is busy.
        !matches!(code, ERROR_FILE_NOT_FOUND | ERROR_BAD_PATHNAME)
    }

    /// The client's end of the pipe, with a deadline on every read and write. Clones share the
    /// pipe and its timeouts, as a socket's clones share `SO_RCVTIMEO`.
    #[derive(Debug, Clone)]
    pub struct PipeClient {
        handle: Arc<Owned>,
        timeouts: Arc<Timeouts>,
    }

    /// Read and write timeouts in milliseconds; `u64::MAX` for none.
    #[derive(Debug)]
    struct Timeouts {
        read_ms: AtomicU64,
        write_ms: AtomicU64,
    }

    fn to_ms(timeout: Option<Duration>) -> u64 {
        timeout.map_or(u64::MAX, |t| {
            u64::try_from(t.as_millis()).unwrap_or(u64::MAX - 1).max(1)
        })
    }

    fn from_ms(ms: u64) -> Option<Duration> {
        (ms != u64::MAX).then(|| Duration::from_millis(ms))
    }

    /// Why the client would not use a pipe.
    #[derive(Debug)]
    pub enum ConnectError {
        /// No engine serves that name.
        NotRunning,
        TimedOut,
        /// Served by a process of another user (or one that cannot be asked).
        Untrusted(String),
        Io(io::Error),
    }

    impl PipeClient {
        /// Connects within `budget`, then checks the server runs as this user.
        pub fn connect(name: &str, budget: Duration) -> Result<PipeClient, ConnectError> {
            let wide_name = wide(name);
            let give_up_at = std::time::Instant::now() + budget;
            let handle = loop {
                // SAFETY: a NUL-terminated name; no security attributes; no template.
                let handle = unsafe {
                    CreateFileW(
                        wide_name.as_ptr(),
                        GENERIC_READ | GENERIC_WRITE,
                        0,
                        std::ptr::null(),
                        OPEN_EXISTING,
                        FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
                        std::ptr::null_mut(),
                    )
                };
                if handle != INVALID_HANDLE_VALUE {
                    break Owned(handle);
                }
                // SAFETY: reads this thread's last error.
                match unsafe { GetLastError() } {
                    ERROR_FILE_NOT_FOUND => return Err(ConnectError::NotRunning),
                    ERROR_PIPE_BUSY => {
                        let left = give_up_at.saturating_duration_since(std::time::Instant::now());
                        if left.is_zero() {
                            return Err(ConnectError::TimedOut);
                        }
                        let ms = u32::try_from(left.as_millis()).unwrap_or(u32::MAX).max(1);
                        // SAFETY: a NUL-terminated name.
                        if unsafe { WaitNamedPipeW(wide_name.as_ptr(), ms) } == 0 {
                            // SAFETY: as above.
                            match unsafe { GetLastError() } {
                                ERROR_SEM_TIMEOUT => return Err(ConnectError::TimedOut),
                                ERROR_FILE_NOT_FOUND => return Err(ConnectError::NotRunning),
                                _ => {}
                            }
                        }
                    }
                    code => {
                        return Err(ConnectError::Io(io::Error::from_raw_os_error(code as i32)))
                    }
                }
            };
            check_server_is_this_user(&handle)?;
            Ok(PipeClient {
                handle: Arc::new(handle),
                timeouts: Arc::new(Timeouts {
                    read_ms: AtomicU64::new(u64::MAX),
                    write_ms: AtomicU64::new(u64::MAX),
                }),
            })
        }

        pub fn try_clone(&self) -> io::Result<PipeClient> {
            Ok(self.clone())
        }

        pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
            self.timeouts
                .read_ms
                .store(to_ms(timeout), Ordering::Relaxed);
            Ok(())
        }

        pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
            self.timeouts
                .write_ms
                .store(to_ms(timeout), Ordering::Relaxed);
            Ok(())
        }

        fn read_timeout(&self) -> Option<Duration> {
            from_ms(self.timeouts.read_ms.load(Ordering::Relaxed))
        }

        fn write_timeout(&self) -> Option<Duration> {
            from_ms(self.timeouts.write_ms.load(Ordering::Relaxed))
        }

        /// One overlapped read or write, waited for at most `timeout`, cancelled after it.
        ///
        /// The operation works on a heap block of its own (its `OVERLAPPED`, its event and a copy
        /// of the bytes), never on the caller's buffer: if a cancelled operation does not end
        /// within [`CANCEL_GRACE`], the block is left to the system (leaked, a few KiB) and the
        /// call returns at its deadline anyway, instead of waiting without bound for an end that
        /// only the server's hang-up would bring.
        fn overlapped(&self, timeout: Option<Duration>, op: Op<'_>) -> io::Result<usize> {
            // SAFETY: a manual-reset, unnamed event, closed by `Owned`.
            let event = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
            if event.is_null() {
                return Err(io::Error::last_os_error());
            }
            let mut block = Box::new(InFlight {
                // SAFETY: plain data; all-zero is the documented start state.
                overlapped: unsafe { std::mem::zeroed() },
                event: Owned(event),
                bytes: match &op {
                    Op::Read(buf) => vec![0; buf.len()],
                    Op::Write(buf) => buf.to_vec(),
                },
            });
            block.overlapped.hEvent = block.event.0;
            let len = u32::try_from(block.bytes.len()).unwrap_or(u32::MAX);
            let mut done = 0u32;
            // SAFETY: the bytes and the OVERLAPPED live in `block`, which outlives the operation:
            // it is dropped only once the operation has ended, or leaked.
            let started = unsafe {
                match op {
                    Op::Read(_) => ReadFile(
                        self.handle.0,
                        block.bytes.as_mut_ptr(),
                        len,
                        &mut done,
                        &mut block.overlapped,
                    ),
                    Op::Write(_) => WriteFile(
                        self.handle.0,
                        block.bytes.as_ptr(),
                        len,
                        &mut done,
                        &mut block.overlapped,
                    ),
                }
            };
            if started == 0 {
                // SAFETY: reads this thread's last error.
                let code = unsafe { GetLastError() };
                if is_closed_pipe(code) {
                    return Ok(0); // the other end is gone: the end of the stream
                }
                if code != ERROR_IO_PENDING {
                    return Err(io::Error::from_raw_os_error(code as i32));
                }
                let ms = timeout.map_or(u32::MAX, |t| {
                    u32::try_from(t.as_millis()).unwrap_or(u32::MAX - 1).max(1)
                });
                // SAFETY: a valid event handle.
                if unsafe { WaitForSingleObject(block.event.0, ms) } != WAIT_OBJECT_0 {
                    // SAFETY: cancels this operation only.
                    unsafe { CancelIoEx(self.handle.0, &block.overlapped) };
                    let grace = u32::try_from(CANCEL_GRACE.as_millis()).unwrap_or(u32::MAX);
                    // SAFETY: as above.
                    if unsafe { WaitForSingleObject(block.event.0, grace) } != WAIT_OBJECT_0 {
                        // Still in flight: the system may yet write into the block.
                        Box::leak(block);
                    }
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
                }
            }
            // SAFETY: the operation has ended (completed at once, or its event is set); this
            // only reads its result.
            if unsafe { GetOverlappedResult(self.handle.0, &block.overlapped, &mut done, 0) } == 0 {
                let e = io::Error::last_os_error();
                // A closed pipe is the end of the stream, as a closed socket is.
                if e.raw_os_error().is_some_and(|c| is_closed_pipe(c as u32)) {
                    return Ok(0);
                }
                return Err(e);
            }
            let done = (done as usize).min(block.bytes.len());
            if let Op::Read(buf) = op {
                buf[..done].copy_from_slice(&block.bytes[..done]);
            }
            Ok(done)
        }
    }

    /// How long a cancelled pipe operation is given to end before its memory is left behind.
    const CANCEL_GRACE: Duration = Duration::from_millis(200);

    /// What one overlapped operation needs to outlive it (see `PipeClient::overlapped`).
    struct InFlight {
        overlapped: OVERLAPPED,
        event: Owned,
        bytes: Vec<u8>,
    }

    /// `ERROR_BROKEN_PIPE` (109), `ERROR_NO_DATA` (232, "being closed"), `ERROR_PIPE_NOT_CONNECTED`
    /// (233): the server end has gone.
    fn is_closed_pipe(code: u32) -> bool {
        matches!(code, 109 | 232 | 233)
    }

    enum Op<'a> {
        Read(&'a mut [u8]),
        Write(&'a [u8]),
    }

    impl Read for &PipeClient {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if buf.is_empty() {
                return Ok(0);
            }
            self.overlapped(self.read_timeout(), Op::Read(buf))
        }
    }

    impl Write for &PipeClient {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.overlapped(self.write_timeout(), Op::Write(buf))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Read for PipeClient {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            (&*self).read(buf)
        }
    }

    impl Write for PipeClient {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            (&*self).write(buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The server end belongs to a process of this user.
    fn check_server_is_this_user(pipe: &Owned) -> Result<(), ConnectError> {
        let mut server_pid = 0u32;
        // SAFETY: a valid pipe handle and a writable u32.
        if unsafe { GetNamedPipeServerProcessId(pipe.0, &mut server_pid) } == 0 {
            return Err(ConnectError::Untrusted(format!(
                "cannot tell which process serves it ({})",
                io::Error::last_os_error()
            )));
        }
        // SAFETY: plain call; null is the failure.
        let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, server_pid) };
        if process.is_null() {
            return Err(ConnectError::Untrusted(format!(
                "its server (pid {server_pid}) cannot be asked who runs it ({})",
                io::Error::last_os_error()
            )));
        }
        let process = Owned(process);
        let theirs = token_user_sid(process.0).map_err(|e| {
            ConnectError::Untrusted(format!("cannot read who runs pid {server_pid} ({e})"))
        })?;
        let mine = this_user_sid().map_err(ConnectError::Io)?;
        if theirs != mine {
            return Err(ConnectError::Untrusted(format!(
                "it is served by pid {server_pid}, which runs as {theirs}, not as you ({mine}); another user may be listening there"
            )));
        }
        // The pipe object itself: a process of ours serving a pipe someone else created (and so
        // may have opened to others) is not ours either.
        let owner = pipe_owner_sid(pipe)
            .map_err(|e| ConnectError::Untrusted(format!("cannot read who owns the pipe ({e})")))?;
        if owner != mine {
            return Err(ConnectError::Untrusted(format!(
                "the pipe is owned by {owner}, not by you ({mine}); another user may have created it"
            )));
        }
        Ok(())
    }

    /// The owner SID of a pipe, as its security descriptor names it.
    fn pipe_owner_sid(pipe: &Owned) -> io::Result<String> {
        let mut owner: PSID = std::ptr::null_mut();
        let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: a valid handle; the call allocates the descriptor (freed below) and points
        // `owner` into it.
        let code = unsafe {
            GetSecurityInfo(
                pipe.0,
                SE_KERNEL_OBJECT,
                OWNER_SECURITY_INFORMATION,
                &mut owner,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut descriptor,
            )
        };
        if code != 0 {
            return Err(io::Error::from_raw_os_error(code as i32));
        }
        let text = if owner.is_null() {
            Err(io::Error::other("the pipe names no owner"))
        } else {
            // SAFETY: `owner` points into `descriptor`, alive until the free below.
            unsafe { sid_text(owner) }
        };
        // SAFETY: allocated by GetSecurityInfo, freed once.
        unsafe { LocalFree(descriptor) };
        text
    }

    #[cfg(test)]
    #[allow(clippy::unwrap_used)]
    mod tests {
        use super::*;

        /// A pipe of `sddl`'s descriptor, served by this very process (so the server's user is
        /// always this user's: only the owner can tell them apart), and a client's verdict.
        fn connect_to_pipe_of(sddl: &str, name: &str) -> Result<PipeClient, ConnectError> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let _entered = runtime.enter();
            let descriptor = PrivateDescriptor::from_sddl(sddl).unwrap();
            let mut options = ServerOptions::new();
            options.first_pipe_instance(true);
            // SAFETY: the descriptor outlives the pipe's creation.
            let _server = unsafe {
                options.create_with_security_attributes_raw(name, descriptor.attributes())
            }
            .unwrap();
            PipeClient::connect(name, Duration::from_secs(2))
        }

        /// Another user, or a program of theirs, creates the pipe and a process of ours ends up
        /// serving it (or the pipe is handed over): the owner check refuses it before a byte is
        /// sent. The Administrators group stands for "not you": a token may name a group it is
        /// in as an object's owner, and this user is one of them under Wine.
        #[test]
        fn a_pipe_owned_by_someone_else_is_refused_even_when_our_process_serves_it() {
            let me = this_user_sid().unwrap();
            let ours = connect_to_pipe_of(
                &format!("O:{me}D:P(A;;GA;;;{me})"),
                r"\\.\pipe\agent-tray-test-owner-ours",
            );
            assert!(ours.is_ok(), "a pipe this user owns is trusted: {ours:?}");
            let theirs = connect_to_pipe_of(
                &format!("O:BAD:P(A;;GA;;;{me})"),
                r"\\.\pipe\agent-tray-test-owner-theirs",
            );
            match theirs {
                Err(ConnectError::Untrusted(reason)) => {
                    assert!(reason.contains("owned by"), "{reason}")
                }
                other => panic!("a pipe owned by another SID must be refused: {other:?}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_socket_path_has_its_own_pipe_and_case_does_not_matter() {
        let a = pipe_name(Path::new(
            r"C:\Users\ada\AppData\Local\agent-tray\run\agent-tray.sock",
        ));
        let same = pipe_name(Path::new(
            r"c:\users\ADA\AppData\Local\agent-tray\run\agent-tray.sock",
        ));
        let other = pipe_name(Path::new(
            r"C:\Users\bob\AppData\Local\agent-tray\run\agent-tray.sock",
        ));
        assert_eq!(a, same);
        let slashed = pipe_name(Path::new(
            r"C:\Users\ada\AppData\Local\agent-tray/run/agent-tray.sock",
        ));
        assert_eq!(a, slashed, "either separator names the same pipe");
        assert_ne!(a, other);
        assert!(a.starts_with(r"\\.\pipe\agent-tray-"), "{a}");
        assert_eq!(a.len(), r"\\.\pipe\agent-tray-".len() + 16);
    }
}
