//! The one place where registry changes become Tauri events for the window.
//!
//! The window's rows follow rules (watched agents, "Ended recently" capped, dismissed endings
//! hidden) that the core's `window_rows` holds. Translating each registry change into an event
//! on its own applied none of them, so the window drifted from what a snapshot showed. Instead,
//! after any change the bridge computes the rows again, exactly as the snapshot command does
//! ([`SessionsSource::rows`]), and sends the difference from the rows it sent before: an
//! `Upsert` for each new or changed row, a `Removed` for each row gone.
//!
//! Every event carries the registry sequence number the rows were computed at, as snapshots
//! do, so the window can drop whatever is older than what it shows.
//!
//! It wakes on the registry's change sequence (a watch: a burst of changes is one computation,
//! and it can never fall behind), on settings changes and on dismissals, and once a minute so
//! that endings older than a day leave even when nothing else happens. It is written against an
//! `emit` closure rather than an app handle, so tests drive it without a window.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use agent_tray::tray_model::SessionView;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::ipc::{AppSettings, SessionEvent, EVENT_SESSIONS};
use crate::sessions::SessionsSource;

/// How often the rows are recomputed when nothing changes (for endings ageing out).
const AGE_OUT_CHECK: Duration = Duration::from_secs(60);

/// The events that take a window from the rows `shown` to `rows`, numbered `seq`.
pub fn diff(
    shown: &HashMap<String, SessionView>,
    rows: &[SessionView],
    seq: u64,
) -> Vec<SessionEvent> {
    let now_ids: HashSet<&str> = rows.iter().map(|v| v.session.session_id.as_str()).collect();
    let mut gone: Vec<&String> = shown
        .keys()
        .filter(|id| !now_ids.contains(id.as_str()))
        .collect();
    gone.sort();
    let mut events: Vec<SessionEvent> = gone
        .into_iter()
        .map(|id| SessionEvent::Removed {
            seq,
            session_id: id.clone(),
        })
        .collect();
    events.extend(
        rows.iter()
            .filter(|v| {
                shown
                    .get(&v.session.session_id)
                    .is_none_or(|old| !same_on_screen(old, v))
            })
            .map(|v| SessionEvent::Upsert {
                seq,
                view: Box::new(v.clone()),
            }),
    );
    events
}

/// Equal but for `last_seen`, which moves with every sign of life and is not shown: sending a
/// row for it alone would flood the window while agents are busy.
fn same_on_screen(a: &SessionView, b: &SessionView) -> bool {
    if a.session.last_seen == b.session.last_seen {
        return a == b;
    }
    let mut b = b.clone();
    b.session.last_seen = a.session.last_seen;
    *a == b
}

fn by_id(rows: Vec<SessionView>) -> HashMap<String, SessionView> {
    rows.into_iter()
        .map(|v| (v.session.session_id.clone(), v))
        .collect()
}

/// The bridge: starts from the rows as they are when called (synchronously, so no change
/// between this call and the task's first poll is missed), then runs until `token` is cancelled
/// or the registry goes away.
pub fn bridge(
    source: Arc<SessionsSource>,
    mut settings: watch::Receiver<AppSettings>,
    emit: impl Fn(SessionEvent),
    token: CancellationToken,
) -> impl std::future::Future<Output = ()> {
    let mut changes = source.registry().watch_change_seq();
    let mut dismissals = source.watch_dismissals();
    changes.borrow_and_update();
    dismissals.borrow_and_update();
    let current = settings.borrow_and_update().clone();
    let mut shown = by_id(source.rows(&current).rows);
    async move {
        let mut age_out = tokio::time::interval(AGE_OUT_CHECK);
        age_out.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        age_out.tick().await; // the first tick is immediate
        loop {
            let woke = tokio::select! {
                () = token.cancelled() => break,
                r = changes.changed() => r.is_ok(),
                r = settings.changed() => r.is_ok(),
                r = dismissals.changed() => r.is_ok(),
                _ = age_out.tick() => true,
            };
            if !woke {
                break;
            }
            changes.borrow_and_update();
            dismissals.borrow_and_update();
            let current = settings.borrow_and_update().clone();
            let rows = source.rows(&current);
            for event in diff(&shown, &rows.rows, rows.seq) {
                emit(event);
            }
            shown = by_id(rows.rows);
        }
    }
}

/// Starts the bridge for the app's main window.
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let source = app.state::<Arc<SessionsSource>>().inner().clone();
    let settings = app.state::<crate::settings::SettingsStore>().subscribe();
    let handle = app.clone();
    let emit = move |event: SessionEvent| {
        if let Err(error) = handle.emit(EVENT_SESSIONS, event) {
            tracing::warn!(%error, "cannot send an event to the window");
        }
    };
    tauri::async_runtime::spawn(bridge(source, settings, emit, token));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agent_tray::model::{Agent, Session, SessionState};

    fn view(id: &str, state: SessionState) -> SessionView {
        SessionView::of(&Session::new(id, Agent::Claude, state, chrono::Utc::now()))
    }

    #[test]
    fn the_difference_upserts_new_and_changed_rows_and_removes_gone_ones() {
        let shown = by_id(vec![
            view("same", SessionState::Idle),
            view("moves", SessionState::Working),
            view("gone", SessionState::Ended),
        ]);
        let mut same = shown["same"].clone();
        same.session.last_seen += chrono::Duration::seconds(5);
        let rows = vec![
            same,
            view("moves", SessionState::WaitingForInput),
            view("new", SessionState::Starting),
        ];
        let events = diff(&shown, &rows, 7);
        let summary: Vec<(String, u64)> = events
            .iter()
            .map(|e| match e {
                SessionEvent::Upsert { seq, view } => {
                    (format!("+{}", view.session.session_id), *seq)
                }
                SessionEvent::Removed { seq, session_id } => (format!("-{session_id}"), *seq),
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("-gone".into(), 7),
                ("+moves".into(), 7),
                ("+new".into(), 7)
            ],
            "a row whose last_seen alone moved is not sent"
        );
        assert!(diff(&by_id(rows.clone()), &rows, 8).is_empty());
    }
}
