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
//! and it can never fall behind), on settings changes, on dismissals, when a way in to a session
//! opens or closes (a row's reply field and Stop follow it), and once a minute so
//! that endings older than a day leave even when nothing else happens. It is written against an
//! `emit` closure rather than an app handle, so tests drive it without a window.
//!
//! **Only while the window exists.** Events emitted with no window reach nobody, and the tray
//! spends its day with the window closed: then the bridge waits for the window alone (no
//! minute clock, no computation per hook). A window created later loads a snapshot, and the
//! bridge, woken by it, sends the difference from what it last sent, so nothing is missed
//! (events carry the sequence number; the window drops what is older than its snapshot).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use agent_tray::model::SessionKey;
use agent_tray::tray_model::SessionView;
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::ipc::{AppSettings, SessionEvent, EVENT_SESSIONS};
use crate::sessions::SessionsSource;

/// How often the rows are recomputed when nothing changes (for endings ageing out).
const AGE_OUT_CHECK: Duration = Duration::from_secs(60);

/// The events that take a window from the rows `shown` to `rows`, numbered `seq`. Rows are
/// keyed by host and id: the same id on two hosts is two rows.
pub fn diff(
    shown: &HashMap<SessionKey, SessionView>,
    rows: &[SessionView],
    seq: u64,
) -> Vec<SessionEvent> {
    let now_keys: HashSet<SessionKey> = rows.iter().map(|v| v.session.key()).collect();
    let mut gone: Vec<&SessionKey> = shown
        .keys()
        .filter(|key| !now_keys.contains(*key))
        .collect();
    gone.sort();
    let mut events: Vec<SessionEvent> = gone
        .into_iter()
        .map(|key| SessionEvent::Removed {
            seq,
            session_id: key.session_id.clone(),
            host: key.host.clone(),
        })
        .collect();
    events.extend(
        rows.iter()
            .filter(|v| {
                shown
                    .get(&v.session.key())
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

fn by_key(rows: Vec<SessionView>) -> HashMap<SessionKey, SessionView> {
    rows.into_iter().map(|v| (v.session.key(), v)).collect()
}

/// The bridge: starts from the rows as they are when called (synchronously, so no change
/// between this call and the task's first poll is missed), then runs until `token` is cancelled
/// or the registry goes away.
pub fn bridge(
    source: Arc<SessionsSource>,
    mut settings: watch::Receiver<AppSettings>,
    mut window_open: watch::Receiver<bool>,
    emit: impl Fn(SessionEvent),
    token: CancellationToken,
) -> impl std::future::Future<Output = ()> {
    let mut changes = source.registry().watch_change_seq();
    let mut dismissals = source.watch_dismissals();
    let mut ways_in = source.watch_ways_in();
    changes.borrow_and_update();
    dismissals.borrow_and_update();
    ways_in.borrow_and_update();
    let current = settings.borrow_and_update().clone();
    let mut shown = by_key(source.rows(&current).rows);
    async move {
        // The minute clock exists only while the window does: a timer left armed would wake
        // this task even when nothing selects on it.
        let mut age_out: Option<tokio::time::Interval> = None;
        loop {
            if !*window_open.borrow_and_update() {
                age_out = None;
                tokio::select! {
                    () = token.cancelled() => break,
                    r = window_open.changed() => if r.is_err() { break },
                }
                continue;
            }
            let clock = match &mut age_out {
                Some(clock) => clock,
                None => {
                    let start = tokio::time::Instant::now() + AGE_OUT_CHECK;
                    let mut clock = tokio::time::interval_at(start, AGE_OUT_CHECK);
                    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                    age_out.insert(clock)
                }
            };
            let woke = tokio::select! {
                () = token.cancelled() => break,
                r = changes.changed() => r.is_ok(),
                r = settings.changed() => r.is_ok(),
                r = dismissals.changed() => r.is_ok(),
                r = ways_in.changed() => r.is_ok(),
                // A closed channel (no presence to follow) disables this branch.
                Ok(()) = window_open.changed() => true,
                _ = clock.tick() => true,
            };
            if !woke {
                break;
            }
            changes.borrow_and_update();
            dismissals.borrow_and_update();
            ways_in.borrow_and_update();
            let current = settings.borrow_and_update().clone();
            let rows = source.rows(&current);
            for event in diff(&shown, &rows.rows, rows.seq) {
                emit(event);
            }
            shown = by_key(rows.rows);
        }
    }
}

/// Starts the bridge for the app's main window.
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let source = app.state::<Arc<SessionsSource>>().inner().clone();
    let settings = app.state::<crate::settings::SettingsStore>().subscribe();
    let window_open = match app.try_state::<crate::window::WindowPresence>() {
        Some(presence) => {
            if let Some(window) = app.get_webview_window(crate::window::MAIN) {
                crate::window::note_presence(app, &window);
            }
            presence.subscribe()
        }
        // A shell set up without the window's presence (a test's): always open.
        None => watch::channel(true).1,
    };
    let handle = app.clone();
    let emit = move |event: SessionEvent| {
        if let Err(error) = handle.emit(EVENT_SESSIONS, event) {
            tracing::warn!(%error, "cannot send an event to the window");
        }
    };
    tauri::async_runtime::spawn(bridge(source, settings, window_open, emit, token));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agent_tray::model::{Agent, Session, SessionState};
    use std::time::Duration;

    fn view(id: &str, state: SessionState) -> SessionView {
        SessionView::of(&Session::new(id, Agent::Claude, state, chrono::Utc::now()))
    }

    /// Counts how often the executor polls the bridge: every wakeup is one poll.
    struct CountPolls<F> {
        inner: std::pin::Pin<Box<F>>,
        polls: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<F: std::future::Future> std::future::Future for CountPolls<F> {
        type Output = F::Output;
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<F::Output> {
            self.polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.as_mut().poll(cx)
        }
    }

    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_bridge_never_wakes_while_the_window_is_closed_and_catches_up_when_it_opens() {
        // A tray app's day: the window closed for hours while agents work. Time is paused, so
        // any timer the bridge armed would fire as the test sleeps its "ten minutes".
        use std::sync::atomic::Ordering::SeqCst;
        let registry = Arc::new(agent_tray::registry::SessionsRegistry::new());
        let source = Arc::new(SessionsSource::new(registry.clone(), Default::default()));
        let (_settings_tx, settings) = watch::channel(AppSettings::default());
        let (open_tx, open) = watch::channel(false);
        let sent: Arc<std::sync::Mutex<Vec<SessionEvent>>> = Arc::default();
        let sink = sent.clone();
        let emit = move |e| sink.lock().unwrap().push(e);
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let token = CancellationToken::new();
        let task = tokio::spawn(CountPolls {
            inner: Box::pin(bridge(source, settings, open, emit, token.clone())),
            polls: polls.clone(),
        });
        settle().await;
        let asleep = polls.load(SeqCst);
        for id in ["a", "b", "c"] {
            let obs = agent_tray::model::Observation::new(
                id,
                Agent::Claude,
                agent_tray::model::EventKind::UserPromptSubmit,
                chrono::Utc::now(),
            );
            registry.observe(obs).unwrap();
        }
        tokio::time::sleep(Duration::from_secs(600)).await;
        settle().await;
        assert_eq!(
            polls.load(SeqCst),
            asleep,
            "woke while the window was closed"
        );
        assert!(sent.lock().unwrap().is_empty());

        // The window opens: the bridge wakes and sends what changed meanwhile.
        open_tx.send(true).unwrap();
        settle().await;
        assert_eq!(
            sent.lock().unwrap().len(),
            3,
            "the three sessions, caught up"
        );
        // Positive control for the clock: while open, it ticks once a minute.
        let before = polls.load(SeqCst);
        tokio::time::sleep(AGE_OUT_CHECK + Duration::from_secs(1)).await;
        settle().await;
        assert!(
            polls.load(SeqCst) > before,
            "the minute clock never ran while open"
        );

        // Closed again: silent again.
        open_tx.send(false).unwrap();
        settle().await;
        let asleep = polls.load(SeqCst);
        tokio::time::sleep(Duration::from_secs(600)).await;
        settle().await;
        assert_eq!(polls.load(SeqCst), asleep, "woke after the window closed");
        token.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_way_in_that_opens_or_closes_updates_the_row_without_a_session_change() {
        let registry = Arc::new(agent_tray::registry::SessionsRegistry::new());
        let talk = Arc::new(agent_tray::talk_back::TalkInboxes::default());
        let reach = crate::sessions::EngineReach {
            talk: talk.clone(),
            ..Default::default()
        };
        let source = Arc::new(SessionsSource::new(registry.clone(), reach));
        let obs = agent_tray::model::Observation::new(
            "s1",
            Agent::Claude,
            agent_tray::model::EventKind::Stop,
            chrono::Utc::now(),
        );
        registry.observe(obs).unwrap();
        let (_settings_tx, settings) = watch::channel(AppSettings::default());
        let (_open_tx, open) = watch::channel(true);
        let sent: Arc<std::sync::Mutex<Vec<SessionEvent>>> = Arc::default();
        let sink = sent.clone();
        let emit = move |e| sink.lock().unwrap().push(e);
        let token = CancellationToken::new();
        let task = tokio::spawn(bridge(source, settings, open, emit, token.clone()));
        settle().await;
        sent.lock().unwrap().clear();
        let can_send = |sent: &[SessionEvent]| match sent.last() {
            Some(SessionEvent::Upsert { view, .. }) => Some(view.session.can_send),
            _ => None,
        };
        let ids = Arc::new(std::sync::Mutex::new(std::collections::HashSet::from([
            "s1".to_string(),
        ])));
        let (guard, _orders) = talk.open(
            agent_tray::talk_back::TalkRoute::AppServer,
            agent_tray::talk_back::Reach::Sessions(ids),
        );
        settle().await;
        assert_eq!(
            can_send(&sent.lock().unwrap()),
            Some(true),
            "the reply field comes"
        );
        drop(guard);
        settle().await;
        assert_eq!(
            can_send(&sent.lock().unwrap()),
            Some(false),
            "and goes with the way in"
        );
        token.cancel();
        task.await.unwrap();
    }

    #[test]
    fn the_difference_upserts_new_and_changed_rows_and_removes_gone_ones() {
        let shown = by_key(vec![
            view("same", SessionState::Idle),
            view("moves", SessionState::Working),
            view("gone", SessionState::Ended),
        ]);
        let mut same = shown[&view("same", SessionState::Idle).session.key()].clone();
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
                SessionEvent::Removed {
                    seq, session_id, ..
                } => (format!("-{session_id}"), *seq),
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
        assert!(diff(&by_key(rows.clone()), &rows, 8).is_empty());
    }

    #[test]
    fn a_remote_row_with_a_local_rows_id_is_a_row_of_its_own_and_leaves_alone() {
        // A dev box announces a session whose id is also a local session's: the window gets two
        // rows, and when the remote one goes, its removal names its host, so the local row stays.
        let local = view("same", SessionState::Working);
        let mut remote = view("same", SessionState::Idle);
        remote.session.host = Some("devbox".into());
        let events = diff(&HashMap::new(), &[local.clone(), remote.clone()], 3);
        assert_eq!(events.len(), 2, "two rows sent: {events:?}");
        let shown = by_key(vec![local.clone(), remote]);
        assert_eq!(shown.len(), 2, "two rows shown");
        let events = diff(&shown, &[local], 4);
        assert_eq!(
            events,
            [SessionEvent::Removed {
                seq: 4,
                session_id: "same".into(),
                host: Some("devbox".into()),
            }],
            "only the remote row leaves"
        );
    }
}
