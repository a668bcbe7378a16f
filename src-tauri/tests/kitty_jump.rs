//! The jump to a session running in kitty, against a real kitty under a private Xvfb with remote
//! control on a private socket (`allow_remote_control`, `--listen-on`): kitty tells its programs
//! `KITTY_WINDOW_ID` and `KITTY_LISTEN_ON`, the jump reads them from the agent's environment
//! and runs `kitty @ --to <socket> focus-window --match id:<N>`. A second kitty window, opened
//! after the agent's, is active before the jump (the positive control) and not after.
//!
//! The second test puts the agent in a tmux pane whose client runs in kitty: the client's
//! terminal comes forward first, then the pane is selected.
//!
//! kitty and Xvfb are Debian packages that `scripts/setup.sh --test` installs.
// Unix only: kitty under Xvfb.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_tray::jump::terminals::Terminal;
use agent_tray::model::{Agent, Session, SessionState};
use agent_tray_desktop::actions::{execute_jump, plan_jump, JumpPlan};

fn wait_for(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A process ended (and reaped) on drop.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A private X server, stopped with SIGTERM on drop so that it removes its lock and socket
/// (a SIGKILLed Xvfb leaves both behind, and each run used up two displays for good).
struct Xvfb(Owned);

impl Drop for Xvfb {
    fn drop(&mut self) {
        let Ok(pid) = libc::pid_t::try_from(self.0 .0.id()) else {
            return;
        };
        // SAFETY: kill(2) on our own child's pid, not yet reaped (Owned reaps it after).
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.0 .0.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether display `n` is in use: its lock names a live process. A stale lock (a killed X
/// server's) does not count: Xvfb replaces it.
fn display_in_use(n: u32) -> bool {
    std::fs::read_to_string(format!("/tmp/.X{n}-lock"))
        .ok()
        .and_then(|pid| pid.trim().parse::<u32>().ok())
        .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
}

/// A private X server on the first free display from :140, ready (its socket accepts).
fn start_xvfb() -> (Xvfb, String) {
    for n in 140..200 {
        if display_in_use(n) {
            continue;
        }
        let child = Command::new("Xvfb")
            .args([
                &format!(":{n}"),
                "-screen",
                "0",
                "1024x768x24",
                "-nolisten",
                "tcp",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("Xvfb (scripts/setup.sh --test installs it): {e}"));
        let mut xvfb = Xvfb(Owned(child));
        // A stale socket file may be there already: ready is when it accepts.
        let socket = format!("/tmp/.X11-unix/X{n}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                return (xvfb, format!(":{n}"));
            }
            if matches!(xvfb.0 .0.try_wait(), Ok(Some(_))) || Instant::now() > deadline {
                break; // taken meanwhile, or broken: try the next display
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(xvfb);
    }
    panic!("no free X display for Xvfb");
}

/// A real kitty with remote control on `socket`, running `sleep` (the stand-in agent) in
/// window 1.
struct Kitty {
    _process: Owned,
    socket: String,
}

impl Kitty {
    fn start(display: &str, home: &Path, program: &[&str]) -> Self {
        let socket = format!("unix:{}", home.join("kitty.sock").display());
        let child = Command::new("kitty")
            .args([
                "--config",
                "NONE",
                "-o",
                "allow_remote_control=yes",
                "--listen-on",
                &socket,
            ])
            .args(program)
            .env("DISPLAY", display)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env_remove("KITTY_WINDOW_ID")
            .env_remove("KITTY_LISTEN_ON")
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("kitty (scripts/setup.sh --test installs it): {e}"));
        let kitty = Kitty {
            _process: Owned(child),
            socket,
        };
        wait_for("kitty's remote control", Duration::from_secs(30), || {
            kitty.try_at(&["ls"]).is_some()
        });
        kitty
    }

    fn try_at(&self, args: &[&str]) -> Option<String> {
        self.run_at(args).ok()
    }

    /// `kitty @ <args>`: its output, or what it printed on error.
    fn run_at(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("kitty")
            .args(["@", "--to", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// `kitty @ <args>`, asked again for up to 10 s: a remote-control command now and then
    /// fails while kitty is busy with the one before (seen once in `ls` right after
    /// `focus-window`, on a loaded machine), and the test is about the jump, not that.
    fn at(&self, args: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.run_at(args) {
                Ok(out) => return out,
                Err(error) if Instant::now() > deadline => {
                    panic!("kitty @ {args:?} failed for 10 s: {error}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// Every window: (id, pid of the program kitty started in it), and the id of the tab's
    /// active window.
    fn windows(&self) -> (Vec<(u64, u32)>, u64) {
        let ls: serde_json::Value =
            serde_json::from_str(&self.at(&["ls"])).unwrap_or_else(|e| panic!("{e}"));
        let tab = &ls[0]["tabs"][0];
        let windows = tab["windows"]
            .as_array()
            .map(|ws| {
                ws.iter()
                    .map(|w| {
                        (
                            w["id"].as_u64().unwrap_or(0),
                            w["pid"]
                                .as_u64()
                                .and_then(|p| u32::try_from(p).ok())
                                .unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let active = tab["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["is_active_window"] == true))
            .and_then(|w| w["id"].as_u64())
            .unwrap_or(0);
        (windows, active)
    }

    /// Opens a second window in the same tab, which becomes the active one.
    fn open_second_window(&self) -> u64 {
        // Asked once: a retry could open a third window.
        let id = self
            .run_at(&["launch", "--type=window", "sleep", "600"])
            .unwrap_or_else(|e| panic!("kitty @ launch: {e}"));
        let id: u64 = id.trim().parse().unwrap_or_else(|e| panic!("{id:?}: {e}"));
        wait_for(
            "the second window to be active",
            Duration::from_secs(10),
            || self.windows().1 == id,
        );
        id
    }
}

fn session(pid: u32, cwd: &Path) -> Session {
    let mut session = Session::new(
        "s",
        Agent::Claude,
        SessionState::WaitingForPermission,
        chrono::Utc::now(),
    );
    session.cwd = Some(cwd.display().to_string());
    session.pid = Some(pid);
    session
}

#[test]
fn a_jump_brings_the_agents_kitty_window_to_the_front() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (_xvfb, display) = start_xvfb();
    let kitty = Kitty::start(&display, home.path(), &["sleep", "600"]);
    let (windows, _) = kitty.windows();
    let [(agent_window, agent_pid)] = windows[..] else {
        panic!("one window: {windows:?}");
    };
    let second = kitty.open_second_window();
    assert_ne!(
        kitty.windows().1,
        agent_window,
        "positive control: not active yet"
    );

    let plan = plan_jump(&session(agent_pid, home.path())).unwrap_or_else(|| panic!("a plan"));
    match &plan {
        JumpPlan::Tab { front, .. } => assert_eq!(
            front.terminal,
            Terminal::Kitty {
                window_id: agent_window.to_string(),
                listen_on: Some(kitty.socket.clone()),
            }
        ),
        other => panic!("not a kitty jump: {other:?}"),
    }
    execute_jump(&plan).unwrap_or_else(|e| panic!("{e:?}"));
    wait_for(
        "the agent's window to be active",
        Duration::from_secs(10),
        || kitty.windows().1 == agent_window,
    );
    assert_ne!(kitty.windows().1, second);
}

#[test]
fn tmux_in_kitty_brings_the_clients_window_forward_then_selects_the_pane() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket: PathBuf = home.path().join("tmux.sock");
    let tmux = |args: &[&str]| {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("tmux: {e}"));
        assert!(out.status.success(), "tmux {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // Session `work`: window @0 (the agent's, pane %0) and window @1, current.
    tmux(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "work",
        "sleep 600",
    ]);
    tmux(&["new-window", "-t", "work", "sleep 600"]);
    let agent_pid: u32 = tmux(&["display-message", "-p", "-t", "work:@0.%0", "#{pane_pid}"])
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    struct KillServer<'a>(&'a Path);
    impl Drop for KillServer<'_> {
        fn drop(&mut self) {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(self.0)
                .arg("kill-server")
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
    let _server = KillServer(&socket);

    let (_xvfb, display) = start_xvfb();
    let attach = format!("{}", socket.display());
    let kitty = Kitty::start(
        &display,
        home.path(),
        &["tmux", "-S", &attach, "attach", "-t", "work"],
    );
    wait_for("the tmux client", Duration::from_secs(10), || {
        tmux(&["display-message", "-p", "-t", "work", "#{session_attached}"]) != "0"
    });
    let client_window = kitty.windows().0[0].0;
    kitty.open_second_window();
    assert_eq!(
        tmux(&["display-message", "-p", "-t", "work", "#{window_id}"]),
        "@1",
        "positive control: another tmux window is current"
    );

    let mut s = session(agent_pid, home.path());
    s.tmux = Some("work:@0.%0".into());
    let plan = plan_jump(&s).unwrap_or_else(|| panic!("a plan"));
    match &plan {
        JumpPlan::Tmux {
            front: Some(front), ..
        } => assert!(
            matches!(&front.terminal, Terminal::Kitty { window_id, .. } if *window_id == client_window.to_string()),
            "{front:?}"
        ),
        other => panic!("not a tmux jump with its client's terminal: {other:?}"),
    }
    execute_jump(&plan).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        tmux(&[
            "display-message",
            "-p",
            "-t",
            "work",
            "#{window_id} #{pane_id}"
        ]),
        "@0 %0"
    );
    wait_for(
        "the client's kitty window to be active",
        Duration::from_secs(10),
        || kitty.windows().1 == client_window,
    );
}
