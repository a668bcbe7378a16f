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
/// On Windows (no `sh` under Wine) a line of plain words is run as its words, as `doctor` runs
/// it there; `shell` is not used.
pub fn run_hook_via(w: &World, shell: &Path, command: &str, payload: &str, extra: &[(&str, &str)]) {
    use std::io::Write as _;
    #[cfg(unix)]
    let mut cmd = {
        let mut cmd = Command::new(shell);
        cmd.arg("-c")
            .arg(command)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        cmd
    };
    #[cfg(windows)]
    let mut cmd = {
        let _ = shell;
        let words = agent_tray::install::shell_words(command)
            .unwrap_or_else(|| panic!("not a line of plain words: {command}"));
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        keep_windows_essentials(&mut cmd);
        cmd
    };
    for (k, v) in &w.envs {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = retrying_start(|| cmd.spawn());
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

/// A Claude `UserPromptSubmit` payload in the shape the real CLI sends.
pub fn prompt_payload(session: &str, cwd: &str) -> String {
    serde_json::json!({
        "session_id": session,
        "transcript_path": format!("{cwd}/transcript.jsonl"),
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "make a file",
    })
    .to_string()
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-tray"))
}

/// The hook command `agent-tray install` writes for `agent`, for the binary as it names itself:
/// cargo's path for it, or under Wine that path on drive Z: (Wine's name for the unix root).
pub fn installed_hook_command(agent: agent_tray::model::Agent) -> String {
    agent_tray::install::hook_command(&bin_as_it_sees_itself(), agent)
}

/// The built binary's path as the binary itself reads it (`current_exe`).
pub fn bin_as_it_sees_itself() -> PathBuf {
    let bin = bin();
    if cfg!(windows) && bin.to_string_lossy().starts_with('/') {
        PathBuf::from(format!(
            "Z:{}",
            bin.display().to_string().replace('/', "\\")
        ))
    } else {
        bin
    }
}

/// Whether `text` names `path` in any of the spellings Agent Tray prints it in: as it is, with
/// forward slashes (the `sh` form of a Windows hook line), and for cargo's own binaries under
/// Wine, on drive Z: (how the binary sees itself).
pub fn mentions_path(text: &str, path: &Path) -> bool {
    let plain = path.display().to_string();
    let mut spellings = vec![plain.clone(), plain.replace('\\', "/")];
    if cfg!(windows) && plain.starts_with('/') {
        let on_z = format!("Z:{}", plain.replace('/', "\\"));
        spellings.push(on_z.replace('\\', "/"));
        spellings.push(on_z);
    }
    spellings.iter().any(|s| text.contains(s.as_str()))
}

/// What every Windows program needs to start, kept in a cleared environment: its system
/// folders, its temp folder, its shell and the extensions its program lookups try.
#[cfg(windows)]
pub fn keep_windows_essentials(cmd: &mut Command) {
    for name in [
        "SYSTEMROOT",
        "SYSTEMDRIVE",
        "WINDIR",
        "TEMP",
        "TMP",
        "COMSPEC",
        "PATHEXT",
    ] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
}

/// Starts a process, trying again when Wine's process creation fails for a moment
/// (`ERROR_INTERNAL_ERROR`, 1359, seen under load): the tests are about what the program does,
/// not about Wine. Any other error, or the same one five times, fails the test.
pub fn retrying_start<T>(start: impl FnMut() -> std::io::Result<T>) -> T {
    retrying(start).unwrap_or_else(|e| panic!("cannot start the process: {e}"))
}

/// `spawn` and `output` that try again when Wine's process creation fails for a moment, as
/// [`retrying_start`] does; any other error is returned as it came.
pub trait RetryStart {
    fn spawn_retrying(&mut self) -> std::io::Result<std::process::Child>;
    fn output_retrying(&mut self) -> std::io::Result<std::process::Output>;
}

impl RetryStart for std::process::Command {
    fn spawn_retrying(&mut self) -> std::io::Result<std::process::Child> {
        retrying(|| self.spawn())
    }

    fn output_retrying(&mut self) -> std::io::Result<std::process::Output> {
        retrying(|| self.output())
    }
}

fn retrying<T>(mut start: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    let mut tries = 0;
    loop {
        match start() {
            Err(e) if cfg!(windows) && e.raw_os_error() == Some(1359) && tries < 4 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            result => return result,
        }
    }
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
        #[cfg(unix)]
        let base = PathBuf::from("/tmp");
        #[cfg(not(unix))]
        let base = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix("at-")
            .tempdir_in(base)
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
        #[cfg(windows)]
        keep_windows_essentials(&mut cmd);
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::null());
        retrying_start(|| cmd.output())
    }

    /// Starts `agent-tray daemon` and waits until it answers.
    pub fn start_daemon(&self) -> Daemon {
        let log = std::fs::File::create(self.path().join("daemon.log")).unwrap();
        let mut cmd = self.command(&["daemon"]);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
        let child = retrying_start(|| cmd.spawn());
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
        #[cfg(unix)]
        signal(self.child.id(), libc::SIGTERM);
        // Windows: no SIGTERM to send a process without a console of ours; it is ended.
        #[cfg(windows)]
        let _ = self.child.kill();
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

/// A raw connection to an engine, for tests that send bytes no client would: the unix socket, or
/// on Windows the named pipe derived from its path. Read and written through `&RawConn` too.
#[cfg(unix)]
pub type RawConn = std::os::unix::net::UnixStream;
#[cfg(windows)]
pub type RawConn = agent_tray::control::transport::PipeClient;

/// Connects a [`RawConn`] to the engine whose socket path is `socket`.
pub fn connect_raw(socket: &Path) -> RawConn {
    #[cfg(unix)]
    {
        std::os::unix::net::UnixStream::connect(socket).unwrap()
    }
    #[cfg(windows)]
    {
        use agent_tray::control::transport::{pipe_name, PipeClient};
        PipeClient::connect(&pipe_name(socket), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connect to the engine's pipe: {e:?}"))
    }
}

/// A [`RawConn`] to the engine of `world`, its reads bounded by `read_timeout`.
pub fn raw_connect(world: &World, read_timeout: Duration) -> RawConn {
    let conn = connect_raw(&world.socket());
    conn.set_read_timeout(Some(read_timeout)).unwrap();
    conn
}

/// Ends `pid` at once, as `kill -9` does (TerminateProcess on Windows).
pub fn kill_hard(pid: u32) {
    #[cfg(unix)]
    signal(pid, libc::SIGKILL);
    #[cfg(windows)]
    {
        use windows_sys::Win32::Foundation::CloseHandle;
        use windows_sys::Win32::System::Threading::{
            OpenProcess, TerminateProcess, PROCESS_TERMINATE,
        };
        // SAFETY: plain calls on a handle opened and closed here.
        unsafe {
            let handle = OpenProcess(PROCESS_TERMINATE, 0, pid);
            if !handle.is_null() {
                TerminateProcess(handle, 1);
                CloseHandle(handle);
            }
        }
    }
}

#[cfg(unix)]
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

/// A sleeping child process: a real pid for a session to own, until it is killed.
#[cfg(unix)]
pub fn sleeper() -> Child {
    Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

/// A waiting child process: a real pid for a session to own, until it is killed. Windows has no
/// `sleep`: cmd's `set /p` waits for a line on a stdin the returned `Child` keeps open.
#[cfg(windows)]
pub fn sleeper() -> Child {
    let mut cmd = Command::new("cmd");
    cmd.args(["/d", "/c", "set /p x="])
        .stdin(Stdio::piped())
        .stdout(Stdio::null());
    retrying_start(|| cmd.spawn())
}

/// A child process that exits by itself after about `after`: `sleep` on unix; on Windows a
/// [`sleeper`] whose stdin a thread closes after that long.
pub fn short_lived(after: Duration) -> Child {
    #[cfg(unix)]
    {
        Command::new("sleep")
            .arg(format!("{:.3}", after.as_secs_f64()))
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    }
    #[cfg(windows)]
    {
        let mut child = sleeper();
        let stdin = child.stdin.take();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            drop(stdin);
        });
        child
    }
}

/// A child process that has already exited and been waited for: a pid that is gone (a hook's
/// shell after it ran).
pub fn exited_at_once() -> u32 {
    #[cfg(unix)]
    let mut child = Command::new("sh").args(["-c", "true"]).spawn().unwrap();
    #[cfg(windows)]
    let mut child = Command::new("cmd")
        .args(["/d", "/c", "exit 0"])
        .spawn()
        .unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A folder with an `exit 0` stand-in for each of `programs`, and a PATH that has it first:
/// doctor treats those agents as installed (hook problems of an agent that is not installed are
/// only notes).
pub fn path_with_fake_agents(w: &World, programs: &[&str]) -> String {
    let dir = w.path().join("agents-bin");
    std::fs::create_dir_all(&dir).unwrap();
    for name in programs {
        #[cfg(unix)]
        write_executable(&dir.join(name), b"#!/bin/sh\nexit 0\n");
        // Windows finds programs by extension (PATHEXT): a batch file that exits 0.
        #[cfg(windows)]
        write_executable(&dir.join(format!("{name}.cmd")), b"@exit /b 0\r\n");
    }
    #[cfg(unix)]
    return format!("{}:/usr/bin:/bin", dir.display());
    #[cfg(windows)]
    return std::env::join_paths([dir, PathBuf::from(r"C:\windows\system32")])
        .unwrap()
        .to_string_lossy()
        .into_owned();
}

/// Runs `program` with only `path` and the world's variables in its environment.
pub fn run_with_path(w: &World, program: &Path, path: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args).env_clear().env("PATH", path);
    #[cfg(windows)]
    keep_windows_essentials(&mut cmd);
    for (k, v) in &w.envs {
        cmd.env(k, v);
    }
    // Programs run here are cargo's binary or copies made by copy_executable, never open for
    // writing in this process: no ETXTBSY to wait out.
    cmd.stdin(Stdio::null());
    retrying_start(|| cmd.output())
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
