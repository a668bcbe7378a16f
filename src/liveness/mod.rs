//! Is the agent behind a session still running? The pid watcher answers for every session with a
//! pid, and the registry's reaper asks the same rule before it ends a silent one.
//!
//! The probes themselves (alive, zombie, start token) live in [`crate::process`], shared with the
//! file feeds and the hook's pid walk, so every part of the engine answers "which process, and is
//! it still the same one" the same way.

pub mod exit_event;
pub mod pid_watcher;
pub mod plan;
