//! Hook drift in the app: one alert when the hooks `install` wrote vanish or change, with a
//! "Repair" button, and, when the user opted in, the repair done at once.
//!
//! The noticing is the core's (the engine's watcher, [`agent_tray::hook_drift`]); which drifts
//! to announce is the core's [`DriftAlerts`] (once per episode). Here: feed it the engine's
//! health, show what it returns, and run the repair, which is the core's too (the recorded
//! install's own merge). The repair runs on a blocking thread, never on the loop.

use std::path::PathBuf;
use std::sync::Arc;

use agent_tray::hook_drift::{self, DriftAlerts, HookHealth};
use agent_tray::model::Agent;
use tauri::{AppHandle, Runtime};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::ipc::AppSettings;

/// The action of the alert's "Repair" button.
pub const ACTION_REPAIR: &str = "repair";

/// Where announcements go: the desktop, or a test's list.
pub trait DriftSink: Send + 'static {
    /// `message` says what happened ("Claude Code hooks were removed from …"); `repaired` says
    /// whether the automatic repair already put them back.
    fn announce(&self, agent: Agent, message: String, repaired: bool);
}

/// Runs the repair for `agent` from the install record in `data_dir`, logging the outcome.
pub fn repair_now(data_dir: &std::path::Path, agent: Agent) -> bool {
    match hook_drift::repair(data_dir, agent) {
        Ok(files) => {
            tracing::info!(%agent, ?files, "hook_drift_repaired");
            true
        }
        Err(error) => {
            tracing::warn!(%agent, %error, "hook_drift_repair_failed");
            false
        }
    }
}

/// Announces each new drift once; repairs first when the setting asks for it.
pub async fn alert_loop(
    mut health: watch::Receiver<Vec<HookHealth>>,
    settings: watch::Receiver<AppSettings>,
    data_dir: PathBuf,
    sink: impl DriftSink,
    token: CancellationToken,
) {
    let mut alerts = DriftAlerts::default();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    loop {
        let current = health.borrow_and_update().clone();
        for drifted in alerts.decide(&current) {
            let Some(message) = drifted.drift_message(home.as_deref()) else {
                continue;
            };
            let repaired = if settings.borrow().repair_hooks_automatically {
                let dir = data_dir.clone();
                let agent = drifted.agent;
                tauri::async_runtime::spawn_blocking(move || repair_now(&dir, agent))
                    .await
                    .unwrap_or(false)
            } else {
                false
            };
            tracing::info!(agent = %drifted.agent, %message, repaired, "hook_drift_alert");
            sink.announce(drifted.agent, message, repaired);
        }
        tokio::select! {
            () = token.cancelled() => break,
            changed = health.changed() => if changed.is_err() { break },
        }
    }
}

/// Shows drift alerts on the desktop, each with a "Repair" button while not repaired.
pub struct DesktopDriftAlerts {
    app_name: String,
    data_dir: PathBuf,
}

impl DriftSink for DesktopDriftAlerts {
    fn announce(&self, agent: Agent, message: String, repaired: bool) {
        let app_name = self.app_name.clone();
        let data_dir = self.data_dir.clone();
        // Off the loop: showing talks D-Bus, and waiting for the button blocks until it is
        // pressed or the alert closes. One alert per drift episode, so one thread each.
        let spawned = std::thread::Builder::new()
            .name("drift-alert".into())
            .spawn(move || show(&app_name, agent, &message, repaired, &data_dir));
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot show the hook drift alert");
        }
    }
}

fn show(app_name: &str, agent: Agent, message: &str, repaired: bool, data_dir: &std::path::Path) {
    let body = if repaired {
        "Agent Tray put them back (automatic repair is on)."
    } else {
        "Sessions of this agent no longer reach the tray. Repair puts them back, as Install hooks does."
    };
    let mut notification = notify_rust::Notification::new();
    notification.appname(app_name).summary(message).body(body);
    #[cfg(windows)]
    notification.app_id(crate::notifier::APP_USER_MODEL_ID);
    #[cfg(all(unix, not(target_os = "macos")))]
    if !repaired {
        notification.action(ACTION_REPAIR, "Repair");
    }
    match notification.show() {
        #[cfg(all(unix, not(target_os = "macos")))]
        Ok(handle) => {
            let dir = data_dir.to_path_buf();
            handle.wait_for_action(move |action| {
                if action == ACTION_REPAIR {
                    repair_now(&dir, agent);
                }
            });
        }
        // No alert actions here (macOS, Windows): the tray menu's "Repair" line is the way.
        #[cfg(not(all(unix, not(target_os = "macos"))))]
        Ok(_) => {
            let _ = (data_dir, agent);
        }
        Err(error) => tracing::warn!(%error, "cannot show the hook drift alert"),
    }
}

/// The engine's hook health and the install record's folder, as the tray menu reads them: one
/// "Repair" line per drifted agent, built from the watch's current value when the menu is built.
pub struct DriftWatch {
    pub health: watch::Receiver<Vec<HookHealth>>,
    pub data_dir: PathBuf,
}

/// The id prefix of the tray's drift lines: `repair-hooks:<agent>`.
pub const REPAIR_ID_PREFIX: &str = "repair-hooks:";

/// The tray's lines for `health`: (menu id, text), one per drifted agent, e.g.
/// "⚠ Claude Code hooks removed — Repair".
pub fn tray_lines(health: &[HookHealth]) -> Vec<(String, String)> {
    health
        .iter()
        .filter(|h| h.drifted)
        .map(|h| {
            let what = match h.drift {
                Some(hook_drift::DriftKind::Changed) => "changed",
                _ => "removed",
            };
            (
                format!("{REPAIR_ID_PREFIX}{}", h.agent),
                format!(
                    "⚠ {} hooks {what} — Repair",
                    hook_drift::agent_name(h.agent)
                ),
            )
        })
        .collect()
}

/// The agent a tray line's id names, if `id` is one of [`tray_lines`]'.
pub fn repair_target(id: &str) -> Option<Agent> {
    id.strip_prefix(REPAIR_ID_PREFIX)?.parse().ok()
}

/// Starts the loop on the engine's hook health.
pub fn spawn<R: Runtime>(
    app: &AppHandle<R>,
    health: watch::Receiver<Vec<HookHealth>>,
    data_dir: PathBuf,
    token: CancellationToken,
) {
    use tauri::Manager;
    let settings = app.state::<crate::settings::SettingsStore>().subscribe();
    let sink = DesktopDriftAlerts {
        app_name: app.package_info().name.clone(),
        data_dir: data_dir.clone(),
    };
    app.manage(DriftWatch {
        health: health.clone(),
        data_dir: data_dir.clone(),
    });
    // The tray shows the drift too: each change of the health wakes its renderer.
    let mut tray_health = health.clone();
    let opening = app
        .try_state::<Arc<crate::menu_opening::MenuOpening>>()
        .map(|o| o.inner().clone());
    let tray_token = token.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            if let Some(opening) = &opening {
                opening.notify();
            }
            tokio::select! {
                () = tray_token.cancelled() => break,
                changed = tray_health.changed() => if changed.is_err() { break },
            }
        }
    });
    tauri::async_runtime::spawn(alert_loop(health, settings, data_dir, sink, token));
}

/// A sink that keeps what it was given (tests).
#[derive(Clone, Default)]
pub struct RecordedDrifts(pub Arc<std::sync::Mutex<Vec<(Agent, String, bool)>>>);

impl DriftSink for RecordedDrifts {
    fn announce(&self, agent: Agent, message: String, repaired: bool) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((agent, message, repaired));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use agent_tray::install::Action;
    use std::time::Duration;

    /// A recorded Claude install in a temp world, its settings then rewritten without our hooks.
    fn drifted_world(tmp: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
        let dir = tmp.join("claude");
        let data = tmp.join("tray");
        std::fs::create_dir_all(&dir).unwrap();
        let bin = PathBuf::from("/opt/at/agent-tray");
        let file = dir.join("settings.json");
        let plan =
            agent_tray::agents::claude::install::plan_file(&file, &bin, Action::Install).unwrap();
        std::fs::write(&file, plan.changes[0].new.as_deref().unwrap()).unwrap();
        hook_drift::note(
            &data,
            Action::Install,
            hook_drift::InstalledHooks {
                agent: Agent::Claude,
                dir: dir.clone(),
                bin: bin.clone(),
                trust: false,
                at: chrono::Utc::now(),
            },
        )
        .unwrap();
        std::fs::write(&file, "{\n  \"model\": \"sonnet\"\n}\n").unwrap();
        (dir, data, bin)
    }

    async fn recorded_after(sink: &RecordedDrifts, n: usize) -> Vec<(Agent, String, bool)> {
        for _ in 0..100 {
            let got = sink.0.lock().unwrap().clone();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        sink.0.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn a_drift_alerts_once_and_repairs_itself_only_when_the_user_opted_in() {
        for auto in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            let (dir, data, bin) = drifted_world(tmp.path());
            let h = hook_drift::check(Agent::Claude, &dir, &bin, false, true);
            assert!(h.drifted);
            let (health_tx, health_rx) = watch::channel(vec![h.clone()]);
            let settings = AppSettings {
                repair_hooks_automatically: auto,
                ..AppSettings::default()
            };
            let (_settings_tx, settings_rx) = watch::channel(settings);
            let sink = RecordedDrifts::default();
            let token = CancellationToken::new();
            let task = tokio::spawn(alert_loop(
                health_rx,
                settings_rx,
                data.clone(),
                sink.clone(),
                token.clone(),
            ));
            let got = recorded_after(&sink, 1).await;
            assert_eq!(got.len(), 1, "{got:?}");
            assert!(
                got[0].1.contains("Claude Code hooks were removed from"),
                "{got:?}"
            );
            assert_eq!(got[0].2, auto, "repaired only when opted in");
            // The same drift published again (another write of the file): no second alert.
            health_tx.send_modify(|v| v[0].config_file = v[0].config_file.clone());
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(sink.0.lock().unwrap().len(), 1, "alerted once");
            let now = hook_drift::check(Agent::Claude, &dir, &bin, false, true);
            assert_eq!(
                !now.drifted, auto,
                "the file was repaired iff auto: {now:?}"
            );
            if auto {
                let text = std::fs::read_to_string(dir.join("settings.json")).unwrap();
                assert!(text.starts_with("{\n  \"model\": \"sonnet\""), "{text}");
            }
            token.cancel();
            task.await.unwrap();
        }
    }
}
