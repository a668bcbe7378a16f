//! Crush (Charm's coding agent, npm `@charmland/crush`): command hooks in its global
//! `crush.json` that take Claude Code's event idea and output envelope but not its file shape.
//!
//! What is its own, and why this adapter is shaped so:
//! - **The file.** `$CRUSH_GLOBAL_CONFIG/crush.json`, else `$XDG_CONFIG_HOME/crush/crush.json`,
//!   else `~/.config/crush/crush.json`: the user's whole configuration (providers, models, MCP
//!   servers), so it is edited byte-safely by the shared editor, never rewritten. Each event's
//!   entries sit straight in its list (`"TurnEnd": [{"name", "command", "timeout"}]`, no
//!   `hooks` groups: [`HookLayout::Flat`](crate::install::hooks_json::HookLayout)); a tool
//!   event's entry without a `matcher` matches every tool. Crush reads this file as strict JSON.
//! - **Its events.** `SessionStart`, `TurnStart`, `PreToolUse`, `PostToolUse`,
//!   `PermissionRequest`, `PermissionResult`, `TurnEnd`, `Interrupt`, `StopFailure`,
//!   `PreCompact`, `PostCompact`, `SessionEnd`; the payload names the event `event` (not
//!   `hook_event_name`) beside `session_id` and `cwd`, tool events add `tool_name` and
//!   `tool_input`. Crush runs every hook synchronously (the lifecycle ones too) with a timeout,
//!   and ours returns within about 100 ms: we write a 5 s `timeout`.
//! - **No answer from here.** `PermissionRequest` and `PermissionResult` only observe (their
//!   output is ignored); `PreToolUse` can allow or deny, but it runs before every tool call
//!   whether or not Crush would ask, so waiting there would hold every call. The row says to
//!   answer in the terminal.
//! - **Its process.** The TUI runs the hooks itself (through its embedded shell, which starts
//!   ours as a child), so the first `crush` above a hook owns that session. A `crush server`
//!   (its opt-in client/server mode) serves every client's sessions: it owns none.
//!
//! Not run here: the binary comes from a download the npm package's install step makes, which
//! this workplace cannot reach. The mapping and the file shape follow Crush's hook guide and
//! source (`docs/hooks/README.md`, `internal/hooks`), the recorded shapes in
//! `tests/fixtures/crush/` are written from them.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::findings::{hook_findings, probe_cwd, Finding};
use crate::hook_payload::HookFields;
use crate::install::hooks_json::{self, parse_json, HookSpec};
use crate::install::{read_optional, Action, InstallError, Plan};
use crate::model::{Agent, EventKind};
use crate::process::ProcessTable;

/// Crush's adapter.
pub struct Crush;

/// The events we register (Crush's names), and whether they are tool events.
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("TurnStart", false),
    ("PreToolUse", true),
    ("PostToolUse", true),
    ("PermissionRequest", false),
    ("PermissionResult", false),
    ("TurnEnd", false),
    ("Interrupt", false),
    ("StopFailure", false),
    ("PreCompact", false),
    ("PostCompact", false),
    ("SessionEnd", false),
];

/// Seconds Crush gives each of our hooks before it moves on without it.
pub const TIMEOUT_SECS: u64 = 5;

/// The name Crush's TUI shows for our hooks.
pub const HOOK_NAME: &str = "agent-tray";

fn crush_entry(_event: &str, command: String) -> Value {
    json!({"name": HOOK_NAME, "command": command, "timeout": TIMEOUT_SECS})
}

/// Our hooks for `crush.json`.
pub fn spec(bin: &Path) -> HookSpec<'_> {
    HookSpec::for_events(Agent::Crush, bin, EVENTS, crush_entry).flat()
}

/// The pure plan for `crush.json` given its current text.
pub fn plan_text(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    action: Action,
) -> Result<Plan, InstallError> {
    hooks_json::plan_text(path, old, &spec(bin), action).map(|(plan, _)| plan)
}

/// What one of Crush's event names means. Crush sends its canonical spelling (it folds the
/// case and underscores of the names in its file onto these).
pub fn crush_event(name: &str) -> HookEvent {
    let kind = match name {
        "SessionStart" => EventKind::SessionStart,
        "TurnStart" => EventKind::UserPromptSubmit,
        "PreToolUse" => EventKind::PreToolUse,
        "PostToolUse" => EventKind::PostToolUse,
        "PermissionRequest" => EventKind::PermissionRequest,
        "PermissionResult" => EventKind::PermissionResult,
        "TurnEnd" => EventKind::Stop,
        "Interrupt" => EventKind::Interrupt,
        "StopFailure" => EventKind::StopFailure,
        "PreCompact" => EventKind::PreCompact,
        "PostCompact" => EventKind::PostCompact,
        "SessionEnd" => EventKind::SessionEnd,
        _ => return HookEvent::Unknown,
    };
    HookEvent::Event(kind)
}

/// The folder holding the global `crush.json`, from the variables Crush reads (pure).
pub fn config_dir_from(
    crush_global_config: Option<PathBuf>,
    xdg_config_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    let set = |p: Option<PathBuf>| p.filter(|p| !p.as_os_str().is_empty());
    set(crush_global_config)
        .or_else(|| set(xdg_config_home).map(|x| x.join("crush")))
        .or_else(|| set(home).map(|h| h.join(".config").join("crush")))
}

/// Whether a command line is Crush's server (`crush server …`), which runs every client's
/// hooks and so owns no one session.
pub fn is_server(argv: &[String]) -> bool {
    argv.get(1).is_some_and(|a| a == "server")
}

impl AgentAdapter for Crush {
    fn agent(&self) -> Agent {
        Agent::Crush
    }

    fn hook_event(&self, name: &str, _fields: &HookFields) -> HookEvent {
        crush_event(name)
    }

    fn session_process(&self, table: &dyn ProcessTable, pid: u32) -> Option<u32> {
        match table.cmdline(pid) {
            Some(argv) if is_server(&argv) => None,
            _ => Some(pid),
        }
    }

    fn config_dir(&self) -> Option<PathBuf> {
        let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
        config_dir_from(
            var("CRUSH_GLOBAL_CONFIG"),
            var("XDG_CONFIG_HOME"),
            var("HOME"),
        )
        .map(|d| super::absolute(&d))
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join("crush.json")
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        _options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        let path = self.hooks_file(dir);
        let old = read_optional(&path)?;
        plan_text(&path, old.as_deref(), bin, action)
    }
    /// Crush has no switch that turns every hook off.
    fn hooks_enabled(
        &self,
        _dir: &Path,
        _doc: Option<&Value>,
        _bin: &Path,
        _other_files_change: bool,
    ) -> bool {
        true
    }

    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        let Some(dir) = self.config_dir() else {
            return (
                vec![Finding::Problem(
                    "cannot find Crush's folder: set CRUSH_GLOBAL_CONFIG or HOME".into(),
                )],
                None,
            );
        };
        let path = self.hooks_file(&dir);
        let doc = match read_optional(&path).and_then(|t| parse_json(&path, t.as_deref())) {
            Ok(doc) => doc,
            Err(e) => return (vec![Finding::Problem(e.to_string())], None),
        };
        let events: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
        hook_findings(
            self.entry().product_name,
            &path,
            &hooks_json::flat_as_grouped(&doc),
            &events,
            bin,
            agent,
            "agent-tray install --crush",
        )
    }
    /// What Crush sends when a session is created: the event named `event`.
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        json!({
            "event": "SessionStart",
            "session_id": probe_id,
            "cwd": probe_cwd(),
            "probe": true,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
