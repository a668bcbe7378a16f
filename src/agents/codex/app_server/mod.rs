//! Codex's shared background server (`codex app-server --managed-daemon`), read through its
//! control socket.
//!
//! Since 0.171 the Codex TUI starts, by default, one managed app-server per `CODEX_HOME` that
//! runs every thread, outlives every TUI and holds the threads' writer locks. Two things follow:
//!
//! - **It knows what no file says.** An approval wait is never written to the rollout, and
//!   without hooks nothing else tells it; the server broadcasts `thread/status/changed` to every
//!   connection (`active` with `waitingOnApproval` / `waitingOnUserInput`, `idle`, `systemError`,
//!   `notLoaded`) the moment it happens. So this feed connects to
//!   `$CODEX_HOME/app-server-control/app-server-control.sock` (a WebSocket over a unix socket,
//!   one JSON-RPC message a text frame), does the `initialize` / `initialized` handshake, and
//!   turns those notifications into [`Observation`]s stamped with the server's `emittedAtMs`.
//!   Turns, token usage and hook runs come only to a connection subscribed to the thread:
//!   `thread/resume` with `excludeTurns` (a thread that is running is rejoined, not reloaded)
//!   once the thread has a rollout, and `thread/unsubscribe` when its TUI is gone, so we never
//!   keep a thread loaded that nobody uses.
//! - **Its pid is nobody's session.** Observations from here carry no pid; the TUI's pid comes
//!   from the hook and rollout feeds. Since the server keeps a dead TUI's thread loaded (and its
//!   lock held) for up to a minute, the lock can no longer say the TUI died: while connected, this
//!   feed probes the pids of the Codex sessions whose threads the server holds every
//!   [`TUI_CHECK_INTERVAL`] and ends a session whose process is gone at once
//!   ([`tui_deaths`]). A thread the server runs with no terminal attached (`codex queue`, remote
//!   control) has no pid: it stays live, and is marked `headless`.
//!
//! The feed never starts a server: it connects only when the socket exists and the pid in
//! `app-server-daemon/daemon.pid` is alive, and retries with a capped backoff ([`Backoff`]).
//! While no server runs it does not poll: inotify on the folders of the socket and the pid file
//! wakes it when one starts, with a look every [`ABSENT_RECHECK`] as the safety net.
//! Parsing ([`parse_server_message`]) and every decision ([`ThreadBook::handle`], [`tui_deaths`])
//! are pure; the socket lives in [`spawn`].
//!
//! Three files, one floor each: [`protocol`] (the JSON-RPC messages, parsed and built: pure),
//! [`threads`] (the thread book: what is known of each thread and what each message means for its
//! session: pure), and [`io`] (finding the server, the socket, the connection task and the checks
//! it runs). The names are re-exported here, so `app_server::spawn` and the rest stay as they were.

pub mod io;
pub mod protocol;
pub mod threads;

#[cfg(unix)]
pub use io::spawn;
pub use io::{
    parse_daemon_pid, Backoff, ABSENT_RECHECK, CONTROL_SOCKET, DAEMON_PID_FILE, MAX_BACKOFF,
    MAX_MESSAGE, TUI_CHECK_INTERVAL,
};
pub use protocol::{
    parse_server_message, server_reply, user_input_reply, AppServerTokenUsage, ClientRequest,
    NotAMessage, ReplyTo, ServerMessage, ServerQuestion, ThreadStatus, TurnEnd,
};
pub use threads::{
    headless_marks, server_approval_call, server_question_call, tui_deaths, Handled, LiveThread,
    ServerAsk, ThreadBook, ThreadHolder, ThreadSession, COMMAND_TOOL, MAX_CLOSED, MAX_THREADS,
    QUESTION_TOOL, WAITING_ON_APPROVAL, WAITING_ON_USER_INPUT,
};
