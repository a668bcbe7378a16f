//! What the history store costs (issue 12).
//!
//! - **Write throughput:** 8 threads drive a registry through turns over 400 sessions while the
//!   real writer (forwarder task, bounded queue, SQLite thread) records them; intervals per
//!   second is how many intervals reach the file divided by the time until the last one does.
//! - **Size:** the file for 10,000 sessions of 10 intervals each, after a WAL checkpoint.
//! - **Queries on a heavy year:** a store of 1,000,000 intervals (20,000 sessions of 50 intervals
//!   spread over 365 days) and 500,000 usage rows (one per working interval), then
//!   `stats --week`, `history --search` (full-text, and a two-character scan) and the window's
//!   Today view as the CLI and the window run them.
//!
//! ```text
//! cargo bench --bench store                        # release: what the figures in the README used
//! cargo bench --bench store -- --queries            # only the heavy year's queries
//! cargo bench --bench store --profile dev -- --quick
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tray::model::{Agent, EventKind, Observation};
use agent_tray::registry::{RegistryConfig, SessionsRegistry};
use agent_tray::store::query::{self, HistoryFilter, Period};
use agent_tray::store::waiting::GroupBy;
use agent_tray::store::writer::{self, WriterConfig};
use agent_tray::store::{store_path, HistoryStore};
use chrono::{TimeDelta, Utc};
use rusqlite::params;
use tokio_util::sync::CancellationToken;

fn intervals(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("SELECT count(*) FROM intervals", [], |r| r.get(0))
        .unwrap_or(0)
}

fn sessions(path: &std::path::Path) -> i64 {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .unwrap_or(0)
}

fn write_throughput(turns_per_thread: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = store_path(tmp.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let registry = Arc::new(SessionsRegistry::with_config(
        RegistryConfig::default(),
        Arc::new(agent_tray::clock::SystemClock),
    ));
    let token = CancellationToken::new();
    let task = {
        let _guard = runtime.enter();
        writer::spawn(
            registry.clone(),
            &Default::default(),
            WriterConfig {
                path: path.clone(),
                retention_days: 90,
            },
            token.clone(),
        )
    };
    // The forwarder subscribes to the registry from its task: a first session must reach the
    // file before the clock starts, or a fast publisher is done before anyone listens.
    registry
        .observe(Observation::new(
            "bench-warm-up",
            Agent::Claude,
            EventKind::UserPromptSubmit,
            Utc::now(),
        ))
        .unwrap();
    let ready = Instant::now() + Duration::from_secs(60);
    while sessions(&path) == 0 && Instant::now() < ready {
        std::thread::sleep(Duration::from_millis(10));
    }
    let base = intervals(&path);
    let start = Instant::now();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let registry = registry.clone();
            std::thread::spawn(move || {
                for i in 0..turns_per_thread {
                    let id = format!("bench-{t}-{}", i % 50);
                    for event in [
                        EventKind::UserPromptSubmit,
                        EventKind::PermissionRequest,
                        EventKind::PostToolUse,
                        EventKind::Stop,
                    ] {
                        registry
                            .observe(Observation::new(&id, Agent::Claude, event, Utc::now()))
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let published = start.elapsed();
    let expected = i64::try_from(8 * turns_per_thread * 4).unwrap();
    // Done when every interval is in, or when the count has not moved for a second (the rest
    // were lost to a lag and resynced over; see the writer's module text).
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut got, mut last_change, mut all) = (0, Instant::now(), start.elapsed());
    while Instant::now() < deadline
        && got < expected
        && last_change.elapsed() < Duration::from_secs(1)
    {
        let now = intervals(&path) - base;
        if now != got {
            got = now;
            last_change = Instant::now();
            all = start.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    token.cancel();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), task).await })
        .ok();
    println!(
        "write: {got} of {expected} intervals in {:.2} s (published in {:.2} s; the rest lost to lag): {:.0} intervals/s, 8 writers",
        all.as_secs_f64(),
        published.as_secs_f64(),
        got as f64 / all.as_secs_f64()
    );
}

/// Fills a store with `sessions` sessions of `per` intervals each, over `days` days before now.
fn fill(path: &std::path::Path, sessions: usize, per: usize, days: i64) {
    let store = HistoryStore::open(path).unwrap();
    drop(store);
    let mut conn = rusqlite::Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    let now = Utc::now();
    let states = ["working", "waiting_for_permission", "working", "idle"];
    {
        let mut session = tx
            .prepare(
                "INSERT INTO sessions (session_id, agent, cwd, repo, branch, model, title, pid,
                 started_at, last_seen, ended_at, end_reason)
                 VALUES (?1, ?2, ?3, ?4, 'main', 'claude-sonnet-4-5', ?5, 4242, ?6, ?7, ?7, 'session_end')",
            )
            .unwrap();
        let mut interval = tx
            .prepare("INSERT INTO intervals (session, state, from_ms, to_ms, waiting_for) VALUES (?1, ?2, ?3, ?4, ?5)")
            .unwrap();
        let mut usage = tx
            .prepare(
                "INSERT INTO usage (session, key, turn_id, at_ms, input, output, cache_read, cache_write)
                 VALUES (?1, ?2, ?3, ?4, 1200, 800, 40000, 3000)",
            )
            .unwrap();
        for s in 0..sessions {
            let offset =
                days * 86_400_000 * i64::try_from(s).unwrap() / i64::try_from(sessions).unwrap();
            let start = (now - TimeDelta::days(days)).timestamp_millis() + offset;
            let end = start + i64::try_from(per).unwrap() * 30_000;
            let project = format!("project-{}", s % 40);
            session
                .execute(params![
                    format!("{s:08x}-95b9-4336-8b7d-2d91c4d80000"),
                    if s % 3 == 0 { "codex" } else { "claude" },
                    format!("/home/dev/src/{project}"),
                    project,
                    format!("Work item {s}: refactor the retry logic"),
                    start,
                    end,
                ])
                .unwrap();
            let id = tx.last_insert_rowid();
            for k in 0..per {
                let from = start + i64::try_from(k).unwrap() * 30_000;
                let state = states[k % states.len()];
                let waiting_for = (state == "waiting_for_permission").then_some("Bash");
                interval
                    .execute(params![id, state, from, from + 30_000, waiting_for])
                    .unwrap();
                // A message's usage in each working interval: half the intervals.
                if state == "working" {
                    usage
                        .execute(params![
                            id,
                            format!("msg_{k}"),
                            format!("turn-{}", k / 4),
                            from
                        ])
                        .unwrap();
                }
            }
        }
    }
    tx.commit().unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
}

fn size_per_10k() {
    let tmp = tempfile::tempdir().unwrap();
    let path = store_path(tmp.path());
    fill(&path, 10_000, 10, 30);
    let bytes = std::fs::metadata(&path).unwrap().len();
    println!(
        "size: {:.1} MiB for 10,000 sessions of 10 intervals",
        bytes as f64 / (1024.0 * 1024.0)
    );
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// CPU time this thread has used: on a machine shared with other work the wall time of a query
/// is mostly waiting for a core, and this is what the query itself costs.
#[cfg(not(unix))]
fn thread_cpu() -> Duration {
    Duration::ZERO // not measured off unix: the store bench runs on Linux
}

#[cfg(unix)]
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which lives on this stack frame.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Times `f` `n` times: the medians of wall and thread CPU time.
fn timed<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, Duration, T) {
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..n {
        let (w, c) = (Instant::now(), thread_cpu());
        last = Some(f());
        cpu.push(thread_cpu().saturating_sub(c));
        wall.push(w.elapsed());
    }
    (median(wall), median(cpu), last.unwrap())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The timelines query as it was before `INDEXED BY` (the baseline, timed in the same run): the
/// rows stepped and read as `query::timelines` reads them.
fn timelines_before(conn: &rusqlite::Connection, from: i64, to: i64) -> usize {
    let mut stmt = conn
        .prepare_cached(
            "SELECT s.session_id, s.agent, s.cwd, s.repo, s.ended_at,
                    i.state, i.from_ms, i.to_ms, i.waiting_for, i.session, i.prompt_source
             FROM (SELECT session FROM intervals WHERE to_ms > ?1
                   UNION SELECT session FROM intervals WHERE to_ms IS NULL) touched
             CROSS JOIN intervals i ON i.session = touched.session
             JOIN sessions s ON s.id = i.session
             WHERE i.from_ms < ?2
             ORDER BY i.session, i.from_ms",
        )
        .unwrap();
    let mut rows = stmt.query(params![from, to]).unwrap();
    let mut n = 0;
    while let Some(r) = rows.next().unwrap() {
        for c in 0..11 {
            let _ = r.get_ref(c).unwrap();
        }
        n += 1;
    }
    n
}

fn heavy_year(sessions: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = store_path(tmp.path());
    let start = Instant::now();
    fill(&path, sessions, 50, 365);
    println!(
        "heavy year: {} intervals written in {:.1} s, {:.0} MiB",
        sessions * 50,
        start.elapsed().as_secs_f64(),
        std::fs::metadata(&path).unwrap().len() as f64 / (1024.0 * 1024.0)
    );
    let conn = query::open_reader(&path).unwrap().unwrap();
    let runs = 9;
    // The yardstick, timed in the same run: a full scan of the million intervals (what the
    // machine's speed and load make of plain SQLite work).
    let (scan, scan_cpu, n) = timed(runs, || {
        conn.query_row(
            "SELECT count(*) FROM intervals WHERE waiting_for IS NULL",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
    });
    assert!(n > 0);
    let tz = chrono_tz::Europe::Paris;
    let prices = agent_tray::usage::PriceTable::shipped();
    let now = Utc::now();
    let week_from = agent_tray::store::waiting::local_day_start(
        now.with_timezone(&tz).date_naive() - TimeDelta::days(6),
        tz,
    );
    let (before, before_cpu, n_before) = timed(runs, || {
        timelines_before(&conn, week_from.timestamp_millis(), now.timestamp_millis())
    });
    let (tl, tl_cpu, n_now) = timed(runs, || {
        query::timelines(&conn, week_from, now)
            .unwrap()
            .iter()
            .map(|t| t.spans.len())
            .sum::<usize>()
    });
    assert_eq!(n_before, n_now, "the same rows");
    let (usage, usage_cpu, n_usage) = timed(runs, || {
        agent_tray::store::cost::usage_rows(&conn, week_from, now)
            .unwrap()
            .len()
    });
    let (week, week_cpu, tally) = timed(runs, || {
        query::stats(
            Some(&conn),
            Period::Week,
            GroupBy::Project,
            now,
            tz,
            &prices,
        )
        .unwrap()
    });
    assert!(tally.totals.working_secs > 0);
    let (search, search_cpu, found) = timed(runs, || {
        query::history(
            &conn,
            &HistoryFilter {
                search: Some("project-17".into()),
                limit: 50,
                ..Default::default()
            },
        )
        .unwrap()
    });
    assert!(!found.is_empty());
    let (rare, rare_cpu, found) = timed(runs, || {
        query::history(
            &conn,
            &HistoryFilter {
                search: Some("Work item 1234:".into()),
                limit: 50,
                ..Default::default()
            },
        )
        .unwrap()
    });
    assert_eq!(found.len(), 1);
    let (short, short_cpu, found) = timed(runs, || {
        query::history(
            &conn,
            &HistoryFilter {
                search: Some("17".into()),
                limit: 50,
                ..Default::default()
            },
        )
        .unwrap()
    });
    assert!(!found.is_empty());
    let (today, today_cpu, view) = timed(runs, || {
        agent_tray::store::views::today(&path, Utc::now(), tz).unwrap()
    });
    assert!(view.tokens.unwrap_or(0) > 0);
    println!("  medians of {runs}, wall (thread CPU):");
    println!(
        "  yardstick, a full scan of the intervals: {:.1} ms ({:.1} ms)",
        ms(scan),
        ms(scan_cpu)
    );
    println!(
        "  the week's timelines ({n_now} intervals): before {:.1} ms ({:.1} ms), now {:.1} ms ({:.1} ms): {:.1}x faster (CPU {:.1}x)",
        ms(before),
        ms(before_cpu),
        ms(tl),
        ms(tl_cpu),
        before.as_secs_f64() / tl.as_secs_f64(),
        before_cpu.as_secs_f64() / tl_cpu.as_secs_f64().max(1e-9)
    );
    println!(
        "  the week's usage rows ({n_usage}): {:.1} ms ({:.1} ms)",
        ms(usage),
        ms(usage_cpu)
    );
    println!(
        "stats --week: {:.1} ms ({:.1} ms) = {:.2} yardsticks; history --search (full-text): {:.1} ms ({:.1} ms), a rare term {:.1} ms ({:.1} ms); of 2 characters (a scan): {:.1} ms ({:.1} ms); the Today view: {:.1} ms ({:.1} ms)",
        ms(week),
        ms(week_cpu),
        week.as_secs_f64() / scan.as_secs_f64(),
        ms(search),
        ms(search_cpu),
        ms(rare),
        ms(rare_cpu),
        ms(short),
        ms(short_cpu),
        ms(today),
        ms(today_cpu)
    );
}

/// What the SQLite thread alone sustains: changes applied in batches like the writer's.
fn apply_throughput(changes: usize) {
    use agent_tray::model::{Session, SessionState};
    use agent_tray::registry::SessionChange;
    use agent_tray::store::Record;
    let tmp = tempfile::tempdir().unwrap();
    let mut store = HistoryStore::open(&store_path(tmp.path())).unwrap();
    let states = [
        SessionState::Working,
        SessionState::WaitingForPermission,
        SessionState::Working,
        SessionState::Idle,
    ];
    let base = Utc::now();
    let records: Vec<Record> = (0..changes)
        .map(|i| {
            let mut session = Session::new(
                format!("apply-{}", i % 400),
                Agent::Claude,
                states[(i / 400) % 4],
                base,
            );
            session.cwd = Some(format!("/home/dev/src/project-{}", i % 40));
            Record::Change {
                at: base + TimeDelta::milliseconds(i64::try_from(i).unwrap()),
                change: SessionChange::Changed {
                    old_state: SessionState::Idle,
                    session,
                },
            }
        })
        .collect();
    let start = Instant::now();
    for batch in records.chunks(512) {
        store.apply(batch).unwrap();
    }
    let took = start.elapsed();
    println!(
        "apply: {changes} changes in batches of 512 in {:.2} s: {:.0} intervals/s (the SQLite thread alone)",
        took.as_secs_f64(),
        changes as f64 / took.as_secs_f64()
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    if !std::env::args().any(|a| a == "--queries") {
        apply_throughput(if quick { 4_000 } else { 40_000 });
        write_throughput(if quick { 200 } else { 2_000 });
        size_per_10k();
    }
    heavy_year(if quick { 2_000 } else { 20_000 });
}
