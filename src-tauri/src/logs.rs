//! The shell's log: where its rolling files are and how they are written.
//!
//! A leaf of its own (no other module of the shell) so that what reads the log folder, as
//! "Reveal logs" in `actions` does, imports it from here and not from the crate root, which
//! imports nearly every module (an import circle through `lib.rs`, see `tests/module_layers.rs`).

use std::path::{Path, PathBuf};

/// Where the rolling log files are ("Reveal logs").
pub struct LogDir(pub PathBuf);

/// Logs to stderr and to a daily rolling file in the data folder. The guard must live as long
/// as the app, or buffered lines are lost.
pub(crate) fn init_logging(log_dir: &Path) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    use tracing_subscriber::prelude::*;
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
    };
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter());
    let (file, guard) = match std::fs::create_dir_all(log_dir) {
        Ok(()) => {
            let appender = tracing_appender::rolling::daily(log_dir, "desktop.log");
            let (writer, guard) = tracing_appender::non_blocking(appender);
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(writer)
                .with_filter(filter());
            (Some(layer), Some(guard))
        }
        Err(_) => (None, None),
    };
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .try_init();
    guard
}
