//! Tokens and their estimated cost, read back from the store: per session, per turn, and added
//! into a `stats` tally.
//!
//! Why apart from [`super::waiting`]: time is cut into days and states, tokens are not: a usage
//! row belongs wholly to the moment it was recorded (its `at`), so it falls in one day and one
//! group, and pricing happens here, at read time, with whatever price table is current (see
//! [`crate::usage`]). A row's own model prices it; without one, its session's model does.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::from_ms;
use super::waiting::{GroupBy, Question};
use crate::model::Agent;
use crate::usage::{add_cost, round_usd, PriceTable, TokenUsage};

/// Usage and its estimated cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ts_rs::TS)]
pub struct Cost {
    pub tokens: TokenUsage,
    /// US dollars at the price table's rates; `null` when no model used was in the table.
    /// An estimate: see `prices_as_of`.
    pub cost_estimate_usd: Option<f64>,
}

impl Cost {
    pub fn add(&mut self, tokens: TokenUsage, cost: Option<f64>) {
        self.tokens += tokens;
        add_cost(&mut self.cost_estimate_usd, cost);
    }

    pub fn rounded(mut self) -> Self {
        self.cost_estimate_usd = self.cost_estimate_usd.map(round_usd);
        self
    }
}

/// One turn's usage.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct TurnUsage {
    /// The agent's turn id (Claude's prompt id, Codex's turn id); `null` when the agent did not
    /// say (usage before the first prompt seen, or an agent that names no turns).
    pub turn_id: Option<String>,
    /// When the turn's first usage was recorded.
    pub from: DateTime<Utc>,
    #[serde(flatten)]
    #[ts(flatten)]
    pub cost: Cost,
}

/// A session's usage: in all, and turn by turn (in order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, ts_rs::TS)]
pub struct SessionUsage {
    #[serde(flatten)]
    #[ts(flatten)]
    pub total: Cost,
    pub turns: Vec<TurnUsage>,
}

/// One stored usage row, as the tally needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    pub session_row: i64,
    pub agent: Agent,
    pub project: String,
    pub turn_id: Option<String>,
    pub model: Option<String>,
    pub at: DateTime<Utc>,
    pub tokens: TokenUsage,
}

fn tokens_at(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<TokenUsage> {
    let n = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)?.max(0).unsigned_abs()) };
    Ok(TokenUsage {
        input: n(first)?,
        output: n(first + 1)?,
        cache_read: n(first + 2)?,
        cache_write: n(first + 3)?,
    })
}

/// The usage of the stored session with row id `session_row`, priced with `prices`.
pub fn session_usage(
    conn: &Connection,
    session_row: i64,
    prices: &PriceTable,
) -> rusqlite::Result<SessionUsage> {
    let mut stmt = conn.prepare_cached(
        "SELECT u.turn_id, coalesce(u.model, s.model), u.at_ms,
                u.input, u.output, u.cache_read, u.cache_write
         FROM usage u JOIN sessions s ON s.id = u.session
         WHERE u.session = ?1 ORDER BY u.at_ms, u.id",
    )?;
    let mut rows = stmt.query(params![session_row])?;
    let mut out = SessionUsage::default();
    while let Some(r) = rows.next()? {
        let turn_id: Option<String> = r.get(0)?;
        let model: Option<String> = r.get(1)?;
        let at = from_ms(r.get(2)?);
        let tokens = tokens_at(r, 3)?;
        let cost = prices.cost_estimate_usd(model.as_deref(), &tokens);
        out.total.add(tokens, cost);
        // A turn's rows are together unless the agent went back to an earlier turn id (it
        // does not): a new id, or a first row, opens a turn.
        match out.turns.last_mut() {
            Some(turn) if turn.turn_id == turn_id => turn.cost.add(tokens, cost),
            _ => {
                let mut c = Cost::default();
                c.add(tokens, cost);
                out.turns.push(TurnUsage {
                    turn_id,
                    from: at,
                    cost: c,
                });
            }
        }
    }
    out.total = out.total.rounded();
    for turn in &mut out.turns {
        turn.cost = std::mem::take(&mut turn.cost).rounded();
    }
    Ok(out)
}

/// Usage rows recorded in `[from, to)`, each with its session's agent and project.
///
/// The session's fields are read once per session, not joined into every row (a heavy week is
/// ~10,000 rows of a few hundred sessions), and the window is found through the index on
/// `at_ms`, named so that a planner without statistics cannot choose a scan.
pub fn usage_rows(
    conn: &Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> rusqlite::Result<Vec<UsageRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT session, turn_id, model, at_ms, input, output, cache_read, cache_write
         FROM usage INDEXED BY usage_by_at WHERE at_ms >= ?1 AND at_ms < ?2",
    )?;
    let mut session =
        conn.prepare_cached("SELECT agent, repo, cwd, model FROM sessions WHERE id = ?1")?;
    // Per session row: its agent, project and model; `None` when the row is gone.
    let mut known: std::collections::HashMap<i64, Option<(Agent, String, Option<String>)>> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    let mut rows = stmt.query(params![super::to_ms(from), super::to_ms(to)])?;
    while let Some(r) = rows.next()? {
        let session_row: i64 = r.get(0)?;
        let fields = match known.entry(session_row) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(
                session
                    .query_row(params![session_row], |s| {
                        let agent: String = s.get(0)?;
                        let repo: Option<String> = s.get(1)?;
                        let cwd: Option<String> = s.get(2)?;
                        let model = s.get::<_, Option<String>>(3)?;
                        Ok(super::query::stored_agent(&agent).map(|agent| {
                            let project = super::query::project_of(repo.as_deref(), cwd.as_deref());
                            (agent, project, model)
                        }))
                    })
                    .optional()?
                    .flatten(),
            ),
        };
        let Some((agent, project, session_model)) = fields else {
            continue;
        };
        let model: Option<String> = r.get(2)?;
        out.push(UsageRow {
            session_row,
            agent: *agent,
            project: project.clone(),
            turn_id: r.get(1)?,
            model: model.or_else(|| session_model.clone()),
            at: from_ms(r.get(3)?),
            tokens: tokens_at(r, 4)?,
        });
    }
    Ok(out)
}

/// Usage in all and per group (the same keys as the tally's time groups), priced. Pure.
pub fn tally_usage(
    rows: &[UsageRow],
    question: &Question,
    prices: &PriceTable,
) -> (Cost, BTreeMap<String, Cost>) {
    let mut total = Cost::default();
    let mut groups: BTreeMap<String, Cost> = BTreeMap::new();
    for row in rows {
        if row.at < question.from || row.at >= question.to {
            continue;
        }
        let cost = prices.cost_estimate_usd(row.model.as_deref(), &row.tokens);
        total.add(row.tokens, cost);
        // A heavy week is ~10,000 rows in a few dozen groups: a key is allocated per group.
        let day;
        let key = match question.by {
            GroupBy::Agent => row.agent.as_str(),
            GroupBy::Project => row.project.as_str(),
            GroupBy::Day => {
                day = row.at.with_timezone(&question.tz).date_naive().to_string();
                day.as_str()
            }
        };
        match groups.get_mut(key) {
            Some(group) => group.add(row.tokens, cost),
            None => groups
                .entry(key.to_string())
                .or_default()
                .add(row.tokens, cost),
        }
    }
    (
        total.rounded(),
        groups.into_iter().map(|(k, c)| (k, c.rounded())).collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::{HistoryStore, Record};
    use crate::usage::{UsageKind, UsageReport};

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn report(kind: UsageKind, turn: &str, at: &str, usage: TokenUsage) -> Record {
        Record::Usage(UsageReport {
            session_id: "s1".into(),
            agent: Agent::Codex,
            at: t(at),
            turn_id: Some(turn.into()),
            model: Some("gpt-5".into()),
            kind,
            usage,
        })
    }

    fn u(input: u64, output: u64, cache_read: u64) -> TokenUsage {
        TokenUsage {
            input,
            output,
            cache_read,
            cache_write: 0,
        }
    }

    #[test]
    fn deltas_replace_by_key_and_totals_add_only_what_is_new_per_turn() {
        let tmp = tempfile::tempdir().unwrap();
        let mut store = HistoryStore::open(&crate::store::store_path(tmp.path())).unwrap();
        let delta = |key: &str| UsageKind::Delta { key: key.into() };
        store
            .apply(&[
                // A message's usage, first partial, then final: the final replaces it.
                report(delta("m1"), "t1", "2026-03-02T09:00:00Z", u(10, 1, 0)),
                report(delta("m1"), "t1", "2026-03-02T09:00:01Z", u(10, 50, 0)),
                // A thread total that repeats what m1 said adds nothing...
                report(
                    UsageKind::ThreadTotal,
                    "t1",
                    "2026-03-02T09:00:02Z",
                    u(10, 50, 0),
                ),
                // ...one beyond it adds the difference, to its turn; read twice, once.
                report(
                    UsageKind::ThreadTotal,
                    "t2",
                    "2026-03-02T09:10:00Z",
                    u(1_010, 150, 4_000),
                ),
                report(
                    UsageKind::ThreadTotal,
                    "t2",
                    "2026-03-02T09:10:00Z",
                    u(1_010, 150, 4_000),
                ),
            ])
            .unwrap();
        let usage = session_usage(store.connection(), 1, &PriceTable::shipped()).unwrap();
        assert_eq!(usage.total.tokens, u(1_010, 150, 4_000));
        assert_eq!(usage.turns.len(), 2);
        assert_eq!(usage.turns[0].turn_id.as_deref(), Some("t1"));
        assert_eq!(usage.turns[0].cost.tokens, u(10, 50, 0));
        assert_eq!(usage.turns[1].cost.tokens, u(1_000, 100, 4_000));
        // gpt-5: 1.25 in, 10 out, 0.125 cached, per million.
        // 1010 × 1.25 + 150 × 10 + 4000 × 0.125 = 1262.5 + 1500 + 500 = 3262.5 µ$.
        assert_eq!(usage.total.cost_estimate_usd, Some(0.003263));
    }
}
