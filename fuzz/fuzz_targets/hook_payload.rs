//! A hook's stdin, as `agent-tray hook` reads it (up to 1 MiB, possibly cut in the middle).
//! Anyone who can run a program as the user can send anything here; it must never panic.
#![no_main]

use agent_tray::agents::Adapters;
use agent_tray::hook_payload::parse_hook;
use agent_tray::model::Agent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the `--agent` flag the installers pass (or none), the rest is stdin.
    let Some((flag, payload)) = data.split_first() else {
        return;
    };
    let hint = match flag % 3 {
        0 => None,
        1 => Some(Agent::Claude),
        _ => Some(Agent::Codex),
    };
    if let Ok(parsed) = parse_hook(payload, hint, &Adapters) {
        let obs = parsed.into_observation(chrono::DateTime::UNIX_EPOCH, None, &Adapters);
        // What the hook journals and sends must serialise.
        let json = serde_json::to_value(&obs).expect("an observation serialises");
        // Every string is capped, so a hostile payload cannot make a record or a socket line
        // large (the widest field, a path, is kept up to 4 KiB).
        if let serde_json::Value::Object(fields) = json {
            for (name, value) in fields {
                if let serde_json::Value::String(text) = value {
                    assert!(text.len() <= 4096, "{name} kept {} bytes", text.len());
                }
            }
        }
    }
});
