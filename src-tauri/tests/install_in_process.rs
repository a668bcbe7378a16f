//! "Install hooks" from the window, through Tauri's mock runtime: the real command handler
//! installs in-process (no child `agent-tray install`) and writes the hooks into the agents'
//! folders of a private world, naming the `agent-tray` CLI, never the app.
//!
//! One test in this file: it sets the process's environment (a private `HOME`,
//! `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `AGENT_TRAY_HOME`, `XDG_RUNTIME_DIR`, `PATH`), which no
//! other test in this binary may see.
// Unix only: Unix file modes.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agent_tray::registry::SessionsRegistry;
use agent_tray_desktop::ipc::EngineStatus;
use agent_tray_desktop::settings::SettingsStore;
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::WebviewWindowBuilder;

fn invoke(
    window: &tauri::WebviewWindow<tauri::test::MockRuntime>,
    cmd: &str,
) -> Result<serde_json::Value, serde_json::Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: tauri::ipc::CallbackFn(0),
        error: tauri::ipc::CallbackFn(1),
        url: "tauri://localhost"
            .parse()
            .unwrap_or_else(|e| panic!("{e}")),
        body: tauri::ipc::InvokeBody::Json(serde_json::json!({})),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(window, request)
        .map(|b| b.deserialize::<serde_json::Value>().unwrap_or_default())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn install_hooks_from_the_window_writes_the_hooks_into_the_agents_folders_in_process() {
    // A user with Claude Code and Codex, who clicks "Install hooks" in the window of an app
    // whose `agent-tray` CLI is on PATH. The CLI here is a stand-in that fails if run: the
    // install must not run it, only name it in the hooks.
    let world = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = world.path();
    let bin_dir = root.join("bin");
    let claude = root.join("claude");
    let codex = root.join("codex");
    for dir in [
        &bin_dir,
        &claude,
        &codex,
        &root.join("home"),
        &root.join("run"),
    ] {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    }
    let cli = bin_dir.join("agent-tray");
    std::fs::write(&cli, "#!/bin/sh\nexit 97\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    let cli = std::fs::canonicalize(&cli).unwrap_or_else(|e| panic!("{e}"));
    std::env::set_var("HOME", root.join("home"));
    std::env::set_var("AGENT_TRAY_HOME", root.join("tray"));
    std::env::set_var("XDG_RUNTIME_DIR", root.join("run"));
    std::env::set_var("CLAUDE_CONFIG_DIR", &claude);
    std::env::set_var("CODEX_HOME", &codex);
    std::env::set_var("PATH", &bin_dir);

    let app = agent_tray_desktop::with_commands(mock_builder())
        .build(mock_context(noop_assets()))
        .unwrap_or_else(|e| panic!("{e}"));
    agent_tray_desktop::manage_state(
        &app,
        std::sync::Arc::new(SessionsRegistry::new()),
        Default::default(),
        SettingsStore::load(root.join("settings.json")),
        EngineStatus::Running {
            socket: root.join("run/test.sock").display().to_string(),
        },
        root.join("logs"),
    );
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));

    let report = invoke(&window, "install_hooks").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report["ok"], true, "{report}");
    let output = report["output"].as_str().unwrap_or_default().to_string();
    let settings = claude.join("settings.json");
    let hooks = codex.join("hooks.json");
    assert!(
        output.contains(&format!("created {}", settings.display())),
        "the report says what the CLI says: {output}"
    );
    let claude_hook = format!("{} hook --agent claude", cli.display());
    let codex_hook = format!("{} hook --agent codex", cli.display());
    assert!(
        read(&settings).contains(&claude_hook),
        "Claude's hooks run the CLI: {}",
        read(&settings)
    );
    assert!(
        read(&hooks).contains(&codex_hook),
        "Codex's hooks run the CLI: {}",
        read(&hooks)
    );
    let app_exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !read(&settings).contains(&app_exe.display().to_string()),
        "the hooks never run the app itself"
    );

    // Clicked again: nothing to change, said as the CLI says it, and the files stay as they were.
    let before = read(&settings);
    let again = invoke(&window, "install_hooks").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again["ok"], true, "{again}");
    assert!(
        again["output"]
            .as_str()
            .unwrap_or_default()
            .contains("already done, nothing changed"),
        "{again}"
    );
    assert_eq!(read(&settings), before);

    // A settings file that is not valid JSON: refused, reported, left untouched.
    std::fs::write(&settings, "{not json").unwrap_or_else(|e| panic!("{e}"));
    let refused = invoke(&window, "install_hooks").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["output"]
            .as_str()
            .unwrap_or_default()
            .starts_with("agent-tray: "),
        "{refused}"
    );
    assert_eq!(read(&settings), "{not json");
}
