//! `/proc/<pid>/stat` lines. The command name in parentheses is chosen by whoever started the
//! process (`prctl(PR_SET_NAME)`, or the executable's name), so it may hold spaces, parentheses
//! and any bytes: every field after it must be found after the LAST `)`.
#![no_main]

use agent_tray::agent_pid::parent_and_comm;
use agent_tray::liveness::{parent_and_name_from_stat, start_time_from_stat, state_from_stat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The engine reads the file with `read_to_string`: only UTF-8 reaches the parsers.
    let Ok(stat) = std::str::from_utf8(data) else {
        return;
    };
    let _ = start_time_from_stat(stat);
    let _ = state_from_stat(stat);
    let a = parent_and_name_from_stat(stat);
    let b = parent_and_comm(stat);
    // Two copies of the same parser must agree (until they become one).
    assert_eq!(a, b, "the two /proc stat parsers disagree");
});
