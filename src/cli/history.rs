//! `agent-tray history` and `agent-tray stats`: the store's answers on the command line.
//!
//! Kept beside the store rather than in `cli.rs` so the command line's shared file only routes
//! to here. `history --json` prints the same `Session` objects as `list --json` (the fields are a
//! public contract); `stats --json` prints a [`Tally`](crate::store::waiting::Tally).

use std::io::Write;
use std::process::ExitCode;

use chrono::{DateTime, NaiveDate, Utc};

use crate::duration_text::human_age;
use crate::model::Agent;
use crate::paths::TrayPaths;
use crate::store::query::{self, ExportFormat, HistoryFilter, Period};
use crate::store::waiting::{self, GroupBy, Tally};
use crate::store::StoreError;
use crate::terminal_text::escape_controls;
use crate::usage::PriceTable;

#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// One JSON array of sessions (the `list --json` fields).
    #[arg(long)]
    pub json: bool,
    /// Only sessions whose folder, repo, branch, title or model contains TEXT (any case).
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    /// Only this agent's sessions (claude, codex).
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<Agent>,
    /// Only this project's sessions (the repo's name, else the folder's).
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
    /// Write the matching sessions as CSV, or as JSON with each session's state intervals.
    #[arg(long, value_name = "FORMAT")]
    pub export: Option<ExportFormat>,
}

impl HistoryArgs {
    fn filter(&self) -> HistoryFilter {
        HistoryFilter {
            search: self.search.clone().filter(|s| !s.is_empty()),
            agent: self.agent,
            project: self.project.clone(),
            limit: self.limit,
        }
    }

    fn filtered(&self) -> bool {
        self.search.is_some() || self.agent.is_some() || self.project.is_some()
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct StatsArgs {
    /// Since local midnight (the default).
    #[arg(long, conflicts_with_all = ["week", "since"])]
    pub today: bool,
    /// The last seven days, today included.
    #[arg(long, conflicts_with = "since")]
    pub week: bool,
    /// Since local midnight of DATE (YYYY-MM-DD).
    #[arg(long, value_name = "DATE")]
    pub since: Option<NaiveDate>,
    /// How to group the figures.
    #[arg(long, value_enum, default_value = "agent")]
    pub by: GroupBy,
    #[arg(long)]
    pub json: bool,
    /// Answer as if it were this time (RFC 3339); a scripting and test aid.
    #[arg(long, value_name = "TIME")]
    pub now: Option<DateTime<Utc>>,
}

/// Why `history` could not answer from the store. The text is what the CLI prints after
/// `agent-tray: `.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A filter or an export was asked for, and there is no store to answer it (the engine's
    /// in-memory list cannot).
    #[error("no history yet (looked for {})", path.display())]
    NoStore { path: std::path::PathBuf },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Export(#[from] query::ExportError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Why `stats` could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// `history` from the store. `Ok(None)`: there is no store yet, ask the engine instead.
pub fn history(paths: &TrayPaths, args: &HistoryArgs) -> Result<Option<ExitCode>, HistoryError> {
    let path = crate::store::store_path(&paths.data_dir);
    let conn = match query::open_reader(&path) {
        Ok(Some(conn)) => conn,
        Ok(None) if !args.filtered() && args.export.is_none() => return Ok(None),
        Ok(None) => return Err(HistoryError::NoStore { path }),
        Err(e) => return Err(e.into()),
    };
    let prices = prices(paths);
    let mut out = std::io::stdout().lock();
    if let Some(format) = args.export {
        query::export(&conn, &args.filter(), format, &prices, &mut out)?;
        return Ok(Some(ExitCode::SUCCESS));
    }
    if args.json {
        let entries = query::history_with_usage(&conn, &args.filter(), &prices)?;
        let text = serde_json::to_string_pretty(&entries)? + "\n";
        let _ = out.write_all(text.as_bytes());
        return Ok(Some(ExitCode::SUCCESS));
    }
    drop(out);
    let sessions = query::history(&conn, &args.filter())?;
    Ok(crate::cli::print_sessions(&sessions, false).map(Some)?)
}

/// The price table: shipped, with the user's `<data>/prices.json` over it (a broken one is said
/// on stderr, and the shipped table is used).
fn prices(paths: &TrayPaths) -> PriceTable {
    let (table, error) = PriceTable::load(&paths.data_dir);
    if let Some(error) = error {
        eprintln!("agent-tray: {error}; using the shipped prices");
    }
    table
}

/// `stats`.
pub fn stats(paths: &TrayPaths, args: &StatsArgs) -> Result<ExitCode, StatsError> {
    let path = crate::store::store_path(&paths.data_dir);
    let now = args.now.unwrap_or_else(Utc::now);
    let tz = waiting::user_time_zone();
    let period = match (args.week, args.since) {
        (true, _) => Period::Week,
        (_, Some(day)) => Period::Since(day),
        _ => Period::Today,
    };
    let conn = query::open_reader(&path)?;
    let tally = query::stats(conn.as_ref(), period, args.by, now, tz, &prices(paths))?;
    let text = if args.json {
        serde_json::to_string_pretty(&tally)? + "\n"
    } else {
        format_tally(&tally)
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// `stats` for people.
pub fn format_tally(tally: &Tally) -> String {
    let d = |secs: i64| human_age(secs);
    let tz: chrono_tz::Tz = tally.time_zone.parse().unwrap_or(chrono_tz::Tz::UTC);
    let local = |t: DateTime<Utc>| t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string();
    let mut out = format!(
        "{} to {} ({})\nWaiting on you: {}  (permission {}, input {}, idle after a turn {})\nWorking: {}\n",
        local(tally.from),
        local(tally.to),
        tally.time_zone,
        d(tally.totals.waiting_on_you_secs),
        d(tally.totals.waiting_for_permission_secs),
        d(tally.totals.waiting_for_input_secs),
        d(tally.totals.idle_after_turn_secs),
        d(tally.totals.working_secs),
    );
    let t = &tally.usage.tokens;
    if !t.is_zero() {
        out.push_str(&format!(
            "Tokens: {} in, {} out, {} cache read, {} cache write; cost (estimate, prices of {}): {}\n",
            t.input,
            t.output,
            t.cache_read,
            t.cache_write,
            tally.prices_as_of,
            tally
                .usage
                .cost_estimate_usd
                .map_or_else(|| "unknown model".to_string(), |c| format!("~${c:.2}")),
        ));
    }
    let a = &tally.answers;
    if a.from_tray + a.in_terminal + a.expired > 0 {
        let places: Vec<String> = a
            .by_source
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let secs = |s: Option<f64>| s.map_or_else(|| "-".to_string(), |s| d(s.round() as i64));
        out.push_str(&format!(
            "Permission requests: {} answered from the tray{}, {} in the terminal, {} expired; median wait {} from the tray, {} in the terminal",
            a.from_tray,
            if places.is_empty() { String::new() } else { format!(" ({})", places.join(", ")) },
            a.in_terminal,
            a.expired,
            secs(a.tray_median_wait_secs),
            secs(a.terminal_median_wait_secs),
        ));
        if let Some(saved) = a.waiting_saved_estimate_secs {
            out.push_str(&format!(
                "; waiting saved (estimate) {}",
                d(saved.round() as i64)
            ));
        }
        out.push('\n');
    }
    if !tally.groups.is_empty() {
        let by = match tally.by {
            GroupBy::Agent => "AGENT",
            GroupBy::Project => "PROJECT",
            GroupBy::Day => "DAY",
        };
        let width = tally
            .groups
            .iter()
            .map(|g| g.key.chars().count())
            .max()
            .unwrap_or(0)
            .max(by.len());
        out.push_str(&format!("\n{by:<width$}  WAITING ON YOU  WORKING\n"));
        for g in &tally.groups {
            out.push_str(&format!(
                "{:<width$}  {:<14}  {}\n",
                escape_controls(&g.key),
                d(g.figures.waiting_on_you_secs),
                d(g.figures.working_secs)
            ));
        }
    }
    if !tally.longest_waits.is_empty() {
        out.push_str("\nLongest waits:\n");
        for w in &tally.longest_waits {
            let kind = match w.kind {
                waiting::WaitKind::Permission => "permission",
                waiting::WaitKind::Input => "input",
                waiting::WaitKind::IdleAfterTurn => "idle after a turn",
            };
            out.push_str(&format!(
                "  {:>6}  {}  {}  {}  from {}\n",
                d(w.secs),
                kind,
                w.agent,
                escape_controls(&w.project),
                local(w.from)
            ));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn args(search: Option<&str>) -> HistoryArgs {
        HistoryArgs {
            limit: 50,
            json: false,
            search: search.map(str::to_string),
            agent: None,
            project: None,
            export: None,
        }
    }

    #[test]
    fn a_filtered_history_before_any_store_exists_is_refused_naming_the_store() {
        // A fresh install: `history --search x` before the engine ever wrote the store. The
        // engine's in-memory list cannot filter, so the user is told where history would be.
        let home = tempfile::tempdir().unwrap();
        let paths = TrayPaths::under(home.path());
        match history(&paths, &args(Some("x"))) {
            Err(HistoryError::NoStore { path }) => {
                assert_eq!(path, crate::store::store_path(&paths.data_dir));
            }
            other => panic!("expected NoStore, got {other:?}"),
        }
    }

    #[test]
    fn a_plain_history_before_any_store_exists_falls_back_to_the_engine() {
        // The same fresh install, plain `history`: not an error, the caller asks the engine.
        let home = tempfile::tempdir().unwrap();
        let paths = TrayPaths::under(home.path());
        assert!(matches!(history(&paths, &args(None)), Ok(None)));
    }
}
