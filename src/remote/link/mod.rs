//! One `ssh` child per remote, its stream merged into the registry, and the supervisor that keeps
//! the set of links equal to `remotes.json`.
//!
//! A link is a loop: run `ssh -T -o BatchMode=yes … -- DESTINATION agent-tray watch --json
//! --protocol 1`, read its lines (each bounded, parsed by [`super::wire`]), mirror them into the
//! registry; when the child ends, mark the remote's sessions unreachable, say why in one line
//! ([`classify_failure`]) and wait before the next try. Waits back off ([`Backoff`]) so a dead
//! host costs one short-lived `ssh` a minute at most, and end early when the machine wakes from
//! sleep or its routes change ([`should_retry_early`]), or when the remotes are reloaded. A remote
//! that answers but cannot serve (no `agent-tray`, one too old) is retried only every
//! [`UNUSABLE_RETRY`]: a retry cannot fix it, a person has to.
//!
//! The child is `kill_on_drop`, in its own process group, with stdin closed; cancelling the
//! link kills it and waits for it (bounded). Nothing is queued between the child and the
//! registry: the link reads a line and applies it, so a slow registry slows the reading, and
//! `ssh`'s pipe (then the remote's `watch`, which drops a reader that stops reading and is
//! reconnected here) is the only buffer.
//!
//! Three files, one floor each: [`state`] (how each link is doing, as `doctor`, `remote list` and
//! the window read it; how a person reads it is [`super::status`]), [`failure`] (what a failed try
//! means: its class, and when to try again), and [`run`] (running `ssh`, reading its lines into
//! the registry, the supervisor). The names are re-exported here, so `remote::link::X` stays.

pub mod failure;
pub mod run;
pub mod state;

pub use failure::{
    classify_failure, should_retry_early, Backoff, LinkFailure, NetworkMark, ProtocolProblem,
    MAX_BACKOFF, MIN_BACKOFF, STABLE_LINK, UNUSABLE_RETRY,
};
pub use run::{
    spawn, SshCommand, PUBLISH_EVERY, REMOTE_COMMAND, SSH_CONFIG_KNOB, SSH_PROGRAM_KNOB,
};
pub use state::{LinkState, RemoteLinkStatus, RemoteLinks};
