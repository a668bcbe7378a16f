//! A permission request's suggestions for "allow for this session", as the hook reads them from
//! the agent's payload. A prompt-injected agent shapes them; reading them must never panic, and
//! what is handed back must be exactly what was shown.
#![no_main]

use agent_tray::answering::grant::{session_grant, updated_permissions, SUGGESTIONS_FIELD};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(payload) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let grant = session_grant(&payload);
    let handed = updated_permissions(&payload);
    let offered = grant.as_ref().is_some_and(|g| g.is_offered());
    assert_eq!(handed.is_some(), offered, "a grant is handed back only where it is shown");
    if let (Some(grant), Some(handed)) = (grant, handed) {
        assert!(grant.withheld.is_none());
        assert_eq!(handed.as_array().map(Vec::len), Some(grant.items.len()));
        for item in &grant.items {
            assert!(!item.text.chars().any(char::is_control), "{:?}", item.text);
        }
        // What is handed back, read again, says the same items: nothing unshown rides along.
        let mut again = serde_json::Map::new();
        again.insert(SUGGESTIONS_FIELD.to_string(), handed);
        let again = serde_json::Value::Object(again);
        assert_eq!(session_grant(&again), Some(grant));
    }
});
