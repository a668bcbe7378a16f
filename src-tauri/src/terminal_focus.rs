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
//! thread, never under a lock.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_tray::model::Session;

use crate::tmux::{socket_from_env, TmuxLocation, TmuxServer};

/// Longest wait for tmux's answer. It answers in milliseconds; a wedged server must not hold an
/// alert back for long.
pub const TMUX_TIMEOUT: Duration = Duration::from_millis(500);

/// The tmux format asked for: the window and pane tmux resolved the target to, clients attached
/// to the session, whether the window is the session's current one, whether the pane is its
/// window's active pane. The ids are checked because `display-message` does not fail on a target
/// that no longer exists: it answers for the session's current pane instead.
pub const TMUX_FORMAT: &str =
    "#{window_id} #{pane_id} #{session_attached} #{window_active} #{pane_active}";

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

/// The `-t` target for a tmux location: `session:@window.%pane` in full (a bare `%N` names a
/// pane on whatever server is asked). None for a location that does not parse.
pub fn tmux_target(location: &str) -> Option<String> {
    TmuxLocation::parse(location).map(|l| l.pane_target())
}

/// Reads tmux's answer to [`TMUX_FORMAT`] about `location`: looking when tmux answered for
/// that very window and pane, at least one client is attached to the session, and the window
/// and pane are the active ones.
pub fn parse_tmux_answer(answer: &str, location: &TmuxLocation) -> bool {
    let fields: Vec<&str> = answer.split_whitespace().collect();
    let [window, pane, attached, window_active, pane_active] = fields[..] else {
        return false;
    };
    let same_place = window == location.window() && location.pane().is_none_or(|p| p == pane);
    let attached = attached.parse::<u32>().is_ok_and(|n| n > 0);
    same_place && attached && window_active == "1" && pane_active == "1"
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
    socket_from_env(&crate::actions::process_environ(pid))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_names_the_session_window_and_pane() {
        assert_eq!(tmux_target("work:@3.%7").as_deref(), Some("work:@3.%7"));
        assert_eq!(tmux_target("work:@3").as_deref(), Some("work:@3"));
        assert_eq!(
            tmux_target("%7"),
            None,
            "a bare pane id names no server's pane"
        );
        assert_eq!(tmux_target("  "), None);
    }

    #[test]
    fn only_an_attached_session_with_the_active_window_and_pane_is_looked_at() {
        let here = TmuxLocation::parse("work:@3.%7").unwrap_or_else(|| panic!("parses"));
        assert!(parse_tmux_answer("@3 %7 1 1 1\n", &here));
        assert!(
            parse_tmux_answer("@3 %7 2 1 1", &here),
            "two clients attached"
        );
        assert!(
            !parse_tmux_answer("@3 %7 0 1 1", &here),
            "detached: nobody sees it"
        );
        assert!(
            !parse_tmux_answer("@3 %7 1 0 1", &here),
            "another window is shown"
        );
        assert!(
            !parse_tmux_answer("@3 %7 1 1 0", &here),
            "another pane of the window is active"
        );
        assert!(
            !parse_tmux_answer("@0 %0 1 1 1", &here),
            "tmux answered for another pane (ours is gone)"
        );
        assert!(!parse_tmux_answer("", &here), "no answer");
        assert!(!parse_tmux_answer("garbage", &here));
    }
}
