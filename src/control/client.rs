//! The blocking client of the control socket, for the hook and the CLI.
//!
//! Blocking on purpose: the hook must start in about a millisecond and must not link or start an
//! async runtime. Every step is bounded: the connect (a unix socket whose listener's backlog is
//! full would otherwise block), the write and the read each get a deadline, so a wedged engine
//! costs a caller at most its budget, never a hang.
//!
//! **Who is listening.** Before it connects, the client checks the socket and its folder: both
//! must belong to this user, and neither may be writable by group or others. With a shared
//! `XDG_RUNTIME_DIR` (or a loosened folder) another user could otherwise put their own socket
//! there and receive every observation, or answer `list` with made-up sessions. Refused with a
//! clear reason ([`ClientError::Untrusted`]).
//!
//! **An engine that is starting.** The engine takes its ownership lock ([`ownership_lock`]) before
//! it listens, and opens its socket (or pipe) only once it holds it. A client that finds nothing
//! listening asks the lock: held means an engine is on its way, and the client tries again
//! until the socket answers or its own budget is spent, then says "starting"
//! ([`ClientError::Starting`]) rather than "not running"; free means nobody is coming. The budget
//! is the caller's: the CLI's few seconds, the hook's 100 ms (a hook never waits past it).
//!
//! **Replies are streamed, not capped.** A reply is parsed straight from the socket as it arrives
//! (`history` of thousands of sessions is several MiB); what bounds it is the deadline, and the
//! engine is trusted by the check above. Only requests have a size limit ([`MAX_LINE`], the
//! engine's side).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

/// The client's end of a connection: a unix socket, or the named pipe on Windows.
#[cfg(unix)]
type ClientConn = std::os::unix::net::UnixStream;
#[cfg(windows)]
type ClientConn = super::transport::PipeClient;

use super::protocol::{encode_request, Reply, Request, TypedReply};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens there: no engine is running.
    #[cfg_attr(unix, error("no Agent Tray is running (no socket at {0})"))]
    #[cfg_attr(windows, error("no Agent Tray is running (no pipe for {0})"))]
    NotRunning(String),
    /// The socket or its folder could be someone else's: not used.
    #[error("refusing to use the socket {path}: {reason}")]
    Untrusted { path: String, reason: String },
    /// An engine holds the ownership lock but did not listen within the caller's budget.
    #[error("Agent Tray is starting (at {0}) and did not answer in time; try again in a moment")]
    Starting(String),
    #[error("timed out talking to Agent Tray at {0}")]
    TimedOut(String),
    #[error("talking to Agent Tray at {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("Agent Tray sent a reply that is not valid: {0}")]
    BadReply(String),
}

/// Checks that the folder holding `socket` is this user's, has a DACL, and lets no one but this
/// user and SYSTEM write to it (unix's `mode & 0o022`). `Ok(())` also when the folder does not
/// exist (the connect then says nobody runs). The pipe itself (its server's user and its owner)
/// is checked when connecting.
#[cfg(windows)]
pub fn check_socket_owner(socket: &Path) -> Result<(), ClientError> {
    use crate::os_fs::folder_dacl::{check, read, Rule};
    let folder = socket.parent().unwrap_or_else(|| Path::new("."));
    let io_err = |source| ClientError::Io {
        path: folder.display().to_string(),
        source,
    };
    let security = match read(folder) {
        Ok(security) => security,
        // ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND
        Err(e) if matches!(e.raw_os_error(), Some(2 | 3)) => return Ok(()),
        Err(e) => return Err(io_err(e)),
    };
    let me = crate::os_fs::windows_security::this_user_sid().map_err(io_err)?;
    check(&me, &security, Rule::NoOtherWriter).map_err(|reason| ClientError::Untrusted {
        path: socket.display().to_string(),
        reason: format!(
            "its folder {} cannot be trusted: {reason} (the socket's folder must be yours and private: let Agent Tray make it, or set AGENT_TRAY_HOME to a folder of your own)",
            folder.display()
        ),
    })
}

/// Checks that `socket` and the folder holding it are this user's and that no one else may write
/// to them. `Ok(())` also when the socket does not exist (the connect then says nobody runs).
#[cfg(unix)]
pub fn check_socket_owner(socket: &Path) -> Result<(), ClientError> {
    // SAFETY: geteuid has no failure mode and touches no memory.
    let me = unsafe { libc::geteuid() };
    check_socket_owner_as(socket, me)
}

#[cfg(unix)]
fn check_socket_owner_as(socket: &Path, me: u32) -> Result<(), ClientError> {
    use std::fs;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let path = socket.display().to_string();
    let untrusted = |reason: String| ClientError::Untrusted {
        path: path.clone(),
        reason,
    };
    let folder = socket.parent().unwrap_or_else(|| Path::new("/"));
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let folder_meta = match fs::metadata(folder) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(ClientError::Io {
                path: folder.display().to_string(),
                source: e,
            })
        }
    };
    let fix = "(the socket's folder must be yours and private: `chmod 700` it, or set AGENT_TRAY_HOME to a private folder)";
    if folder_meta.uid() != me {
        return Err(untrusted(format!(
            "its folder {} belongs to uid {}, not to you (uid {me}) {fix}",
            folder.display(),
            folder_meta.uid()
        )));
    }
    if folder_meta.mode() & 0o022 != 0 {
        return Err(untrusted(format!(
            "its folder {} is writable by others (mode {:o}) {fix}",
            folder.display(),
            folder_meta.mode() & 0o7777
        )));
    }
    // lstat: a symlink is not a socket, whatever it points at.
    let meta = match fs::symlink_metadata(socket) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(ClientError::Io {
                path: path.clone(),
                source: e,
            })
        }
    };
    if !meta.file_type().is_socket() {
        return Err(untrusted("it is not a socket".into()));
    }
    if meta.uid() != me {
        return Err(untrusted(format!(
            "it belongs to uid {}, not to you (uid {me}); another user may be listening there",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(untrusted(format!(
            "it is writable by others (mode {:o}); Agent Tray makes it 0600",
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// The engine's ownership lock for `socket`, beside it: whoever holds it is the engine of that
/// socket, starting or running (see the engine's control server).
pub fn ownership_lock(socket: &Path) -> std::path::PathBuf {
    socket.with_file_name("agent-tray.lock")
}

/// Whether an engine holds the ownership lock of `socket` now. Asked with a shared lock taken and
/// given back at once (the engine's exclusive try waits out such a probe), never created.
pub fn engine_holds_lock(socket: &Path) -> bool {
    use crate::os_fs::{try_lock, unlock, LockKind};
    let Ok(file) = crate::os_fs::reading_options().open(ownership_lock(socket)) else {
        return false;
    };
    if try_lock(&file, LockKind::Shared) {
        unlock(&file);
        false
    } else {
        true
    }
}

/// How often a client looks again for the socket of an engine that is starting.
const START_POLL: Duration = Duration::from_millis(20);

/// Why a connection could not be made.
enum Connect {
    Io(io::Error),
    /// Windows: the pipe is served by someone else.
    #[cfg_attr(unix, allow(dead_code))]
    Untrusted(String),
}

#[cfg(unix)]
fn connect_within(socket: &Path, budget: Duration) -> Result<ClientConn, Connect> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let addr = SockAddr::unix(socket).map_err(Connect::Io)?;
    let sock = Socket::new(Domain::UNIX, Type::STREAM, None).map_err(Connect::Io)?;
    sock.connect_timeout(&addr, budget).map_err(Connect::Io)?;
    Ok(sock.into())
}

#[cfg(windows)]
fn connect_within(socket: &Path, budget: Duration) -> Result<ClientConn, Connect> {
    use super::transport::{pipe_name, ConnectError, PipeClient};
    PipeClient::connect(&pipe_name(socket), budget).map_err(|e| match e {
        ConnectError::NotRunning => Connect::Io(io::ErrorKind::NotFound.into()),
        ConnectError::TimedOut => Connect::Io(io::ErrorKind::TimedOut.into()),
        ConnectError::Untrusted(reason) => Connect::Untrusted(reason),
        ConnectError::Io(e) => Connect::Io(e),
    })
}

/// The socket, read with the connection's deadline applied before every read: a reply parsed
/// from a stream is bounded by time however it arrives.
#[derive(Debug)]
struct DeadlineStream {
    stream: ClientConn,
    deadline: Instant,
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// A connection to the engine, with a deadline for everything done on it.
#[derive(Debug)]
pub struct ControlClient {
    stream: ClientConn,
    reader: BufReader<DeadlineStream>,
    path: String,
    deadline: Instant,
}

impl ControlClient {
    /// Checks who owns the socket (see the module comment), then connects within `budget`; the
    /// same budget bounds every later request on this connection.
    pub fn connect(socket: &Path, budget: Duration) -> Result<Self, ClientError> {
        let deadline = Instant::now() + budget;
        let path = socket.display().to_string();
        check_socket_owner(socket)?;
        let classify = |e: io::Error| match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning(path.clone())
            }
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                ClientError::TimedOut(path.clone())
            }
            _ => ClientError::Io {
                path: path.clone(),
                source: e,
            },
        };
        // Set once a look found the lock held: a budget spent after that was spent waiting for a
        // starting engine, and says so (a loaded machine's sleep can overrun the last of it).
        let mut engine_starting = false;
        let stream = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(if engine_starting {
                    ClientError::Starting(path.clone())
                } else {
                    ClientError::TimedOut(path.clone())
                });
            }
            let error = match connect_within(socket, left) {
                Ok(stream) => break stream,
                Err(Connect::Io(e)) => classify(e),
                Err(Connect::Untrusted(reason)) => {
                    return Err(ClientError::Untrusted {
                        path: path.clone(),
                        reason,
                    })
                }
            };
            // Nothing listens: an engine that holds the lock is starting, so look again while
            // the budget lasts; with the lock free nobody is coming.
            if !matches!(error, ClientError::NotRunning(_)) {
                return Err(error);
            }
            if !engine_holds_lock(socket) {
                return Err(error);
            }
            engine_starting = true;
            if deadline.saturating_duration_since(Instant::now()) <= START_POLL {
                return Err(ClientError::Starting(path.clone()));
            }
            std::thread::sleep(START_POLL);
        };
        let reader = BufReader::new(DeadlineStream {
            stream: stream.try_clone().map_err(classify)?,
            deadline,
        });
        Ok(ControlClient {
            stream,
            reader,
            path,
            deadline,
        })
    }

    fn remaining(&self) -> Result<Duration, ClientError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(ClientError::TimedOut(self.path.clone()))
        } else {
            Ok(left)
        }
    }

    fn io_err(&self, e: io::Error) -> ClientError {
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                ClientError::TimedOut(self.path.clone())
            }
            _ => ClientError::Io {
                path: self.path.clone(),
                source: e,
            },
        }
    }

    fn closed(&self) -> ClientError {
        ClientError::Io {
            path: self.path.clone(),
            source: io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the engine closed the connection",
            ),
        }
    }

    /// Writes one request line without waiting for the reply (the hook's fire-and-forget).
    pub fn send(&mut self, request: &Request) -> Result<(), ClientError> {
        let line = encode_request(request).map_err(|e| ClientError::BadReply(e.to_string()))?;
        let left = self.remaining()?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|e| self.io_err(e))?;
        self.stream.write_all(&line).map_err(|e| self.io_err(e))
    }

    /// Sends one request and reads its reply.
    pub fn request(&mut self, request: &Request) -> Result<Reply, ClientError> {
        self.send(request)?;
        self.read_reply()
    }

    /// Sends one request and reads its reply straight into its result type.
    pub fn request_typed<T: DeserializeOwned>(
        &mut self,
        request: &Request,
    ) -> Result<TypedReply<T>, ClientError> {
        self.send(request)?;
        self.read_reply_as()
    }

    /// Reads one reply line.
    pub fn read_reply(&mut self) -> Result<Reply, ClientError> {
        self.read_reply_as()
    }

    /// Reads one reply, parsed as it streams in (no size limit; the deadline bounds it).
    pub fn read_reply_as<T: DeserializeOwned>(&mut self) -> Result<T, ClientError> {
        self.remaining()?;
        let at_end = match self.reader.fill_buf() {
            Ok(buf) => buf.is_empty(),
            Err(e) => return Err(self.io_err(e)),
        };
        if at_end {
            return Err(self.closed());
        }
        let mut de = serde_json::Deserializer::from_reader(&mut self.reader);
        let parsed = T::deserialize(&mut de);
        drop(de);
        let value = parsed.map_err(|e| {
            if e.is_io() {
                match e.io_error_kind() {
                    Some(io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) => {
                        ClientError::TimedOut(self.path.clone())
                    }
                    _ => ClientError::BadReply(e.to_string()),
                }
            } else if e.is_eof() {
                self.closed()
            } else {
                ClientError::BadReply(e.to_string())
            }
        })?;
        // The rest of the line is its newline.
        let mut rest = Vec::new();
        (&mut self.reader)
            .take(64)
            .read_until(b'\n', &mut rest)
            .map_err(|e| self.io_err(e))?;
        Ok(value)
    }

    /// Reads one line (a `watch` stream's change), bounded by the deadline.
    pub fn read_line(&mut self) -> Result<String, ClientError> {
        self.remaining()?;
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .map_err(|e| self.io_err(e))?;
        if n == 0 {
            return Err(self.closed());
        }
        Ok(line.trim_end().to_string())
    }

    /// Moves the deadline for everything done on this connection from now on (a hook that waits
    /// for an answer, up to its own bound).
    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
        self.reader.get_mut().deadline = deadline;
    }

    /// Writes one JSON line that is not a request (a hook's confirmation that it printed an
    /// answer).
    pub fn send_json<T: serde::Serialize>(&mut self, value: &T) -> Result<(), ClientError> {
        let mut line =
            serde_json::to_vec(value).map_err(|e| ClientError::BadReply(e.to_string()))?;
        line.push(b'\n');
        let left = self.remaining()?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|e| self.io_err(e))?;
        self.stream.write_all(&line).map_err(|e| self.io_err(e))
    }

    /// Lifts the deadline, for a long-lived `watch` stream.
    pub fn without_deadline(mut self) -> Self {
        self.deadline = Instant::now() + Duration::from_secs(60 * 60 * 24 * 365);
        self.reader.get_mut().deadline = self.deadline;
        self
    }
}

/// Windows' twin of the unix tests below, under the same names: the socket's folder, by its
/// owner and DACL, read under Windows (and Wine, which derives the DACL from the unix mode) for
/// real.
#[cfg(all(test, windows))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn private_run_folder() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        crate::paths::create_private_dir(&run).unwrap();
        let socket = run.join("agent-tray.sock");
        (tmp, socket)
    }

    #[test]
    fn a_private_socket_of_ours_is_trusted() {
        let (tmp, socket) = private_run_folder();
        assert!(check_socket_owner(&socket).is_ok());
        let elsewhere = tmp.path().join("absent").join("agent-tray.sock");
        assert!(
            check_socket_owner(&elsewhere).is_ok(),
            "no folder: nobody runs"
        );
    }

    /// A folder another SID owns cannot be made under Wine (it reads every owner back as this
    /// user): that refusal is the pure rule's test in `os_fs::folder_dacl`.
    #[test]
    fn a_socket_or_folder_others_own_or_may_write_is_refused_with_the_reason() {
        let (_tmp, socket) = private_run_folder();
        let run = socket.parent().unwrap();
        let me = crate::os_fs::windows_security::this_user_sid().unwrap();
        crate::os_fs::folder_dacl::write(run, &format!("D:P(A;OICI;FA;;;{me})(A;OICI;FA;;;WD)"))
            .unwrap();
        match check_socket_owner(&socket) {
            Err(ClientError::Untrusted { reason, .. }) => assert!(
                reason.contains("folder") && reason.contains("S-1-1-0") && reason.contains("write"),
                "{reason}"
            ),
            other => panic!("a folder Everyone may write to must be refused: {other:?}"),
        }
        // Made private again, as the engine does at every start.
        crate::paths::create_private_dir(run).unwrap();
        assert!(check_socket_owner(&socket).is_ok());
    }
}

#[cfg(all(test, unix))] // the socket and its folder's modes; Windows checks the pipe's server
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn private_socket() -> (
        tempfile::TempDir,
        std::path::PathBuf,
        std::os::unix::net::UnixListener,
    ) {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let socket = dir.path().join("s.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        fs::set_permissions(&socket, fs::Permissions::from_mode(0o600)).unwrap();
        (dir, socket, listener)
    }

    #[test]
    fn a_private_socket_of_ours_is_trusted() {
        let (_dir, socket, _l) = private_socket();
        assert!(check_socket_owner(&socket).is_ok());
        assert!(check_socket_owner(&socket.with_file_name("absent.sock")).is_ok());
    }

    #[test]
    fn a_socket_or_folder_others_own_or_may_write_is_refused_with_the_reason() {
        let (dir, socket, _l) = private_socket();
        let me = unsafe { libc::geteuid() };
        let reason = |r: Result<(), ClientError>| match r {
            Err(ClientError::Untrusted { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        };
        // Someone else's: checked as another uid, since the test cannot chown as a user.
        let r = reason(check_socket_owner_as(&socket, me + 4242));
        assert!(r.contains("belongs to uid"), "{r}");
        fs::set_permissions(&socket, fs::Permissions::from_mode(0o666)).unwrap();
        let r = reason(check_socket_owner(&socket));
        assert!(r.contains("writable by others"), "{r}");
        fs::set_permissions(&socket, fs::Permissions::from_mode(0o600)).unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let r = reason(check_socket_owner(&socket));
        assert!(
            r.contains("folder") && r.contains("writable by others"),
            "{r}"
        );
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let link = dir.path().join("link.sock");
        std::os::unix::fs::symlink(&socket, &link).unwrap();
        let r = reason(check_socket_owner(&link));
        assert!(r.contains("not a socket"), "{r}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod starting_tests {
    use super::*;
    use crate::os_fs::{private_options, try_lock, unlock, LockKind};

    /// An engine between taking its lock and listening (it opens its history, its journal):
    /// a call then waits for it within its budget and says "starting", not "not running"; once
    /// the lock is free, "not running" comes at once.
    #[test]
    fn a_call_while_an_engine_holds_its_lock_but_does_not_listen_says_starting_within_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("agent-tray.sock");
        let lock = private_options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(ownership_lock(&socket))
            .unwrap();
        assert!(try_lock(&lock, LockKind::Exclusive));
        assert!(engine_holds_lock(&socket));

        let started = Instant::now();
        let outcome = ControlClient::connect(&socket, Duration::from_millis(300));
        let took = started.elapsed();
        assert!(
            matches!(outcome, Err(ClientError::Starting(_))),
            "a held lock with nothing listening is an engine starting: {outcome:?}"
        );
        // The upper bound tells "stopped at its budget" from "hung"; it leaves a loaded machine's
        // overrun of the last sleep room (a CI run under Wine).
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "it waited for the engine within its budget, no longer: {took:?}"
        );

        unlock(&lock);
        assert!(
            !engine_holds_lock(&socket),
            "the probe itself leaves no lock"
        );
        // A long budget, so "at once" and "waited for it" stay far apart on a loaded machine.
        let started = Instant::now();
        let outcome = ControlClient::connect(&socket, Duration::from_secs(5));
        assert!(
            matches!(outcome, Err(ClientError::NotRunning(_))),
            "{outcome:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "nobody is coming: said at once, not after the 5 s budget: {:?}",
            started.elapsed()
        );
        // The probe's shared lock is given back: an engine still takes the exclusive one.
        assert!(try_lock(&lock, LockKind::Exclusive));
    }
}
