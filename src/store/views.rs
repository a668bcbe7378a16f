//! What the window's "Today" and "History" views read: the day by hour, totals per agent and
//! project, the longest waits, and one session's timeline.
//!
//! Why a module of its own: the window needs answers `stats` does not print (hour buckets, the
//! plain idle time beside working and waiting), and the desktop shell must stay a thin caller.
//! Every figure here comes from [`waiting::tally`], so the window and `agent-tray stats` never
//! disagree on what "waiting on you" means:
//! - an hour's figures are a tally of that hour alone (the tally clips to its window);
//! - **idle** is the time a session was alive but neither working nor waiting on you (before its
//!   first prompt, or `starting`). It is measured as the tally's `working` of a copy of the
//!   timelines in which every live state reads `working` (the tally's clipping to the session's
//!   life, to `now` and to overlaps does not depend on the state), less working and waiting.
//!
//! Cost and tokens are `None` until the store records usage; the views then show them, always
//! labelled as an estimate.

use std::path::Path;

use chrono::{DateTime, TimeDelta, Timelike, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::cost::{self, Cost};
use super::query::{self, HistoryFilter};
use super::waiting::{self, Figures, GroupBy, Question, Tally, Timeline, WaitKind};
use super::{from_ms, parse_state, StoreError};
use crate::model::{Agent, Session, SessionState};
use crate::usage::PriceTable;

/// Time in each of the chart's three kinds, whole seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct TimeSplit {
    #[ts(type = "number")]
    pub working_secs: i64,
    /// Waiting for permission, for input, or idle after a turn (see [`waiting`]).
    #[ts(type = "number")]
    pub waiting_on_you_secs: i64,
    #[ts(type = "number")]
    pub waiting_for_permission_secs: i64,
    #[ts(type = "number")]
    pub waiting_for_input_secs: i64,
    #[ts(type = "number")]
    pub idle_after_turn_secs: i64,
    /// Alive and neither working nor waiting on you.
    #[ts(type = "number")]
    pub idle_secs: i64,
}

impl TimeSplit {
    fn new(figures: Figures, alive_secs: i64) -> Self {
        TimeSplit {
            working_secs: figures.working_secs,
            waiting_on_you_secs: figures.waiting_on_you_secs,
            waiting_for_permission_secs: figures.waiting_for_permission_secs,
            waiting_for_input_secs: figures.waiting_for_input_secs,
            idle_after_turn_secs: figures.idle_after_turn_secs,
            idle_secs: (alive_secs - figures.working_secs - figures.waiting_on_you_secs).max(0),
        }
    }
}

/// One local hour of the day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct HourBucket {
    /// The local hour it starts at, 0 to 23 (a DST day repeats or skips one).
    pub hour: u32,
    pub from: DateTime<Utc>,
    #[serde(flatten)]
    pub split: TimeSplit,
}

/// The figures of one agent or project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct KeyedSplit {
    pub key: String,
    #[serde(flatten)]
    pub split: TimeSplit,
}

/// Which kind of wait, as the window names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum WaitWhy {
    Permission,
    Input,
    IdleAfterTurn,
}

/// One of the day's longest waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct LongWait {
    pub session_id: String,
    pub agent: Agent,
    pub project: String,
    pub kind: WaitWhy,
    pub waiting_for: Option<String>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    #[ts(type = "number")]
    pub secs: i64,
}

/// The "Today" view: local midnight to `now`.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct DayReport {
    pub from: DateTime<Utc>,
    pub now: DateTime<Utc>,
    pub time_zone: String,
    pub totals: TimeSplit,
    /// Every local hour of the day, midnight to midnight (hours after `now` are zero).
    pub hours: Vec<HourBucket>,
    pub by_agent: Vec<KeyedSplit>,
    pub by_project: Vec<KeyedSplit>,
    pub longest_waits: Vec<LongWait>,
    /// The day's estimated cost in US dollars, when the store knows the sessions' usage.
    pub cost_estimate_usd: Option<f64>,
    /// The day's tokens (input, output and cache), when known.
    #[ts(type = "number | null")]
    pub tokens: Option<u64>,
    /// The day's permission requests: answered from the tray, in the terminal, expired.
    pub answers: super::requests::AnswerCounts,
}

/// One state interval of a session, for its timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct TimelineInterval {
    pub state: SessionState,
    pub from: DateTime<Utc>,
    /// `None` while it is the session's current state.
    pub to: Option<DateTime<Utc>>,
    pub waiting_for: Option<String>,
}

/// A session with its timeline and its figures over its whole life.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct SessionDetail {
    pub session: Session,
    pub project: String,
    pub intervals: Vec<TimelineInterval>,
    pub totals: TimeSplit,
    /// The session's estimated cost in US dollars, when its usage is known.
    pub cost_estimate_usd: Option<f64>,
    #[ts(type = "number | null")]
    pub tokens: Option<u64>,
    /// Its permission requests, how each ended and from where.
    pub requests: Vec<super::requests::RequestRecord>,
}

/// The same timelines with every live state read as `working`: the tally's `working` of these
/// is the time each session was alive (see the module text).
fn alive_as_working(timelines: &[Timeline]) -> Vec<Timeline> {
    timelines
        .iter()
        .map(|t| {
            let mut t = t.clone();
            for span in &mut t.spans {
                if span.state != SessionState::Ended {
                    span.state = SessionState::Working;
                }
            }
            t
        })
        .collect()
}

fn ask(
    timelines: &[Timeline],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
    tz: Tz,
    by: GroupBy,
) -> Tally {
    waiting::tally(
        timelines,
        Question {
            from,
            to,
            now,
            tz,
            by,
        },
    )
}

/// Joins a tally of the real states with one of the alive time, group by group.
fn keyed(real: &Tally, alive: &Tally) -> Vec<KeyedSplit> {
    real.groups
        .iter()
        .map(|g| {
            let alive_secs = alive
                .groups
                .iter()
                .find(|a| a.key == g.key)
                .map_or(0, |a| a.figures.working_secs);
            KeyedSplit {
                key: g.key.clone(),
                split: TimeSplit::new(g.figures, alive_secs),
            }
        })
        .collect()
}

/// The day report of the local day holding `now`, from `timelines` (pure).
pub fn day_report(timelines: &[Timeline], now: DateTime<Utc>, tz: Tz) -> DayReport {
    let day = now.with_timezone(&tz).date_naive();
    let from = waiting::local_day_start(day, tz);
    let day_end = waiting::next_local_midnight(from, tz);
    let alive = alive_as_working(timelines);
    let split_of = |start: DateTime<Utc>, end: DateTime<Utc>| {
        let end = end.min(now);
        if end <= start {
            return TimeSplit::default();
        }
        let real = ask(timelines, start, end, now, tz, GroupBy::Agent);
        let life = ask(&alive, start, end, now, tz, GroupBy::Agent);
        TimeSplit::new(real.totals, life.totals.working_secs)
    };
    let mut hours = Vec::with_capacity(25);
    let mut start = from;
    while start < day_end {
        let end = (start + TimeDelta::hours(1)).min(day_end);
        let hour = start.with_timezone(&tz).hour();
        hours.push(HourBucket {
            hour,
            from: start,
            split: split_of(start, end),
        });
        start = end;
    }
    let to = now.max(from);
    let by_agent = ask(timelines, from, to, now, tz, GroupBy::Agent);
    let by_project = ask(timelines, from, to, now, tz, GroupBy::Project);
    let alive_agent = ask(&alive, from, to, now, tz, GroupBy::Agent);
    let alive_project = ask(&alive, from, to, now, tz, GroupBy::Project);
    DayReport {
        from,
        now,
        time_zone: tz.name().to_string(),
        totals: TimeSplit::new(by_agent.totals, alive_agent.totals.working_secs),
        hours,
        by_agent: keyed(&by_agent, &alive_agent),
        by_project: keyed(&by_project, &alive_project),
        longest_waits: by_agent
            .longest_waits
            .into_iter()
            .map(|w| LongWait {
                session_id: w.session_id,
                agent: w.agent,
                project: w.project,
                kind: match w.kind {
                    WaitKind::Permission => WaitWhy::Permission,
                    WaitKind::Input => WaitWhy::Input,
                    WaitKind::IdleAfterTurn => WaitWhy::IdleAfterTurn,
                },
                waiting_for: w.waiting_for,
                from: w.from,
                to: w.to,
                secs: w.secs,
            })
            .collect(),
        cost_estimate_usd: None,
        tokens: None,
        answers: super::requests::AnswerCounts::default(),
    }
}

/// The "Today" view from the store at `path` (no store yet: an empty day).
pub fn today(path: &Path, now: DateTime<Utc>, tz: Tz) -> Result<DayReport, StoreError> {
    let from = waiting::local_day_start(now.with_timezone(&tz).date_naive(), tz);
    let Some(conn) = query::open_reader(path)? else {
        return Ok(day_report(&[], now, tz));
    };
    let timelines = query::timelines(&conn, from, now.max(from))?;
    let mut report = day_report(&timelines, now, tz);
    report.answers =
        super::requests::counts(&conn, from, now.max(from) + TimeDelta::milliseconds(1))?;
    // Cost so far: today's usage rows priced with the shipped table (or the user's override
    // beside the store). No rows: "not recorded", not zero.
    let prices = prices_beside(path);
    let rows = cost::usage_rows(&conn, from, now.max(from))?;
    if !rows.is_empty() {
        let mut total = Cost::default();
        for row in &rows {
            total.add(
                row.tokens,
                prices.cost_estimate_usd(row.model.as_deref(), &row.tokens),
            );
        }
        let total = total.rounded();
        report.cost_estimate_usd = total.cost_estimate_usd;
        report.tokens = Some(total.tokens.total());
    }
    Ok(report)
}

/// The price table for the store at `path`: the shipped one, with the user's override from the
/// data folder applied, as `stats` reads it. A bad override is logged and ignored.
fn prices_beside(path: &Path) -> PriceTable {
    let (prices, error) = PriceTable::load(super::data_dir_of(path));
    if let Some(error) = error {
        tracing::warn!(%error, "price table override ignored");
    }
    prices
}

/// Today's "waiting on you" total from the store at `path`, in seconds (the tray's line).
pub fn waiting_on_you_today(path: &Path, now: DateTime<Utc>, tz: Tz) -> Result<i64, StoreError> {
    let from = waiting::local_day_start(now.with_timezone(&tz).date_naive(), tz);
    let timelines = match query::open_reader(path)? {
        Some(conn) => query::timelines(&conn, from, now.max(from))?,
        None => return Ok(0),
    };
    Ok(
        ask(&timelines, from, now.max(from), now, tz, GroupBy::Agent)
            .totals
            .waiting_on_you_secs,
    )
}

/// The tray menu's line for today's "waiting on you" total (`None`: no history is kept).
pub fn waiting_today_label(secs: Option<i64>) -> String {
    match secs {
        Some(secs) => format!(
            "Waiting on you today: {}",
            crate::duration_text::format_duration(secs, crate::duration_text::Precision::Minutes)
        ),
        None => "Waiting on you today: no history".to_string(),
    }
}

/// One row of the History view: a stored session and its project's name.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct HistoryEntry {
    pub session: Session,
    pub project: String,
}

/// `history` from the store at `path` (no store yet: nothing).
pub fn history(path: &Path, filter: &HistoryFilter) -> Result<Vec<HistoryEntry>, StoreError> {
    let sessions = match query::open_reader(path)? {
        Some(conn) => query::history(&conn, filter)?,
        None => Vec::new(),
    };
    Ok(sessions
        .into_iter()
        .map(|session| HistoryEntry {
            project: project_name(&session),
            session,
        })
        .collect())
}

/// One session's detail from the store at `path`; `None` when it is not there.
pub fn session_detail(
    path: &Path,
    session_id: &str,
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<Option<SessionDetail>, StoreError> {
    let Some(conn) = query::open_reader(path)? else {
        return Ok(None);
    };
    detail_from(&conn, session_id, now, tz, &prices_beside(path))
}

fn detail_from(
    conn: &Connection,
    session_id: &str,
    now: DateTime<Utc>,
    tz: Tz,
    prices: &PriceTable,
) -> Result<Option<SessionDetail>, StoreError> {
    let row: Option<(i64, Option<i64>)> = conn
        .query_row(
            "SELECT id, ended_at FROM sessions WHERE session_id = ?1",
            params![session_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((id, ended_at)) = row else {
        return Ok(None);
    };
    let mut stmt = conn.prepare(
        "SELECT state, from_ms, to_ms, waiting_for, prompt_source FROM intervals
         WHERE session = ?1 ORDER BY from_ms",
    )?;
    let rows = stmt
        .query_map(params![id], |r| {
            let state: String = r.get(0)?;
            let interval = TimelineInterval {
                state: parse_state(&state).unwrap_or(SessionState::Idle),
                from: from_ms(r.get(1)?),
                to: r.get::<_, Option<i64>>(2)?.map(from_ms),
                waiting_for: r.get(3)?,
            };
            Ok((interval, r.get::<_, Option<String>>(4)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (intervals, prompt_sources): (Vec<TimelineInterval>, Vec<Option<String>>) =
        rows.into_iter().unzip();
    // The session as `history` shows it (its live state, or ended).
    let Some(session) = query::session_by_row(conn, id)? else {
        return Ok(None);
    };
    let project = project_name(&session);
    let timeline = Timeline {
        session_id: session.session_id.clone(),
        agent: session.agent,
        project: project.clone(),
        ended_at: ended_at.map(from_ms),
        spans: intervals
            .iter()
            .zip(prompt_sources)
            .map(|(i, prompt_source)| waiting::Span {
                state: i.state,
                from: i.from,
                to: i.to,
                waiting_for: i.waiting_for.clone(),
                prompt_source,
            })
            .collect(),
    };
    let start = intervals.first().map_or(session.started_at, |i| i.from);
    let end = now.max(start);
    let timelines = std::slice::from_ref(&timeline);
    let real = ask(timelines, start, end, now, tz, GroupBy::Agent);
    let life = ask(
        &alive_as_working(timelines),
        start,
        end,
        now,
        tz,
        GroupBy::Agent,
    );
    let usage = cost::session_usage(conn, id, prices)?;
    let recorded = !usage.turns.is_empty();
    Ok(Some(SessionDetail {
        totals: TimeSplit::new(real.totals, life.totals.working_secs),
        session,
        project,
        intervals,
        cost_estimate_usd: usage.total.cost_estimate_usd.filter(|_| recorded),
        tokens: recorded.then(|| usage.total.tokens.total()),
        requests: super::requests::of_session(conn, id)?,
    }))
}

/// A project's name as `list` shows it: the repo, else the folder's last part.
fn project_name(session: &Session) -> String {
    if let Some(repo) = session.repo.as_deref().filter(|r| !r.is_empty()) {
        return repo.to_string();
    }
    match session.cwd.as_deref() {
        Some(cwd) => Path::new(cwd)
            .file_name()
            .map_or_else(|| cwd.to_string(), |n| n.to_string_lossy().into_owned()),
        None => "-".to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::registry::SessionChange;
    use crate::store::waiting::Span;
    use crate::store::{HistoryStore, Record};
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

    fn timeline(id: &str, agent: Agent, project: &str, spans: Vec<Span>) -> Timeline {
        Timeline {
            session_id: id.into(),
            agent,
            project: project.into(),
            ended_at: None,
            spans,
        }
    }

    /// Two sessions on 2026-03-02 (UTC): a Claude one in "shop" that starts idle, works, waits
    /// for permission, works, then sits idle after its turn; a Codex one in "api" that works
    /// across an hour boundary and is still working at `now`.
    fn scripted() -> Vec<Timeline> {
        vec![
            timeline(
                "a",
                Agent::Claude,
                "shop",
                vec![
                    span(Idle, "2026-03-02T09:00:00Z", Some("2026-03-02T09:10:00Z")),
                    span(
                        Working,
                        "2026-03-02T09:10:00Z",
                        Some("2026-03-02T09:30:00Z"),
                    ),
                    span(
                        WaitingForPermission,
                        "2026-03-02T09:30:00Z",
                        Some("2026-03-02T09:45:00Z"),
                    ),
                    span(
                        Working,
                        "2026-03-02T09:45:00Z",
                        Some("2026-03-02T10:00:00Z"),
                    ),
                    span(Idle, "2026-03-02T10:00:00Z", None),
                ],
            ),
            timeline(
                "b",
                Agent::Codex,
                "api",
                vec![span(Working, "2026-03-02T10:50:00Z", None)],
            ),
        ]
    }

    #[test]
    fn the_day_report_splits_each_hour_into_working_waiting_on_you_and_idle() {
        let now = t("2026-03-02T11:20:00Z");
        let report = day_report(&scripted(), now, Tz::UTC);
        assert_eq!(report.hours.len(), 24, "midnight to midnight");
        assert_eq!(report.from, t("2026-03-02T00:00:00Z"));
        let h = |n: usize| report.hours[n].split;
        // 09: idle 10 min, working 20 + 15 min, permission 15 min.
        assert_eq!(h(9).idle_secs, 600);
        assert_eq!(h(9).working_secs, 35 * 60);
        assert_eq!(h(9).waiting_for_permission_secs, 15 * 60);
        assert_eq!(h(9).waiting_on_you_secs, 15 * 60);
        // 10: "a" idle after its turn all hour; "b" works from 10:50.
        assert_eq!(h(10).waiting_on_you_secs, 3600);
        assert_eq!(h(10).idle_after_turn_secs, 3600);
        assert_eq!(h(10).working_secs, 600);
        assert_eq!(h(10).idle_secs, 0);
        // 11: up to now only.
        assert_eq!(h(11).waiting_on_you_secs, 20 * 60);
        assert_eq!(h(11).working_secs, 20 * 60);
        assert_eq!(h(12), TimeSplit::default(), "the future is empty");
        assert_eq!(h(8), TimeSplit::default());
        let sum = |f: fn(&TimeSplit) -> i64| report.hours.iter().map(|b| f(&b.split)).sum::<i64>();
        assert_eq!(sum(|s| s.working_secs), report.totals.working_secs);
        assert_eq!(
            sum(|s| s.waiting_on_you_secs),
            report.totals.waiting_on_you_secs
        );
        assert_eq!(sum(|s| s.idle_secs), report.totals.idle_secs);
        assert_eq!(report.totals.waiting_on_you_secs, (15 + 60 + 20) * 60);
    }

    #[test]
    fn the_day_report_totals_each_agent_and_project_and_lists_the_longest_wait_first() {
        let report = day_report(&scripted(), t("2026-03-02T11:20:00Z"), Tz::UTC);
        let keys: Vec<&str> = report.by_project.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(keys, ["api", "shop"]);
        assert_eq!(report.by_project[0].split.working_secs, 30 * 60);
        assert_eq!(report.by_project[1].split.waiting_on_you_secs, 95 * 60);
        assert_eq!(report.by_project[1].split.idle_secs, 600);
        let agents: Vec<&str> = report.by_agent.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(agents, ["claude", "codex"]);
        assert_eq!(report.longest_waits[0].kind, WaitWhy::IdleAfterTurn);
        assert_eq!(report.longest_waits[0].secs, 80 * 60);
        assert_eq!(report.longest_waits[1].kind, WaitWhy::Permission);
        assert_eq!(
            report.cost_estimate_usd, None,
            "no usage recorded: no cost shown"
        );
    }

    #[test]
    fn the_tray_line_reads_in_minutes() {
        assert_eq!(waiting_today_label(Some(0)), "Waiting on you today: <1m");
        assert_eq!(
            waiting_today_label(Some(95 * 60)),
            "Waiting on you today: 1h 35m"
        );
        assert_eq!(
            waiting_today_label(None),
            "Waiting on you today: no history"
        );
    }

    #[test]
    fn a_dst_day_has_as_many_buckets_as_local_hours() {
        let tz: Tz = "Europe/Paris".parse().unwrap();
        // 2026-03-29: clocks go from 02:00 to 03:00 in Paris, a 23-hour day.
        let report = day_report(&[], t("2026-03-29T20:00:00Z"), tz);
        assert_eq!(report.hours.len(), 23);
        let labels: Vec<u32> = report.hours.iter().map(|b| b.hour).collect();
        assert_eq!(&labels[..4], [0, 1, 3, 4]);
    }

    fn session(id: &str, state: SessionState) -> Session {
        let mut s = Session::new(id, Agent::Claude, state, t("2026-03-02T09:00:00Z"));
        s.repo = Some("shop".into());
        s.cwd = Some("/home/dev/shop".into());
        s
    }

    fn change(at: &str, session: Session) -> Record {
        Record::Change {
            at: t(at),
            change: SessionChange::Changed {
                old_state: SessionState::Idle,
                session,
            },
        }
    }

    #[test]
    fn a_sessions_detail_has_its_intervals_and_the_store_answers_today_and_the_tray_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        let now = t("2026-03-02T10:00:00Z");
        assert_eq!(
            today(&path, now, Tz::UTC).unwrap().totals,
            TimeSplit::default(),
            "no store yet: an empty day, not an error"
        );
        assert!(session_detail(&path, "a", now, Tz::UTC).unwrap().is_none());
        {
            let mut store = HistoryStore::open(&path).unwrap();
            let mut waiting = session("a", WaitingForInput);
            waiting.waiting_for = Some("a question".into());
            store
                .apply(&[
                    change("2026-03-02T09:00:00Z", session("a", Working)),
                    change("2026-03-02T09:20:00Z", waiting),
                    change("2026-03-02T09:50:00Z", session("a", Working)),
                ])
                .unwrap();
        }
        let detail = session_detail(&path, "a", now, Tz::UTC).unwrap().unwrap();
        let states: Vec<SessionState> = detail.intervals.iter().map(|i| i.state).collect();
        assert_eq!(states, [Working, WaitingForInput, Working]);
        assert_eq!(
            detail.intervals[1].waiting_for.as_deref(),
            Some("a question")
        );
        assert_eq!(detail.intervals[2].to, None, "still open");
        assert_eq!(detail.totals.working_secs, 30 * 60);
        assert_eq!(detail.totals.waiting_for_input_secs, 30 * 60);
        assert_eq!(detail.project, "shop");
        let day = today(&path, now, Tz::UTC).unwrap();
        assert_eq!(day.totals.waiting_on_you_secs, 30 * 60);
        assert_eq!(day.hours[9].split.working_secs, 30 * 60);
        assert_eq!(waiting_on_you_today(&path, now, Tz::UTC).unwrap(), 30 * 60);
        let found = history(
            &path,
            &HistoryFilter {
                search: Some("SHOP".into()),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(found.len(), 1);
    }

    /// The window's views over a scripted day, as the shell sends them: the UI tests feed this
    /// file to the window (through the mocked IPC) and check what it shows against it, so the
    /// figures on screen are the core's. Regenerate:
    /// UPDATE_WINDOW_VIEWS=1 cargo test -p agent-tray --lib store::views
    fn scripted_views() -> serde_json::Value {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        let at = |hm: &str| format!("2026-11-30T{hm}:00Z");
        let mk = |id: &str, agent: Agent, repo: &str, branch: &str, title: &str, state| {
            let mut s = Session::new(id, agent, state, t(&at("08:00")));
            s.repo = Some(repo.into());
            s.cwd = Some(format!("/home/dev/{repo}"));
            s.branch = Some(branch.into());
            s.title = Some(title.into());
            s.model = Some(if agent == Agent::Claude {
                "claude-sonnet-4".into()
            } else {
                "gpt-5-codex".into()
            });
            s
        };
        let ended = |mut s: Session| {
            s.state = Ended;
            s.end_reason = Some(crate::model::EndReason::SessionEnd);
            s
        };
        let waiting = |mut s: Session, state, what: &str| {
            s.state = state;
            s.waiting_for = Some(what.into());
            s
        };
        let shop = |state| {
            mk(
                "s-shop",
                Agent::Claude,
                "shop",
                "main",
                "Fix the checkout total",
                state,
            )
        };
        let api = |state| {
            mk(
                "s-api",
                Agent::Codex,
                "payments-api",
                "retry-webhooks",
                "Retry failed webhooks",
                state,
            )
        };
        let docs = |state| {
            mk(
                "s-docs",
                Agent::Claude,
                "docs",
                "main",
                "Rewrite the install guide",
                state,
            )
        };
        let script: Vec<(String, Session)> = vec![
            (at("08:00"), shop(Idle)),
            (at("08:10"), shop(Working)),
            (
                at("08:40"),
                waiting(shop(Working), WaitingForPermission, "Bash"),
            ),
            (at("09:05"), shop(Working)),
            (at("09:45"), shop(Idle)),
            (at("11:15"), shop(Working)),
            (
                at("11:30"),
                waiting(shop(Working), WaitingForInput, "a question"),
            ),
            (at("12:00"), ended(shop(Ended))),
            (at("09:30"), api(Working)),
            (at("10:50"), api(Idle)),
            (at("11:05"), api(Working)),
            (at("13:20"), ended(api(Ended))),
            (at("13:00"), docs(Starting)),
            (at("13:10"), docs(Working)),
            (
                at("14:00"),
                waiting(docs(Working), WaitingForPermission, "Edit"),
            ),
        ];
        // The shop's permission wait at 08:40 was answered from an alert at 09:05; an earlier
        // request of the same wait was answered in the terminal.
        let requests = {
            use agent_tray_domain::pending::{
                Accepts, Answer, AnswerSource, Ask, AskDetail, PendingBook, SessionKey, Target,
            };
            let mut book = PendingBook::new("day");
            let ask = |call: &str, asked: &str| Ask {
                session: SessionKey {
                    host: None,
                    session_id: "s-shop".into(),
                },
                agent: Agent::Claude,
                detail: AskDetail {
                    tool: "Bash".into(),
                    ..AskDetail::default()
                },
                call_id: call.into(),
                input_digest: call.into(),
                asked_at: t(&at(asked)),
                answer_by: t(&at(asked)) + TimeDelta::minutes(60),
                accepts: Accepts {
                    allow_for_session: true,
                    deny_message: true,
                },
            };
            book.ask(ask("c1", "08:40"), t(&at("08:40")));
            let mut closed = book.moved_on(
                &SessionKey {
                    host: None,
                    session_id: "s-shop".into(),
                },
                None,
                t(&at("08:42")),
            );
            let id = book.ask(ask("c2", "08:43"), t(&at("08:43"))).id;
            closed.push(
                book.answer(
                    &Target::Request(id),
                    Answer::Allow,
                    AnswerSource::Alert,
                    t(&at("09:05")),
                )
                .unwrap()
                .closed,
            );
            closed
        };
        {
            let mut store = HistoryStore::open(&path).unwrap();
            for (when, session) in script {
                store.apply(&[change(&when, session)]).unwrap();
            }
            let records: Vec<Record> = requests.into_iter().map(Record::Request).collect();
            store.apply(&records).unwrap();
        }
        let now = t("2026-11-30T15:00:00Z");
        let today = today(&path, now, Tz::UTC).unwrap();
        let all = HistoryFilter {
            limit: 50,
            ..Default::default()
        };
        let entries = history(&path, &all).unwrap();
        let mut details = serde_json::Map::new();
        for e in &entries {
            let id = e.session.session_id.clone();
            let detail = session_detail(&path, &id, now, Tz::UTC).unwrap();
            details.insert(id, serde_json::to_value(detail).unwrap());
        }
        // The History view's queries and what the core answers to each.
        let queries: Vec<serde_json::Value> = [
            ("", None, None),
            ("CHECKOUT", None, None),
            ("main", None, None),
            ("", Some(Agent::Codex), None),
            ("", None, Some("docs")),
            ("", None, Some("shop")),
            ("", Some(Agent::Claude), Some("shop")),
            ("main", Some(Agent::Claude), Some("shop")),
            ("main", Some(Agent::Claude), None),
            ("nothing-like-this", None, None),
        ]
        .into_iter()
        .map(|(search, agent, project)| {
            let filter = HistoryFilter {
                search: Some(search.to_string()).filter(|s| !s.is_empty()),
                agent,
                project: project.map(String::from),
                limit: 50,
            };
            let ids: Vec<String> = history(&path, &filter)
                .unwrap()
                .into_iter()
                .map(|e| e.session.session_id)
                .collect();
            serde_json::json!({
                "query": { "search": search, "agent": agent, "project": project },
                "ids": ids,
            })
        })
        .collect();
        serde_json::json!({
            "now": now,
            "today": today,
            "history": entries,
            "details": details,
            "queries": queries,
        })
    }

    #[test]
    fn the_committed_window_views_match_the_core_on_a_scripted_day() {
        let views = scripted_views();
        // The figures the UI tests then check on screen, pinned here by hand.
        assert_eq!(
            views["today"]["totals"]["waiting_on_you_secs"],
            (25 + 90 + 30 + 15 + 60) * 60
        );
        assert_eq!(views["today"]["hours"][8]["working_secs"], 30 * 60);
        assert_eq!(views["today"]["hours"][8]["waiting_on_you_secs"], 20 * 60);
        assert_eq!(views["today"]["hours"][8]["idle_secs"], 10 * 60);
        assert_eq!(views["queries"][1]["ids"], serde_json::json!(["s-shop"]));
        assert_eq!(views["queries"][3]["ids"], serde_json::json!(["s-api"]));
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/window_views.json");
        let fresh = serde_json::to_string_pretty(&views).unwrap() + "\n";
        if std::env::var_os("UPDATE_WINDOW_VIEWS").is_some() {
            std::fs::write(&path, &fresh).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "{} is stale: regenerate it with UPDATE_WINDOW_VIEWS=1",
            path.display()
        );
    }
}
