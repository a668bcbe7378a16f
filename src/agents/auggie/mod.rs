//! Auggie, Augment Code's CLI (`@augmentcode/auggie`): hooks in Claude Code's settings shape in
//! `~/.augment/settings.json` (`hooks.<Event>: [{matcher?, hooks: [{type, command, timeout?}]}]`)
//! for its seven events (`SessionStart`, `SessionEnd`, `PromptSubmit`, `PreToolUse`,
//! `PostToolUse`, `Notification`, `Stop`), read in the 0.36.0 bundle.
//!
//! Its payloads say Claude's things under other keys (`conversation_id`, `workspace_roots`,
//! `PromptSubmit`'s `user_prompt`): [`AgentAdapter::standard_shaped_payload`] renames them, then the
//! standard parser reads them, so the pid walk, the repository and the states are the same code
//! as Claude's. Its tool matcher is a regular expression (`*` is refused by its validator), so
//! our tool entries carry none: it defaults to `.*`.
//!
//! From its documentation and package only: Auggie runs only signed in to Augment's service and
//! talks to no model API a mock could stand in for, so no session was seen here. It has no
//! permission hook an outside program could answer (its tool policies take a script, a policy
//! the user sets, not a request shown to them), so nothing is answered from here.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::settings_hooks::SettingsHooks;
use super::{standard_hook_event, AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::findings::Finding;
use crate::hook_payload::HookFields;
use crate::install::{Action, InstallError, Plan};
use crate::model::Agent;

/// Auggie's adapter.
pub struct Auggie;

/// Its events (none with a matcher of ours: see the module comment).
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("PromptSubmit", false),
    ("PreToolUse", false),
    ("PostToolUse", false),
    ("Notification", false),
    ("Stop", false),
    ("SessionEnd", false),
];

fn auggie_entry(_event: &str, command: String) -> Value {
    json!({"type": "command", "command": command})
}

/// Our hooks in its settings file.
pub const HOOKS: SettingsHooks = SettingsHooks {
    agent: Agent::Auggie,
    events: EVENTS,
    entry: auggie_entry,
    fix: "agent-tray install --auggie",
};

/// Auggie's payload in Claude's keys: `conversation_id` → `session_id`, the first of
/// `workspace_roots` → `cwd`, `PromptSubmit` → `UserPromptSubmit` (`user_prompt` → `prompt`).
/// `None` for anything that is not a JSON object.
pub fn rename_to_claude_keys(payload: &[u8]) -> Option<Vec<u8>> {
    let Value::Object(mut doc) = serde_json::from_slice::<Value>(payload).ok()? else {
        return None;
    };
    let put = |doc: &mut Map<String, Value>, key: &str, value: Option<Value>| {
        if let Some(value) = value {
            doc.entry(key.to_string()).or_insert(value);
        }
    };
    let id = doc.get("conversation_id").cloned();
    put(&mut doc, "session_id", id);
    let root = doc
        .get("workspace_roots")
        .and_then(Value::as_array)
        .and_then(|roots| roots.first())
        .cloned();
    put(&mut doc, "cwd", root);
    if doc.get("hook_event_name").and_then(Value::as_str) == Some("PromptSubmit") {
        doc.insert("hook_event_name".into(), json!("UserPromptSubmit"));
        let prompt = doc.get("user_prompt").cloned();
        put(&mut doc, "prompt", prompt);
    }
    serde_json::to_vec(&doc).ok()
}

impl AgentAdapter for Auggie {
    fn agent(&self) -> Agent {
        Agent::Auggie
    }

    fn standard_shaped_payload(&self, payload: &[u8]) -> Option<Vec<u8>> {
        rename_to_claude_keys(payload)
    }
    fn hook_event(&self, name: &str, _fields: &HookFields) -> HookEvent {
        standard_hook_event(name)
    }

    fn config_dir(&self) -> Option<PathBuf> {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".augment"))
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join("settings.json")
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        _options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        HOOKS.plan(&self.hooks_file(dir), bin, action)
    }

    fn doctor_hooks(&self, _agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        let path = self.config_dir().map(|d| self.hooks_file(&d));
        HOOKS.doctor(path, "set HOME", bin)
    }
    /// What it sends at a session's start, in its own keys.
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        json!({
            "hook_event_name": "SessionStart",
            "conversation_id": probe_id,
            "workspace_roots": [crate::doctor::findings::probe_cwd()],
            "probe": true,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
