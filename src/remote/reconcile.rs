//! What a (re)connected remote's snapshot means for the sessions this side holds of it. Pure.
//!
//! The snapshot is the truth about what the remote holds now; what this side holds is what it
//! last heard, possibly marked unreachable. So: every session in the snapshot is taken as the
//! remote has it (reachable again); a session held live that the snapshot no longer lists ended
//! while the link was cut, with the remote's own end reason when its recently-ended list has it
//! (the remote forgot it otherwise, e.g. it restarted: then [`EndReason::Ttl`], "nothing heard",
//! which raises no "died" alert); a session held as ended that the remote no longer lists is
//! dropped, as its own linger would have. Nothing is duplicated: one entry per session id.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::model::{EndReason, Session, SessionState};

/// The picture after a snapshot, and which sessions in it ended while the link was cut (shown
/// as ended for a linger, then dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciled {
    pub picture: HashMap<String, Session>,
    pub ended_while_cut: Vec<String>,
}

/// See the module comment. `live` and `ended` are the snapshot's, already parsed for `host`.
pub fn reconcile(
    held: &HashMap<String, Session>,
    live: Vec<Session>,
    ended: Vec<Session>,
    now: DateTime<Utc>,
) -> Reconciled {
    let mut picture: HashMap<String, Session> = HashMap::with_capacity(live.len());
    for mut session in live {
        session.unreachable_since = None;
        picture.insert(session.session_id.clone(), session);
    }
    let mut ended_by_id: HashMap<String, Session> = ended
        .into_iter()
        .map(|s| (s.session_id.clone(), s))
        .collect();
    let mut ended_while_cut = Vec::new();
    let mut gone: Vec<&Session> = held
        .values()
        .filter(|s| !picture.contains_key(&s.session_id) && s.state != SessionState::Ended)
        .collect();
    gone.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    for before in gone {
        let session = match ended_by_id.remove(&before.session_id) {
            Some(mut told) if told.state == SessionState::Ended => {
                told.unreachable_since = None;
                told
            }
            _ => {
                let mut guessed = before.clone();
                guessed.state = SessionState::Ended;
                guessed.end_reason = Some(EndReason::Ttl);
                guessed.state_since = now;
                guessed.unreachable_since = None;
                guessed
            }
        };
        ended_while_cut.push(session.session_id.clone());
        picture.insert(session.session_id.clone(), session);
    }
    Reconciled {
        picture,
        ended_while_cut,
    }
}

/// Marks every session not yet ended as unreachable since `since` (kept if already marked).
pub fn mark_unreachable(picture: &mut HashMap<String, Session>, since: DateTime<Utc>) {
    for session in picture.values_mut() {
        if session.state != SessionState::Ended && session.unreachable_since.is_none() {
            session.unreachable_since = Some(since);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::Agent;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    fn s(id: &str, state: SessionState) -> Session {
        let mut s = Session::new(id, Agent::Claude, state, at(0));
        s.host = Some("devbox".into());
        s
    }

    fn held(sessions: &[Session]) -> HashMap<String, Session> {
        sessions
            .iter()
            .map(|s| (s.session_id.clone(), s.clone()))
            .collect()
    }

    #[test]
    fn a_reconnect_takes_the_remote_states_clears_unreachable_and_adds_new_sessions() {
        // The link was cut while "a" worked; meanwhile "a" went idle and "b" started.
        let mut before = held(&[s("a", SessionState::Working)]);
        mark_unreachable(&mut before, at(10));
        assert_eq!(before["a"].unreachable_since, Some(at(10)));
        assert_eq!(before["a"].state, SessionState::Working, "never ended");
        let out = reconcile(
            &before,
            vec![s("a", SessionState::Idle), s("b", SessionState::Starting)],
            vec![],
            at(20),
        );
        assert_eq!(out.picture.len(), 2, "nothing duplicated");
        assert_eq!(out.picture["a"].state, SessionState::Idle);
        assert_eq!(out.picture["a"].unreachable_since, None);
        assert_eq!(out.picture["b"].state, SessionState::Starting);
        assert!(out.ended_while_cut.is_empty());
    }

    #[test]
    fn a_session_that_ended_while_cut_ends_with_the_remote_reason() {
        let before = held(&[s("a", SessionState::Working), s("b", SessionState::Idle)]);
        let mut told = s("a", SessionState::Ended);
        told.end_reason = Some(EndReason::ProcessGone);
        told.state_since = at(15);
        let out = reconcile(&before, vec![], vec![told], at(20));
        assert_eq!(out.picture["a"].state, SessionState::Ended);
        assert_eq!(out.picture["a"].end_reason, Some(EndReason::ProcessGone));
        assert_eq!(out.picture["a"].state_since, at(15), "the remote's time");
        // The remote forgot "b" (it restarted): ended as "nothing heard", which is not a death.
        assert_eq!(out.picture["b"].end_reason, Some(EndReason::Ttl));
        assert_eq!(out.ended_while_cut, ["a", "b"]);
    }

    #[test]
    fn a_session_already_ended_here_that_the_remote_dropped_is_dropped() {
        let before = held(&[s("a", SessionState::Ended)]);
        let out = reconcile(&before, vec![], vec![], at(20));
        assert!(out.picture.is_empty());
        // Positive control: a live one is kept (as ended).
        let out = reconcile(&held(&[s("a", SessionState::Idle)]), vec![], vec![], at(20));
        assert_eq!(out.picture.len(), 1);
    }

    #[test]
    fn ended_sessions_are_never_marked_unreachable() {
        let mut picture = held(&[s("a", SessionState::Ended), s("b", SessionState::Idle)]);
        mark_unreachable(&mut picture, at(5));
        assert_eq!(picture["a"].unreachable_since, None);
        assert_eq!(picture["b"].unreachable_since, Some(at(5)));
        mark_unreachable(&mut picture, at(9));
        assert_eq!(
            picture["b"].unreachable_since,
            Some(at(5)),
            "since the first cut"
        );
    }
}
