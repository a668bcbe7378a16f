//! Claude Code's status-line input (what `agent-tray status-line` reads on every redraw), and
//! the `statusLine` edit of `install --status-line` on any settings text.
#![no_main]

use std::path::Path;

use agent_tray::agents::claude::status_line::{parse, plan_text};
use agent_tray::install::Action;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((obs, limits)) = parse(data, chrono::DateTime::UNIX_EPOCH) {
        assert!(limits.len() <= 2);
        assert!(limits.iter().all(|w| (0.0..=100.0).contains(&w.used_percent)));
        let _ = obs.admit();
    }
    // The settings edit refuses nothing silently: either it plans valid JSON or it says why.
    if let Ok(text) = std::str::from_utf8(data) {
        if serde_json::from_str::<serde_json::Value>(text).is_ok() {
            let path = Path::new("/h/.claude/settings.json");
            let bin = Path::new("/opt/agent-tray");
            for action in [Action::Install, Action::Uninstall] {
                if let Ok(plan) = plan_text(path, text, bin, action, true, None) {
                    if let Some(new) = plan.new_text {
                        assert!(serde_json::from_str::<serde_json::Value>(&new).is_ok());
                    }
                }
            }
        }
    }
});
