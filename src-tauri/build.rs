//! Reads the Tauri configuration from the workspace root, where `tauri.conf.json` lives beside the
//! core package, so that a plain `cargo build -p agent-tray-desktop` needs no tauri CLI.
//!
//! The app manifest lists the commands the UI may call; each gets an `allow-<name>` permission,
//! and `capabilities/default.json` grants exactly those (a command not granted there cannot be
//! invoked from the webview even though it is registered).

const COMMANDS: &[&str] = &[
    "get_snapshot",
    "jump_to_session",
    "reveal_transcript",
    "dismiss_session",
    "save_settings",
    "add_remote",
    "remove_remote",
    "install_hooks",
    "hide_window",
    "get_window_memory",
    "save_window_memory",
    "get_today",
    "get_history",
    "get_session_detail",
    "open_main_window",
    "hide_popover",
    "answer_request",
    "answer_question",
    "send_prompt",
    "stop_turn",
    "get_answering",
    "set_answering",
];

fn main() {
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(error) = tauri_build::try_build(attributes) {
        // A build script can only report by failing; the message says which part of the config broke.
        panic!("tauri build step failed: {error:#}");
    }
}
