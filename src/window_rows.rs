//! Which sessions the desktop window lists: the row rules, in one pure function.
//!
//! The window gets its rows twice over: a snapshot when it opens, then events as things change.
//! When each path applied its own rules they disagreed (the snapshot capped "Ended recently",
//! the events did not; a dismissal outlived the session's resume). Now both call
//! [`window_rows`] on the same inputs: the desktop shell computes the rows for a snapshot, and
//! for events computes them again after each change and sends the difference.
//!
//! The rules:
//! - only the agents the user watches;
//! - every session that has not ended;
//! - ended sessions ("Ended recently"): the [`ENDED_SHOWN`] most recently ended, and only those
//!   that ended within [`ENDED_RECENT`];
//! - minus endings the user dismissed. A dismissal hides that ending only: a session resumed
//!   after it is shown again, and so is its next ending.
//!
//! Rows come in display order: needs you, working, idle, ended; oldest session first within a
//! section (as in the tray menu), so rows do not jump around.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::catalogue::InCatalogue;
use crate::model::SessionKey;
use crate::model::{Agent, Session, SessionState};
use crate::tray_model::{Section, SessionView};

/// At most this many ended sessions are listed under "Ended recently".
pub const ENDED_SHOWN: usize = 20;
/// An ended session is listed for this long after it ended.
pub const ENDED_RECENT: Duration = Duration::hours(24);

/// The endings the user dismissed: session (host and id) -> when that ending began (its
/// `state_since`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dismissed {
    endings: HashMap<SessionKey, DateTime<Utc>>,
}

impl Dismissed {
    /// Hides this session's current ending. Only an ended session can be dismissed (a live one
    /// may need the user); returns whether it was.
    pub fn dismiss(&mut self, session: &Session) -> bool {
        if session.state != SessionState::Ended {
            return false;
        }
        self.endings.insert(session.key(), session.state_since);
        true
    }

    /// Whether the user dismissed the ending `session` is in now.
    pub fn hides(&self, session: &Session) -> bool {
        session.state == SessionState::Ended
            && self
                .endings
                .get(&session.key())
                .is_some_and(|at| session.state_since <= *at)
    }

    /// Forgets dismissals of endings older than [`ENDED_RECENT`]: those are not listed anyway,
    /// so the set stays as small as what the window can show.
    pub fn forget_old(&mut self, now: DateTime<Utc>) {
        self.endings.retain(|_, at| now - *at < ENDED_RECENT);
    }

    pub fn len(&self) -> usize {
        self.endings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.endings.is_empty()
    }
}

/// The window's rows. `sessions` holds the live sessions then the ended ones that left the live
/// list; when a session (host and id) appears twice the first one counts: the same id on two
/// hosts is two sessions, two rows. `now` is the wall clock.
pub fn window_rows(
    sessions: &[Session],
    watched: &[Agent],
    dismissed: &Dismissed,
    now: DateTime<Utc>,
) -> Vec<SessionView> {
    let mut seen = HashSet::new();
    let candidates: Vec<&Session> = sessions
        .iter()
        .filter(|s| seen.insert((s.host.as_deref(), s.session_id.as_str())))
        .filter(|s| watched.contains(&s.agent))
        .filter(|s| !dismissed.hides(s))
        .collect();
    let (mut ended, mut rows): (Vec<&Session>, Vec<&Session>) = candidates
        .into_iter()
        .partition(|s| s.state == SessionState::Ended);
    ended.retain(|s| now - s.state_since < ENDED_RECENT);
    ended.sort_by(|a, b| {
        b.state_since
            .cmp(&a.state_since)
            .then_with(|| a.session_id.cmp(&b.session_id))
            .then_with(|| a.host.cmp(&b.host))
    });
    ended.truncate(ENDED_SHOWN);
    rows.extend(ended);
    rows.sort_by(|a, b| {
        Section::of(a.state)
            .cmp(&Section::of(b.state))
            .then_with(|| a.started_at.cmp(&b.started_at))
            .then_with(|| a.session_id.cmp(&b.session_id))
            .then_with(|| a.host.cmp(&b.host))
    });
    rows.into_iter().map(SessionView::of).collect()
}

/// An agent as the window names it. The UI's list of agents is generated from [`agents`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AgentInfo {
    pub agent: Agent,
    pub name: String,
    /// The colour the window shows the agent's name in (a CSS colour, from its adapter).
    pub colour: String,
    /// Its icon's characters (white on its colour).
    pub monogram: String,
    /// Whether its permission requests can be answered from outside its terminal at all (see
    /// [`crate::answering`]); where not, a wait says to answer in the terminal.
    pub answerable: bool,
}

/// A section of the window with its title. The UI's sections are generated from [`sections`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SectionInfo {
    pub section: Section,
    pub title: String,
}

/// Every agent, in the order the window lists them.
pub fn agents() -> Vec<AgentInfo> {
    Agent::ALL
        .iter()
        .map(|&agent| AgentInfo {
            agent,
            name: agent.display_name().to_string(),
            colour: agent.entry().colour.to_string(),
            monogram: agent.entry().monogram.to_string(),
            answerable: agent.entry().answer_path.is_some(),
        })
        .collect()
}

/// Every section, in display order.
pub fn sections() -> Vec<SectionInfo> {
    Section::ALL
        .iter()
        .map(|&section| SectionInfo {
            section,
            title: section.title().to_string(),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).single().unwrap()
    }

    fn session(id: &str, state: SessionState, since: i64) -> Session {
        let mut s = Session::new(id, Agent::Claude, state, at(since));
        s.state_since = at(since);
        s
    }

    fn ids(rows: &[SessionView]) -> Vec<&str> {
        rows.iter().map(|v| v.session.session_id.as_str()).collect()
    }

    const ALL: &[Agent] = Agent::ALL;

    #[test]
    fn a_dismissed_ending_is_hidden_and_a_resume_shows_the_session_again() {
        let mut s = session("s1", SessionState::Ended, 100);
        let mut dismissed = Dismissed::default();
        assert!(dismissed.dismiss(&s));
        let now = at(200);
        assert!(window_rows(&[s.clone()], ALL, &dismissed, now).is_empty());
        // Resumed: working again, whatever was dismissed before.
        s.state = SessionState::Working;
        s.state_since = at(150);
        assert_eq!(
            ids(&window_rows(&[s.clone()], ALL, &dismissed, now)),
            ["s1"]
        );
        // And when it ends again, that is a new ending the user has not dismissed.
        s.state = SessionState::Ended;
        s.state_since = at(180);
        assert_eq!(ids(&window_rows(&[s], ALL, &dismissed, now)), ["s1"]);
    }

    #[test]
    fn a_live_session_cannot_be_dismissed() {
        let mut dismissed = Dismissed::default();
        assert!(!dismissed.dismiss(&session("s1", SessionState::WaitingForInput, 0)));
        assert!(dismissed.is_empty());
    }

    #[test]
    fn ended_recently_keeps_the_most_recent_endings_of_the_last_day() {
        let mut sessions: Vec<Session> = (0..30)
            .map(|n| session(&format!("e{n:02}"), SessionState::Ended, 1000 + n))
            .collect();
        sessions.push(session("old", SessionState::Ended, -90_000));
        sessions.push(session("live", SessionState::Idle, -90_000));
        let rows = window_rows(&sessions, ALL, &Dismissed::default(), at(2000));
        let ended: Vec<&str> = rows
            .iter()
            .filter(|v| v.section == Section::Ended)
            .map(|v| v.session.session_id.as_str())
            .collect();
        assert_eq!(ended.len(), ENDED_SHOWN);
        assert!(ended.contains(&"e29") && ended.contains(&"e10"));
        assert!(!ended.contains(&"e09"), "beyond the 20 most recent");
        assert!(!ended.contains(&"old"), "ended more than a day ago");
        assert_eq!(ids(&rows)[0], "live", "a live session is shown however old");
    }

    #[test]
    fn a_dismissal_frees_its_place_for_the_next_most_recent_ending() {
        let sessions: Vec<Session> = (0..21)
            .map(|n| session(&format!("e{n:02}"), SessionState::Ended, n))
            .collect();
        let mut dismissed = Dismissed::default();
        assert!(!ids(&window_rows(&sessions, ALL, &dismissed, at(100))).contains(&"e00"));
        dismissed.dismiss(&sessions[20]);
        let rows = window_rows(&sessions, ALL, &dismissed, at(100));
        assert!(ids(&rows).contains(&"e00"));
        assert!(!ids(&rows).contains(&"e20"));
    }

    #[test]
    fn rows_are_grouped_by_section_oldest_first_and_only_for_watched_agents() {
        let mut codex = session("codex", SessionState::Working, 0);
        codex.agent = Agent::Codex;
        let mut late = session("late", SessionState::WaitingForPermission, 0);
        late.started_at = at(50);
        let sessions = [
            session("ended", SessionState::Ended, 90),
            session("idle", SessionState::Idle, 10),
            codex,
            late,
            session("early", SessionState::WaitingForInput, 0),
            session("work", SessionState::Working, 5),
        ];
        let rows = window_rows(&sessions, ALL, &Dismissed::default(), at(100));
        assert_eq!(
            ids(&rows),
            ["early", "late", "codex", "work", "idle", "ended"]
        );
        let rows = window_rows(&sessions, &[Agent::Claude], &Dismissed::default(), at(100));
        assert!(!ids(&rows).contains(&"codex"));
    }

    #[test]
    fn a_session_both_live_and_remembered_as_ended_counts_once_as_live() {
        let sessions = [
            session("s1", SessionState::Working, 10),
            session("s1", SessionState::Ended, 5),
        ];
        let rows = window_rows(&sessions, ALL, &Dismissed::default(), at(100));
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].section, Section::Working);
    }

    #[test]
    fn a_local_and_a_remote_session_with_the_same_id_are_two_rows_and_dismissing_one_keeps_the_other(
    ) {
        // A dev box (its link) announces a session whose id is also a local session's: two
        // sessions, so two rows, and the user's dismissal of the local ending hides only it.
        let local = session("same", SessionState::Ended, 10);
        let mut remote = session("same", SessionState::Ended, 20);
        remote.host = Some("devbox".into());
        let both = [local.clone(), remote.clone()];
        let rows = window_rows(&both, ALL, &Dismissed::default(), at(100));
        let hosts: Vec<Option<&str>> = rows.iter().map(|v| v.session.host.as_deref()).collect();
        assert_eq!(hosts.len(), 2, "both rows are listed: {hosts:?}");
        assert!(hosts.contains(&None) && hosts.contains(&Some("devbox")));

        let mut dismissed = Dismissed::default();
        assert!(dismissed.dismiss(&local));
        let rows = window_rows(&both, ALL, &dismissed, at(100));
        assert_eq!(rows.len(), 1, "only the local ending is hidden");
        assert_eq!(rows[0].session.host.as_deref(), Some("devbox"));
    }

    #[test]
    fn old_dismissals_are_forgotten() {
        let mut dismissed = Dismissed::default();
        dismissed.dismiss(&session("a", SessionState::Ended, 0));
        dismissed.dismiss(&session("b", SessionState::Ended, 90_000));
        dismissed.forget_old(at(100_000));
        assert_eq!(dismissed.len(), 1);
    }

    #[test]
    fn the_catalogs_name_every_agent_and_section_in_order() {
        let names: Vec<String> = agents().into_iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            [
                "Claude", "Codex", "Gemini", "Qwen", "Copilot", "OpenCode", "Kilo", "Pi", "Cline",
                "Droid", "Crush", "Qoder", "Auggie"
            ]
        );
        let titles: Vec<String> = sections().into_iter().map(|s| s.title).collect();
        assert_eq!(titles, ["Needs you", "Working", "Idle", "Ended recently"]);
    }
}
