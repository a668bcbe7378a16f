//! The app's settings: loaded once, persisted on every change, and published to whoever applies
//! them (the notifier, the tray, the event bridge) through a `watch` channel, so a change in the
//! window takes effect at once without a restart.
//!
//! A missing or unreadable file gives the defaults (with a log line), never a failed start: the
//! settings are a convenience, the sessions are the product.

use std::path::{Path, PathBuf};

use tokio::sync::watch;

use crate::ipc::AppSettings;

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

    /// Writes the file (atomically: a temp file renamed over it), then publishes.
    pub fn save(&self, settings: AppSettings) -> anyhow::Result<()> {
        use anyhow::Context;
        let text = serde_json::to_string_pretty(&settings)?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path)
            .with_context(|| format!("replacing {}", self.path.display()))?;
        tracing::info!(path = %self.path.display(), "settings_saved");
        self.current.send_replace(settings);
        Ok(())
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
    fn a_corrupt_settings_file_gives_the_defaults_instead_of_a_failed_start() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{not json").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(SettingsStore::load(path).get(), AppSettings::default());
    }
}
