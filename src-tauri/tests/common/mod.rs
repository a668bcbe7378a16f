//! What the shell's tests on the mock runtime share: an app with the shell's state managed over
//! an empty registry and settings in a temp folder, as `manage_state` sets it up for real.

use std::path::Path;
use std::sync::Arc;

use agent_tray::registry::SessionsRegistry;
use agent_tray_desktop::ipc::EngineStatus;
use agent_tray_desktop::settings::SettingsStore;
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::App;

/// The app on the mock runtime, its state managed with settings and logs under `dir`.
pub fn mock_app(dir: &Path) -> App<MockRuntime> {
    let app = mock_builder()
        .build(mock_context(noop_assets()))
        .unwrap_or_else(|e| panic!("{e}"));
    agent_tray_desktop::manage_state(
        &app,
        Arc::new(SessionsRegistry::new()),
        Default::default(),
        SettingsStore::load(dir.join("settings.json")),
        EngineStatus::Running {
            socket: "/tmp/test.sock".into(),
        },
        dir.join("logs"),
    );
    app
}
