//! Pi (`@mariozechner/pi-coding-agent`, a node program; recorded with 0.73.1).
//!
//! Pi has no hook commands: it loads TypeScript/JavaScript extensions that subscribe to its
//! events (`pi.on("agent_start", …)`). `agent-tray install --pi` writes ours ([`install`]),
//! which forwards the events in [`FORWARDED`] to `agent-tray hook --agent pi` as Claude-shaped
//! JSON (`session_id`, `hook_event_name` = Pi's event name, `cwd`, `model`, `transcript_path` =
//! the session file), read by the common parser with [`PiAgent::hook_event`]'s names:
//! - `session_start` → SessionStart (its `reason` as the source: startup, new, resume, fork);
//! - `agent_start` (a prompt's run begins) → working; `tool_call` / `tool_result` → the tool
//!   runs / ran (failed when Pi marks the result an error);
//! - `agent_end` (the run is over) → idle; the extension adds the last reply's `stopReason` as
//!   the source: `aborted` (Esc) is an interrupt, `error` a failed turn with Pi's message;
//! - `session_shutdown` → ended (on quit, and for the old session on `/new`, `/resume`, `/fork`),
//!   except `reload`, which keeps the same session.
//!
//! Pi's `turn_*` and `message_*` events repeat inside one run (per model call, per streamed
//! token) and say nothing more: never forwarded. Pi asks no permissions, so nothing waits.
//!
//! Processes: Pi runs in one node process and sets its title to `pi` (`comm` and the command
//! line both read "pi"); the extension runs inside it and spawns the hook directly, so the walk
//! from the hook finds that process: the session's pid. kill -9 fires nothing: the pid watcher
//! ends the session. Its session files ([`sessions`]) give the folder, the model, the context
//! and the state to a user without the extension.

pub mod install;
pub mod sessions;

use std::path::{Path, PathBuf};

use super::{AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::findings::Finding;
use crate::feeds::watch::spawn_feed;
use crate::feeds::{FeedContext, NamedTask};
use crate::hook_payload::HookFields;
use crate::install::{Action, InstallError, Plan};
use crate::model::{Agent, EventKind};

/// Pi's events the extension forwards (it subscribes to exactly these).
pub const FORWARDED: [&str; 6] = [
    "session_start",
    "agent_start",
    "tool_call",
    "tool_result",
    "agent_end",
    "session_shutdown",
];

/// Pi's other events (0.73.1, its `docs/extensions.md`): known, never forwarded, and ignored if
/// a hand-written extension sends them.
const OTHER_EVENTS: &[&str] = &[
    "resources_discover",
    "session_before_switch",
    "session_before_fork",
    "session_before_compact",
    "session_compact",
    "session_before_tree",
    "session_tree",
    "before_agent_start",
    "input",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "context",
    "before_provider_request",
    "after_provider_response",
    "model_select",
    "thinking_level_select",
    "user_bash",
];

/// The variable that moves Pi's session files out of the agent dir.
const SESSION_DIR_ENV: &str = "PI_CODING_AGENT_SESSION_DIR";

/// Pi's adapter.
pub struct PiAgent;

impl AgentAdapter for PiAgent {
    fn agent(&self) -> Agent {
        Agent::Pi
    }

    fn hook_event(&self, name: &str, fields: &HookFields) -> HookEvent {
        let source = fields.source.as_deref();
        HookEvent::Event(match name {
            "session_start" => EventKind::SessionStart,
            "agent_start" => EventKind::UserPromptSubmit,
            "tool_call" => EventKind::PreToolUse,
            "tool_result" if source == Some("error") => EventKind::PostToolUseFailure,
            "tool_result" => EventKind::PostToolUse,
            "agent_end" if source == Some("aborted") => EventKind::Interrupt,
            "agent_end" if source == Some("error") => EventKind::StopFailure,
            "agent_end" => EventKind::Stop,
            "session_shutdown" if source == Some("reload") => return HookEvent::Ignored,
            "session_shutdown" => EventKind::SessionEnd,
            other if OTHER_EVENTS.contains(&other) => return HookEvent::Ignored,
            _ => return HookEvent::Unknown,
        })
    }

    /// A session file under `.pi/agent/sessions/`.
    fn payload_evidence(&self, fields: &HookFields, _event: EventKind) -> u8 {
        match fields.transcript_path.as_deref() {
            Some(p) if p.contains("/.pi/agent/sessions/") => 3,
            _ => 0,
        }
    }

    /// Pi's agent dir (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
    fn config_dir(&self) -> Option<PathBuf> {
        install::agent_dir_from_env()
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join(install::EXTENSIONS_DIR)
            .join(install::EXTENSION_FILE_NAME)
    }
    fn own_file(&self, dir: &Path) -> Option<PathBuf> {
        Some(self.hooks_file(dir))
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        _options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        let path = self.hooks_file(dir);
        let old = crate::install::read_optional(&path)?;
        let op = install::plan(&path, old.as_deref(), bin, action == Action::Install)?;
        Ok(super::own_file::as_plan(&path, old, op))
    }
    /// Our extension is JavaScript: nothing in it can be switched off from a JSON document.
    fn hooks_enabled(
        &self,
        _dir: &Path,
        _doc: Option<&serde_json::Value>,
        _bin: &Path,
        _other_files_change: bool,
    ) -> bool {
        true
    }

    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        super::own_file::doctor_findings(
            agent,
            self.config_dir(),
            bin,
            "agent-tray install --pi",
            install::hook_command_in,
        )
    }
    /// What the extension forwards when Pi starts a session.
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        serde_json::json!({
            "session_id": probe_id,
            "hook_event_name": "session_start",
            "source": "startup",
            "cwd": crate::doctor::findings::probe_cwd(),
            "probe": true,
        })
        .to_string()
        .into_bytes()
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: Pi's events send none, and its process is titled `pi` with no path".into()
    }

    fn spawn_feeds(&self, ctx: &FeedContext<'_>) -> Vec<NamedTask> {
        let mut roots: Vec<PathBuf> = ctx.dirs.iter().map(|d| d.join("sessions")).collect();
        if let Some(dir) = std::env::var_os(SESSION_DIR_ENV).filter(|d| !d.is_empty()) {
            roots.push(super::absolute(Path::new(&dir)));
        }
        let feed = sessions::PiSessionsFeed::new(
            roots,
            ctx.config.ttl,
            ctx.config.stats.of("feed_pi_sessions"),
        );
        vec![(
            "feed_pi_sessions",
            spawn_feed(feed, ctx.sink.clone(), ctx.config.timing, ctx.token.clone()),
        )]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::catalogue::InCatalogue;
    use crate::hook_payload::HookVocabulary;
    use crate::model::Source;

    const PAYLOADS: &str = "tests/fixtures/pi/real-0.73.1/hook-payloads.jsonl";

    fn recorded() -> Vec<Vec<u8>> {
        recorded_in(PAYLOADS)
    }

    fn recorded_in(file: &str) -> Vec<Vec<u8>> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.as_bytes().to_vec())
            .collect()
    }

    fn observe(
        payload: &[u8],
    ) -> Result<crate::model::Observation, crate::hook_payload::PayloadError> {
        super::super::observation_from_payload(
            payload,
            Some(Agent::Pi),
            Some((4242, Agent::Pi)),
            chrono::Utc::now(),
        )
    }

    // What our extension sent through one recorded session (start, a prompt that ran bash, the
    // run's end, quit): each is one observation of the same session, in Pi's order, with the
    // folder, the model and the session file, and the walked pid as the session's.
    #[test]
    fn the_recorded_payloads_make_a_session_that_works_runs_a_tool_and_ends() {
        let mut events = Vec::new();
        let mut ids = std::collections::BTreeSet::new();
        for p in recorded() {
            let obs =
                observe(&p).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&p)));
            assert_eq!(obs.agent, Agent::Pi);
            assert_eq!(obs.source, Source::Hook);
            assert_eq!(obs.pid, Some(4242));
            assert!(
                obs.cwd.as_deref().is_some_and(|c| c.ends_with("proj")),
                "{obs:?}"
            );
            assert_eq!(obs.model.as_deref(), Some("claude-mock"));
            assert!(obs
                .transcript_path
                .as_deref()
                .is_some_and(|t| t.contains("/.pi/agent/sessions/")));
            ids.insert(obs.session_id.clone());
            events.push(obs.event);
        }
        assert_eq!(ids.len(), 1, "one session: {ids:?}");
        assert_eq!(
            events,
            [
                EventKind::SessionStart,
                EventKind::UserPromptSubmit,
                EventKind::PreToolUse,
                EventKind::PostToolUse,
                EventKind::Stop,
                EventKind::SessionEnd,
            ]
        );
    }

    // Esc while the model was still answering (recorded): Pi ends the run with an `aborted`
    // reply, so the run's end is an interrupt, not a finished turn.
    #[test]
    fn the_recorded_esc_ends_the_run_as_an_interrupt() {
        let events: Vec<EventKind> =
            recorded_in("tests/fixtures/pi/real-0.73.1/hook-payloads-esc.jsonl")
                .iter()
                .map(|p| observe(p).unwrap().event)
                .collect();
        assert_eq!(
            events,
            [
                EventKind::SessionStart,
                EventKind::UserPromptSubmit,
                EventKind::Interrupt,
                EventKind::SessionEnd,
            ]
        );
    }

    #[test]
    fn a_run_ended_by_esc_or_an_error_and_a_reload_read_as_pi_means_them() {
        let fields = |source: &str| HookFields {
            source: Some(source.into()),
            ..HookFields::default()
        };
        let event = |name: &str, source: &str| PiAgent.hook_event(name, &fields(source));
        assert_eq!(
            event("agent_end", "aborted"),
            HookEvent::Event(EventKind::Interrupt)
        );
        assert_eq!(
            event("agent_end", "error"),
            HookEvent::Event(EventKind::StopFailure)
        );
        assert_eq!(
            event("agent_end", "stop"),
            HookEvent::Event(EventKind::Stop)
        );
        assert_eq!(
            event("tool_result", "error"),
            HookEvent::Event(EventKind::PostToolUseFailure)
        );
        assert_eq!(event("session_shutdown", "reload"), HookEvent::Ignored);
        assert_eq!(
            event("session_shutdown", "quit"),
            HookEvent::Event(EventKind::SessionEnd)
        );
        assert_eq!(event("turn_end", ""), HookEvent::Ignored);
        assert_eq!(
            event("SessionStart", "startup"),
            HookEvent::Unknown,
            "Claude's names are not Pi's"
        );
    }

    #[test]
    fn a_payload_without_agent_is_pis_when_its_session_file_is() {
        let fields = HookFields {
            transcript_path: Some("/h/.pi/agent/sessions/--p--/t_x.jsonl".into()),
            ..HookFields::default()
        };
        assert_eq!(
            super::super::Adapters.infer_agent(&fields, EventKind::Stop),
            Some(Agent::Pi)
        );
    }

    #[test]
    fn the_probe_is_a_session_start_pi_would_send() {
        let obs = observe(&PiAgent.probe_payload("probe-1")).unwrap();
        assert_eq!(obs.event, EventKind::SessionStart);
        assert_eq!(obs.start_source.as_deref(), Some("startup"));
    }

    #[test]
    fn resume_names_the_session() {
        assert_eq!(
            Agent::Pi
                .entry()
                .resume_command("01a24a00-059a-71ec-abe3-b5531d2d5e7e"),
            "pi --session 01a24a00-059a-71ec-abe3-b5531d2d5e7e"
        );
        assert_eq!(Agent::Pi.as_str(), "pi");
        assert_eq!(Agent::by_name("PI"), Some(Agent::Pi));
    }
}
