//! Qoder CLI (`@qoder-ai/qodercli`): hooks in Claude Code's shape in `~/.qoder/settings.json`
//! (`$QODER_CONFIG_DIR` moves the folder), with Claude's event names and payload fields
//! (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `model`, `permission_mode`: read
//! in the 1.1.52 bundle, which builds every hook input from one base of those keys).
//!
//! From its documentation and package only: Qoder runs only signed in to Qoder's own service
//! ("Not logged in · Please run /login", and no provider URL could point it at a mock), so no
//! session was seen here. Hence what is not claimed: its `PermissionRequest` is listed (the
//! session waits) but not answered from here, since the decision's shape could not be tried.
//! Its own events that say nothing of a session's state (`TaskCreated`, `TaskCompleted`,
//! `PermissionDenied`, `ElicitationResult`) are ignored.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::settings_hooks::SettingsHooks;
use super::{standard_hook_event, AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::findings::Finding;
use crate::hook_payload::HookFields;
use crate::install::{Action, InstallError, Plan};
use crate::model::{Agent, EventKind};

/// Qoder CLI's adapter.
pub struct QoderCli;

/// The events we register (Claude's names), and whether they take a tool matcher.
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("UserPromptSubmit", false),
    ("PreToolUse", true),
    ("PermissionRequest", true),
    ("PostToolUse", true),
    ("PostToolUseFailure", true),
    ("Notification", false),
    ("Stop", false),
    ("SubagentStart", false),
    ("SubagentStop", false),
    ("PreCompact", false),
    ("SessionEnd", false),
];

fn qoder_entry(_event: &str, command: String) -> Value {
    json!({"type": "command", "command": command})
}

/// Our hooks in its settings file.
pub const HOOKS: SettingsHooks = SettingsHooks {
    agent: Agent::Qoder,
    events: EVENTS,
    entry: qoder_entry,
    fix: "agent-tray install --qoder",
};

impl AgentAdapter for QoderCli {
    fn agent(&self) -> Agent {
        Agent::Qoder
    }

    fn hook_event(&self, name: &str, _fields: &HookFields) -> HookEvent {
        match name {
            "TaskCreated" | "TaskCompleted" | "PermissionDenied" | "ElicitationResult" => {
                HookEvent::Ignored
            }
            _ => standard_hook_event(name),
        }
    }
    /// A transcript under `.qoder/`.
    fn payload_evidence(&self, fields: &HookFields, _event: EventKind) -> u8 {
        match fields.transcript_path.as_deref() {
            Some(p) if p.contains("/.qoder/") => 3,
            _ => 0,
        }
    }

    fn config_dir(&self) -> Option<PathBuf> {
        super::home_dir_or("QODER_CONFIG_DIR", ".qoder")
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
        HOOKS.doctor(path, "set HOME or QODER_CONFIG_DIR", bin)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
