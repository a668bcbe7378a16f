//! Claude Code: hooks in `$CLAUDE_CONFIG_DIR/settings.json` (or `~/.claude/settings.json`), the
//! native `claude` binary (or `node …/@anthropic-ai/claude-code/cli.js`), its live-session
//! files and transcripts (read by its feeds: [`sessions`], [`transcripts`], [`agents_probe`]).
//!
//! Its hook event names are the default mapping ([`crate::agents::standard_hook_event`]); other
//! agents run its hooks too (Copilot and Cursor load `.claude/settings.json`), so their payloads
//! are told apart and refused (the catalogue row's `foreign_callers`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{AgentAdapter, InstallOptions};
use crate::doctor::findings::{hook_findings, Finding, HookCheck};
use crate::feeds::watch::spawn_feed;
use crate::feeds::{FeedContext, NamedTask};
use crate::hook_payload::HookFields;
use crate::install::{hooks_json, read_optional, Action, InstallError, Plan};
use crate::model::{Agent, EventKind, Observation};
use crate::paths;

pub mod agents_probe;
pub mod install;
pub mod sessions;
pub mod status_line;
pub mod transcripts;

/// Claude Code's adapter.
pub struct ClaudeCode;

impl AgentAdapter for ClaudeCode {
    fn agent(&self) -> Agent {
        Agent::Claude
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

    fn is_helper_process(&self, argv: &[String]) -> bool {
        is_agent_helper(argv)
    }

    fn config_dir(&self) -> Option<PathBuf> {
        config_dir_from_env()
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join("settings.json")
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        let path = self.hooks_file(dir);
        let mut plan = install::plan_file(&path, bin, action)?;
        let record = status_line::record_path();
        status_line::plan_into(
            &mut plan,
            &path,
            bin,
            action,
            options.status_line,
            record.as_deref(),
        )?;
        Ok(plan)
    }

    fn status_line_report(
        &self,
        payload: &[u8],
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<(Observation, Vec<crate::plan_limits::PlanWindow>)> {
        status_line::parse(payload, at)
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
        config_dir_from_env().and_then(|dir| claude_version(&dir.join("sessions"), &obs.session_id))
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: Claude Code's hooks do not send one and its session file is gone".into()
    }

    /// Its live-session files and transcripts (sharing what the first knows of live processes),
    /// and, where the engine may ask programs, `claude agents --json` once.
    fn spawn_feeds(&self, ctx: &FeedContext<'_>) -> Vec<NamedTask> {
        let dirs = ctx.dirs.to_vec();
        let live = sessions::LiveClaudeSessions::default();
        let sessions = sessions::ClaudeSessionsFeed::new(
            dirs.clone(),
            live.clone(),
            ctx.config.stats.of("feed_claude_sessions"),
        );
        let transcripts = transcripts::ClaudeTranscriptsFeed::new(
            dirs,
            ctx.config.ttl,
            live,
            ctx.config.stats.of("feed_claude_transcripts"),
        );
        let timing = ctx.config.timing;
        let mut tasks = vec![
            (
                "feed_claude_sessions",
                spawn_feed(sessions, ctx.sink.clone(), timing, ctx.token.clone()),
            ),
            (
                "feed_claude_transcripts",
                spawn_feed(transcripts, ctx.sink.clone(), timing, ctx.token.clone()),
            ),
        ];
        // Claude Code's own list of live sessions, asked once (see the module comment).
        if ctx.config.ask_programs {
            if let Some(program) = crate::os_fs::find_on_path(self.entry().program) {
                tasks.push((
                    "claude_agents_probe",
                    agents_probe::spawn_probe(ctx.sink.clone(), program, ctx.token.child_token()),
                ));
            }
        }
        tasks
    }
}

/// Claude Code's folder: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn config_dir_from_env() -> Option<PathBuf> {
    std::env::var("CLAUDE_CONFIG_DIR")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| paths::home_dir().map(|h| h.join(".claude")))
}

pub(crate) fn check_claude(bin: &Path) -> HookCheck {
    let Some(dir) = config_dir_from_env() else {
        return (
            vec![Finding::Problem(
                "cannot find Claude Code's folder: set HOME or CLAUDE_CONFIG_DIR".into(),
            )],
            None,
        );
    };
    let path = dir.join("settings.json");
    let doc = match read_optional(&path).and_then(|t| hooks_json::parse_json(&path, t.as_deref())) {
        Ok(doc) => doc,
        Err(e) => return (vec![Finding::Problem(e.to_string())], None),
    };
    let events: Vec<&str> = install::EVENTS.iter().map(|(e, _)| *e).collect();
    let (mut findings, version) = hook_findings(
        "Claude Code",
        &path,
        &doc,
        &events,
        bin,
        Agent::Claude,
        "agent-tray install --claude",
    );
    findings.push(status_line::doctor_finding(&doc, bin));
    (findings, version)
}

/// The largest live-session file read for its version (they are a few hundred bytes).
const MAX_SESSION_FILE: u64 = 64 * 1024;

/// The `version` of the Claude session file whose `sessionId` is `session_id`.
pub(crate) fn claude_version(sessions_dir: &Path, session_id: &str) -> Option<String> {
    let entries = std::fs::read_dir(sessions_dir).ok()?;
    entries.take(500).flatten().find_map(|entry| {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            return None;
        }
        if entry.metadata().ok()?.len() > MAX_SESSION_FILE {
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
