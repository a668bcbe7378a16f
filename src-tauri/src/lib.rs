//! Agent Tray's desktop shell (skeleton): a window and a tray icon.

pub mod commands;

use tauri::tray::TrayIconBuilder;
use tauri::Manager;

/// Builds and runs the desktop app until the user quits.
pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let result = tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![commands::app_version])
        .setup(|app| {
            let icon = app
                .default_window_icon()
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no default window icon in tauri.conf.json"))?;
            TrayIconBuilder::with_id("main")
                .icon(icon)
                .tooltip("Agent Tray")
                .build(app)?;
            if let Some(window) = app.get_webview_window("main") {
                window.show()?;
            }
            Ok(())
        })
        .run(tauri::generate_context!("../tauri.conf.json"));
    if let Err(error) = result {
        tracing::error!(%error, "the desktop app stopped with an error");
        std::process::exit(1);
    }
}
