//! The tmux probe against a real, private tmux server (`tmux -L <unique>`): a pane counts as
//! looked at only while a client is attached and its window and pane are the active ones.
//! The attached client is a real `tmux attach` running in a pseudo-terminal (`script`).
// Unix only: tmux.
#![cfg(unix)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_tray::model::{Agent, Session, SessionState};
use agent_tray_desktop::terminal_focus::{TerminalFocus, TmuxFocus};

/// A private tmux server, killed on drop.
struct Server {
    name: String,
    client: Option<Child>,
}

impl Server {
    fn start() -> Self {
        let name = format!(
            "agent-tray-test-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
        );
        let server = Server { name, client: None };
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
        server
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.name)
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

    /// The location a session in the current pane reports: `session:@window.%pane`.
    fn current_location(&self) -> String {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            "work",
            "#{session_name}:#{window_id}.#{pane_id}",
        ])
    }

    /// Attaches a real client in a pseudo-terminal and waits until tmux counts it.
    fn attach(&mut self) {
        let command = format!("tmux -L {} attach -t work", self.name);
        let child = Command::new("script")
            .args(["-q", "-c", &command, "/dev/null"])
            .env("TERM", "xterm")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("script: {e}"));
        self.client = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.tmux(&["display-message", "-p", "-t", "work", "#{session_attached}"]) == "0" {
            assert!(Instant::now() < deadline, "the client never attached");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.name, "kill-server"])
            .stderr(Stdio::null())
            .status();
        if let Some(mut client) = self.client.take() {
            let _ = client.kill();
            let _ = client.wait();
        }
    }
}

fn session_in(location: &str) -> Session {
    let mut s = Session::new(
        "s",
        Agent::Claude,
        SessionState::WaitingForPermission,
        chrono::Utc::now(),
    );
    s.cwd = Some("/tmp".into());
    s.prompted = true;
    s.tmux = Some(location.to_string());
    s
}

#[test]
fn a_pane_is_looked_at_only_while_attached_with_its_window_and_pane_active() {
    let mut server = Server::start();
    let focus = TmuxFocus {
        socket_name: Some(server.name.clone()),
    };
    let claude = session_in(&server.current_location());

    // Claude runs in a detached session (the user closed the terminal, tmux kept it): an
    // alert must be shown.
    assert!(
        !focus.user_is_looking(&claude),
        "no client attached: nobody sees the pane"
    );

    server.attach();
    assert!(
        focus.user_is_looking(&claude),
        "attached, and its window and pane are the active ones"
    );

    // The user split the window and works in the new pane: Claude's pane is visible but not
    // where they are.
    server.tmux(&["split-window", "-t", "work"]);
    assert!(
        !focus.user_is_looking(&claude),
        "another pane of the window is active"
    );
    let pane = claude
        .tmux
        .as_deref()
        .and_then(|l| l.rsplit_once('.'))
        .map(|(_, p)| p.to_string());
    server.tmux(&["select-pane", "-t", pane.as_deref().unwrap_or_default()]);
    assert!(focus.user_is_looking(&claude), "back in Claude's pane");

    // The user opened another window: Claude's window is not shown at all.
    server.tmux(&["new-window", "-t", "work"]);
    assert!(
        !focus.user_is_looking(&claude),
        "another window is the current one"
    );

    // A pane that no longer exists (Claude's window closed): not looking, and no error.
    let gone = session_in("work:@99.%999");
    assert!(!focus.user_is_looking(&gone));
}

#[test]
fn a_session_outside_tmux_or_a_missing_server_is_never_looked_at() {
    let focus = TmuxFocus {
        socket_name: Some(format!("agent-tray-test-none-{}", std::process::id())),
    };
    let mut outside = session_in("");
    outside.tmux = None;
    assert!(!focus.user_is_looking(&outside));
    assert!(
        !focus.user_is_looking(&session_in("work:@0.%0")),
        "no tmux server on that socket: the alert is shown"
    );
}
