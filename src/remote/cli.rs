//! `agent-tray remote add NAME DESTINATION | list | remove NAME`.
//!
//! The file is the truth (`remotes.json`, replaced atomically); the running engine is told to
//! reread it, and connects or disconnects at once. Without a running engine the change waits for
//! the next start. `list` shows each link's state when an engine runs.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use super::config::{self, remotes_path};
use super::link::RemoteLinkStatus;
use crate::cli::escape_controls;
use crate::control::client::ControlClient;
use crate::control::protocol::{Request, TypedReply};
use crate::paths::TrayPaths;

const BUDGET: Duration = Duration::from_secs(3);

#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Add a remote: NAME is what the tray calls it, DESTINATION what `ssh` takes (a host alias
    /// of ~/.ssh/config, user@host, ssh://user@host:port).
    Add { name: String, destination: String },
    /// The remotes, and how each link is doing when Agent Tray runs.
    List {
        /// One JSON array: `name`, `destination`, and `link` (null when no engine runs).
        #[arg(long)]
        json: bool,
    },
    /// Remove a remote (its sessions leave the tray).
    Remove { name: String },
}

/// Asks the running engine for its links' statuses; `None` when none runs.
pub fn link_statuses(paths: &TrayPaths) -> Option<Vec<RemoteLinkStatus>> {
    let mut client = ControlClient::connect(&paths.socket, BUDGET).ok()?;
    let reply: TypedReply<Vec<RemoteLinkStatus>> = client.request_typed(&Request::Remotes).ok()?;
    reply.into_result().ok()
}

/// Tells the running engine to reread the remotes; false when none runs.
fn nudge(paths: &TrayPaths) -> bool {
    ControlClient::connect(&paths.socket, BUDGET)
        .and_then(|mut c| c.request_typed::<serde_json::Value>(&Request::ReloadRemotes))
        .is_ok()
}

pub fn run(command: RemoteCommand) -> Result<ExitCode, String> {
    let paths = TrayPaths::from_env().map_err(|e| e.to_string())?;
    let file = remotes_path(&paths.data_dir);
    let mut out = std::io::stdout().lock();
    match command {
        RemoteCommand::Add { name, destination } => {
            config::add(&file, &name, &destination).map_err(|e| e.to_string())?;
            let when = if nudge(&paths) {
                "Agent Tray connects now"
            } else {
                "Agent Tray connects when it starts"
            };
            let _ = writeln!(out, "added remote {name} ({destination}); {when}");
        }
        RemoteCommand::Remove { name } => {
            let entry = config::remove(&file, &name).map_err(|e| e.to_string())?;
            nudge(&paths);
            let _ = writeln!(out, "removed remote {} ({})", entry.name, entry.destination);
        }
        RemoteCommand::List { json } => {
            let (remotes, _) = config::load(&file).map_err(|e| e.to_string())?;
            let links = link_statuses(&paths);
            let link_of = |name: &str| {
                links
                    .as_ref()
                    .and_then(|l| l.iter().find(|s| s.name == name).cloned())
            };
            if json {
                let rows: Vec<serde_json::Value> = remotes
                    .remotes
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "name": r.name, "destination": r.destination, "link": link_of(&r.name)
                        })
                    })
                    .collect();
                let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
                let _ = writeln!(out, "{text}");
            } else if remotes.remotes.is_empty() {
                let _ = writeln!(
                    out,
                    "No remotes. Add one: agent-tray remote add NAME DESTINATION"
                );
            } else {
                for r in &remotes.remotes {
                    let state = match link_of(&r.name) {
                        Some(s) => describe(&s),
                        None if links.is_none() => "(Agent Tray is not running)".into(),
                        None => "starting".into(),
                    };
                    let _ = writeln!(out, "{}\t{}\t{}", r.name, r.destination, state);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One status as a line for people (the message escaped: it may quote the remote's stderr).
pub fn describe(status: &RemoteLinkStatus) -> String {
    use super::link::LinkState;
    let since = status.since.format("%Y-%m-%d %H:%M:%S UTC");
    let text = match status.state {
        LinkState::Connected => format!("connected, {} sessions", status.sessions),
        LinkState::Connecting => "connecting".to_string(),
        LinkState::Unreachable | LinkState::NotRunning | LinkState::Unusable => format!(
            "unreachable since {since}: {}",
            status.message.as_deref().unwrap_or("")
        ),
    };
    escape_controls(&text).into_owned()
}
