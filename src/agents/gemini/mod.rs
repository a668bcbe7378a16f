//! Gemini CLI (`@google/gemini-cli`): command hooks in `~/.gemini/settings.json`, run by a node
//! process.
//!
//! Recorded from 0.61.0 (`tests/fixtures/gemini/real-0.61.0/`):
//! - **Events.** `SessionStart`, `BeforeAgent` (the prompt: working), `BeforeTool` (before the
//!   permission dialog, not after approval), `Notification{notification_type:"ToolPermission"}`
//!   (the dialog is up: waiting for permission), `AfterTool` (approved and ran; approving fires
//!   nothing), `AfterAgent` (turn over: idle), `SessionEnd` (three times on `/quit`: the registry
//!   drops what reaches an ended session). `PreCompress` fires before every model request and
//!   means nothing here; `BeforeModel`/`AfterModel` fire per streamed chunk and are never
//!   registered. kill -9 fires nothing: the pid watcher ends the session.
//! - **Processes.** `gemini.js` relaunches itself: an outer node wrapper that ignores signals and
//!   only relays the exit code, and the inner node process that runs the session and spawns the
//!   hooks directly. The walk stops at the first gemini node above the hook: the inner one.
//! - **Config.** `hooks.<Event>: [{matcher, hooks: [{type: "command", command, name, timeout}]}]`,
//!   the timeout in milliseconds; the same hooks-object shape as Claude's, so the same byte-safe
//!   editor ([`crate::install::claude::edit_hooks`]) merges ours.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::{hook_findings, Finding};
use crate::hook_payload::HookFields;
use crate::install::claude::{edit_hooks, parse_json, HookSpec};
use crate::install::{read_optional, Action, FileChange, InstallError, Plan};
use crate::model::{Agent, EventKind};

/// Gemini CLI's adapter.
pub struct GeminiCli;

impl Agent {
    /// Gemini CLI (`"gemini"`).
    #[allow(non_upper_case_globals)]
    pub const Gemini: Agent = Agent::registered("gemini", &GeminiCli);
}

/// The events we register, and whether they take a tool matcher. Never `BeforeModel` or
/// `AfterModel` (per streamed chunk), nor `PreCompress`/`BeforeToolSelection` (per model call,
/// saying nothing about the state).
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("BeforeAgent", false),
    ("BeforeTool", true),
    ("Notification", false),
    ("AfterTool", true),
    ("AfterAgent", false),
    ("SessionEnd", false),
];

/// Our hook's timeout, in milliseconds (Gemini waits for its hooks; ours gives up sending after
/// about 100 ms).
const TIMEOUT_MS: u64 = 5000;

/// The `name` Gemini shows while a hook runs.
const HOOK_NAME: &str = "agent-tray";

fn gemini_entry(_event: &str, command: String) -> Value {
    json!({"name": HOOK_NAME, "type": "command", "command": command, "timeout": TIMEOUT_MS})
}

/// Our hooks for `settings.json`.
pub fn spec(bin: &Path) -> HookSpec<'_> {
    HookSpec {
        agent: Agent::Gemini,
        bin,
        events: EVENTS
            .iter()
            .map(|(e, tools)| (*e, tools.then_some("*")))
            .collect(),
        entry: gemini_entry,
    }
}

/// The pure plan for `settings.json` given its current text.
pub fn plan_text(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    action: Action,
) -> Result<Plan, InstallError> {
    parse_json(path, old)?;
    let edited = edit_hooks(old.unwrap_or(""), &spec(bin), action, path).map_err(|detail| {
        InstallError::Unexpected {
            path: path.to_path_buf(),
            detail,
        }
    })?;
    let mut notes = edited.edit.notes;
    if action == Action::Install
        && edited
            .doc
            .pointer("/hooksConfig/enabled")
            .and_then(Value::as_bool)
            == Some(false)
    {
        notes.push(format!(
            "{}: hooksConfig.enabled is false, so Gemini CLI runs no hooks; set it to true",
            path.display()
        ));
    }
    Ok(Plan {
        changes: vec![FileChange {
            path: path.to_path_buf(),
            old: old.map(str::to_string),
            new: edited.edit.changed.then_some(edited.text),
        }],
        notes,
    })
}

impl AgentAdapter for GeminiCli {
    fn display_name(&self) -> &'static str {
        "Gemini"
    }
    fn product_name(&self) -> &'static str {
        "Gemini CLI"
    }
    fn colour(&self) -> &'static str {
        "#4285f4"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["gemini-cli", "gemini_cli"]
    }
    fn program(&self) -> &'static str {
        "gemini"
    }

    fn hook_event(&self, name: &str, fields: &HookFields) -> HookEvent {
        match name {
            "SessionStart" => HookEvent::Event(EventKind::SessionStart),
            "BeforeAgent" => HookEvent::Event(EventKind::UserPromptSubmit),
            "BeforeTool" => HookEvent::Event(EventKind::PreToolUse),
            "AfterTool" => HookEvent::Event(EventKind::PostToolUse),
            "AfterAgent" => HookEvent::Event(EventKind::Stop),
            "SessionEnd" => HookEvent::Event(EventKind::SessionEnd),
            // The dialog asking to run a tool; no other notification type says anything.
            "Notification" if fields.notification_type.as_deref() == Some("ToolPermission") => {
                HookEvent::Event(EventKind::PermissionRequest)
            }
            "Notification"
            | "PreCompress"
            | "BeforeToolSelection"
            | "BeforeModel"
            | "AfterModel" => HookEvent::Ignored,
            _ => HookEvent::Unknown,
        }
    }
    /// A transcript under `.gemini/tmp/…/chats/`.
    fn payload_evidence(&self, fields: &HookFields, _event: EventKind) -> u8 {
        match fields.transcript_path.as_deref() {
            Some(p) if p.contains("/.gemini/") => 3,
            _ => 0,
        }
    }

    fn process_names(&self) -> &'static [&'static str] {
        &["gemini"]
    }
    fn script_markers(&self) -> &'static [&'static str] {
        &["@google/gemini-cli"]
    }

    fn config_dir(&self) -> Option<PathBuf> {
        gemini_dir()
    }
    fn config_dir_env(&self) -> &'static str {
        "GEMINI_CLI_HOME"
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
        let path = self.hooks_file(dir);
        let old = read_optional(&path)?;
        plan_text(&path, old.as_deref(), bin, action)
    }
    fn hooks_enabled(
        &self,
        _dir: &Path,
        doc: Option<&Value>,
        _bin: &Path,
        _other_files_change: bool,
    ) -> bool {
        doc.and_then(|d| d.pointer("/hooksConfig/enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        let Some(dir) = gemini_dir() else {
            return (
                vec![Finding::Problem(
                    "cannot find Gemini CLI's folder: set HOME (or GEMINI_CLI_HOME)".into(),
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
        let (mut out, command) = hook_findings(
            self.product_name(),
            &path,
            &doc,
            &events,
            bin,
            agent,
            "agent-tray install --gemini",
        );
        if command.is_some() && !self.hooks_enabled(&dir, Some(&doc), bin, false) {
            out.push(Finding::Problem(format!(
                "Gemini CLI runs no hooks: hooksConfig.enabled is false in {}",
                path.display()
            )));
        }
        (out, command)
    }

    fn resume_command(&self, quoted_id: &str) -> String {
        format!("gemini --resume {quoted_id}")
    }
}

/// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini` (Gemini CLI puts its folder under
/// `GEMINI_CLI_HOME` when set, in place of the home folder).
fn gemini_dir() -> Option<PathBuf> {
    super::home_dir_or("GEMINI_CLI_HOME", ".gemini").map(|d| {
        if std::env::var_os("GEMINI_CLI_HOME").is_some_and(|v| !v.is_empty()) {
            d.join(".gemini")
        } else {
            d
        }
    })
}
