//! "Time waiting on you", time working and the longest waits: pure arithmetic over state
//! intervals, so every rule is tested on scripted timelines (no store, no clock).
//!
//! The definition (the README carries it with a worked example):
//! - A session **waits on you** while it is `waiting_for_permission` or `waiting_for_input`, and
//!   while it sits `idle` after a turn (a `working` or waiting stretch) until its next prompt.
//!   `idle` after a start with no prompt yet (`starting`) is not waiting on you: nobody asked it
//!   anything.
//! - Time counts only while the session is known to be alive: up to its end (its process gone,
//!   its own end, the TTL), and never across a gap in which Agent Tray was not running.
//! - Each session counts on its own: two sessions waiting through the same ten minutes are twenty
//!   agent-minutes of waiting.
//! - Within a session, intervals never overlap: a stamp that goes back in time (a clock set back)
//!   cuts the earlier interval where the later one begins, and an interval never ends before it
//!   starts nor after `now`.
//! - Days are the user's days: an interval crossing local midnight is split there, in the time
//!   zone given (DST days are 23 or 25 hours long).

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::cost::Cost;
use crate::model::{Agent, SessionState};

/// One state interval of a session; `to` is `None` while it is still open.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub state: SessionState,
    pub from: DateTime<Utc>,
    pub to: Option<DateTime<Utc>>,
    pub waiting_for: Option<String>,
    /// For a `working` span: who submitted the prompt that started it (see
    /// [`woken_without_a_person`]).
    pub prompt_source: Option<String>,
}

/// Whether a prompt `source` (Claude's `UserPromptSubmit.source`) is a wake-up no person typed:
/// a `/loop` tick, a scheduled task, a poll, or a prompt the agent's own system injected. `user`,
/// `sdk` (a program a person drives, such as an editor) and an unknown or absent source count as
/// a person.
pub fn woken_without_a_person(source: Option<&str>) -> bool {
    matches!(
        source,
        Some("loop_wakeup" | "schedule_wakeup" | "poll_event" | "system")
    )
}

/// A session and its intervals, in any order.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub session_id: String,
    pub agent: Agent,
    pub project: String,
    /// When the session ended (its process gone, its own end): nothing counts after it.
    pub ended_at: Option<DateTime<Utc>>,
    pub spans: Vec<Span>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    Agent,
    Project,
    Day,
}

/// Which kind of wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    Permission,
    Input,
    IdleAfterTurn,
}

/// The figures of one group (or of everything), in whole seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Figures {
    /// The sum of the three below.
    pub waiting_on_you_secs: i64,
    pub waiting_for_permission_secs: i64,
    pub waiting_for_input_secs: i64,
    pub idle_after_turn_secs: i64,
    pub working_secs: i64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Millis {
    permission: i64,
    input: i64,
    idle_after_turn: i64,
    working: i64,
}

impl Millis {
    fn figures(self) -> Figures {
        let s = |ms: i64| ms / 1000;
        Figures {
            waiting_on_you_secs: s(self.permission + self.input + self.idle_after_turn),
            waiting_for_permission_secs: s(self.permission),
            waiting_for_input_secs: s(self.input),
            idle_after_turn_secs: s(self.idle_after_turn),
            working_secs: s(self.working),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct Group {
    pub key: String,
    #[serde(flatten)]
    #[ts(flatten)]
    pub figures: Figures,
    /// Tokens recorded in the window for this group, and their estimated cost.
    #[serde(flatten)]
    #[ts(flatten)]
    pub usage: Cost,
}

/// One wait, cut to the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Wait {
    pub session_id: String,
    pub agent: Agent,
    pub project: String,
    pub kind: WaitKind,
    pub waiting_for: Option<String>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub secs: i64,
}

/// What `stats` prints.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct Tally {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub time_zone: String,
    pub by: GroupBy,
    pub totals: Figures,
    /// Tokens recorded in the window and their estimated cost (`tokens`, `cost_estimate_usd`).
    pub usage: Cost,
    /// The date of the price table the cost estimates use.
    pub prices_as_of: String,
    pub groups: Vec<Group>,
    pub longest_waits: Vec<Wait>,
    /// Permission requests closed in the window: answered from the tray, in the terminal,
    /// expired.
    pub answers: super::requests::AnswerCounts,
}

/// How many of the longest waits a tally lists.
pub const LONGEST_WAITS: usize = 5;

/// The question a tally answers.
#[derive(Debug, Clone, Copy)]
pub struct Question {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub now: DateTime<Utc>,
    pub tz: Tz,
    pub by: GroupBy,
}

/// What a span counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counts {
    Working,
    Wait(WaitKind),
    Nothing,
}

/// A span as it counts: what, from, to, and what a wait was for.
type Counted = (Counts, DateTime<Utc>, DateTime<Utc>, Option<String>);

/// The spans of one session as they count: sorted, overlaps cut, clipped to its end and `now`.
fn effective(timeline: &Timeline, now: DateTime<Utc>) -> Vec<Counted> {
    let mut spans: Vec<&Span> = timeline.spans.iter().collect();
    spans.sort_by_key(|s| s.from);
    let limit = timeline.ended_at.map_or(now, |end| end.min(now));
    let mut out = Vec::with_capacity(spans.len());
    let mut after_turn = false;
    let mut prev_end: Option<DateTime<Utc>> = None;
    for (i, span) in spans.iter().enumerate() {
        let mut end = span.to.unwrap_or(now).min(limit);
        let next = spans.get(i + 1);
        if let Some(next) = next {
            end = end.min(next.from);
        }
        // Idle that a loop or a schedule ended was nobody waiting on a person.
        let woken = next.is_some_and(|n| {
            n.state == SessionState::Working && woken_without_a_person(n.prompt_source.as_deref())
        });
        let start = prev_end.map_or(span.from, |p| span.from.max(p));
        let counts = match span.state {
            SessionState::Working => Counts::Working,
            SessionState::WaitingForPermission => Counts::Wait(WaitKind::Permission),
            SessionState::WaitingForInput => Counts::Wait(WaitKind::Input),
            SessionState::Idle if after_turn && !woken => Counts::Wait(WaitKind::IdleAfterTurn),
            SessionState::Idle | SessionState::Starting | SessionState::Ended => Counts::Nothing,
        };
        after_turn = match span.state {
            SessionState::Working
            | SessionState::WaitingForPermission
            | SessionState::WaitingForInput => true,
            SessionState::Idle => after_turn,
            SessionState::Starting | SessionState::Ended => false,
        };
        if end > start {
            out.push((counts, start, end, span.waiting_for.clone()));
            prev_end = Some(end);
        }
    }
    out
}

/// One span of a session as it counts (see [`counted`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CountedSpan {
    pub counts: Counts,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// A session's spans as they count: sorted, overlaps cut, clipped to its end and `now`, each
/// classed as working, a wait on you, or neither (the rules in the module text).
pub fn counted(timeline: &Timeline, now: DateTime<Utc>) -> Vec<CountedSpan> {
    effective(timeline, now)
        .into_iter()
        .map(|(counts, from, to, _)| CountedSpan { counts, from, to })
        .collect()
}

/// The first local midnight strictly after `t`, in UTC.
pub fn next_local_midnight(t: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
    let day = t.with_timezone(&tz).date_naive();
    local_day_start(day.succ_opt().unwrap_or(day), tz)
}

/// When `day` begins in `tz`, in UTC. Where midnight does not exist (a DST gap at midnight), the
/// day begins at the first hour that does.
pub fn local_day_start(day: NaiveDate, tz: Tz) -> DateTime<Utc> {
    for hour in 0..4 {
        let Some(local) = day.and_hms_opt(hour, 0, 0) else {
            continue;
        };
        if let Some(t) = tz.from_local_datetime(&local).earliest() {
            return t.with_timezone(&Utc);
        }
    }
    Utc.from_utc_datetime(&day.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// The local days of a window and where each ends, computed once: the time-zone rules are
/// the costly part of splitting, and a window has few days but many intervals.
struct LocalDays {
    /// When the first day begins, in UTC.
    first_start: DateTime<Utc>,
    /// (day, when it ends in UTC), in order.
    ends: Vec<(NaiveDate, DateTime<Utc>)>,
}

impl LocalDays {
    fn covering(from: DateTime<Utc>, to: DateTime<Utc>, tz: Tz) -> Self {
        let mut ends = Vec::new();
        let mut day = from.with_timezone(&tz).date_naive();
        let first_start = local_day_start(day, tz);
        let mut end = next_local_midnight(from, tz);
        // A window of years is cut at 40 years of days; anything past falls back to the rules.
        while ends.len() < 15_000 {
            ends.push((day, end));
            if end > to {
                break;
            }
            day = end.with_timezone(&tz).date_naive();
            end = next_local_midnight(end, tz);
        }
        LocalDays { first_start, ends }
    }

    /// The local day `t` falls in and when that day ends.
    fn of(&self, t: DateTime<Utc>, tz: Tz) -> (NaiveDate, DateTime<Utc>) {
        let i = self.ends.partition_point(|(_, end)| *end <= t);
        match self.ends.get(i) {
            Some(&(day, end)) if i > 0 || t >= self.first_start => (day, end),
            _ => (
                t.with_timezone(&tz).date_naive(),
                next_local_midnight(t, tz),
            ),
        }
    }
}

/// Adds `ms` of `counts` to `m`.
fn add_to(m: &mut Millis, counts: Counts, ms: i64) {
    match counts {
        Counts::Working => m.working += ms,
        Counts::Wait(WaitKind::Permission) => m.permission += ms,
        Counts::Wait(WaitKind::Input) => m.input += ms,
        Counts::Wait(WaitKind::IdleAfterTurn) => m.idle_after_turn += ms,
        Counts::Nothing => {}
    }
}

/// Tallies `timelines` for `question`.
///
/// Written to allocate per session, not per span (a heavy week is ~20,000 spans): by agent or
/// project, a session's pieces are summed apart and added to its group once; a wait is copied
/// out (names and all) only if it is among the longest.
pub fn tally(timelines: &[Timeline], question: Question) -> Tally {
    let days = LocalDays::covering(question.from, question.to, question.tz);
    let mut totals = Millis::default();
    let mut groups: BTreeMap<String, Millis> = BTreeMap::new();
    // (secs, from, to, kind, timeline, span's waiting_for), in the order found.
    type Found = (
        i64,
        DateTime<Utc>,
        DateTime<Utc>,
        WaitKind,
        usize,
        Option<String>,
    );
    let mut waits: Vec<Found> = Vec::new();
    for (t, timeline) in timelines.iter().enumerate() {
        // The session's group (by agent or project), summed apart and added once.
        let mut session = Millis::default();
        let mut counted = false;
        for (counts, start, end, waiting_for) in effective(timeline, question.now) {
            let start = start.max(question.from);
            let end = end.min(question.to);
            if end <= start || counts == Counts::Nothing {
                continue;
            }
            if let Counts::Wait(kind) = counts {
                let secs = (end - start).num_milliseconds() / 1000;
                waits.push((secs, start, end, kind, t, waiting_for));
            }
            // Split at local midnights so each piece belongs to one day.
            let mut piece_start = start;
            while piece_start < end {
                let (day, day_end) = days.of(piece_start, question.tz);
                let piece_end = day_end.min(end);
                let ms = (piece_end - piece_start).num_milliseconds();
                add_to(&mut totals, counts, ms);
                if question.by == GroupBy::Day {
                    add_to(groups.entry(day.to_string()).or_default(), counts, ms);
                } else {
                    add_to(&mut session, counts, ms);
                    counted = true;
                }
                piece_start = piece_end;
            }
        }
        if counted {
            let key = match question.by {
                GroupBy::Agent => timeline.agent.as_str().to_string(),
                _ => timeline.project.clone(),
            };
            let group = groups.entry(key).or_default();
            group.working += session.working;
            group.permission += session.permission;
            group.input += session.input;
            group.idle_after_turn += session.idle_after_turn;
        }
    }
    waits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    waits.truncate(LONGEST_WAITS);
    let longest_waits = waits
        .into_iter()
        .map(|(secs, from, to, kind, t, waiting_for)| {
            let timeline = &timelines[t];
            Wait {
                session_id: timeline.session_id.clone(),
                agent: timeline.agent,
                project: timeline.project.clone(),
                kind,
                waiting_for,
                from,
                to,
                secs,
            }
        })
        .collect();
    Tally {
        from: question.from,
        to: question.to,
        time_zone: question.tz.name().to_string(),
        by: question.by,
        totals: totals.figures(),
        usage: Cost::default(),
        prices_as_of: String::new(),
        groups: groups
            .into_iter()
            .map(|(key, m)| Group {
                key,
                figures: m.figures(),
                usage: Cost::default(),
            })
            .collect(),
        longest_waits,
        answers: super::requests::AnswerCounts::default(),
    }
}

/// Adds the window's usage (from [`super::cost::tally_usage`]) to a tally: a group with tokens
/// but no time still shows.
pub fn add_usage(
    tally: &mut Tally,
    total: Cost,
    groups: BTreeMap<String, Cost>,
    prices_as_of: &str,
) {
    tally.usage = total;
    tally.prices_as_of = prices_as_of.to_string();
    for (key, usage) in groups {
        match tally.groups.iter_mut().find(|g| g.key == key) {
            Some(group) => group.usage = usage,
            None => tally.groups.push(Group {
                key,
                figures: Figures::default(),
                usage,
            }),
        }
    }
    tally.groups.sort_by(|a, b| a.key.cmp(&b.key));
}

/// The user's time zone: `TZ` when it names one (`Europe/Paris`, `:Europe/Paris`), else the
/// system's, else UTC.
pub fn user_time_zone() -> Tz {
    let from_env = std::env::var("TZ")
        .ok()
        .and_then(|v| v.trim_start_matches(':').parse::<Tz>().ok());
    from_env
        .or_else(|| iana_time_zone::get_timezone().ok()?.parse::<Tz>().ok())
        .unwrap_or(Tz::UTC)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use SessionState::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn span(state: SessionState, from: &str, to: Option<&str>) -> Span {
        Span {
            state,
            from: t(from),
            to: to.map(t),
            waiting_for: None,
            prompt_source: None,
        }
    }

    fn woken(source: &str, from: &str, to: Option<&str>) -> Span {
        Span {
            prompt_source: Some(source.into()),
            ..span(Working, from, to)
        }
    }

    fn timeline(id: &str, agent: Agent, project: &str, spans: Vec<Span>) -> Timeline {
        Timeline {
            session_id: id.into(),
            agent,
            project: project.into(),
            ended_at: None,
            spans,
        }
    }

    fn question(from: &str, to: &str, tz: Tz, by: GroupBy) -> Question {
        Question {
            from: t(from),
            to: t(to),
            now: t(to),
            tz,
            by,
        }
    }

    fn group<'a>(tally: &'a Tally, key: &str) -> &'a Figures {
        &tally
            .groups
            .iter()
            .find(|g| g.key == key)
            .unwrap_or_else(|| panic!("no group {key} in {:?}", tally.groups))
            .figures
    }

    /// The README's worked example.
    fn worked_example() -> Timeline {
        timeline(
            "s1",
            Agent::Claude,
            "shop",
            vec![
                span(
                    Starting,
                    "2026-03-02T09:00:00Z",
                    Some("2026-03-02T09:02:00Z"),
                ),
                span(Idle, "2026-03-02T09:02:00Z", Some("2026-03-02T09:05:00Z")),
                span(
                    Working,
                    "2026-03-02T09:05:00Z",
                    Some("2026-03-02T09:15:00Z"),
                ),
                span(
                    WaitingForPermission,
                    "2026-03-02T09:15:00Z",
                    Some("2026-03-02T09:18:00Z"),
                ),
                span(
                    Working,
                    "2026-03-02T09:18:00Z",
                    Some("2026-03-02T09:30:00Z"),
                ),
                span(Idle, "2026-03-02T09:30:00Z", Some("2026-03-02T09:50:00Z")),
                span(
                    Working,
                    "2026-03-02T09:50:00Z",
                    Some("2026-03-02T09:55:00Z"),
                ),
                span(
                    WaitingForInput,
                    "2026-03-02T09:55:00Z",
                    Some("2026-03-02T10:00:00Z"),
                ),
                span(Idle, "2026-03-02T10:00:00Z", None),
            ],
        )
    }

    #[test]
    fn the_worked_example_adds_up() {
        let mut s1 = worked_example();
        s1.ended_at = Some(t("2026-03-02T10:10:00Z"));
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T12:00:00Z",
            Tz::UTC,
            GroupBy::Agent,
        );
        let tally = tally(&[s1], q);
        assert_eq!(
            tally.totals,
            Figures {
                // 3 min permission + 5 min input + 20 + 10 min idle after a turn.
                waiting_on_you_secs: (3 + 5 + 20 + 10) * 60,
                waiting_for_permission_secs: 3 * 60,
                waiting_for_input_secs: 5 * 60,
                idle_after_turn_secs: 30 * 60,
                working_secs: (10 + 12 + 5) * 60,
            }
        );
        assert_eq!(group(&tally, "claude"), &tally.totals);
        let longest = &tally.longest_waits[0];
        assert_eq!(
            (longest.kind, longest.secs),
            (WaitKind::IdleAfterTurn, 20 * 60)
        );
        assert_eq!(tally.longest_waits.len(), 4);
    }

    #[test]
    fn the_worked_example_with_a_loop_wake_up_at_0950_waits_18_minutes() {
        let mut s1 = worked_example();
        s1.ended_at = Some(t("2026-03-02T10:10:00Z"));
        s1.spans[6].prompt_source = Some("loop_wakeup".into());
        assert_eq!(s1.spans[6].from, t("2026-03-02T09:50:00Z"));
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T12:00:00Z",
            Tz::UTC,
            GroupBy::Agent,
        );
        let tally = tally(&[s1], q);
        assert_eq!(tally.totals.waiting_on_you_secs, 18 * 60);
        assert_eq!(tally.totals.working_secs, 27 * 60);
    }

    #[test]
    fn idle_before_a_loop_or_scheduled_wake_up_is_not_waiting_on_you() {
        // A /loop session: a person's turn, idle 20 min, a loop tick's turn, idle 30 min, a
        // scheduled turn, idle 15 min, then the person types again (5 min), and is waited on
        // again after that (10 min, open).
        let s = timeline(
            "loop",
            Agent::Claude,
            "shop",
            vec![
                woken("user", "2026-03-02T09:00:00Z", Some("2026-03-02T09:10:00Z")),
                span(Idle, "2026-03-02T09:10:00Z", Some("2026-03-02T09:30:00Z")),
                woken(
                    "loop_wakeup",
                    "2026-03-02T09:30:00Z",
                    Some("2026-03-02T09:32:00Z"),
                ),
                span(Idle, "2026-03-02T09:32:00Z", Some("2026-03-02T10:02:00Z")),
                woken(
                    "schedule_wakeup",
                    "2026-03-02T10:02:00Z",
                    Some("2026-03-02T10:03:00Z"),
                ),
                span(Idle, "2026-03-02T10:03:00Z", Some("2026-03-02T10:18:00Z")),
                woken("user", "2026-03-02T10:18:00Z", Some("2026-03-02T10:23:00Z")),
                span(Idle, "2026-03-02T10:23:00Z", None),
            ],
        );
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T10:33:00Z",
            Tz::UTC,
            GroupBy::Agent,
        );
        let tally = tally(&[s], q);
        // Only the 15 min before the person's prompt and the open 10 min after the last turn.
        assert_eq!(tally.totals.idle_after_turn_secs, (15 + 10) * 60);
        assert_eq!(tally.totals.waiting_on_you_secs, (15 + 10) * 60);
        assert_eq!(tally.totals.working_secs, (10 + 2 + 1 + 5) * 60);
        let waits: Vec<_> = tally
            .longest_waits
            .iter()
            .map(|w| (w.from, w.secs))
            .collect();
        assert_eq!(
            waits,
            [
                (t("2026-03-02T10:03:00Z"), 15 * 60),
                (t("2026-03-02T10:23:00Z"), 10 * 60)
            ]
        );
        // `user`, `sdk` and no source at all are a person.
        for person in [None, Some("user"), Some("sdk")] {
            assert!(!woken_without_a_person(person), "{person:?}");
        }
        for machine in ["loop_wakeup", "schedule_wakeup", "poll_event", "system"] {
            assert!(woken_without_a_person(Some(machine)), "{machine}");
        }
    }

    #[test]
    fn a_process_that_died_mid_wait_counts_only_until_it_died() {
        let mut s = timeline(
            "s",
            Agent::Codex,
            "api",
            vec![
                span(
                    Working,
                    "2026-03-02T09:00:00Z",
                    Some("2026-03-02T09:01:00Z"),
                ),
                // Still open: the store never saw it close, the process died at 09:04.
                span(WaitingForPermission, "2026-03-02T09:01:00Z", None),
            ],
        );
        s.ended_at = Some(t("2026-03-02T09:04:00Z"));
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T12:00:00Z",
            Tz::UTC,
            GroupBy::Agent,
        );
        let f = tally(&[s], q).totals;
        assert_eq!(f.waiting_for_permission_secs, 180);
        assert_eq!(f.working_secs, 60);
    }

    #[test]
    fn overlapping_intervals_of_one_session_count_once_and_sessions_add_up() {
        let a = timeline(
            "a",
            Agent::Claude,
            "web",
            vec![
                // Claims to run to 09:10, but the next interval began at 09:05.
                span(
                    Working,
                    "2026-03-02T09:00:00Z",
                    Some("2026-03-02T09:10:00Z"),
                ),
                span(
                    WaitingForInput,
                    "2026-03-02T09:05:00Z",
                    Some("2026-03-02T09:08:00Z"),
                ),
            ],
        );
        let b = timeline(
            "b",
            Agent::Codex,
            "web",
            vec![span(
                WaitingForInput,
                "2026-03-02T09:05:00Z",
                Some("2026-03-02T09:08:00Z"),
            )],
        );
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T12:00:00Z",
            Tz::UTC,
            GroupBy::Project,
        );
        let tally = tally(&[a, b], q);
        assert_eq!(tally.totals.working_secs, 300);
        assert_eq!(
            tally.totals.waiting_for_input_secs, 360,
            "two sessions, 3 min each"
        );
        assert_eq!(group(&tally, "web").waiting_on_you_secs, 360);
    }

    #[test]
    fn a_clock_that_jumps_back_never_makes_negative_or_double_time() {
        // The wall clock was set back 10 minutes at 09:20: the next stamp reads 09:10.
        let s = timeline(
            "s",
            Agent::Claude,
            "x",
            vec![
                span(
                    Working,
                    "2026-03-02T09:00:00Z",
                    Some("2026-03-02T09:20:00Z"),
                ),
                span(
                    WaitingForInput,
                    "2026-03-02T09:10:00Z",
                    Some("2026-03-02T09:12:00Z"),
                ),
                span(
                    Working,
                    "2026-03-02T09:12:00Z",
                    Some("2026-03-02T09:11:00Z"),
                ),
            ],
        );
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T12:00:00Z",
            Tz::UTC,
            GroupBy::Agent,
        );
        let f = tally(&[s], q).totals;
        assert_eq!(
            f.working_secs, 600,
            "09:00 to 09:10; the backwards span is empty"
        );
        assert_eq!(f.waiting_for_input_secs, 120);
        // And a span stamped in the future stops at now.
        let future = timeline(
            "f",
            Agent::Claude,
            "x",
            vec![span(
                WaitingForInput,
                "2026-03-02T11:50:00Z",
                Some("2026-03-02T13:00:00Z"),
            )],
        );
        let f = tally(&[future], q).totals;
        assert_eq!(f.waiting_for_input_secs, 600);
    }

    #[test]
    fn idle_after_a_start_is_not_waiting_but_idle_after_a_turn_is_across_a_restart() {
        let s = timeline(
            "s",
            Agent::Claude,
            "x",
            vec![
                span(
                    Starting,
                    "2026-03-02T09:00:00Z",
                    Some("2026-03-02T09:01:00Z"),
                ),
                span(Idle, "2026-03-02T09:01:00Z", Some("2026-03-02T09:30:00Z")),
                span(
                    Working,
                    "2026-03-02T09:30:00Z",
                    Some("2026-03-02T09:31:00Z"),
                ),
                span(Idle, "2026-03-02T09:31:00Z", Some("2026-03-02T09:32:00Z")),
                // Agent Tray was down 09:32–09:40: that gap counts nothing.
                span(Idle, "2026-03-02T09:40:00Z", Some("2026-03-02T09:41:00Z")),
            ],
        );
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T12:00:00Z",
            Tz::UTC,
            GroupBy::Agent,
        );
        let f = tally(&[s], q).totals;
        assert_eq!(f.idle_after_turn_secs, 120);
        assert_eq!(f.working_secs, 60);
    }

    #[test]
    fn a_wait_across_local_midnight_is_split_into_the_users_days() {
        // 23:30 to 00:45 in Paris (UTC+1 in winter): 30 min on the 2nd, 45 on the 3rd.
        let s = timeline(
            "s",
            Agent::Claude,
            "x",
            vec![span(
                WaitingForInput,
                "2026-03-02T22:30:00Z",
                Some("2026-03-02T23:45:00Z"),
            )],
        );
        let q = question(
            "2026-03-01T00:00:00Z",
            "2026-03-04T00:00:00Z",
            chrono_tz::Europe::Paris,
            GroupBy::Day,
        );
        let tally = tally(&[s], q);
        assert_eq!(group(&tally, "2026-03-02").waiting_for_input_secs, 30 * 60);
        assert_eq!(group(&tally, "2026-03-03").waiting_for_input_secs, 45 * 60);
        assert_eq!(tally.longest_waits[0].secs, 75 * 60, "one wait, whole");
    }

    #[test]
    fn dst_days_are_23_and_25_hours_long() {
        let tz = chrono_tz::Europe::Paris;
        // Spring forward on 2026-03-29 (02:00 → 03:00); fall back on 2026-10-25.
        let spring = local_day_start(NaiveDate::from_ymd_opt(2026, 3, 29).unwrap(), tz);
        let after = next_local_midnight(spring, tz);
        assert_eq!((after - spring).num_hours(), 23);
        let autumn = local_day_start(NaiveDate::from_ymd_opt(2026, 10, 25).unwrap(), tz);
        assert_eq!((next_local_midnight(autumn, tz) - autumn).num_hours(), 25);
        // A session working the whole spring day works 23 hours that day.
        let s = timeline(
            "s",
            Agent::Claude,
            "x",
            vec![Span {
                state: Working,
                from: spring - chrono::TimeDelta::hours(1),
                to: Some(after + chrono::TimeDelta::hours(1)),
                waiting_for: None,
                prompt_source: None,
            }],
        );
        let q = Question {
            from: spring - chrono::TimeDelta::days(1),
            to: after + chrono::TimeDelta::days(1),
            now: after + chrono::TimeDelta::days(1),
            tz,
            by: GroupBy::Day,
        };
        let tally = tally(&[s], q);
        assert_eq!(group(&tally, "2026-03-29").working_secs, 23 * 3600);
        assert_eq!(group(&tally, "2026-03-28").working_secs, 3600);
        assert_eq!(group(&tally, "2026-03-30").working_secs, 3600);
    }

    #[test]
    fn a_zone_whose_midnight_does_not_exist_starts_the_day_at_one() {
        // Havana moved its clocks at midnight: 2026-03-08 00:00 did not exist there.
        let tz = chrono_tz::America::Havana;
        let day = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        let start = local_day_start(day, tz).with_timezone(&tz);
        assert_eq!(start.date_naive(), day);
        assert!(start.format("%H:%M").to_string() == "01:00", "{start}");
    }

    #[test]
    fn the_window_cuts_intervals_at_its_edges() {
        let s = timeline(
            "s",
            Agent::Claude,
            "x",
            vec![span(
                Working,
                "2026-03-01T23:00:00Z",
                Some("2026-03-02T01:00:00Z"),
            )],
        );
        let q = question(
            "2026-03-02T00:00:00Z",
            "2026-03-02T12:00:00Z",
            Tz::UTC,
            GroupBy::Day,
        );
        let tally = tally(&[s], q);
        assert_eq!(tally.totals.working_secs, 3600);
        assert_eq!(tally.groups.len(), 1);
    }
}
