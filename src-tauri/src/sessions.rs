//! What the window lists, as the shell computes it: the registry's sessions (live and recently
//! ended), the agents the settings watch and the endings the user dismissed, handed to the
//! core's [`window_rows`], which holds every rule. Narrow on purpose: the registry stays the one
//! writer of session state, and the snapshot command and the event bridge both read rows here,
//! so they cannot disagree. The rows say what each session can be told now (`can_send`,
//! `can_stop`), worked out by the core's [`with_abilities`] from the engine's live ways in, as
//! `agent-tray list --json` says it.

use std::sync::{Arc, Mutex};

use agent_tray::engine::talk::with_abilities;
use agent_tray::model::Session;
use agent_tray::registry::SessionsRegistry;
use agent_tray::remote::link::RemoteLinks;
use agent_tray::talk_back::TalkInboxes;
use agent_tray::tray_model::SessionView;
use agent_tray::window_rows::{window_rows, Dismissed, ENDED_SHOWN};
use tokio::sync::watch;

use crate::ipc::AppSettings;

/// The window's rows and the registry sequence number they are current to.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowRows {
    pub seq: u64,
    pub rows: Vec<SessionView>,
}

/// The engine's ledgers the shell reads besides the registry (empty when no engine runs here).
#[derive(Debug, Clone, Default)]
pub struct EngineReach {
    /// The links to the remotes: where a remote's row jumps to, and what Settings lists.
    pub remote_links: Arc<RemoteLinks>,
    /// The live ways in to sessions: what a row may send or stop, and where a send goes.
    pub talk: Arc<TalkInboxes>,
}

#[derive(Debug)]
pub struct SessionsSource {
    registry: Arc<SessionsRegistry>,
    /// The engine's links to the remotes (empty when no engine runs here): where a remote's
    /// row jumps to, and what Settings lists.
    remote_links: Arc<RemoteLinks>,
    /// The engine's ways in to sessions (`send`, `stop`).
    talk: Arc<TalkInboxes>,
    dismissed: Mutex<Dismissed>,
    /// Counts dismissals, so the event bridge recomputes the rows after one.
    dismissals: watch::Sender<u64>,
}

impl SessionsSource {
    pub fn new(registry: Arc<SessionsRegistry>, reach: EngineReach) -> Self {
        SessionsSource {
            registry,
            remote_links: reach.remote_links,
            talk: reach.talk,
            dismissed: Mutex::new(Dismissed::default()),
            dismissals: watch::channel(0).0,
        }
    }

    pub fn registry(&self) -> &Arc<SessionsRegistry> {
        &self.registry
    }

    pub fn remote_links(&self) -> &Arc<RemoteLinks> {
        &self.remote_links
    }

    pub fn talk(&self) -> &Arc<TalkInboxes> {
        &self.talk
    }

    /// Whether the session `key` takes a prompt now (the core's `can_send`), as its row says.
    pub fn can_send(&self, host: Option<&str>, session_id: &str) -> bool {
        self.registry
            .get_on(host, session_id)
            .and_then(|s| with_abilities(vec![s], &self.talk).pop())
            .is_some_and(|s| s.can_send)
    }

    fn dismissed(&self) -> std::sync::MutexGuard<'_, Dismissed> {
        // Only a map of sessions to times: still valid after a panic elsewhere.
        self.dismissed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live sessions the tray counts (watched agents only).
    pub fn live(&self, settings: &AppSettings) -> Vec<Session> {
        let mut live = self.registry.list();
        live.retain(|s| settings.watches(s.agent));
        live
    }

    /// The window's rows now, in display order.
    pub fn rows(&self, settings: &AppSettings) -> WindowRows {
        let dismissed = self.dismissed().clone();
        // Dismissed endings take no place under "Ended recently": read enough to fill it.
        let snapshot = self.registry.snapshot(ENDED_SHOWN + dismissed.len());
        let mut sessions = with_abilities(snapshot.live, &self.talk);
        sessions.extend(snapshot.ended);
        let now = self.registry.clock().wall();
        let mut rows = window_rows(&sessions, &settings.agents, &dismissed, now);
        agent_tray::remote::command::wrap_remote_rows(
            &mut rows,
            &self.remote_links,
            &agent_tray::remote::SshCommand::from_env(),
        );
        WindowRows {
            seq: snapshot.seq,
            rows,
        }
    }

    /// The session `session_id` on `host` (`None`: this machine), live or ended (as long as the
    /// registry remembers it). Only there: the window hands back the host of the row the user
    /// acted on, and a remote's session with a local one's id must not answer for it.
    pub fn find(&self, host: Option<&str>, session_id: &str) -> Option<Session> {
        self.registry.get_on(host, session_id).or_else(|| {
            // The registry remembers this machine's endings only (a remote keeps its own).
            host.is_none()
                .then(|| self.registry.history(usize::MAX))
                .into_iter()
                .flatten()
                .find(|s| s.session_id == session_id)
        })
    }

    /// Hides an ended session's ending from the window. Only ended ones: dismissing a live
    /// session would hide something that may need the user. Returns whether it was dismissed.
    pub fn dismiss(&self, host: Option<&str>, session_id: &str) -> bool {
        let Some(session) = self.find(host, session_id) else {
            return false;
        };
        let now = self.registry.clock().wall();
        let dismissed = {
            let mut set = self.dismissed();
            set.forget_old(now);
            set.dismiss(&session)
        };
        if dismissed {
            self.dismissals.send_modify(|n| *n += 1);
        }
        dismissed
    }

    /// Ticks after every dismissal.
    pub fn watch_dismissals(&self) -> watch::Receiver<u64> {
        self.dismissals.subscribe()
    }

    /// Ticks when a way in to a session opens or closes (the rows' `can_send`/`can_stop`).
    pub fn watch_ways_in(&self) -> watch::Receiver<u64> {
        self.talk.watch_changes()
    }
}
