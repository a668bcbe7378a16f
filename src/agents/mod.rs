//! One folder per agent: everything the tray knows about that agent.

pub mod copilot;
pub mod opencode;
pub mod own_file;
