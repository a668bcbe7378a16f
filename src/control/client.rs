//! The blocking client of the control socket, for the hook and the CLI.
//!
//! Blocking on purpose: the hook must start in about a millisecond and must not link or start an
//! async runtime. Every step is bounded: the connect (a unix socket whose listener's backlog is
//! full would otherwise block), the write and the read each get a deadline, so a wedged engine
//! costs a caller at most its budget, never a hang.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use socket2::{Domain, SockAddr, Socket, Type};

use super::protocol::{encode_request, Reply, Request, MAX_LINE};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens there: no engine is running.
    #[error("no Agent Tray is running (no socket at {0})")]
    NotRunning(String),
    #[error("timed out talking to Agent Tray at {0}")]
    TimedOut(String),
    #[error("talking to Agent Tray at {path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("Agent Tray sent a reply that is not valid: {0}")]
    BadReply(String),
}

/// A connection to the engine, with a deadline for everything done on it.
#[derive(Debug)]
pub struct ControlClient {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    path: String,
    deadline: Instant,
}

impl ControlClient {
    /// Connects within `budget`; the same budget bounds every later request on this connection.
    pub fn connect(socket: &Path, budget: Duration) -> Result<Self, ClientError> {
        let deadline = Instant::now() + budget;
        let path = socket.display().to_string();
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
        let addr = SockAddr::unix(socket).map_err(classify)?;
        let sock = Socket::new(Domain::UNIX, Type::STREAM, None).map_err(classify)?;
        sock.connect_timeout(&addr, budget).map_err(classify)?;
        let stream: UnixStream = sock.into();
        let reader = BufReader::new(stream.try_clone().map_err(classify)?);
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

    /// Reads one reply line.
    pub fn read_reply(&mut self) -> Result<Reply, ClientError> {
        let line = self.read_line()?;
        serde_json::from_str(&line).map_err(|e| ClientError::BadReply(format!("{e}: {line}")))
    }

    /// Reads one line, bounded by the deadline and by [`MAX_LINE`].
    pub fn read_line(&mut self) -> Result<String, ClientError> {
        let left = self.remaining()?;
        self.stream
            .set_read_timeout(Some(left))
            .map_err(|e| self.io_err(e))?;
        let mut line = String::new();
        let read = (&mut self.reader)
            .take(MAX_LINE as u64)
            .read_line(&mut line);
        let n = read.map_err(|e| self.io_err(e))?;
        if n == 0 {
            return Err(ClientError::Io {
                path: self.path.clone(),
                source: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the engine closed the connection",
                ),
            });
        }
        Ok(line.trim_end().to_string())
    }

    /// Lifts the deadline, for a long-lived `watch` stream.
    pub fn without_deadline(mut self) -> Self {
        self.deadline = Instant::now() + Duration::from_secs(60 * 60 * 24 * 365);
        self
    }
}
