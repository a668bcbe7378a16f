//! `/proc/<pid>/stat` lines. The command name in parentheses is chosen by whoever started the
//! process (`prctl(PR_SET_NAME)`, or the executable's name), so it may hold spaces, parentheses
//! and any bytes: every field after it must be found after the LAST `)`.
#![no_main]

use agent_tray::process::parse_stat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The engine reads the file with `read_to_string`: only UTF-8 reaches the parser.
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_stat(line);
});
