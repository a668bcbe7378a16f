//! Remotes: agents on other machines in the same tray, over the SSH the user already trusts.
//!
//! Why it is shaped this way:
//! - **No port of our own.** The remote host runs `agent-tray daemon` as it would locally; this
//!   side runs one plain `ssh -T -o BatchMode=yes DESTINATION agent-tray watch --json --protocol 1`
//!   per remote ([`link`]). OpenSSH brings its config, agent, keys, ProxyJump and ControlMaster;
//!   `BatchMode` means it never prompts. Nothing here listens on the network.
//! - **The remote is data, never a command.** Its output is parsed line by line into typed
//!   sessions with the same field limits as the control socket ([`wire`]); a line that is not
//!   what the protocol says is dropped. Nothing a remote sends names a program to run: the only
//!   command lines built for a remote (jump, resume) come from the local configuration and a
//!   validated session id, each word shell-quoted ([`command`]).
//! - **A mirror, not a second set of rules.** A remote session keeps its remote state and times:
//!   the registry holds each remote's picture beside its own sessions
//!   ([`crate::registry::SessionsRegistry::set_remote_sessions`]) and publishes the difference.
//!   The TTL, the pid watcher and the history store never touch it: the remote has its own.
//! - **A cut link is not an ending.** While a remote cannot be heard, its sessions show
//!   `unreachable_since` and keep their last state (no `ended`, so no "died" alert); a reconnect's
//!   snapshot settles what happened meanwhile through one pure function ([`reconcile`]).
//! - **One clear line, not a retry storm.** A remote without `agent-tray`, or with one too old to
//!   speak [`REMOTE_PROTOCOL`], is told apart from a network failure ([`link::classify_failure`])
//!   and retried only rarely; network failures back off up to a cap ([`link::Backoff`]), and
//!   retry at once when the machine wakes or its routes change.

pub mod command;
pub mod config;
pub mod link;
pub mod reconcile;
pub mod status;
pub mod wire;

pub use crate::control::protocol::REMOTE_PROTOCOL;
pub use config::{RemoteEntry, RemotesFile};
pub use link::{LinkState, RemoteLinkStatus, RemoteLinks, SshCommand};
