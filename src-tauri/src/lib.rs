//! Agent Tray's desktop shell: hosts the engine in-process and shows it in the tray, a window and
//! desktop alerts.
//!
//! Thin on purpose (see `docs/architecture.md`): sessions, their rules, the tray's model
//! and the notification decisions live in the core crate. Here:
//! - [`commands`]: what the UI may call, a few lines each;
//! - [`events`]: the one module that turns registry changes into typed Tauri events;
//! - [`tray`]: renders the tray from a snapshot;
//! - [`notifier`]: executes the notification policy's decisions (asking [`terminal_focus`] first);
//! - [`ipc`]: every type that crosses to the UI (TypeScript generated from it, see `bindings`).
//!
//! The engine owns the same control socket as `agent-tray daemon`, so `agent-tray hook`, `list`
//! and `doctor` work against the app. When a daemon (or another app) already owns it, the app
//! still opens and says so plainly in the window, the tray tooltip and the log, instead of
//! fighting over the socket.

pub mod actions;
#[cfg(all(unix, not(target_os = "macos")))]
pub mod alert_bus;
pub mod at_rest;
pub mod autostart;
pub mod commands;
pub mod events;
pub mod history;
pub mod hook_drift;
pub mod ipc;
pub mod launch;
pub mod limits;
pub mod logs;
pub mod menu_opening;
pub mod menu_prewarm;
pub mod notifier;
pub mod popover;
pub mod second_launch;

/// What several modules' tests need.
#[cfg(test)]
pub(crate) mod test_support {
    /// A real child process of the test (`sleep 30`, its output nowhere); the test kills it by
    /// its pid and reaps it. Only the Linux at-rest tests use it (the second-launch tests that
    /// also did moved to the core), so on macOS it would be dead code.
    #[cfg(target_os = "linux")]
    #[allow(clippy::expect_used)]
    pub fn sleeping_child() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("sleep")
    }
}
pub mod sessions;
pub mod settings;
pub mod snapshot;
pub mod terminal_focus;
pub mod tray;
pub mod ui_font;
pub mod window;
#[cfg(unix)]
pub mod window_host;

#[cfg(test)]
mod bindings;

/// What the bundle promises Windows, read from `tauri.conf.json` as `tauri build` reads it.
#[cfg(test)]
mod bundle_config_tests {
    fn config() -> serde_json::Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tauri.conf.json");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn toasts_are_shown_under_the_bundle_identifier_the_installer_gives_the_shortcut() {
        // The NSIS installer sets the identifier as the Start-menu shortcut's AppUserModelID;
        // a toast under any other id is not shown as the app's.
        assert_eq!(
            config()["identifier"].as_str(),
            Some(crate::notifier::APP_USER_MODEL_ID)
        );
    }

    #[test]
    fn windows_gets_a_per_user_nsis_installer_beside_the_linux_and_macos_bundles() {
        let config = config();
        let bundle = &config["bundle"];
        let targets: Vec<&str> = bundle["targets"]
            .as_array()
            .unwrap_or_else(|| panic!("targets is a list: {bundle}"))
            .iter()
            .filter_map(|t| t.as_str())
            .collect();
        for target in ["deb", "rpm", "nsis"] {
            assert!(targets.contains(&target), "{target} in {targets:?}");
        }
        let windows = &bundle["windows"];
        // Per user: no administrator prompt, and the registry Run key launch at login writes
        // is the user's too.
        assert_eq!(windows["nsis"]["installMode"].as_str(), Some("currentUser"));
        assert_eq!(
            windows["webviewInstallMode"]["type"].as_str(),
            Some("downloadBootstrapper")
        );
        // tauri-build embeds the .ico in the Windows executable's resources.
        let icons: Vec<&str> = bundle["icon"]
            .as_array()
            .unwrap_or_else(|| panic!("icon is a list"))
            .iter()
            .filter_map(|i| i.as_str())
            .collect();
        assert!(icons.contains(&"icons/icon.ico"), "{icons:?}");
        let ico = concat!(env!("CARGO_MANIFEST_DIR"), "/../icons/icon.ico");
        assert!(std::path::Path::new(ico).is_file(), "{ico}");
    }
}

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_tray::engine::{Engine, EngineConfig, HostKind};
use agent_tray::paths::TrayPaths;
use agent_tray::registry::{RegistryConfig, SessionsRegistry};
use tauri::{AppHandle, Manager, RunEvent, Runtime};
use tokio_util::sync::CancellationToken;

use crate::ipc::EngineStatus;
use crate::logs::{init_logging, LogDir};
use crate::sessions::SessionsSource;
use crate::settings::SettingsStore;

/// The engine while it runs, taken at exit for a clean shutdown.
struct HostedEngine(Mutex<Option<Engine>>);

/// The shell's state for a registry: what the commands, the bridge, the tray and the notifier
/// read. Separate from starting the engine so tests can run it on a registry of their own.
pub fn manage_state<R: Runtime, M: Manager<R>>(
    manager: &M,
    registry: Arc<SessionsRegistry>,
    reach: sessions::EngineReach,
    settings: SettingsStore,
    engine: EngineStatus,
    log_dir: PathBuf,
) {
    manager.manage(Arc::new(SessionsSource::new(registry, reach)));
    manager.manage(settings);
    manager.manage(engine);
    manager.manage(LogDir(log_dir));
    manager.manage(window::WindowMemoryStore::default());
    manager.manage(window::WindowPresence::default());
    manager.manage(Arc::new(tray::MenuOpening::default()));
}

/// Registers every command the UI may call.
pub fn with_commands<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder.invoke_handler(tauri::generate_handler![
        commands::get_snapshot,
        commands::jump_to_session,
        commands::reveal_transcript,
        commands::dismiss_session,
        commands::save_settings,
        commands::add_remote,
        commands::remove_remote,
        commands::install_hooks,
        commands::hide_window,
        commands::get_window_memory,
        commands::save_window_memory,
        commands::get_today,
        commands::get_history,
        commands::get_session_detail,
        commands::open_main_window,
        commands::hide_popover,
        commands::answer_request,
        commands::answer_question,
        commands::send_prompt,
        commands::stop_turn,
        commands::get_answering,
        commands::set_answering,
    ])
}

/// Starts the background work that keeps the window, the tray and the alerts current.
pub fn start_background<R: Runtime>(app: &AppHandle<R>, token: &CancellationToken) {
    events::spawn(app, token.child_token());
    notifier::spawn(app, token.child_token());
    limits::spawn(app, token.child_token());
    tray::spawn(app, token.child_token());
    spawn_settings_applier(app, autostart::prepare(app), token.child_token());
    if let Some(presence) = app.try_state::<window::WindowPresence>() {
        tauri::async_runtime::spawn(at_rest::release_when_closed(
            presence.subscribe(),
            at_rest::START_SETTLE,
            at_rest::SETTLE,
            || drop(tauri::async_runtime::spawn_blocking(at_rest::release_now)),
            token.child_token(),
        ));
    }
}

/// Applies the settings that act outside the shell (session TTL, launch at login) now and on
/// every change. `login` is what "Launch at login" switches (tests pass their own).
pub fn spawn_settings_applier<R: Runtime>(
    app: &AppHandle<R>,
    login: Option<Box<dyn autostart::LoginSwitch>>,
    token: CancellationToken,
) {
    let registry = app.state::<Arc<SessionsSource>>().registry().clone();
    let settings = app.state::<SettingsStore>().subscribe();
    let retention = app
        .try_state::<agent_tray::store::writer::HistoryRetention>()
        .map(|r| r.inner().clone());
    let applier = settings::SettingsApplier::new(registry, login).with_history_retention(retention);
    tauri::async_runtime::spawn(settings::apply_loop(settings, applier, token));
}

/// Takes the socket and starts the engine, or explains why it could not.
fn start_engine(paths: &TrayPaths) -> (Arc<SessionsRegistry>, Option<Engine>, EngineStatus) {
    let config = match EngineConfig::from_env(HostKind::Desktop) {
        Ok(config) => config,
        Err(error) => {
            let registry = Arc::new(SessionsRegistry::with_config(
                RegistryConfig::from_env(),
                Arc::new(agent_tray::clock::SystemClock),
            ));
            return (
                registry,
                None,
                EngineStatus::NotRunning {
                    message: error.to_string(),
                },
            );
        }
    };
    match tauri::async_runtime::block_on(async move { Engine::start(config) }) {
        Ok(engine) => {
            let registry = engine.registry().clone();
            let status = EngineStatus::Running {
                socket: paths.socket.display().to_string(),
            };
            (registry, Some(engine), status)
        }
        Err(error) => {
            tracing::error!(%error, "the engine did not start; the window will say why");
            let registry = Arc::new(SessionsRegistry::with_config(
                RegistryConfig::from_env(),
                Arc::new(agent_tray::clock::SystemClock),
            ));
            (
                registry,
                None,
                EngineStatus::NotRunning {
                    message: error.to_string(),
                },
            )
        }
    }
}

/// What `agent-tray-desktop --version` or `--help` prints, answered before anything starts (no
/// display, no second-launch hand-over, no engine): `None` for every other command line, which
/// starts the app.
pub fn answer_without_starting(args: &[String]) -> Option<String> {
    let wants = |short: &str, long: &str| args.iter().skip(1).any(|a| a == short || a == long);
    if wants("-V", "--version") {
        return Some(format!(
            "agent-tray-desktop {}\n",
            env!("CARGO_PKG_VERSION")
        ));
    }
    if wants("-h", "--help") {
        return Some(format!(
            "agent-tray-desktop {}: the tray app of Agent Tray.\n\n\
             Usage: agent-tray-desktop [--background]\n\n\
             With the app already running in this environment, opens its window (with\n\
             --background: does nothing) and exits. Otherwise starts the app with its window\n\
             open, or with none under --background (the login item's way).\n\n\
             The command line (list, doctor, install, ...) is `agent-tray`.\n",
            env!("CARGO_PKG_VERSION")
        ));
    }
    None
}

/// The app's configuration and assets, compiled in once for the app and its window host.
fn context() -> tauri::Context<tauri::Wry> {
    tauri::generate_context!("../tauri.conf.json")
}

/// Runs this process as the app's window host (`--window-host`, started by the app itself, see
/// `window_host`).
#[cfg(unix)]
pub fn run_window_host() -> i32 {
    window_host::run_host(context, || {
        TrayPaths::from_env()
            .ok()
            .and_then(|paths| init_logging(&paths.log_dir()))
    })
}

/// Builds and runs the desktop app until the user quits.
pub fn run() {
    let paths = match TrayPaths::from_env() {
        Ok(paths) => paths,
        Err(error) => {
            eprintln!("agent-tray-desktop: {error}");
            std::process::exit(2);
        }
    };
    let _log_guard = init_logging(&paths.log_dir());
    let start_hidden = std::env::args().any(|a| a == "--background");
    let token = CancellationToken::new();

    let builder = tauri::Builder::default()
        .plugin(tauri_plugin_positioner::init())
        .plugin(autostart::plugin());
    let setup_paths = paths.clone();
    let setup_token = token.clone();
    let app = with_commands(builder)
        .on_window_event(window::on_window_event)
        .setup(move |app| {
            // A menu-bar app: no Dock icon, no app-switcher entry (Regular while Settings is open).
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            let (registry, engine, status) = start_engine(&setup_paths);
            let hook_health = engine.as_ref().map(Engine::hook_health);
            let engine_down = matches!(status, EngineStatus::NotRunning { .. });
            // No engine here: no links either, and Settings says the remotes wait for one.
            let reach = engine
                .as_ref()
                .map(|e| sessions::EngineReach {
                    remote_links: e.ledgers().remote_links.clone(),
                    talk: e.ledgers().talk.clone(),
                })
                .unwrap_or_default();
            manage_state(
                app,
                registry,
                reach,
                SettingsStore::load(setup_paths.settings_file()),
                status,
                setup_paths.log_dir(),
            );
            if let Some(engine) = engine.as_ref() {
                app.manage(limits::LimitsState(engine.ledgers().limits.clone()));
            }
            app.manage(history::HistoryStorePath(agent_tray::store::store_path(
                &setup_paths.data_dir,
            )));
            if let Some(retention) = engine.as_ref().and_then(Engine::history_retention) {
                app.manage(retention);
            }
            app.manage(HostedEngine(Mutex::new(engine)));
            // Linux: the window and the popover live in a child process (see `window_host`).
            #[cfg(unix)]
            if window_host::enabled(std::env::var_os("AGENT_TRAY_WINDOW_IN_PROCESS").as_deref()) {
                let automation = at_rest::automation_allowed(
                    std::env::var_os("TAURI_WEBVIEW_AUTOMATION").as_deref(),
                );
                app.manage(Arc::new(window_host::WindowHost::new(automation)));
                app.manage(window_host::page_calls::<tauri::Wry>());
                window_host::forward_events(app.handle());
            }
            // With the positioner registered above: the tray may now place the popover.
            app.manage(popover::PopoverState::default());
            // GTK is up and this is the main thread: the one place to read its settings.
            app.manage(ui_font::DesktopFont(ui_font::desktop_font_name()));
            let handle = app.handle().clone();
            if let Err(error) = tray::create(&handle) {
                // No tray (no tray host or no libayatana): the window and alerts still work.
                tracing::warn!(%error, "cannot create the tray icon");
            } else {
                // The pages its menu opens start while the menu is read (Linux).
                menu_prewarm::watch(&handle);
            }
            // Starts the tray's render task too, which renders at once.
            start_background(&handle, &setup_token);
            second_launch::spawn_listener(&handle, &setup_paths, setup_token.child_token());
            if let Some(health) = hook_health {
                hook_drift::spawn(
                    &handle,
                    health,
                    setup_paths.data_dir.clone(),
                    setup_token.child_token(),
                );
            }
            let has_sessions = {
                let registry = handle.state::<Arc<SessionsSource>>().registry().clone();
                !registry.list().is_empty() || !registry.history(1).is_empty()
            };
            // Shown once: a login without sessions later does not open the window again.
            let installer_marker = setup_paths
                .settings_file()
                .with_file_name("installer-shown");
            let hooks = window::hooks_found(&agent_tray::agents::hook_files_from_env());
            if window::opens_at_start(
                start_hidden,
                engine_down,
                has_sessions,
                hooks,
                installer_marker.exists(),
            ) {
                window::show(&handle);
                if !has_sessions && !hooks {
                    let written = installer_marker
                        .parent()
                        .map_or(Ok(()), std::fs::create_dir_all)
                        .and_then(|()| std::fs::write(&installer_marker, b""));
                    if let Err(error) = written {
                        tracing::warn!(%error, "cannot note that the installer was shown");
                    }
                }
            }
            Ok(())
        })
        .build(context());
    let app = match app {
        Ok(app) => app,
        Err(error) => {
            tracing::error!(%error, "the desktop app could not start");
            std::process::exit(1);
        }
    };
    app.run(move |handle, event| {
        // Closing the window destroys it (see `window`); the app lives on in the tray until
        // "Quit", which exits with a code.
        if let RunEvent::ExitRequested {
            code: None, api, ..
        } = &event
        {
            api.prevent_exit();
        }
        if let RunEvent::Exit = event {
            token.cancel();
            let engine = handle
                .try_state::<HostedEngine>()
                .and_then(|e| e.0.lock().unwrap_or_else(|p| p.into_inner()).take());
            if let Some(engine) = engine {
                tauri::async_runtime::block_on(engine.shutdown());
            }
        }
    });
}
