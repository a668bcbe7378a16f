//! The app-server feed's I/O: finding a running server (its socket and pid file, inotify on their
//! folders), connecting to its control socket (refusing one others could write), the connection
//! task that reads messages into the thread book and writes its requests, and the checks it runs
//! while connected (TUIs gone, threads headless). Everything it decides is in
//! [`super::threads`]; everything it parses in [`super::protocol`].

#[cfg(unix)]
use std::collections::HashMap;
#[cfg(unix)]
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
#[cfg(unix)]
use tokio::task::JoinHandle;
#[cfg(unix)]
use tokio_util::sync::CancellationToken;

#[cfg(unix)]
use super::protocol::{parse_server_message, ClientRequest, ServerMessage, ID_INITIALIZE};
#[cfg(unix)]
use super::threads::{
    headless_marks, tui_deaths, LiveThread, ThreadBook, ThreadHolder, ThreadSession,
};
#[cfg(unix)]
use crate::feeds::{apply_outputs, FeedOutput, FeedSink};
#[cfg(unix)]
use crate::model::{Agent, EventKind, SessionState};
#[cfg(unix)]
use crate::process::PidProbe;
#[cfg(unix)]
use chrono::Utc;

/// The control socket under a `CODEX_HOME`.
pub const CONTROL_SOCKET: &str = "app-server-control/app-server-control.sock";
/// The managed server's pid file under a `CODEX_HOME` (JSON: `{"pid": N, …}`).
pub const DAEMON_PID_FILE: &str = "app-server-daemon/daemon.pid";
/// How often the pids of the server's threads' TUIs are probed while connected.
pub const TUI_CHECK_INTERVAL: Duration = Duration::from_millis(250);
/// The longest wait between two connection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// While no server runs (most of the time for most users), how often the feed looks again when
/// inotify said nothing: the safety net for a watch that could not be set up (no `CODEX_HOME`
/// yet, the inotify limit). A server that starts is noticed at once, by inotify on the folders
/// its socket and pid file are in.
pub const ABSENT_RECHECK: Duration = Duration::from_secs(60);
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// A connect or handshake that takes longer than this is given up (and retried).
#[cfg(unix)]
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The largest WebSocket message or frame read from the server; a larger one ends the connection.
pub const MAX_MESSAGE: usize = 4 << 20;
/// How long a question or approval of Codex's stays listed for an answer from here. The
/// terminal shows its own dialog all the while (the first answer wins), so this bounds only our
/// listing; Claude's hook waits as long.
pub const QUESTION_WAIT: Duration = Duration::from_secs(600);

/// The requests opened from this connection (questions, approvals), by the server's request id:
/// a reply goes to the server that asked, so when the connection ends, the requests close with
/// it (the terminal still asks).
#[cfg(unix)]
struct OpenQuestions {
    sink: FeedSink,
    by_server_id: HashMap<String, crate::answering::RequestId>,
}

#[cfg(unix)]
impl Drop for OpenQuestions {
    fn drop(&mut self) {
        for id in self.by_server_id.values() {
            self.sink.sessions().request_over(id);
        }
    }
}

/// A request opened from this connection, waiting for the user's answer.
#[cfg(unix)]
struct ServerWait {
    server_id: Value,
    reply: super::protocol::ReplyTo,
}

/// The server's request ids are JSON (a number in 0.171): keyed by their text.
#[cfg(unix)]
fn server_key(id: &Value) -> String {
    id.to_string()
}

/// The pid in `app-server-daemon/daemon.pid` (JSON `{"pid": N, …}`, or a bare number).
pub fn parse_daemon_pid(text: &str) -> Option<u32> {
    let text = text.trim();
    if let Ok(pid) = text.parse::<u32>() {
        return (pid > 0).then_some(pid);
    }
    let v: Value = serde_json::from_str(text).ok()?;
    let pid = u32::try_from(v.get("pid")?.as_u64()?).ok()?;
    (pid > 0).then_some(pid)
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Reads who holds each thread's lock under `codex_home` (`/proc/locks` and the process table).
fn holders(codex_home: &Path, threads: &[LiveThread]) -> HashMap<String, ThreadHolder> {
    use crate::agents::codex::lock_owner::{codex_owner, CodexOwner};
    use crate::feeds::procfs::{self, LockProbe};
    let locks = procfs::read_proc_locks();
    let table = crate::process::SystemProcesses;
    threads
        .iter()
        .map(|t| {
            let path = codex_home
                .join("thread-writer-locks")
                .join(format!("{}.lock", t.session_id));
            let holder = match procfs::probe_lock(&path, locks.as_ref()) {
                LockProbe::Held(Some(pid)) => match codex_owner(&table, pid) {
                    CodexOwner::Pid(_) => ThreadHolder::Tui,
                    CodexOwner::DetachedServer => ThreadHolder::ServerAlone,
                },
                _ => ThreadHolder::Unknown,
            };
            (t.session_id.clone(), holder)
        })
        .collect()
}

/// Capped exponential backoff between connection attempts.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: FIRST_BACKOFF,
        }
    }
}

impl Backoff {
    /// The wait after a failure (doubling, at most [`MAX_BACKOFF`]).
    pub fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        wait
    }

    /// A connection worked: the next failure waits the shortest time again.
    pub fn reset(&mut self) {
        self.next = FIRST_BACKOFF;
    }
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Whether a managed server runs for `codex_home`: its socket exists and its pid is alive.
fn running_server(codex_home: &Path) -> Option<u32> {
    if !codex_home.join(CONTROL_SOCKET).exists() {
        return None;
    }
    let text = std::fs::read_to_string(codex_home.join(DAEMON_PID_FILE)).ok()?;
    let pid = parse_daemon_pid(&text)?;
    matches!(crate::process::probe_pid(pid), PidProbe::Alive { .. }).then_some(pid)
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Starts one connection task per Codex home; each runs until `token` is cancelled.
pub fn spawn(
    sink: FeedSink,
    codex_homes: Vec<PathBuf>,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let tasks: Vec<_> = codex_homes
            .into_iter()
            .map(|home| tokio::spawn(follow_home(sink.clone(), home, token.clone())))
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    })
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
async fn follow_home(sink: FeedSink, home: PathBuf, token: CancellationToken) {
    let mut backoff = Backoff::default();
    loop {
        let look = Arc::new(|home: &Path| running_server(home));
        let Some(server_pid) = wait_for_server(&home, look, ABSENT_RECHECK, &token).await else {
            return;
        };
        let mut handshake_done = false;
        let ended = connection(&sink, &home, server_pid, &token, &mut handshake_done).await;
        if handshake_done {
            // It worked: retry soon (a TUI's death can reset the connection; see below).
            backoff.reset();
        }
        if let Err(error) = ended {
            tracing::debug!(home = %home.display(), %error, "codex_app_server_connection_ended");
        }
        let wait = backoff.failed();
        tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Looks for a running server under a `CODEX_HOME` ([`running_server`]; tests script it).
#[cfg(unix)]
type ServerLook = dyn Fn(&Path) -> Option<u32> + Send + Sync;

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Waits until `look` finds a server for `home` (its pid), looking at once, then whenever
/// inotify reports a change to the server's socket or pid file (or the folders holding them),
/// and at the latest every `recheck`; `None` when `token` is cancelled. The watch is set before
/// each look, so a server that appears between the two is not missed.
async fn wait_for_server(
    home: &Path,
    look: Arc<ServerLook>,
    recheck: Duration,
    token: &CancellationToken,
) -> Option<u32> {
    loop {
        // One signal waiting is enough: it makes the next look, which sees everything.
        let (tx, mut signals) = tokio::sync::mpsc::channel(1);
        // No watch (no CODEX_HOME yet: Codex not installed) drops the sender: then only the
        // recheck looks (a closed channel must not count as a signal, or this loop spins).
        let _watch = watch_server_files(home, tx);
        let found = {
            let (home, look) = (home.to_path_buf(), Arc::clone(&look));
            tokio::task::spawn_blocking(move || look(&home))
                .await
                .ok()
                .flatten()
        };
        if found.is_some() {
            return found;
        }
        tokio::select! {
            () = token.cancelled() => return None,
            () = tokio::time::sleep(recheck) => {}
            Some(()) = signals.recv() => {}
        }
    }
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// inotify (the `notify` crate) on `home` and the folders of [`CONTROL_SOCKET`] and
/// [`DAEMON_PID_FILE`] that exist, signalling a change to one of those names. `None` when no
/// watch could be set (then only the recheck looks).
fn watch_server_files(
    home: &Path,
    signals: tokio::sync::mpsc::Sender<()>,
) -> Option<notify::RecommendedWatcher> {
    let names: Vec<std::ffi::OsString> = [CONTROL_SOCKET, DAEMON_PID_FILE]
        .iter()
        .flat_map(|rel| Path::new(rel).iter().map(|part| part.to_os_string()))
        .collect();
    let folders: Vec<PathBuf> = std::iter::once(home.to_path_buf())
        .chain(
            [CONTROL_SOCKET, DAEMON_PID_FILE]
                .iter()
                .filter_map(|rel| home.join(rel).parent().map(Path::to_path_buf)),
        )
        .filter(|folder| folder.is_dir())
        .collect();
    // No folder (no CODEX_HOME: Codex not installed): no watcher at all, since making one costs
    // an inotify instance and a thread, once a recheck for as long as Codex is absent.
    if folders.is_empty() {
        return None;
    }
    let ours = move |path: &Path| {
        path.file_name()
            .is_some_and(|n| names.iter().any(|m| m == n))
    };
    // A signal's look sees every change since the last one.
    let (watcher, failed) =
        crate::folder_wake::wake_on_change(folders.iter().map(PathBuf::as_path), ours, signals)
            .ok()?;
    (failed.len() < folders.len()).then_some(watcher)
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("websocket: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("timed out")]
    Timeout,
    #[error("refused: {0}")]
    Untrusted(#[from] UntrustedSocket),
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Why Codex's control socket is not trusted (see [`trusted_socket`]).
#[derive(Debug, thiserror::Error)]
enum UntrustedSocket {
    #[error("{0} is a symlink in a folder that is not yours alone")]
    SharedLinkFolder(String),
    #[error("{path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Owner(#[from] crate::control::client::ClientError),
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Codex's control socket, checked like ours before anything is sent to it: a socket of another
/// user, one others may write, or one in a folder others may write is not Codex's server,
/// whatever answers there. Codex 0.171 keeps a symlink in its own private folder
/// (`app-server-control/`, 0700) pointing at the socket in `/tmp/codex-daemon-<uid>/` (0700): a
/// symlink is followed only from a folder that is ours and private, and its target is checked.
fn trusted_socket(path: &Path) -> Result<PathBuf, UntrustedSocket> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(path.to_path_buf()); // nothing there yet: the connect says so
    };
    let target = if meta.file_type().is_symlink() {
        let folder = path.parent().unwrap_or_else(|| Path::new("/"));
        let unreadable = |at: &Path| {
            let path = at.display().to_string();
            move |source| UntrustedSocket::Unreadable { path, source }
        };
        let folder_meta = std::fs::metadata(folder).map_err(unreadable(folder))?;
        // SAFETY: geteuid has no failure mode and touches no memory.
        let me = unsafe { libc::geteuid() };
        if folder_meta.uid() != me || folder_meta.mode() & 0o022 != 0 {
            return Err(UntrustedSocket::SharedLinkFolder(
                path.display().to_string(),
            ));
        }
        std::fs::canonicalize(path).map_err(unreadable(path))?
    } else {
        path.to_path_buf()
    };
    crate::control::client::check_socket_owner(&target)?;
    Ok(target)
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// One connection, until the server goes or `token` is cancelled. `handshake_done` says whether
/// the server answered `initialize` (then the backoff starts over, however it ended).
///
/// The server resets every connection when a TUI it serves is killed (seen with 0.171): so when
/// the connection ends, the TUIs of the threads it held are checked once more before returning,
/// and a killed TUI's session still ends at once.
async fn connection(
    sink: &FeedSink,
    home: &Path,
    server_pid: u32,
    token: &CancellationToken,
    handshake_done: &mut bool,
) -> Result<(), ConnectionError> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let socket = trusted_socket(&home.join(CONTROL_SOCKET)).map_err(ConnectionError::Untrusted)?;
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::UnixStream::connect(&socket))
        .await
        .map_err(|_| ConnectionError::Timeout)??;
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let (mut ws, _) = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio_tungstenite::client_async_with_config("ws://localhost/", stream, Some(config)),
    )
    .await
    .map_err(|_| ConnectionError::Timeout)??;
    tracing::info!(home = %home.display(), server_pid, "codex_app_server_connected");
    let mut book = ThreadBook::new();
    let first = ClientRequest::Initialize.to_json(ID_INITIALIZE);
    ws.send(Message::text(first.to_string())).await?;
    let mut ticks = tokio::time::interval(TUI_CHECK_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tick_count: u64 = 0;
    // Questions asked of us, each waiting for the user's answer (bounded: one per open request,
    // and the book holds few).
    let mut open = OpenQuestions {
        sink: sink.clone(),
        by_server_id: HashMap::new(),
    };
    // The way in for `agent-tray send` and `stop`: this connection's session threads, kept
    // current after every message; it closes with the connection (the guard).
    let reached = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let (_talk_guard, mut talk_orders) = sink.talk.open(
        crate::talk_back::TalkRoute::AppServer,
        crate::talk_back::Reach::Sessions(Arc::clone(&reached)),
    );
    // Orders sent, by request id, until the server answers (bounded: the inbox holds few, and
    // each waits at most the talk budget on the engine's side).
    let mut talk_waits: HashMap<u64, TalkDone> = HashMap::new();
    type Answered = (ServerWait, Option<crate::registry::answers::Delivery>);
    let mut waits: futures_util::stream::FuturesUnordered<
        std::pin::Pin<Box<dyn std::future::Future<Output = Answered> + Send>>,
    > = futures_util::stream::FuturesUnordered::new();
    loop {
        let requests;
        tokio::select! {
            () = token.cancelled() => {
                let _ = ws.close(None).await;
                return Ok(());
            }
            Some((wait, delivery)) = waits.next(), if !waits.is_empty() => {
                open.by_server_id.remove(&server_key(&wait.server_id));
                let Some(crate::registry::answers::Delivery { decision, printed }) = delivery else {
                    continue;
                };
                if let Some(reply) = super::protocol::server_reply(&wait.server_id, &wait.reply, &decision) {
                    ws.send(Message::text(reply.to_string())).await?;
                    if let Some(printed) = printed {
                        let _ = printed.send(());
                    }
                }
                continue;
            }
            Some(order) = talk_orders.recv() => {
                match talk_request(&book, &order.session_id, &order.order) {
                    Ok(request) => {
                        let id = book.id_for(&request);
                        ws.send(Message::text(request.to_json(id).to_string())).await?;
                        talk_waits.insert(id, order.done);
                    }
                    Err(refusal) => {
                        let _ = order.done.send(Err(refusal));
                    }
                }
                continue;
            }
            frame = ws.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => {
                        check_threads(sink, home, server_pid, &mut book, false).await;
                        return Ok(());
                    }
                    Some(Err(e)) => {
                        check_threads(sink, home, server_pid, &mut book, false).await;
                        return Err(e.into());
                    }
                    Some(Ok(_)) => continue,
                };
                let msg = match parse_server_message(text.as_str()) {
                    Ok(msg) => msg,
                    Err(error) => {
                        tracing::debug!(%error, "codex_app_server_frame_skipped");
                        continue;
                    }
                };
                if matches!(msg, ServerMessage::Response { id: ID_INITIALIZE, .. }) {
                    *handshake_done = true;
                }
                if let ServerMessage::Response { id, error, .. } = &msg {
                    if let Some(done) = talk_waits.remove(id) {
                        let _ = done.send(match error {
                            None => Ok(()),
                            Some(error) => Err(crate::talk_back::TalkFailure::NotDelivered(
                                format!("Codex's server refused it: {error}"),
                            )),
                        });
                        continue;
                    }
                }
                let handled = book.handle(msg, Utc::now());
                if let Ok(mut ids) = reached.lock() {
                    *ids = book.session_threads();
                }
                requests = handled.requests;
                for ask in handled.asks {
                    let accepts = crate::answering::Accepts {
                        allow_for_session: false,
                        deny_message: false,
                    };
                    match sink.sessions().ask(ask.observation, ask.call, QUESTION_WAIT, accepts) {
                        Ok(crate::registry::answers::AskOutcome::Waiting { id, decision, .. }) => {
                            open.by_server_id.insert(server_key(&ask.request_id), id);
                            let wait = ServerWait {
                                server_id: ask.request_id,
                                reply: ask.reply,
                            };
                            waits.push(Box::pin(async move { (wait, decision.await.ok()) }));
                        }
                        Ok(crate::registry::answers::AskOutcome::NotOffered { reason }) => {
                            tracing::debug!(%reason, "codex_request_not_offered");
                        }
                        Err(error) => tracing::debug!(%error, "codex_request_refused"),
                    }
                }
                for resolved in handled.resolved {
                    if let Some(id) = open.by_server_id.remove(&server_key(&resolved)) {
                        sink.sessions().answered_elsewhere(&id);
                    }
                }
                let usage = handled
                    .usage
                    .into_iter()
                    .map(|report| FeedOutput::Usage(Box::new(report)));
                apply_outputs(
                    sink,
                    handled.observations.into_iter().map(FeedOutput::observe).chain(usage).collect(),
                );
            }
            _ = ticks.tick() => {
                tick_count += 1;
                // Headless threads change slowly: every 8th tick (2 s) is enough.
                let headless_too = tick_count.is_multiple_of(8);
                requests = check_threads(sink, home, server_pid, &mut book, headless_too).await;
            }
        }
        for request in requests {
            let id = book.id_for(&request);
            ws.send(Message::text(request.to_json(id).to_string()))
                .await?;
        }
    }
}

/// Where a talk order's outcome goes.
#[cfg(unix)]
type TalkDone = tokio::sync::oneshot::Sender<Result<(), crate::talk_back::TalkFailure>>;

/// The request that carries out a talk order on the thread `thread` (a Codex session's id is
/// its thread's), or why it cannot be: the server takes text, not the TUI's commands, and a
/// stop needs the running turn's id.
#[cfg(unix)]
fn talk_request(
    book: &ThreadBook,
    thread: &str,
    order: &crate::talk_back::TalkOrder,
) -> Result<ClientRequest, crate::talk_back::TalkFailure> {
    use crate::talk_back::{TalkFailure, TalkOrder};
    match order {
        TalkOrder::Send { prompt } if prompt.command() => Err(TalkFailure::Refused(
            "Codex's server takes a prompt's text, not the terminal's commands: type a command \
             in Codex's terminal; nothing was sent"
                .into(),
        )),
        TalkOrder::Send { prompt } => Ok(ClientRequest::TurnStart {
            thread: thread.to_string(),
            text: prompt.as_str().to_string(),
        }),
        TalkOrder::Stop => match book.running_turn(thread) {
            Some(turn) => Ok(ClientRequest::TurnInterrupt {
                thread: thread.to_string(),
                turn: turn.to_string(),
            }),
            None => Err(TalkFailure::Refused(
                "Codex's server has not said which turn is running (it began before Agent Tray \
                 connected): stop it in Codex's terminal (Esc); nothing was sent"
                    .into(),
            )),
        },
    }
}

#[cfg(unix)] // Codex's app-server socket is a unix socket
/// Ends the sessions of the server's threads whose TUI is gone and, with `headless_too`, marks
/// which run with no terminal; returns the requests that follow (unsubscribing).
async fn check_threads(
    sink: &FeedSink,
    home: &Path,
    server_pid: u32,
    book: &mut ThreadBook,
    headless_too: bool,
) -> Vec<ClientRequest> {
    let threads = book.session_threads();
    let live: Vec<crate::model::Session> = sink
        .sessions()
        .sessions()
        .into_iter()
        .filter(|s| s.agent == Agent::Codex && s.state != SessionState::Ended)
        .filter(|s| threads.contains(&s.session_id))
        .collect();
    let sessions: Vec<ThreadSession> = live
        .iter()
        .filter_map(|s| {
            Some(ThreadSession {
                pid: s.pid?,
                session_id: s.session_id.clone(),
                pid_start: s.pid_start.clone(),
            })
        })
        .collect();
    let live_threads: Vec<LiveThread> = if headless_too {
        live.iter()
            .map(|s| LiveThread {
                session_id: s.session_id.clone(),
                has_pid: s.pid.is_some(),
                headless: s.headless,
            })
            .collect()
    } else {
        Vec::new()
    };
    if sessions.is_empty() && live_threads.is_empty() {
        return Vec::new();
    }
    let home = home.to_path_buf();
    let (outputs, marks) = tokio::task::spawn_blocking(move || {
        let deaths = tui_deaths(&sessions, Some(server_pid), crate::process::probe_pid);
        let marks = if live_threads.is_empty() {
            Vec::new()
        } else {
            let held = holders(&home, &live_threads);
            headless_marks(&live_threads, |id| {
                held.get(id).copied().unwrap_or(ThreadHolder::Unknown)
            })
        };
        (deaths, marks)
    })
    .await
    .unwrap_or_default();
    let mut requests = Vec::new();
    for output in &outputs {
        if let FeedOutput::EndOwnedBy { session_id, .. } = output {
            tracing::info!(%session_id, "codex_tui_gone_while_server_holds_thread");
            requests.extend(book.tui_gone(session_id));
        }
    }
    apply_outputs(sink, outputs);
    let now = Utc::now();
    let marks: Vec<FeedOutput> = marks
        .into_iter()
        .map(|(id, headless)| {
            tracing::info!(session_id = %id, headless, "codex_thread_terminal_changed");
            let mut obs = book.observation(&id, EventKind::Sighting, now);
            obs.headless = Some(headless);
            FeedOutput::observe(obs)
        })
        .collect();
    apply_outputs(sink, marks);
    requests
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::registry::SessionsRegistry;

    // Issue 27 point 8: Codex's socket is checked like ours before anything is sent to it.
    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[test]
    fn a_codex_socket_others_could_write_is_refused_before_connecting() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let socket = home.path().join(CONTROL_SOCKET);
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        std::fs::set_permissions(
            socket.parent().unwrap(),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let sink = FeedSink::without_history(std::sync::Arc::new(SessionsRegistry::new()));
        let mut done = false;
        let result = runtime.block_on(connection(
            &sink,
            home.path(),
            1,
            &CancellationToken::new(),
            &mut done,
        ));
        let error = result.unwrap_err().to_string();
        assert!(error.contains("writable by others"), "{error}");
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "nothing connected to it");
        // A symlink in its place is refused too.
        drop(listener);
        std::fs::remove_file(&socket).unwrap();
        std::os::unix::fs::symlink("/tmp", &socket).unwrap();
        let error = runtime
            .block_on(connection(
                &sink,
                home.path(),
                1,
                &CancellationToken::new(),
                &mut done,
            ))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a socket"), "{error}");
        // As Codex lays it out: a symlink in its private folder to a private socket elsewhere.
        let daemon_dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(daemon_dir.path(), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        let real = daemon_dir.path().join("sock");
        let _server = std::os::unix::net::UnixListener::bind(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::remove_file(&socket).unwrap();
        std::os::unix::fs::symlink(&real, &socket).unwrap();
        assert_eq!(
            trusted_socket(&socket).unwrap(),
            std::fs::canonicalize(&real).unwrap()
        );
        // The same link in a folder others may write is not followed.
        std::fs::set_permissions(
            socket.parent().unwrap(),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        assert!(trusted_socket(&socket)
            .unwrap_err()
            .to_string()
            .contains("not yours alone"));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_starts_over_after_a_connection() {
        let mut b = Backoff::default();
        let waits: Vec<Duration> = (0..8).map(|_| b.failed()).collect();
        assert_eq!(waits[0], FIRST_BACKOFF);
        assert_eq!(waits[1], FIRST_BACKOFF * 2);
        assert!(waits.iter().all(|w| *w <= MAX_BACKOFF));
        assert_eq!(*waits.last().unwrap(), MAX_BACKOFF);
        b.reset();
        assert_eq!(b.failed(), FIRST_BACKOFF);
    }

    #[test]
    fn the_daemon_pid_file_is_json_with_a_pid() {
        assert_eq!(
            parse_daemon_pid(r#"{"pid":6972,"processStartTime":"Tue Dec  1 03:07:36 2026"}"#),
            Some(6972)
        );
        assert_eq!(parse_daemon_pid("123\n"), Some(123));
        assert_eq!(parse_daemon_pid(r#"{"pid":0}"#), None);
        assert_eq!(parse_daemon_pid("garbage"), None);
    }
    /// How many times `wait_for_server` looks for a server at `home` within `within`, with
    /// `recheck`, when none ever runs.
    #[cfg(unix)]
    async fn looks_for_no_server(home: &Path, recheck: Duration, within: Duration) -> u32 {
        let looks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = looks.clone();
        let look = Arc::new(move |_: &Path| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            None
        });
        let token = CancellationToken::new();
        let waited =
            tokio::time::timeout(within, wait_for_server(home, look, recheck, &token)).await;
        assert!(waited.is_err(), "no server was found");
        looks.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[tokio::test(start_paused = true)]
    async fn with_no_codex_server_the_feed_looks_once_a_minute_not_every_two_seconds() {
        // Most users run no Codex app server: the feed looked for one every 2 s all day (300
        // looks in ten minutes).
        let home = tempfile::tempdir().unwrap();
        let looks =
            looks_for_no_server(home.path(), ABSENT_RECHECK, Duration::from_secs(600)).await;
        assert!((1..=11).contains(&looks), "{looks} looks in ten minutes");
    }

    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_no_codex_home_at_all_the_feed_waits_for_the_recheck_and_does_not_spin() {
        // Codex not installed: no folder to watch. The feed once looked again at once, forever
        // (a core at 100 %, a thread made and ended every 2.5 ms).
        let parent = tempfile::tempdir().unwrap();
        let home = parent.path().join("no-codex-here");
        let looks =
            looks_for_no_server(&home, Duration::from_secs(3600), Duration::from_millis(500)).await;
        assert_eq!(
            looks, 1,
            "{looks} looks in half a second with an hour's recheck"
        );
    }

    #[cfg(unix)] // Codex's app-server socket is a unix socket
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_codex_server_that_starts_is_found_at_once_not_at_the_recheck() {
        // The positive control, with real files and real inotify: a server starting (its
        // socket listening, its pid file written) is found although the recheck is an hour.
        let home = tempfile::tempdir().unwrap();
        let token = CancellationToken::new();
        let look = Arc::new(|home: &Path| running_server(home));
        let found = tokio::spawn({
            let (home, token) = (home.path().to_path_buf(), token.clone());
            async move { wait_for_server(&home, look, Duration::from_secs(3600), &token).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let socket = home.path().join(CONTROL_SOCKET);
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let pid_file = home.path().join(DAEMON_PID_FILE);
        std::fs::create_dir_all(pid_file.parent().unwrap()).unwrap();
        std::fs::write(&pid_file, format!("{{\"pid\": {}}}", std::process::id())).unwrap();
        let Ok(found) = tokio::time::timeout(Duration::from_secs(10), found).await else {
            panic!("not found within 10 s: only the hour's recheck would have found it");
        };
        let found = found.unwrap();
        assert_eq!(found, Some(std::process::id()));
        token.cancel();
    }
}
