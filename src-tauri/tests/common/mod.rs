//! What the shell's tests on the mock runtime share: an app with the shell's state managed over
//! an empty registry and settings in a temp folder, as `manage_state` sets it up for real; and
//! a hook's permission request as Claude asks it.
// Each test file uses a part of this.
#![allow(dead_code)]

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

/// Claude's hook asking `registry`, for `observation` (a PermissionRequest), to run `command` in
/// Bash as the call `call_id`, with the whole input as a hook sends it (an alert or a menu offers
/// Allow only beside it); the request open 60 s. `allow_for_session`: whether the agent takes
/// "allow for this session".
pub fn ask_to_run(
    registry: &SessionsRegistry,
    observation: agent_tray::model::Observation,
    call_id: &str,
    command: &str,
    allow_for_session: bool,
) -> agent_tray::registry::answers::AskOutcome {
    use agent_tray::answering::{Accepts, AskCall, AskDetail};
    registry
        .ask(
            observation,
            AskCall {
                call_id: call_id.into(),
                input_digest: format!("digest-{call_id}"),
                suggests_for_session: false,
                detail: AskDetail {
                    tool: "Bash".into(),
                    command: Some(command.into()),
                    input: serde_json::json!({ "command": command }).to_string(),
                    ..AskDetail::default()
                },
            },
            std::time::Duration::from_secs(60),
            Accepts {
                allow_for_session,
                deny_message: true,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
}
