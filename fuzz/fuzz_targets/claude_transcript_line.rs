//! Claude Code transcript lines (`projects/<dir>/<session>.jsonl`): a vendor-internal format
//! that holds whatever the user, the model and the tools wrote.
#![no_main]

use agent_tray::agents::claude::transcripts::{observations_of, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Every line of the input, as the feed reads an appended chunk, then the observations of them.
    let lines: Vec<_> = data
        .split(|b| *b == b'\n')
        .filter_map(|l| parse_line(l).ok())
        .collect();
    let mut fields = (None, None, None);
    let _ = observations_of("s", "/t.jsonl", &lines, &mut fields);
});
