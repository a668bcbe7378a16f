//! The local control socket: how the hook, the CLI and scripts talk to the running engine.
//!
//! Newline-delimited JSON over a unix socket (a named pipe on Windows: [`transport`]), one request per line, one reply per line. Each
//! request carries the protocol version (`"v": 1`); a request line is at most [`MAX_LINE`] bytes
//! and each of its fields has a limit; replies have no size limit (clients stream them).
//! See [`protocol`] for the messages, [`client`] for the blocking client the hook and CLI use
//! (no async runtime there: the hook must start in a millisecond), and [`server`] for the engine's
//! side.

pub mod client;
pub mod protocol;
pub mod server;
pub mod transport;

pub use protocol::{ErrorCode, Reply, Request, MAX_LINE, PROTOCOL_VERSION};
