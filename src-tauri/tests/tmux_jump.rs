//! The jump to a tmux session against two real, private tmux servers with the same layout: pane
//! ids (`%2`) and window ids (`@1`) exist on both, so only the server socket (read from the agent
//! process's `TMUX` variable) and the session-qualified target say which pane is the agent's.
//! The agent is a real process (`sleep`) started with that variable, as tmux starts programs.
//! The "is the user looking?" probe finds the agent's server the same way.
// Unix only: tmux.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_tray::jump::tmux::TmuxServer;
use agent_tray::model::{Agent, Session, SessionState};
use agent_tray_desktop::actions::{execute_jump, plan_jump, JumpPlan};
use agent_tray_desktop::terminal_focus::{TerminalFocus, TmuxFocus};

/// A private tmux server on its own socket, killed on drop: session `work` with window @0 (pane
/// %0) and window @1 split in two (%1, %2); @0 is the current window, %1 @1's active pane.
struct Server {
    socket: PathBuf,
}

impl Server {
    fn start(socket: &Path) -> Self {
        let server = Server {
            socket: socket.to_path_buf(),
        };
        server.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "work",
            "-x",
            "80",
            "-y",
            "24",
        ]);
        server.tmux(&["new-window", "-t", "work"]);
        server.tmux(&["split-window", "-t", "work:@1"]);
        server.tmux(&["select-pane", "-t", "work:@1.%1"]);
        server.tmux(&["select-window", "-t", "work:@0"]);
        server
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("tmux: {e}"));
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The current window of `work` and that window's active pane.
    fn current(&self) -> String {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            "work",
            "#{window_id} #{pane_id}",
        ])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A stand-in agent running "inside" a tmux pane: its environment names the server.
struct FakeAgent(Child);

impl FakeAgent {
    fn start(tmux_env: &str) -> Self {
        let child = Command::new("sleep")
            .arg("60")
            .env("TMUX", tmux_env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("sleep: {e}"));
        // Until it has exec'd, /proc shows the test's own environment.
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !std::fs::read(format!("/proc/{pid}/environ"))
            .unwrap_or_default()
            .split(|b| *b == 0)
            .any(|e| e.starts_with(b"TMUX="))
        {
            assert!(Instant::now() < deadline, "the agent never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        FakeAgent(child)
    }
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_jump_selects_the_agents_pane_on_the_agents_server_and_no_other() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let other = Server::start(&dir.path().join("other"));
    let agents = Server::start(&dir.path().join("agents"));
    assert_eq!(other.current(), "@0 %0");
    assert_eq!(agents.current(), "@0 %0");

    let agent = FakeAgent::start(&format!("{},4242,0", agents.socket.display()));
    let mut session = Session::new(
        "s",
        Agent::Claude,
        SessionState::WaitingForPermission,
        chrono::Utc::now(),
    );
    session.cwd = Some("/tmp".into());
    session.pid = Some(agent.0.id());
    session.tmux = Some("work:@1.%2".into());

    let plan = plan_jump(&session).unwrap_or_else(|| panic!("a plan"));
    assert!(
        matches!(&plan, JumpPlan::Tmux { server: TmuxServer::Socket(s), .. } if *s == agents.socket),
        "{plan:?}"
    );
    execute_jump(&plan).unwrap_or_else(|e| panic!("{e:?}"));

    assert_eq!(agents.current(), "@1 %2", "the agent's window and pane");
    assert_eq!(
        other.current(),
        "@0 %0",
        "the other server (with its own @1 and %2) is untouched"
    );
    assert_eq!(
        other.tmux(&["display-message", "-p", "-t", "work:@1", "#{pane_id}"]),
        "%1"
    );

    // A pane that is not in the named window of the named session: tmux refuses, and so does
    // the jump (the old bare `-t %0` would have selected whatever %0 is).
    session.tmux = Some("work:@0.%2".into());
    let wrong = plan_jump(&session).unwrap_or_else(|| panic!("a plan"));
    let error = execute_jump(&wrong).err();
    assert!(error.is_some(), "a pane of another window is not selected");
    assert_eq!(
        agents.current(),
        "@0 %0",
        "select-window ran, select-pane refused"
    );
}

/// A real client attached to `server` in a pseudo-terminal (`script`), ended on drop.
struct Client(Child);

impl Client {
    fn attach(server: &Server) -> Self {
        let command = format!("tmux -S '{}' attach -t work", server.socket.display());
        let child = Command::new("script")
            .args(["-q", "-c", &command, "/dev/null"])
            .env("TERM", "xterm")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("script: {e}"));
        let client = Client(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.tmux(&["display-message", "-p", "-t", "work", "#{session_attached}"]) == "0" {
            assert!(Instant::now() < deadline, "the client never attached");
            std::thread::sleep(Duration::from_millis(50));
        }
        client
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_focus_probe_asks_the_server_in_the_agents_environment() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let watched = Server::start(&dir.path().join("watched"));
    let unwatched = Server::start(&dir.path().join("unwatched"));
    let _client = Client::attach(&watched);
    // The same location on both servers; only the agent's TMUX variable tells them apart.
    let session_on = |server: &Server, agent: &FakeAgent| {
        let mut s = Session::new(
            "s",
            Agent::Claude,
            SessionState::WaitingForPermission,
            chrono::Utc::now(),
        );
        s.pid = Some(agent.0.id());
        s.tmux = Some(format!("work:{}", server.current().replace(' ', ".")));
        s
    };
    let in_watched = FakeAgent::start(&format!("{},1,0", watched.socket.display()));
    let in_unwatched = FakeAgent::start(&format!("{},1,0", unwatched.socket.display()));
    let focus = TmuxFocus::default();
    assert!(
        focus.user_is_looking(&session_on(&watched, &in_watched)),
        "attached, current window and pane, on the agent's own server"
    );
    assert!(
        !focus.user_is_looking(&session_on(&unwatched, &in_unwatched)),
        "the same pane id on a server nobody is attached to"
    );
}
