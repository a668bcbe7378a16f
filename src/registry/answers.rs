//! The permission requests the sessions wait on, kept under the registry's lock.
//!
//! Why here and not beside the registry: a request lives exactly as long as its session waits
//! for permission. Keeping the book under the same lock as the sessions makes "the agent moved
//! on" and "the session ended" close its requests in the same step that changed the state, so an
//! answer can never slip in between a terminal's answer and the request's end. The rules
//! themselves are the domain's ([`agent_tray_domain::pending::PendingBook`]); this file applies
//! them to the registry's sessions and wakes the hooks that wait.
//!
//! Each open request has one waiter: the `oneshot` the hook's connection task waits on. Waking
//! one is a `oneshot` send, which never blocks, so it happens under the lock (the registry's rule
//! is no I/O and no blocking send there). What the hook does with it (print, then confirm) is the
//! connection task's, off the lock.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use agent_tray_domain::pending::{
    Accepts, Answer, AnswerSource, Ask, Closed, Outcome, PendingBook, PendingView, Refusal,
    RequestId, SessionKey, Target,
};
use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, oneshot};

use super::{stamp, Inner, SessionChange, SessionsRegistry};
use crate::answering::{AskCall, HookDecision};
use crate::model::{InvalidObservation, Observation, SessionState};

/// How long an answer waits for the hook to say it printed it.
pub const PRINT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(2);

/// What the waiting hook is told: the decision, and where to confirm that it printed it.
#[derive(Debug)]
pub struct Delivery {
    pub decision: HookDecision,
    pub printed: Option<oneshot::Sender<()>>,
}

/// How many closed requests may wait for the history store before the oldest are lost.
const CLOSED_BUFFER: usize = 256;

/// The book, its waiters, and the stream of closed requests (what the history store records).
pub(super) struct Answers {
    book: PendingBook,
    waiters: HashMap<RequestId, oneshot::Sender<Delivery>>,
    /// Sent under the registry's lock: a broadcast send never blocks (a slow receiver lags).
    closed: broadcast::Sender<Closed>,
}

impl Answers {
    /// Records that a request closed: for the history store, if it listens.
    fn record(&self, closed: &Closed) {
        if self.closed.receiver_count() > 0 {
            let _ = self.closed.send(closed.clone());
        }
    }
}

impl Default for Answers {
    fn default() -> Self {
        // A salt per registry, so no id of an earlier engine names a request of this one.
        let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default() as u64;
        let salt = format!("{:x}{:x}", nanos & 0xff_ffff, std::process::id() & 0xfff);
        Answers {
            book: PendingBook::new(&salt),
            waiters: HashMap::new(),
            closed: broadcast::channel(CLOSED_BUFFER).0,
        }
    }
}

/// What became of an `ask`.
#[derive(Debug)]
pub enum AskOutcome {
    /// Open: answer it by `id` before `answer_by`; the decision comes on `decision`.
    Waiting {
        id: RequestId,
        answer_by: DateTime<Utc>,
        decision: oneshot::Receiver<Delivery>,
    },
    /// Not offered for an answer; the agent asks in its terminal.
    NotOffered { reason: String },
}

/// Why an answer did not reach the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("request {0} was answered, but the agent's hook stopped waiting before it could take the answer; the agent asks in its terminal")]
    NotDelivered(RequestId),
    #[error("request {id} is on {host}: answer it there (`agent-tray allow {id}` on that machine, or in its terminal)")]
    OnRemote { id: RequestId, host: String },
    /// Refused before it reached any book ([`crate::answering::route`]): the sentence says why.
    #[error("{0}")]
    NotRouted(String),
}

/// An answer the agent's hook took (printed for the agent).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivered {
    pub request: PendingView,
    pub answer: Answer,
    /// How long the agent had waited.
    pub waited: Duration,
}

impl SessionsRegistry {
    /// A permission request from a hook: its observation is applied as usual, and, while the
    /// session waits for permission, the request is opened for `wait`.
    pub fn ask(
        &self,
        obs: Observation,
        call: AskCall,
        wait: Duration,
        accepts: Accepts,
    ) -> Result<AskOutcome, InvalidObservation> {
        let agent = obs.agent;
        let session_id = obs.session_id.clone();
        // A permission is asked while the session waits for permission, a question while it
        // waits for input.
        let waits_for = waited_on(call.detail.kind());
        // One step: the wait and its request appear in the same change (an alert for the wait
        // can offer to answer it).
        let open =
            |inner: &mut Inner, now: crate::transition::Now, changes: &mut Vec<SessionChange>| {
                let state = inner.live.get(&session_id).map(|r| r.session.state);
                if state != Some(waits_for) {
                    let reason = match state {
                        None => "the session is not known".to_string(),
                        Some(state) => format!("the session is {state}, not {waits_for}"),
                    };
                    return Some(AskOutcome::NotOffered { reason });
                }
                let key = SessionKey {
                    host: None,
                    session_id: session_id.clone(),
                };
                let answer_by = now.wall
                    + chrono::Duration::from_std(wait).unwrap_or_else(|_| chrono::Duration::zero());
                // Only where the grant is shown whole (the book refuses it otherwise too).
                let grant_shown = call
                    .detail
                    .for_session
                    .as_ref()
                    .is_some_and(agent_tray_domain::pending::SessionGrant::is_offered);
                let asked = inner.answers.book.ask(
                    Ask {
                        session: key.clone(),
                        agent,
                        detail: call.detail,
                        call_id: call.call_id,
                        input_digest: call.input_digest,
                        asked_at: now.wall,
                        answer_by,
                        accepts: Accepts {
                            allow_for_session: accepts.allow_for_session
                                && call.suggests_for_session
                                && grant_shown,
                            ..accepts
                        },
                    },
                    now.wall,
                );
                let mut touched = BTreeSet::from([key]);
                for closed in asked.replaced.into_iter().chain(asked.evicted) {
                    touched.insert(closed.ask.session.clone());
                    wake_closed(&mut inner.answers, &closed);
                }
                // The same call asked again (the hook ran twice): the newer hook waits, the older is
                // told to leave the answer to it.
                if let Some(older) = inner.answers.waiters.remove(&asked.id) {
                    let _ = older.send(Delivery {
                        decision: HookDecision::None {
                            reason: "the agent asked again".into(),
                        },
                        printed: None,
                    });
                }
                let (tx, rx) = oneshot::channel();
                inner.answers.waiters.insert(asked.id.clone(), tx);
                let answer_by = inner
                    .answers
                    .book
                    .get(&asked.id)
                    .map_or(answer_by, |r| r.ask.answer_by);
                refresh_views(inner, &touched, changes);
                Some(AskOutcome::Waiting {
                    id: asked.id,
                    answer_by,
                    decision: rx,
                })
            };
        let (_, outcome) = self.observe_then(obs, false, open)?;
        Ok(outcome.unwrap_or_else(|| AskOutcome::NotOffered {
            reason: "a doctor probe is never a session".into(),
        }))
    }

    /// Answers a request and hands the answer to its waiting hook. `Ok` carries what to wait on
    /// for the hook's confirmation that it printed it ([`SessionsRegistry::answer_confirmed`]
    /// does both).
    pub fn answer(
        &self,
        target: &Target,
        answer: Answer,
        source: AnswerSource,
    ) -> Result<(Closed, oneshot::Receiver<()>), AnswerError> {
        let now = self.clock.now();
        let mut changes = Vec::new();
        let (result, seq) = {
            let mut inner = self.lock();
            let mut touched = BTreeSet::new();
            let result = match inner.answers.book.answer(target, answer, source, now.wall) {
                Err(refusal) => {
                    // An answer at the deadline closes the request: its hook is told, and its row
                    // loses it.
                    if let Target::Request(id) = target {
                        if inner.answers.book.get(id).is_none() {
                            if let Some(waiter) = inner.answers.waiters.remove(id) {
                                // It was open until this answer came too late: record its end.
                                if let Some(closed) = inner.answers.book.closed(id).cloned() {
                                    inner.answers.record(&closed);
                                }
                                let _ = waiter.send(Delivery {
                                    decision: HookDecision::None {
                                        reason: refusal.to_string(),
                                    },
                                    printed: None,
                                });
                            }
                        }
                    }
                    touched.extend(rows_with_requests(&inner));
                    Err(AnswerError::Refused(refusal))
                }
                Ok(answered) => {
                    let closed = answered.closed;
                    inner.answers.record(&closed);
                    touched.insert(closed.ask.session.clone());
                    let (printed_tx, printed_rx) = oneshot::channel();
                    let delivered = inner.answers.waiters.remove(&closed.id).is_some_and(|w| {
                        let outcome = match &closed.outcome {
                            Outcome::Answered { answer, .. } => HookDecision::from_answer(answer),
                            other => HookDecision::None {
                                reason: other.describe(),
                            },
                        };
                        w.send(Delivery {
                            decision: outcome,
                            printed: Some(printed_tx),
                        })
                        .is_ok()
                    });
                    if delivered {
                        Ok((closed, printed_rx))
                    } else {
                        Err(AnswerError::NotDelivered(closed.id))
                    }
                }
            };
            refresh_views(&mut inner, &touched, &mut changes);
            (result, stamp(&mut inner, &changes))
        };
        self.publish(changes, seq, now.wall);
        result
    }

    /// Answers what the user named (`named`: a request id or a session id, from the row drawn on
    /// `drawn_on`: `None` for this machine) where the one rule ([`crate::answering::route`])
    /// sends it: here it is answered and confirmed ([`SessionsRegistry::answer_confirmed`]); a
    /// remote's request comes back as [`AnswerError::OnRemote`] (only the CLI can take it there,
    /// over ssh); anything else is refused with the rule's sentence.
    pub async fn answer_routed(
        &self,
        named: &str,
        drawn_on: Option<&str>,
        answer: Answer,
        source: AnswerSource,
    ) -> Result<Delivered, AnswerError> {
        use crate::answering::route::{route_answer, AnswerRoute};
        match route_answer(&self.pending(), named, drawn_on, &answer) {
            AnswerRoute::Here(target) => self.answer_confirmed(&target, answer, source).await,
            AnswerRoute::OnRemote(remote) => Err(AnswerError::OnRemote {
                id: remote.id,
                host: remote.host,
            }),
            AnswerRoute::Refused(sentence) => Err(AnswerError::NotRouted(sentence)),
        }
    }

    /// Answers a request and waits (at most [`PRINT_CONFIRM_TIMEOUT`]) for its hook to confirm
    /// that the agent has the answer. `Ok` only then.
    pub async fn answer_confirmed(
        &self,
        target: &Target,
        answer: Answer,
        source: AnswerSource,
    ) -> Result<Delivered, AnswerError> {
        let (closed, printed) = self.answer(target, answer, source)?;
        let request = view_of(&closed);
        match tokio::time::timeout(PRINT_CONFIRM_TIMEOUT, printed).await {
            Ok(Ok(())) => {
                let waited = closed.waited().to_std().unwrap_or_default();
                let answer = match closed.outcome {
                    Outcome::Answered { answer, .. } => answer,
                    _ => return Err(AnswerError::NotDelivered(closed.id)),
                };
                Ok(Delivered {
                    request,
                    answer,
                    waited,
                })
            }
            _ => Err(AnswerError::NotDelivered(closed.id)),
        }
    }

    /// Every request that closes from now on, however it closed (what the history store
    /// records). Bounded like [`subscribe`](Self::subscribe): a receiver that falls behind lags.
    pub fn subscribe_closed_requests(&self) -> broadcast::Receiver<Closed> {
        self.lock().answers.closed.subscribe()
    }

    /// The open requests, oldest first: this machine's, then those the remotes' sessions show
    /// (each with its host; answered on that machine).
    pub fn pending(&self) -> Vec<PendingView> {
        let inner = self.lock();
        let mut all: Vec<PendingView> = inner.answers.book.open().map(|r| r.view()).collect();
        let mut remote: Vec<PendingView> = inner
            .remote
            .values()
            .flat_map(|sessions| sessions.values())
            .flat_map(|s| s.pending.iter().cloned())
            .collect();
        drop(inner);
        remote.sort_by(|a, b| (a.asked_at, &a.id).cmp(&(b.asked_at, &b.id)));
        all.extend(remote);
        all
    }

    /// The agent says `id` was answered without us (Codex's server: `serverRequest/resolved`
    /// after its terminal's answer): it closes as the agent having moved on, and its waiter is
    /// told there is nothing to send.
    pub fn request_answered_elsewhere(&self, id: &RequestId) {
        let now = self.clock.now();
        let mut changes = Vec::new();
        let seq = {
            let mut inner = self.lock();
            let Some(open) = inner.answers.book.get(id).map(|r| r.ask.clone()) else {
                return;
            };
            let closed = inner
                .answers
                .book
                .moved_on(&open.session, Some(&open.call_id), now.wall);
            for c in &closed {
                wake_closed(&mut inner.answers, c);
            }
            refresh_views(&mut inner, &BTreeSet::from([open.session]), &mut changes);
            stamp(&mut inner, &changes)
        };
        self.publish(changes, seq, now.wall);
    }

    /// The hook waiting on `id` is gone (it hung up, or its deadline passed): the request closes
    /// as expired at or after its deadline, as abandoned before.
    pub fn request_over(&self, id: &RequestId) {
        let now = self.clock.now();
        let mut changes = Vec::new();
        let seq = {
            let mut inner = self.lock();
            inner.answers.waiters.remove(id);
            let Some(open) = inner.answers.book.get(id).map(|r| r.ask.clone()) else {
                return;
            };
            let closed = if now.wall >= open.answer_by {
                inner.answers.book.expire(now.wall)
            } else {
                inner
                    .answers
                    .book
                    .abandoned(id, now.wall)
                    .into_iter()
                    .collect()
            };
            for c in &closed {
                inner.answers.record(c);
            }
            refresh_views(&mut inner, &BTreeSet::from([open.session]), &mut changes);
            stamp(&mut inner, &changes)
        };
        self.publish(changes, seq, now.wall);
    }
}

/// The local sessions whose rows show a request.
fn rows_with_requests(inner: &Inner) -> Vec<SessionKey> {
    inner
        .live
        .values()
        .filter(|r| !r.session.pending.is_empty())
        .map(|r| SessionKey {
            host: None,
            session_id: r.session.session_id.clone(),
        })
        .collect()
}

/// A closed request as rows show it.
fn view_of(closed: &Closed) -> PendingView {
    agent_tray_domain::pending::PendingRequest {
        id: closed.id.clone(),
        ask: closed.ask.clone(),
    }
    .view()
}

/// Tells a closed request's hook that there is nothing to print.
fn wake_closed(answers: &mut Answers, closed: &Closed) {
    answers.record(closed);
    if let Some(waiter) = answers.waiters.remove(&closed.id) {
        let _ = waiter.send(Delivery {
            decision: HookDecision::None {
                reason: closed.outcome.describe(),
            },
            printed: None,
        });
    }
}

/// Closes the requests whose session no longer waits for permission (the agent moved on: the
/// terminal answered, the tool ran, the turn ended) or has ended, and those past their deadline;
/// wakes their hooks and refreshes the rows. Called with every change to the sessions, before
/// it is stamped.
pub(super) fn settle_locked(
    inner: &mut Inner,
    now: DateTime<Utc>,
    changes: &mut Vec<SessionChange>,
) {
    if inner.answers.book.open().next().is_none() {
        return;
    }
    let mut closed = inner.answers.book.expire(now);
    let open: Vec<SessionKey> = inner
        .answers
        .book
        .open()
        .map(|r| r.ask.session.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for key in open {
        let state = match &key.host {
            None => inner.live.get(&key.session_id).map(|r| r.session.state),
            Some(host) => inner
                .remote
                .get(host)
                .and_then(|m| m.get(&key.session_id))
                .map(|s| s.state),
        };
        match state {
            Some(SessionState::Ended) | None => {
                closed.extend(inner.answers.book.session_ended(&key, now));
            }
            // A request stays open while its session waits for what it asks: a permission
            // while it waits for permission, a question while it waits for input.
            Some(state) => {
                let moved_on: Vec<String> = inner
                    .answers
                    .book
                    .open_for(&key)
                    .filter(|r| waited_on(r.ask.detail.kind()) != state)
                    .map(|r| r.ask.call_id.clone())
                    .collect();
                for call_id in moved_on {
                    closed.extend(inner.answers.book.moved_on(&key, Some(&call_id), now));
                }
            }
        }
    }
    if closed.is_empty() {
        return;
    }
    let touched: BTreeSet<SessionKey> = closed.iter().map(|c| c.ask.session.clone()).collect();
    for c in &closed {
        tracing::info!(request = %c.id, session_id = %c.ask.session.session_id, outcome = %c.outcome.describe(), "permission_request_closed");
        wake_closed(&mut inner.answers, c);
    }
    refresh_views(inner, &touched, changes);
}

/// Puts each touched local session's open requests on its row; a row whose list changed is
/// published (its change already in `changes` is brought up to date, or a new one added).
fn refresh_views(
    inner: &mut Inner,
    touched: &BTreeSet<SessionKey>,
    changes: &mut Vec<SessionChange>,
) {
    for key in touched.iter().filter(|k| k.host.is_none()) {
        let views: Vec<PendingView> = inner.answers.book.open_for(key).map(|r| r.view()).collect();
        let Some(record) = inner.live.get_mut(&key.session_id) else {
            continue;
        };
        if record.session.pending == views {
            continue;
        }
        record.session.pending = views;
        let session = record.session.clone();
        let existing = changes.iter_mut().find_map(|c| match c {
            SessionChange::Added { session: s } | SessionChange::Changed { session: s, .. }
                if s.session_id == session.session_id && s.host.is_none() =>
            {
                Some(s)
            }
            _ => None,
        });
        match existing {
            Some(s) => *s = session,
            None => changes.push(SessionChange::Changed {
                old_state: session.state,
                session,
            }),
        }
    }
}

/// The state a session is in while a request of this kind waits on the user.
fn waited_on(kind: crate::answering::RequestKind) -> SessionState {
    match kind {
        crate::answering::RequestKind::Permission => SessionState::WaitingForPermission,
        crate::answering::RequestKind::Question => SessionState::WaitingForInput,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, Session};
    use agent_tray_domain::pending::{AskDetail, PendingView};

    // A remote's request is listed with its host, and an answer to it here is refused with where
    // to answer it; it never reaches this machine's book.
    #[tokio::test]
    async fn a_remotes_request_is_listed_with_its_host_and_answered_only_there() {
        let registry = SessionsRegistry::new();
        let now = chrono::Utc::now();
        let mut s = Session::new(
            "s-far",
            Agent::Claude,
            SessionState::WaitingForPermission,
            now,
        );
        s.host = Some("gpu-box".into());
        s.pending = vec![PendingView {
            id: RequestId::parse("r4-far"),
            session_id: "s-far".into(),
            host: Some("gpu-box".into()),
            agent: Agent::Claude,
            kind: Default::default(),
            detail: AskDetail {
                tool: "Bash".into(),
                command: Some("rm -rf checkpoints".into()),
                ..AskDetail::default()
            },
            asked_at: now,
            answer_by: now + chrono::Duration::seconds(60),
            accepts: Accepts {
                allow_for_session: false,
                deny_message: false,
            },
            shown: Default::default(),
        }];
        registry.set_remote_sessions("gpu-box", vec![s]);
        let listed = registry.pending();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].host.as_deref(), Some("gpu-box"));
        let refused = registry
            .answer_routed("r4-far", None, Answer::Allow, AnswerSource::Cli)
            .await
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "request r4-far is on gpu-box: answer it there (`agent-tray allow r4-far` on that machine, or in its terminal)"
        );
        // Drawn on the remote's row, whatever its id: answered there, never here.
        let drawn = registry
            .answer_routed(
                "r4-far",
                Some("gpu-box"),
                Answer::Deny { message: None },
                AnswerSource::Window,
            )
            .await
            .unwrap_err();
        assert!(matches!(drawn, AnswerError::OnRemote { ref host, .. } if host == "gpu-box"));
    }
}
