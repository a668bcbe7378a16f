//! The store's schema, as a list of migrations applied in order.
//!
//! Why migrations and not "create if missing": a store lives for months on a user's disk, across
//! upgrades of the app. Each schema change is a new entry at the end of [`MIGRATIONS`], never an
//! edit of an old one, so a database of any earlier version is brought to the newest by running
//! the entries it has not seen (`rusqlite_migration` keeps the count in `PRAGMA user_version`).
//! The test `every_earlier_schema_upgrades_to_the_newest` builds a database at each earlier
//! version, with rows, and upgrades it.
//!
//! Times are integers: milliseconds since the Unix epoch, UTC. Text is what the registry already
//! bounds (paths ≤ 4 KiB, names ≤ 256 B, titles ≤ 1 KiB). No prompt, tool input or assistant
//! text has a column.

use rusqlite_migration::{Migrations, M};

/// Every schema, oldest first. Append only.
pub const MIGRATIONS_SQL: &[&str] = &[
    // 1: sessions and their state intervals.
    "CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL UNIQUE,
        agent TEXT NOT NULL,
        cwd TEXT,
        repo TEXT,
        branch TEXT,
        model TEXT,
        title TEXT,
        transcript_path TEXT,
        pid INTEGER,
        started_at INTEGER NOT NULL,
        last_seen INTEGER NOT NULL,
        ended_at INTEGER,
        end_reason TEXT
    );
    CREATE INDEX sessions_by_last_seen ON sessions(last_seen);
    CREATE TABLE intervals (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        state TEXT NOT NULL,
        from_ms INTEGER NOT NULL,
        to_ms INTEGER,
        waiting_for TEXT
    );
    CREATE INDEX intervals_by_session ON intervals(session, from_ms);
    CREATE INDEX intervals_by_from ON intervals(from_ms);
    CREATE INDEX intervals_by_to ON intervals(to_ms);
    CREATE INDEX intervals_open ON intervals(session) WHERE to_ms IS NULL;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    // 2: token usage (one row per thing counted: a message, a response, a step of a thread's
    // total), and who started each working stretch (a person, or a loop or schedule).
    "CREATE TABLE usage (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        turn_id TEXT,
        model TEXT,
        at_ms INTEGER NOT NULL,
        input INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cache_read INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        UNIQUE (session, key)
    );
    CREATE INDEX usage_by_at ON usage(at_ms);
    ALTER TABLE intervals ADD COLUMN prompt_source TEXT;",
    // 3: a full-text index over what `history --search` looks in, with the trigram tokenizer so
    // a search still finds any part of a word ("pay" in "payments-api"), any case, as LIKE did.
    // Kept in step by triggers; an update that changes none of the columns touches nothing.
    "CREATE VIRTUAL TABLE sessions_fts USING fts5(
        cwd, repo, branch, title, model,
        content = 'sessions', content_rowid = 'id', tokenize = 'trigram'
    );
    INSERT INTO sessions_fts(sessions_fts) VALUES ('rebuild');
    CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions BEGIN
        INSERT INTO sessions_fts (rowid, cwd, repo, branch, title, model)
        VALUES (new.id, new.cwd, new.repo, new.branch, new.title, new.model);
    END;
    CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN
        INSERT INTO sessions_fts (sessions_fts, rowid, cwd, repo, branch, title, model)
        VALUES ('delete', old.id, old.cwd, old.repo, old.branch, old.title, old.model);
    END;
    CREATE TRIGGER sessions_fts_update AFTER UPDATE OF cwd, repo, branch, title, model ON sessions
    WHEN old.cwd IS NOT new.cwd OR old.repo IS NOT new.repo OR old.branch IS NOT new.branch
        OR old.title IS NOT new.title OR old.model IS NOT new.model
    BEGIN
        INSERT INTO sessions_fts (sessions_fts, rowid, cwd, repo, branch, title, model)
        VALUES ('delete', old.id, old.cwd, old.repo, old.branch, old.title, old.model);
        INSERT INTO sessions_fts (rowid, cwd, repo, branch, title, model)
        VALUES (new.id, new.cwd, new.repo, new.branch, new.title, new.model);
    END;",
    // 4: permission requests: how each ended, from where, and how long the agent waited (the
    // tool's name only, never its input).
    "CREATE TABLE requests (
        id INTEGER PRIMARY KEY,
        session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        request_id TEXT NOT NULL UNIQUE,
        tool TEXT NOT NULL,
        asked_ms INTEGER NOT NULL,
        closed_ms INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        source TEXT
    );
    CREATE INDEX requests_by_session ON requests(session, asked_ms);
    CREATE INDEX requests_by_closed ON requests(closed_ms);",
];

/// The migrations, ready to run.
pub fn migrations() -> Migrations<'static> {
    Migrations::new(MIGRATIONS_SQL.iter().map(|sql| M::up(sql)).collect())
}

/// The newest schema version (what `PRAGMA user_version` reads after migrating).
pub fn newest_version() -> usize {
    MIGRATIONS_SQL.len()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn the_migrations_are_valid() {
        migrations().validate().unwrap();
    }

    /// Rows a database of schema `version` can hold, written with that version's columns.
    fn seed(conn: &Connection, version: usize) {
        if version >= 1 {
            conn.execute_batch(
                "INSERT INTO sessions (session_id, agent, cwd, started_at, last_seen)
                 VALUES ('old-1', 'claude', '/w/app', 1000, 5000);
                 INSERT INTO intervals (session, state, from_ms, to_ms)
                 VALUES (1, 'working', 1000, 5000);",
            )
            .unwrap();
        }
        if version >= 2 {
            conn.execute_batch(
                "INSERT INTO usage (session, key, model, at_ms, input, output, cache_read, cache_write)
                 VALUES (1, 'msg_1', 'claude-sonnet-4', 2000, 5, 6, 7, 8);
                 UPDATE intervals SET prompt_source = 'loop_wakeup' WHERE id = 1;",
            )
            .unwrap();
        }
        if version >= 4 {
            conn.execute_batch(
                "INSERT INTO requests (session, request_id, tool, asked_ms, closed_ms, outcome, source)
                 VALUES (1, 'r1-a', 'Bash', 2000, 2500, 'allowed', 'cli');",
            )
            .unwrap();
        }
    }

    #[test]
    fn the_newest_schema_keeps_no_prompt_tool_input_or_assistant_text() {
        // What is kept is listed in the README; a new column must be added here on purpose.
        let mut conn = Connection::open_in_memory().unwrap();
        migrations().to_latest(&mut conn).unwrap();
        let columns = |table: &str| -> Vec<String> {
            let mut stmt = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                .unwrap();
            let names = stmt.query_map([], |r| r.get(0)).unwrap();
            names.map(Result::unwrap).collect()
        };
        assert_eq!(
            columns("sessions"),
            [
                "id",
                "session_id",
                "agent",
                "cwd",
                "repo",
                "branch",
                "model",
                "title",
                "transcript_path",
                "pid",
                "started_at",
                "last_seen",
                "ended_at",
                "end_reason"
            ]
        );
        assert_eq!(
            columns("intervals"),
            [
                "id",
                "session",
                "state",
                "from_ms",
                "to_ms",
                "waiting_for",
                "prompt_source"
            ]
        );
        assert_eq!(
            columns("usage"),
            [
                "id",
                "session",
                "key",
                "turn_id",
                "model",
                "at_ms",
                "input",
                "output",
                "cache_read",
                "cache_write"
            ]
        );
        assert_eq!(columns("meta"), ["key", "value"]);
        assert_eq!(
            columns("requests"),
            [
                "id",
                "session",
                "request_id",
                "tool",
                "asked_ms",
                "closed_ms",
                "outcome",
                "source"
            ],
            "a request keeps its tool's name, never its input"
        );
    }

    #[test]
    fn every_earlier_schema_upgrades_to_the_newest() {
        // An empty file (version 0) and every version since, each with rows, upgrade to the
        // newest and keep their rows.
        for version in 0..newest_version() {
            let mut conn = Connection::open_in_memory().unwrap();
            migrations().to_version(&mut conn, version).unwrap();
            seed(&conn, version);
            migrations().to_latest(&mut conn).unwrap();
            let user_version: i64 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap();
            assert_eq!(
                user_version as usize,
                newest_version(),
                "from version {version}"
            );
            let sessions: i64 = conn
                .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
                .unwrap();
            assert_eq!(sessions, i64::from(version >= 1), "from version {version}");
            // The newest schema's tables and columns answer, whatever the file began as.
            let usage: i64 = conn
                .query_row(
                    "SELECT count(*) FROM usage u JOIN intervals i ON i.session = u.session
                     WHERE i.prompt_source IS NULL",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(usage, 0, "from version {version}");
            // Rows written before the index existed are found through it.
            let found: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sessions_fts WHERE sessions_fts MATCH '\"w/app\"'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(found, i64::from(version >= 1), "from version {version}");
            let check: String = conn
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok");
        }
    }
}
