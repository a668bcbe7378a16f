//! The one place where registry changes become Tauri events for the window.
//!
//! The bridge subscribes to the registry's bounded change stream and turns each change into a
//! typed [`SessionEvent`]. It is written against an `emit` closure rather than an app handle, so
//! tests drive it without a window. When it falls behind the stream (the registry keeps at most a
//! fixed number of changes per subscriber), it tells the UI to fetch a fresh snapshot instead of
//! pretending nothing was lost.

use std::sync::Arc;

use agent_tray::registry::SessionChange;
use agent_tray::tray_model::SessionView;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::ipc::{AppSettings, SessionEvent, EVENT_RESYNC, EVENT_SESSIONS};
use crate::sessions::SessionsSource;

/// What the bridge sends to the window.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    Session(SessionEvent),
    Resync,
}

/// The event for one change, or None when the window has nothing to do.
pub fn to_event(
    change: &SessionChange,
    source: &SessionsSource,
    settings: &AppSettings,
) -> Option<SessionEvent> {
    match change {
        SessionChange::Added { session } | SessionChange::Changed { session, .. } => source
            .shows(session, settings)
            .then(|| SessionEvent::Upsert {
                view: Box::new(SessionView::of(session)),
            }),
        // A session leaving the live list after its linger stays under "Ended recently" until
        // dismissed, so only a removal of something that never ended reaches the window.
        SessionChange::Removed { session_id } => match source.find(session_id) {
            Some(_) => None,
            None => Some(SessionEvent::Removed {
                session_id: session_id.clone(),
            }),
        },
    }
}

/// Runs until `token` is cancelled or the registry goes away.
pub async fn bridge(
    mut changes: broadcast::Receiver<SessionChange>,
    source: Arc<SessionsSource>,
    settings: watch::Receiver<AppSettings>,
    emit: impl Fn(Outgoing),
    token: CancellationToken,
) {
    loop {
        let change = tokio::select! {
            () = token.cancelled() => break,
            change = changes.recv() => change,
        };
        match change {
            Ok(change) => {
                let settings = settings.borrow().clone();
                if let Some(event) = to_event(&change, &source, &settings) {
                    emit(Outgoing::Session(event));
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "window events fell behind; asking the UI to resync");
                emit(Outgoing::Resync);
            }
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
}

/// Starts the bridge for the app's main window.
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let source = app.state::<Arc<SessionsSource>>().inner().clone();
    let settings = app.state::<crate::settings::SettingsStore>().subscribe();
    let changes = source.registry().subscribe();
    let handle = app.clone();
    let emit = move |out: Outgoing| {
        let result = match out {
            Outgoing::Session(event) => handle.emit(EVENT_SESSIONS, event),
            Outgoing::Resync => handle.emit(EVENT_RESYNC, ()),
        };
        if let Err(error) = result {
            tracing::warn!(%error, "cannot send an event to the window");
        }
    };
    tauri::async_runtime::spawn(bridge(changes, source, settings, emit, token));
}
