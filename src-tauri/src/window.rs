//! The main window: created when it is opened, destroyed when it is closed.
//!
//! A tray app spends its day with the window closed. A hidden webview still costs its WebKit
//! processes (over 200 MB) and wakes for the page's timers, so the window is not hidden but
//! destroyed on close, and created again, from the configuration's `main` entry, whenever the
//! tray menu, an alert or a second launch opens it. Nothing else depends on it existing: the
//! engine, the tray and the alerts run without it, and an event emitted while it is gone reaches
//! nobody.
//!
//! What the user had in it (filters, selection, scroll) would die with the webview, so the UI
//! saves it here as it changes ([`WindowMemoryStore`]) and reads it back when it starts.
//!
//! Opening fast: the window is created with the current snapshot and that saved state in it
//! ([`boot_script`]), so the page paints its rows without waiting for an IPC round trip.

use std::path::PathBuf;
use std::sync::Mutex;

use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewWindow, WebviewWindowBuilder};

use crate::ipc::{
    FocusSession, InstallReport, Snapshot, WindowMemory, EVENT_FOCUS, EVENT_INSTALL_RESULT,
    EVENT_OPEN_SETTINGS,
};

pub const MAIN: &str = "main";

/// Whether the main window exists now: what the event bridge waits on while it does not, so a
/// closed window costs no wakeups (see `events`). False until the window is created.
#[derive(Debug)]
pub struct WindowPresence(tokio::sync::watch::Sender<bool>);

impl Default for WindowPresence {
    fn default() -> Self {
        WindowPresence(tokio::sync::watch::channel(false).0)
    }
}

impl WindowPresence {
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<bool> {
        self.0.subscribe()
    }

    pub fn set(&self, open: bool) {
        self.0
            .send_if_modified(|was| std::mem::replace(was, open) != open);
    }
}

/// Notes that `window` (the main one or the popover) exists, and that it is gone once destroyed
/// (by [`close`], or by the window manager's close button).
pub fn note_presence<R: Runtime>(app: &AppHandle<R>, window: &WebviewWindow<R>) {
    let Some(presence) = app.try_state::<WindowPresence>() else {
        return;
    };
    presence.set(true);
    let app = app.clone();
    let label = window.label().to_string();
    window.on_window_event(move |event| {
        if matches!(event, tauri::WindowEvent::Destroyed) {
            if let Some(presence) = app.try_state::<WindowPresence>() {
                presence.set(any_window_but(&app, &label));
            }
        }
    });
}

/// Whether a window other than `label` exists (the main window and the popover both show the
/// sessions: the event bridge runs while either does).
fn any_window_but<R: Runtime>(app: &AppHandle<R>, label: &str) -> bool {
    app.webview_windows().keys().any(|l| l != label)
}

/// The window's state while it is closed (and while it is open: the UI saves every change).
#[derive(Debug, Default)]
pub struct WindowMemoryStore(Mutex<WindowMemory>);

impl WindowMemoryStore {
    /// What a window starting now restores; the one-shot requests are handed over once.
    pub fn take(&self) -> WindowMemory {
        let mut memory = self.lock();
        let taken = memory.clone();
        memory.open_settings = false;
        memory.install_report = None;
        taken
    }

    /// What the UI saves: its filters, selection and scroll (the one-shots stay the shell's).
    pub fn set(&self, saved: WindowMemory) {
        let mut memory = self.lock();
        *memory = WindowMemory {
            open_settings: memory.open_settings,
            install_report: memory.install_report.take(),
            ..saved
        };
    }

    /// The window opens on `session_id` with no filter that could hide it.
    pub fn focus(&self, session_id: String) {
        let mut memory = self.lock();
        memory.filter_text.clear();
        memory.filter_agent = None;
        memory.selected = Some(session_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WindowMemory> {
        // Plain data: still valid after a panic elsewhere.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What the page finds in `window.__agentTrayBoot` when it starts: the snapshot and the saved
/// window state as they are when the window is created.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Boot {
    pub snapshot: Snapshot,
    pub memory: WindowMemory,
}

/// The initialization script that hands `boot` to the page before its own scripts run, so its
/// first paint waits for no IPC round trip (each one goes through the main thread; the first
/// paint used to wait for seven in a row). JSON is a JavaScript expression, and the script is
/// the shell's own code (a user script, outside the page's CSP), so session text in it is data.
pub fn boot_script(boot: &Boot) -> Result<String, serde_json::Error> {
    Ok(format!(
        "window.__agentTrayBoot = {};",
        serde_json::to_string(boot)?
    ))
}

/// The boot data now: the snapshot, and the saved state (taking its one-shot requests).
fn boot<R: Runtime>(app: &AppHandle<R>) -> Option<Boot> {
    let source = app.try_state::<std::sync::Arc<crate::sessions::SessionsSource>>()?;
    let settings = app.try_state::<crate::settings::SettingsStore>()?;
    let engine = app.try_state::<crate::ipc::EngineStatus>()?;
    let memory = app.try_state::<WindowMemoryStore>()?;
    Some(Boot {
        snapshot: crate::commands::snapshot(app, &source, &settings, &engine),
        memory: memory.take(),
    })
}

/// Creates the main window from the configuration's `main` entry (created hidden; [`show`]
/// shows it), with the boot data in it.
fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == MAIN)
        .cloned()
        .ok_or_else(|| tauri::Error::WindowNotFound)?;
    let mut builder = WebviewWindowBuilder::from_config(app, &config)?;
    // Without it (state not managed, or not serialisable) the page asks over IPC instead.
    if let Some(script) = boot(app).and_then(|b| boot_script(&b).ok()) {
        builder = builder.initialization_script(&script);
    }
    if let Some(script) = font_script(app) {
        builder = builder.initialization_script(&script);
    }
    builder.build()
}

/// The script naming the desktop's UI font to the page (see `ui_font`), if there is one.
pub fn font_script<R: Runtime>(app: &AppHandle<R>) -> Option<String> {
    crate::ui_font::script_for(app.try_state::<crate::ui_font::DesktopFont>()?.inner())
}

/// Shows, unminimises and focuses the main window, creating it first if it is closed.
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    let window = match app.get_webview_window(MAIN) {
        Some(window) => window,
        None => match create(app) {
            Ok(window) => {
                tracing::info!("window_created");
                note_presence(app, &window);
                window
            }
            Err(error) => {
                tracing::warn!(%error, "cannot create the window");
                return;
            }
        },
    };
    let _ = window.unminimize();
    let _ = window.show();
    let _ = window.set_focus();
}

/// macOS: a menu-bar app (`Accessory`: no Dock icon, not in the app switcher), except while
/// Settings is open (`Regular`, so the window can be found again with Cmd-Tab). Elsewhere there
/// is no such notion and this does nothing.
pub fn menu_bar_app<R: Runtime>(app: &AppHandle<R>, accessory: bool) {
    #[cfg(target_os = "macos")]
    {
        let policy = if accessory {
            tauri::ActivationPolicy::Accessory
        } else {
            tauri::ActivationPolicy::Regular
        };
        if let Err(error) = app.set_activation_policy(policy) {
            tracing::warn!(%error, "cannot set the activation policy");
        }
    }
    #[cfg(not(target_os = "macos"))]
    let _ = (app, accessory);
}

/// The main window gone however it was closed (its close button too): back to a menu-bar app.
pub fn on_window_event<R: Runtime>(window: &tauri::Window<R>, event: &tauri::WindowEvent) {
    if matches!(event, tauri::WindowEvent::Destroyed) && window.label() == MAIN {
        menu_bar_app(window.app_handle(), true);
    }
}

/// Closes the main window for good: its webview and WebKit processes go with it.
pub fn close<R: Runtime>(app: &AppHandle<R>) {
    menu_bar_app(app, true);
    if let Some(window) = app.get_webview_window(MAIN) {
        if let Err(error) = window.destroy() {
            tracing::warn!(%error, "cannot close the window");
        } else {
            tracing::info!("window_destroyed");
            if let Some(presence) = app.try_state::<WindowPresence>() {
                presence.set(any_window_but(app, MAIN));
            }
        }
    }
}

fn exists<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.get_webview_window(MAIN).is_some()
}

fn update_memory<R: Runtime>(app: &AppHandle<R>, f: impl FnOnce(&mut WindowMemory)) {
    if let Some(store) = app.try_state::<WindowMemoryStore>() {
        f(&mut store.lock());
    }
}

/// The tray's "Settings": the window with its settings panel open. An open window hears
/// [`EVENT_OPEN_SETTINGS`]; a window created now (too late to hear it) reads the request from
/// the memory when it starts.
pub fn open_settings<R: Runtime>(app: &AppHandle<R>) {
    menu_bar_app(app, false);
    if exists(app) {
        show(app);
        let _ = app.emit(EVENT_OPEN_SETTINGS, ());
    } else {
        update_memory(app, |m| m.open_settings = true);
        show(app);
    }
}

/// The installer ran from the tray: the window shows its report (as [`open_settings`] does).
pub fn show_install_report<R: Runtime>(app: &AppHandle<R>, report: InstallReport) {
    if exists(app) {
        show(app);
        let _ = app.emit(EVENT_INSTALL_RESULT, report);
    } else {
        update_memory(app, |m| m.install_report = Some(report));
        show(app);
    }
}

/// Shows the window on one session: the tray menu's rows and a click on an alert both end here.
/// A window created now reads the session from the memory when it starts; one already open
/// selects the row (clearing its filters) when it hears [`EVENT_FOCUS`].
pub fn focus_session<R: Runtime>(app: &AppHandle<R>, session_id: String) {
    if let Some(memory) = app.try_state::<WindowMemoryStore>() {
        memory.focus(session_id.clone());
    }
    show(app);
    if let Err(error) = app.emit(EVENT_FOCUS, FocusSession { session_id }) {
        tracing::warn!(%error, "cannot tell the window which session to show");
    }
}

/// Whether the app opens its window at start. Without `--background` it does; with it (launch
/// at login) only when the window has something to say: the engine is down, or this is a first
/// run (no sessions, no hooks, the installer never shown) that needs the installer.
pub fn opens_at_start(
    background: bool,
    engine_down: bool,
    has_sessions: bool,
    hooks_found: bool,
    installer_shown_before: bool,
) -> bool {
    !background || engine_down || (!has_sessions && !hooks_found && !installer_shown_before)
}

/// Whether an agent's hooks file mentions Agent Tray (`files`: each registered agent's, from
/// `agent_tray::agents::hook_files_from_env`). A text search, not `doctor`'s full check: it only
/// decides whether a first run should show the installer.
pub fn hooks_found(files: &[PathBuf]) -> bool {
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .any(|text| text.contains("agent-tray"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn background_opens_the_window_only_when_it_has_something_to_say() {
        // (background, engine down, sessions, hooks, installer shown before)
        assert!(
            opens_at_start(false, false, true, true, true),
            "a plain launch"
        );
        assert!(
            !opens_at_start(true, false, true, true, false),
            "login with work"
        );
        assert!(
            !opens_at_start(true, false, false, true, false),
            "hooks in place"
        );
        assert!(
            opens_at_start(true, false, false, false, false),
            "first run: the installer"
        );
        assert!(
            !opens_at_start(true, false, false, false, true),
            "only once"
        );
        assert!(
            opens_at_start(true, true, true, true, true),
            "the engine is down"
        );
    }

    #[test]
    fn hooks_are_found_in_either_agents_settings() {
        let home = tempfile::tempdir().unwrap();
        let claude = home.path().join("claude");
        let codex = home.path().join("codex");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::create_dir_all(&codex).unwrap();
        let files = [claude.join("settings.json"), codex.join("hooks.json")];
        assert!(!hooks_found(&files));
        std::fs::write(claude.join("settings.json"), "{}").unwrap();
        assert!(!hooks_found(&files));
        std::fs::write(
            codex.join("hooks.json"),
            r#"{"command":"/usr/bin/agent-tray hook"}"#,
        )
        .unwrap();
        assert!(hooks_found(&files));
        assert!(!hooks_found(&files[..1]));
    }

    #[test]
    fn the_boot_script_hands_the_page_its_snapshot_and_saved_state_as_data() {
        // Session text is the agents' (titles, paths): in the script it stays a JSON string.
        let mut session = agent_tray::model::Session::new(
            "evil",
            agent_tray::model::Agent::Claude,
            agent_tray::model::SessionState::Working,
            chrono::Utc::now(),
        );
        session.title = Some("\"; window.__pwned = 1; //</script>\u{2028}".into());
        let boot = Boot {
            snapshot: Snapshot {
                seq: 7,
                sessions: vec![agent_tray::tray_model::SessionView::of(&session)],
                engine: crate::ipc::EngineStatus::Running {
                    socket: "/run/agent-tray.sock".into(),
                },
                settings: crate::ipc::AppSettings::default(),
                version: "1.2.3".into(),
                remotes: Vec::new(),
            },
            memory: WindowMemory {
                selected: Some("evil".into()),
                open_settings: true,
                ..WindowMemory::default()
            },
        };
        let script = boot_script(&boot).unwrap();
        let json = script
            .strip_prefix("window.__agentTrayBoot = ")
            .and_then(|rest| rest.strip_suffix(';'))
            .unwrap();
        let back: Boot = serde_json::from_str(json).unwrap();
        assert_eq!(back.snapshot, boot.snapshot);
        assert_eq!(back.memory, boot.memory);
    }

    #[test]
    fn focusing_a_session_clears_the_filters_that_could_hide_it() {
        let store = WindowMemoryStore::default();
        store.set(WindowMemory {
            filter_text: "api".into(),
            filter_agent: Some(agent_tray::model::Agent::Codex),
            selected: Some("a".into()),
            scroll_top: 120.0,
            ..WindowMemory::default()
        });
        store.focus("b".into());
        let memory = store.take();
        assert_eq!(memory.selected.as_deref(), Some("b"));
        assert_eq!(memory.filter_text, "");
        assert_eq!(memory.filter_agent, None);
        assert_eq!(memory.scroll_top, 120.0);
    }

    #[test]
    fn requests_for_a_window_not_yet_created_are_handed_over_once_and_survive_its_saves() {
        let store = WindowMemoryStore::default();
        store.lock().open_settings = true;
        store.set(WindowMemory {
            filter_text: "x".into(),
            ..WindowMemory::default()
        });
        let first = store.take();
        assert!(
            first.open_settings,
            "a save from the UI does not drop the request"
        );
        assert_eq!(first.filter_text, "x");
        assert!(!store.take().open_settings, "handed over once");
    }
}
