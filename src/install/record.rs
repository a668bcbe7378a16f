//! The install record: which agent's folder `install` wrote hooks into, with which binary, so
//! hook drift ([`crate::hook_drift`]) can tell "removed by someone" from "never installed".
//!
//! It lives with the installer, which writes it, rather than with hook drift, which reads it: the
//! installer then needs nothing of hook drift, and hook drift (above it) reads it from here.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Action;
use crate::model::Agent;

/// The install record, in the data folder.
pub const RECORD_FILE: &str = "installed-hooks.json";
/// One agent's recorded install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledHooks {
    pub agent: Agent,
    /// The agent's folder (`CLAUDE_CONFIG_DIR` / `~/.claude`, `CODEX_HOME` / `~/.codex`).
    pub dir: PathBuf,
    /// The binary the hooks run.
    pub bin: PathBuf,
    /// Codex: whether `--trust` was asked.
    #[serde(default)]
    pub trust: bool,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RecordFile {
    #[serde(default)]
    installs: Vec<InstalledHooks>,
}

/// Why the record could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot record the install in {path}: {source}")]
pub struct RecordError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

pub fn record_path(data_dir: &Path) -> PathBuf {
    data_dir.join(RECORD_FILE)
}

/// The recorded installs; a missing or unreadable record is no install.
pub fn read_record(data_dir: &Path) -> Vec<InstalledHooks> {
    std::fs::read(record_path(data_dir))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<RecordFile>(&bytes).ok())
        .map(|r| r.installs)
        .unwrap_or_default()
}

/// Records an install (replacing the agent's earlier one) or forgets it (uninstall).
pub fn note(data_dir: &Path, action: Action, entry: InstalledHooks) -> Result<(), RecordError> {
    let mut installs = read_record(data_dir);
    installs.retain(|i| i.agent != entry.agent);
    if action == Action::Install {
        installs.push(entry);
    }
    installs.sort_by_key(|i| i.agent);
    let path = record_path(data_dir);
    let err = |source| RecordError {
        path: path.clone(),
        source,
    };
    crate::paths::create_private_dir(data_dir).map_err(|e| err(std::io::Error::other(e)))?;
    let text = serde_json::to_vec_pretty(&RecordFile { installs })
        .map_err(|e| err(std::io::Error::other(e)))?;
    crate::atomic_file::write(&path, &text)
        .map(|_| ())
        .map_err(|e| err(std::io::Error::other(e)))
}
