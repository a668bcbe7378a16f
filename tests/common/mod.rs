//! Shared helpers for integration tests: a private world (temp AGENT_TRAY_HOME, HOME, agent
//! folders) and a real `agent-tray daemon` process in it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

// Executables written from a child process, so running them cannot fail with ETXTBSY: the unit
// tests' own file, shared. (Each test file is a crate of its own, and not every one uses both.)
#[path = "../../src/test_executables.rs"]
mod test_executables;
#[allow(unused_imports)]
pub(crate) use test_executables::{copy_executable, write_executable};

/// Runs `shell -c command` the way an agent runs a hook: a clean environment (PATH, the
/// world's variables and `extra`), the payload on stdin, output to nowhere; waits at most 10 s.
pub fn run_hook_via(w: &World, shell: &Path, command: &str, payload: &str, extra: &[(&str, &str)]) {
    use std::io::Write as _;
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    for (k, v) in &w.envs {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    let status = wait_until(Duration::from_secs(10), || child.try_wait().unwrap());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the hook did not finish");
    }
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-tray"))
}

/// A private world: nothing here touches the real user's files.
pub struct World {
    pub dir: tempfile::TempDir,
    pub envs: Vec<(String, String)>,
}

impl World {
    /// Everything the hooks have journaled, all files together.
    pub fn journal_text(&self) -> String {
        let mut text = String::new();
        if let Ok(entries) = std::fs::read_dir(self.tray_home().join("journal")) {
            for e in entries.flatten() {
                text.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
        text
    }

    pub fn new() -> Self {
        // Short paths: a unix socket address holds about 100 bytes.
        let dir = tempfile::Builder::new()
            .prefix("at-")
            .tempdir_in("/tmp")
            .unwrap();
        let root = dir.path();
        for sub in ["home", "tray", "claude", "codex", "xdg"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let envs = vec![
            ("HOME".into(), root.join("home").display().to_string()),
            (
                "AGENT_TRAY_HOME".into(),
                root.join("tray").display().to_string(),
            ),
            (
                "CLAUDE_CONFIG_DIR".into(),
                root.join("claude").display().to_string(),
            ),
            (
                "CODEX_HOME".into(),
                root.join("codex").display().to_string(),
            ),
            (
                "XDG_RUNTIME_DIR".into(),
                root.join("xdg").display().to_string(),
            ),
            (
                "XDG_DATA_HOME".into(),
                root.join("xdg").display().to_string(),
            ),
        ];
        World { dir, envs }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn tray_home(&self) -> PathBuf {
        self.path().join("tray")
    }

    pub fn socket(&self) -> PathBuf {
        self.tray_home().join("run/agent-tray.sock")
    }

    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).stdin(Stdio::null()).output().unwrap()
    }

    /// Starts `agent-tray daemon` and waits until it answers.
    pub fn start_daemon(&self) -> Daemon {
        let log = std::fs::File::create(self.path().join("daemon.log")).unwrap();
        let child = self
            .command(&["daemon"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let daemon = Daemon {
            child,
            log: self.path().join("daemon.log"),
        };
        wait_until(Duration::from_secs(10), || {
            self.run(&["list", "--json"]).status.success()
        })
        .unwrap_or_else(|| panic!("daemon did not come up: {}", daemon.log_text()));
        daemon
    }

    pub fn list(&self) -> Vec<Value> {
        let out = self.run(&["list", "--json"]);
        assert!(
            out.status.success(),
            "list failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "list --json is not a JSON array ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    pub fn session(&self, id: &str) -> Option<Value> {
        self.list().into_iter().find(|s| s["session_id"] == id)
    }

    pub fn state_of(&self, id: &str) -> Option<String> {
        self.session(id)
            .and_then(|s| s["state"].as_str().map(String::from))
    }

    pub fn observe(&self, args: &[&str]) {
        let mut all = vec!["observe"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "observe {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

pub struct Daemon {
    pub child: Child,
    pub log: PathBuf,
}

impl Daemon {
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then wait (bounded) for the exit status.
    pub fn terminate(mut self) -> Option<std::process::ExitStatus> {
        signal(self.child.id(), libc::SIGTERM);
        let status = wait_until(Duration::from_secs(10), || self.child.try_wait().unwrap());
        if status.is_none() {
            let _ = self.child.kill();
        }
        status
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn signal(pid: u32, sig: i32) {
    // SAFETY: sending a signal to a child this test started.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// Polls `f` every 50 ms until it returns something truthy, or the time is up.
pub fn wait_until<T, F: FnMut() -> T>(limit: Duration, mut f: F) -> Option<T::Output>
where
    T: Truthy,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().truthy() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub trait Truthy {
    type Output;
    fn truthy(self) -> Option<Self::Output>;
}

impl Truthy for bool {
    type Output = ();
    fn truthy(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Truthy for Option<T> {
    type Output = T;
    fn truthy(self) -> Option<T> {
        self
    }
}

/// A sleeping child process: a real pid for a session to own.
pub fn sleeper() -> Child {
    Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

/// A folder with an `exit 0` stand-in for each of `programs`, and a PATH that has it first:
/// doctor treats those agents as installed (hook problems of an agent that is not installed are
/// only notes).
pub fn path_with_fake_agents(w: &World, programs: &[&str]) -> String {
    let dir = w.path().join("agents-bin");
    std::fs::create_dir_all(&dir).unwrap();
    for name in programs {
        write_executable(&dir.join(name), b"#!/bin/sh\nexit 0\n");
    }
    format!("{}:/usr/bin:/bin", dir.display())
}

/// Runs `program` with only `path` and the world's variables in its environment.
pub fn run_with_path(w: &World, program: &Path, path: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args).env_clear().env("PATH", path);
    for (k, v) in &w.envs {
        cmd.env(k, v);
    }
    // Programs run here are cargo's binary or copies made by copy_executable, never open for
    // writing in this process: no ETXTBSY to wait out.
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

/// `program install <flags>` with `path`; fails the test with install's stderr if it fails.
pub fn install_with_path(w: &World, program: &Path, path: &str, flags: &[&str]) {
    let mut args = vec!["install"];
    args.extend_from_slice(flags);
    let out = run_with_path(w, program, path, &args);
    assert!(
        out.status.success(),
        "install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `agent-tray doctor` with `path`: whether it passed, and its stdout and stderr together.
pub fn doctor_with_path(w: &World, path: &str) -> (bool, String) {
    let out = run_with_path(w, &bin(), path, &["doctor"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
