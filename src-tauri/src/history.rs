//! Where the window's "Today" and "History" views and the tray's "waiting on you" line read the
//! history store from.
//!
//! The answers are the core's ([`agent_tray::store::views`]): this only says which file. The app
//! manages [`HistoryStorePath`] at start (its data folder's store); without it (a shell embedded
//! in a test that did not set one) the environment's data folder is used, like the CLI does.

use std::path::PathBuf;

use agent_tray::paths::TrayPaths;
use tauri::{AppHandle, Manager, Runtime};

/// The history store's file.
#[derive(Debug, Clone)]
pub struct HistoryStorePath(pub PathBuf);

/// The store file this app reads, if one can be named.
pub fn store_path<R: Runtime>(app: &AppHandle<R>) -> Option<PathBuf> {
    if let Some(path) = app.try_state::<HistoryStorePath>() {
        return Some(path.0.clone());
    }
    TrayPaths::from_env()
        .ok()
        .map(|paths| agent_tray::store::store_path(&paths.data_dir))
}

/// The tray menu's "Waiting on you today" line, read from the store now. A store that cannot be
/// read reads as "no history" (and is logged), never as a missing menu.
pub fn waiting_today_line<R: Runtime>(app: &AppHandle<R>) -> String {
    let secs = store_path(app).and_then(|path| {
        let tz = agent_tray::store::waiting::user_time_zone();
        agent_tray::store::views::waiting_on_you_today(&path, chrono::Utc::now(), tz)
            .map_err(|error| tracing::warn!(%error, "cannot read today's waiting time"))
            .ok()
    });
    agent_tray::store::views::waiting_today_label(secs)
}
