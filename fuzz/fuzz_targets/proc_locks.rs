//! `/proc/locks`: one line per lock on the machine, including other users' locks.
#![no_main]

use agent_tray::feeds::procfs::parse_proc_locks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_proc_locks(text);
    }
});
