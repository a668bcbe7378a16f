//! The commands the UI may call. Each one takes state, calls the core, maps the error: a few lines.
//! They live in a module of their own because a `#[tauri::command]` declared in `lib.rs` clashes
//! with the macro's generated `__cmd__` item (E0255).

/// The version of the running app, shown in the window's footer.
#[tauri::command]
pub async fn app_version(app: tauri::AppHandle) -> String {
    app.package_info().version.to_string()
}
