//! Whether the user is looking at a session's terminal: the answer the notification policy
//! takes (`NotifyPolicy::decide_seen`) so it raises no alert for what the user is watching.
//!
//! Only tmux can tell, and only part of the story: a session's `tmux` location
//! (`session:@window.%pane`, from Claude's sessions file) names a pane, and tmux knows whether
//! that pane is the active pane of the active window of a session some client is attached to.
//! That is "on screen in a terminal", as close as anything gets; whether that terminal window is
//! itself in front on the desktop, no platform here reports. Everything else (no tmux location,
//! tmux not installed, the pane gone, a server that does not answer within [`TMUX_TIMEOUT`])
//! counts as "not looking", so an alert is shown: a needless popup is better than a missed one.
//!
//! The question is put only when an alert is due (the policy's `would_alert`), on a blocking
//! thread, never under a lock. What is asked and how the answer is read are the core's
//! ([`agent_tray::jump::tmux`]); here tmux is run.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_tray::model::Session;

use agent_tray::jump::tmux::{socket_from_env, TmuxLocation, TmuxServer};

/// What tmux is asked and how its answer is read: the core's, tested there.
pub use agent_tray::jump::tmux::{parse_tmux_answer, tmux_target, TMUX_FORMAT};

/// Longest wait for tmux's answer. It answers in milliseconds; a wedged server must not hold an
/// alert back for long.
pub const TMUX_TIMEOUT: Duration = Duration::from_millis(500);

/// Answers "is the user looking at this session's terminal?".
pub trait TerminalFocus: Send + Sync + 'static {
    fn user_is_looking(&self, session: &Session) -> bool;
}

/// Nobody is ever known to be looking (tests, platforms without a way to know).
#[derive(Debug, Clone, Copy, Default)]
pub struct NeverLooking;

impl TerminalFocus for NeverLooking {
    fn user_is_looking(&self, _session: &Session) -> bool {
        false
    }
}

/// Asks the tmux server the session's pane lives on.
#[derive(Debug, Clone, Default)]
pub struct TmuxFocus {
    /// `tmux -L <name>`: a server other than the agent's (tests use a private one). When None,
    /// the server is the one in the agent process's `TMUX` variable, else the default one.
    pub socket_name: Option<String>,
}

impl TerminalFocus for TmuxFocus {
    fn user_is_looking(&self, session: &Session) -> bool {
        let Some(location) = session.tmux.as_deref().and_then(TmuxLocation::parse) else {
            return false;
        };
        let target = location.pane_target();
        let server = match &self.socket_name {
            Some(name) => TmuxServer::Named(name.clone()),
            None => TmuxServer::from_socket(session.pid.and_then(agent_socket).as_deref()),
        };
        let mut command = server.command();
        command.args(["display-message", "-p", "-t", &target, TMUX_FORMAT]);
        match output_within(command, TMUX_TIMEOUT) {
            Some(answer) => {
                let looking = parse_tmux_answer(&answer, &location);
                tracing::debug!(session_id = %session.session_id, %target, looking, "tmux_focus");
                looking
            }
            None => false,
        }
    }
}

/// The tmux server socket in the agent process's environment, when it can be read.
fn agent_socket(pid: u32) -> Option<std::path::PathBuf> {
    socket_from_env(&agent_tray::jump::process_environ(pid))
}

/// The program's stdout when it succeeds within `timeout`; None otherwise (it is killed).
fn output_within(mut command: Command, timeout: Duration) -> Option<String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    // A one-line answer fits the pipe's buffer, so reading after the exit cannot deadlock.
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    status.success().then_some(out)
}
