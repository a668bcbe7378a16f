//! The history store: every session and each of its state intervals, kept in one SQLite file so
//! `history` and `stats` survive restarts.
//!
//! Why it is shaped this way:
//! - **One file, `<data>/history/history.sqlite3`, in WAL mode.** A folder of its own keeps the
//!   `-wal` and `-shm` files beside it and lets a read-only or full place be told apart from the
//!   rest of the data. WAL lets the CLI read while the engine writes, and a commit survives a
//!   `kill -9` of the process (the WAL is in the OS's hands once written); `synchronous=NORMAL`
//!   trades only the last commits on a power cut, never the file's integrity.
//! - **Private under any umask.** SQLite creates a database 0644 less the umask (so 0644 under
//!   the usual 022 and under 000) and gives the `-wal` and `-shm` exactly the database's mode; so
//!   the engine creates the file 0600 before SQLite first opens it, and all three stay private.
//! - **One writer** ([`writer`]) fed by the registry's change stream: no SQLite call runs under
//!   the registry's lock or on the hook path. Everything here is plain blocking code for that
//!   writer's thread and for the CLI.
//! - **What is kept is what the registry shows**, never more: agent, ids, folder, repo, branch,
//!   model, title, pid, start and end, and each state interval with what a wait was for. No
//!   prompt, tool input or assistant text exists in the registry, so none can reach the store.
//! - **Token usage** ([`crate::usage`]) arrives on its own stream from the feeds, one row per
//!   thing counted (`usage` table); its cost is never stored but priced when read ([`cost`]),
//!   so a corrected price table re-prices history.
//! - **Stamps are the observations' own** ([`crate::registry::StampedChange`]), so a replayed
//!   journal, or a script driving `observe --at`, lands in history at the time things happened.

pub mod alive;
pub mod cost;
pub mod query;
pub mod requests;
pub mod schema;
pub mod views;
pub mod waiting;
pub mod writer;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::model::{EndReason, Session, SessionState};
use crate::registry::SessionChange;

/// How long history is kept unless `AGENT_TRAY_HISTORY_DAYS` says otherwise.
pub const DEFAULT_RETENTION_DAYS: u32 = 90;
/// The longest retention accepted (a hundred years: "keep everything").
pub const MAX_RETENTION_DAYS: u32 = 36_500;
/// How long a reader or the writer waits for the other's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the history folder {path}: {source}")]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make the history store {path} private: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("history store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("history store {path}: {source}")]
    Migrate {
        path: PathBuf,
        source: rusqlite_migration::Error,
    },
    #[error(
        "history store {path} has schema version {found}, newer than this Agent Tray knows ({known}); update Agent Tray"
    )]
    TooNew {
        path: PathBuf,
        found: usize,
        known: usize,
    },
    #[error(transparent)]
    Query(#[from] rusqlite::Error),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("AGENT_TRAY_HISTORY_DAYS={value:?} is not a number of days from 1 to {MAX_RETENTION_DAYS}; history is kept {DEFAULT_RETENTION_DAYS} days")]
pub struct BadRetention {
    pub value: String,
}

/// How long history is kept: `AGENT_TRAY_HISTORY_DAYS` (whole days, 1 to 36500), else 90 days.
pub fn retention_days(value: Option<&str>) -> Result<u32, BadRetention> {
    let Some(value) = value else {
        return Ok(DEFAULT_RETENTION_DAYS);
    };
    match value.trim().parse::<u32>() {
        Ok(days) if (1..=MAX_RETENTION_DAYS).contains(&days) => Ok(days),
        _ => Err(BadRetention {
            value: value.to_string(),
        }),
    }
}

/// The store's file under a data folder.
pub fn store_path(data_dir: &Path) -> PathBuf {
    data_dir.join("history").join("history.sqlite3")
}

/// The data folder of a store file named by [`store_path`] (where the user's price table is).
pub fn data_dir_of(store_file: &Path) -> &Path {
    store_file
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."))
}

pub(crate) fn to_ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_ms(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// What the writer hands the store, in batches. (Most records are changes, so the size
/// difference with the small variants costs nothing worth a box.)
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Record {
    /// One change from the registry, stamped.
    Change {
        at: DateTime<Utc>,
        change: SessionChange,
    },
    /// The registry's whole live list after changes were lost: bring every session to it, and
    /// close what is no longer live.
    Resync {
        at: DateTime<Utc>,
        sessions: Vec<Session>,
    },
    /// The engine is alive at `at`: after a crash, open intervals are closed here.
    Alive { at: DateTime<Utc> },
    /// The engine stops: close every open interval at `at`.
    Stopping { at: DateTime<Utc> },
    /// Token usage a feed reported ([`crate::usage`]).
    Usage(crate::usage::UsageReport),
    /// A permission request that closed ([`requests`]).
    Request(agent_tray_domain::pending::Closed),
}

/// An open SQLite connection on the store.
#[derive(Debug)]
pub struct HistoryStore {
    conn: Connection,
    path: PathBuf,
}

impl HistoryStore {
    /// Opens (creating when missing) the store at `path`, migrated to the newest schema, and
    /// closes the intervals a crashed engine left open.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            crate::paths::create_private_dir(dir).map_err(|e| StoreError::Folder {
                path: dir.to_path_buf(),
                source: std::io::Error::other(e),
            })?;
        }
        make_store_files_private(path).map_err(|source| StoreError::File {
            path: path.to_path_buf(),
            source,
        })?;
        let sqlite = |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let mut conn = Connection::open(path).map_err(sqlite)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(sqlite)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(mode, "history store is not in WAL mode");
        }
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
            .map_err(sqlite)?;
        schema_version_known(&conn, path)?;
        schema::migrations()
            .to_latest(&mut conn)
            .map_err(|source| StoreError::Migrate {
                path: path.to_path_buf(),
                source,
            })?;
        let mut store = HistoryStore {
            conn,
            path: path.to_path_buf(),
        };
        store.close_dangling().map_err(sqlite)?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Intervals still open from an engine that died: closed where it was last known alive.
    fn close_dangling(&mut self) -> rusqlite::Result<()> {
        let alive: Option<i64> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'alive_at'", [], |r| {
                r.get(0)
            })
            .optional()?;
        // The writer's once-a-second mark is in a file of its own (see [`alive`]); the store's
        // own is from the last stop, or from a writer that could not write the file.
        let marked = alive::read_alive_mark(&alive::alive_mark_path(&self.path), Utc::now());
        let alive = alive.max(marked).unwrap_or(0);
        self.conn.execute(
            "UPDATE intervals SET to_ms = max(from_ms, ?1) WHERE to_ms IS NULL",
            params![alive],
        )?;
        Ok(())
    }

    /// Writes one batch in one transaction: all of it or none.
    pub fn apply(&mut self, batch: &[Record]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        for record in batch {
            match record {
                Record::Change { at, change } => apply_change(&tx, *at, change)?,
                Record::Resync { at, sessions } => {
                    let live: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
                    close_all_but(&tx, *at, &live)?;
                    for session in sessions {
                        upsert(&tx, *at, session)?;
                    }
                }
                Record::Alive { at } => set_alive(&tx, *at)?,
                Record::Usage(report) => apply_usage(&tx, report)?,
                Record::Request(closed) => requests::apply_closed(&tx, closed)?,
                Record::Stopping { at } => {
                    close_all_but(&tx, *at, &[])?;
                    set_alive(&tx, *at)?;
                }
            }
        }
        tx.commit()
    }

    /// Deletes sessions whose last sign of life is before `cutoff` and that are not live (no
    /// open interval). Returns how many went.
    pub fn prune(&mut self, cutoff: DateTime<Utc>) -> rusqlite::Result<usize> {
        self.conn.execute(
            "DELETE FROM sessions WHERE last_seen < ?1
             AND NOT EXISTS (SELECT 1 FROM intervals i WHERE i.session = sessions.id AND i.to_ms IS NULL)",
            params![to_ms(cutoff)],
        )
    }

    /// `PRAGMA integrity_check`'s first line ("ok" when sound).
    pub fn integrity_check(&self) -> rusqlite::Result<String> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
    }
}

/// Creates the store file 0600 when it is missing, and brings an existing one (and its `-wal`
/// and `-shm`) to 0600 (see the module comment).
/// A file already private is left alone, so a read-only mount holding a sound store still opens.
fn make_store_files_private(path: &Path) -> std::io::Result<()> {
    if !path.exists() {
        match crate::os_fs::private_options()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            other => drop(other?),
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let name = Path::new(&name);
        match std::fs::symlink_metadata(name) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
            Ok(meta) if is_owner_only(&meta) => {}
            Ok(_) => crate::os_fs::make_owner_only(name, false)?,
        }
    }
    Ok(())
}

#[cfg(unix)]
fn is_owner_only(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o077 == 0
}

#[cfg(not(unix))]
fn is_owner_only(_meta: &std::fs::Metadata) -> bool {
    true
}

fn set_alive(tx: &Transaction<'_>, at: DateTime<Utc>) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO meta (key, value) VALUES ('alive_at', ?1)
         ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)",
    )?
    .execute(params![to_ms(at)])?;
    Ok(())
}

pub(crate) fn end_reason_name(reason: EndReason) -> &'static str {
    match reason {
        EndReason::SessionEnd => "session_end",
        EndReason::ProcessGone => "process_gone",
        EndReason::PidRecycled => "pid_recycled",
        EndReason::FilesSayEnded => "files_say_ended",
        EndReason::Ttl => "ttl",
        EndReason::Evicted => "evicted",
    }
}

pub(crate) fn parse_end_reason(name: &str) -> Option<EndReason> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

pub(crate) fn parse_state(name: &str) -> Option<SessionState> {
    // A match, not serde: `stats` parses one per interval read.
    [
        SessionState::Starting,
        SessionState::Working,
        SessionState::WaitingForPermission,
        SessionState::WaitingForInput,
        SessionState::Idle,
        SessionState::Ended,
    ]
    .into_iter()
    .find(|s| s.as_str() == name)
}

fn apply_change(
    tx: &Transaction<'_>,
    at: DateTime<Utc>,
    change: &SessionChange,
) -> rusqlite::Result<()> {
    match change {
        SessionChange::Added { session } | SessionChange::Changed { session, .. } => {
            upsert(tx, at, session)
        }
        // Eviction ends a session without a `Changed`; a normal linger's end finds nothing open.
        SessionChange::Removed { session_id, .. } => {
            let Some(id) = session_row(tx, session_id)? else {
                return Ok(());
            };
            if close_open(tx, id, at)? {
                tx.prepare_cached(
                    "UPDATE sessions SET ended_at = coalesce(ended_at, ?2),
                     end_reason = coalesce(end_reason, 'evicted') WHERE id = ?1",
                )?
                .execute(params![id, to_ms(at)])?;
            }
            Ok(())
        }
    }
}

/// Records one usage report. A delta replaces the earlier figure with the same key; a thread
/// total records only what it adds to the session's known usage (keyed by the total, so the same
/// total read twice, or from two sources, adds nothing). A session the store has not seen yet
/// (its first change may be in the next batch) gets a bare row the change then fills in.
fn apply_usage(tx: &Transaction<'_>, report: &crate::usage::UsageReport) -> rusqlite::Result<()> {
    use crate::usage::{TokenUsage, UsageKind};
    let at_ms = to_ms(report.at);
    tx.prepare_cached(
        "INSERT INTO sessions (session_id, agent, started_at, last_seen) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT(session_id) DO NOTHING",
    )?
    .execute(params![report.session_id, report.agent.as_str(), at_ms])?;
    let Some(id) = session_row(tx, &report.session_id)? else {
        return Ok(());
    };
    let (key, usage) = match &report.kind {
        UsageKind::Delta { key } => (key.clone(), report.usage),
        UsageKind::ThreadTotal => {
            let known: TokenUsage = tx
                .prepare_cached(
                    "SELECT coalesce(sum(input), 0), coalesce(sum(output), 0),
                            coalesce(sum(cache_read), 0), coalesce(sum(cache_write), 0)
                     FROM usage WHERE session = ?1",
                )?
                .query_row(params![id], |r| {
                    Ok(TokenUsage {
                        input: r.get::<_, i64>(0)?.max(0).unsigned_abs(),
                        output: r.get::<_, i64>(1)?.max(0).unsigned_abs(),
                        cache_read: r.get::<_, i64>(2)?.max(0).unsigned_abs(),
                        cache_write: r.get::<_, i64>(3)?.max(0).unsigned_abs(),
                    })
                })?;
            let added = report.usage.beyond(&known);
            if added.is_zero() {
                return Ok(());
            }
            (format!("total:{}", report.usage.total()), added)
        }
    };
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    tx.prepare_cached(
        "INSERT INTO usage (session, key, turn_id, model, at_ms, input, output, cache_read, cache_write)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT(session, key) DO UPDATE SET
             turn_id = coalesce(excluded.turn_id, turn_id),
             model = coalesce(excluded.model, model),
             input = excluded.input, output = excluded.output,
             cache_read = excluded.cache_read, cache_write = excluded.cache_write",
    )?
    .execute(params![
        id,
        key,
        report.turn_id,
        report.model,
        at_ms,
        n(usage.input),
        n(usage.output),
        n(usage.cache_read),
        n(usage.cache_write),
    ])?;
    Ok(())
}

fn session_row(tx: &Transaction<'_>, session_id: &str) -> rusqlite::Result<Option<i64>> {
    tx.prepare_cached("SELECT id FROM sessions WHERE session_id = ?1")?
        .query_row(params![session_id], |r| r.get(0))
        .optional()
}

/// Closes the session's open interval at `at` (never before it began). True when one was open.
fn close_open(tx: &Transaction<'_>, id: i64, at: DateTime<Utc>) -> rusqlite::Result<bool> {
    let n = tx
        .prepare_cached(
            "UPDATE intervals SET to_ms = max(from_ms, ?2) WHERE session = ?1 AND to_ms IS NULL",
        )?
        .execute(params![id, to_ms(at)])?;
    Ok(n > 0)
}

/// Closes the open intervals of every session not in `live`.
fn close_all_but(tx: &Transaction<'_>, at: DateTime<Utc>, live: &[&str]) -> rusqlite::Result<()> {
    let mut open = tx.prepare(
        "SELECT s.id, s.session_id FROM intervals i JOIN sessions s ON s.id = i.session
         WHERE i.to_ms IS NULL",
    )?;
    let rows: Vec<(i64, String)> = open
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    drop(open);
    for (id, session_id) in rows {
        if !live.contains(&session_id.as_str()) {
            close_open(tx, id, at)?;
        }
    }
    Ok(())
}

/// Brings a session's row and its open interval to what `session` shows at `at`.
fn upsert(tx: &Transaction<'_>, at: DateTime<Utc>, session: &Session) -> rusqlite::Result<()> {
    let at_ms = to_ms(at);
    let ended = session.state == SessionState::Ended;
    tx.prepare_cached(
        "INSERT INTO sessions (session_id, agent, cwd, repo, branch, model, title,
             transcript_path, pid, started_at, last_seen, ended_at, end_reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12)
         ON CONFLICT(session_id) DO UPDATE SET
             cwd = coalesce(excluded.cwd, cwd),
             repo = coalesce(excluded.repo, repo),
             branch = coalesce(excluded.branch, branch),
             model = coalesce(excluded.model, model),
             title = coalesce(excluded.title, title),
             transcript_path = coalesce(excluded.transcript_path, transcript_path),
             pid = coalesce(excluded.pid, pid),
             last_seen = max(last_seen, excluded.last_seen),
             ended_at = CASE WHEN excluded.ended_at IS NULL THEN NULL
                             ELSE coalesce(ended_at, excluded.ended_at) END,
             end_reason = CASE WHEN excluded.ended_at IS NULL THEN NULL
                             ELSE coalesce(end_reason, excluded.end_reason) END",
    )?
    .execute(params![
        session.session_id,
        session.agent.as_str(),
        session.cwd,
        session.repo,
        session.branch,
        session.model,
        session.title,
        session.transcript_path,
        session.pid,
        at_ms,
        ended.then_some(at_ms),
        session.end_reason.map(end_reason_name),
    ])?;
    let Some(id) = session_row(tx, &session.session_id)? else {
        return Ok(());
    };
    let open: Option<(i64, String, i64, Option<String>)> = tx
        .prepare_cached(
            "SELECT id, state, from_ms, waiting_for FROM intervals
             WHERE session = ?1 AND to_ms IS NULL ORDER BY from_ms DESC LIMIT 1",
        )?
        .query_row(params![id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let waiting_for = session
        .state
        .is_wait()
        .then(|| session.waiting_for.clone())
        .flatten();
    let mut start = at_ms;
    if let Some((interval, state, from, old_waiting_for)) = open {
        if state == session.state.as_str() {
            if waiting_for.is_some() && old_waiting_for != waiting_for {
                tx.prepare_cached("UPDATE intervals SET waiting_for = ?2 WHERE id = ?1")?
                    .execute(params![interval, waiting_for])?;
            }
            return Ok(());
        }
        start = at_ms.max(from);
        tx.prepare_cached("UPDATE intervals SET to_ms = ?2 WHERE id = ?1")?
            .execute(params![interval, start])?;
    }
    if !ended {
        // Who started a working stretch (a person, a loop, a schedule): what decides whether
        // the idle before it was waiting on you.
        let prompt_source = (session.state == SessionState::Working)
            .then_some(session.prompt_source.as_deref())
            .flatten();
        tx.prepare_cached(
            "INSERT INTO intervals (session, state, from_ms, waiting_for, prompt_source)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            id,
            session.state.as_str(),
            start,
            waiting_for,
            prompt_source
        ])?;
    }
    Ok(())
}

/// The schema version a store file was written with; a version newer than this build knows is
/// refused (a newer Agent Tray wrote it), so neither the writer nor a reader misreads it.
pub(crate) fn schema_version_known(conn: &Connection, path: &Path) -> Result<usize, StoreError> {
    let sqlite = |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sqlite)?;
    let found = usize::try_from(found).unwrap_or(0);
    if found > schema::newest_version() {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: schema::newest_version(),
        });
    }
    Ok(found)
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_store_an_older_engine_left_readable_by_all_is_made_private_when_opened() {
        // Engines before this one let SQLite create the store 0644 (and its -wal and -shm with
        // it): the first open by this one tightens all three, and they keep working.
        let dir = tempfile::tempdir().unwrap();
        let path = store_path(dir.path());
        // A connection held open (a reader, say) keeps the -wal and -shm in place.
        let mut held = HistoryStore::open(&path).unwrap();
        held.apply(&[Record::Alive { at: Utc::now() }]).unwrap();
        let wal = dir.path().join("history/history.sqlite3-wal");
        let shm = dir.path().join("history/history.sqlite3-shm");
        for file in [&path, &wal, &shm] {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let store = HistoryStore::open(&path).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok");
        for file in [&path, &wal, &shm] {
            assert_eq!(mode(file), 0o600, "{} is the owner's only", file.display());
        }
    }
}
