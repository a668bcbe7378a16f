//! How each remote link is doing ([`LinkState`], [`RemoteLinkStatus`]) and the table of them the
//! links keep up to date ([`RemoteLinks`]), with the way to ask the supervisor to reread
//! `remotes.json`. What a person reads of it is [`crate::remote::status`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    Connecting,
    Connected,
    /// The network, ssh or the remote host failed; retried with backoff.
    Unreachable,
    /// The host answers but Agent Tray does not run there; retried with backoff.
    NotRunning,
    /// The host answers but cannot serve (no `agent-tray`, or one too old); retried rarely.
    Unusable,
}

/// One remote's link, as `doctor`, `remote list` and the window show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RemoteLinkStatus {
    pub name: String,
    pub destination: String,
    pub state: LinkState,
    /// Since when the link has been in this state.
    pub since: DateTime<Utc>,
    /// One line for people: why it is not connected.
    pub message: Option<String>,
    /// How many of its sessions the tray holds.
    pub sessions: u32,
    /// The remote's `agent-tray` version, once it answered.
    pub remote_version: Option<String>,
}

/// Every link's status, and the way to ask the supervisor to reread `remotes.json`.
#[derive(Debug, Default)]
pub struct RemoteLinks {
    statuses: Mutex<BTreeMap<String, RemoteLinkStatus>>,
    reload: Mutex<Option<mpsc::Sender<()>>>,
    /// Where the links put the plan windows their remotes report (the engine's book).
    pub(super) limits: Arc<crate::plan_limits::PlanLimitsBook>,
}

impl RemoteLinks {
    /// Links whose remotes' plan windows go into `limits`.
    pub fn reporting_limits_to(limits: Arc<crate::plan_limits::PlanLimitsBook>) -> Self {
        RemoteLinks {
            limits,
            ..RemoteLinks::default()
        }
    }

    fn statuses(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, RemoteLinkStatus>> {
        // A map of plain values: still valid after a panic elsewhere.
        self.statuses.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every remote's status, by name.
    pub fn all(&self) -> Vec<RemoteLinkStatus> {
        self.statuses().values().cloned().collect()
    }

    /// The destination of the remote named `name`, while its link runs.
    pub fn destination_of(&self, name: &str) -> Option<String> {
        self.statuses().get(name).map(|s| s.destination.clone())
    }

    pub(crate) fn set(&self, status: RemoteLinkStatus) {
        self.statuses().insert(status.name.clone(), status);
    }

    pub(super) fn update(&self, name: &str, f: impl FnOnce(&mut RemoteLinkStatus)) {
        if let Some(status) = self.statuses().get_mut(name) {
            f(status);
        }
    }

    pub(super) fn remove(&self, name: &str) {
        self.statuses().remove(name);
        self.limits.forget_host(name);
    }

    /// Asks the supervisor to reread `remotes.json` and every waiting link to try now. False
    /// when no supervisor runs (nothing to tell).
    pub fn request_reload(&self) -> bool {
        let sender = self
            .reload
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Full: a reload is already pending, and it rereads the file anyway.
        sender.is_some_and(|s| !matches!(s.try_send(()), Err(mpsc::error::TrySendError::Closed(_))))
    }

    pub(super) fn set_reload(&self, sender: mpsc::Sender<()>) {
        *self.reload.lock().unwrap_or_else(|p| p.into_inner()) = Some(sender);
    }
}
