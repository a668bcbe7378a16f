//! Journal files: written by the hook, but read back after crashes, disk-full cuts, and by
//! whatever else can write to the user's data folder. Every record read must write back the same.
#![no_main]

use agent_tray::journal::parse_lines;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for record in parse_lines(data) {
        // Round trip: a record the engine accepted, journaled again, reads back identical.
        let mut line = serde_json::to_vec(&record).expect("a journal record serialises");
        line.push(b'\n');
        let back = parse_lines(&line);
        assert_eq!(
            back,
            vec![record],
            "a journal record does not survive a round trip"
        );
    }
});
