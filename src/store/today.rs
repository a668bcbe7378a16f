//! What the window's "Today" view and a session's detail show, as plain functions returning
//! serde types: the desktop crate's commands call one of these and pass the answer on, so no
//! figure is computed twice or differently from `stats`.
//!
//! - [`today`]: the day so far in the user's time zone: per local hour, time working, waiting on
//!   you and idle; totals per agent and per project; the longest waits; tokens and estimated cost.
//! - [`session_detail`]: one stored session with its state intervals (its timeline) and its
//!   usage, per turn.
//! - [`super::query::history_with_usage`]: the history view's rows (search and filters).
//!
//! Hours are local hours: a DST day has 23 or 25 of them, each labelled with its local start.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::cost::{Cost, SessionUsage};
use super::query::{self, ExportedInterval};
use super::waiting::{self, Counts, Figures, Group, GroupBy, Question, Timeline, Wait, WaitKind};
use super::StoreError;
use crate::model::Session;
use crate::usage::PriceTable;

/// One local hour of the day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct HourBucket {
    /// When the hour begins (UTC).
    pub from: DateTime<Utc>,
    /// Its local start, `HH:MM` (a DST day repeats or skips one).
    pub local: String,
    /// Agent-seconds in this hour (two sessions working the same minute count 120 s).
    pub working_secs: i64,
    pub waiting_on_you_secs: i64,
    /// Idle and not waiting on you: before a first prompt, or before a loop's wake-up.
    pub idle_secs: i64,
}

/// The "Today" view.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct TodayView {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub time_zone: String,
    /// Every local hour from midnight to the current one.
    pub hours: Vec<HourBucket>,
    pub totals: Figures,
    pub by_agent: Vec<Group>,
    pub by_project: Vec<Group>,
    pub longest_waits: Vec<Wait>,
    /// Tokens today and their estimated cost (`tokens`, `cost_estimate_usd`).
    pub usage: Cost,
    pub prices_as_of: String,
}

/// One session's detail: the `list --json` fields, its intervals, its usage.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct SessionDetail {
    #[serde(flatten)]
    #[ts(flatten)]
    pub session: Session,
    pub intervals: Vec<ExportedInterval>,
    pub usage: SessionUsage,
}

/// The hour buckets of `timelines` from `from` to `to` (local hours in `tz`). Pure.
pub fn hourly(
    timelines: &[Timeline],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
    tz: Tz,
) -> Vec<HourBucket> {
    let mut hours: Vec<HourBucket> = Vec::new();
    let mut start = from;
    while start < to && hours.len() < 24 * 400 {
        hours.push(HourBucket {
            from: start,
            local: start.with_timezone(&tz).format("%H:%M").to_string(),
            working_secs: 0,
            waiting_on_you_secs: 0,
            idle_secs: 0,
        });
        start += chrono::TimeDelta::hours(1);
    }
    let mut ms = vec![(0i64, 0i64, 0i64); hours.len()];
    for timeline in timelines {
        for span in waiting::counted(timeline, now) {
            let (a, b) = (span.from.max(from), span.to.min(to));
            if b <= a {
                continue;
            }
            let mut t = a;
            while t < b {
                let i = usize::try_from((t - from).num_hours()).unwrap_or(0);
                let Some(slot) = ms.get_mut(i) else { break };
                let hour_end = from + chrono::TimeDelta::hours(i64::try_from(i + 1).unwrap_or(0));
                let piece_end = hour_end.min(b);
                let d = (piece_end - t).num_milliseconds();
                match span.counts {
                    Counts::Working => slot.0 += d,
                    Counts::Wait(_) => slot.1 += d,
                    Counts::Nothing => slot.2 += d,
                }
                t = piece_end;
            }
        }
    }
    for (hour, (w, y, i)) in hours.iter_mut().zip(ms) {
        hour.working_secs = w / 1000;
        hour.waiting_on_you_secs = y / 1000;
        hour.idle_secs = i / 1000;
    }
    hours
}

/// The day so far (local midnight in `tz` to `now`); all zero without a store.
pub fn today(
    conn: Option<&Connection>,
    now: DateTime<Utc>,
    tz: Tz,
    prices: &PriceTable,
) -> Result<TodayView, StoreError> {
    // One read of the day's intervals and usage, tallied twice (per agent, per project).
    let from = waiting::local_day_start(now.with_timezone(&tz).date_naive(), tz);
    let (timelines, rows) = match conn {
        Some(conn) => (
            query::timelines(conn, from, now)?,
            super::cost::usage_rows(conn, from, now)?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    let tallied = |by| {
        let question = Question {
            from,
            to: now,
            now,
            tz,
            by,
        };
        let mut tally = waiting::tally(&timelines, question);
        let (total, groups) = super::cost::tally_usage(&rows, &question, prices);
        waiting::add_usage(&mut tally, total, groups, &prices.as_of);
        tally
    };
    let by_agent = tallied(GroupBy::Agent);
    let by_project = tallied(GroupBy::Project);
    // The current hour is shown whole (its end is in the future); the figures stop at now.
    let end_of_hour = from + chrono::TimeDelta::hours((now - from).num_hours() + 1);
    Ok(TodayView {
        from,
        to: now,
        time_zone: tz.name().to_string(),
        hours: hourly(&timelines, from, end_of_hour, now, tz),
        totals: by_agent.totals,
        longest_waits: by_agent.longest_waits,
        usage: by_agent.usage,
        prices_as_of: by_agent.prices_as_of,
        by_agent: by_agent.groups,
        by_project: by_project.groups,
    })
}

/// One stored session by its id, with its intervals and usage; `None` when the store has none.
pub fn session_detail(
    conn: &Connection,
    session_id: &str,
    prices: &PriceTable,
) -> Result<Option<SessionDetail>, StoreError> {
    let row: Option<i64> = conn
        .query_row(
            "SELECT id FROM sessions WHERE session_id = ?1",
            params![session_id],
            |r| r.get(0),
        )
        .optional()?;
    let Some(row) = row else {
        return Ok(None);
    };
    let Some(session) = query::session_by_row(conn, row)? else {
        return Ok(None);
    };
    Ok(Some(SessionDetail {
        session,
        intervals: query::intervals_of(conn, row)?,
        usage: super::cost::session_usage(conn, row, prices)?,
    }))
}

/// Which kind of wait a [`Wait`] is, as the window names it.
pub fn wait_kind_name(kind: WaitKind) -> &'static str {
    match kind {
        WaitKind::Permission => "permission",
        WaitKind::Input => "input",
        WaitKind::IdleAfterTurn => "idle after a turn",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, SessionState};
    use crate::registry::SessionChange;
    use crate::store::waiting::Span;
    use crate::store::{HistoryStore, Record};
    use crate::usage::{TokenUsage, UsageKind, UsageReport};

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

    #[test]
    fn the_window_types_have_typescript_declarations_with_plain_numbers() {
        use ts_rs::TS;
        let usage = crate::usage::TokenUsage::decl();
        assert!(usage.contains("cache_write: number"), "{usage}");
        assert!(!usage.contains("bigint"), "{usage}");
        let view = TodayView::decl();
        for field in [
            "hours",
            "by_agent",
            "by_project",
            "longest_waits",
            "usage",
            "prices_as_of",
        ] {
            assert!(view.contains(field), "{field}: {view}");
        }
        let group = Group::decl();
        assert!(group.contains("cost_estimate_usd"), "flattened: {group}");
        assert!(SessionDetail::decl().contains("intervals"));
    }

    #[test]
    fn hours_split_working_waiting_and_idle_and_a_dst_day_has_23() {
        use SessionState::*;
        let tz: Tz = "Europe/Paris".parse().unwrap();
        // 29 March 2026 in Paris: 02:00 does not exist; the day is 23 hours, from 23:00Z.
        let from =
            waiting::local_day_start(chrono::NaiveDate::from_ymd_opt(2026, 3, 29).unwrap(), tz);
        assert_eq!(from, t("2026-03-28T23:00:00Z"));
        let tl = Timeline {
            session_id: "s".into(),
            agent: Agent::Claude,
            project: "shop".into(),
            ended_at: None,
            spans: vec![
                // Local 08:40 to 09:20: idle before a first prompt is idle, not waiting.
                span(Idle, "2026-03-29T06:40:00Z", Some("2026-03-29T07:10:00Z")),
                span(
                    Working,
                    "2026-03-29T07:10:00Z",
                    Some("2026-03-29T07:20:00Z"),
                ),
                // Idle after the turn: waiting on you, across the hour.
                span(Idle, "2026-03-29T07:20:00Z", Some("2026-03-29T08:30:00Z")),
            ],
        };
        let end = t("2026-03-29T22:00:00Z");
        let hours = hourly(&[tl], from, end, end, tz);
        assert_eq!(hours.len(), 23);
        assert_eq!(hours[1].local, "01:00");
        assert_eq!(hours[2].local, "03:00", "02:00 does not exist");
        let h = |local: &str| hours.iter().find(|h| h.local == local).unwrap();
        assert_eq!(
            (h("08:00").idle_secs, h("08:00").working_secs),
            (20 * 60, 0)
        );
        assert_eq!(
            (
                h("09:00").idle_secs,
                h("09:00").working_secs,
                h("09:00").waiting_on_you_secs
            ),
            (10 * 60, 10 * 60, 40 * 60)
        );
        assert_eq!(h("10:00").waiting_on_you_secs, 30 * 60);
        let total: i64 = hours.iter().map(|h| h.waiting_on_you_secs).sum();
        assert_eq!(total, 70 * 60);
    }

    #[test]
    fn the_today_view_and_a_sessions_detail_come_from_the_store() {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        let mut store = HistoryStore::open(&path).unwrap();
        let change = |at: &str, state| {
            let mut s = Session::new("s1", Agent::Claude, state, t("2026-03-02T09:00:00Z"));
            s.cwd = Some("/w/shop".into());
            s.model = Some("claude-sonnet-4-5".into());
            Record::Change {
                at: t(at),
                change: SessionChange::Changed {
                    old_state: SessionState::Idle,
                    session: s,
                },
            }
        };
        store
            .apply(&[
                change("2026-03-02T09:00:00Z", SessionState::Working),
                Record::Usage(UsageReport {
                    session_id: "s1".into(),
                    agent: Agent::Claude,
                    at: t("2026-03-02T09:01:00Z"),
                    turn_id: Some("p1".into()),
                    model: None,
                    kind: UsageKind::Delta { key: "m1".into() },
                    usage: TokenUsage {
                        output: 1_000_000,
                        ..Default::default()
                    },
                }),
                change("2026-03-02T09:30:00Z", SessionState::Idle),
            ])
            .unwrap();
        let now = t("2026-03-02T10:15:00Z");
        let view = today(
            Some(store.connection()),
            now,
            Tz::UTC,
            &PriceTable::shipped(),
        )
        .unwrap();
        assert_eq!(view.hours.len(), 11, "midnight to the current hour");
        assert_eq!(view.hours[9].working_secs, 30 * 60);
        assert_eq!(view.hours[9].waiting_on_you_secs, 30 * 60);
        assert_eq!(view.hours[10].waiting_on_you_secs, 15 * 60, "up to now");
        assert_eq!(view.totals.waiting_on_you_secs, 45 * 60);
        assert_eq!(view.by_project[0].key, "shop");
        assert_eq!(view.by_agent[0].key, "claude");
        // A million output tokens of sonnet, priced by the session's model: 15 $.
        assert_eq!(view.usage.cost_estimate_usd, Some(15.0));
        assert_eq!(view.by_project[0].usage.cost_estimate_usd, Some(15.0));
        assert_eq!(view.longest_waits[0].secs, 45 * 60);
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["usage"]["cost_estimate_usd"], 15.0);
        assert_eq!(json["by_agent"][0]["tokens"]["output"], 1_000_000);

        let detail = session_detail(store.connection(), "s1", &PriceTable::shipped())
            .unwrap()
            .unwrap();
        assert_eq!(detail.intervals.len(), 2);
        assert_eq!(detail.session.state, SessionState::Idle);
        assert_eq!(detail.usage.turns[0].turn_id.as_deref(), Some("p1"));
        assert!(
            session_detail(store.connection(), "nope", &PriceTable::shipped())
                .unwrap()
                .is_none()
        );
        // No store yet: an empty day, not an error.
        let empty = today(None, now, Tz::UTC, &PriceTable::shipped()).unwrap();
        assert_eq!(empty.totals, Figures::default());
    }
}
