//! Claude Code: hooks in `$CLAUDE_CONFIG_DIR/settings.json` (or `~/.claude/settings.json`), the
//! native `claude` binary (or `node …/@anthropic-ai/claude-code/cli.js`), its live-session
//! files and transcripts (read by `crate::feeds::claude_*`).
//!
//! Its hook event names are the default mapping ([`crate::agents::claude_hook_event`]); other
//! agents run its hooks too (Copilot and Cursor load `.claude/settings.json`), so their payloads
//! are told apart and refused ([`crate::hook_payload::ForeignCaller`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{AgentAdapter, InstallOptions};
use crate::doctor::probe::MAX_META_LINE;
use crate::doctor::{hook_findings, Finding, HookCheck};
use crate::hook_payload::HookFields;
use crate::install::{self, claude, Action, InstallError, Plan};
use crate::model::{Agent, EventKind, Observation};
use crate::paths;

/// Claude Code's adapter.
pub struct ClaudeCode;

impl Agent {
    /// Claude Code (`"claude"`).
    #[allow(non_upper_case_globals)]
    pub const Claude: Agent = Agent::registered("claude", &ClaudeCode);
}

impl AgentAdapter for ClaudeCode {
    fn display_name(&self) -> &'static str {
        "Claude"
    }
    fn product_name(&self) -> &'static str {
        "Claude Code"
    }
    fn colour(&self) -> &'static str {
        "#c15f3c"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["claude-code", "claude_code"]
    }
    fn program(&self) -> &'static str {
        "claude"
    }

    /// A transcript under `.claude` or `projects/`, or a `prompt_id` (only Claude sends it).
    fn payload_evidence(&self, fields: &HookFields, _event: EventKind) -> u8 {
        if let Some(path) = fields.transcript_path.as_deref() {
            if path.contains("/.claude/") || path.contains("/projects/") {
                return 2;
            }
        }
        if fields.prompt_id.is_some() {
            return 2;
        }
        0
    }
    fn refuses_foreign_payloads(&self) -> bool {
        true
    }

    fn process_names(&self) -> &'static [&'static str] {
        &["claude", "claude.exe"]
    }
    fn script_markers(&self) -> &'static [&'static str] {
        &["@anthropic-ai/claude-code"]
    }
    fn is_helper_process(&self, argv: &[String]) -> bool {
        is_agent_helper(argv)
    }

    fn config_dir(&self) -> Option<PathBuf> {
        paths::claude_config_dir()
    }
    fn config_dir_env(&self) -> &'static str {
        "CLAUDE_CONFIG_DIR"
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
        claude::plan_file(&self.hooks_file(dir), bin, action)
    }

    /// `install` with no flag has always written its hooks, found or not.
    fn install_by_default(&self) -> bool {
        true
    }

    fn doctor_hooks(&self, _agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        check_claude(bin)
    }
    /// Claude Code's hook payloads carry no version, but its session file
    /// (`sessions/<pid>.json`) does while the session lives.
    fn version_of(&self, obs: &Observation) -> Option<String> {
        paths::claude_config_dir()
            .and_then(|dir| claude_version(&dir.join("sessions"), &obs.session_id))
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: Claude Code's hooks do not send one and its session file is gone".into()
    }

    fn resume_command(&self, quoted_id: &str) -> String {
        format!("claude --resume {quoted_id}")
    }
}

pub(crate) fn check_claude(bin: &Path) -> HookCheck {
    let Some(dir) = paths::claude_config_dir() else {
        return (
            vec![Finding::Problem(
                "cannot find Claude Code's folder: set HOME or CLAUDE_CONFIG_DIR".into(),
            )],
            None,
        );
    };
    let path = dir.join("settings.json");
    let doc =
        match install::read_optional(&path).and_then(|t| claude::parse_json(&path, t.as_deref())) {
            Ok(doc) => doc,
            Err(e) => return (vec![Finding::Problem(e.to_string())], None),
        };
    let events: Vec<&str> = claude::EVENTS.iter().map(|(e, _)| *e).collect();
    hook_findings(
        "Claude Code",
        &path,
        &doc,
        &events,
        bin,
        Agent::Claude,
        "agent-tray install --claude",
    )
}

/// The `version` of the Claude session file whose `sessionId` is `session_id`.
pub(crate) fn claude_version(sessions_dir: &Path, session_id: &str) -> Option<String> {
    let entries = std::fs::read_dir(sessions_dir).ok()?;
    entries.take(500).flatten().find_map(|entry| {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            return None;
        }
        if entry.metadata().ok()?.len() > MAX_META_LINE {
            return None;
        }
        let doc: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        if doc.get("sessionId")?.as_str()? != session_id {
            return None;
        }
        doc.get("version")?.as_str().map(str::to_string)
    })
}

/// A Claude Code process that is not a session: a `--bg-spare` pool helper or the `claude
/// daemon` supervisor of background sessions.
/// Only the exact argument counts: a prompt that mentions the flag is one argument with more in
/// it. `daemon` counts as the subcommand only, right after the program (or a launcher's script).
pub fn is_agent_helper(argv: &[String]) -> bool {
    let args = argv.get(1..).unwrap_or(&[]);
    if args.iter().any(|a| a == "--bg-spare") {
        return true;
    }
    let mut rest = args.iter();
    let first = match rest.next() {
        Some(script)
            if argv
                .get(..2)
                .and_then(crate::agent_pid::agent_in_cmdline)
                .is_some()
                && !script.starts_with('-') =>
        {
            // `node …/claude-code/cli.js daemon`: the subcommand follows the script.
            rest.next()
        }
        other => other,
    };
    first.is_some_and(|a| a == "daemon")
}
