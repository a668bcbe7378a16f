//! The popover: a compact window under the tray icon, the menu-bar app's everyday view (a
//! narrow list, the sessions that need you first, today's totals at the bottom).
//!
//! It is a window of its own (label [`POPOVER`], page `popover.html`), not a compact mode of the
//! main one: the two can be open together (the popover's footer opens the full window), and
//! each page loads only what it shows. Like the main window (see `window`), it holds no webview
//! at rest: it is created when it opens and destroyed when it closes, and it closes as soon as it
//! loses the focus, as a menu-bar popover does.
//!
//! macOS: a left click on the icon toggles it, placed under the icon by
//! `tauri-plugin-positioner` from the rectangle the click reports; a right click opens the menu.
//! Windows: the same clicks, but the taskbar, and the tray in it, is usually at the bottom of the
//! screen, so the popover goes above the icon ([`under_tray_icon`]; the positioner puts it below
//! when there is no room above, for a taskbar at the top).
//! Linux tray hosts report no clicks, so the menu's "Open" opens it, at the screen's top right
//! corner (where the tray usually is) since the icon's rectangle is never known there.
//!
//! A click on the icon while the popover is open first takes the focus from it, which closes it,
//! and only then arrives as a click: without [`toggle`]'s memory of that close, the click would
//! open it again at once and the icon could never close it.

use std::sync::Mutex;
use std::time::Instant;

use tauri::{AppHandle, Manager, Runtime, WebviewWindow, WebviewWindowBuilder};
use tauri_plugin_positioner::{Position, WindowExt};

pub const POPOVER: &str = "popover";

pub use agent_tray::shell_policy::popover::{
    closes_on_focus_loss, placement, toggle, Placement, Toggle, FOCUS_LOSS_CLICK,
};

#[derive(Debug, Default)]
struct Memory {
    tray_rect_known: bool,
    had_focus: bool,
    closed_on_focus_loss_at: Option<Instant>,
}

/// The popover's memory between events. Managed only where the positioner plugin is registered
/// (the app, not the tests' mock shell): without it the popover is never placed or toggled.
#[derive(Debug, Default)]
pub struct PopoverState(Mutex<Memory>);

impl PopoverState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        // Plain data: still valid after a panic elsewhere.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A tray icon event: the positioner learns where the icon is; a left click (released) toggles
/// the popover.
pub fn on_tray_icon_event<R: Runtime>(app: &AppHandle<R>, event: &tauri::tray::TrayIconEvent) {
    use tauri::tray::{MouseButton, MouseButtonState, TrayIconEvent};
    let Some(state) = app.try_state::<PopoverState>() else {
        return;
    };
    tauri_plugin_positioner::on_tray_event(app, event);
    if matches!(
        event,
        TrayIconEvent::Click { .. } | TrayIconEvent::Enter { .. } | TrayIconEvent::Move { .. }
    ) {
        state.lock().tray_rect_known = true;
    }
    if let TrayIconEvent::Click {
        button: MouseButton::Left,
        button_state: MouseButtonState::Up,
        ..
    } = event
    {
        let ago = state.lock().closed_on_focus_loss_at.map(|at| at.elapsed());
        match toggle(exists(app), ago) {
            Toggle::Open => open(app),
            Toggle::Close => close(app),
            Toggle::StayClosed => {}
        }
    }
}

/// Opens the popover (creating it), placed by the positioner, and gives it the focus. An open
/// one is brought back to the front.
pub fn open<R: Runtime>(app: &AppHandle<R>) {
    if let Some(host) = crate::window::host(app) {
        if host.open(app, POPOVER, || scripts(app), true, true) {
            tracing::info!("popover_created");
        }
        return;
    }
    let window = match app.get_webview_window(POPOVER) {
        Some(window) => window,
        None => match create(app) {
            Ok(window) => window,
            Err(error) => {
                tracing::warn!(%error, "cannot create the popover");
                return;
            }
        },
    };
    let _ = window.show();
    place(app, &window);
    let _ = window.set_focus();
}

/// Creates the popover hidden, if it is closed, for a click that may come (the tray menu is open,
/// see `menu_prewarm`): [`open`] then shows it already loaded.
pub fn prewarm<R: Runtime>(app: &AppHandle<R>) {
    if let Some(host) = crate::window::host(app) {
        if !host.exists(POPOVER) {
            host.open(app, POPOVER, || scripts(app), false, true);
        }
        return;
    }
    if app.get_webview_window(POPOVER).is_none() {
        if let Err(error) = create(app) {
            tracing::warn!(%error, "cannot create the popover");
        }
    }
}

/// Destroys the popover if it was created but never shown (prewarmed, not chosen).
pub fn drop_if_hidden<R: Runtime>(app: &AppHandle<R>) {
    if let Some(host) = crate::window::host(app) {
        if host.exists(POPOVER) && !host.is_shown(POPOVER) {
            host.close(app, POPOVER);
            tracing::info!("prewarmed_popover_dropped");
        }
        return;
    }
    if let Some(window) = app.get_webview_window(POPOVER) {
        if !window.is_visible().unwrap_or(true) && window.destroy().is_ok() {
            tracing::info!("prewarmed_popover_dropped");
        }
    }
}

/// Closes the popover for good: its webview goes with it.
pub fn close<R: Runtime>(app: &AppHandle<R>) {
    if let Some(host) = crate::window::host(app) {
        host.close(app, POPOVER);
        tracing::info!("popover_destroyed");
        return;
    }
    if let Some(window) = app.get_webview_window(POPOVER) {
        if let Err(error) = window.destroy() {
            tracing::warn!(%error, "cannot close the popover");
        } else {
            tracing::info!("popover_destroyed");
        }
    }
}

/// Whether the popover is open (in the app or in its window host).
fn exists<R: Runtime>(app: &AppHandle<R>) -> bool {
    match crate::window::host(app) {
        Some(host) => host.exists(POPOVER),
        None => app.get_webview_window(POPOVER).is_some(),
    }
}

/// The scripts the popover starts with: the snapshot (no window state) and the desktop's font.
fn scripts<R: Runtime>(app: &AppHandle<R>) -> Vec<String> {
    crate::window::snapshot_boot_script(app)
        .into_iter()
        .chain(crate::window::font_script(app))
        .collect()
}

fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == POPOVER)
        .cloned()
        .ok_or(tauri::Error::WindowNotFound)?;
    let mut builder = WebviewWindowBuilder::from_config(app, &config)?;
    // Painted from the snapshot it is created with, as the window is (see `window::boot_script`).
    for script in scripts(app) {
        builder = builder.initialization_script(&script);
    }
    let window = builder.build()?;
    tracing::info!("popover_created");
    if let Some(state) = app.try_state::<PopoverState>() {
        state.lock().had_focus = false;
    }
    crate::window::note_presence(app, &window);
    let handle = app.clone();
    window.on_window_event(move |event| {
        let focused = match event {
            tauri::WindowEvent::Focused(focused) => focused,
            // Placed again once the window has its size: a window just shown may still report
            // none (GTK), and the corner positions subtract it.
            tauri::WindowEvent::Resized(size) if size.width > 0 => {
                // Off the window's own event handler, as for closing below.
                let handle = handle.clone();
                tauri::async_runtime::spawn(async move {
                    if let Some(window) = handle.get_webview_window(POPOVER) {
                        place(&handle, &window);
                    }
                });
                return;
            }
            _ => return,
        };
        let Some(state) = handle.try_state::<PopoverState>() else {
            return;
        };
        if *focused {
            state.lock().had_focus = true;
            return;
        }
        let closes = closes_on_focus_loss(state.lock().had_focus);
        if closes {
            state.lock().closed_on_focus_loss_at = Some(Instant::now());
            tracing::info!("popover_lost_focus");
            // Not from inside the window's own event handler: the runtime is still dispatching
            // this event to it. Asked from another thread, it lands on the event loop next.
            let handle = handle.clone();
            tauri::async_runtime::spawn(async move { close(&handle) });
        }
    });
    Ok(window)
}

/// Where the positioner puts the popover when the tray reported its icon: centred on the icon,
/// below it in a menu bar at the top of the screen (macOS), above it in a taskbar at the bottom
/// (Windows, which puts it below instead when the taskbar is at the top).
pub fn under_tray_icon(windows: bool) -> Position {
    if windows {
        Position::TrayCenter
    } else {
        Position::TrayBottomCenter
    }
}

fn place<R: Runtime>(app: &AppHandle<R>, window: &WebviewWindow<R>) {
    let known = app
        .try_state::<PopoverState>()
        .is_some_and(|s| s.lock().tray_rect_known);
    let placed = match placement(known) {
        Placement::UnderTrayIcon => window.move_window_constrained(under_tray_icon(cfg!(windows))),
        Placement::TopRight => window.move_window(Position::TopRight),
    };
    if let Err(error) = placed {
        tracing::warn!(%error, "cannot place the popover");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_popover_goes_above_a_windows_taskbar_icon_and_below_a_menu_bar_one() {
        // Windows' taskbar sits at the bottom: a popover below its icon would be off screen.
        assert!(matches!(under_tray_icon(true), Position::TrayCenter));
        // macOS's menu bar is at the top: below the icon, as a menu-bar popover opens.
        assert!(matches!(under_tray_icon(false), Position::TrayBottomCenter));
    }
}
