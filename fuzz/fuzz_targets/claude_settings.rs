//! Claude Code's `settings.json`, as `agent-tray install` / `uninstall` plan their edit: the
//! user's file, written by hand or by any other tool. Planning must never panic, and applying a
//! plan twice must change nothing the second time.
#![no_main]

use std::path::Path;

use agent_tray::agents::claude::install::plan_text;
use agent_tray::install::Action;
use libfuzzer_sys::fuzz_target;

const BIN: &str = "/opt/agent-tray/bin/agent-tray";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("/nonexistent/settings.json");
    for action in [Action::Install, Action::Uninstall] {
        let Ok(plan) = plan_text(path, Some(text), Path::new(BIN), action) else {
            continue;
        };
        // Idempotence: planning the same action on the result changes nothing.
        if let Some(new) = plan.changes.first().and_then(|c| c.new.as_deref()) {
            let again = plan_text(path, Some(new), Path::new(BIN), action)
                .unwrap_or_else(|e| panic!("our own output is refused: {e}"));
            assert!(
                again.changes.iter().all(|c| c.new.is_none()),
                "{action:?} twice changed the file the second time"
            );
        }
    }
});
