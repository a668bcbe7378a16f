//! The app's settings: loaded once, persisted on every change, and published to whoever applies
//! them (the notifier, the tray, the event bridge) through a `watch` channel, so a change in the
//! window takes effect at once without a restart.
//!
//! A missing or unreadable file gives the defaults (with a log line), never a failed start: the
//! settings are a convenience, the sessions are the product.
//!
//! Most subscribers read the settings as they go (the notifier, the tray, the bridge). Three
//! settings act on things outside the shell, and [`SettingsApplier`] carries them out: the session
//! TTL (on the engine's registry), how long history is kept (on the engine's history writer) and
//! "Launch at login" (the autostart plugin, see [`crate::autostart`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_tray::registry::SessionsRegistry;
use agent_tray::store::writer::HistoryRetention;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::ipc::AppSettings;

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("not starting this app at login: {reason}. Fix: {fix}")]
    InsecureProgram { reason: String, fix: String },
    #[error("the autostart plugin is not set up in this app")]
    NoPlugin,
    #[error("cannot change the login entry: {0}")]
    Plugin(String),
}

/// Turns "Launch at login" on or off. The app's is the autostart plugin's
/// (`crate::autostart::PluginLogin`); tests record the calls.
pub trait LoginSwitch: Send + Sync + 'static {
    fn set(&self, enabled: bool) -> Result<(), LoginError>;
}

#[derive(Debug)]
pub struct SettingsStore {
    path: PathBuf,
    current: watch::Sender<AppSettings>,
}

impl SettingsStore {
    pub fn load(path: PathBuf) -> Self {
        let settings = read(&path).unwrap_or_default();
        let (current, _) = watch::channel(settings);
        SettingsStore { path, current }
    }

    pub fn get(&self) -> AppSettings {
        self.current.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<AppSettings> {
        self.current.subscribe()
    }

    /// Writes the file (atomically, see [`agent_tray::atomic_file`]), then publishes.
    pub fn save(&self, settings: AppSettings) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(&settings)?;
        agent_tray::atomic_file::write(&self.path, text.as_bytes())?;
        tracing::info!(path = %self.path.display(), "settings_saved");
        self.current.send_replace(settings);
        Ok(())
    }
}

/// Carries out the settings that act outside the shell, each only when it changed.
pub struct SettingsApplier {
    registry: Arc<SessionsRegistry>,
    /// The TTL the engine started with, restored when the setting goes back to "default".
    default_ttl: Duration,
    /// What "Launch at login" turns on and off; None when this shell has no autostart plugin.
    login: Option<Box<dyn LoginSwitch>>,
    /// Where "Keep history" applies (the engine's history writer); None when none runs.
    history_retention: Option<HistoryRetention>,
    applied: Option<AppSettings>,
}

impl SettingsApplier {
    pub fn new(registry: Arc<SessionsRegistry>, login: Option<Box<dyn LoginSwitch>>) -> Self {
        let default_ttl = registry.session_ttl();
        SettingsApplier {
            registry,
            default_ttl,
            login,
            history_retention: None,
            applied: None,
        }
    }

    /// Applies "Keep history" to the engine's history writer too.
    pub fn with_history_retention(mut self, retention: Option<HistoryRetention>) -> Self {
        self.history_retention = retention;
        self
    }

    /// Applies `settings`. The first call is the app's start: the login entry is rewritten when
    /// the setting is on (so it names this program, wherever it now lives) and left alone when
    /// off; after that, each setting is applied when its value changes.
    pub fn apply(&mut self, settings: &AppSettings) {
        let before = self.applied.replace(settings.clone());
        let ttl_changed = match &before {
            None => true,
            Some(b) => b.session_ttl_secs != settings.session_ttl_secs,
        };
        if ttl_changed {
            let ttl = settings.session_ttl_secs.map_or(self.default_ttl, |secs| {
                Duration::from_secs(u64::from(secs))
            });
            self.registry.set_session_ttl(ttl);
        }
        let history_changed = match &before {
            None => settings.history_days.is_some(),
            Some(b) => b.history_days != settings.history_days,
        };
        if let (true, Some(retention)) = (history_changed, &self.history_retention) {
            retention.set(settings.history_days);
        }
        let login_changed = match &before {
            None => settings.launch_at_login,
            Some(b) => b.launch_at_login != settings.launch_at_login,
        };
        if let (true, Some(login)) = (login_changed, &self.login) {
            match login.set(settings.launch_at_login) {
                Ok(()) => tracing::info!(on = settings.launch_at_login, "launch_at_login"),
                Err(error) => tracing::warn!(%error, "cannot change launch at login"),
            }
        }
    }
}

/// Applies the current settings, then every change, until `token` is cancelled.
pub async fn apply_loop(
    mut settings: watch::Receiver<AppSettings>,
    mut applier: SettingsApplier,
    token: CancellationToken,
) {
    loop {
        let current = settings.borrow_and_update().clone();
        // A few small file operations at most; off the async workers all the same.
        applier = match tauri::async_runtime::spawn_blocking(move || {
            applier.apply(&current);
            applier
        })
        .await
        {
            Ok(applier) => applier,
            Err(error) => {
                tracing::error!(%error, "applying settings failed; later changes need a restart");
                return;
            }
        };
        tokio::select! {
            () = token.cancelled() => return,
            changed = settings.changed() => if changed.is_err() { return },
        }
    }
}

fn read(path: &Path) -> Option<AppSettings> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read settings; using defaults");
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(settings) => Some(settings),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "settings file is not valid; using defaults");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_settings_survive_a_restart_and_reach_subscribers() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("settings.json");
        let store = SettingsStore::load(path.clone());
        assert_eq!(
            store.get(),
            AppSettings::default(),
            "no file means defaults"
        );
        let mut rx = store.subscribe();
        let mut changed = store.get();
        changed.notifications.long_turn_secs = 90;
        changed.menu_bar_counts = false;
        store
            .save(changed.clone())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            rx.has_changed().unwrap_or(false),
            "subscribers see the change"
        );
        assert_eq!(*rx.borrow_and_update(), changed);
        assert_eq!(
            SettingsStore::load(path).get(),
            changed,
            "the file was written"
        );
    }

    #[test]
    fn keep_history_is_applied_to_the_engines_history_writer() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let registry = Arc::new(SessionsRegistry::new());
        let token = CancellationToken::new();
        let (task, retention) = tauri::async_runtime::block_on(async {
            agent_tray::store::writer::spawn_with_retention(
                registry.clone(),
                &Default::default(),
                agent_tray::store::writer::WriterConfig {
                    path: agent_tray::store::store_path(dir.path()),
                    retention_days: 90,
                },
                token.clone(),
            )
        });
        let mut applier =
            SettingsApplier::new(registry, None).with_history_retention(Some(retention.clone()));
        let mut settings = AppSettings::default();
        applier.apply(&settings);
        assert_eq!(retention.days(), 90, "unset: the engine's own");
        settings.history_days = Some(30);
        applier.apply(&settings);
        assert_eq!(retention.days(), 30);
        settings.history_days = None;
        applier.apply(&settings);
        assert_eq!(retention.days(), 90, "back to the default");
        token.cancel();
        let _ = tauri::async_runtime::block_on(task);
    }

    #[test]
    fn a_corrupt_settings_file_gives_the_defaults_instead_of_a_failed_start() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{not json").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(SettingsStore::load(path).get(), AppSettings::default());
    }
}
