//! The engine's side of the control socket.
//!
//! One task accepts; each connection gets its own task, at most [`MAX_CONNECTIONS`] at once (a
//! flood of hooks waits in the listen backlog instead of growing memory). Every line is bounded
//! to [`MAX_LINE`]; a longer one is answered with `line_too_long` and skipped to its newline, so a
//! client cannot make the engine buffer without limit. A malformed line gets an error reply and the
//! connection goes on. Connections from other users are refused: the socket sits in a 0700
//! folder and is 0600, and the peer's uid is checked as well, because a socket handed over by
//! file descriptor or a loosened folder mode must not open the door.
//!
//! Only one engine may own the socket. An exclusive `flock` on a lock file beside it decides who;
//! the loser learns who holds it (a `ping`) and says so plainly instead of fighting over the path.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::client::ControlClient;
use super::protocol::{decode_request, ErrorCode, PingInfo, Reply, Request, SessionList, MAX_LINE};
use crate::paths::{PathsError, TrayPaths};
use crate::registry::{ObserveOutcome, SessionChange, SessionsRegistry};

/// Connections served at once.
const MAX_CONNECTIONS: usize = 64;
/// A connection that sends nothing for this long is closed (not `watch`, which only listens).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// A reply that cannot be written in this long is abandoned with its connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error("Agent Tray is already running ({host}, pid {pid}) on {socket}; stop it first, or use it: `agent-tray list` talks to it")]
    AlreadyRunning {
        socket: PathBuf,
        host: String,
        pid: u32,
    },
    #[error("another Agent Tray is starting up on {0}; try again in a moment")]
    Busy(PathBuf),
    #[error(transparent)]
    Paths(#[from] PathsError),
    #[error("cannot listen on {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// A bound, not yet serving, control socket. Holds the ownership lock for its whole life.
#[derive(Debug)]
pub struct ControlServer {
    listener: UnixListener,
    socket: PathBuf,
    host: String,
    _lock: File,
}

impl ControlServer {
    /// Takes ownership of the socket path and listens on it. Must run inside a tokio runtime.
    pub fn bind(paths: &TrayPaths, host: &str) -> Result<Self, BindError> {
        paths.ensure_private_dirs()?;
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BindError::Io {
                path: path.clone(),
                source,
            }
        };
        let lock_path = paths.runtime_dir.join("agent-tray.lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        // SAFETY: flock on a descriptor this function owns; non-blocking, so it cannot hang.
        let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(who_holds(&paths.socket));
        }
        // We own the path now: whatever socket file is there was left by a dead engine.
        match fs::remove_file(&paths.socket) {
            Ok(()) => tracing::info!(socket = %paths.socket.display(), "removed a stale socket"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&paths.socket)(e)),
        }
        let std_listener =
            std::os::unix::net::UnixListener::bind(&paths.socket).map_err(io_err(&paths.socket))?;
        fs::set_permissions(&paths.socket, fs::Permissions::from_mode(0o600))
            .map_err(io_err(&paths.socket))?;
        std_listener
            .set_nonblocking(true)
            .map_err(io_err(&paths.socket))?;
        let listener = UnixListener::from_std(std_listener).map_err(io_err(&paths.socket))?;
        Ok(ControlServer {
            listener,
            socket: paths.socket.clone(),
            host: host.to_string(),
            _lock: lock,
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Serves until `token` is cancelled, then removes the socket file.
    pub fn spawn(
        self,
        registry: Arc<SessionsRegistry>,
        token: CancellationToken,
    ) -> JoinHandle<()> {
        // Destructured so the task owns the ownership lock too: an `async move` block captures
        // only the fields it uses, and a lock dropped here would let a second engine in.
        let ControlServer {
            listener,
            socket,
            host,
            _lock: ownership_lock,
        } = self;
        tokio::spawn(async move {
            let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
            let host: Arc<str> = Arc::from(host.as_str());
            let my_uid = current_uid();
            loop {
                let accepted = tokio::select! {
                    () = token.cancelled() => break,
                    accepted = listener.accept() => accepted,
                };
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                match stream.peer_cred() {
                    Ok(cred) if cred.uid() == my_uid => {}
                    Ok(cred) => {
                        tracing::warn!(
                            peer_uid = cred.uid(),
                            "refused a connection from another user"
                        );
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "refused a connection whose peer is unknown");
                        continue;
                    }
                }
                let permit = tokio::select! {
                    () = token.cancelled() => break,
                    permit = permits.clone().acquire_owned() => match permit {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                };
                let registry = registry.clone();
                let token = token.clone();
                let host = host.clone();
                tokio::spawn(async move {
                    serve_connection(stream, &registry, &host, &token).await;
                    drop(permit);
                });
            }
            if let Err(e) = fs::remove_file(&socket) {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(error = %e, "could not remove the socket");
                }
            }
            // Only now may another engine take the path.
            drop(ownership_lock);
        })
    }
}

fn current_uid() -> u32 {
    // SAFETY: geteuid has no failure mode and touches no memory.
    unsafe { libc::geteuid() }
}

/// Asks whoever owns the socket who they are, for a plain message.
fn who_holds(socket: &Path) -> BindError {
    let info = ControlClient::connect(socket, Duration::from_millis(500))
        .and_then(|mut c| c.request(&Request::Ping))
        .ok()
        .and_then(|reply| reply.result)
        .and_then(|v| serde_json::from_value::<PingInfo>(v).ok());
    match info {
        Some(info) => BindError::AlreadyRunning {
            socket: socket.to_path_buf(),
            host: info.host,
            pid: info.pid,
        },
        None => BindError::Busy(socket.to_path_buf()),
    }
}

enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Reads one line into `buf`, never holding more than [`MAX_LINE`] bytes: past that, the rest of
/// the line is read and thrown away.
async fn read_bounded_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                LineRead::TooLong
            } else if buf.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (chunk, found_newline) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let used = chunk.len();
        if !too_long {
            if buf.len() + used > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if found_newline {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

async fn write_line<W: AsyncWriteExt + Unpin, T: serde::Serialize>(
    writer: &mut W,
    value: &T,
) -> io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    match tokio::time::timeout(WRITE_TIMEOUT, writer.write_all(&line)).await {
        Ok(result) => result,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "client is not reading",
        )),
    }
}

async fn serve_connection(
    stream: UnixStream,
    registry: &SessionsRegistry,
    host: &str,
    token: &CancellationToken,
) {
    let (read_half, mut write_half) = stream.into_split();
    let mut reader = BufReader::new(read_half);
    let mut buf = Vec::new();
    loop {
        let read = tokio::select! {
            () = token.cancelled() => return,
            read = tokio::time::timeout(IDLE_TIMEOUT, read_bounded_line(&mut reader, &mut buf)) => read,
        };
        let reply = match read {
            Err(_) | Ok(Err(_)) | Ok(Ok(LineRead::Eof)) => return,
            Ok(Ok(LineRead::TooLong)) => {
                tracing::warn!(limit = MAX_LINE, "control line too long; skipped");
                Reply::error(
                    ErrorCode::LineTooLong,
                    format!("a line may be at most {MAX_LINE} bytes"),
                )
            }
            Ok(Ok(LineRead::Line)) => {
                let line = trim_line(&buf);
                if line.is_empty() {
                    continue;
                }
                match decode_request(line) {
                    Ok(Request::Watch) => {
                        watch(&mut write_half, registry, token).await;
                        return;
                    }
                    Ok(request) => handle(request, registry, host),
                    Err(reply) => {
                        tracing::warn!(
                            error = reply
                                .error
                                .as_ref()
                                .map(|e| e.message.as_str())
                                .unwrap_or(""),
                            "bad control request"
                        );
                        reply
                    }
                }
            }
        };
        if write_line(&mut write_half, &reply).await.is_err() {
            // The hook sends and leaves without reading: nothing to do about a reply nobody reads.
            return;
        }
    }
}

fn trim_line(buf: &[u8]) -> &[u8] {
    let mut end = buf.len();
    while end > 0 && matches!(buf[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &buf[..end]
}

/// Answers one request. Pure apart from the registry.
pub fn handle(request: Request, registry: &SessionsRegistry, host: &str) -> Reply {
    match request {
        Request::Observe { observation } => match registry.observe(observation) {
            Ok(outcome) => Reply::ok(match outcome {
                ObserveOutcome::Changed => json!({"outcome": "changed"}),
                ObserveOutcome::Quiet => json!({"outcome": "quiet"}),
                ObserveOutcome::Duplicate => json!({"outcome": "duplicate"}),
                ObserveOutcome::Ignored(why) => {
                    json!({"outcome": "ignored", "reason": format!("{why:?}")})
                }
            }),
            Err(e) => Reply::error(ErrorCode::InvalidObservation, e.to_string()),
        },
        Request::List => to_reply(&SessionList {
            sessions: registry.list(),
        }),
        Request::History { limit } => to_reply(&SessionList {
            sessions: registry.history(limit.min(10_000)),
        }),
        Request::Ping => to_reply(&PingInfo {
            pid: std::process::id(),
            host: host.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sessions: registry.live_count(),
        }),
        Request::Watch => Reply::error(ErrorCode::BadRequest, "watch is a stream"),
    }
}

fn to_reply<T: serde::Serialize>(value: &T) -> Reply {
    match serde_json::to_value(value) {
        Ok(v) => Reply::ok(v),
        Err(e) => Reply::error(ErrorCode::Internal, e.to_string()),
    }
}

/// Streams the snapshot, then every change, until the client or the engine goes away. A client
/// that lags gets a fresh snapshot (`{"kind": "resync", ...}`) instead of the changes it missed.
async fn watch<W: AsyncWriteExt + Unpin>(
    writer: &mut W,
    registry: &SessionsRegistry,
    token: &CancellationToken,
) {
    let mut changes = registry.subscribe();
    let snapshot = SessionList {
        sessions: registry.list(),
    };
    if write_line(writer, &to_reply(&snapshot)).await.is_err() {
        return;
    }
    loop {
        let change = tokio::select! {
            () = token.cancelled() => return,
            change = changes.recv() => change,
        };
        let written = match change {
            Ok(change) => write_line(writer, &change).await,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "watch client lagged; resyncing");
                write_line(
                    writer,
                    &json!({"kind": "resync", "sessions": registry.list()}),
                )
                .await
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if written.is_err() {
            return;
        }
    }
}

/// What a `watch` stream line is: a change, or a fresh snapshot after lagging.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per printed line
pub enum WatchLine {
    Change(SessionChange),
    Resync {
        sessions: Vec<crate::model::Session>,
    },
}
