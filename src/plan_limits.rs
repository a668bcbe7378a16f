//! Plan limits: how much of each rate-limit window of an agent's plan is used, and when it resets.
//!
//! Why it is shaped this way:
//! - **Only what the agent itself was told.** An adapter reads the windows its agent wrote down
//!   (Codex: `rate_limits` beside each `token_count` in a rollout, see
//!   `agents::codex::rollouts`). Nothing here asks a server or estimates from tokens; an agent
//!   that writes nothing has no row.
//! - **Per account and window, newest report wins** ([`PlanLimitsBook`]): every session of an
//!   account reports the same windows, so a report replaces what an older one said; a report
//!   older than the one kept (a rollout read late) changes nothing.
//! - **A window whose reset has passed is not shown as used**: its figure described a window that
//!   is over, and the next report tells the new one ([`PlanWindow::is_over`]).
//! - **A remote is taken at most every [`REMOTE_LIMITS_EVERY`]** ([`RemoteLimitsGate`], one per
//!   link): a remote's engine prints its limits at most every 3 s, so faster lines are a broken or
//!   hostile remote. Every book change wakes the window and the alerts, so a flood of lines would
//!   be a flood of work (and, with a new reset time each, of alerts): the newest line is held and
//!   taken when its time comes, the ones it replaced are dropped, and a burst of drops is logged
//!   once, when it begins.
//! - **The engine owns the book**, beside the sessions, not in the registry: limits are not session
//!   state. The feeds report, the book keeps, the socket (`agent-tray limits`), the window and the
//!   alerts read.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::Agent;

/// One rate-limit window of one account, as last reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct PlanWindow {
    pub agent: Agent,
    /// The remote the account's agent runs on (`null`: this machine).
    pub host: Option<String>,
    /// Which plan or limit the agent named (Codex's `plan_type`, else its `limit_id`).
    pub account: String,
    /// The window in words: `5h`, `weekly`, `daily`, or its length (`90m`, `3d`).
    pub window: String,
    /// Its length in minutes, where the agent said.
    #[ts(type = "number | null")]
    pub window_minutes: Option<u64>,
    /// Percent of the window used, 0 to 100, as reported.
    pub used_percent: f64,
    /// When the window resets, where the agent said.
    pub resets_at: Option<DateTime<Utc>>,
    /// When the agent was told (the report's own time).
    pub seen_at: DateTime<Utc>,
    /// The session whose files carried the report (a click on its alert opens it).
    pub session_id: String,
}

impl PlanWindow {
    /// Whether the window has reset since the report: its figure no longer holds.
    pub fn is_over(&self, now: DateTime<Utc>) -> bool {
        self.resets_at.is_some_and(|reset| reset <= now)
    }

    fn key(&self) -> WindowKey {
        (
            self.host.clone(),
            self.agent,
            self.account.clone(),
            self.window.clone(),
        )
    }
}

/// A window's identity: host, agent, account and window.
type WindowKey = (Option<String>, Agent, String, String);

/// A window in words, from its length: the two every plan has by name, others by length.
pub fn window_name(minutes: Option<u64>, slot: &str) -> String {
    match minutes {
        Some(300) => "5h".into(),
        Some(1440) => "daily".into(),
        Some(10080) => "weekly".into(),
        Some(m) if m > 0 && m % 1440 == 0 => format!("{}d", m / 1440),
        Some(m) if m > 0 && m % 60 == 0 => format!("{}h", m / 60),
        Some(m) if m > 0 => format!("{m}m"),
        _ => slot.to_string(),
    }
}

/// The newest report of every window, by host, agent, account and window. Changes are counted
/// on a watch channel so the window and the alerts hear of them without polling.
#[derive(Debug)]
pub struct PlanLimitsBook {
    windows: Mutex<BTreeMap<WindowKey, PlanWindow>>,
    changes: tokio::sync::watch::Sender<u64>,
}

/// At most this many windows are kept (a hostile remote cannot grow the book without bound).
pub const MAX_WINDOWS: usize = 64;
/// At most this many windows are taken from one remote.
pub const MAX_REMOTE_WINDOWS: usize = 8;

impl Default for PlanLimitsBook {
    fn default() -> Self {
        PlanLimitsBook {
            windows: Mutex::new(BTreeMap::new()),
            changes: tokio::sync::watch::channel(0).0,
        }
    }
}

impl PlanLimitsBook {
    /// Takes a report's windows: each replaces what an older report said of its window. Returns
    /// whether anything changed.
    pub fn apply(&self, windows: Vec<PlanWindow>) -> bool {
        let mut changed = false;
        {
            let mut book = self.windows.lock().unwrap_or_else(|p| p.into_inner());
            for window in windows {
                let key = window.key();
                match book.get(&key) {
                    Some(kept) if kept.seen_at > window.seen_at => continue,
                    Some(kept) if *kept == window => continue,
                    None if book.len() >= MAX_WINDOWS => continue,
                    _ => {}
                }
                book.insert(key, window);
                changed = true;
            }
        }
        if changed {
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
        changed
    }

    /// Takes a remote's whole list of windows in place of what it said before (each marked as
    /// the remote's, at most [`MAX_REMOTE_WINDOWS`]).
    pub fn replace_host(&self, host: &str, windows: Vec<PlanWindow>) {
        let changed = {
            let mut book = self.windows.lock().unwrap_or_else(|p| p.into_inner());
            let before: Vec<PlanWindow> = book
                .values()
                .filter(|w| w.host.as_deref() == Some(host))
                .cloned()
                .collect();
            book.retain(|(h, ..), _| h.as_deref() != Some(host));
            for mut window in windows.into_iter().take(MAX_REMOTE_WINDOWS) {
                window.host = Some(host.to_string());
                if book.len() < MAX_WINDOWS {
                    book.insert(window.key(), window);
                }
            }
            let after: Vec<&PlanWindow> = book
                .values()
                .filter(|w| w.host.as_deref() == Some(host))
                .collect();
            before.len() != after.len() || before.iter().zip(after).any(|(a, b)| a != b)
        };
        if changed {
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Forgets every window of `host` (a remote removed).
    pub fn forget_host(&self, host: &str) {
        let removed = {
            let mut book = self.windows.lock().unwrap_or_else(|p| p.into_inner());
            let before = book.len();
            book.retain(|(h, ..), _| h.as_deref() != Some(host));
            before != book.len()
        };
        if removed {
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Every window whose figure still holds at `now`: this machine's first, then by agent,
    /// account and window.
    pub fn current(&self, now: DateTime<Utc>) -> Vec<PlanWindow> {
        let book = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        book.values().filter(|w| !w.is_over(now)).cloned().collect()
    }

    /// Hears of every change.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// A remote's limits are taken at most this often (its engine prints them at most every 3 s).
pub const REMOTE_LIMITS_EVERY: Duration = Duration::from_secs(3);

/// What became of a remote's limits line offered to a [`RemoteLimitsGate`].
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    /// Take these windows now.
    Take(Vec<PlanWindow>),
    /// Held until [`RemoteLimitsGate::due_at`] (replacing any line held before, which is
    /// dropped). `burst_began`: the first line held since the remote was last calm, the one to
    /// log.
    Held { burst_began: bool },
}

/// One link's remote limits, taken at most every [`REMOTE_LIMITS_EVERY`]; the newest line waits
/// for its turn, so the remote's last word is always taken. Pure: the time comes in (`T` is a
/// monotonic instant: the link's, or a test clock's `mono`).
#[derive(Debug, Clone)]
pub struct RemoteLimitsGate<T> {
    every: Duration,
    taken_at: Option<T>,
    held: Option<Vec<PlanWindow>>,
    in_burst: bool,
    /// Lines dropped (replaced while held) since the gate was made.
    dropped: u64,
}

impl<T: Copy + Ord + std::ops::Add<Duration, Output = T>> RemoteLimitsGate<T> {
    pub fn new(every: Duration) -> Self {
        RemoteLimitsGate {
            every,
            taken_at: None,
            held: None,
            in_burst: false,
            dropped: 0,
        }
    }

    /// A line of windows arrived at `now`.
    pub fn offer(&mut self, windows: Vec<PlanWindow>, now: T) -> GateOutcome {
        if self.taken_at.is_none_or(|t| now >= t + self.every) {
            self.taken_at = Some(now);
            // Nothing waited: the remote kept to its pace, and a later flood is a new burst.
            if self.held.take().is_none() {
                self.in_burst = false;
            }
            return GateOutcome::Take(windows);
        }
        if self.held.replace(windows).is_some() {
            self.dropped += 1;
        }
        let burst_began = !self.in_burst;
        self.in_burst = true;
        GateOutcome::Held { burst_began }
    }

    /// When the held line may be taken (`None`: nothing is held).
    pub fn due_at(&self) -> Option<T> {
        // A line is held only after one was taken, so `taken_at` is there.
        self.held.as_ref()?;
        Some(self.taken_at? + self.every)
    }

    /// The held line, if its time has come at `now`.
    pub fn take_due(&mut self, now: T) -> Option<Vec<PlanWindow>> {
        if self.due_at().is_some_and(|due| now >= due) {
            self.taken_at = Some(now);
            return self.held.take();
        }
        None
    }

    /// Lines dropped so far (each replaced by a newer one while it waited).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    fn codex(primary: f64, reset: i64, seen: i64) -> Vec<PlanWindow> {
        let window = |name: &str, minutes, used, resets_at| PlanWindow {
            agent: Agent::Codex,
            host: None,
            account: "pro".into(),
            window: name.into(),
            window_minutes: Some(minutes),
            used_percent: used,
            resets_at: Some(resets_at),
            seen_at: at(seen),
            session_id: "t1".into(),
        };
        vec![
            window("5h", 300, primary, at(reset)),
            window("weekly", 10080, 12.5, at(600_000)),
        ]
    }

    #[test]
    fn windows_are_named_by_their_length() {
        assert_eq!(window_name(Some(300), "primary"), "5h");
        assert_eq!(window_name(Some(10080), "secondary"), "weekly");
        assert_eq!(window_name(Some(1440), "x"), "daily");
        assert_eq!(window_name(None, "primary"), "primary");
        assert_eq!(window_name(Some(4320), "x"), "3d");
        assert_eq!(window_name(Some(120), "x"), "2h");
        assert_eq!(window_name(Some(90), "x"), "90m");
    }

    #[test]
    fn the_newest_report_wins_and_a_window_over_is_not_shown() {
        let book = PlanLimitsBook::default();
        let mut changes = book.subscribe();
        assert!(book.apply(codex(42.0, 3600, 10)));
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        assert!(!book.apply(codex(42.0, 3600, 10)), "the same report again");
        assert!(
            !book.apply(codex(5.0, 3600, 5)),
            "an older report read late"
        );
        assert!(!changes.has_changed().unwrap());
        assert!(book.apply(codex(47.0, 3600, 20)));
        let now = book.current(at(30));
        assert_eq!(now.len(), 2);
        assert_eq!(now[0].used_percent, 47.0);
        // Past its reset the 5h figure no longer holds; the weekly one still does.
        let later = book.current(at(3600));
        assert_eq!(
            later.iter().map(|w| w.window.as_str()).collect::<Vec<_>>(),
            ["weekly"]
        );
    }

    #[test]
    fn remotes_windows_are_their_own_and_the_book_is_bounded() {
        let book = PlanLimitsBook::default();
        book.apply(codex(42.0, 3600, 10));
        let mut far = codex(80.0, 3600, 10);
        for w in &mut far {
            w.host = Some("gpu-box".into());
        }
        book.apply(far);
        assert_eq!(book.current(at(11)).len(), 4);
        book.forget_host("gpu-box");
        assert_eq!(book.current(at(11)).len(), 2);
        // A remote's list replaces its earlier one whole, marked as its own, and bounded.
        let mut changes = book.subscribe();
        changes.mark_unchanged();
        let many: Vec<PlanWindow> = (0..50)
            .map(|n| {
                let mut w = codex(50.0, 3600, 10).remove(0);
                w.window = format!("w{n}");
                w
            })
            .collect();
        book.replace_host("devbox", many);
        let remote: Vec<PlanWindow> = book
            .current(at(11))
            .into_iter()
            .filter(|w| w.host.as_deref() == Some("devbox"))
            .collect();
        assert_eq!(remote.len(), MAX_REMOTE_WINDOWS);
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        book.replace_host("devbox", remote.clone());
        assert!(
            !changes.has_changed().unwrap(),
            "the same list again changes nothing"
        );
        book.replace_host("devbox", Vec::new());
        assert_eq!(book.current(at(11)).len(), 2);
        for n in 0..200 {
            let mut w = codex(1.0, 3600, 10);
            for x in &mut w {
                x.account = format!("acct-{n}");
            }
            book.apply(w);
        }
        assert_eq!(book.current(at(11)).len(), MAX_WINDOWS);
    }

    /// Issue 37, point 4: a remote printing limit lines far faster than its engine does (every
    /// 3 s) is taken every 3 s; each held line replaces the one before; the last word is taken
    /// when its turn comes; a burst is reported once, and a calm remote is taken at once.
    #[test]
    fn a_remotes_limits_are_taken_at_most_every_few_seconds_and_its_last_word_wins() {
        use crate::clock::{Clock, ManualClock};
        let clock = ManualClock::new(at(0));
        let mut gate = RemoteLimitsGate::new(REMOTE_LIMITS_EVERY);
        let line = |n: i64| codex(95.0, 3600 + n, n);
        assert_eq!(
            gate.offer(line(0), clock.mono()),
            GateOutcome::Take(line(0)),
            "the first line is taken at once"
        );
        assert_eq!(gate.due_at(), None);
        let mut began = 0;
        for n in 1..=100 {
            clock.advance(Duration::from_millis(20));
            match gate.offer(line(n), clock.mono()) {
                GateOutcome::Held { burst_began } => began += usize::from(burst_began),
                GateOutcome::Take(_) => panic!("line {n} taken within 3 s of the last"),
            }
        }
        assert_eq!(began, 1, "a burst is reported once");
        assert_eq!(gate.dropped(), 99, "each held line replaced the one before");
        assert_eq!(
            gate.take_due(clock.mono()),
            None,
            "not yet: 2 s since the last"
        );
        let due = gate.due_at().unwrap();
        clock.advance(Duration::from_secs(1));
        assert!(clock.mono() >= due);
        assert_eq!(
            gate.take_due(clock.mono()),
            Some(line(100)),
            "the newest held line is taken when its time comes"
        );
        assert_eq!(gate.take_due(clock.mono()), None, "taken once");
        // The flood goes on: still one burst, one line per 3 s.
        clock.advance(Duration::from_millis(500));
        assert_eq!(
            gate.offer(line(101), clock.mono()),
            GateOutcome::Held { burst_began: false }
        );
        clock.advance(Duration::from_secs(3));
        assert_eq!(gate.take_due(clock.mono()), Some(line(101)));
        // Calm: a line 3 s after the last taken, with nothing held, is taken at once, and a
        // flood after it is a new burst (logged again).
        clock.advance(Duration::from_secs(3));
        assert_eq!(
            gate.offer(line(102), clock.mono()),
            GateOutcome::Take(line(102))
        );
        clock.advance(Duration::from_millis(10));
        assert_eq!(
            gate.offer(line(103), clock.mono()),
            GateOutcome::Held { burst_began: true }
        );
    }
}
