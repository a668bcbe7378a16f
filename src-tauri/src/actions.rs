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
    /// Open a terminal in the session's folder.
    Terminal { dir: PathBuf },
}

pub fn plan_jump(session: &Session) -> Option<JumpPlan> {
    if let Some(location) = session.tmux.as_deref().filter(|t| !t.is_empty()) {
        let (window, pane) = match location.rsplit_once('.') {
            Some((window, pane)) if pane.starts_with('%') => {
                (window.to_string(), Some(pane.to_string()))
            }
            _ => (location.to_string(), None),
        };
        return Some(JumpPlan::Tmux { window, pane });
    }
    session.cwd.as_deref().map(|dir| JumpPlan::Terminal {
        dir: PathBuf::from(dir),
    })
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
        let t = chrono::Utc::now();
        Session {
            session_id: "s".into(),
            agent: Agent::Claude,
            state: SessionState::Idle,
            cwd: Some("/home/dev/api".into()),
            repo: None,
            branch: None,
            model: None,
            transcript_path: None,
            pid: None,
            pid_start: None,
            prompted: false,
            streamed: false,
            started_at: t,
            last_seen: t,
            state_since: t,
            last_event: None,
            last_tool: None,
            error: None,
            waiting_for: None,
            end_reason: None,
            title: None,
            tmux: None,
            tty: None,
            subagents: 0,
            turn_started_at: None,
        }
    }

    #[test]
    fn a_session_in_tmux_jumps_to_its_window_and_pane() {
        let mut s = session();
        s.tmux = Some("work:@3.%7".into());
        assert_eq!(
            plan_jump(&s),
            Some(JumpPlan::Tmux {
                window: "work:@3".into(),
                pane: Some("%7".into())
            })
        );
    }

    #[test]
    fn a_session_outside_tmux_opens_a_terminal_in_its_folder() {
        assert_eq!(
            plan_jump(&session()),
            Some(JumpPlan::Terminal {
                dir: PathBuf::from("/home/dev/api")
            })
        );
        let mut nowhere = session();
        nowhere.cwd = None;
        assert_eq!(plan_jump(&nowhere), None, "nothing to jump to");
    }
}
