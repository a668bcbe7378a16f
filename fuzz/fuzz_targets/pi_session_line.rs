//! Pi session-file lines (`sessions/--<folder>--/<time>_<id>.jsonl`) through to observations,
//! and the session id in a session file's name.
#![no_main]

use std::path::Path;

use agent_tray::agents::pi::sessions::{observations_of, parse_line, session_id_of, Fields};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lines: Vec<_> = data
        .split(|b| *b == b'\n')
        .filter_map(|l| parse_line(l).ok())
        .collect();
    let _ = observations_of("s", "/p.jsonl", &lines, &mut Fields::default());
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = session_id_of(Path::new(&format!("{name}.jsonl")));
    }
});
