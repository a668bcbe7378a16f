//! Agent Tray's domain: what a session is, the observations that move it, the time decisions are
//! made at, and the rules that turn one into the other.
//!
//! A crate of its own so that cargo keeps the layers: nothing here can import the adapters,
//! the engine, the CLI or the desktop shell above it (they are not dependencies), so the rules
//! stay pure functions of their inputs and are tested without a socket, a file or a process.
//! The core package `agent-tray` re-exports these modules under their old paths
//! (`agent_tray::model`, `agent_tray::clock`, `agent_tray::transition`).

pub mod clock;
pub mod model;
pub mod pending;
pub mod question;
pub mod transition;
pub mod visible;
