//! The main window: showing it, and (macOS) toggling it next to the menu-bar icon.

use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::ipc::{FocusSession, EVENT_FOCUS};

pub const MAIN: &str = "main";

/// Shows, unminimises and focuses the main window.
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    if let Some(window) = app.get_webview_window(MAIN) {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// Shows the window on one session: the tray menu's rows and a click on an alert both end here.
/// The UI selects the row (clearing its filters) when it hears [`EVENT_FOCUS`].
pub fn focus_session<R: Runtime>(app: &AppHandle<R>, session_id: String) {
    show(app);
    if let Err(error) = app.emit(EVENT_FOCUS, FocusSession { session_id }) {
        tracing::warn!(%error, "cannot tell the window which session to show");
    }
}

/// macOS: a left click toggles the window just below the icon, placed from the rectangle the
/// click reports (the tray has necessarily reported where it is by then); a right click opens the
/// menu (the default).
#[cfg(target_os = "macos")]
pub fn on_macos_tray_event<R: Runtime>(
    tray: &tauri::tray::TrayIcon<R>,
    event: tauri::tray::TrayIconEvent,
) {
    use tauri::tray::{MouseButton, MouseButtonState, TrayIconEvent};
    let TrayIconEvent::Click {
        button: MouseButton::Left,
        button_state: MouseButtonState::Up,
        rect,
        ..
    } = event
    else {
        return;
    };
    let app = tray.app_handle();
    let Some(window) = app.get_webview_window(MAIN) else {
        return;
    };
    if window.is_visible().unwrap_or(false) {
        let _ = window.hide();
        return;
    }
    let scale = window.scale_factor().unwrap_or(1.0);
    let position = rect.position.to_physical::<f64>(scale);
    let size = rect.size.to_physical::<f64>(scale);
    let width = window
        .outer_size()
        .map(|s| f64::from(s.width))
        .unwrap_or(0.0);
    let x = position.x + size.width / 2.0 - width / 2.0;
    let y = position.y + size.height;
    let _ = window.set_position(tauri::PhysicalPosition::new(x, y));
    show(app);
}
