//! The engine's half of talking back ([`crate::talk_back`]): finds the one way in to a session
//! and carries a send or a stop out through it, and works out what `list --json` says each
//! session allows now (`can_send`, `can_stop`).
//!
//! The order of the ways in is the rule: the agent's own interface first (a registered
//! inbox: Codex's server, OpenCode's plugin; then one the engine opens itself: Qwen Code's
//! controller inbox), the terminal last (a tmux pane, for an agent whose prompt box was seen
//! taking typed text). The session's state is checked before choosing and, for the terminal,
//! once more right before typing; an agent's own interface checks it again itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agents::AgentKnowledge;
use crate::catalogue::InCatalogue;
use crate::control::protocol::{RemoteSession, TalkReply};
use crate::model::Session;
use crate::registry::SessionsRegistry;
use crate::talk_back::{
    abilities, state_refusal, submit, terminal, Found, TalkFailure, TalkInboxes, TalkOrder,
    TalkRoute, WayIn,
};

/// How long an agent's side has to say it took an order.
pub const TALK_BUDGET: Duration = Duration::from_secs(10);

/// Why a talk was not carried out here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TalkError {
    #[error("no live session {0} on this machine")]
    NoSession(String),
    #[error("session {session_id} runs on {host}: sent there over ssh")]
    OnRemote { host: String, session_id: String },
    #[error("{0}")]
    Failed(#[from] TalkFailure),
}

/// The way in to a local `session` for `order` (without carrying anything out): a registered
/// inbox, the adapter's own, or its tmux pane.
pub fn way_in(session: &Session, inboxes: &TalkInboxes, order: &TalkOrder) -> Option<TalkRoute> {
    if let Some(route) = inboxes.route_of(session) {
        return Some(route);
    }
    if matches!(order, TalkOrder::Stop) && request_to_stop_by(session).is_some() {
        return Some(TalkRoute::PendingRequest);
    }
    if let Some(direct) = session.agent.adapter().direct_talk() {
        if direct.takes(order) && direct.reaches(session) {
            return Some(direct.route());
        }
    }
    let talk = session.agent.entry().terminal_talk?;
    if !order.is_send() && talk.stop_keys.is_empty() {
        return None;
    }
    terminal_place(session).map(|place| place.route())
}

/// The request a stop can answer with a deny that ends the turn (Claude Code's `interrupt`):
/// the oldest one the session waits on, where the agent's deny can end its turn.
fn request_to_stop_by(session: &Session) -> Option<crate::answering::RequestId> {
    if !session.agent.entry().stop_by_deny || session.host.is_some() {
        return None;
    }
    session.pending.first().map(|p| p.id.clone())
}

/// Where a session's terminal can be typed into.
enum Place {
    Tmux(terminal::TmuxPlace),
    Kitty(crate::talk_back::kitty::KittyPlace),
    WezTerm(crate::talk_back::wezterm::WezTermPlace),
}

impl Place {
    fn route(&self) -> TalkRoute {
        match self {
            Place::Tmux(_) => TalkRoute::Tmux,
            Place::Kitty(_) => TalkRoute::Kitty,
            Place::WezTerm(_) => TalkRoute::WezTerm,
        }
    }
}

/// The terminal a session may be typed into: only for an agent whose prompt box was seen
/// taking typed text ([`crate::catalogue::Entry::terminal_talk`]); a tmux pane first (tmux
/// inside kitty is addressed by tmux), else a kitty window that listens, else a WezTerm pane.
fn terminal_place(session: &Session) -> Option<Place> {
    session.agent.entry().terminal_talk?;
    let pid = session.pid?;
    let environ = crate::process::environ(pid)?;
    terminal::tmux_place(session.tmux.as_deref(), &environ)
        .map(Place::Tmux)
        .or_else(|| crate::talk_back::kitty::kitty_place(&environ).map(Place::Kitty))
        .or_else(|| crate::talk_back::wezterm::wezterm_place(&environ).map(Place::WezTerm))
}

/// `sessions` with `can_send` and `can_stop` worked out: for this machine's sessions here; a
/// remote's as its engine said (nothing, once its link is down).
pub fn with_abilities(mut sessions: Vec<Session>, inboxes: &TalkInboxes) -> Vec<Session> {
    let a_prompt = TalkOrder::Send {
        prompt: crate::talk_back::PromptText::parse("a prompt", false)
            .unwrap_or_else(|_| unreachable!("a plain prompt passes")),
    };
    for session in &mut sessions {
        let (send_way, stop_way) = if session.host.is_some() {
            let said = |b: bool| if b { WayIn::Some } else { WayIn::None };
            (said(session.can_send), said(session.can_stop))
        } else {
            let way = |order: &TalkOrder| match way_in(session, inboxes, order) {
                Some(_) => WayIn::Some,
                None => WayIn::None,
            };
            (way(&a_prompt), way(&TalkOrder::Stop))
        };
        let can = abilities(session, send_way, stop_way);
        session.can_send = can.can_send;
        session.can_stop = can.can_stop;
    }
    sessions
}

/// Carries out `order` for the session `target` (of `host`, or of this machine): through the
/// one way in that reaches it, after checking its state.
pub async fn talk(
    registry: &Arc<SessionsRegistry>,
    inboxes: &TalkInboxes,
    target: &str,
    host: Option<&str>,
    order: TalkOrder,
    source: crate::answering::AnswerSource,
) -> Result<TalkReply, TalkError> {
    let started = Instant::now();
    let session = find_session(registry, target, host)?;
    if let Some(why) = state_refusal(&session, &order) {
        return Err(TalkFailure::Refused(why).into());
    }
    let session_id = session.session_id.clone();
    let route = match inboxes.find(&session) {
        Found::One(route, orders) => {
            submit(&orders, &session_id, order, TALK_BUDGET).await?;
            route
        }
        Found::Several(_) => {
            return Err(TalkFailure::Refused(format!(
                "more than one {} server holds this session: which one would take it is not \
                 known, so nothing was sent",
                session.agent.display_name()
            ))
            .into())
        }
        Found::None => match (&order, request_to_stop_by(&session)) {
            (TalkOrder::Stop, Some(request)) => {
                stop_by_deny(registry, &request, source).await?;
                TalkRoute::PendingRequest
            }
            _ => carry_out_here(registry, session, order).await?,
        },
    };
    tracing::info!(%session_id, ?route, took_ms = started.elapsed().as_millis() as u64, "talked");
    Ok(TalkReply {
        session_id,
        route,
        took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// Ends the turn by answering the request the session waits on with a deny that interrupts: the
/// agent's hook prints it, whatever terminal the agent runs in.
async fn stop_by_deny(
    registry: &SessionsRegistry,
    request: &crate::answering::RequestId,
    source: crate::answering::AnswerSource,
) -> Result<(), TalkFailure> {
    use crate::registry::answers::AnswerError;
    match registry
        .answer_routed(
            request.as_str(),
            None,
            crate::answering::Answer::Stop,
            source,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e @ AnswerError::NotDelivered(_)) => Err(TalkFailure::NotDelivered(e.to_string())),
        Err(e) => Err(TalkFailure::Refused(format!("{e}; nothing was sent"))),
    }
}

/// The adapter's own way in, or the terminal: both blocking, run off the async threads.
async fn carry_out_here(
    registry: &Arc<SessionsRegistry>,
    session: Session,
    order: TalkOrder,
) -> Result<TalkRoute, TalkFailure> {
    let agent = session.agent;
    if let Some(direct) = agent.adapter().direct_talk() {
        if direct.takes(&order) && direct.reaches(&session) {
            let route = direct.route();
            return run_blocking(move || direct.carry_out(&session, &order).map(|()| route)).await;
        }
    }
    let Some(talk) = agent.entry().terminal_talk else {
        return Err(TalkFailure::Refused(format!(
            "{} offers no way in to this session right now ({}); nothing was sent",
            agent.display_name(),
            no_way_reason(&session)
        )));
    };
    if !order.is_send() && talk.stop_keys.is_empty() {
        return Err(TalkFailure::Refused(format!(
            "{} has no stop that can be typed into its terminal and then seen to end the turn: \
             stop it there; nothing was sent",
            agent.display_name()
        )));
    }
    let Some(place) = terminal_place(&session) else {
        return Err(TalkFailure::Refused(format!(
            "{} runs in no tmux pane, listening kitty window or WezTerm pane that can be named: \
             prompts and stops are typed only there (docs/talking-back.md); nothing was sent",
            agent.display_name()
        )));
    };
    let registry_view = Arc::clone(registry);
    run_blocking(move || {
        let still_allowed = || match registry_view.get(&session.session_id) {
            Some(now) => state_refusal(&now, &order).map_or(Ok(()), Err),
            None => Err("the session has ended".to_string()),
        };
        match &place {
            Place::Tmux(pane) => terminal::carry_out(&session, pane, &order, &talk, still_allowed),
            Place::Kitty(window) => {
                crate::talk_back::kitty::carry_out(&session, window, &order, &talk, still_allowed)
            }
            Place::WezTerm(pane) => {
                crate::talk_back::wezterm::carry_out(&session, pane, &order, &talk, still_allowed)
            }
        }
        .map(|()| place.route())
    })
    .await
}

fn no_way_reason(session: &Session) -> &'static str {
    if session.headless {
        "it runs with no terminal and its server is not connected"
    } else {
        "its own interface is not connected"
    }
}

async fn run_blocking(
    work: impl FnOnce() -> Result<TalkRoute, TalkFailure> + Send + 'static,
) -> Result<TalkRoute, TalkFailure> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(TalkFailure::NotDelivered(format!("the send stopped: {e}"))))
}

/// The session `target` names: of `host` when given; else this machine's, else the one remote
/// session with that id (named back so the CLI sends it there).
fn find_session(
    registry: &SessionsRegistry,
    target: &str,
    host: Option<&str>,
) -> Result<Session, TalkError> {
    if let Some(host) = host {
        return match registry.get_on(Some(host), target) {
            Some(_) => Err(TalkError::OnRemote {
                host: host.to_string(),
                session_id: target.to_string(),
            }),
            None => Err(TalkError::NoSession(format!("{target} (on {host})"))),
        };
    }
    if let Some(session) = registry.get(target) {
        return Ok(session);
    }
    let remote: Vec<Session> = registry
        .list()
        .into_iter()
        .filter(|s| s.host.is_some() && s.session_id == target)
        .collect();
    match &remote[..] {
        [one] => Err(TalkError::OnRemote {
            host: one.host.clone().unwrap_or_default(),
            session_id: one.session_id.clone(),
        }),
        [] => Err(TalkError::NoSession(target.to_string())),
        _ => Err(TalkFailure::Refused(format!(
            "session {target} exists on more than one remote: name the remote"
        ))
        .into()),
    }
}

impl TalkError {
    /// The remote a refused talk is for, as the reply names it.
    pub fn on_remote(&self) -> Option<RemoteSession> {
        match self {
            TalkError::OnRemote { host, session_id } => Some(RemoteSession {
                host: host.clone(),
                session_id: session_id.clone(),
            }),
            _ => None,
        }
    }
}
