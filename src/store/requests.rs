//! Permission requests in the history store: each one, how it ended, from where, and how long the
//! agent waited; and the day's tally of answers (`stats`).
//!
//! Only what the row showed is kept: the tool's name, never its input (the store keeps no tool
//! input, see [`super::schema`]). "From where" is the answer's place (window, popover, tray menu,
//! alert, CLI), or `terminal` for a request the agent moved past (the user answered in its
//! terminal, or the tool ran), or `timeout` for one that expired.

use std::collections::BTreeMap;

use agent_tray_domain::pending::{Answer, AnswerSource, Closed, Outcome};
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, Transaction};
use serde::{Deserialize, Serialize};

use super::{from_ms, session_row, to_ms};

/// How each place an answer can come from is named to people (History, Today, `stats`).
pub const PLACE_NAMES: &[(&str, &str)] = &[
    ("window", "the window"),
    ("popover", "the popover"),
    ("tray_menu", "the tray menu"),
    ("alert", "an alert"),
    ("cli", "the command line"),
    ("terminal", "the terminal"),
    ("timeout", "nobody (expired)"),
];

/// How each way a request ends is named to people.
pub const OUTCOME_NAMES: &[(&str, &str)] = &[
    ("allowed", "allowed"),
    ("allowed_for_session", "allowed for the session"),
    ("denied", "denied"),
    ("answered_in_terminal", "answered in the terminal"),
    ("expired", "expired"),
    ("session_ended", "session ended"),
    ("replaced", "asked again"),
    ("abandoned", "abandoned"),
];

/// One request as History shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RequestRecord {
    pub request_id: String,
    pub tool: String,
    pub asked_at: DateTime<Utc>,
    pub closed_at: DateTime<Utc>,
    /// `allowed`, `allowed_for_session`, `denied`, `answered_in_terminal`, `expired`,
    /// `session_ended`, `replaced`, `abandoned`.
    pub outcome: String,
    /// `window`, `popover`, `tray_menu`, `alert`, `cli`, `terminal`, `timeout`; `null` otherwise.
    pub source: Option<String>,
    /// How long the agent waited, in seconds.
    pub waited_secs: f64,
}

/// The answers of a stretch of time (`stats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, ts_rs::TS)]
pub struct AnswerCounts {
    /// Answered from Agent Tray (any of its places).
    #[ts(type = "number")]
    pub from_tray: u64,
    /// Per place: `window`, `popover`, `tray_menu`, `alert`, `cli`.
    #[ts(type = "Record<string, number>")]
    pub by_source: BTreeMap<String, u64>,
    /// Answered in the agent's terminal (the agent moved past the request).
    #[ts(type = "number")]
    pub in_terminal: u64,
    /// Nobody answered in time: the agent asked in its terminal.
    #[ts(type = "number")]
    pub expired: u64,
    /// The median wait of the answers from the tray, and of those in the terminal, in seconds.
    pub tray_median_wait_secs: Option<f64>,
    pub terminal_median_wait_secs: Option<f64>,
    /// An estimate of the waiting the tray's answers saved: for each, the terminal's median wait
    /// less its own (never below zero). `null` until both kinds of answer are known.
    pub waiting_saved_estimate_secs: Option<f64>,
}

/// How a closed request is recorded: its outcome and where it was answered.
pub fn outcome_and_source(outcome: &Outcome) -> (&'static str, Option<&'static str>) {
    match outcome {
        Outcome::Answered { answer, source } => {
            let what = match answer {
                Answer::Allow => "allowed",
                Answer::AllowForSession => "allowed_for_session",
                Answer::Deny { .. } => "denied",
                Answer::Questions { .. } => "answered",
                Answer::Dismiss => "dismissed",
                Answer::Stop => "stopped",
            };
            let from = match source {
                AnswerSource::Window => "window",
                AnswerSource::Popover => "popover",
                AnswerSource::TrayMenu => "tray_menu",
                AnswerSource::Alert => "alert",
                AnswerSource::Cli => "cli",
            };
            (what, Some(from))
        }
        Outcome::MovedOn => ("answered_in_terminal", Some("terminal")),
        Outcome::Expired => ("expired", Some("timeout")),
        Outcome::SessionEnded => ("session_ended", None),
        Outcome::Replaced { .. } => ("replaced", None),
        Outcome::Abandoned => ("abandoned", None),
    }
}

/// Records a closed request (once: the request id is unique).
pub fn apply_closed(tx: &Transaction<'_>, closed: &Closed) -> rusqlite::Result<()> {
    let session_id = &closed.ask.session.session_id;
    // A remote's request is the remote's own history.
    if closed.ask.session.host.is_some() {
        return Ok(());
    }
    let asked_ms = to_ms(closed.ask.asked_at);
    tx.prepare_cached(
        "INSERT INTO sessions (session_id, agent, started_at, last_seen) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT(session_id) DO NOTHING",
    )?
    .execute(params![session_id, closed.ask.agent.as_str(), asked_ms])?;
    let Some(id) = session_row(tx, session_id)? else {
        return Ok(());
    };
    let (outcome, source) = outcome_and_source(&closed.outcome);
    tx.prepare_cached(
        "INSERT INTO requests (session, request_id, tool, asked_ms, closed_ms, outcome, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(request_id) DO NOTHING",
    )?
    .execute(params![
        id,
        closed.id.as_str(),
        closed.ask.detail.tool,
        asked_ms,
        to_ms(closed.at),
        outcome,
        source
    ])?;
    Ok(())
}

/// A session's requests, oldest first.
pub fn of_session(conn: &Connection, session: i64) -> rusqlite::Result<Vec<RequestRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT request_id, tool, asked_ms, closed_ms, outcome, source FROM requests
         WHERE session = ?1 ORDER BY asked_ms, id",
    )?;
    let rows = stmt.query_map(params![session], |r| {
        let asked: i64 = r.get(2)?;
        let closed: i64 = r.get(3)?;
        Ok(RequestRecord {
            request_id: r.get(0)?,
            tool: r.get(1)?,
            asked_at: from_ms(asked),
            closed_at: from_ms(closed),
            outcome: r.get(4)?,
            source: r.get(5)?,
            waited_secs: (closed - asked).max(0) as f64 / 1000.0,
        })
    })?;
    rows.collect()
}

/// The answers of requests closed in `[from, to)`.
pub fn counts(
    conn: &Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> rusqlite::Result<AnswerCounts> {
    let mut stmt = conn.prepare_cached(
        "SELECT source, closed_ms - asked_ms FROM requests WHERE closed_ms >= ?1 AND closed_ms < ?2",
    )?;
    let rows = stmt.query_map(params![to_ms(from), to_ms(to)], |r| {
        Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?))
    })?;
    let mut tally = AnswerCounts::default();
    let mut tray_waits = Vec::new();
    let mut terminal_waits = Vec::new();
    for row in rows {
        let (source, waited_ms) = row?;
        let waited = waited_ms.max(0) as f64 / 1000.0;
        match source.as_deref() {
            Some("terminal") => {
                tally.in_terminal += 1;
                terminal_waits.push(waited);
            }
            Some("timeout") => tally.expired += 1,
            Some(place) => {
                tally.from_tray += 1;
                *tally.by_source.entry(place.to_string()).or_default() += 1;
                tray_waits.push(waited);
            }
            None => {}
        }
    }
    tally.tray_median_wait_secs = median(&mut tray_waits);
    tally.terminal_median_wait_secs = median(&mut terminal_waits);
    if let Some(terminal) = tally.terminal_median_wait_secs {
        if !tray_waits.is_empty() {
            tally.waiting_saved_estimate_secs =
                Some(tray_waits.iter().map(|w| (terminal - w).max(0.0)).sum());
        }
    }
    Ok(tally)
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::Agent;
    use crate::store::{HistoryStore, Record};
    use agent_tray_domain::pending::{Accepts, Ask, AskDetail, PendingBook, SessionKey, Target};
    use chrono::TimeZone;

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).single().unwrap()
    }

    fn ask(session: &str, call: &str, asked: i64) -> Ask {
        Ask {
            session: SessionKey {
                host: None,
                session_id: session.into(),
            },
            agent: Agent::Claude,
            detail: AskDetail {
                tool: "Bash".into(),
                command: Some("rm -rf build".into()),
                ..AskDetail::default()
            },
            call_id: call.into(),
            input_digest: call.into(),
            asked_at: at(asked),
            answer_by: at(asked + 300),
            accepts: Accepts {
                allow_for_session: true,
                deny_message: true,
            },
        }
    }

    // Every way a request ends reaches the store with its place, once, and `stats` counts the
    // tray's answers apart from the terminal's and the expired.
    #[test]
    fn each_ending_is_recorded_with_where_it_was_answered_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = HistoryStore::open(&dir.path().join("h.sqlite3")).unwrap();
        let mut book = PendingBook::new("t");
        let mut closed = Vec::new();
        let a = book.ask(ask("s1", "c1", 0), at(0)).id;
        closed.push(
            book.answer(
                &Target::Request(a),
                Answer::Allow,
                AnswerSource::Alert,
                at(4),
            )
            .unwrap()
            .closed,
        );
        let b = book.ask(ask("s1", "c2", 10), at(10)).id;
        closed.push(
            book.answer(
                &Target::Request(b),
                Answer::Deny { message: None },
                AnswerSource::Cli,
                at(16),
            )
            .unwrap()
            .closed,
        );
        book.ask(ask("s2", "c3", 20), at(20));
        closed.extend(book.moved_on(
            &SessionKey {
                host: None,
                session_id: "s2".into(),
            },
            None,
            at(50),
        ));
        book.ask(ask("s3", "c4", 30), at(30));
        closed.extend(book.expire(at(330)));
        let records: Vec<Record> = closed.iter().cloned().map(Record::Request).collect();
        store.apply(&records).unwrap();
        store.apply(&records).unwrap(); // twice: still one row each

        let conn = store.connection();
        let s1: i64 = conn
            .query_row("SELECT id FROM sessions WHERE session_id = 's1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        let rows = of_session(conn, s1).unwrap();
        let shown: Vec<(&str, Option<&str>, f64)> = rows
            .iter()
            .map(|r| (r.outcome.as_str(), r.source.as_deref(), r.waited_secs))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("allowed", Some("alert"), 4.0),
                ("denied", Some("cli"), 6.0)
            ]
        );
        let tally = counts(conn, at(-1), at(1000)).unwrap();
        assert_eq!(tally.from_tray, 2);
        assert_eq!(tally.by_source.get("alert"), Some(&1));
        assert_eq!(tally.in_terminal, 1);
        assert_eq!(tally.expired, 1);
        assert_eq!(tally.tray_median_wait_secs, Some(5.0));
        assert_eq!(tally.terminal_median_wait_secs, Some(30.0));
        assert_eq!(tally.waiting_saved_estimate_secs, Some(26.0 + 24.0));
    }
}
