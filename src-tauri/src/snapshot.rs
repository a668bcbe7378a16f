//! The window's whole state at once: what `get_snapshot` answers, and what a window or the
//! popover is created with (so its first paint needs no round trip). A module of its own so
//! the commands and the windows both use it without depending on each other.

use tauri::{AppHandle, Runtime};

use crate::ipc::{EngineStatus, Snapshot};
use crate::sessions::SessionsSource;
use crate::settings::SettingsStore;

/// The snapshot as `get_snapshot` answers it; the window is also created with one in it.
pub fn snapshot<R: Runtime>(
    app: &AppHandle<R>,
    source: &SessionsSource,
    settings: &SettingsStore,
    engine: &EngineStatus,
) -> Snapshot {
    let settings = settings.get();
    let rows = source.rows(&settings);
    Snapshot {
        seq: rows.seq,
        sessions: rows.rows,
        engine: engine.clone(),
        settings,
        version: app.package_info().version.to_string(),
        remotes: source.remote_links().all(),
        limits: crate::limits::current(app),
    }
}
