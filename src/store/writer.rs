//! The one writer of the history store: registry changes in, SQLite transactions out.
//!
//! Two halves joined by one bounded channel:
//! - a **forwarder** task on the runtime reads the registry's stamped change stream
//!   ([`SessionsRegistry::subscribe_stamped`]) and sends each change on;
//! - a **blocking thread** owns the SQLite connection, takes everything waiting in the channel
//!   as one batch and commits it in one transaction. Under load batches grow and commits stay
//!   few; at rest every change is committed as it comes, so a `kill -9` loses at most what was
//!   in flight (well under a second).
//!
//! **When the channel is full** (the disk is slow, the thread is behind): the forwarder waits for
//! room — it never drops a change itself — and while it waits the registry goes on publishing
//! into its own bounded stream. If that stream overflows too, the registry drops the oldest
//! changes for this subscriber and says how many (`Lagged`); the forwarder then sends the
//! registry's whole live list (`Resync`) so every session's row and current interval are right
//! again. What is lost is only the intervals that began and ended inside the gap; the count is
//! logged. The registry, the hooks and the socket never wait on the store.
//!
//! **When the store cannot be used** (a read-only folder, a full disk, a damaged file) it is
//! reported once, at error level, and the engine runs on without history: the forwarder keeps
//! draining the stream so nothing backs up, and the thread retries on the next batch. A full disk
//! flaps (a small batch fits in a page freed a moment ago, the next one does not), so it counts as
//! back only after [`RESUME_AFTER`] without a failure ("history_resumed"); only a failure after
//! that is reported again ([`StoreHealth`]).
//!
//! **Retention can change while it runs** (the desktop app's setting): [`HistoryRetention`] is a
//! `watch` sender, so only the newest value matters and nothing queues; a change prunes at once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{HistoryStore, Record};
use crate::registry::SessionsRegistry;
use crate::usage::UsageStream;

/// Batches of records waiting for the thread. Full: the forwarder waits (see the module text).
const QUEUE: usize = 256;
/// At most this many changes are taken off the stream into one queue slot.
const MAX_BATCH: usize = 512;
/// How often the engine is marked alive (what a crash's open intervals close at): a crash loses
/// at most this much of the intervals open then, and the history promises at most a second.
/// Every change is committed as it comes, whatever this is. At rest this is the writer's only
/// wake-up: one `pwrite` into the mark file ([`super::alive`]) on the marker's own thread, or,
/// when that file cannot be written, one small SQLite transaction on the writer's thread.
const ALIVE_EVERY: Duration = Duration::from_secs(1);
/// How long the store must write without a failure before it counts as back.
const RESUME_AFTER: Duration = Duration::from_secs(60);
/// How often old history is pruned while running (also once at start).
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// What the writer needs to know.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    pub path: PathBuf,
    pub retention_days: u32,
}

enum Command {
    Records(Vec<Record>),
    Prune(DateTime<Utc>),
    /// Keep this many days from now on, and prune to it at once.
    Retention(u32, DateTime<Utc>),
}

/// Changes how many days of history the running writer keeps (1 to
/// [`MAX_RETENTION_DAYS`](super::MAX_RETENTION_DAYS)); cheap to clone.
#[derive(Debug, Clone)]
pub struct HistoryRetention {
    days: Arc<tokio::sync::watch::Sender<u32>>,
    started_with: u32,
}

impl HistoryRetention {
    /// Keep `days` from now on (clamped to the accepted range); `None`: what the engine started
    /// with (`AGENT_TRAY_HISTORY_DAYS`, else 90).
    pub fn set(&self, days: Option<u32>) {
        let days = days
            .unwrap_or(self.started_with)
            .clamp(1, super::MAX_RETENTION_DAYS);
        self.days.send_if_modified(|current| {
            let changed = *current != days;
            *current = days;
            changed
        });
    }

    pub fn days(&self) -> u32 {
        *self.days.borrow()
    }
}

/// Starts the writer. The returned task ends when `token` is cancelled, after the thread has
/// closed every open interval and committed.
pub fn spawn(
    registry: Arc<SessionsRegistry>,
    usage: &UsageStream,
    config: WriterConfig,
    token: CancellationToken,
) -> JoinHandle<()> {
    spawn_with_retention(registry, usage, config, token).0
}

/// As [`spawn`], with a handle that changes the retention while the writer runs.
pub fn spawn_with_retention(
    registry: Arc<SessionsRegistry>,
    usage: &UsageStream,
    config: WriterConfig,
    token: CancellationToken,
) -> (JoinHandle<()>, HistoryRetention) {
    let (days, retention_changes) = tokio::sync::watch::channel(config.retention_days);
    let retention = HistoryRetention {
        days: Arc::new(days),
        started_with: config.retention_days,
    };
    // Subscribe, then take the snapshot at once: no change is missed between the two, and a
    // change in both only repeats a state the snapshot already has (a no-op for the store).
    let inputs = Inputs {
        changes: registry.subscribe_stamped(),
        usage: usage.subscribe(),
        requests: registry.subscribe_closed_requests(),
        retention: retention_changes,
    };
    let snapshot = Record::Resync {
        at: registry.clock().wall(),
        sessions: registry.list(),
    };
    let (tx, rx) = mpsc::channel::<Command>(QUEUE);
    let marking = Marking::new(super::alive::alive_mark_path(&config.path));
    let store_opened = marking.store_opened.clone();
    let marker = AliveMarker::spawn(marking, registry.clock().clone(), ALIVE_EVERY, tx.clone());
    let thread = tokio::task::spawn_blocking(move || run_thread(config, rx, &store_opened));
    let task = tokio::spawn(async move {
        forward(registry, snapshot, inputs, tx, token).await;
        // Its sender too must go before the thread can end.
        drop(marker);
        // The sender is gone: the thread drains what is queued, writes, and ends.
        if let Err(e) = thread.await {
            tracing::error!(error = %e, "history writer thread failed");
        }
    });
    (task, retention)
}

/// What the forwarder listens to.
struct Inputs {
    changes: broadcast::Receiver<crate::registry::StampedChange>,
    usage: broadcast::Receiver<crate::usage::UsageReport>,
    requests: broadcast::Receiver<agent_tray_domain::pending::Closed>,
    retention: tokio::sync::watch::Receiver<u32>,
}

async fn forward(
    registry: Arc<SessionsRegistry>,
    snapshot: Record,
    inputs: Inputs,
    tx: mpsc::Sender<Command>,
    token: CancellationToken,
) {
    let Inputs {
        mut changes,
        mut usage,
        mut requests,
        mut retention,
    } = inputs;
    let clock = registry.clock().clone();
    if tx.send(Command::Records(vec![snapshot])).await.is_err() {
        return;
    }
    let mut prune = tokio::time::interval(PRUNE_EVERY);
    prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pending = None;
    // The usage stream is the engine's, not the registry's: when it closes (no engine feeds
    // it) only its branch stops; the registry's close still ends the loop.
    let mut usage_open = true;
    loop {
        let command = tokio::select! {
            () = token.cancelled() => break,
            received = changes.recv() => match received {
                Ok(stamped) => {
                    // Take whatever else is waiting too: one queue slot, one transaction.
                    let mut batch = vec![Record::Change { at: stamped.at, change: stamped.change }];
                    while batch.len() < MAX_BATCH {
                        let Ok(more) = changes.try_recv() else { break };
                        batch.push(Record::Change { at: more.at, change: more.change });
                    }
                    Command::Records(batch)
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "history writer fell behind; resyncing from the live list");
                    Command::Records(vec![Record::Resync {
                        at: clock.wall(),
                        sessions: registry.list(),
                    }])
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            received = usage.recv(), if usage_open => match received {
                Ok(report) => {
                    let mut batch = vec![Record::Usage(report)];
                    while batch.len() < MAX_BATCH {
                        let Ok(more) = usage.try_recv() else { break };
                        batch.push(Record::Usage(more));
                    }
                    Command::Records(batch)
                }
                // Lost reports are lost cost (a later thread total repairs a Codex session).
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "history writer fell behind; token usage reports lost");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    usage_open = false;
                    continue;
                }
            },
            received = requests.recv() => match received {
                Ok(closed) => Command::Records(vec![Record::Request(closed)]),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "history writer fell behind; permission requests not recorded");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = prune.tick() => Command::Prune(clock.wall()),
            Ok(()) = retention.changed() => {
                Command::Retention(*retention.borrow_and_update(), clock.wall())
            }
        };
        // Wait for room, unless the engine stops meanwhile: then what is in hand goes into the
        // last batch below rather than being lost.
        let permit = tokio::select! {
            () = token.cancelled() => {
                pending = Some(command);
                break;
            }
            permit = tx.reserve() => permit,
        };
        match permit {
            Ok(permit) => permit.send(command),
            // The thread is gone (it cannot happen while the sender lives, but never spin).
            Err(_) => return,
        }
    }
    // Stopping: what was published before the stop is still written, then every open interval
    // ends now. Waits at most for the queue to have room.
    let mut last = match pending {
        Some(Command::Records(records)) => records,
        _ => Vec::new(),
    };
    while let Ok(stamped) = changes.try_recv() {
        last.push(Record::Change {
            at: stamped.at,
            change: stamped.change,
        });
    }
    while let Ok(report) = usage.try_recv() {
        last.push(Record::Usage(report));
    }
    while let Ok(closed) = requests.try_recv() {
        last.push(Record::Request(closed));
    }
    last.push(Record::Stopping { at: clock.wall() });
    let _ = tx.send(Command::Records(last)).await;
}

/// The once-a-second alive mark, on a thread of its own that does nothing else.
///
/// Not a tokio interval: the runtime's timer wheel parks until a coarse slot boundary and then
/// again for the rest, so each one-second tick cost the idle app two or three wake-ups of a
/// worker (strace of the `--background` app); a thread's timed wait wakes once. Dropping the
/// marker stops the thread at once (its wait sees the stop channel close).
struct AliveMarker {
    _stop: Option<std::sync::mpsc::Sender<()>>,
}

impl AliveMarker {
    /// Marks `every` from now until dropped; marks `marking` cannot take go into the store
    /// through `tx` (dropped when the queue is full: the next comes a second later).
    fn spawn(
        mut marking: Marking,
        clock: Arc<dyn crate::clock::Clock>,
        every: Duration,
        tx: mpsc::Sender<Command>,
    ) -> Self {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("alive-mark".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    let at = clock.wall();
                    if !marking.mark(at) {
                        let _ = tx.try_send(Command::Records(vec![Record::Alive { at }]));
                    }
                }
            });
        match spawned {
            Ok(_) => AliveMarker { _stop: Some(stop) },
            Err(error) => {
                tracing::error!(%error, "no alive-mark thread: a crash loses the open intervals");
                AliveMarker { _stop: None }
            }
        }
    }
}

/// Where the marker puts its once-a-second alive mark: the file beside the store
/// ([`super::alive`]) once the thread has opened the store, else the store itself.
///
/// Not before: opening the store closes what a crashed engine left open at the mark it finds,
/// and a mark this engine wrote first would close them now instead of at that crash.
struct Marking {
    path: PathBuf,
    store_opened: Arc<AtomicBool>,
    file: Option<super::alive::AliveMark>,
    file_failed: bool,
}

impl Marking {
    fn new(path: PathBuf) -> Self {
        Marking {
            path,
            store_opened: Arc::new(AtomicBool::new(false)),
            file: None,
            file_failed: false,
        }
    }

    /// Writes the mark `at` into the file; false when it must go into the store instead (the
    /// store is not open yet, or the file cannot be written: a read-only folder).
    fn mark(&mut self, at: DateTime<Utc>) -> bool {
        if self.file.is_none() && !self.file_failed && self.store_opened.load(Ordering::Acquire) {
            match super::alive::AliveMark::open(&self.path) {
                Ok(file) => self.file = Some(file),
                Err(error) => self.give_up_file(&error),
            }
        }
        // 21 bytes into the page cache: nothing here waits on the disk.
        match self.file.as_ref().map(|file| file.write(at)) {
            Some(Ok(())) => true,
            Some(Err(error)) => {
                self.give_up_file(&error);
                false
            }
            None => false,
        }
    }

    fn give_up_file(&mut self, error: &std::io::Error) {
        tracing::debug!(%error, path = %self.path.display(), "no alive-mark file: the mark goes into the store");
        self.file = None;
        self.file_failed = true;
    }
}

/// What the writer says about the store's health, decided from each write's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthReport {
    /// The store cannot be written: say so (once).
    Unavailable,
    /// It has written without a failure for [`RESUME_AFTER`].
    Resumed,
}

/// Whether the store is failing, and since when it last failed. Pure: the time is given.
#[derive(Debug, Default)]
pub struct StoreHealth {
    last_failure: Option<std::time::Instant>,
}

impl StoreHealth {
    /// The outcome of one write at `now`; `Some` when it is worth a log line.
    pub fn on_write(&mut self, ok: bool, now: std::time::Instant) -> Option<HealthReport> {
        match (ok, self.last_failure) {
            (false, None) => {
                self.last_failure = Some(now);
                Some(HealthReport::Unavailable)
            }
            (false, Some(_)) => {
                self.last_failure = Some(now);
                None
            }
            (true, Some(at)) if now.duration_since(at) >= RESUME_AFTER => {
                self.last_failure = None;
                Some(HealthReport::Resumed)
            }
            (true, _) => None,
        }
    }
}

fn run_thread(
    mut config: WriterConfig,
    mut rx: mpsc::Receiver<Command>,
    store_opened: &AtomicBool,
) {
    let mut store: Option<HistoryStore> = None;
    let mut health = StoreHealth::default();
    while let Some(first) = rx.blocking_recv() {
        let mut records = Vec::new();
        let mut prune_at = None;
        let mut retention_days = config.retention_days;
        let mut take = |command: Command| match command {
            Command::Records(r) => records.extend(r),
            Command::Prune(now) => prune_at = Some(now),
            Command::Retention(days, now) => {
                tracing::info!(days, "history_retention");
                retention_days = days;
                prune_at = Some(now);
            }
        };
        take(first);
        while let Ok(more) = rx.try_recv() {
            take(more);
        }
        config.retention_days = retention_days;
        let result = write(&config, &mut store, &records, prune_at);
        if store.is_some() {
            store_opened.store(true, Ordering::Release);
        }
        if result.is_err() {
            // A broken connection is reopened on the next batch.
            store = None;
        }
        match (
            health.on_write(result.is_ok(), std::time::Instant::now()),
            result,
        ) {
            (Some(HealthReport::Unavailable), Err(message)) => tracing::error!(
                path = %config.path.display(),
                error = %message,
                "history_unavailable: the engine runs on without history"
            ),
            (Some(HealthReport::Resumed), _) => {
                tracing::info!(path = %config.path.display(), "history_resumed");
            }
            (_, Err(message)) => tracing::debug!(error = %message, "history write failed again"),
            _ => {}
        }
    }
}

/// Why a batch did not reach the store; logged, then the connection is reopened on the next batch.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Open(#[from] super::StoreError),
    #[error(transparent)]
    Apply(#[from] rusqlite::Error),
}

fn write(
    config: &WriterConfig,
    store: &mut Option<HistoryStore>,
    records: &[Record],
    prune_at: Option<DateTime<Utc>>,
) -> Result<(), WriteError> {
    if store.is_none() {
        let mut opened = HistoryStore::open(&config.path)?;
        prune(&mut opened, config, Utc::now());
        *store = Some(opened);
    }
    let Some(open) = store.as_mut() else {
        return Ok(());
    };
    if !records.is_empty() {
        open.apply(records)?;
    }
    if let Some(now) = prune_at {
        prune(open, config, now);
    }
    Ok(())
}

fn prune(store: &mut HistoryStore, config: &WriterConfig, now: DateTime<Utc>) {
    let cutoff = now - chrono::TimeDelta::days(i64::from(config.retention_days));
    match store.prune(cutoff) {
        Ok(0) => {}
        Ok(n) => tracing::info!(sessions = n, days = config.retention_days, "history_pruned"),
        Err(e) => tracing::warn!(error = %e, "history prune failed"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::model::{Agent, EventKind, Observation};
    use crate::registry::RegistryConfig;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn usage_a_feed_reports_reaches_the_store_only_for_a_known_session() {
        use crate::usage::{TokenUsage, UsageKind, UsageReport};
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        let clock = Arc::new(ManualClock::new(t("2026-03-02T12:00:00Z")));
        let registry = Arc::new(SessionsRegistry::with_config(
            RegistryConfig::default(),
            clock.clone(),
        ));
        let token = CancellationToken::new();
        let sink = crate::feeds::FeedSink::without_history(registry.clone());
        let task = spawn(
            registry.clone(),
            &sink.usage,
            WriterConfig {
                path: path.clone(),
                retention_days: 36_500,
            },
            token.clone(),
        );
        let report = |session: &str| UsageReport {
            session_id: session.into(),
            agent: Agent::Codex,
            at: t("2026-03-02T09:00:30Z"),
            turn_id: Some("turn-1".into()),
            model: Some("gpt-5".into()),
            kind: UsageKind::ThreadTotal,
            usage: TokenUsage {
                input: 100,
                output: 10,
                ..Default::default()
            },
        };
        let report_from_feed = |session: &str| {
            crate::feeds::apply_outputs(
                &sink,
                vec![crate::feeds::FeedOutput::Usage(Box::new(report(session)))],
            )
        };
        // An unknown session: dropped (the query below finds no row for it).
        report_from_feed("ghost");
        registry
            .observe(Observation::new(
                "known",
                Agent::Codex,
                EventKind::UserPromptSubmit,
                t("2026-03-02T09:00:00Z"),
            ))
            .unwrap();
        report_from_feed("known");
        token.cancel();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let rows: Vec<(String, i64)> = conn
            .prepare(
                "SELECT s.session_id, u.output FROM usage u JOIN sessions s ON s.id = u.session",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows, [("known".to_string(), 10)]);
    }

    #[test]
    fn a_flapping_store_is_reported_once_and_back_only_after_a_quiet_minute() {
        let t0 = std::time::Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        let mut health = StoreHealth::default();
        assert_eq!(
            health.on_write(true, at(0)),
            None,
            "healthy: nothing to say"
        );
        assert_eq!(
            health.on_write(false, at(1)),
            Some(HealthReport::Unavailable)
        );
        // A full disk: some small batches fit, most do not. Nothing more is said.
        for s in 2..50 {
            assert_eq!(health.on_write(s % 3 == 0, at(s)), None, "at {s} s");
        }
        // A minute after the last failure (at 49 s), a success counts as back...
        assert_eq!(health.on_write(true, at(108)), None);
        assert_eq!(health.on_write(true, at(109)), Some(HealthReport::Resumed));
        // ...and a failure after that is news again.
        assert_eq!(
            health.on_write(false, at(200)),
            Some(HealthReport::Unavailable)
        );
    }

    // One thread: the forwarder runs only once the test awaits it, after the stop, so what it
    // writes is what it drained from the stream on its way out.
    #[tokio::test(flavor = "current_thread")]
    async fn the_writer_records_stamped_intervals_and_writes_what_was_published_before_a_stop() {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        let clock = Arc::new(ManualClock::new(t("2026-03-02T12:00:00Z")));
        let registry = Arc::new(SessionsRegistry::with_config(
            RegistryConfig::default(),
            clock.clone(),
        ));
        let token = CancellationToken::new();
        let task = spawn(
            registry.clone(),
            &UsageStream::default(),
            WriterConfig {
                path: path.clone(),
                retention_days: 36_500,
            },
            token.clone(),
        );
        for (event, at) in [
            (EventKind::UserPromptSubmit, "2026-03-02T09:00:00Z"),
            (EventKind::PermissionRequest, "2026-03-02T09:01:00Z"),
            (EventKind::Stop, "2026-03-02T09:03:00Z"),
            // Stamped later than the registry's clock: recorded at the clock, not in the future.
            (EventKind::UserPromptSubmit, "2026-03-02T13:00:00Z"),
        ] {
            registry
                .observe(Observation::new("w1", Agent::Claude, event, t(at)))
                .unwrap();
        }
        // Stop at once: the changes still on the stream are written before the thread ends.
        token.cancel();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let rows: Vec<(String, i64, Option<i64>)> = conn
            .prepare("SELECT state, from_ms, to_ms FROM intervals ORDER BY from_ms")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let ms = |s: &str| t(s).timestamp_millis();
        assert_eq!(
            rows,
            [
                (
                    "working".into(),
                    ms("2026-03-02T09:00:00Z"),
                    Some(ms("2026-03-02T09:01:00Z"))
                ),
                (
                    "waiting_for_permission".into(),
                    ms("2026-03-02T09:01:00Z"),
                    Some(ms("2026-03-02T09:03:00Z"))
                ),
                (
                    "idle".into(),
                    ms("2026-03-02T09:03:00Z"),
                    Some(ms("2026-03-02T12:00:00Z"))
                ),
                // Open at the stop, closed by it (the clock still reads 12:00).
                (
                    "working".into(),
                    ms("2026-03-02T12:00:00Z"),
                    Some(ms("2026-03-02T12:00:00Z"))
                ),
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_retention_changed_while_running_prunes_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let path = crate::store::store_path(tmp.path());
        let now = Utc::now();
        let sixty_days_ago = now - chrono::TimeDelta::days(60);
        {
            let mut store = HistoryStore::open(&path).unwrap();
            let mut old = crate::model::Session::new(
                "old",
                Agent::Claude,
                crate::model::SessionState::Working,
                sixty_days_ago,
            );
            let change = |at: DateTime<Utc>, session: crate::model::Session| Record::Change {
                at,
                change: crate::registry::SessionChange::Added { session },
            };
            store.apply(&[change(sixty_days_ago, old.clone())]).unwrap();
            old.state = crate::model::SessionState::Ended;
            old.end_reason = Some(crate::model::EndReason::SessionEnd);
            store
                .apply(&[change(sixty_days_ago + chrono::TimeDelta::hours(1), old)])
                .unwrap();
        }
        // The writer prunes at open by the system's time: the scripted session is 60 days old now.
        let clock = Arc::new(ManualClock::new(now));
        let registry = Arc::new(SessionsRegistry::with_config(
            RegistryConfig::default(),
            clock.clone(),
        ));
        let token = CancellationToken::new();
        let (task, retention) = spawn_with_retention(
            registry,
            &UsageStream::default(),
            WriterConfig {
                path: path.clone(),
                retention_days: 90,
            },
            token.clone(),
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let count = || -> i64 {
            conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
                .unwrap_or(-1)
        };
        let mark = super::super::alive::alive_mark_path(&path);
        let alive = || super::super::alive::read_alive_mark(&mark, Utc::now()).is_some();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !alive() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(alive(), "the writer started");
        assert_eq!(count(), 1, "60 days old, kept 90 days");
        assert_eq!(retention.days(), 90);
        retention.set(Some(30));
        assert_eq!(retention.days(), 30);
        while count() != 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            count(),
            0,
            "pruned as soon as the retention went to 30 days"
        );
        retention.set(None);
        assert_eq!(
            retention.days(),
            90,
            "None goes back to what the engine started with"
        );
        token.cancel();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap();
    }
    /// The commands the forwarder sends over `secs` seconds of paused time, with one hook event
    /// observed at `observe_at` (seconds), by second; the registry's wall clock starts at
    /// [`FORWARDED_FROM`] and moves with the paused time.
    async fn forwarded(secs: u64, observe_at: Option<u64>) -> Vec<(u64, &'static str)> {
        let clock = Arc::new(ManualClock::new(forwarded_from()));
        let registry = Arc::new(SessionsRegistry::with_config(
            RegistryConfig::default(),
            clock.clone(),
        ));
        let (tx, mut rx) = mpsc::channel::<Command>(QUEUE);
        let (_days, retention) = tokio::sync::watch::channel(90);
        let token = CancellationToken::new();
        let start = tokio::time::Instant::now();
        let task = tokio::spawn(forward(
            registry.clone(),
            Record::Alive { at: Utc::now() },
            Inputs {
                changes: registry.subscribe_stamped(),
                usage: UsageStream::default().subscribe(),
                requests: registry.subscribe_closed_requests(),
                retention,
            },
            tx,
            token.clone(),
        ));
        let seen = tokio::spawn(async move {
            let mut seen = Vec::new();
            while let Some(command) = rx.recv().await {
                let what = match command {
                    Command::Records(r) if matches!(r[..], [Record::Alive { .. }]) => "alive",
                    // The last batch, at the stop.
                    Command::Records(r)
                        if r.iter().any(|r| matches!(r, Record::Stopping { .. })) =>
                    {
                        "stop"
                    }
                    Command::Records(_) => "change",
                    Command::Prune(_) | Command::Retention(..) => "prune",
                };
                seen.push((start.elapsed().as_secs(), what));
            }
            seen
        });
        for s in 1..=secs {
            tokio::time::sleep_until(start + Duration::from_secs(s)).await;
            clock.advance(Duration::from_secs(1));
            if observe_at == Some(s) {
                let obs =
                    Observation::new("s1", Agent::Claude, EventKind::SessionStart, Utc::now());
                registry.observe(obs).unwrap();
            }
        }
        token.cancel();
        task.await.unwrap();
        seen.await.unwrap()
    }

    /// A [`Marking`] whose store is open; with no file, one whose file cannot be made.
    fn opened_marking(file: Option<&std::path::Path>) -> Marking {
        let mut marking = Marking::new(file.map(std::path::Path::to_path_buf).unwrap_or_default());
        marking.store_opened.store(true, Ordering::Release);
        marking.file_failed = file.is_none();
        marking
    }

    fn forwarded_from() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-02T09:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[tokio::test(start_paused = true)]
    async fn at_rest_the_forwarder_sends_the_thread_nothing() {
        // Nothing happening for a minute (the tray at rest): after the start, only the stop
        // reaches the writer's thread (the alive mark has a thread of its own, below).
        let idle = forwarded(60, None).await;
        assert!(
            idle.iter().all(|(s, w)| *s == 0 || *w == "stop"),
            "after the start only the stop reaches the thread: {idle:?}"
        );
        // A change is forwarded as it comes.
        let busy = forwarded(10, Some(5)).await;
        assert!(busy.contains(&(5, "change")), "forwarded: {busy:?}");
    }

    #[test]
    fn the_marker_follows_the_clock_in_its_file_and_stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.sqlite3.alive");
        let clock = Arc::new(ManualClock::new(forwarded_from()));
        let (tx, mut rx) = mpsc::channel::<Command>(QUEUE);
        let marker = AliveMarker::spawn(
            opened_marking(Some(&path)),
            clock.clone(),
            Duration::from_millis(20),
            tx,
        );
        let read = || {
            super::super::alive::read_alive_mark(
                &path,
                forwarded_from() + chrono::TimeDelta::days(1),
            )
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while read() != Some(forwarded_from().timestamp_millis())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(read(), Some(forwarded_from().timestamp_millis()), "marked");
        clock.advance(Duration::from_secs(7));
        let later = forwarded_from().timestamp_millis() + 7000;
        while read() != Some(later) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(read(), Some(later), "the next mark follows the clock");
        assert!(rx.try_recv().is_err(), "nothing went to the store");
        drop(marker);
        // Stopped: its sender is gone, so the channel closes.
        while std::time::Instant::now() < deadline {
            match rx.try_recv() {
                Err(mpsc::error::TryRecvError::Disconnected) => return,
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        panic!("the marker did not stop within 10 s of being dropped");
    }

    #[test]
    fn without_a_mark_file_the_marker_puts_the_mark_into_the_store() {
        // A folder where the file cannot be made: the store's own `alive_at`, each tick.
        let clock = Arc::new(ManualClock::new(forwarded_from()));
        let (tx, mut rx) = mpsc::channel::<Command>(QUEUE);
        let _marker =
            AliveMarker::spawn(opened_marking(None), clock, Duration::from_millis(20), tx);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut alive = 0;
        while alive < 3 && std::time::Instant::now() < deadline {
            match rx.try_recv() {
                Ok(Command::Records(r)) if matches!(r[..], [Record::Alive { .. }]) => alive += 1,
                Ok(_) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        assert_eq!(alive, 3, "alive marks into the store");
    }

    #[test]
    fn no_mark_reaches_the_file_before_the_store_has_closed_what_a_crash_left_open() {
        // The store, when it opens, closes a crashed engine's intervals at the mark it finds:
        // a mark of this engine's must not be there yet.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.sqlite3.alive");
        let at = forwarded_from();
        let mut marking = Marking::new(path.clone());
        assert!(
            !marking.mark(at),
            "before the store is open: into the store"
        );
        assert!(!path.exists());
        marking.store_opened.store(true, Ordering::Release);
        assert!(marking.mark(at), "once it is: into the file");
        assert_eq!(
            super::super::alive::read_alive_mark(&path, at),
            Some(at.timestamp_millis())
        );
    }
}
