//! Codex's `notify` argument: the JSON Codex appends to `agent-tray notify --agent codex`.
#![no_main]

use agent_tray::agents::codex::notify::observation_from_notify;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // An argv element is never NUL-containing, but it can be any other bytes; Rust gets it lossily.
    let json = String::from_utf8_lossy(data);
    let _ = observation_from_notify(&json, chrono::DateTime::UNIX_EPOCH);
});
