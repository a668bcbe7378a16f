//! The plans' rate-limit windows in the shell: the engine's book ([`agent_tray::plan_limits`]),
//! read by the snapshot, the tray menu and the alerts, and sent to the window when it changes.
//!
//! Managed only when an engine runs here; without one every reader sees no window (nothing is
//! invented). The window gets the whole list on each change: a handful of windows, changing at
//! most once a turn, so there is nothing to gain from deltas.

use std::sync::Arc;

use agent_tray::plan_limits::{PlanLimitsBook, PlanWindow};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio_util::sync::CancellationToken;

/// The event that carries the current windows to the window and the popover.
pub const EVENT_LIMITS: &str = "limits-changed";

/// The engine's book, as the shell holds it.
#[derive(Debug, Clone)]
pub struct LimitsState(pub Arc<PlanLimitsBook>);

/// Every window whose figure still holds (none without an engine).
pub fn current<R: Runtime>(app: &AppHandle<R>) -> Vec<PlanWindow> {
    app.try_state::<LimitsState>()
        .map(|state| state.0.current(chrono::Utc::now()))
        .unwrap_or_default()
}

/// Sends the windows to the web views on every change of the book, until cancelled.
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let Some(state) = app.try_state::<LimitsState>() else {
        return;
    };
    let book = state.0.clone();
    let mut changes = book.subscribe();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                changed = changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
            }
            let windows = book.current(chrono::Utc::now());
            if let Err(error) = app.emit(EVENT_LIMITS, windows) {
                tracing::warn!(%error, "cannot send the plan limits to the window");
            }
        }
    });
}
