//! The engine: the registry and everything that feeds it, started as cancellable tasks.
//!
//! Two hosts run it: `agent-tray daemon` (headless) and the desktop app (in-process). Both get the
//! same socket, so the hook, `list` and `doctor` work against either. Starting a second engine
//! while one runs fails with [`BindError::AlreadyRunning`], which names the running one.
//!
//! Every background task takes a child of one [`CancellationToken`]; [`Engine::shutdown`] cancels
//! it and waits (bounded) for the tasks, so a host exits cleanly and the socket file is removed.
//!
//! **Shutdown is bounded, whatever a task is stuck in.** A task blocked in a system call (a read
//! of a file some other program made into a FIFO, a hung network file system) cannot be
//! cancelled. [`Engine::shutdown`] waits [`SHUTDOWN_GRACE`] at most, then logs by name every
//! task that did not stop and returns; the host then drops its runtime with a deadline too
//! ([`SHUTDOWN_GRACE`] again, `Runtime::shutdown_timeout`), so a stuck blocking thread never
//! keeps the process alive after SIGTERM.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub mod agent_feeds;
pub mod control_server;
pub mod talk;

use crate::clock::SystemClock;
use crate::liveness::pid_watcher;
use crate::paths::{PathsError, TrayPaths};
use crate::registry::{RegistryConfig, SessionsRegistry};
use control_server::{BindError, ControlServer, EngineLedgers};

/// The reaper's shortest pause between two passes.
const REAP_INTERVAL: Duration = Duration::from_secs(1);
/// The reaper's longest sleep: it sleeps until the registry's next due reap
/// ([`SessionsRegistry::next_reap_in`]) or a change, but a TTL changed at run time changes no
/// sequence number, so it looks again at least this often.
const REAP_IDLE: Duration = Duration::from_secs(10);
/// How long shutdown waits for tasks before leaving them to the runtime's end; hosts give the
/// runtime's own shutdown the same deadline.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Which program hosts the engine; `ping` tells clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    Daemon,
    Desktop,
}

impl HostKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HostKind::Daemon => "daemon",
            HostKind::Desktop => "desktop",
        }
    }
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub host: HostKind,
    pub paths: TrayPaths,
    pub registry: RegistryConfig,
    pub pid_watch_interval: Duration,
    /// Watch the agents' own files (sessions, transcripts, rollouts).
    pub discover_files: bool,
    /// Keep history in the store ([`crate::store`]) for this many days; `None`: keep none.
    pub history_days: Option<u32>,
}

impl EngineConfig {
    /// The configuration this process's environment asks for; a knob set to something it
    /// cannot mean is an error naming it (see [`crate::env_knobs`]).
    pub fn from_env(host: HostKind) -> Result<Self, EngineConfigError> {
        use crate::env_knobs::{
            read_flag, read_millis, MAX_PID_WATCH_INTERVAL, MIN_PID_WATCH_INTERVAL,
            NO_FILE_DISCOVERY, PID_WATCH_INTERVAL_MS,
        };
        Ok(EngineConfig {
            host,
            paths: TrayPaths::from_env()?,
            registry: RegistryConfig::try_from_env()?,
            pid_watch_interval: read_millis(
                PID_WATCH_INTERVAL_MS,
                MIN_PID_WATCH_INTERVAL,
                MAX_PID_WATCH_INTERVAL,
            )?
            .unwrap_or(pid_watcher::WATCH_INTERVAL),
            discover_files: !read_flag(NO_FILE_DISCOVERY)?,
            history_days: Some(history_days_from_env()?),
        })
    }
}

/// `AGENT_TRAY_HISTORY_DAYS`: like every knob, a value it cannot mean is an error naming it.
fn history_days_from_env() -> Result<u32, crate::env_knobs::KnobError> {
    const NAME: &str = "AGENT_TRAY_HISTORY_DAYS";
    let value = match std::env::var(NAME) {
        Ok(v) => Some(v),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(crate::env_knobs::KnobError::NotUnicode {
                name: NAME,
                expected: "a number of days".into(),
            })
        }
    };
    crate::store::retention_days(value.as_deref()).map_err(|e| {
        crate::env_knobs::KnobError::Invalid {
            name: NAME,
            value: e.value,
            expected: format!(
                "expected a whole number of days from 1 to {}",
                crate::store::MAX_RETENTION_DAYS
            ),
        }
    })
}

/// Why the environment does not make an engine configuration.
#[derive(Debug, thiserror::Error)]
pub enum EngineConfigError {
    #[error(transparent)]
    Paths(#[from] PathsError),
    #[error(transparent)]
    Knob(#[from] crate::env_knobs::KnobError),
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Bind(#[from] BindError),
}

/// A running engine.
#[derive(Debug)]
pub struct Engine {
    registry: Arc<SessionsRegistry>,
    /// The delivery ledger and the remote links' board: the engine's, not session state.
    ledgers: EngineLedgers,
    token: CancellationToken,
    /// Every background task, by the name shutdown logs if it does not stop.
    tasks: Vec<(&'static str, JoinHandle<()>)>,
    config: EngineConfig,
    /// Every agent's hooks, kept current by the drift watcher ([`crate::hook_drift`]).
    hook_health: tokio::sync::watch::Receiver<Vec<crate::hook_drift::HookHealth>>,
    /// Changes the history's retention while running (None: no history kept).
    history_retention: Option<crate::store::writer::HistoryRetention>,
}

impl Engine {
    /// Takes the socket and starts every task. Must run inside a tokio runtime.
    pub fn start(config: EngineConfig) -> Result<Self, EngineError> {
        let registry = Arc::new(SessionsRegistry::with_config(
            config.registry,
            Arc::new(SystemClock),
        ));
        Self::start_with_registry(config, registry)
    }

    /// As [`start`](Self::start), on a registry the caller made (tests inject a clock).
    pub fn start_with_registry(
        config: EngineConfig,
        registry: Arc<SessionsRegistry>,
    ) -> Result<Self, EngineError> {
        let server = ControlServer::bind(&config.paths, config.host.as_str())?;
        let token = CancellationToken::new();
        let ledgers = EngineLedgers::default();
        // Token usage from the feeds to the history store, not session state either: the feeds
        // hold the sending side, the writer its subscription; the engine keeps no other handle.
        let usage = Arc::new(crate::usage::UsageStream::default());
        // The history writer subscribes first, so it sees every change the others cause.
        let mut history_retention = None;
        let mut tasks: Vec<(&'static str, JoinHandle<()>)> = config
            .history_days
            .map(|retention_days| {
                let writer = crate::store::writer::WriterConfig {
                    path: crate::store::store_path(&config.paths.data_dir),
                    retention_days,
                };
                let (task, retention) = crate::store::writer::spawn_with_retention(
                    registry.clone(),
                    &usage,
                    writer,
                    token.child_token(),
                );
                history_retention = Some(retention);
                ("history_writer", task)
            })
            .into_iter()
            .collect();
        tasks.extend([
            (
                "control_server",
                server.spawn(registry.clone(), ledgers.clone(), token.child_token()),
            ),
            (
                "pid_watcher",
                pid_watcher::spawn(
                    registry.clone(),
                    config.pid_watch_interval,
                    token.child_token(),
                ),
            ),
            (
                "reaper",
                spawn_reaper(registry.clone(), token.child_token()),
            ),
        ]);
        let sink = crate::feeds::FeedSink::new(registry.clone(), usage.clone())
            .with_limits(ledgers.limits.clone())
            .with_talk(ledgers.talk.clone());
        tasks.extend(Self::spawn_feeds(&config, &registry, &sink, &token));
        let (health_tx, hook_health) = tokio::sync::watch::channel(Vec::new());
        tasks.push((
            "hook_drift",
            crate::hook_drift::spawn_watch(
                config.paths.data_dir.clone(),
                crate::hook_drift::Unrecorded::from_env(),
                health_tx,
                token.child_token(),
            ),
        ));
        tasks.push((
            "remote_links",
            crate::remote::link::spawn(
                registry.clone(),
                ledgers.remote_links.clone(),
                crate::remote::config::remotes_path(&config.paths.data_dir),
                crate::remote::link::SshCommand::from_env(),
                token.child_token(),
            ),
        ));
        tracing::info!(
            host = config.host.as_str(),
            socket = %config.paths.socket.display(),
            ttl_secs = config.registry.session_ttl.as_secs_f64(),
            "engine_started"
        );
        Ok(Engine {
            registry,
            ledgers,
            token,
            tasks,
            config,
            hook_health,
            history_retention,
        })
    }

    /// The feeds beyond the socket: journal replay and the agents' own files.
    fn spawn_feeds(
        config: &EngineConfig,
        registry: &Arc<SessionsRegistry>,
        sink: &crate::feeds::FeedSink,
        token: &CancellationToken,
    ) -> Vec<(&'static str, JoinHandle<()>)> {
        let mut tasks = vec![(
            "journal_replay",
            crate::journal::spawn_replay(
                registry.clone(),
                config.paths.clone(),
                &crate::agents::Adapters,
                token.child_token(),
            ),
        )];
        if config.discover_files {
            let mut feeds = crate::feeds::FeedConfig::new(
                agent_feeds::dirs_from_env(),
                config.registry.session_ttl,
            );
            feeds.ask_programs = true;
            tasks.extend(agent_feeds::spawn_all(
                sink.clone(),
                feeds,
                token.child_token(),
            ));
        }
        tasks
    }

    /// The delivery ledger and how each remote's link is doing.
    pub fn ledgers(&self) -> &EngineLedgers {
        &self.ledgers
    }

    pub fn registry(&self) -> &Arc<SessionsRegistry> {
        &self.registry
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Every agent's hooks, updated when a recorded hook file changes (hosts alert on drift).
    pub fn hook_health(&self) -> tokio::sync::watch::Receiver<Vec<crate::hook_drift::HookHealth>> {
        self.hook_health.clone()
    }

    /// The handle that changes how long history is kept (the desktop app's setting).
    pub fn history_retention(&self) -> Option<crate::store::writer::HistoryRetention> {
        self.history_retention.clone()
    }

    /// A token cancelled when the engine shuts down (hosts hang their own tasks on it).
    pub fn cancellation(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Cancels every task and waits for them, at most [`SHUTDOWN_GRACE`]; a task still running
    /// then is named in the log and left to the host's runtime shutdown.
    pub async fn shutdown(self) {
        self.token.cancel();
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        let mut stuck = Vec::new();
        for (name, mut task) in self.tasks {
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) if e.is_panic() => {
                    tracing::error!(task = name, error = %e, "an engine task panicked")
                }
                Ok(Err(_)) => {}
                Err(_) => {
                    task.abort();
                    stuck.push(name);
                }
            }
        }
        if stuck.is_empty() {
            tracing::info!("engine_stopped");
        } else {
            tracing::warn!(
                tasks = ?stuck,
                grace_secs = SHUTDOWN_GRACE.as_secs_f64(),
                "engine_stopped_with_tasks_still_running"
            );
        }
    }
}

/// Runs a host's main future on `runtime`, then drops the runtime with a deadline: a blocking
/// thread stuck in a system call (which no cancellation reaches) is left behind after
/// [`SHUTDOWN_GRACE`] instead of keeping the process alive, as a plain drop of the runtime would.
pub fn block_on_bounded<T>(runtime: tokio::runtime::Runtime, main: impl Future<Output = T>) -> T {
    let result = runtime.block_on(main);
    let started = std::time::Instant::now();
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    if started.elapsed() >= SHUTDOWN_GRACE {
        tracing::warn!(
            grace_secs = SHUTDOWN_GRACE.as_secs_f64(),
            "runtime_threads_still_busy_at_exit"
        );
    }
    result
}

fn spawn_reaper(registry: Arc<SessionsRegistry>, token: CancellationToken) -> JoinHandle<()> {
    let changes = registry.watch_change_seq();
    let due = registry.clone();
    tokio::spawn(reap_loop(
        move || due.next_reap_in(),
        move || {
            // The reaper may probe processes (a `kill(0)` and a `/proc` read each): off the
            // async workers.
            let registry = registry.clone();
            async move {
                if let Err(e) = tokio::task::spawn_blocking(move || registry.reap()).await {
                    tracing::error!(error = %e, "reaper pass failed");
                }
            }
        },
        changes,
        token,
    ))
}

/// The reaper's schedule: a pass when the registry says one is due (`next_due`), at most every
/// [`REAP_INTERVAL`] and at least every [`REAP_IDLE`]. A change (a new session, an ending) may
/// bring the due time closer, so it recomputes it; it never pushes it later, so a stream of
/// changes cannot starve a pass. At rest (every session vouched for, nothing lingering) it sleeps
/// [`REAP_IDLE`] instead of waking every second.
async fn reap_loop<F: Future<Output = ()>>(
    next_due: impl Fn() -> Option<Duration>,
    mut reap: impl FnMut() -> F,
    mut changes: tokio::sync::watch::Receiver<u64>,
    token: CancellationToken,
) {
    use tokio::time::Instant;
    let due_at = |earliest: Instant| {
        let wait = next_due().map_or(REAP_IDLE, |d| d.min(REAP_IDLE));
        (Instant::now() + wait).max(earliest)
    };
    let mut earliest = Instant::now();
    let mut next = due_at(earliest);
    let mut registry_open = true;
    loop {
        tokio::select! {
            () = token.cancelled() => break,
            changed = changes.changed(), if registry_open => {
                // A closed registry changes nothing more: only the idle bound is left.
                registry_open = changed.is_ok();
                next = next.min(due_at(earliest));
            }
            () = tokio::time::sleep_until(next) => {
                reap().await;
                earliest = Instant::now() + REAP_INTERVAL;
                next = due_at(earliest);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Runs the reaper's schedule for `secs` of paused time with `due` as the registry's answer
    /// (re-read at each pass); returns the passes' times in seconds from the start.
    async fn reap_times(
        due: impl Fn(Duration) -> Option<Duration> + Send + Sync + 'static,
        secs: u64,
        change_at: Option<u64>,
    ) -> Vec<u64> {
        let start = tokio::time::Instant::now();
        let passes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (seq, changes) = tokio::sync::watch::channel(0u64);
        let token = CancellationToken::new();
        let seen = passes.clone();
        let task = tokio::spawn(reap_loop(
            move || due(start.elapsed()),
            move || {
                seen.lock().unwrap().push(start.elapsed().as_secs());
                std::future::ready(())
            },
            changes,
            token.clone(),
        ));
        for s in 1..=secs {
            tokio::time::sleep_until(start + Duration::from_secs(s)).await;
            if change_at == Some(s) {
                seq.send_replace(s);
            }
        }
        token.cancel();
        task.await.unwrap();
        let times = passes.lock().unwrap().clone();
        times
    }

    #[tokio::test(start_paused = true)]
    async fn at_rest_the_reaper_sleeps_until_something_is_due_not_every_second() {
        // Nothing live: it only looks every REAP_IDLE (the old reaper: 60 passes a minute).
        let idle = reap_times(|_| None, 60, None).await;
        assert!(idle.len() <= 7, "passes at {idle:?}");
        // A linger ending at 25 s: a pass then, not before it is due.
        let linger = reap_times(
            |t| Some(Duration::from_secs(25).saturating_sub(t)),
            30,
            None,
        )
        .await;
        assert!(linger.contains(&25), "passes at {linger:?}");
        // Something due every instant: one pass a second, as before (never a busy loop).
        let busy = reap_times(|_| Some(Duration::ZERO), 10, None).await;
        assert!((9..=11).contains(&busy.len()), "passes at {busy:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_brings_the_reapers_next_pass_closer() {
        // Until 5 s nothing is due; a change at 5 s brings an ending due at 7 s.
        let due = |t: Duration| {
            (t >= Duration::from_secs(5)).then(|| Duration::from_secs(7).saturating_sub(t))
        };
        let times = reap_times(due, 9, Some(5)).await;
        assert!(times.contains(&7), "passes at {times:?}");
    }

    #[test]
    fn a_blocking_thread_stuck_past_shutdown_does_not_keep_the_host_alive() {
        // What a read of a FIFO did to the daemon: a blocking thread no cancellation reaches.
        // Dropping the runtime would wait for it (here 60 s); the bounded shutdown does not.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (stuck_tx, stuck_rx) = std::sync::mpsc::channel::<()>();
        let started = std::time::Instant::now();
        let answer = block_on_bounded(runtime, async move {
            tokio::task::spawn_blocking(move || {
                // Held until the test ends, or 60 s: never within the grace.
                let _ = stuck_rx.recv_timeout(Duration::from_secs(60));
            });
            42
        });
        assert_eq!(answer, 42);
        let took = started.elapsed();
        assert!(
            took < SHUTDOWN_GRACE + Duration::from_secs(2),
            "the host waited {took:?} for a stuck thread"
        );
        drop(stuck_tx);
    }
}
