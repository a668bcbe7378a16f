//! The engine: the registry and everything that feeds it, started as cancellable tasks.
//!
//! Two hosts run it: `agent-tray daemon` (headless) and the desktop app (in-process). Both get the
//! same socket, so the hook, `list` and `doctor` work against either. Starting a second engine
//! while one runs fails with [`BindError::AlreadyRunning`], which names the running one.
//!
//! Every background task takes a child of one [`CancellationToken`]; [`Engine::shutdown`] cancels
//! it and waits (bounded) for the tasks, so a host exits cleanly and the socket file is removed.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::SystemClock;
use crate::control::server::{BindError, ControlServer};
use crate::liveness::pid_watcher;
use crate::paths::{PathsError, TrayPaths};
use crate::registry::{RegistryConfig, SessionsRegistry};

/// How often the reaper looks for silent sessions and finished lingers.
const REAP_INTERVAL: Duration = Duration::from_secs(1);
/// How long shutdown waits for tasks before leaving them to the runtime's end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

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
    token: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    config: EngineConfig,
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
        // The history writer subscribes first, so it sees every change the others cause.
        let mut tasks: Vec<JoinHandle<()>> = config
            .history_days
            .map(|retention_days| {
                let writer = crate::store::writer::WriterConfig {
                    path: crate::store::store_path(&config.paths.data_dir),
                    retention_days,
                };
                crate::store::writer::spawn(registry.clone(), writer, token.child_token())
            })
            .into_iter()
            .collect();
        tasks.extend([
            server.spawn(registry.clone(), token.child_token()),
            pid_watcher::spawn(
                registry.clone(),
                config.pid_watch_interval,
                token.child_token(),
            ),
            spawn_reaper(registry.clone(), token.child_token()),
        ]);
        tasks.extend(Self::spawn_feeds(&config, &registry, &token));
        tracing::info!(
            host = config.host.as_str(),
            socket = %config.paths.socket.display(),
            ttl_secs = config.registry.session_ttl.as_secs_f64(),
            "engine_started"
        );
        Ok(Engine {
            registry,
            token,
            tasks,
            config,
        })
    }

    /// The feeds beyond the socket: journal replay and the agents' own files.
    fn spawn_feeds(
        config: &EngineConfig,
        registry: &Arc<SessionsRegistry>,
        token: &CancellationToken,
    ) -> Vec<JoinHandle<()>> {
        let _ = (config, registry, token);
        let mut tasks = vec![crate::journal::spawn_replay(
            registry.clone(),
            config.paths.clone(),
            token.child_token(),
        )];
        if config.discover_files {
            let feeds = crate::feeds::FeedConfig::new(
                crate::feeds::FeedDirs::from_env(),
                config.registry.session_ttl,
            );
            tasks.extend(crate::feeds::spawn_all(
                registry.clone(),
                feeds,
                token.child_token(),
            ));
        }
        tasks
    }

    pub fn registry(&self) -> &Arc<SessionsRegistry> {
        &self.registry
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// A token cancelled when the engine shuts down (hosts hang their own tasks on it).
    pub fn cancellation(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Cancels every task and waits for them, at most a few seconds.
    pub async fn shutdown(self) {
        self.token.cancel();
        let all = futures_join(self.tasks);
        if tokio::time::timeout(SHUTDOWN_GRACE, all).await.is_err() {
            tracing::warn!("engine tasks did not stop in time");
        }
        tracing::info!("engine_stopped");
    }
}

async fn futures_join(tasks: Vec<JoinHandle<()>>) {
    for task in tasks {
        if let Err(e) = task.await {
            if e.is_panic() {
                tracing::error!(error = %e, "an engine task panicked");
            }
        }
    }
}

fn spawn_reaper(registry: Arc<SessionsRegistry>, token: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(REAP_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                _ = ticks.tick() => registry.reap(),
            }
        }
    })
}
