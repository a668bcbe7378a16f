//! What the window's row actions and the tray's items do outside the app: jump to a session's
//! terminal, reveal a transcript or the logs, install the hooks. Each is decided by the core
//! ([`agent_tray::jump`] plans the jump and the reveal as programs to run,
//! [`agent_tray::app_install`] installs in-process); here they are carried out.
//!
//! What stays here is what needs the machine: asking tmux for its clients, checking that a
//! folder or a program is there right before running, and running each program through
//! [`crate::launch::run_within`] (reaped, with a deadline; a terminal is started through
//! `setsid -f`, which returns at once, so the user's terminal is never the app's child; on
//! Windows a console of its own that is not waited for). Failures become the UI's
//! [`CommandError`].

use std::path::Path;

use agent_tray::jump::terminals::most_recent_tmux_client;
use agent_tray::jump::tmux::{TmuxLocation, TmuxServer};
use agent_tray::jump::{
    client_terminal, jump_steps, process_facts, remote_jump, tmux_clients_args, FrontTerminal,
    BRING_FORWARD, TMUX_TIMEOUT,
};
use agent_tray::model::Session;

pub use agent_tray::jump::{
    decide_jump, editor_of, jump_launches, reveal_launch, Editor, JumpPlan, Launch, ProcessFacts,
};

use crate::ipc::{CommandError, ErrorCode, InstallReport};
use crate::launch::{run_within, Capture, LaunchError};

/// The jump for a session on this machine: looks at its process (see
/// [`agent_tray::jump::process_facts`]), its tmux clients, and PATH. Blocking (a few small file
/// reads, at most one `tmux list-clients`): call it off the async workers.
pub fn plan_jump(session: &Session) -> Option<JumpPlan> {
    let mut facts = session.pid.map(process_facts).unwrap_or_default();
    if let Some(location) = session.tmux.as_deref().and_then(TmuxLocation::parse) {
        let server = TmuxServer::from_socket(facts.tmux_socket.as_deref());
        facts.tmux_client = tmux_client_terminal(&server, &location);
    }
    decide_jump(session, &facts, on_path)
}

/// The terminal of the tmux client that used `location`'s session last, from that client's
/// process and the tty tmux reports for it.
fn tmux_client_terminal(server: &TmuxServer, location: &TmuxLocation) -> Option<FrontTerminal> {
    let mut command = server.command();
    command.args(tmux_clients_args(location));
    let finished = run_within(&mut command, TMUX_TIMEOUT, Capture::Output).ok()?;
    if !finished.status.success() {
        return None;
    }
    let (pid, tty) = most_recent_tmux_client(&finished.stdout)?;
    client_terminal(pid, tty)
}

/// Whether `program` (an exact file name) is in a folder on PATH and may be run.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| runnable(&dir.join(program))))
}

#[cfg(unix)]
fn runnable(candidate: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    candidate.is_file()
        && std::fs::metadata(candidate).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// Windows has no execute bit: the name says what runs (`wt.exe`, `code.cmd`). Not
/// `is_file`: `wt.exe` is an app execution alias, a reparse point that cannot be opened to be
/// followed, so only the entry itself is looked at.
#[cfg(windows)]
fn runnable(candidate: &Path) -> bool {
    std::fs::symlink_metadata(candidate).is_ok_and(|m| !m.is_dir())
}

fn launch_failed(what: &str, error: impl std::fmt::Display) -> CommandError {
    CommandError::new(ErrorCode::LaunchFailed, format!("cannot {what}: {error}"))
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

/// Runs a jump as [`agent_tray::jump::jump_steps`] lays it out: the folder and program it needs
/// checked first, the best-effort launches (logged when they fail), then the required ones; when
/// one of those fails, the fallback (a new terminal in the folder), if its folder exists.
pub fn execute_jump(plan: &JumpPlan) -> Result<(), CommandError> {
    let steps = jump_steps(plan);
    if let Some(dir) = &steps.folder {
        if !dir.is_dir() {
            return Err(missing_folder(dir));
        }
    }
    if let Some(program) = steps.program {
        if !on_path(program) {
            return Err(launch_failed(steps.what, format!("no {program} on PATH")));
        }
    }
    for launch in &steps.best_effort {
        if let Err(error) = run(launch, BRING_FORWARD) {
            tracing::info!(%error, "jump_front_failed");
        }
    }
    let required = steps
        .required
        .iter()
        .try_for_each(|launch| run(launch, steps.what));
    match (required, &steps.fallback) {
        (Ok(()), _) => Ok(()),
        (Err(error), Some(fallback)) if jump_steps(fallback).folder.is_some_and(|d| d.is_dir()) => {
            tracing::info!(%error, "jump_tab_failed");
            execute_jump(fallback)
        }
        (Err(error), _) => Err(error),
    }
}

/// Opens a terminal running `argv` (a remote jump: `ssh -t -- DESTINATION …`). Where no
/// terminal is known the error carries the command line, for the user to run it. On Linux the
/// terminal runs a script of ours in the private runtime folder (see
/// [`agent_tray::jump::remote_jump`]: no session text on a terminal's command line).
pub fn execute_remote_jump(argv: &[String]) -> Result<(), CommandError> {
    let folder = agent_tray::paths::TrayPaths::from_env()
        .map(|p| p.runtime_dir)
        .map_err(|e| launch_failed("open a terminal", e))?;
    let script = jump_script_path(&folder);
    let jump = remote_jump(argv, &script);
    let launch = jump
        .launch
        .filter(|_| jump.program.is_none_or(on_path))
        .ok_or_else(|| {
            CommandError::new(
                ErrorCode::NothingToOpen,
                format!("no terminal to open here; run: {}", jump.command_line),
            )
        })?;
    if let Some(text) = &jump.script {
        remove_stale_jump_scripts(&folder);
        write_jump_script(&script, text).map_err(|e| launch_failed("open a terminal", e))?;
    }
    run(&launch, "open a terminal")
}

/// Files a jump's script may be named in the runtime folder: `jump-<pid>-<nanoseconds>.sh`.
const JUMP_SCRIPT_PREFIX: &str = "jump-";

fn jump_script_path(folder: &Path) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    folder.join(format!(
        "{JUMP_SCRIPT_PREFIX}{}-{nanos}.sh",
        std::process::id()
    ))
}

/// Writes a jump's script: a new file (never one planted in its place), the owner's only, and
/// runnable, in a folder only the user can enter.
fn write_jump_script(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(folder) = path.parent() {
        agent_tray::paths::create_private_dir(folder).map_err(std::io::Error::other)?;
    }
    let mut options = agent_tray::os_fs::private_options();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o700);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// A script removes itself as it starts; one whose terminal never started stays behind, so the
/// ones older than a minute go at the next jump.
fn remove_stale_jump_scripts(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .is_some_and(|n| n.starts_with(JUMP_SCRIPT_PREFIX) && n.ends_with(".sh"));
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 60));
        if ours && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Brings the user to `session`: a remote one through `ssh` to its host's `destination` (the
/// core quotes every word), a local one as [`plan_jump`] decides. Blocking.
pub fn jump(session: &Session, destination: Option<String>) -> Result<(), CommandError> {
    if session.host.is_some() {
        let argv = destination
            .and_then(|destination| {
                // The link's own ssh program and config: an alias resolves to the same host.
                let ssh = agent_tray::remote::SshCommand::from_env();
                agent_tray::remote::command::jump_argv(&ssh, &destination, session)
            })
            .ok_or_else(|| {
                CommandError::new(
                    ErrorCode::NothingToOpen,
                    "this remote session has no tmux pane or folder to go to",
                )
            })?;
        return execute_remote_jump(&argv);
    }
    let plan = plan_jump(session).ok_or_else(|| {
        CommandError::new(
            ErrorCode::NothingToOpen,
            "this session has no folder or terminal to go to",
        )
    })?;
    execute_jump(&plan)
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

/// Shows a session's transcript (`None`: none is known for it). Blocking.
pub fn reveal_transcript(session: &Session) -> Result<(), CommandError> {
    let path = agent_tray::jump::local_transcript(session)
        .map_err(|e| CommandError::new(ErrorCode::NothingToOpen, e.to_string()))?;
    reveal(Path::new(path))
}

/// Shows the log folder; on a blocking thread, so the caller (the tray's menu handler, on the
/// main thread) never waits for the file manager.
pub fn reveal_logs<R: tauri::Runtime>(app: &tauri::AppHandle<R>) {
    use tauri::Manager;
    let dir = app.state::<crate::logs::LogDir>().0.clone();
    tauri::async_runtime::spawn_blocking(move || {
        if let Err(error) = reveal(&dir) {
            tracing::warn!(%error, "cannot reveal the logs");
        }
    });
}

/// Installs the hooks in-process, as `agent-tray install` does, with the `agent-tray` CLI
/// beside this program (else on PATH) as the program they run, and reports what the CLI would
/// have printed. Blocking.
pub fn install_hooks() -> InstallReport {
    let own_exe = std::env::current_exe().ok();
    let path_var = std::env::var_os("PATH");
    let Some(bin) = agent_tray::app_install::hook_binary(own_exe.as_deref(), path_var.as_deref())
    else {
        return InstallReport {
            ok: false,
            output: format!(
                "cannot find the {} program beside this app or on PATH: the hooks run it",
                agent_tray::app_install::CLI_BINARY
            ),
        };
    };
    let outcome = agent_tray::app_install::install_hooks(&bin);
    tracing::info!(ok = outcome.ok, "installer_ran");
    InstallReport {
        ok: outcome.ok,
        output: outcome.output,
    }
}

/// The request a row's button answers: its id, and the host of the row's session (`None`: this
/// machine). Request ids are unique per host only, like session ids.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub request_id: &'a str,
    pub host: Option<&'a str>,
}

/// The answer a permission request's button or key gives.
pub fn answer_of(
    choice: crate::ipc::AnswerChoice,
    message: Option<String>,
) -> agent_tray::answering::Answer {
    use crate::ipc::AnswerChoice;
    use agent_tray::answering::Answer;
    match choice {
        AnswerChoice::Allow => Answer::Allow,
        AnswerChoice::AllowForSession => Answer::AllowForSession,
        AnswerChoice::Deny => Answer::Deny { message },
    }
}

/// Answers a request (a permission's Allow or Deny, a question's answers) through the engine's
/// book, and waits (bounded, by the core) for the agent's hook to take the answer. The book
/// checks a question's answers against the question as asked.
pub async fn answer(
    registry: &agent_tray::registry::SessionsRegistry,
    asked: Asked<'_>,
    answer: agent_tray::answering::Answer,
    from: crate::ipc::AnswerFrom,
) -> Result<(), CommandError> {
    use crate::ipc::AnswerFrom;
    use agent_tray::answering::AnswerSource;
    use agent_tray::registry::answers::AnswerError;
    let source = match from {
        AnswerFrom::Window => AnswerSource::Window,
        AnswerFrom::Popover => AnswerSource::Popover,
    };
    // The one rule: a remote row's request is answered on its machine (refused here: the book
    // holds this machine's requests only), anything else by its id here.
    match registry
        .answer_routed(asked.request_id, asked.host, answer, source)
        .await
    {
        Ok(_) => Ok(()),
        Err(
            e
            @ (AnswerError::Refused(_) | AnswerError::OnRemote { .. } | AnswerError::NotRouted(_)),
        ) => Err(CommandError::new(ErrorCode::AnswerRefused, e.to_string())),
        Err(e @ AnswerError::NotDelivered(_)) => Err(CommandError::new(
            ErrorCode::AnswerNotDelivered,
            e.to_string(),
        )),
    }
}
