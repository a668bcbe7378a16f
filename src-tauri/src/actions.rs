//! What the window's row actions and the tray's items do outside the app: jump to a session's
//! terminal, reveal a transcript or the logs, run the hooks installer. Each is planned as data
//! first (testable), then executed by spawning a program.
//!
//! What reaches a command line comes from session data (a cwd, a tmux location, a transcript
//! path read from files on disk), so:
//! - a folder or file is used only when its path is absolute: a relative one would resolve
//!   against the app's own folder, and an absolute path can never be read as an option;
//! - `--` ends the options before every path handed to `code`/`cursor` and macOS's `open`.
//!   `xdg-open` is the exception: it refuses `--` itself ("unexpected option"), and takes one
//!   argument, which the rule above makes an absolute path;
//! - tmux is addressed by server socket and fully qualified target ([`crate::tmux`]);
//! - every program runs through [`crate::launch::run_within`]: reaped, with a deadline. A
//!   terminal is started through `setsid -f`, which returns at once, so the user's terminal is
//!   never the app's child (nor killed at a deadline).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent_tray::model::Session;

use crate::ipc::{CommandError, ErrorCode, InstallReport};
use crate::launch::{run_within, Capture, LaunchError, LAUNCH_TIMEOUT};
use crate::tmux::{socket_from_env, TmuxLocation, TmuxServer};

/// How long `tmux select-window`/`select-pane` may take (it answers in milliseconds).
pub const TMUX_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `agent-tray install` may take (it edits a few small files).
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How to bring the user to a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JumpPlan {
    /// Select the window, then the pane, on the agent's tmux server.
    Tmux {
        server: TmuxServer,
        location: TmuxLocation,
    },
    /// Open the session's folder in the editor whose terminal runs it (`code -- <dir>`).
    Editor { editor: Editor, dir: PathBuf },
    /// Open a terminal in the session's folder.
    Terminal { dir: PathBuf },
}

/// An editor with a built-in terminal that agents are often run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Editor {
    VsCode,
    Cursor,
}

impl Editor {
    /// The command that opens a folder in it (what each installs on PATH).
    pub fn program(self) -> &'static str {
        match self {
            Editor::VsCode => "code",
            Editor::Cursor => "cursor",
        }
    }
}

/// What is known about a session's process: the editor whose terminal runs it, and the tmux
/// server it runs under (from its `TMUX` variable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessFacts {
    pub editor: Option<Editor>,
    pub tmux_socket: Option<PathBuf>,
}

/// A program and its arguments, as a jump or a reveal will run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: String,
    pub args: Vec<String>,
    /// The folder it starts in (a terminal opens there).
    pub cwd: Option<PathBuf>,
    pub capture: Capture,
    pub timeout: Duration,
}

impl Launch {
    fn new(program: &str, args: &[&str]) -> Self {
        Launch {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: None,
            capture: Capture::Nothing,
            timeout: LAUNCH_TIMEOUT,
        }
    }

    fn path(mut self, path: &Path) -> Self {
        self.args.push(path.display().to_string());
        self
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command
    }
}
/// Which editor's terminal a process runs in, from its environment and the names of its
/// ancestors (nearest first). VS Code and Cursor (a VS Code fork) both set
/// `TERM_PROGRAM=vscode` in their terminals; Cursor shows itself in `CURSOR_*` variables, in
/// paths to its own helper programs, or in the name of an ancestor process.
pub fn editor_of(env: &[(String, String)], ancestors: &[String]) -> Option<Editor> {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let named = |name: &str| ancestors.iter().any(|a| a.eq_ignore_ascii_case(name));
    let in_vscode_terminal = var("TERM_PROGRAM") == Some("vscode");
    let cursor_signs = env.iter().any(|(k, _)| k.starts_with("CURSOR_"))
        || [
            "VSCODE_GIT_ASKPASS_NODE",
            "VSCODE_GIT_ASKPASS_MAIN",
            "GIT_ASKPASS",
        ]
        .iter()
        .filter_map(|k| var(k))
        .any(|path| path.to_ascii_lowercase().contains("cursor"))
        || named("cursor");
    if (in_vscode_terminal || named("cursor")) && cursor_signs {
        Some(Editor::Cursor)
    } else if in_vscode_terminal || named("code") {
        Some(Editor::VsCode)
    } else {
        None
    }
}

/// Where a jump goes, decided from the session, what is known of its process and which
/// programs are on PATH. Pure: the facts about the machine come in as arguments.
///
/// A tmux pane wins (it names the exact place); then the editor, when its command is installed;
/// then a terminal in the session's folder. A folder that is not an absolute path is nowhere to
/// go.
pub fn decide_jump(
    session: &Session,
    facts: &ProcessFacts,
    on_path: impl Fn(&str) -> bool,
) -> Option<JumpPlan> {
    if let Some(location) = session.tmux.as_deref().and_then(TmuxLocation::parse) {
        return Some(JumpPlan::Tmux {
            server: TmuxServer::from_socket(facts.tmux_socket.as_deref()),
            location,
        });
    }
    let dir = PathBuf::from(session.cwd.as_deref()?);
    if !dir.is_absolute() {
        return None;
    }
    match facts.editor {
        Some(editor) if on_path(editor.program()) => Some(JumpPlan::Editor { editor, dir }),
        _ => Some(JumpPlan::Terminal { dir }),
    }
}

/// The jump for a session on this machine: looks at its process (Linux: `/proc`) and PATH.
/// Blocking (a few small file reads): call it off the async workers.
pub fn plan_jump(session: &Session) -> Option<JumpPlan> {
    let facts = session.pid.map(process_facts).unwrap_or_default();
    decide_jump(session, &facts, on_path)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let candidate = dir.join(program);
            candidate.is_file()
                && std::fs::metadata(&candidate)
                    .map(|m| {
                        use std::os::unix::fs::PermissionsExt;
                        m.permissions().mode() & 0o111 != 0
                    })
                    .unwrap_or(false)
        })
    })
}

/// A process's environment from `/proc/<pid>/environ` (readable for the user's own processes;
/// empty otherwise, or where `/proc` is absent). The probes are the core's
/// ([`agent_tray::process`]), shared with the feeds and the pid walk.
pub(crate) fn process_environ(pid: u32) -> Vec<(String, String)> {
    agent_tray::process::environ(pid).unwrap_or_default()
}

/// The editor whose terminal runs `pid` (from its environment and the names of up to a few
/// ancestors) and its tmux server.
fn process_facts(pid: u32) -> ProcessFacts {
    use agent_tray::process::{ancestry, SystemProcesses};
    let env = process_environ(pid);
    let ancestors: Vec<String> = ancestry(&SystemProcesses, pid, 8)
        .into_iter()
        .map(|(_, info)| info.comm)
        .collect();
    ProcessFacts {
        editor: editor_of(&env, &ancestors),
        tmux_socket: socket_from_env(&env),
    }
}

#[cfg(test)]
fn process_editor(pid: u32) -> Option<Editor> {
    process_facts(pid).editor
}

fn launch_failed(what: &str, error: impl std::fmt::Display) -> CommandError {
    CommandError::new(ErrorCode::LaunchFailed, format!("cannot {what}: {error}"))
}

/// The programs a jump runs, in order. Pure.
pub fn jump_launches(plan: &JumpPlan) -> Vec<Launch> {
    match plan {
        JumpPlan::Tmux { server, location } => {
            let tmux = |verb: &str, target: String| {
                let mut launch = Launch::new("tmux", &[]);
                launch.args = server.args();
                launch
                    .args
                    .extend([verb.to_string(), "-t".to_string(), target]);
                launch.capture = Capture::Output;
                launch.timeout = TMUX_TIMEOUT;
                launch
            };
            let mut launches = vec![tmux("select-window", location.window_target())];
            if location.has_pane() {
                launches.push(tmux("select-pane", location.pane_target()));
            }
            launches
        }
        JumpPlan::Editor { editor, dir } => vec![Launch::new(editor.program(), &["--"]).path(dir)],
        JumpPlan::Terminal { dir } => vec![terminal_launch(dir)],
    }
}

#[cfg(target_os = "macos")]
fn terminal_launch(dir: &Path) -> Launch {
    Launch::new("open", &["-a", "Terminal", "--"]).path(dir)
}

/// `setsid -f` forks the terminal off and returns at once: the terminal is not the app's child.
#[cfg(not(target_os = "macos"))]
fn terminal_launch(dir: &Path) -> Launch {
    let mut launch = Launch::new("setsid", &["-f", "x-terminal-emulator"]);
    launch.cwd = Some(dir.to_path_buf());
    launch
}

/// Runs one launch: Ok when it exits successfully within its deadline.
fn run(launch: &Launch, what: &str) -> Result<(), CommandError> {
    let finished = run_within(&mut launch.command(), launch.timeout, launch.capture)
        .map_err(|e: LaunchError| launch_failed(what, e))?;
    if finished.status.success() {
        return Ok(());
    }
    let detail = if finished.stderr.is_empty() {
        format!("{} exited with {}", launch.program, finished.status)
    } else {
        finished.stderr
    };
    Err(launch_failed(what, detail))
}

fn missing_folder(dir: &Path) -> CommandError {
    CommandError::new(
        ErrorCode::NothingToOpen,
        format!("the folder {} no longer exists", dir.display()),
    )
}

pub fn execute_jump(plan: &JumpPlan) -> Result<(), CommandError> {
    let what = match plan {
        JumpPlan::Tmux { .. } => "select the tmux pane",
        JumpPlan::Editor { editor, dir } => {
            if !dir.is_dir() {
                return Err(missing_folder(dir));
            }
            editor.program()
        }
        JumpPlan::Terminal { dir } => {
            if !dir.is_dir() {
                return Err(missing_folder(dir));
            }
            #[cfg(not(target_os = "macos"))]
            if !on_path("x-terminal-emulator") {
                return Err(launch_failed(
                    "open a terminal",
                    "no x-terminal-emulator on PATH",
                ));
            }
            "open a terminal"
        }
    };
    for launch in jump_launches(plan) {
        run(&launch, what)?;
    }
    Ok(())
}

/// Opens a terminal running `argv` (a remote jump: `ssh -t -- DESTINATION …`). Where no
/// terminal is known the error carries the command line, for the user to run it.
pub fn execute_remote_jump(argv: &[String]) -> Result<(), CommandError> {
    let line = argv
        .iter()
        .map(|w| agent_tray::remote::command::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    #[cfg(target_os = "macos")]
    let known = false;
    #[cfg(not(target_os = "macos"))]
    let known = on_path("x-terminal-emulator");
    if !known {
        return Err(CommandError::new(
            ErrorCode::NothingToOpen,
            format!("no terminal to open here; run: {line}"),
        ));
    }
    let mut launch = Launch::new("setsid", &["-f", "x-terminal-emulator", "-e"]);
    launch.args.extend(argv.iter().cloned());
    run(&launch, "open a terminal")
}

/// How a file is shown in the file manager (macOS selects it; elsewhere its folder opens).
/// None for a path that is not absolute.
pub fn reveal_launch(path: &Path) -> Option<Launch> {
    if !path.is_absolute() {
        return None;
    }
    #[cfg(target_os = "macos")]
    {
        Some(Launch::new("open", &["-R", "--"]).path(path))
    }
    #[cfg(not(target_os = "macos"))]
    {
        let folder = if path.is_dir() {
            path
        } else {
            path.parent().unwrap_or(path)
        };
        Some(Launch::new("xdg-open", &[]).path(folder))
    }
}

/// Shows a file in the platform's file manager. Blocking (waits for the launcher).
pub fn reveal(path: &Path) -> Result<(), CommandError> {
    let launch = reveal_launch(path).ok_or_else(|| {
        CommandError::new(
            ErrorCode::NothingToOpen,
            format!("{} is not an absolute path", path.display()),
        )
    })?;
    if !path.exists() {
        return Err(CommandError::new(
            ErrorCode::NothingToOpen,
            format!("{} does not exist", path.display()),
        ));
    }
    run(&launch, "open the file manager")
}

/// Shows the log folder; on a blocking thread, so the caller (the tray's menu handler, on the
/// main thread) never waits for the file manager.
pub fn reveal_logs<R: tauri::Runtime>(app: &tauri::AppHandle<R>) {
    use tauri::Manager;
    let dir = app.state::<crate::LogDir>().0.clone();
    tauri::async_runtime::spawn_blocking(move || {
        if let Err(error) = reveal(&dir) {
            tracing::warn!(%error, "cannot reveal the logs");
        }
    });
}

/// The `agent-tray` CLI: beside this program (how the bundles ship it), else on PATH.
pub fn cli_path() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("agent-tray")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("agent-tray"))
}

/// Runs `agent-tray install` and reports what it said. Blocking.
pub fn install_hooks() -> InstallReport {
    let cli = cli_path();
    let mut command = Command::new(&cli);
    command.arg("install");
    match run_within(&mut command, INSTALL_TIMEOUT, Capture::Output) {
        Ok(finished) => {
            let mut text = finished.stdout;
            if !text.is_empty() && !finished.stderr.is_empty() {
                text.push('\n');
            }
            text.push_str(&finished.stderr);
            tracing::info!(ok = finished.status.success(), "installer_ran");
            InstallReport {
                ok: finished.status.success(),
                output: text.trim().to_string(),
            }
        }
        Err(error) => InstallReport {
            ok: false,
            output: error.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_tray::model::{Agent, SessionState};

    fn session() -> Session {
        let mut s = Session::new("s", Agent::Claude, SessionState::Idle, chrono::Utc::now());
        s.cwd = Some("/home/dev/api".into());
        s
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn editor(editor: Editor) -> ProcessFacts {
        ProcessFacts {
            editor: Some(editor),
            tmux_socket: None,
        }
    }

    fn tmux_plan(plan: Option<JumpPlan>) -> (TmuxServer, String, String) {
        match plan {
            Some(JumpPlan::Tmux { server, location }) => {
                (server, location.window_target(), location.pane_target())
            }
            other => panic!("not a tmux jump: {other:?}"),
        }
    }

    #[test]
    fn a_session_in_tmux_jumps_to_its_pane_on_its_own_server() {
        let mut s = session();
        s.tmux = Some("work:@3.%7".into());
        let facts = ProcessFacts {
            editor: Some(Editor::VsCode),
            tmux_socket: Some("/tmp/tmux-1000/other".into()),
        };
        let plan = decide_jump(&s, &facts, |_| true);
        let (server, window, pane) = tmux_plan(plan.clone());
        assert_eq!(server, TmuxServer::Socket("/tmp/tmux-1000/other".into()));
        assert_eq!((window.as_str(), pane.as_str()), ("work:@3", "work:@3.%7"));
        // What runs: the server's socket first, then targets that name the session; never a
        // bare `%7`, which exists on every tmux server.
        let args: Vec<Vec<String>> = jump_launches(&plan.unwrap_or_else(|| panic!("a plan")))
            .into_iter()
            .map(|l| {
                assert_eq!(l.program, "tmux");
                l.args
            })
            .collect();
        assert_eq!(
            args,
            [
                [
                    "-S",
                    "/tmp/tmux-1000/other",
                    "select-window",
                    "-t",
                    "work:@3"
                ],
                [
                    "-S",
                    "/tmp/tmux-1000/other",
                    "select-pane",
                    "-t",
                    "work:@3.%7"
                ],
            ]
        );
        // The agent's environment could not be read: the default server, still fully qualified.
        let (server, _, pane) = tmux_plan(decide_jump(&s, &ProcessFacts::default(), |_| true));
        assert_eq!((server, pane.as_str()), (TmuxServer::Default, "work:@3.%7"));
    }

    #[test]
    fn a_bare_or_malformed_tmux_location_is_not_jumped_to() {
        for location in ["%7", "work:%7", "work:@3.%7; rm -rf ~", "-t:@1"] {
            let mut s = session();
            s.tmux = Some(location.into());
            assert_eq!(
                decide_jump(&s, &ProcessFacts::default(), |_| true),
                Some(JumpPlan::Terminal {
                    dir: PathBuf::from("/home/dev/api")
                }),
                "{location:?}: the folder instead"
            );
        }
    }

    #[test]
    fn a_session_outside_tmux_opens_a_terminal_in_its_folder() {
        assert_eq!(
            decide_jump(&session(), &ProcessFacts::default(), |_| true),
            Some(JumpPlan::Terminal {
                dir: PathBuf::from("/home/dev/api")
            })
        );
        let mut nowhere = session();
        nowhere.cwd = None;
        assert_eq!(
            decide_jump(&nowhere, &editor(Editor::Cursor), |_| true),
            None,
            "nothing to jump to"
        );
    }

    #[test]
    fn a_relative_folder_is_nowhere_to_go() {
        for cwd in ["-rf", "api", "./api", "--help", ""] {
            let mut s = session();
            s.cwd = Some(cwd.into());
            assert_eq!(
                decide_jump(&s, &editor(Editor::VsCode), |_| true),
                None,
                "{cwd:?}"
            );
        }
        assert_eq!(reveal_launch(Path::new("-x/transcript.jsonl")), None);
        assert_eq!(reveal_launch(Path::new("transcript.jsonl")), None);
    }

    #[test]
    fn every_path_handed_to_a_program_is_absolute_and_after_the_options() {
        let dir = PathBuf::from("/home/dev/-rf");
        let [editor] = jump_launches(&JumpPlan::Editor {
            editor: Editor::Cursor,
            dir: dir.clone(),
        })
        .try_into()
        .unwrap_or_else(|l| panic!("one launch: {l:?}"));
        assert_eq!(editor.program, "cursor");
        assert_eq!(editor.args, ["--", "/home/dev/-rf"]);
        let [terminal] = jump_launches(&JumpPlan::Terminal { dir: dir.clone() })
            .try_into()
            .unwrap_or_else(|l| panic!("one launch: {l:?}"));
        #[cfg(not(target_os = "macos"))]
        {
            // The folder is where it starts, not an argument; setsid returns at once.
            assert_eq!(
                (terminal.program.as_str(), terminal.args.as_slice()),
                (
                    "setsid",
                    ["-f".to_string(), "x-terminal-emulator".to_string()].as_slice()
                )
            );
            assert_eq!(terminal.cwd.as_deref(), Some(dir.as_path()));
            // xdg-open refuses `--`; its one argument is an absolute folder.
            let reveal = reveal_launch(Path::new("/home/dev/-rf/t.jsonl"))
                .unwrap_or_else(|| panic!("absolute"));
            assert_eq!(reveal.program, "xdg-open");
            assert_eq!(reveal.args, ["/home/dev/-rf"]);
        }
        #[cfg(target_os = "macos")]
        {
            assert_eq!(terminal.args, ["-a", "Terminal", "--", "/home/dev/-rf"]);
            let reveal = reveal_launch(Path::new("/home/dev/-rf/t.jsonl"))
                .unwrap_or_else(|| panic!("absolute"));
            assert_eq!(reveal.args, ["-R", "--", "/home/dev/-rf/t.jsonl"]);
        }
    }

    #[test]
    fn a_session_in_an_editors_terminal_opens_its_folder_in_that_editor() {
        assert_eq!(
            decide_jump(&session(), &editor(Editor::Cursor), |p| p == "cursor"),
            Some(JumpPlan::Editor {
                editor: Editor::Cursor,
                dir: PathBuf::from("/home/dev/api")
            })
        );
        // VS Code's terminal, but `code` was never put on PATH: a terminal in the folder
        // is still somewhere to go.
        assert_eq!(
            decide_jump(&session(), &editor(Editor::VsCode), |_| false),
            Some(JumpPlan::Terminal {
                dir: PathBuf::from("/home/dev/api")
            })
        );
    }

    #[test]
    fn vs_code_and_cursor_are_told_apart_by_environment_and_ancestry() {
        // Claude started in VS Code's integrated terminal.
        let vscode = env(&[
            ("TERM_PROGRAM", "vscode"),
            ("VSCODE_GIT_ASKPASS_NODE", "/usr/share/code/code"),
        ]);
        assert_eq!(
            editor_of(&vscode, &names(&["claude", "bash", "code"])),
            Some(Editor::VsCode)
        );
        // Cursor sets TERM_PROGRAM=vscode too; its helper paths and names give it away.
        let cursor = env(&[
            ("TERM_PROGRAM", "vscode"),
            (
                "VSCODE_GIT_ASKPASS_NODE",
                "/opt/Cursor/resources/app/cursor",
            ),
        ]);
        assert_eq!(editor_of(&cursor, &[]), Some(Editor::Cursor));
        assert_eq!(
            editor_of(
                &env(&[("TERM_PROGRAM", "vscode")]),
                &names(&["zsh", "cursor"])
            ),
            Some(Editor::Cursor)
        );
        // Environment unreadable (another user's process): ancestry alone still tells.
        assert_eq!(
            editor_of(&[], &names(&["claude", "bash", "code"])),
            Some(Editor::VsCode)
        );
        // A plain terminal, or a terminal that merely runs something called "codex".
        assert_eq!(
            editor_of(
                &env(&[("TERM_PROGRAM", "tmux")]),
                &names(&["codex", "bash", "gnome-terminal-"])
            ),
            None
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_editor_is_read_from_a_real_processs_environment() {
        // An agent started from Cursor's terminal: its environment says so in /proc.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("TERM_PROGRAM", "vscode")
            .env("CURSOR_TRACE_ID", "abc")
            .env("TMUX", "/tmp/agent-tray-test/sock,4242,0")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        // Until it has exec'd, the child shows the test's own environment in /proc, and for a
        // moment during exec (its new name set, its stack not yet) an empty one.
        let execd = |pid: u32| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            let environ = || std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            while agent_tray::process::read_stat(pid).map(|s| s.comm) != Some("sleep".into())
                || environ().is_empty()
            {
                assert!(std::time::Instant::now() < deadline, "sleep never started");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        execd(child.id());
        let seen = process_editor(child.id());
        let socket = process_facts(child.id()).tmux_socket;
        let mut plain = std::process::Command::new("sleep")
            .arg("30")
            .env_remove("TERM_PROGRAM")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        execd(plain.id());
        let plain_seen = process_editor(plain.id());
        for c in [&mut child, &mut plain] {
            let _ = c.kill();
            let _ = c.wait();
        }
        assert_eq!(seen, Some(Editor::Cursor));
        assert_eq!(socket, Some(PathBuf::from("/tmp/agent-tray-test/sock")));
        if std::env::var("TERM_PROGRAM").is_err() {
            assert_eq!(plain_seen, None, "a plain terminal's process");
        }
    }
}
