//! The pid watcher's rule, pure: from a snapshot of the sessions that have a pid and a probe that
//! answers "is this process alive, and which one is it", what ends and what is vouched for.
//!
//! It is a file of its own because two owners ask it: the watcher on each tick and exit event
//! ([`super::pid_watcher`]), and the registry's reaper before it ends a silent session on the TTL
//! ([`crate::registry`]). Neither the registry nor the watcher is imported here, so the registry
//! sits above this rule and below the watcher that drives it, with no circle between them. The
//! reasons behind each rule are in [`super::pid_watcher`]'s module comment.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use crate::model::{EndReason, Session};
use crate::process::PidProbe;

/// What the pid watcher needs of one session, taken under the lock without I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidCandidate {
    pub session_id: String,
    pub pid: u32,
    pub pid_start: Option<String>,
    pub prompted: bool,
    pub streamed: bool,
    pub last_seen: DateTime<Utc>,
}

impl PidCandidate {
    /// The process this candidate was seen with.
    pub fn owner(&self) -> PidOwner {
        PidOwner {
            pid: self.pid,
            pid_start: self.pid_start.clone(),
        }
    }
}

/// The process a decision taken off the lock was about: its pid, and its start token when one
/// was known. Applied only while the session still belongs to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidOwner {
    pub pid: u32,
    pub pid_start: Option<String>,
}

impl PidOwner {
    /// True while `session` still belongs to this process: the same pid, and no start token that
    /// tells another process apart (a token known on one side only cannot, on its own).
    pub(crate) fn owns(&self, session: &Session) -> bool {
        session.pid == Some(self.pid)
            && match (session.pid_start.as_deref(), self.pid_start.as_deref()) {
                (Some(now), Some(seen)) => now == seen,
                _ => true,
            }
    }
}

/// What one tick decides for one session, and about which process (as the plan saw it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    End {
        session_id: String,
        owner: PidOwner,
        reason: EndReason,
    },
    /// The process is alive and is this session's: refresh it, keep its token.
    Vouch {
        session_id: String,
        owner: PidOwner,
        token: String,
    },
}

impl Decision {
    pub fn session_id(&self) -> &str {
        match self {
            Decision::End { session_id, .. } | Decision::Vouch { session_id, .. } => session_id,
        }
    }
}

/// Pids this watcher has itself seen alive, carried from tick to tick.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConfirmedPids(pub(super) HashSet<u32>);

impl ConfirmedPids {
    pub fn contains(&self, pid: u32) -> bool {
        self.0.contains(&pid)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Decides one tick from a snapshot of candidates. `probe` is called once per distinct pid; it is
/// the only way this function learns about processes, so tests script it. Pure apart from
/// updating `confirmed`.
pub fn plan(
    candidates: &[PidCandidate],
    confirmed: &mut ConfirmedPids,
    mut probe: impl FnMut(u32) -> PidProbe,
) -> Vec<Decision> {
    // Pids whose sessions ended some other way are forgotten, so the set stays as small as the
    // live sessions.
    let live_pids: HashSet<u32> = candidates.iter().map(|c| c.pid).collect();
    confirmed.0.retain(|pid| live_pids.contains(pid));

    let mut probes: HashMap<u32, PidProbe> = HashMap::with_capacity(live_pids.len());
    let mut newest_activity: HashMap<u32, DateTime<Utc>> = HashMap::with_capacity(live_pids.len());
    for c in candidates {
        probes.entry(c.pid).or_insert_with(|| probe(c.pid));
        newest_activity
            .entry(c.pid)
            .and_modify(|t| *t = (*t).max(c.last_seen))
            .or_insert(c.last_seen);
    }

    // A pid's death ends every session it owned, so "was it confirmed" is read before any of
    // them changes the set.
    let was_confirmed: HashSet<u32> = confirmed.0.clone();
    let mut decisions = Vec::new();
    for c in candidates {
        let Some(found) = probes.get(&c.pid) else {
            continue;
        };
        match found {
            PidProbe::Gone => {
                confirmed.0.remove(&c.pid);
                if was_confirmed.contains(&c.pid) {
                    decisions.push(Decision::End {
                        session_id: c.session_id.clone(),
                        owner: c.owner(),
                        reason: EndReason::ProcessGone,
                    });
                }
            }
            PidProbe::Alive { token } => {
                let recycled = matches!(
                    (c.pid_start.as_deref(), token.as_deref()),
                    (Some(stored), Some(now)) if stored != now
                );
                if recycled {
                    // The number belongs to another process now: forget it, so only a fresh
                    // sighting of that process can confirm it again.
                    confirmed.0.remove(&c.pid);
                    decisions.push(Decision::End {
                        session_id: c.session_id.clone(),
                        owner: c.owner(),
                        reason: EndReason::PidRecycled,
                    });
                    continue;
                }
                confirmed.0.insert(c.pid);
                let newest = newest_activity.get(&c.pid) == Some(&c.last_seen);
                if let (true, false, true, Some(token)) = (c.prompted, c.streamed, newest, token) {
                    decisions.push(Decision::Vouch {
                        session_id: c.session_id.clone(),
                        owner: c.owner(),
                        token: token.clone(),
                    });
                }
            }
        }
    }
    decisions
}

/// Decides what a process's exit event means: every session of that pid ends, as
/// [`EndReason::ProcessGone`], if this watcher had confirmed the pid (the same rule as [`plan`]'s
/// for a pid found gone). Pure apart from forgetting the pid in `confirmed`.
pub fn plan_exit(
    candidates: &[PidCandidate],
    pid: u32,
    confirmed: &mut ConfirmedPids,
) -> Vec<Decision> {
    if !confirmed.0.remove(&pid) {
        return Vec::new();
    }
    candidates
        .iter()
        .filter(|c| c.pid == pid)
        .map(|c| Decision::End {
            session_id: c.session_id.clone(),
            owner: c.owner(),
            reason: EndReason::ProcessGone,
        })
        .collect()
}
