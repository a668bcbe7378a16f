//! `agent-tray remote add NAME DESTINATION | list | remove NAME`.
//!
//! The file is the truth (`remotes.json`, replaced atomically); the running engine is told to
//! reread it, and connects or disconnects at once. Without a running engine the change waits for
//! the next start. `list` shows each link's state when an engine runs.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use serde::Serialize;

use crate::control::client::ControlClient;
use crate::control::protocol::Request;
use crate::paths::{PathsError, TrayPaths};
use crate::remote::config::{self, remotes_path, RemoteConfigError, RemoteEntry};
use crate::remote::link::RemoteLinkStatus;
pub use crate::remote::status::{describe, link_statuses};

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

/// Tells the running engine to reread the remotes; false when none runs.
fn nudge(paths: &TrayPaths) -> bool {
    ControlClient::connect(&paths.socket, BUDGET)
        .and_then(|mut c| c.request_typed::<serde_json::Value>(&Request::ReloadRemotes))
        .is_ok()
}

/// Why a `remote` command failed; each text is its source's, printed after `agent-tray: `.
#[derive(Debug, thiserror::Error)]
pub enum RemoteCliError {
    #[error(transparent)]
    Paths(#[from] PathsError),
    /// `remotes.json` could not be read or changed, or the name or destination was refused.
    #[error(transparent)]
    Config(#[from] RemoteConfigError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// One element of `remote list --json` (a public contract: the names stay). Typed like the
/// control socket's replies, so its shape is checked by the compiler rather than by eye.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteListRow {
    pub name: String,
    pub destination: String,
    /// The link as the running engine reports it; null when no engine runs or it has not begun.
    pub link: Option<RemoteLinkStatus>,
}

/// The rows of `remote list --json`: every configured remote in the file's order, each with its
/// link's status when the engine (`links`) knows of it.
pub fn list_rows(
    remotes: &[RemoteEntry],
    links: Option<&[RemoteLinkStatus]>,
) -> Vec<RemoteListRow> {
    remotes
        .iter()
        .map(|r| RemoteListRow {
            name: r.name.clone(),
            destination: r.destination.clone(),
            link: links.and_then(|l| l.iter().find(|s| s.name == r.name).cloned()),
        })
        .collect()
}

pub fn run(command: RemoteCommand) -> Result<ExitCode, RemoteCliError> {
    let paths = TrayPaths::from_env()?;
    let file = remotes_path(&paths.data_dir);
    let mut out = std::io::stdout().lock();
    match command {
        RemoteCommand::Add { name, destination } => {
            config::add(&file, &name, &destination)?;
            let when = if nudge(&paths) {
                "Agent Tray connects now"
            } else {
                "Agent Tray connects when it starts"
            };
            let _ = writeln!(out, "added remote {name} ({destination}); {when}");
        }
        RemoteCommand::Remove { name } => {
            let entry = config::remove(&file, &name)?;
            nudge(&paths);
            let _ = writeln!(out, "removed remote {} ({})", entry.name, entry.destination);
        }
        RemoteCommand::List { json } => {
            let (remotes, _) = config::load(&file)?;
            let links = link_statuses(&paths);
            let link_of = |name: &str| {
                links
                    .as_ref()
                    .and_then(|l| l.iter().find(|s| s.name == name).cloned())
            };
            if json {
                let rows = list_rows(&remotes.remotes, links.as_deref());
                let text = serde_json::to_string_pretty(&rows)?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::remote::link::LinkState;

    fn entry(name: &str, destination: &str) -> RemoteEntry {
        RemoteEntry {
            name: name.into(),
            destination: destination.into(),
        }
    }

    #[test]
    fn remote_list_json_keeps_its_field_names_order_and_the_link_of_each_remote() {
        // Two remotes, the engine running and connected to one of them: a script reading
        // `remote list --json` must see exactly the text it saw when the rows were built by hand
        // (names, key order, a null link for the one the engine has not reported).
        let since = chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let link = RemoteLinkStatus {
            name: "box".into(),
            destination: "dev@box.example".into(),
            state: LinkState::Connected,
            since,
            message: None,
            sessions: 2,
            remote_version: Some("0.1.0".into()),
        };
        let remotes = [entry("box", "dev@box.example"), entry("pi", "pi.local")];
        let rows = list_rows(&remotes, Some(std::slice::from_ref(&link)));
        let typed = serde_json::to_string_pretty(&rows).unwrap();
        let by_hand = serde_json::to_string_pretty(&serde_json::json!([
            {"name": "box", "destination": "dev@box.example", "link": link},
            {"name": "pi", "destination": "pi.local", "link": null},
        ]))
        .unwrap();
        assert_eq!(typed, by_hand);
    }

    #[test]
    fn remote_list_json_says_null_links_when_no_engine_runs() {
        // The tray is not running: every link is null, not missing, so scripts can tell.
        let rows = list_rows(&[entry("box", "dev@box.example")], None);
        assert_eq!(
            serde_json::to_value(&rows).unwrap(),
            serde_json::json!([{"name": "box", "destination": "dev@box.example", "link": null}])
        );
    }
}
