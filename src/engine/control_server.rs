//! The engine's side of the control socket.
//!
//! One task accepts and never waits for anything but the next connection: a full house is
//! answered with `busy` at once instead of leaving callers in the listen backlog. Two pools, so
//! one kind of client cannot lock the other out: at most [`MAX_CONNECTIONS`] request connections
//! (the hook, `list`, `doctor`: short-lived) and at most [`MAX_WATCHERS`] `watch` streams (long-lived,
//! and cheap: one task and one socket each). A connection becomes a watcher by asking, and gives
//! its request slot back when it does; 500 idle watchers leave every request slot free.
//!
//! Every connection has deadlines: its first request must arrive within [`FIRST_REQUEST_TIMEOUT`],
//! later ones within [`IDLE_TIMEOUT`], and every reply or change must be written within
//! [`WRITE_TIMEOUT`]. A watcher that stops reading is dropped when a change cannot be written in
//! time (logged with that reason), and one that hangs up is noticed at once, even while nothing
//! changes.
//!
//! Every line is bounded to [`MAX_LINE`]; a longer one is answered with `line_too_long` and skipped
//! to its newline, so a client cannot make the engine buffer without limit. A malformed line gets
//! an error reply and the connection goes on. Connections from other users are refused: the socket
//! sits in a 0700 folder and is 0600, and the peer's uid is checked as well, because a socket
//! handed over by file descriptor or a loosened folder mode must not open the door.
//!
//! Only one engine may own the socket. An exclusive `flock` on a lock file beside it decides who;
//! the loser learns who holds it (a `ping`) and says so plainly instead of fighting over the path.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::answering::{AnswerSettings, AskCall, HookDecision, Printed};
use crate::bounded_lines::{BoundedLine, LineRead};
use crate::control::client::ControlClient;
pub use crate::control::protocol::WatchLine;
use crate::control::protocol::{
    decode_request, AnswerReply, AskReply, ErrorBody, ErrorCode, ObserveReply, PendingList,
    PingInfo, Reply, Request, SessionList, SessionsLine, TypedReply, MAX_LINE,
};
use crate::control::transport::{self, ServerConn, ServerReader, ServerWriter};
use crate::model::Observation;
use crate::paths::{PathsError, TrayPaths};
use crate::registry::answers::{AnswerError, AskOutcome, Delivery, PRINT_CONFIRM_TIMEOUT};
use crate::registry::SessionsRegistry;

/// Request connections (hook, CLI, doctor) served at once. With [`MAX_WATCHERS`] this stays
/// under the usual 1024 open files a process may have.
pub const MAX_CONNECTIONS: usize = 256;
/// `watch` streams served at once.
pub const MAX_WATCHERS: usize = 512;
/// A new connection must send its first request within this (the hook and the CLI send at once).
pub const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection that sends nothing more for this long is closed (not `watch`, which only listens).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Hooks waiting for an answer to a permission request at once: as many as the book holds open.
pub const MAX_ASKERS: usize = agent_tray_domain::pending::OPEN_MAX;
/// A reply or change that cannot be written in this long is abandoned with its connection.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a refused connection is given to read its `busy` reply.
const BUSY_REPLY_TIMEOUT: Duration = Duration::from_millis(500);

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
    /// Windows: the pipe's name exists, created by a process that is not the engine holding our
    /// lock (another user's, or a program squatting on it).
    #[error("the pipe {pipe} (for {socket}) was created by another process first; not serving beside it. Find it with `agent-tray doctor`, or set AGENT_TRAY_HOME to a private folder")]
    PipeTaken { socket: PathBuf, pipe: String },
}

/// What the engine keeps beside the sessions, for the socket to report: the delivery ledger
/// (`doctor`'s probes, unknown hook events, foreign callers) and how each remote's link is doing.
/// Neither is session state, so neither lives in the registry: the engine owns them and hands
/// the server, the remote links and the desktop shell the same handles.
#[derive(Debug, Clone)]
pub struct EngineLedgers {
    pub delivery: Arc<crate::delivery::DeliveryLedger>,
    pub remote_links: Arc<crate::remote::RemoteLinks>,
    /// The plans' rate-limit windows the agents reported ([`crate::plan_limits`]).
    pub limits: Arc<crate::plan_limits::PlanLimitsBook>,
    /// The live ways in to sessions, for `send` and `stop` ([`crate::talk_back`]).
    pub talk: Arc<crate::talk_back::TalkInboxes>,
}

impl Default for EngineLedgers {
    /// The links report their remotes' plan windows into the same book as the feeds.
    fn default() -> Self {
        let limits = Arc::new(crate::plan_limits::PlanLimitsBook::default());
        EngineLedgers {
            delivery: Arc::default(),
            remote_links: Arc::new(crate::remote::RemoteLinks::reporting_limits_to(
                limits.clone(),
            )),
            limits,
            talk: Arc::default(),
        }
    }
}

/// A bound, not yet serving, control socket. Holds the ownership lock for its whole life.
#[derive(Debug)]
pub struct ControlServer {
    #[cfg(unix)]
    listener: tokio::net::UnixListener,
    #[cfg(windows)]
    listener: transport::Listener,
    socket: PathBuf,
    host: String,
    /// Where the answering settings are ([`crate::answering::SETTINGS_FILE`]).
    data_dir: PathBuf,
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
        let lock_path = crate::control::client::ownership_lock(&paths.socket);
        let lock = crate::os_fs::private_options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        if !take_ownership(&lock) {
            return Err(who_holds(&paths.socket));
        }
        let listener = listen(&paths.socket).map_err(|e| match e {
            #[cfg(windows)]
            e if e.kind() == io::ErrorKind::PermissionDenied => BindError::PipeTaken {
                socket: paths.socket.clone(),
                pipe: transport::pipe_name(&paths.socket),
            },
            e => io_err(&paths.socket)(e),
        })?;
        Ok(ControlServer {
            listener,
            socket: paths.socket.clone(),
            host: host.to_string(),
            data_dir: paths.data_dir.clone(),
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
        ledgers: EngineLedgers,
        token: CancellationToken,
    ) -> JoinHandle<()> {
        // Destructured so the task owns the ownership lock too: an `async move` block captures
        // only the fields it uses, and a lock dropped here would let a second engine in.
        let ControlServer {
            mut listener,
            socket,
            host,
            data_dir,
            _lock: ownership_lock,
        } = self;
        tokio::spawn(async move {
            let pools = Pools {
                requests: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            };
            let shared = Arc::new(Shared {
                watchers: Arc::new(Semaphore::new(MAX_WATCHERS)),
                askers: Arc::new(Semaphore::new(MAX_ASKERS)),
                host: host.clone(),
                data_dir,
                ledgers,
            });
            loop {
                let accepted = tokio::select! {
                    () = token.cancelled() => break,
                    accepted = accept(&mut listener) => accepted,
                };
                let stream = match accepted {
                    Ok(stream) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                match transport::peer_is_this_user(&stream) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "refused a connection whose peer is unknown");
                        continue;
                    }
                }
                // Never wait here: the accept loop must stay free for the next caller.
                let Ok(permit) = pools.requests.clone().try_acquire_owned() else {
                    tracing::warn!(
                        limit = MAX_CONNECTIONS,
                        "refused a connection: every request slot is taken"
                    );
                    tokio::spawn(refuse_busy(
                        stream,
                        format!(
                            "the engine serves {MAX_CONNECTIONS} connections at once; try again"
                        ),
                    ));
                    continue;
                };
                let registry = registry.clone();
                let token = token.clone();
                let shared = shared.clone();
                tokio::spawn(async move {
                    serve_connection(stream, permit, &shared, &registry, &token).await;
                });
            }
            #[cfg(unix)]
            if let Err(e) = std::fs::remove_file(&socket) {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(error = %e, "could not remove the socket");
                }
            }
            #[cfg(windows)]
            drop((listener, socket)); // the pipe's last instance closes with it
                                      // Only now may another engine take the path.
            drop(ownership_lock);
        })
    }
}

/// Listens on the socket path (unix) or the pipe derived from it (Windows). The caller holds the
/// ownership lock.
#[cfg(unix)]
fn listen(socket: &Path) -> io::Result<tokio::net::UnixListener> {
    // We own the path now: whatever socket file is there was left by a dead engine.
    match std::fs::remove_file(socket) {
        Ok(()) => tracing::info!(socket = %socket.display(), "removed a stale socket"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let std_listener = std::os::unix::net::UnixListener::bind(socket)?;
    crate::os_fs::make_owner_only(socket, false)?;
    std_listener.set_nonblocking(true)?;
    tokio::net::UnixListener::from_std(std_listener)
}

#[cfg(windows)]
fn listen(socket: &Path) -> io::Result<transport::Listener> {
    transport::Listener::bind(&transport::pipe_name(socket))
}

#[cfg(unix)]
async fn accept(listener: &mut tokio::net::UnixListener) -> io::Result<ServerConn> {
    listener.accept().await.map(|(stream, _)| stream)
}

#[cfg(windows)]
async fn accept(listener: &mut transport::Listener) -> io::Result<ServerConn> {
    listener.accept().await
}

/// How long the engine tries for its ownership lock: a client asking whether an engine is
/// starting holds a shared lock for a moment ([`crate::control::client::engine_holds_lock`]); an engine
/// holds it for its whole life.
const OWNERSHIP_TRIES: Duration = Duration::from_millis(250);

/// Takes the ownership lock, trying again for [`OWNERSHIP_TRIES`] while a client's probe holds it.
fn take_ownership(lock: &File) -> bool {
    let give_up_at = std::time::Instant::now() + OWNERSHIP_TRIES;
    loop {
        if crate::os_fs::try_lock(lock, crate::os_fs::LockKind::Exclusive) {
            return true;
        }
        if std::time::Instant::now() >= give_up_at {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asks whoever owns the socket who they are, for a plain message.
fn who_holds(socket: &Path) -> BindError {
    let info = ControlClient::connect(socket, Duration::from_millis(500))
        .and_then(|mut c| c.request_typed::<PingInfo>(&Request::Ping))
        .ok()
        .and_then(|reply| reply.into_result().ok());
    match info {
        Some(info) => BindError::AlreadyRunning {
            socket: socket.to_path_buf(),
            host: info.host,
            pid: info.pid,
        },
        None => BindError::Busy(socket.to_path_buf()),
    }
}

/// The two connection pools: see the module comment.
struct Pools {
    requests: Arc<Semaphore>,
}

/// Tells a connection there is no room for it, within a short bound, and closes it.
async fn refuse_busy(mut stream: ServerConn, message: String) {
    let reply = Reply::error(ErrorCode::Busy, message);
    let _ = tokio::time::timeout(BUSY_REPLY_TIMEOUT, async {
        if let Ok(line) = encode_line(&reply) {
            let _ = stream.write_all(&line).await;
        }
    })
    .await;
}

fn encode_line<T: Serialize>(value: &T) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

async fn write_line<W: AsyncWriteExt + Unpin, T: Serialize>(
    writer: &mut W,
    value: &T,
) -> io::Result<()> {
    let line = encode_line(value)?;
    match tokio::time::timeout(WRITE_TIMEOUT, writer.write_all(&line)).await {
        Ok(result) => result,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "client is not reading",
        )),
    }
}

/// What every connection shares.
struct Shared {
    watchers: Arc<Semaphore>,
    askers: Arc<Semaphore>,
    host: String,
    data_dir: PathBuf,
    ledgers: EngineLedgers,
}

async fn serve_connection(
    stream: ServerConn,
    permit: OwnedSemaphorePermit,
    shared: &Shared,
    registry: &Arc<SessionsRegistry>,
    token: &CancellationToken,
) {
    let host = shared.host.as_str();
    let watchers = &shared.watchers;
    let (read_half, mut write_half) = transport::split(stream);
    let mut reader = BufReader::new(read_half);
    let mut buf = BoundedLine::new(MAX_LINE);
    let mut deadline = FIRST_REQUEST_TIMEOUT;
    loop {
        let read = tokio::select! {
            () = token.cancelled() => return,
            read = tokio::time::timeout(deadline, buf.read(&mut reader)) => read,
        };
        deadline = IDLE_TIMEOUT;
        let answer = match read {
            Err(_) | Ok(Err(_)) | Ok(Ok(LineRead::Eof)) => return,
            Ok(Ok(LineRead::TooLong)) => {
                tracing::warn!(limit = MAX_LINE, "control line too long; skipped");
                Answer::Error(ErrorBody {
                    code: ErrorCode::LineTooLong,
                    message: format!("a line may be at most {MAX_LINE} bytes"),
                    on_remote: None,
                    on_remote_session: None,
                })
            }
            Ok(Ok(LineRead::Line)) => {
                let line = trim_line(buf.bytes());
                if line.is_empty() {
                    continue;
                }
                let decoded = decode_request(line);
                // A request line can be 1 MiB: keep no buffer that large between requests.
                drop(buf.take());
                match decoded {
                    Ok(Request::Watch) => {
                        let Ok(watch_permit) = watchers.clone().try_acquire_owned() else {
                            tracing::warn!(limit = MAX_WATCHERS, "refused a watcher: too many");
                            let busy = Reply::error(
                                ErrorCode::Busy,
                                format!("the engine serves {MAX_WATCHERS} watchers at once"),
                            );
                            let _ = write_line(&mut write_half, &busy).await;
                            return;
                        };
                        // A watcher holds a watcher slot only: the request slot goes back, so
                        // idle watchers never stand between the hook and the engine.
                        drop(permit);
                        watch(reader.into_inner(), &mut write_half, registry, token).await;
                        drop(watch_permit);
                        return;
                    }
                    Ok(Request::Ask { observation, call }) => {
                        let Ok(ask_permit) = shared.askers.clone().try_acquire_owned() else {
                            // The hook then prints nothing: the agent asks in its terminal.
                            let busy = Reply::error(
                                ErrorCode::Busy,
                                format!("the engine holds {MAX_ASKERS} open requests at once"),
                            );
                            let _ = write_line(&mut write_half, &busy).await;
                            return;
                        };
                        drop(permit);
                        let ask = AskConnection {
                            reader,
                            writer: write_half,
                        };
                        ask.serve(registry, &shared.data_dir, observation, call, token)
                            .await;
                        drop(ask_permit);
                        return;
                    }
                    Ok(Request::Answer {
                        target,
                        answer,
                        source,
                    }) => answer_request(registry, &target, answer, source).await,
                    Ok(Request::Talk {
                        target,
                        host,
                        order,
                        over_ssh,
                    }) => {
                        talk_request(shared, registry, &target, host.as_deref(), order, over_ssh)
                            .await
                    }
                    Ok(Request::Inbox { agent, pid }) => {
                        drop(permit);
                        serve_inbox(
                            reader,
                            &mut write_half,
                            &shared.ledgers.talk,
                            agent,
                            pid,
                            token,
                        )
                        .await;
                        return;
                    }
                    Ok(request) => handle_typed(request, registry, &shared.ledgers, host),
                    Err(reply) => {
                        tracing::warn!(
                            error = reply
                                .error
                                .as_ref()
                                .map(|e| e.message.as_str())
                                .unwrap_or(""),
                            "bad control request"
                        );
                        match reply.error {
                            Some(error) => Answer::Error(error),
                            None => continue,
                        }
                    }
                }
            }
        };
        if answer.write(&mut write_half).await.is_err() {
            // The hook sends and leaves without reading: nothing to do about a reply nobody reads.
            return;
        }
    }
}

/// Answers a permission request and waits for its hook to take the answer, where the one rule
/// ([`crate::answering::route`]) sends it: this machine's book, or back to the caller naming
/// the remote whose request it is (the CLI answers it there over ssh), or refused.
async fn answer_request(
    registry: &SessionsRegistry,
    target: &str,
    answer: crate::answering::Answer,
    source: crate::answering::AnswerSource,
) -> Answer {
    match registry.answer_routed(target, None, answer, source).await {
        Ok(delivered) => {
            tracing::info!(request = %delivered.request.id, session_id = %delivered.request.session_id, ?source, waited_ms = delivered.waited.as_millis() as u64, "permission_answered");
            Answer::Answered(AnswerReply {
                id: delivered.request.id,
                session_id: delivered.request.session_id,
                answer: delivered.answer,
                waited_ms: u64::try_from(delivered.waited.as_millis()).unwrap_or(u64::MAX),
            })
        }
        Err(AnswerError::OnRemote { id, host }) => {
            let said = AnswerError::OnRemote {
                id: id.clone(),
                host: host.clone(),
            };
            Answer::Error(ErrorBody {
                on_remote: Some(Box::new(crate::answering::route::RemoteRequest {
                    host,
                    id,
                })),
                ..ErrorBody::new(ErrorCode::Refused, said.to_string())
            })
        }
        Err(e @ (AnswerError::Refused(_) | AnswerError::NotRouted(_))) => {
            Answer::Error(ErrorBody::new(ErrorCode::Refused, e.to_string()))
        }
        Err(e @ AnswerError::NotDelivered(_)) => {
            Answer::Error(ErrorBody::new(ErrorCode::NotDelivered, e.to_string()))
        }
    }
}

/// Gives a session its next prompt or stops its turn ([`super::talk`]). One that came over ssh
/// is carried out only where this machine's user allows answers over ssh, and never passed on.
async fn talk_request(
    shared: &Shared,
    registry: &Arc<SessionsRegistry>,
    target: &str,
    host: Option<&str>,
    order: crate::talk_back::TalkOrder,
    over_ssh: bool,
) -> Answer {
    if over_ssh {
        let allowed = crate::answering::AnswerSettings::load_in(&shared.data_dir)
            .map(|s| s.over_ssh)
            .unwrap_or(false);
        if !allowed {
            return Answer::Error(ErrorBody::new(
                ErrorCode::Refused,
                "this machine's user has not turned answering over ssh on \
                 (`agent-tray answering --over-ssh on`): nothing was sent",
            ));
        }
    }
    let source = crate::answering::AnswerSource::Cli;
    match super::talk::talk(registry, &shared.ledgers.talk, target, host, order, source).await {
        Ok(reply) => Answer::Talked(reply),
        Err(e) => {
            let code = match &e {
                super::talk::TalkError::Failed(crate::talk_back::TalkFailure::NotDelivered(_)) => {
                    ErrorCode::NotDelivered
                }
                _ => ErrorCode::Refused,
            };
            let on_remote_session = if over_ssh {
                None
            } else {
                e.on_remote().map(Box::new)
            };
            Answer::Error(ErrorBody {
                on_remote_session,
                ..ErrorBody::new(code, e.to_string())
            })
        }
    }
}

/// Holds a way in registered by a program of the agent's own (`agent-tray inbox`, run by
/// OpenCode's plugin) until it hangs up or the engine stops: each order goes out as an
/// [`InboxLine`], and the holder's [`InboxDone`] line says how it went. Orders are handled one
/// at a time, in order; a holder that does not answer within the talk budget fails that order
/// (the caller is told "not delivered") and the connection is dropped.
async fn serve_inbox<W: AsyncWriteExt + Unpin>(
    mut reader: BufReader<ServerReader>,
    writer: &mut W,
    inboxes: &Arc<crate::talk_back::TalkInboxes>,
    agent: crate::model::Agent,
    pid: u32,
    token: &CancellationToken,
) {
    use crate::control::protocol::{InboxDone, InboxLine};
    if write_line(
        writer,
        &TypedReply::ok(&serde_json::json!({"agent": agent, "pid": pid})),
    )
    .await
    .is_err()
    {
        return;
    }
    let reach = crate::talk_back::Reach::Process { agent, pid };
    let (_guard, mut orders) = inboxes.open(crate::talk_back::TalkRoute::Plugin, reach);
    tracing::info!(?agent, pid, "talk_inbox_opened");
    let mut seq = 0u64;
    let mut buf = BoundedLine::new(MAX_LINE);
    loop {
        let order = tokio::select! {
            () = token.cancelled() => return,
            order = orders.recv() => order,
            // The holder hung up (its agent ended): the guard closes the way in.
            read = buf.read(&mut reader) => {
                if !matches!(read, Ok(LineRead::Line)) {
                    tracing::info!(?agent, pid, "talk_inbox_closed");
                    return;
                }
                continue; // nothing is expected between orders
            }
        };
        let Some(order) = order else { return };
        seq += 1;
        let line = InboxLine {
            seq,
            session_id: order.session_id.clone(),
            order: order.order.clone(),
        };
        if write_line(writer, &line).await.is_err() {
            let _ = order.done.send(Err(crate::talk_back::TalkFailure::Refused(
                "the agent's plugin is gone; nothing was sent".into(),
            )));
            return;
        }
        let done = loop {
            let read = tokio::select! {
                () = token.cancelled() => return,
                read = tokio::time::timeout(super::talk::TALK_BUDGET, buf.read(&mut reader)) => read,
            };
            match read {
                Ok(Ok(LineRead::Line)) => {
                    match serde_json::from_slice::<InboxDone>(trim_line(buf.bytes())) {
                        Ok(done) if done.seq == seq => break Some(done),
                        _ => continue,
                    }
                }
                _ => break None,
            }
        };
        let Some(done) = done else {
            let _ = order
                .done
                .send(Err(crate::talk_back::TalkFailure::NotDelivered(
                    "the agent's plugin did not say whether it took it".into(),
                )));
            return;
        };
        let _ = order.done.send(if done.ok {
            Ok(())
        } else {
            Err(crate::talk_back::TalkFailure::NotDelivered(format!(
                "the agent refused it: {}",
                done.error.as_deref().unwrap_or("no reason given")
            )))
        });
    }
}

/// A hook's connection that waits for the answer to its permission request.
struct AskConnection {
    reader: BufReader<ServerReader>,
    writer: ServerWriter,
}

impl AskConnection {
    /// `doctor`'s probe of the answer path: recorded as a probe (never a session), answered at
    /// once with a deny naming the probe, whatever the settings: what is proven is that the
    /// hook's command line reaches this engine and prints an answer in the agent's shape.
    async fn answer_probe(mut self, registry: &SessionsRegistry, observation: Observation) {
        let _ = registry.observe(observation);
        let reply = AskReply {
            id: Some(crate::answering::RequestId::parse("probe")),
            answer_by: Some(chrono::Utc::now() + chrono::Duration::seconds(5)),
            reason: None,
        };
        if write_line(&mut self.writer, &TypedReply::ok(&reply))
            .await
            .is_err()
        {
            return;
        }
        let decision = HookDecision::Deny {
            message: Some(crate::answering::PROBE_ANSWER.into()),
        };
        let _ = write_line(&mut self.writer, &decision).await;
    }

    async fn serve(
        mut self,
        registry: &SessionsRegistry,
        data_dir: &Path,
        observation: Observation,
        call: AskCall,
        token: &CancellationToken,
    ) {
        let agent = observation.agent;
        if crate::model::is_probe_id(&observation.session_id) {
            self.answer_probe(registry, observation).await;
            return;
        }
        // An MCP server's form has a route (and a setting) of its own where the agent has one
        // (Claude's `Elicitation` hook); OpenCode's questions, which it reports as elicitations,
        // take its answer path.
        let form = observation.event == crate::model::EventKind::Elicitation
            && crate::catalogue::InCatalogue::entry(agent)
                .form_path
                .is_some();
        let choice = match AnswerSettings::load_in(data_dir) {
            Ok(settings) if form => settings.effective_forms(agent),
            Ok(settings) => settings.effective(agent),
            Err(e) => {
                tracing::warn!(error = %e, "answering settings unreadable; not offering answers");
                None
            }
        };
        let Some(choice) = choice.filter(|c| c.enabled) else {
            // Not answered from here: the observation is all there is.
            if let Err(e) = registry.observe(observation) {
                let error = Reply::error(ErrorCode::InvalidObservation, e.to_string());
                let _ = write_line(&mut self.writer, &error).await;
                return;
            }
            let reply = AskReply {
                id: None,
                answer_by: None,
                reason: Some(if form {
                    format!("answering MCP forms from the tray is off for {agent}")
                } else {
                    format!("answering from the tray is off for {agent}")
                }),
            };
            let _ = write_line(&mut self.writer, &TypedReply::ok(&reply)).await;
            return;
        };
        let wait = Duration::from_secs(choice.wait_secs);
        let outcome = match registry.ask(observation, call, wait, choice.accepts) {
            Ok(outcome) => outcome,
            Err(e) => {
                let error = Reply::error(ErrorCode::InvalidObservation, e.to_string());
                let _ = write_line(&mut self.writer, &error).await;
                return;
            }
        };
        let (id, answer_by, decision) = match outcome {
            AskOutcome::NotOffered { reason } => {
                let reply = AskReply {
                    id: None,
                    answer_by: None,
                    reason: Some(reason),
                };
                let _ = write_line(&mut self.writer, &TypedReply::ok(&reply)).await;
                return;
            }
            AskOutcome::Waiting {
                id,
                answer_by,
                decision,
            } => (id, answer_by, decision),
        };
        let reply = AskReply {
            id: Some(id.clone()),
            answer_by: Some(answer_by),
            reason: None,
        };
        if write_line(&mut self.writer, &TypedReply::ok(&reply))
            .await
            .is_err()
        {
            registry.request_over(&id);
            return;
        }
        let left = (answer_by - chrono::Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        let mut line = BoundedLine::new(MAX_LINE);
        let delivery = tokio::select! {
            // The engine stops: hang up, and the hook prints nothing.
            () = token.cancelled() => None,
            // The hook hung up (it gave up, or was killed), or broke the protocol.
            _ = line.read(&mut self.reader) => None,
            () = tokio::time::sleep(left) => None,
            delivery = decision => delivery.ok(),
        };
        let Some(Delivery { decision, printed }) = delivery else {
            registry.request_over(&id);
            return;
        };
        let answered = !matches!(decision, HookDecision::None { .. });
        if write_line(&mut self.writer, &decision).await.is_err() || !answered {
            return;
        }
        // The hook prints the answer for the agent, then says so: only then has it arrived.
        line.start_over();
        let confirmed =
            tokio::time::timeout(PRINT_CONFIRM_TIMEOUT, line.read(&mut self.reader)).await;
        let printed_this = matches!(confirmed, Ok(Ok(LineRead::Line)))
            && serde_json::from_slice::<Printed>(trim_line(line.bytes()))
                .is_ok_and(|p| p.printed == id);
        if printed_this {
            if let Some(printed) = printed {
                let _ = printed.send(());
            }
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

/// One request's answer, typed until it is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Observed(ObserveReply),
    Sessions(SessionList),
    Ping(PingInfo),
    Delivery(crate::delivery::DeliveryReport),
    Remotes(Vec<crate::remote::RemoteLinkStatus>),
    Pending(PendingList),
    Limits(crate::control::protocol::LimitsList),
    Answered(AnswerReply),
    Talked(crate::control::protocol::TalkReply),
    Error(ErrorBody),
}

impl Answer {
    /// The reply as it goes on the wire.
    pub fn to_reply(&self) -> Reply {
        let value = match self {
            Answer::Observed(r) => serde_json::to_value(r),
            Answer::Sessions(r) => serde_json::to_value(r),
            Answer::Ping(r) => serde_json::to_value(r),
            Answer::Delivery(r) => serde_json::to_value(r),
            Answer::Remotes(r) => serde_json::to_value(r),
            Answer::Pending(r) => serde_json::to_value(r),
            Answer::Limits(r) => serde_json::to_value(r),
            Answer::Answered(r) => serde_json::to_value(r),
            Answer::Talked(r) => serde_json::to_value(r),
            Answer::Error(e) => return Reply::refusal(e.clone()),
        };
        match value {
            Ok(v) => Reply::ok(v),
            Err(e) => Reply::error(ErrorCode::Internal, e.to_string()),
        }
    }

    async fn write<W: AsyncWriteExt + Unpin>(&self, writer: &mut W) -> io::Result<()> {
        // Written from the typed value, without a JSON tree in between.
        match self {
            Answer::Observed(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Sessions(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Ping(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Delivery(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Remotes(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Pending(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Limits(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Answered(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Talked(r) => write_line(writer, &TypedReply::ok(r)).await,
            Answer::Error(e) => write_line(writer, &Reply::refusal(e.clone())).await,
        }
    }
}

/// A status line's windows as the engine keeps them: the reporting session's agent's, on this
/// machine, names cut short, percents within 0–100, at most
/// [`crate::control::protocol::MAX_STATUS_LINE_WINDOWS`].
fn admit_status_line_windows(
    agent: crate::model::Agent,
    session_id: &str,
    windows: Vec<crate::plan_limits::PlanWindow>,
) -> Vec<crate::plan_limits::PlanWindow> {
    // The longest account or window name taken from a status line.
    let cut = |s: &str| s.chars().take(32).collect::<String>();
    windows
        .into_iter()
        .take(crate::control::protocol::MAX_STATUS_LINE_WINDOWS)
        .filter(|w| w.used_percent.is_finite() && !w.window.trim().is_empty())
        .map(|w| crate::plan_limits::PlanWindow {
            agent,
            host: None,
            account: cut(&w.account),
            window: cut(&w.window),
            used_percent: w.used_percent.clamp(0.0, 100.0),
            session_id: session_id.to_string(),
            ..w
        })
        .collect()
}

/// Answers one request. Pure apart from the registry and the ledgers.
pub fn handle(
    request: Request,
    registry: &SessionsRegistry,
    ledgers: &EngineLedgers,
    host: &str,
) -> Reply {
    handle_typed(request, registry, ledgers, host).to_reply()
}

/// Answers one request, typed. Pure apart from the registry and the ledgers.
pub fn handle_typed(
    request: Request,
    registry: &SessionsRegistry,
    ledgers: &EngineLedgers,
    host: &str,
) -> Answer {
    match request {
        Request::Observe { observation } => {
            if crate::model::is_probe_id(&observation.session_id) {
                // An older hook's probe, sent as an ordinary event: recorded, never a session.
                ledgers.delivery.record_probe(
                    &observation.session_id,
                    Some(observation.agent),
                    observation.at,
                );
                return Answer::Observed(ObserveReply {
                    outcome: crate::control::protocol::OutcomeKind::Quiet,
                    reason: None,
                });
            }
            if observation.source == crate::model::Source::Hook {
                ledgers.delivery.record_hook_event(
                    observation.agent,
                    observation.event.as_str(),
                    chrono::Utc::now(),
                );
            }
            match registry.observe(observation) {
                Ok(outcome) => Answer::Observed(outcome.into()),
                Err(e) => Answer::Error(ErrorBody {
                    code: ErrorCode::InvalidObservation,
                    message: e.to_string(),
                    on_remote: None,
                    on_remote_session: None,
                }),
            }
        }
        Request::List => Answer::Sessions(SessionList {
            sessions: super::talk::with_abilities(registry.list(), &ledgers.talk),
        }),
        Request::History { limit } => Answer::Sessions(SessionList {
            sessions: registry.history(limit.min(crate::control::protocol::MAX_HISTORY_LIMIT)),
        }),
        Request::Ping => Answer::Ping(PingInfo {
            pid: std::process::id(),
            host: host.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sessions: registry.live_count(),
        }),
        Request::Watch => Answer::Error(ErrorBody {
            code: ErrorCode::BadRequest,
            message: "watch is a stream".into(),
            on_remote: None,
            on_remote_session: None,
        }),
        Request::Probe { probe_id, agent } => {
            tracing::info!(probe_id, agent = ?agent, "doctor_probe_received");
            ledgers
                .delivery
                .record_probe(&probe_id, agent, chrono::Utc::now());
            Answer::Observed(ObserveReply {
                outcome: crate::control::protocol::OutcomeKind::Quiet,
                reason: None,
            })
        }
        Request::UnknownEvent { event, agent } => {
            tracing::info!(event, agent = ?agent, "unknown_hook_event");
            ledgers
                .delivery
                .record_unknown_event(agent, &event, chrono::Utc::now());
            Answer::Observed(ObserveReply {
                outcome: crate::control::protocol::OutcomeKind::Quiet,
                reason: None,
            })
        }
        Request::Delivery => Answer::Delivery(ledgers.delivery.report()),
        Request::ForeignCall {
            caller,
            event,
            agent,
        } => {
            tracing::info!(caller, event, agent = ?agent, "foreign_hook_call");
            ledgers
                .delivery
                .record_foreign_call(&caller, &event, chrono::Utc::now());
            Answer::Observed(ObserveReply {
                outcome: crate::control::protocol::OutcomeKind::Quiet,
                reason: None,
            })
        }
        Request::Remotes => Answer::Remotes(ledgers.remote_links.all()),
        Request::Pending => Answer::Pending(PendingList {
            pending: registry.pending(),
        }),
        Request::Limits => Answer::Limits(crate::control::protocol::LimitsList {
            limits: ledgers.limits.current(chrono::Utc::now()),
        }),
        Request::StatusLine {
            observation,
            limits,
        } => {
            ledgers
                .delivery
                .record_status_line(observation.agent, chrono::Utc::now());
            let agent = observation.agent;
            let session_id = observation.session_id.clone();
            let reply = match registry.observe(observation) {
                Ok(outcome) => Answer::Observed(outcome.into()),
                Err(e) => Answer::Error(ErrorBody {
                    code: ErrorCode::InvalidObservation,
                    message: e.to_string(),
                    on_remote: None,
                    on_remote_session: None,
                }),
            };
            // The windows are the reporting session's agent's, on this machine, bounded like a
            // feed's; a session the registry does not know (ended, refused) is no news of a plan.
            if registry.knows(&session_id) {
                let windows = admit_status_line_windows(agent, &session_id, limits);
                ledgers.limits.apply(windows);
            }
            reply
        }
        // Both wait on a hook: served on the socket's connection task, never here.
        Request::Ask { .. }
        | Request::Answer { .. }
        | Request::Talk { .. }
        | Request::Inbox { .. } => Answer::Error(ErrorBody {
            code: ErrorCode::BadRequest,
            message: "ask and answer are served on the control socket only".into(),
            on_remote: None,
            on_remote_session: None,
        }),
        Request::ReloadRemotes => {
            let listening = ledgers.remote_links.request_reload();
            Answer::Observed(ObserveReply {
                outcome: if listening {
                    crate::control::protocol::OutcomeKind::Changed
                } else {
                    crate::control::protocol::OutcomeKind::Ignored
                },
                reason: None,
            })
        }
    }
}

/// Streams the snapshot, then every change, until the client or the engine goes away. A client
/// that lags gets a fresh list (`{"kind": "resync", ...}`) instead of the changes it missed; a
/// client that does not read a change within [`WRITE_TIMEOUT`] is dropped, with that reason in
/// the log. The read half is watched too, so a client that hangs up is gone at once.
async fn watch<W: AsyncWriteExt + Unpin>(
    mut reader: ServerReader,
    writer: &mut W,
    registry: &SessionsRegistry,
    token: &CancellationToken,
) {
    let mut changes = registry.subscribe();
    let snapshot = SessionList {
        sessions: registry.list(),
    };
    if let Err(e) = write_line(writer, &TypedReply::ok(&snapshot)).await {
        log_dropped_watcher(&e);
        return;
    }
    let mut scratch = [0u8; 512];
    loop {
        let change = tokio::select! {
            () = token.cancelled() => return,
            read = reader.read(&mut scratch) => match read {
                // Hung up (or broken): nothing more to send to it.
                Ok(0) | Err(_) => return,
                // A watcher has nothing to say; what it sends anyway is read and dropped.
                Ok(_) => continue,
            },
            change = changes.recv() => change,
        };
        let written = match change {
            Ok(change) => write_line(writer, &change).await,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "watch client lagged; resyncing");
                write_line(
                    writer,
                    &SessionsLine::Resync {
                        sessions: registry.list(),
                    },
                )
                .await
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if let Err(e) = written {
            log_dropped_watcher(&e);
            return;
        }
    }
}

fn log_dropped_watcher(e: &io::Error) {
    if e.kind() == io::ErrorKind::TimedOut {
        tracing::warn!(
            timeout_ms = u64::try_from(WRITE_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            "dropped a watch client: it is not reading (a change waited past the write deadline)"
        );
    } else {
        tracing::debug!(error = %e, "watch client went away");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, EventKind};

    // The delivery ledger is the engine's, beside the registry: a probe that an older hook sent
    // as an ordinary event lands there, and never among the sessions.
    #[test]
    fn a_probe_sent_as_an_ordinary_event_is_recorded_in_the_ledger_and_never_a_session() {
        let registry = SessionsRegistry::new();
        let ledgers = EngineLedgers::default();
        let probe = format!("{}claude-1", crate::model::PROBE_PREFIX);
        let observation = Observation::new(
            &probe,
            Agent::Claude,
            EventKind::SessionStart,
            chrono::Utc::now(),
        );
        let answer = handle_typed(
            Request::Observe { observation },
            &registry,
            &ledgers,
            "here",
        );
        assert!(matches!(answer, Answer::Observed(_)), "{answer:?}");
        assert_eq!(ledgers.delivery.report().probes.len(), 1);
        assert!(registry.list().is_empty());
        // Positive control: the same event with an ordinary id is a session.
        let observation = Observation::new(
            "s1",
            Agent::Claude,
            EventKind::SessionStart,
            chrono::Utc::now(),
        );
        handle_typed(
            Request::Observe { observation },
            &registry,
            &ledgers,
            "here",
        );
        assert_eq!(registry.list().len(), 1);
        assert_eq!(ledgers.delivery.report().probes.len(), 1);
    }

    // A status-line request is a local client's, but still outside input: its windows are taken
    // as the reporting session's agent's, on this machine, bounded, and only for a session the
    // registry knows.
    #[test]
    fn a_status_lines_windows_are_bounded_and_belong_to_the_session_that_sent_them() {
        let registry = SessionsRegistry::new();
        let ledgers = EngineLedgers::default();
        let now = chrono::Utc::now();
        let window = |n: usize| crate::plan_limits::PlanWindow {
            agent: Agent::Codex,
            host: Some("elsewhere".into()),
            account: "a".repeat(500),
            window: format!("w{n}"),
            window_minutes: Some(300),
            used_percent: 500.0,
            resets_at: Some(now + chrono::Duration::hours(1)),
            seen_at: now,
            session_id: "someone-else".into(),
        };
        let request = |id: &str| Request::StatusLine {
            observation: Observation::new(id, Agent::Claude, EventKind::Sighting, now)
                .with_source(crate::model::Source::StatusLine),
            limits: (0..20).map(window).collect(),
        };
        handle_typed(request("s1"), &registry, &ledgers, "here");
        let kept = ledgers.limits.current(now);
        assert_eq!(
            kept.len(),
            crate::control::protocol::MAX_STATUS_LINE_WINDOWS
        );
        assert!(kept.iter().all(|w| w.agent == Agent::Claude
            && w.host.is_none()
            && w.account.chars().count() == 32
            && w.used_percent == 100.0
            && w.session_id == "s1"));
        assert_eq!(ledgers.delivery.report().last_status_lines.len(), 1);
        // A status line whose session is refused brings no windows.
        let fresh = EngineLedgers::default();
        handle_typed(request("-bad id"), &registry, &fresh, "here");
        assert!(fresh.limits.current(now).is_empty());
    }

    // The CLI takes a remote's request there only from what the refusal names: the reply on the
    // wire must carry it whole, not only the sentence.
    #[test]
    fn a_refusal_naming_a_remote_request_keeps_it_on_the_wire() {
        let remote = crate::answering::route::RemoteRequest {
            host: "devbox".into(),
            id: crate::answering::RequestId::parse("r5-far"),
        };
        let refusal = Answer::Error(ErrorBody {
            on_remote: Some(Box::new(remote.clone())),
            ..ErrorBody::new(ErrorCode::Refused, "on devbox")
        });
        let line = serde_json::to_string(&refusal.to_reply()).unwrap();
        let read: Reply = serde_json::from_str(&line).unwrap();
        assert_eq!(
            read.error.unwrap().on_remote.as_deref(),
            Some(&remote),
            "{line}"
        );
    }
}
