//! Claude Code's hooks in `settings.json`: which events we register and the entry we write;
//! the byte-safe editing is the shared [`crate::install::hooks_json`].

use std::path::Path;

use serde_json::{json, Value};

use crate::install::hooks_json::{self, HookSpec};
use crate::install::{read_optional, Action, InstallError, Plan};
use crate::model::Agent;

/// Every Claude event that matters to the state (formats.md), and whether it takes a tool
/// matcher. Interrupt is Codex's alone.
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("UserPromptSubmit", false),
    ("PreToolUse", true),
    ("PermissionRequest", true),
    ("PostToolUse", true),
    ("PostToolUseFailure", true),
    ("Notification", false),
    ("Stop", false),
    ("StopFailure", false),
    ("SubagentStart", false),
    ("SubagentStop", false),
    ("PreCompact", false),
    ("PostCompact", false),
    ("SessionEnd", false),
    // Added after 2.1.240 (all present in 2.1.328, the version the real-agent suite runs).
    ("Elicitation", false),
    ("ElicitationResult", false),
    ("PermissionDenied", true),
    ("PostToolBatch", false),
    ("CwdChanged", false),
    ("PreModelSwitch", false),
    ("PostModelSwitch", false),
    ("TaskCreated", false),
    ("TaskCompleted", false),
    ("TeammateIdle", false),
];

/// Our hook timeout, in seconds (the hook itself gives up after about 100 ms).
const TIMEOUT_SECS: u64 = 10;

/// The `PermissionRequest` hook's timeout, in seconds: Claude's own default. The hook waits
/// there for an answer from the tray while the terminal's dialog stays open beside it (the first
/// answer wins), and gives up by itself before this.
pub const PERMISSION_TIMEOUT_SECS: u64 = 600;

/// Claude's entry: async (Claude does not wait for it) except SessionEnd, which runs as Claude
/// exits and must finish first, and PermissionRequest and Elicitation, whose printed output is
/// the answer from the tray (Claude reads only a synchronous hook's output). An Elicitation hook
/// with nothing to wait for (answering forms is opt-in) returns in about a millisecond.
fn claude_entry(event: &str, command: String) -> Value {
    match event {
        "SessionEnd" => json!({"type": "command", "command": command, "timeout": TIMEOUT_SECS}),
        "PermissionRequest" | "Elicitation" => {
            json!({"type": "command", "command": command, "timeout": PERMISSION_TIMEOUT_SECS})
        }
        _ => json!({"type": "command", "command": command, "async": true, "timeout": TIMEOUT_SECS}),
    }
}

/// Our hooks for `settings.json`.
pub fn spec(bin: &Path) -> HookSpec<'_> {
    HookSpec::for_events(Agent::Claude, bin, EVENTS, claude_entry)
}

/// The pure plan for `settings.json` given its current text.
pub fn plan_text(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    action: Action,
) -> Result<Plan, InstallError> {
    hooks_json::plan_text(path, old, &spec(bin), action).map(|(plan, _)| plan)
}

/// The plan for the `settings.json` at `path`, as it is on disk.
pub fn plan_file(path: &Path, bin: &Path, action: Action) -> Result<Plan, InstallError> {
    let old = read_optional(path)?;
    plan_text(path, old.as_deref(), bin, action)
}
