//! Where a session lives in tmux, as the jump and the "is the user looking?" probe address it.
//!
//! Claude reports its place as `session:@window.%pane`. A pane id alone (`%7`) is no address:
//! every tmux server numbers its panes from `%0`, so a bare `-t %7` on the default server picks
//! whatever pane 7 of *that* server is, and the same holds for `@window`. So a target always
//! names the session, the window and the pane (tmux checks that the pane belongs to that
//! window of that session, and fails otherwise), and the command names the server: the socket
//! in the agent process's `TMUX` variable (`/tmp/tmux-1000/default,1234,0`) when it can be
//! read, else the default server, where the session-qualified target still has to match.
//!
//! A location that does not parse (no session, an id that is not `@N`/`%N`) is not used at all:
//! it comes from a file on disk and is not trusted to be a tmux target.
//!
//! "Is the user looking at this pane?" is read here too ([`parse_tmux_answer`]): the desktop
//! shell asks tmux with [`TMUX_FORMAT`] and hands the answer in, so the rule is tested without
//! a tmux server.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A parsed `session:@window[.%pane]` location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxLocation {
    session: String,
    window: String,
    pane: Option<String>,
}

fn is_id(text: &str, sigil: char) -> bool {
    text.strip_prefix(sigil)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl TmuxLocation {
    /// Parses Claude's `session:@window.%pane` (or `session:@window`). tmux session names may
    /// hold anything but `:` and `.`, and none may be empty or start with `-`.
    pub fn parse(location: &str) -> Option<Self> {
        let (session, rest) = location.trim().rsplit_once(':')?;
        if session.is_empty()
            || session.starts_with('-')
            || session.contains('.')
            || session.chars().any(char::is_control)
        {
            return None;
        }
        let (window, pane) = match rest.split_once('.') {
            Some((window, pane)) => (window, Some(pane)),
            None => (rest, None),
        };
        if !is_id(window, '@') || !pane.is_none_or(|p| is_id(p, '%')) {
            return None;
        }
        Some(TmuxLocation {
            session: session.to_string(),
            window: window.to_string(),
            pane: pane.map(str::to_string),
        })
    }

    /// `=session`: the session, matched by its exact name.
    pub fn session_target(&self) -> String {
        format!("={}", self.session)
    }

    /// `session:@window`: the window, in its session.
    pub fn window_target(&self) -> String {
        format!("{}:{}", self.session, self.window)
    }

    /// `session:@window.%pane`, or the window when the location names no pane.
    pub fn pane_target(&self) -> String {
        match &self.pane {
            Some(pane) => format!("{}:{}.{}", self.session, self.window, pane),
            None => self.window_target(),
        }
    }

    pub fn has_pane(&self) -> bool {
        self.pane.is_some()
    }

    /// The window id (`@N`).
    pub fn window(&self) -> &str {
        &self.window
    }

    /// The pane id (`%N`), when the location names one.
    pub fn pane(&self) -> Option<&str> {
        self.pane.as_deref()
    }
}

/// The server socket from a process's `TMUX` variable (`<socket>,<server pid>,<session>`).
/// Only an absolute path is taken.
pub fn socket_from_env(env: &[(String, String)]) -> Option<PathBuf> {
    let value = env.iter().find(|(k, _)| k == "TMUX").map(|(_, v)| v)?;
    let socket = value.split(',').next()?;
    let socket = PathBuf::from(socket);
    // A unix path (tmux exists only there), read the same on every host.
    socket.to_string_lossy().starts_with('/').then_some(socket)
}

/// Which tmux server a command talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TmuxServer {
    /// `tmux -S <path>`: the agent's own server.
    Socket(PathBuf),
    /// `tmux -L <name>`: a named server under tmux's folder (tests use private ones).
    Named(String),
    /// The user's default server (the agent's was not known).
    Default,
}

impl TmuxServer {
    pub fn from_socket(socket: Option<&Path>) -> Self {
        socket.map_or(TmuxServer::Default, |s| TmuxServer::Socket(s.to_path_buf()))
    }

    /// The arguments that choose the server, before the tmux command.
    pub fn args(&self) -> Vec<String> {
        match self {
            TmuxServer::Socket(path) => vec!["-S".into(), path.display().to_string()],
            TmuxServer::Named(name) => vec!["-L".into(), name.clone()],
            TmuxServer::Default => Vec::new(),
        }
    }

    /// `tmux` with the server chosen.
    pub fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(self.args());
        command
    }
}

/// The tmux format asked for: the window and pane tmux resolved the target to, clients attached
/// to the session, whether the window is the session's current one, whether the pane is its
/// window's active pane. The ids are checked because `display-message` does not fail on a target
/// that no longer exists: it answers for the session's current pane instead.
pub const TMUX_FORMAT: &str =
    "#{window_id} #{pane_id} #{session_attached} #{window_active} #{pane_active}";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_names_session_window_and_pane() {
        let l = TmuxLocation::parse("work:@3.%7").unwrap_or_else(|| panic!("parses"));
        assert_eq!(l.window_target(), "work:@3");
        assert_eq!(l.pane_target(), "work:@3.%7");
        let w = TmuxLocation::parse("my session:@1").unwrap_or_else(|| panic!("parses"));
        assert_eq!(w.pane_target(), "my session:@1");
        assert!(!w.has_pane());
    }

    #[test]
    fn a_bare_pane_or_a_malformed_location_is_no_target() {
        for bad in [
            "%7",
            "@3.%7",
            ":@3.%7",
            "work:3.%7",
            "work:@3.7",
            "work:@.%7",
            "work:@3.%",
            "-t:@3",
            "a.b:@1",
            "work:@3.%7;rm",
            "",
            "  ",
        ] {
            assert_eq!(TmuxLocation::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_socket_comes_from_the_tmux_variable() {
        let env = |v: &str| vec![("TMUX".to_string(), v.to_string())];
        assert_eq!(
            socket_from_env(&env("/tmp/tmux-1000/default,1234,0")),
            Some(PathBuf::from("/tmp/tmux-1000/default"))
        );
        assert_eq!(socket_from_env(&env("relative,1,0")), None);
        assert_eq!(socket_from_env(&[]), None);
        assert_eq!(
            TmuxServer::from_socket(Some(Path::new("/s"))).args(),
            ["-S", "/s"]
        );
        assert!(TmuxServer::Default.args().is_empty());
    }

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
