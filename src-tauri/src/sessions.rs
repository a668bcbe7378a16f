//! What the window lists: the registry's live sessions plus recently ended ones, minus those the
//! user dismissed and the agents the settings do not watch. Narrow on purpose: the registry stays
//! the one writer of session state, this only chooses what to show.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use agent_tray::model::{Session, SessionState};
use agent_tray::registry::SessionsRegistry;
use agent_tray::tray_model::SessionView;

use crate::ipc::AppSettings;

/// How many ended sessions (gone from the live list) the window offers under "Ended recently".
pub const ENDED_SHOWN: usize = 20;

#[derive(Debug)]
pub struct SessionsSource {
    registry: Arc<SessionsRegistry>,
    dismissed: Mutex<HashSet<String>>,
}

impl SessionsSource {
    pub fn new(registry: Arc<SessionsRegistry>) -> Self {
        SessionsSource {
            registry,
            dismissed: Mutex::new(HashSet::new()),
        }
    }

    pub fn registry(&self) -> &Arc<SessionsRegistry> {
        &self.registry
    }

    fn dismissed(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // Only a set of ids: still valid after a panic elsewhere.
        self.dismissed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the window should show this session now.
    pub fn shows(&self, session: &Session, settings: &AppSettings) -> bool {
        settings.watches(session.agent) && !self.dismissed().contains(&session.session_id)
    }

    /// The live sessions the tray counts (watched agents only).
    pub fn live(&self, settings: &AppSettings) -> Vec<Session> {
        let mut live = self.registry.list();
        live.retain(|s| settings.watches(s.agent));
        live
    }

    /// The window's rows: live ones first (oldest first), then recently ended ones.
    pub fn views(&self, settings: &AppSettings) -> Vec<SessionView> {
        let live = self.registry.list();
        let live_ids: HashSet<String> = live.iter().map(|s| s.session_id.clone()).collect();
        let ended = self
            .registry
            .history(ENDED_SHOWN)
            .into_iter()
            .filter(|s| !live_ids.contains(&s.session_id));
        live.into_iter()
            .chain(ended)
            .filter(|s| self.shows(s, settings))
            .map(|s| SessionView::of(&s))
            .collect()
    }

    /// A session, live or recently ended.
    pub fn find(&self, session_id: &str) -> Option<Session> {
        self.registry.get(session_id).or_else(|| {
            self.registry
                .history(ENDED_SHOWN * 4)
                .into_iter()
                .find(|s| s.session_id == session_id)
        })
    }

    /// Hides an ended session from the window. Only ended ones: dismissing a live session would
    /// hide something that may need the user. Returns whether it was dismissed.
    pub fn dismiss(&self, session_id: &str) -> bool {
        match self.find(session_id) {
            Some(s) if s.state == SessionState::Ended => {
                self.dismissed().insert(session_id.to_string());
                true
            }
            _ => false,
        }
    }
}
