//! The commands the UI may call. Each takes state, calls the core or an action, maps the error:
//! a few lines. They live in a module of their own because a `#[tauri::command]` declared in
//! `lib.rs` clashes with the macro's generated `__cmd__` item (E0255).
//!
//! The capability file (`src-tauri/capabilities/default.json`) grants exactly these.

use std::sync::Arc;

use tauri::{AppHandle, Emitter, Runtime, State};

use crate::actions;
use agent_tray::answering::EffectiveChoice;

use crate::ipc::{
    AnswerChoice, AnswerFrom, AppSettings, CommandError, EngineStatus, ErrorCode, HistoryQuery,
    InstallReport, Snapshot, WindowMemory, EVENT_SETTINGS,
};
use crate::sessions::SessionsSource;
use crate::settings::SettingsStore;
use crate::window::WindowMemoryStore;

fn unknown(host: Option<&str>, session_id: &str) -> CommandError {
    let message = match host {
        Some(host) => format!("no session {session_id} on {host}"),
        None => format!("no session {session_id}"),
    };
    CommandError::new(ErrorCode::UnknownSession, message)
}

/// Everything the window shows, at once. Events keep it current afterwards.
#[tauri::command]
pub async fn get_snapshot<R: Runtime>(
    app: AppHandle<R>,
    source: State<'_, Arc<SessionsSource>>,
    settings: State<'_, SettingsStore>,
    engine: State<'_, EngineStatus>,
) -> Result<Snapshot, CommandError> {
    Ok(crate::snapshot::snapshot(&app, &source, &settings, &engine))
}

/// Brings the user to the session: its tmux pane, else its editor (VS Code, Cursor), else a
/// terminal in its folder; a remote session through `ssh` to its host. `host` is the row's
/// (`None`: this machine): the session is looked up there and only there.
#[tauri::command]
pub async fn jump_to_session(
    source: State<'_, Arc<SessionsSource>>,
    session_id: String,
    host: Option<String>,
) -> Result<(), CommandError> {
    let host = host.as_deref();
    let session = source
        .find(host, &session_id)
        .ok_or_else(|| unknown(host, &session_id))?;
    let links = source.remote_links();
    let destination = session
        .host
        .as_deref()
        .and_then(|h| links.destination_of(h));
    // Planning reads the process's /proc entries and runs programs: off the async workers.
    blocking(move || actions::jump(&session, destination)).await
}

/// Answers a permission request (Allow, Deny, Allow for this session) from the window or the
/// popover. `Ok` once the agent's hook has taken the answer; otherwise a sentence saying why
/// (already answered, expired, the agent moved on). `host` is the row's: a remote's request is
/// refused whatever its id, so a remote announcing a local request's id cannot answer it.
#[tauri::command]
pub async fn answer_request(
    source: State<'_, Arc<SessionsSource>>,
    request_id: String,
    host: Option<String>,
    answer: AnswerChoice,
    message: Option<String>,
    from: AnswerFrom,
) -> Result<(), CommandError> {
    let asked = crate::actions::Asked {
        request_id: &request_id,
        host: host.as_deref(),
    };
    let answer = crate::actions::answer_of(answer, message);
    crate::actions::answer(source.registry(), asked, answer, from).await
}

/// Answers a question with the user's choices and words, one answer per question in order,
/// from the window or the popover. `Ok` once the agent's hook has taken them; otherwise a
/// sentence saying why (a label the question does not offer, a question left out, already
/// answered, the agent moved on). `host` is the row's, as for [`answer_request`].
#[tauri::command]
pub async fn answer_question(
    source: State<'_, Arc<SessionsSource>>,
    request_id: String,
    host: Option<String>,
    answers: Vec<agent_tray::answering::QuestionAnswer>,
    from: AnswerFrom,
) -> Result<(), CommandError> {
    let asked = crate::actions::Asked {
        request_id: &request_id,
        host: host.as_deref(),
    };
    let answer = agent_tray::answering::Answer::Questions { answers };
    crate::actions::answer(source.registry(), asked, answer, from).await
}

/// Gives an idle session its next prompt (`agent-tray send`): `Ok` once the agent took it;
/// otherwise the engine's sentence (not idle, no way in, a remote's session, text refused).
#[tauri::command]
pub async fn send_prompt(
    source: State<'_, Arc<SessionsSource>>,
    session_id: String,
    host: Option<String>,
    text: String,
) -> Result<(), CommandError> {
    let prompt = agent_tray::talk_back::PromptText::parse(&text, false)
        .map_err(|e| CommandError::new(ErrorCode::TalkRefused, e.to_string()))?;
    let order = agent_tray::talk_back::TalkOrder::Send { prompt };
    talk_to_session(&source, &session_id, host.as_deref(), order).await
}

/// Ends a working or waiting session's running turn (`agent-tray stop`), as [`send_prompt`].
#[tauri::command]
pub async fn stop_turn(
    source: State<'_, Arc<SessionsSource>>,
    session_id: String,
    host: Option<String>,
) -> Result<(), CommandError> {
    let order = agent_tray::talk_back::TalkOrder::Stop;
    talk_to_session(&source, &session_id, host.as_deref(), order).await
}

/// Carries a send or a stop out through the engine and maps its refusal to a stable code.
pub async fn talk_to_session(
    source: &SessionsSource,
    session_id: &str,
    host: Option<&str>,
    order: agent_tray::talk_back::TalkOrder,
) -> Result<(), CommandError> {
    use agent_tray::engine::talk::TalkError;
    use agent_tray::talk_back::TalkFailure;
    let talked = agent_tray::engine::talk::talk(
        source.registry(),
        source.talk(),
        session_id,
        host,
        order,
        agent_tray::answering::AnswerSource::Window,
    )
    .await;
    talked.map(|_| ()).map_err(|e| {
        let code = match &e {
            TalkError::NoSession(_) => ErrorCode::UnknownSession,
            TalkError::OnRemote { .. } | TalkError::Failed(TalkFailure::Refused(_)) => {
                ErrorCode::TalkRefused
            }
            TalkError::Failed(TalkFailure::NotDelivered(_)) => ErrorCode::TalkNotDelivered,
        };
        CommandError::new(code, e.to_string())
    })
}

/// Shows the session's transcript file in the file manager (the row's host's session only).
#[tauri::command]
pub async fn reveal_transcript(
    source: State<'_, Arc<SessionsSource>>,
    session_id: String,
    host: Option<String>,
) -> Result<(), CommandError> {
    let host = host.as_deref();
    let session = source
        .find(host, &session_id)
        .ok_or_else(|| unknown(host, &session_id))?;
    // Waits for the file manager's launcher (bounded): off the async workers.
    blocking(move || actions::reveal_transcript(&session)).await
}

/// Runs a blocking action off the async workers; a task that could not finish is a failed
/// launch.
async fn blocking(
    action: impl FnOnce() -> Result<(), CommandError> + Send + 'static,
) -> Result<(), CommandError> {
    tauri::async_runtime::spawn_blocking(action)
        .await
        .map_err(|e| CommandError::new(ErrorCode::LaunchFailed, e.to_string()))?
}

/// Hides an ended session from the window (the event bridge sends the row's removal).
#[tauri::command]
pub async fn dismiss_session(
    source: State<'_, Arc<SessionsSource>>,
    session_id: String,
    host: Option<String>,
) -> Result<(), CommandError> {
    if !source.dismiss(host.as_deref(), &session_id) {
        return Err(CommandError::new(
            ErrorCode::UnknownSession,
            "only an ended session can be dismissed",
        ));
    }
    Ok(())
}

/// Saves and applies settings; every window hears `settings-changed`.
#[tauri::command]
pub async fn save_settings<R: Runtime>(
    app: AppHandle<R>,
    store: State<'_, SettingsStore>,
    settings: AppSettings,
) -> Result<(), CommandError> {
    store
        .save(settings.clone())
        .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, format!("{e:#}")))?;
    let _ = app.emit(EVENT_SETTINGS, settings);
    Ok(())
}

/// Installs the hooks (what `agent-tray install` does, in-process) and returns its report.
#[tauri::command]
pub async fn install_hooks() -> Result<InstallReport, CommandError> {
    tauri::async_runtime::spawn_blocking(actions::install_hooks)
        .await
        .map_err(|e| CommandError::new(ErrorCode::InstallerFailed, e.to_string()))
}

/// Esc in the window: close it (the app lives on in the tray). Closed means destroyed, webview
/// and all (see `window`): this call never answers, the page that made it is gone.
#[tauri::command]
pub async fn hide_window<R: Runtime>(app: AppHandle<R>) -> Result<(), CommandError> {
    crate::window::close(&app);
    Ok(())
}

/// The popover's footer button: the full window; the popover closes.
#[tauri::command]
pub async fn open_main_window<R: Runtime>(app: AppHandle<R>) -> Result<(), CommandError> {
    crate::popover::close(&app);
    crate::window::show(&app);
    Ok(())
}

/// Esc in the popover: it closes (and its webview goes).
#[tauri::command]
pub async fn hide_popover<R: Runtime>(app: AppHandle<R>) -> Result<(), CommandError> {
    crate::popover::close(&app);
    Ok(())
}

/// What the user had in the window, and what was asked of it while its page was starting: the
/// page's catch-up once its listeners are set (and its start, for a page created without them).
#[tauri::command]
pub async fn get_window_memory(
    memory: State<'_, WindowMemoryStore>,
) -> Result<WindowMemory, CommandError> {
    // Called by the page once its listeners are set: from then on requests reach it as events.
    // The log line times an open from outside (benches/at_rest.sh, no WebDriver needed).
    tracing::info!("window_page_listening");
    Ok(memory.take_listening())
}

/// The window saves its filters, selection and scroll here as they change.
#[tauri::command]
pub async fn save_window_memory(
    memory: State<'_, WindowMemoryStore>,
    state: WindowMemory,
) -> Result<(), CommandError> {
    memory.set(state);
    Ok(())
}

/// Runs a read of the history store off the async workers; no store path reads as "no history".
async fn read_history<R: Runtime, T: Send + 'static>(
    app: &AppHandle<R>,
    read: impl FnOnce(&std::path::Path) -> Result<T, agent_tray::store::StoreError> + Send + 'static,
) -> Result<T, CommandError> {
    let unavailable = |message: String| CommandError::new(ErrorCode::HistoryUnavailable, message);
    let path = crate::history::store_path(app)
        .ok_or_else(|| unavailable("no data folder for the history store".into()))?;
    tauri::async_runtime::spawn_blocking(move || read(&path))
        .await
        .map_err(|e| unavailable(e.to_string()))?
        .map_err(|e| unavailable(e.to_string()))
}

/// The "Today" view: local midnight to now.
#[tauri::command]
pub async fn get_today<R: Runtime>(
    app: AppHandle<R>,
) -> Result<agent_tray::store::views::DayReport, CommandError> {
    let tz = agent_tray::store::waiting::user_time_zone();
    read_history(&app, move |path| {
        agent_tray::store::views::today(path, chrono::Utc::now(), tz)
    })
    .await
}

/// The "History" view: stored sessions matching the query, most recent first.
#[tauri::command]
pub async fn get_history<R: Runtime>(
    app: AppHandle<R>,
    query: HistoryQuery,
) -> Result<Vec<agent_tray::store::views::HistoryEntry>, CommandError> {
    let filter = agent_tray::store::query::HistoryFilter {
        search: Some(query.search).filter(|s| !s.trim().is_empty()),
        agent: query.agent,
        project: query.project.filter(|p| !p.is_empty()),
        limit: if query.limit == 0 {
            200
        } else {
            query.limit as usize
        },
    };
    read_history(&app, move |path| {
        agent_tray::store::views::history(path, &filter)
    })
    .await
}

/// A stored session with its timeline; `None` when the store does not have it. The store keeps
/// this machine's sessions only: a remote's (`host` set) is never answered with a local one's.
#[tauri::command]
pub async fn get_session_detail<R: Runtime>(
    app: AppHandle<R>,
    session_id: String,
    host: Option<String>,
) -> Result<Option<agent_tray::store::views::SessionDetail>, CommandError> {
    if host.is_some() {
        return Ok(None);
    }
    let tz = agent_tray::store::waiting::user_time_zone();
    read_history(&app, move |path| {
        agent_tray::store::views::session_detail(path, &session_id, chrono::Utc::now(), tz)
    })
    .await
}

/// What the Settings view's Remotes form changes: the core writes remotes.json (checked, atomic,
/// as `agent-tray remote add/remove`), then the engine rereads it. A refusal is the core's
/// message, and nothing is written.
pub enum RemoteChange {
    Add { name: String, destination: String },
    Remove { name: String },
}

/// Applies `change` to the remotes file under `data_dir` and asks the engine's links to reload.
pub fn change_remotes(
    data_dir: &std::path::Path,
    links: &agent_tray::remote::link::RemoteLinks,
    change: RemoteChange,
) -> Result<(), CommandError> {
    use agent_tray::remote::config;
    let file = config::remotes_path(data_dir);
    let written = match change {
        RemoteChange::Add { name, destination } => config::add(&file, &name, &destination),
        RemoteChange::Remove { name } => config::remove(&file, &name).map(|_| ()),
    };
    written.map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))?;
    // False when no engine runs here: the change waits for the next start, as the CLI says.
    links.request_reload();
    Ok(())
}

async fn change_remotes_off_loop(
    source: State<'_, Arc<SessionsSource>>,
    change: RemoteChange,
) -> Result<(), CommandError> {
    let paths = agent_tray::paths::TrayPaths::from_env()
        .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))?;
    let links = source.remote_links().clone();
    tauri::async_runtime::spawn_blocking(move || change_remotes(&paths.data_dir, &links, change))
        .await
        .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))?
}

/// Settings' "Add remote": `agent-tray remote add NAME DESTINATION`.
#[tauri::command]
pub async fn add_remote(
    source: State<'_, Arc<SessionsSource>>,
    name: String,
    destination: String,
) -> Result<(), CommandError> {
    change_remotes_off_loop(source, RemoteChange::Add { name, destination }).await
}

/// Settings' "Remove" beside a remote: `agent-tray remote remove NAME`.
#[tauri::command]
pub async fn remove_remote(
    source: State<'_, Arc<SessionsSource>>,
    name: String,
) -> Result<(), CommandError> {
    change_remotes_off_loop(source, RemoteChange::Remove { name }).await
}

/// Settings' "Answer from the tray": each answerable agent's choice in force (the engine reads
/// the same file for every request).
#[tauri::command]
pub async fn get_answering() -> Result<Vec<EffectiveChoice>, CommandError> {
    let paths = agent_tray::paths::TrayPaths::from_env()
        .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))?;
    tauri::async_runtime::spawn_blocking(move || {
        agent_tray::answering::AnswerSettings::load(&paths)
            .map(|s| s.all_effective())
            .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))
    })
    .await
    .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))?
}

/// Settings' "Answer from the tray" for one agent: on or off, and how long a request waits.
#[tauri::command]
pub async fn set_answering(
    agent: agent_tray::model::Agent,
    enabled: bool,
    wait_secs: u64,
) -> Result<EffectiveChoice, CommandError> {
    let paths = agent_tray::paths::TrayPaths::from_env()
        .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))?;
    tauri::async_runtime::spawn_blocking(move || {
        let not_saved = |e: agent_tray::answering::SettingsError| {
            CommandError::new(ErrorCode::SettingsNotSaved, e.to_string())
        };
        let mut settings =
            agent_tray::answering::AnswerSettings::load(&paths).map_err(not_saved)?;
        let choice = settings
            .set(agent, Some(enabled), Some(wait_secs))
            .map_err(not_saved)?;
        settings.save(&paths).map_err(not_saved)?;
        Ok(choice)
    })
    .await
    .map_err(|e| CommandError::new(ErrorCode::SettingsNotSaved, e.to_string()))?
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod remote_tests {
    use super::*;
    use agent_tray::remote::link::RemoteLinks;

    #[test]
    fn settings_adds_and_removes_remotes_through_the_core_and_a_refusal_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let links = RemoteLinks::default();
        let file = agent_tray::remote::config::remotes_path(tmp.path());
        let add = |name: &str, destination: &str| {
            change_remotes(
                tmp.path(),
                &links,
                RemoteChange::Add {
                    name: name.into(),
                    destination: destination.into(),
                },
            )
        };
        let refused = add("-bad name", "dev@box").unwrap_err();
        assert!(refused.message.contains("is not"), "{}", refused.message);
        let refused = add("box", "-oProxyCommand=x").unwrap_err();
        assert!(
            refused.message.contains("ssh destination"),
            "{}",
            refused.message
        );
        assert!(!file.exists(), "nothing written");
        add("box", "dev@box").unwrap();
        let (read, _) = agent_tray::remote::config::load(&file).unwrap();
        assert_eq!(
            read.find("box").map(|r| r.destination.as_str()),
            Some("dev@box")
        );
        change_remotes(
            tmp.path(),
            &links,
            RemoteChange::Remove { name: "box".into() },
        )
        .unwrap();
        let (read, _) = agent_tray::remote::config::load(&file).unwrap();
        assert!(read.remotes.is_empty());
        let unknown = change_remotes(
            tmp.path(),
            &links,
            RemoteChange::Remove { name: "box".into() },
        );
        assert!(unknown.unwrap_err().message.contains("no remote is named"));
    }
}
