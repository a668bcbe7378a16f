//! Claude Code's live-session files (`sessions/<pid>.json`): read whenever they change.
#![no_main]

use agent_tray::agents::claude::sessions::{observation_of, parse_sessions_file};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = parse_sessions_file(data) {
        let pid = file.pid.unwrap_or(1);
        let _ = observation_of(&file, pid, chrono::DateTime::UNIX_EPOCH);
    }
});
