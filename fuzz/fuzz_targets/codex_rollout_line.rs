//! Codex rollout lines (`sessions/YYYY/MM/DD/rollout-…jsonl`), and the thread id in a rollout's
//! file name.
#![no_main]

use std::path::Path;

use agent_tray::agents::codex::rollouts::{parse_rollout_line, thread_id_of};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_rollout_line(data);
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = thread_id_of(Path::new(&format!("rollout-{name}.jsonl")));
    }
});
