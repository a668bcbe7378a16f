//! The local control socket: how the hook, the CLI and scripts talk to the running engine.
//!
//! Newline-delimited JSON over a unix socket (a named pipe on Windows: [`transport`]), one request per line, one reply per line. Each
//! request carries the protocol version (`"v": 1`); a request line is at most [`MAX_LINE`] bytes
//! and each of its fields has a limit; replies have no size limit (clients stream them).
//! See [`protocol`] for the messages, [`client`] for the blocking client the hook and CLI use
//! (no async runtime there: the hook must start in a millisecond). The engine's side, which
//! answers from the registry and the answering book, is `crate::engine::control_server`: this
//! module is only the wire, so everything may use it.

pub mod client;
pub mod protocol;
pub mod transport;

pub use protocol::{ErrorCode, Reply, Request, MAX_LINE, PROTOCOL_VERSION};
