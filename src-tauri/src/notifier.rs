//! Executes the notification policy's decisions as desktop alerts (notify-rust).
//!
//! The decision is the core's ([`agent_tray::notify_policy`]); this module only feeds it the
//! registry's changes and shows what it returns. Showing happens on one dedicated thread behind a
//! small bounded queue: a D-Bus call to a slow or absent notification server must never delay the
//! registry, the tray or the window. With no notification server at all, the failure is logged
//! once and the app carries on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use agent_tray::notify_policy::{Alert, NotifyPolicy};
use agent_tray::registry::SessionChange;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::ipc::AppSettings;

/// Alerts waiting to be shown. A burst larger than this (dozens of sessions dying at once) is
/// not worth a wall of popups: the extra alerts are dropped with a log line.
const QUEUE: usize = 16;

/// Where decided alerts go: the desktop, or a test's list.
pub trait AlertSink: Send + 'static {
    fn deliver(&self, alert: Alert);
}

/// Feeds each change to the policy and hands what it decides to `sink`.
pub async fn decide_loop(
    mut changes: broadcast::Receiver<SessionChange>,
    mut settings: watch::Receiver<AppSettings>,
    sink: impl AlertSink,
    token: CancellationToken,
) {
    let mut current = settings.borrow_and_update().clone();
    let mut policy = NotifyPolicy::new(current.notifications.clone());
    loop {
        let change = tokio::select! {
            () = token.cancelled() => break,
            Ok(()) = settings.changed() => {
                current = settings.borrow_and_update().clone();
                policy.set_settings(current.notifications.clone());
                continue;
            }
            change = changes.recv() => change,
        };
        let (old_state, session) = match change {
            Ok(SessionChange::Added { session }) => (None, session),
            Ok(SessionChange::Changed { old_state, session }) => (Some(old_state), session),
            Ok(SessionChange::Removed { .. }) => continue,
            // Missed changes cannot be alerted on after the fact; an old alert is noise anyway.
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "notifier fell behind; those changes raise no alerts"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => break,
        };
        if !current.watches(session.agent) {
            continue;
        }
        if let Some(alert) = policy.decide(old_state, &session, chrono::Utc::now()) {
            tracing::info!(session_id = %alert.session_id, kind = ?alert.kind, summary = %alert.summary, "alert");
            sink.deliver(alert);
        }
    }
}

/// Shows alerts on the desktop from one background thread.
pub struct DesktopAlerts {
    queue: mpsc::SyncSender<Alert>,
}

impl DesktopAlerts {
    pub fn start(app_name: String) -> Self {
        let (queue, rx) = mpsc::sync_channel::<Alert>(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("desktop-alerts".into())
            .spawn(move || {
                let reported = AtomicBool::new(false);
                for alert in rx {
                    show(&app_name, &alert, &reported);
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start the alert thread; no desktop alerts");
        }
        DesktopAlerts { queue }
    }
}

impl AlertSink for DesktopAlerts {
    fn deliver(&self, alert: Alert) {
        match self.queue.try_send(alert) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(alert)) => {
                tracing::warn!(session_id = %alert.session_id, "alert queue full; dropping this alert");
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {}
        }
    }
}

fn show(app_name: &str, alert: &Alert, reported: &AtomicBool) {
    let result = notify_rust::Notification::new()
        .appname(app_name)
        .summary(&alert.summary)
        .body(&alert.body)
        .show();
    match result {
        Ok(_) => {}
        // Logged once: with no notification server every alert fails the same way.
        Err(error) if !reported.swap(true, Ordering::Relaxed) => {
            tracing::warn!(%error, "cannot show desktop alerts (no notification server?); alerts are off until one appears");
        }
        Err(error) => tracing::debug!(%error, "alert not shown"),
    }
}

/// Starts the policy loop and the alert thread for the app.
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let source = app.state::<Arc<crate::sessions::SessionsSource>>();
    let changes = source.registry().subscribe();
    let settings = app.state::<crate::settings::SettingsStore>().subscribe();
    let sink = DesktopAlerts::start(app.package_info().name.clone());
    tauri::async_runtime::spawn(decide_loop(changes, settings, sink, token));
}
