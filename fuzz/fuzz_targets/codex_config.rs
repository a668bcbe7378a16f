//! Codex's `hooks.json` and `config.toml`, as `agent-tray install --trust` / `uninstall` plan
//! their edit. The input is both files, split at the first NUL byte. Planning must never panic,
//! and applying a plan twice must change nothing the second time.
#![no_main]

use std::path::Path;

use agent_tray::agents::codex::install::plan_texts;
use agent_tray::install::Action;
use libfuzzer_sys::fuzz_target;

const BIN: &str = "/opt/agent-tray/bin/agent-tray";

fuzz_target!(|data: &[u8]| {
    let (hooks, config) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let (Ok(hooks), Ok(config)) = (std::str::from_utf8(hooks), std::str::from_utf8(config)) else {
        return;
    };
    let hooks_path = Path::new("/nonexistent/hooks.json");
    let config_path = Path::new("/nonexistent/config.toml");
    for (action, trust) in [
        (Action::Install, true),
        (Action::Install, false),
        (Action::Uninstall, false),
    ] {
        let plan = |hooks: &str, config: &str| {
            plan_texts(
                hooks_path,
                Some(hooks),
                config_path,
                Some(config),
                Path::new(BIN),
                action,
                trust,
            )
        };
        let Ok(first) = plan(hooks, config) else {
            continue;
        };
        let new_of = |i: usize, old: &'_ str| -> String {
            first.changes[i]
                .new
                .clone()
                .unwrap_or_else(|| old.to_string())
        };
        let (hooks2, config2) = (new_of(0, hooks), new_of(1, config));
        let again =
            plan(&hooks2, &config2).unwrap_or_else(|e| panic!("our own output is refused: {e}"));
        assert!(
            again.changes.iter().all(|c| c.new.is_none()),
            "{action:?} (trust: {trust}) twice changed a file the second time"
        );
    }
});
