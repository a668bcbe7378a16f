//! Agent Tray's core: knows every AI coding-agent session on this machine and what it is doing.
//!
//! No GUI here and no Tauri: the desktop shell and `agent-tray daemon` both host the [`engine`].

// The domain crate's modules, under the paths the rest of the code (and the desktop shell,
// the tests, the benches and the fuzz targets) has always used.
pub use agent_tray_domain::{clock, model, transition};

pub mod agent_pid;
pub mod agents;
pub mod answering;
pub mod app_install;
pub mod app_launch;
pub mod atomic_file;
pub mod bounded_lines;
pub mod catalogue;
pub mod cli;
pub mod control;
pub mod delivery;
pub mod doctor;
pub mod duration_text;
pub mod engine;
pub mod env_knobs;
pub mod feeds;
pub mod folder_wake;
pub mod hook;
pub mod hook_drift;
pub mod hook_payload;
pub mod install;
pub mod install_command;
pub mod journal;
pub mod jump;
pub mod liveness;
pub mod notify_policy;
pub mod os_fs;
pub mod paths;
pub mod plan_limits;
pub mod process;
pub mod registry;
pub mod remote;
pub mod shell_policy;
pub mod status;
pub mod status_line;
pub mod store;
pub mod talk_back;
pub mod terminal_text;
#[cfg(test)]
pub(crate) mod test_executables;
#[cfg(test)]
pub(crate) mod test_support;
pub mod tray_model;
pub mod usage;
#[cfg(windows)]
pub mod win_process;
pub mod window_rows;
