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

/// Longest wait for tmux's answer. It answers in milliseconds; a wedged server must not hold an
/// alert back for long.
pub const TMUX_TIMEOUT: Duration = Duration::from_millis(500);

/// The tmux format asked for: clients attached to the pane's session, whether its window is
/// the session's current one, whether it is its window's active pane.
pub const TMUX_FORMAT: &str = "#{session_attached} #{window_active} #{pane_active}";

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
    /// `tmux -L <name>`: a server other than the default (tests use a private one).
    pub socket_name: Option<String>,
}

/// The `-t` target for a tmux location: the pane (`%N`, unique on its server) when the location
/// names one, else the location itself (a window). None for an empty location.
pub fn tmux_target(location: &str) -> Option<&str> {
    let location = location.trim();
    if location.is_empty() {
        return None;
    }
    match location.rsplit_once('.') {
        Some((_, pane)) if pane.starts_with('%') && pane.len() > 1 => Some(pane),
        _ => Some(location),
    }
}

/// Reads tmux's answer to [`TMUX_FORMAT`]: looking when at least one client is attached to the
/// session and the window and pane are the active ones.
pub fn parse_tmux_answer(answer: &str) -> bool {
    let mut fields = answer.split_whitespace();
    let attached: u32 = match fields.next().and_then(|f| f.parse().ok()) {
        Some(n) => n,
        None => return false,
    };
    let window_active = fields.next() == Some("1");
    let pane_active = fields.next() == Some("1");
    attached > 0 && window_active && pane_active
}

impl TerminalFocus for TmuxFocus {
    fn user_is_looking(&self, session: &Session) -> bool {
        let Some(target) = session.tmux.as_deref().and_then(tmux_target) else {
            return false;
        };
        let mut command = Command::new("tmux");
        if let Some(name) = &self.socket_name {
            command.args(["-L", name]);
        }
        command.args(["display-message", "-p", "-t", target, TMUX_FORMAT]);
        match output_within(command, TMUX_TIMEOUT) {
            Some(answer) => {
                let looking = parse_tmux_answer(&answer);
                tracing::debug!(session_id = %session.session_id, target, looking, "tmux_focus");
                looking
            }
            None => false,
        }
    }
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
    fn the_target_is_the_pane_when_the_location_names_one() {
        assert_eq!(tmux_target("work:@3.%7"), Some("%7"));
        assert_eq!(tmux_target("work:@3"), Some("work:@3"));
        assert_eq!(tmux_target("my.session:@1"), Some("my.session:@1"));
        assert_eq!(tmux_target("  "), None);
    }

    #[test]
    fn only_an_attached_session_with_the_active_window_and_pane_is_looked_at() {
        assert!(parse_tmux_answer("1 1 1\n"));
        assert!(parse_tmux_answer("2 1 1"), "two clients attached");
        assert!(!parse_tmux_answer("0 1 1"), "detached: nobody sees it");
        assert!(!parse_tmux_answer("1 0 1"), "another window is shown");
        assert!(
            !parse_tmux_answer("1 1 0"),
            "another pane of the window is active"
        );
        assert!(!parse_tmux_answer(""), "no answer");
        assert!(!parse_tmux_answer("garbage"));
    }
}
