//! What the window's row actions and the tray's items do outside the app: jump to a session's
//! terminal, reveal a transcript or the logs, run the hooks installer. Each is planned as data
//! first (testable), then executed by spawning a program.

use std::path::{Path, PathBuf};
use std::process::Command;

use agent_tray::model::Session;

use crate::ipc::{CommandError, ErrorCode, InstallReport};

/// How to bring the user to a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JumpPlan {
    /// Select the tmux window, then the pane (`tmux` location `session:@window.%pane`).
    Tmux {
        window: String,
        pane: Option<String>,
    },
    /// Open the session's folder in the editor whose terminal runs it (`code <dir>`).
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

/// Where a jump goes, decided from the session, the editor its process runs in (if any) and
/// which programs are on PATH. Pure: both facts about the machine come in as arguments.
///
/// A tmux pane wins (it names the exact place); then the editor, when its command is installed;
/// then a terminal in the session's folder.
pub fn decide_jump(
    session: &Session,
    editor: Option<Editor>,
    on_path: impl Fn(&str) -> bool,
) -> Option<JumpPlan> {
    if let Some(plan) = tmux_plan(session) {
        return Some(plan);
    }
    let dir = PathBuf::from(session.cwd.as_deref()?);
    match editor {
        Some(editor) if on_path(editor.program()) => Some(JumpPlan::Editor { editor, dir }),
        _ => Some(JumpPlan::Terminal { dir }),
    }
}

/// The jump for a session on this machine: looks at its process (Linux: `/proc`) and PATH.
/// Blocking (a few small file reads): call it off the async workers.
pub fn plan_jump(session: &Session) -> Option<JumpPlan> {
    let editor = session.pid.and_then(process_editor);
    decide_jump(session, editor, on_path)
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

/// The editor whose terminal runs `pid`, from `/proc/<pid>/environ` (readable for the user's
/// own processes) and the names of up to a few ancestors. None where `/proc` is absent. The
/// probes are the core's ([`agent_tray::process`]), shared with the feeds and the pid walk.
fn process_editor(pid: u32) -> Option<Editor> {
    use agent_tray::process::{ancestry, environ, SystemProcesses};
    let env = environ(pid).unwrap_or_default();
    let ancestors: Vec<String> = ancestry(&SystemProcesses, pid, 8)
        .into_iter()
        .map(|(_, info)| info.comm)
        .collect();
    editor_of(&env, &ancestors)
}

fn tmux_plan(session: &Session) -> Option<JumpPlan> {
    if let Some(location) = session.tmux.as_deref().filter(|t| !t.is_empty()) {
        let (window, pane) = match location.rsplit_once('.') {
            Some((window, pane)) if pane.starts_with('%') => {
                (window.to_string(), Some(pane.to_string()))
            }
            _ => (location.to_string(), None),
        };
        return Some(JumpPlan::Tmux { window, pane });
    }
    None
}

fn launch_failed(what: &str, error: impl std::fmt::Display) -> CommandError {
    CommandError::new(ErrorCode::LaunchFailed, format!("cannot {what}: {error}"))
}

pub fn execute_jump(plan: &JumpPlan) -> Result<(), CommandError> {
    match plan {
        JumpPlan::Tmux { window, pane } => {
            run_checked(
                Command::new("tmux").args(["select-window", "-t", window]),
                "select the tmux window",
            )?;
            if let Some(pane) = pane {
                run_checked(
                    Command::new("tmux").args(["select-pane", "-t", pane]),
                    "select the tmux pane",
                )?;
            }
            Ok(())
        }
        JumpPlan::Editor { editor, dir } => {
            if !dir.is_dir() {
                return Err(CommandError::new(
                    ErrorCode::NothingToOpen,
                    format!("the folder {} no longer exists", dir.display()),
                ));
            }
            Command::new(editor.program())
                .arg(dir)
                .spawn()
                .map(drop)
                .map_err(|e| launch_failed(&format!("run {}", editor.program()), e))
        }
        JumpPlan::Terminal { dir } => {
            if !dir.is_dir() {
                return Err(CommandError::new(
                    ErrorCode::NothingToOpen,
                    format!("the folder {} no longer exists", dir.display()),
                ));
            }
            let mut command = terminal_command(dir);
            command.current_dir(dir);
            command
                .spawn()
                .map(drop)
                .map_err(|e| launch_failed("open a terminal", e))
        }
    }
}

#[cfg(target_os = "macos")]
fn terminal_command(dir: &Path) -> Command {
    let mut c = Command::new("open");
    c.args(["-a", "Terminal"]).arg(dir);
    c
}

#[cfg(not(target_os = "macos"))]
fn terminal_command(_dir: &Path) -> Command {
    Command::new("x-terminal-emulator")
}

fn run_checked(command: &mut Command, what: &str) -> Result<(), CommandError> {
    let output = command.output().map_err(|e| launch_failed(what, e))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(launch_failed(
            what,
            String::from_utf8_lossy(&output.stderr).trim(),
        ))
    }
}

/// Shows a file in the platform's file manager (macOS selects it; elsewhere its folder opens).
pub fn reveal(path: &Path) -> Result<(), CommandError> {
    if !path.exists() {
        return Err(CommandError::new(
            ErrorCode::NothingToOpen,
            format!("{} does not exist", path.display()),
        ));
    }
    #[cfg(target_os = "macos")]
    let mut command = {
        let mut c = Command::new("open");
        c.arg("-R").arg(path);
        c
    };
    #[cfg(not(target_os = "macos"))]
    let mut command = {
        let folder = if path.is_dir() {
            path
        } else {
            path.parent().unwrap_or(path)
        };
        let mut c = Command::new("xdg-open");
        c.arg(folder);
        c
    };
    command
        .spawn()
        .map(drop)
        .map_err(|e| launch_failed("open the file manager", e))
}

pub fn reveal_logs<R: tauri::Runtime>(app: &tauri::AppHandle<R>) -> Result<(), CommandError> {
    use tauri::Manager;
    let dir = app.state::<crate::LogDir>().0.clone();
    reveal(&dir)
}

/// The `agent-tray` CLI: beside this program (how the bundles ship it), else on PATH.
pub fn cli_path() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("agent-tray")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("agent-tray"))
}

/// Runs `agent-tray install` and reports what it said.
pub fn install_hooks() -> InstallReport {
    let cli = cli_path();
    match Command::new(&cli).arg("install").output() {
        Ok(output) => {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            tracing::info!(ok = output.status.success(), "installer_ran");
            InstallReport {
                ok: output.status.success(),
                output: text.trim().to_string(),
            }
        }
        Err(error) => InstallReport {
            ok: false,
            output: format!("cannot run {}: {error}", cli.display()),
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

    #[test]
    fn a_session_in_tmux_jumps_to_its_window_and_pane() {
        let mut s = session();
        s.tmux = Some("work:@3.%7".into());
        assert_eq!(
            decide_jump(&s, Some(Editor::VsCode), |_| true),
            Some(JumpPlan::Tmux {
                window: "work:@3".into(),
                pane: Some("%7".into())
            })
        );
    }

    #[test]
    fn a_session_outside_tmux_opens_a_terminal_in_its_folder() {
        assert_eq!(
            decide_jump(&session(), None, |_| true),
            Some(JumpPlan::Terminal {
                dir: PathBuf::from("/home/dev/api")
            })
        );
        let mut nowhere = session();
        nowhere.cwd = None;
        assert_eq!(
            decide_jump(&nowhere, Some(Editor::Cursor), |_| true),
            None,
            "nothing to jump to"
        );
    }

    #[test]
    fn a_session_in_an_editors_terminal_opens_its_folder_in_that_editor() {
        assert_eq!(
            decide_jump(&session(), Some(Editor::Cursor), |p| p == "cursor"),
            Some(JumpPlan::Editor {
                editor: Editor::Cursor,
                dir: PathBuf::from("/home/dev/api")
            })
        );
        // VS Code's terminal, but `code` was never put on PATH: a terminal in the folder
        // is still somewhere to go.
        assert_eq!(
            decide_jump(&session(), Some(Editor::VsCode), |_| false),
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
        if std::env::var("TERM_PROGRAM").is_err() {
            assert_eq!(plain_seen, None, "a plain terminal's process");
        }
    }
}
