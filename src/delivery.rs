//! What the engine knows about hook delivery itself, apart from sessions: which `doctor` probes
//! arrived, which hook events this version does not know, and when the last real hook event of
//! each agent came in.
//!
//! Why a ledger of its own: a probe proves that the exact command line in an agent's config
//! reaches this engine, and it must never become a session (no row, no `list`, no history, no
//! alert, no journal record to replay). Unknown events are the first sign that an agent grew new
//! hooks; dropping them silently hides that, turning each into a session would invent states. So
//! both land here, counted, and `doctor` shows them.
//!
//! Everything is bounded: the last [`MAX_PROBES`] probes, at most [`MAX_UNKNOWN_NAMES`] distinct
//! unknown names (later names are counted under [`OTHER_NAMES`]), names cut to [`MAX_NAME`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::Agent;
pub use crate::model::{is_probe_id, PROBE_PREFIX};

/// Probes remembered.
pub const MAX_PROBES: usize = 32;
/// Distinct unknown event names remembered, over both agents.
pub const MAX_UNKNOWN_NAMES: usize = 64;
/// The longest unknown event name kept.
pub const MAX_NAME: usize = 64;
/// Where unknown names past [`MAX_UNKNOWN_NAMES`] are counted.
pub const OTHER_NAMES: &str = "(other names)";

/// One probe the engine received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSeen {
    pub probe_id: String,
    /// The agent the hook said it runs for (`--agent`), when it said.
    #[serde(default)]
    pub agent: Option<Agent>,
    pub at: DateTime<Utc>,
}

/// How often one unknown hook event name arrived from one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownEventCount {
    #[serde(default)]
    pub agent: Option<Agent>,
    pub event: String,
    pub count: u64,
    pub last_at: DateTime<Utc>,
}

/// The last real hook event the engine received from one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastHookEvent {
    pub agent: Agent,
    pub event: String,
    pub at: DateTime<Utc>,
}

/// How often another agent (GitHub Copilot CLI, Cursor) ran our hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignCallCount {
    /// "copilot" or "cursor" ([`crate::hook_payload::ForeignCaller`]); anything else is counted
    /// under [`OTHER_NAMES`].
    pub caller: String,
    pub count: u64,
    /// The hook event of the last call, as the caller named it.
    pub last_event: String,
    pub last_at: DateTime<Utc>,
}

/// `delivery`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryReport {
    #[serde(default)]
    pub probes: Vec<ProbeSeen>,
    #[serde(default)]
    pub unknown_events: Vec<UnknownEventCount>,
    #[serde(default)]
    pub last_hook_events: Vec<LastHookEvent>,
    #[serde(default)]
    pub foreign_calls: Vec<ForeignCallCount>,
    /// When each agent's status-line bridge (`agent-tray status-line`) last reached the engine
    /// (`event` is `StatusLine`): `doctor` says from it whether the bridge works.
    #[serde(default)]
    pub last_status_lines: Vec<LastHookEvent>,
}

#[derive(Debug, Default)]
struct Inner {
    probes: VecDeque<ProbeSeen>,
    unknown: BTreeMap<(Option<Agent>, String), (u64, DateTime<Utc>)>,
    last: BTreeMap<Agent, (String, DateTime<Utc>)>,
    foreign: BTreeMap<String, (u64, String, DateTime<Utc>)>,
    status_lines: BTreeMap<Agent, DateTime<Utc>>,
}

/// The engine's delivery ledger. Cheap, in memory, lost on restart (a probe is answered within
/// seconds; the journal keeps the lasting record of real events).
#[derive(Debug, Default)]
pub struct DeliveryLedger {
    inner: Mutex<Inner>,
}

impl DeliveryLedger {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere while holding this lock leaves counters, never broken invariants.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn record_probe(&self, probe_id: &str, agent: Option<Agent>, at: DateTime<Utc>) {
        let mut inner = self.lock();
        if inner.probes.len() >= MAX_PROBES {
            inner.probes.pop_front();
        }
        inner.probes.push_back(ProbeSeen {
            probe_id: cut(probe_id, MAX_NAME + PROBE_PREFIX.len()),
            agent,
            at,
        });
    }

    pub fn record_unknown_event(&self, agent: Option<Agent>, event: &str, at: DateTime<Utc>) {
        let mut inner = self.lock();
        let mut key = (agent, cut(event, MAX_NAME));
        if !inner.unknown.contains_key(&key) && inner.unknown.len() >= MAX_UNKNOWN_NAMES {
            key.1 = OTHER_NAMES.to_string();
        }
        let entry = inner.unknown.entry(key).or_insert((0, at));
        entry.0 = entry.0.saturating_add(1);
        entry.1 = at;
    }

    /// Counts a call of our hook by another agent. The caller names are a closed set, so the
    /// map stays at three entries whatever a client sends.
    pub fn record_foreign_call(&self, caller: &str, event: &str, at: DateTime<Utc>) {
        let name = crate::hook_payload::ForeignCaller::from_name(caller)
            .map_or(OTHER_NAMES, |c| c.as_str());
        let mut inner = self.lock();
        let entry = inner
            .foreign
            .entry(name.to_string())
            .or_insert((0, String::new(), at));
        entry.0 = entry.0.saturating_add(1);
        entry.1 = cut(event, MAX_NAME);
        entry.2 = at;
    }

    pub fn record_hook_event(&self, agent: Agent, event: &str, at: DateTime<Utc>) {
        self.lock().last.insert(agent, (event.to_string(), at));
    }

    /// Notes a status-line input that reached the engine (kept apart from the hook events, so
    /// `doctor`'s word on the hooks is not the status line's).
    pub fn record_status_line(&self, agent: Agent, at: DateTime<Utc>) {
        self.lock().status_lines.insert(agent, at);
    }

    pub fn report(&self) -> DeliveryReport {
        let inner = self.lock();
        DeliveryReport {
            probes: inner.probes.iter().cloned().collect(),
            unknown_events: inner
                .unknown
                .iter()
                .map(|((agent, event), (count, last_at))| UnknownEventCount {
                    agent: *agent,
                    event: event.clone(),
                    count: *count,
                    last_at: *last_at,
                })
                .collect(),
            last_hook_events: inner
                .last
                .iter()
                .map(|(agent, (event, at))| LastHookEvent {
                    agent: *agent,
                    event: event.clone(),
                    at: *at,
                })
                .collect(),
            foreign_calls: inner
                .foreign
                .iter()
                .map(|(caller, (count, event, at))| ForeignCallCount {
                    caller: caller.clone(),
                    count: *count,
                    last_event: event.clone(),
                    last_at: *at,
                })
                .collect(),
            last_status_lines: inner
                .status_lines
                .iter()
                .map(|(agent, at)| LastHookEvent {
                    agent: *agent,
                    event: "StatusLine".into(),
                    at: *at,
                })
                .collect(),
        }
    }
}

/// At most `max` characters, control characters replaced (the name is printed by `doctor`).
fn cut(text: &str, max: usize) -> String {
    text.chars()
        .take(max)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn unknown_events_are_counted_per_agent_and_name_within_a_bound() {
        let ledger = DeliveryLedger::new();
        let at = Utc::now();
        ledger.record_unknown_event(Some(Agent::Claude), "FutureEvent", at);
        ledger.record_unknown_event(Some(Agent::Claude), "FutureEvent", at);
        ledger.record_unknown_event(Some(Agent::Codex), "FutureEvent", at);
        let report = ledger.report();
        let claude = report
            .unknown_events
            .iter()
            .find(|u| u.agent == Some(Agent::Claude))
            .unwrap();
        assert_eq!((claude.event.as_str(), claude.count), ("FutureEvent", 2));
        assert_eq!(report.unknown_events.len(), 2);

        for i in 0..200 {
            ledger.record_unknown_event(None, &format!("E{i}\n{}", "x".repeat(500)), at);
        }
        let report = ledger.report();
        assert!(report.unknown_events.len() <= MAX_UNKNOWN_NAMES + 1);
        let other = report
            .unknown_events
            .iter()
            .find(|u| u.event == OTHER_NAMES)
            .unwrap();
        assert_eq!(other.count, 200 - (MAX_UNKNOWN_NAMES as u64 - 2));
        assert!(report
            .unknown_events
            .iter()
            .all(|u| u.event.chars().count() <= MAX_NAME && !u.event.contains('\n')));
    }

    #[test]
    fn only_the_last_probes_are_kept() {
        let ledger = DeliveryLedger::new();
        for i in 0..(MAX_PROBES + 5) {
            ledger.record_probe(&format!("{PROBE_PREFIX}{i}"), None, Utc::now());
        }
        let probes = ledger.report().probes;
        assert_eq!(probes.len(), MAX_PROBES);
        assert_eq!(probes[0].probe_id, format!("{PROBE_PREFIX}5"));
        assert!(is_probe_id(&probes[0].probe_id));
        assert!(!is_probe_id("33413ec6-95b9-4336-8b7d-2d91c4d8b30c"));
    }
}
