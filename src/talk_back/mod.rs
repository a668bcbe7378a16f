//! Talking back to a session: its next prompt (`agent-tray send`) and a stop of its running turn
//! (`agent-tray stop`), from the CLI, the window and the alert.
//!
//! Why it is shaped this way:
//! - **The agent's own interface first, the terminal last.** An agent that takes a prompt from a
//!   program (Codex's shared app-server, OpenCode's server through our plugin, Qwen Code's
//!   controller inbox) is given it there: the agent itself says whether it took it. Typing into a
//!   terminal ([`terminal`]) is for the others, and only where the terminal can be addressed
//!   exactly (a tmux pane named by its server and id).
//! - **Live ways in are registered by whoever holds them** ([`TalkInboxes`]): the Codex feed's
//!   connection, OpenCode's plugin; a registration ends with its holder (a guard), so a send never
//!   goes to a connection that is gone. Two holders for one session is a refusal, never a guess.
//! - **Nothing is sent blindly.** The session must be idle for a send and working (or waiting)
//!   for a stop, checked at the last moment; a failed send is reported, never retried (the agent
//!   may have taken it).
//! - **What can be done now is told, not guessed**: [`abilities`] is what `list --json` prints as
//!   `can_send` / `can_stop` and what the window shows a reply field or a Stop button for.

pub mod kitty;
pub mod terminal;
pub mod text;
pub mod wezterm;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::model::{Agent, Session, SessionState};
pub use text::{PromptText, TextRefusal};

/// What is asked of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "order", rename_all = "snake_case")]
pub enum TalkOrder {
    /// Its next prompt.
    Send { prompt: PromptText },
    /// End the running turn.
    Stop,
}

impl TalkOrder {
    pub fn is_send(&self) -> bool {
        matches!(self, TalkOrder::Send { .. })
    }
}

/// The way a send or a stop went (`route` in the reply; stable names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum TalkRoute {
    /// Codex's shared background server (`turn/start`, `turn/interrupt`).
    AppServer,
    /// OpenCode's server, through our plugin's client (`prompt_async`, `abort`).
    Plugin,
    /// Qwen Code's controller inbox (its cross-session protocol).
    ControllerInbox,
    /// Typed into the session's tmux pane.
    Tmux,
    /// Typed into the session's kitty window (kitty's remote control).
    Kitty,
    /// Typed into the session's WezTerm pane (`wezterm cli`).
    WezTerm,
    /// A deny that ends the turn, given to the request the session waits on (its hook prints it).
    PendingRequest,
}

impl TalkRoute {
    /// How the route is named to people.
    pub fn describe(self) -> &'static str {
        match self {
            TalkRoute::AppServer => "through the agent's app-server",
            TalkRoute::Plugin => "through the agent's own server (our plugin)",
            TalkRoute::ControllerInbox => "through the agent's controller inbox",
            TalkRoute::Tmux => "typed into its tmux pane",
            TalkRoute::Kitty => "typed into its kitty window",
            TalkRoute::WezTerm => "typed into its WezTerm pane",
            TalkRoute::PendingRequest => "by denying the request it waited on, ending the turn",
        }
    }
}

/// Why a send or stop was not done, as a sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum TalkFailure {
    /// Checked and not done: nothing was sent.
    #[error("{0}")]
    Refused(String),
    /// Tried, and the agent's side failed or did not answer in time: it may or may not have
    /// taken it (never retried).
    #[error("{0}")]
    NotDelivered(String),
}

/// One order for a live way in: the session it is for, and where to say how it went.
#[derive(Debug)]
pub struct InboxOrder {
    pub session_id: String,
    pub order: TalkOrder,
    pub done: oneshot::Sender<Result<(), TalkFailure>>,
}

/// Which sessions a way in reaches.
#[derive(Debug, Clone)]
pub enum Reach {
    /// These session ids (kept current by the holder: a Codex connection's threads).
    Sessions(Arc<Mutex<HashSet<String>>>),
    /// Every session of this agent whose process is `pid` (OpenCode's plugin lives in it).
    Process { agent: Agent, pid: u32 },
}

impl Reach {
    fn reaches(&self, session: &Session) -> bool {
        match self {
            Reach::Sessions(ids) => ids
                .lock()
                .map(|ids| ids.contains(&session.session_id))
                .unwrap_or(false),
            Reach::Process { agent, pid } => session.agent == *agent && session.pid == Some(*pid),
        }
    }
}

struct Inbox {
    id: u64,
    route: TalkRoute,
    reach: Reach,
    orders: mpsc::Sender<InboxOrder>,
}

/// The live ways in, registered by whoever holds one.
pub struct TalkInboxes {
    inner: Mutex<InboxesInner>,
    /// Counts openings and closings, so a view of `can_send`/`can_stop` (the window's rows)
    /// is worked out again when a way in comes or goes without the session changing.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for TalkInboxes {
    fn default() -> Self {
        TalkInboxes {
            inner: Mutex::default(),
            changes: tokio::sync::watch::channel(0).0,
        }
    }
}

#[derive(Default)]
struct InboxesInner {
    next_id: u64,
    inboxes: Vec<Inbox>,
}

impl std::fmt::Debug for TalkInboxes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TalkInboxes").finish_non_exhaustive()
    }
}

/// The most orders one way in holds unread: a user sends one at a time; more waiting means the
/// holder is stuck, and the next order is refused at once rather than queued behind it.
pub const INBOX_CAPACITY: usize = 4;

/// Ends a registration when dropped (its holder's connection ended).
pub struct InboxGuard {
    inboxes: Arc<TalkInboxes>,
    id: u64,
}

impl Drop for InboxGuard {
    fn drop(&mut self) {
        if let Ok(mut inner) = self.inboxes.inner.lock() {
            inner.inboxes.retain(|i| i.id != self.id);
        }
        self.inboxes.changes.send_modify(|n| *n += 1);
    }
}

/// What finding a way in for a session gave.
#[derive(Debug)]
pub enum Found {
    None,
    One(TalkRoute, mpsc::Sender<InboxOrder>),
    /// More than one holder reaches it (two Codex servers hold its thread): never guessed.
    Several(TalkRoute),
}

impl TalkInboxes {
    /// Registers a way in; orders arrive on the receiver until the guard is dropped.
    pub fn open(
        self: &Arc<Self>,
        route: TalkRoute,
        reach: Reach,
    ) -> (InboxGuard, mpsc::Receiver<InboxOrder>) {
        // Bounded (INBOX_CAPACITY): a full inbox refuses the order (see `submit`).
        let (orders, receiver) = mpsc::channel(INBOX_CAPACITY);
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.next_id += 1;
        let id = inner.next_id;
        inner.inboxes.push(Inbox {
            id,
            route,
            reach,
            orders,
        });
        drop(inner);
        self.changes.send_modify(|n| *n += 1);
        (
            InboxGuard {
                inboxes: Arc::clone(self),
                id,
            },
            receiver,
        )
    }

    /// The way in that reaches `session`, if exactly one does.
    pub fn find(&self, session: &Session) -> Found {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut reaching = inner
            .inboxes
            .iter()
            .filter(|i| !i.orders.is_closed() && i.reach.reaches(session));
        match (reaching.next(), reaching.next()) {
            (None, _) => Found::None,
            (Some(one), None) => Found::One(one.route, one.orders.clone()),
            (Some(one), Some(_)) => Found::Several(one.route),
        }
    }

    /// Ticks whenever a way in opens or closes.
    pub fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The route that reaches `session`, if exactly one does.
    pub fn route_of(&self, session: &Session) -> Option<TalkRoute> {
        match self.find(session) {
            Found::One(route, _) => Some(route),
            Found::None | Found::Several(_) => None,
        }
    }
}

/// A way in that the engine opens itself, of the agent's own (Qwen Code's controller inbox):
/// offered by the agent's adapter (`AgentAdapter::direct_talk`).
pub trait DirectTalk: Sync {
    /// The route it is.
    fn route(&self) -> TalkRoute;
    /// Whether it can carry out this kind of order at all (an inbox may take prompts only).
    fn takes(&self, order: &TalkOrder) -> bool;
    /// Whether it reaches `session` now (cheap: files only, no connection).
    fn reaches(&self, session: &Session) -> bool;
    /// Carries out `order` for `session`, bounded. Blocking: run it off the async threads.
    fn carry_out(&self, session: &Session, order: &TalkOrder) -> Result<(), TalkFailure>;
}

/// Hands `order` to a way in and waits, at most `budget`, for how it went.
pub async fn submit(
    orders: &mpsc::Sender<InboxOrder>,
    session_id: &str,
    order: TalkOrder,
    budget: std::time::Duration,
) -> Result<(), TalkFailure> {
    let (done, outcome) = oneshot::channel();
    orders
        .try_send(InboxOrder {
            session_id: session_id.to_string(),
            order,
            done,
        })
        .map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => TalkFailure::Refused(
                "the way in to this session is busy with earlier orders; nothing was sent".into(),
            ),
            mpsc::error::TrySendError::Closed(_) => TalkFailure::Refused(
                "the way in to this session just closed; nothing was sent".into(),
            ),
        })?;
    match tokio::time::timeout(budget, outcome).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(TalkFailure::NotDelivered(
            "the connection to the agent ended before it said whether it took it".into(),
        )),
        Err(_) => Err(TalkFailure::NotDelivered(format!(
            "the agent did not say within {} s whether it took it (not retried)",
            budget.as_secs()
        ))),
    }
}

/// Whether there is a way in to a session, as [`abilities`] weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WayIn {
    /// None known.
    None,
    /// The agent's own interface, or a terminal that can be typed into.
    Some,
}

/// What can be done to a session now, given whether there is a way in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Abilities {
    pub can_send: bool,
    pub can_stop: bool,
}

/// A send needs an idle session and a way in that takes prompts, a stop a working (or waiting)
/// one and a way in that takes stops. A session whose remote cannot be reached takes neither.
pub fn abilities(session: &Session, send_way: WayIn, stop_way: WayIn) -> Abilities {
    if session.unreachable_since.is_some() {
        return Abilities::default();
    }
    Abilities {
        can_send: send_way == WayIn::Some
            && matches!(session.state, SessionState::Idle | SessionState::Starting),
        can_stop: stop_way == WayIn::Some
            && matches!(
                session.state,
                SessionState::Working
                    | SessionState::WaitingForPermission
                    | SessionState::WaitingForInput
            ),
    }
}

/// Why a session's state forbids the order now (`None`: it allows it).
pub fn state_refusal(session: &Session, order: &TalkOrder) -> Option<String> {
    let name = crate::catalogue::entry(session.agent).display_name;
    match (order, session.state) {
        (_, SessionState::Ended) => Some(format!("the {name} session has ended")),
        (TalkOrder::Send { .. }, SessionState::Idle | SessionState::Starting) => None,
        (TalkOrder::Send { .. }, SessionState::Working) => Some(format!(
            "{name} is working on a turn: a prompt is sent only to an idle session (stop it \
             first, or wait); nothing was sent"
        )),
        (
            TalkOrder::Send { .. },
            SessionState::WaitingForPermission | SessionState::WaitingForInput,
        ) => Some(format!(
            "{name} is waiting for an answer (a permission or a question), not at its prompt: \
             answer it first; nothing was sent"
        )),
        (
            TalkOrder::Stop,
            SessionState::Working
            | SessionState::WaitingForPermission
            | SessionState::WaitingForInput,
        ) => None,
        (TalkOrder::Stop, SessionState::Idle | SessionState::Starting) => {
            Some(format!("{name} is idle: there is no running turn to stop"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::session_in;

    fn prompt() -> TalkOrder {
        TalkOrder::Send {
            prompt: PromptText::parse("hi", false).unwrap_or_else(|e| panic!("{e}")),
        }
    }

    #[test]
    fn a_send_needs_an_idle_session_and_a_stop_a_working_one() {
        let idle = session_in(SessionState::Idle);
        let working = session_in(SessionState::Working);
        let waiting = session_in(SessionState::WaitingForPermission);
        let ended = session_in(SessionState::Ended);
        assert_eq!(state_refusal(&idle, &prompt()), None);
        assert!(state_refusal(&working, &prompt()).is_some_and(|s| s.contains("working")));
        assert!(state_refusal(&waiting, &prompt()).is_some_and(|s| s.contains("answer it")));
        assert!(state_refusal(&ended, &prompt()).is_some());
        assert_eq!(state_refusal(&working, &TalkOrder::Stop), None);
        assert_eq!(state_refusal(&waiting, &TalkOrder::Stop), None);
        assert!(state_refusal(&idle, &TalkOrder::Stop).is_some_and(|s| s.contains("no running")));
        assert!(state_refusal(&ended, &TalkOrder::Stop).is_some());
    }

    #[test]
    fn abilities_follow_the_state_and_the_way_in() {
        let idle = session_in(SessionState::Idle);
        let working = session_in(SessionState::Working);
        let both = |s: &Session| abilities(s, WayIn::Some, WayIn::Some);
        assert_eq!(
            both(&idle),
            Abilities {
                can_send: true,
                can_stop: false
            }
        );
        assert_eq!(
            both(&working),
            Abilities {
                can_send: false,
                can_stop: true
            }
        );
        assert_eq!(
            abilities(&idle, WayIn::None, WayIn::Some),
            Abilities::default()
        );
        assert_eq!(
            abilities(&working, WayIn::Some, WayIn::None),
            Abilities::default(),
            "a way in that takes only prompts cannot stop"
        );
        let mut cut_off = idle.clone();
        cut_off.unreachable_since = Some(chrono::Utc::now());
        assert_eq!(both(&cut_off), Abilities::default());
    }

    #[tokio::test]
    async fn a_registration_ends_with_its_guard_and_two_holders_are_never_guessed_between() {
        let inboxes = Arc::new(TalkInboxes::default());
        let session = session_in(SessionState::Idle);
        let ids = Arc::new(Mutex::new(HashSet::from([session.session_id.clone()])));
        let (guard, mut orders) =
            inboxes.open(TalkRoute::AppServer, Reach::Sessions(Arc::clone(&ids)));
        let Found::One(route, sender) = inboxes.find(&session) else {
            panic!("one holder");
        };
        assert_eq!(route, TalkRoute::AppServer);
        let answer = tokio::spawn(async move {
            let order = orders.recv().await.unwrap_or_else(|| panic!("an order"));
            assert_eq!(order.order, TalkOrder::Stop);
            let _ = order.done.send(Ok(()));
            orders
        });
        let outcome = submit(
            &sender,
            &session.session_id,
            TalkOrder::Stop,
            std::time::Duration::from_secs(5),
        )
        .await;
        assert_eq!(outcome, Ok(()));
        let _orders = answer.await;
        let mut changes = inboxes.watch_changes();
        changes.borrow_and_update();
        let (_second, _rx) = inboxes.open(TalkRoute::AppServer, Reach::Sessions(ids));
        assert!(changes.has_changed().unwrap_or(false), "an opening is told");
        assert!(matches!(inboxes.find(&session), Found::Several(_)));
        changes.borrow_and_update();
        drop(guard);
        assert!(changes.has_changed().unwrap_or(false), "a closing is told");
        assert!(matches!(inboxes.find(&session), Found::One(..)));
    }

    #[tokio::test]
    async fn a_holder_that_never_answers_is_not_delivered_and_a_gone_one_refused() {
        let inboxes = Arc::new(TalkInboxes::default());
        let mut session = session_in(SessionState::Idle);
        session.pid = Some(42);
        let reach = Reach::Process {
            agent: session.agent,
            pid: 42,
        };
        let (_guard, _orders) = inboxes.open(TalkRoute::Plugin, reach.clone());
        let Found::One(_, silent) = inboxes.find(&session) else {
            panic!("one holder");
        };
        let late = submit(
            &silent,
            "s1",
            TalkOrder::Stop,
            std::time::Duration::from_millis(50),
        )
        .await;
        assert!(
            matches!(late, Err(TalkFailure::NotDelivered(_))),
            "{late:?}"
        );
        let (guard, orders) = inboxes.open(TalkRoute::Plugin, reach);
        drop((guard, orders));
        let (gone_tx, gone_rx) = mpsc::channel(1);
        drop(gone_rx);
        let gone = submit(
            &gone_tx,
            "s1",
            TalkOrder::Stop,
            std::time::Duration::from_millis(50),
        )
        .await;
        assert!(matches!(gone, Err(TalkFailure::Refused(_))), "{gone:?}");
        let mut elsewhere = session.clone();
        elsewhere.pid = Some(43);
        assert!(matches!(inboxes.find(&elsewhere), Found::None));
    }
}
