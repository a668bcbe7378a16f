//! What the running engine says of its remote links, and how a person reads it: shared by
//! `agent-tray remote list` and `doctor`, so `doctor` (an adapter) need not import the command
//! line's module.

use std::time::Duration;

use super::link::{LinkState, RemoteLinkStatus};
use crate::control::client::ControlClient;
use crate::control::protocol::{Request, TypedReply};
use crate::paths::TrayPaths;
use crate::terminal_text::escape_controls;

/// How long asking the engine may take.
const BUDGET: Duration = Duration::from_secs(3);

/// Asks the running engine for its links' statuses; `None` when none runs.
pub fn link_statuses(paths: &TrayPaths) -> Option<Vec<RemoteLinkStatus>> {
    let mut client = ControlClient::connect(&paths.socket, BUDGET).ok()?;
    let reply: TypedReply<Vec<RemoteLinkStatus>> = client.request_typed(&Request::Remotes).ok()?;
    reply.into_result().ok()
}

/// One status as a line for people (the message escaped: it may quote the remote's stderr).
pub fn describe(status: &RemoteLinkStatus) -> String {
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
