//! One adapter per coding agent, and the one list that registers them.
//!
//! Everything Agent Tray knows about a particular agent lives in its folder here: how its hook
//! payloads map onto [`Observation`](crate::model::Observation)s, which processes are its, where
//! its configuration lives and how our hooks are merged into it, what `doctor` checks, its
//! resume command, its name and colour. The rest of the code asks [`AgentAdapter`] (through
//! [`AgentKnowledge::adapter`]) and never matches on an agent, so an agent added here is known to
//! the hook, the pid walk, `install`, `doctor`, the tray and the window at once.
//!
//! Why a trait object looked up by a `Copy` id rather than an enum: an enum makes every `match`
//! in the code a place to edit for each new agent (that was the state before: the knowledge was
//! spread over a dozen modules). [`Agent`] is a plain id of the domain crate (its `&'static str`
//! is the `agent` field's value, a public contract); the adapter is found here, by the id's place
//! in [`Agent::ALL`], so the domain never depends on what is above it.
//!
//! # Adding an agent
//! 1. Add its id (and the other spellings people type) to `Agent` in the domain crate
//!    (`domain/src/model.rs`: a constant and its place in `Agent::ALL`; the id is what
//!    `list --json` prints, never changed once released).
//! 2. Make a folder `src/agents/<name>/` with a `mod.rs` holding a unit struct that implements
//!    [`AgentAdapter`], add `pub mod <name>;` and the adapter to [`ADAPTERS`] below, in the same
//!    place as in `Agent::ALL` (a test checks). The `--<id>` flag of `install`/`uninstall`,
//!    `doctor`, the window's filter and the UI's colour follow from it.
//! 3. Test the adapter on payloads recorded from the real binary (`tests/fixtures/<id>/`).

use std::path::{Path, PathBuf};

use crate::doctor::Finding;
use crate::hook_payload::HookFields;
use crate::install::{Action, InstallError, Plan};
use crate::model::{Agent, EventKind, Observation};
use crate::process::ProcessTable;

pub mod claude;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod opencode;
pub mod own_file;
pub mod qwen;

/// Every agent Agent Tray knows, in the order the window and `doctor` list them.
pub const REGISTERED: &[Agent] = Agent::ALL;

/// Each agent's adapter, in the order of [`Agent::ALL`]: the registration. Its length is the
/// domain's count of agents, so an agent without an adapter does not compile, and a test checks
/// that each adapter sits at its agent's place.
pub const ADAPTERS: [&dyn AgentAdapter; Agent::ALL.len()] = [
    &claude::ClaudeCode,
    &codex::Codex,
    &gemini::GeminiCli,
    &qwen::QwenCode,
    &copilot::CopilotCli,
    &opencode::OpenCode,
];

/// What the core knows about an agent, asked through its id.
pub trait AgentKnowledge {
    /// Everything known about this agent.
    fn adapter(self) -> &'static dyn AgentAdapter;
    /// The name shown to people ("Claude", "Codex").
    fn display_name(self) -> &'static str;
}

impl AgentKnowledge for Agent {
    fn adapter(self) -> &'static dyn AgentAdapter {
        ADAPTERS[self.index()]
    }
    fn display_name(self) -> &'static str {
        self.adapter().display_name()
    }
}

/// What a hook event name means for one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// It moves a session: this event.
    Event(EventKind),
    /// The agent has it and it says nothing about a session's state (known, not logged).
    Ignored,
    /// Not a name this version knows.
    Unknown,
}

/// Which configuration an install touches, and how (the options `install` takes that are not
/// the agent flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstallOptions {
    /// Also mark our hooks as trusted where the agent skips untrusted ones (Codex).
    pub trust: bool,
    /// Also put the status-line bridge in front of the user's status line, where the agent
    /// tells its context window and plan limits only to a status-line command (Claude Code).
    pub status_line: bool,
}

/// Everything one coding agent's integration needs. Implemented by one unit struct per folder
/// under `src/agents/`, listed once in [`REGISTERED`]. Methods with a default are the ones most
/// agents share (Claude-shaped hooks, no helper processes, no version on disk); see the module
/// comment for how to add an agent.
pub trait AgentAdapter: Sync + 'static {
    // --- identity -------------------------------------------------------------------------

    /// The agent's id, as [`Agent::as_str`] spells it: how [`ADAPTERS`] is checked against
    /// [`Agent::ALL`].
    fn id(&self) -> &'static str;
    /// The short name the window and the tray show ("Claude").
    fn display_name(&self) -> &'static str;
    /// The product's full name, for sentences (`doctor`, drift alerts): "Claude Code".
    fn product_name(&self) -> &'static str {
        self.display_name()
    }
    /// The colour the window shows the agent's name in (a CSS colour, readable on both themes).
    fn colour(&self) -> &'static str;
    /// The program people run (looked up on PATH by `doctor` and `install`).
    fn program(&self) -> &'static str;

    // --- hooks ------------------------------------------------------------------------------

    /// What a `hook_event_name` means. The default is Claude Code's names.
    fn hook_event(&self, name: &str, fields: &HookFields) -> HookEvent {
        let _ = fields;
        standard_hook_event(name)
    }
    /// Adjusts the observation built from a payload (fields this agent spells its own way).
    fn refine_observation(&self, fields: &HookFields, obs: &mut Observation) {
        let _ = (fields, obs);
    }
    /// How strongly a payload without `--agent` looks like this agent's (0: not at all). The
    /// highest wins; ties go to the earlier registration. Hooks installed by us always pass
    /// `--agent`: this only serves hand-written hook lines.
    fn payload_evidence(&self, fields: &HookFields, event: EventKind) -> u8 {
        let _ = (fields, event);
        0
    }
    /// How a permission request of this agent can be answered from outside its terminal
    /// ([`crate::answering`]); `None` (the default): it cannot, and its requests are answered in
    /// the terminal only.
    fn answer_path(&self) -> Option<agent_tray_domain::pending::AnswerPath> {
        None
    }
    /// What a hook call parsed by the adapter itself ([`Self::own_hook_call`]) asks, when it is
    /// a permission request that can be answered from outside the terminal; `None` (the
    /// default) for every other call and agent.
    fn own_ask_call(&self, payload: &[u8]) -> Option<crate::answering::AskCall> {
        let _ = payload;
        None
    }
    /// The hook command line `doctor` proves the answer path with, given the one it probes
    /// delivery with; the default is that same line (one command for every event).
    fn answer_probe_command(&self, probed: &str) -> String {
        probed.to_string()
    }
    /// The permission request `doctor` runs this agent's hook command with to prove the answer
    /// path ([`crate::doctor::probe::run_answer`]); the default is Claude-shaped.
    fn answer_probe_payload(&self, probe_id: &str) -> Vec<u8> {
        serde_json::json!({
            "session_id": probe_id,
            "hook_event_name": "PermissionRequest",
            "cwd": crate::doctor::probe::probe_cwd(),
            "tool_name": "Bash",
            "tool_input": {"command": "true", "description": "Agent Tray doctor probe"},
            "probe": true,
        })
        .to_string()
        .into_bytes()
    }
    /// The other programs known to run this agent's hooks as if they were it (Copilot and
    /// Cursor load `.claude/settings.json`): their payloads are told apart and refused.
    fn foreign_callers(&self) -> &'static [ForeignProgram] {
        &[]
    }
    /// Whether payloads claiming to be this agent's are checked for a foreign caller.
    fn refuses_foreign_payloads(&self) -> bool {
        !self.foreign_callers().is_empty()
    }

    // --- processes --------------------------------------------------------------------------

    /// The process names (`comm`) of its native binary, or of a script named after it.
    fn process_names(&self) -> &'static [&'static str];
    /// Fragments of a launcher's script path (`node …/@google/gemini-cli/…`) that say it is
    /// this agent.
    fn script_markers(&self) -> &'static [&'static str] {
        &[]
    }
    /// A process of this agent that is no session (a pool helper, a supervisor).
    fn is_helper_process(&self, argv: &[String]) -> bool {
        let _ = argv;
        false
    }
    /// The process that owns the session, from the first process of this agent found above a
    /// hook (climbing past the agent's own wrappers); `None` when that process owns none.
    fn session_process(&self, table: &dyn ProcessTable, pid: u32) -> Option<u32> {
        let _ = table;
        Some(pid)
    }

    // --- configuration and install ----------------------------------------------------------

    /// The agent's configuration folder (from its environment variable or the home folder),
    /// absolute.
    fn config_dir(&self) -> Option<PathBuf>;
    /// The environment variable that moves the folder, for messages ("CLAUDE_CONFIG_DIR").
    fn config_dir_env(&self) -> &'static str;
    /// The file in `dir` our hooks go into.
    fn hooks_file(&self, dir: &Path) -> PathBuf;
    /// The install or uninstall plan for `dir` (pure over the files' text; nothing written).
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        options: InstallOptions,
    ) -> Result<Plan, InstallError>;
    /// Whether the hooks found in `dir` will run (not disabled, trusted where the agent asks).
    /// `doc` is the hooks file parsed; `other_files_change` says the install plan would still
    /// change a file other than the hooks file.
    fn hooks_enabled(
        &self,
        dir: &Path,
        doc: Option<&serde_json::Value>,
        bin: &Path,
        other_files_change: bool,
    ) -> bool {
        let _ = (dir, bin, other_files_change);
        !doc.and_then(|d| d.get("disableAllHooks"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
    }
    /// Whether this agent looks installed here (its program on PATH, or its folder exists):
    /// `install` with no agent flag covers these.
    fn is_installed(&self) -> bool {
        crate::doctor::find_on_path(self.program()).is_some()
            || self.config_dir().is_some_and(|d| d.is_dir())
    }

    /// Whether `install` with no agent flag covers this agent: by default when it
    /// [is installed](AgentAdapter::is_installed).
    fn install_by_default(&self) -> bool {
        self.is_installed()
    }

    // --- doctor -----------------------------------------------------------------------------

    /// `doctor`'s findings on the hooks, and the hook command line to probe (ours, as written).
    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>);
    /// The payload `doctor` feeds the hook command line [`AgentAdapter::doctor_hooks`] returned:
    /// what this agent sends to that command at a session's start, with `probe_id` as the
    /// session id (the hook sends it as a probe, never as a session). The default is Claude
    /// Code's shape.
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        crate::doctor::probe::probe_payload(probe_id)
    }
    /// The agent's version behind an observation, where something on disk tells it.
    fn version_of(&self, obs: &Observation) -> Option<String> {
        let _ = obs;
        None
    }
    /// What `status` says when [`AgentAdapter::version_of`] finds none.
    fn version_unknown_text(&self) -> String {
        format!(
            "version unknown: {}'s hooks do not send one",
            self.product_name()
        )
    }

    // --- commands ---------------------------------------------------------------------------

    /// The command that resumes a session (`id` already shell-quoted).
    fn resume_command(&self, quoted_id: &str) -> String;

    // --- agents with payloads and files of their own ------------------------------------------

    /// For an agent whose hook payloads are not Claude-shaped (Copilot's camelCase, the event
    /// named on our command line; OpenCode's bus events forwarded by our plugin): the whole hook
    /// call, parsed by the adapter. `None` (the default): the Claude-shaped parser reads it.
    fn own_hook_call(
        &self,
        agent: Agent,
        args: &[String],
        payload: &[u8],
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<OwnHookCall> {
        let _ = (agent, args, payload, at);
        None
    }
    /// The file in `dir` that is ours alone (the agent loads every file of its kind from that
    /// folder): `uninstall` removes it, after [`AgentAdapter::plan_hooks`] said it is ours.
    /// `None` (the default): our hooks live in a shared file and are edited out of it.
    fn own_file(&self, dir: &Path) -> Option<PathBuf> {
        let _ = dir;
        None
    }

    /// For an agent that runs a program of ours at each turn's end (Codex's `notify`): the
    /// observation that program's JSON argument says. `None` (the default): it runs none.
    fn notify_observation(
        &self,
        agent: Agent,
        json: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<Result<Observation, crate::hook_payload::PayloadError>> {
        let _ = (agent, json, at);
        None
    }

    /// Starts the feeds that read this agent's own files (in `ctx.dirs`, its folders), each
    /// named for the engine's task list. None by default: the agent is known from its hooks.
    /// What one input of the agent's status-line command says (the agents that hand a status
    /// line their context window and plan limits: Claude Code): the session's context as an
    /// observation that moves no state, and the plan's windows. `None`: nothing to take.
    fn status_line_report(
        &self,
        _payload: &[u8],
        _at: chrono::DateTime<chrono::Utc>,
    ) -> Option<(Observation, Vec<crate::plan_limits::PlanWindow>)> {
        None
    }

    /// Where the agent's context window is unknown until something is turned on: what to say
    /// (shown beside the tokens instead of a guessed size). `None`: nothing to turn on.
    fn context_window_hint(&self) -> Option<&'static str> {
        None
    }

    fn spawn_feeds(&self, ctx: &crate::feeds::FeedContext<'_>) -> Vec<crate::feeds::NamedTask> {
        let _ = ctx;
        Vec::new()
    }
}

/// A program that runs another agent's hooks (see [`AgentAdapter::foreign_callers`]): how its
/// calls are told apart from the host agent's own.
#[derive(Debug)]
pub struct ForeignProgram {
    /// Its stable name on the control socket ("copilot").
    pub id: &'static str,
    /// The name `doctor` shows ("GitHub Copilot CLI").
    pub name: &'static str,
    /// Payload keys only it sends.
    pub payload_keys: &'static [&'static str],
    /// Its process names, when it is the hook's first non-shell ancestor.
    pub process_names: &'static [&'static str],
    /// Environment variables it gives its hooks.
    pub env_vars: &'static [&'static str],
    /// The agent whose hooks it runs.
    pub host: Agent,
    /// Where it finds those hooks, for `doctor` ("a project's .claude/settings.json").
    pub loads_from: &'static str,
}

/// A hook call an adapter parsed itself ([`AgentAdapter::own_hook_call`]).
#[derive(Debug, Clone, PartialEq)]
pub enum OwnHookCall {
    /// Journal and deliver it.
    Observation(Box<Observation>),
    /// An event this version does not know: counted by the engine.
    Unknown(String),
    /// Known, and nothing to do with a session's state.
    Ignored,
    /// Not a payload of this agent's: logged.
    Invalid(String),
}

/// Claude Code's hook event names (the default mapping, shared by Claude-compatible agents).
pub fn standard_hook_event(name: &str) -> HookEvent {
    match crate::hook_payload::hook_event(name) {
        Some(event) => HookEvent::Event(event),
        None if EventKind::IGNORED_HOOK_EVENTS.contains(&name) => HookEvent::Ignored,
        None => HookEvent::Unknown,
    }
}

/// The registered agent with this id or alias (case-insensitive).
pub fn by_name(name: &str) -> Option<Agent> {
    Agent::by_name(name)
}

/// The agent a bare `agent-tray hook` (no `--agent`, no telling payload) stands for: hook lines
/// written before `--agent` existed were Claude Code's.
pub const LEGACY_HOOK_AGENT: Agent = Agent::Claude;

/// The agent whose process this is, by its `comm` name.
pub fn by_process_name(comm: &str) -> Option<Agent> {
    REGISTERED
        .iter()
        .copied()
        .find(|a| a.adapter().process_names().contains(&comm))
}

/// The agent a launcher's script is (`node /…/@openai/codex/bin/codex.js`, `node /usr/bin/claude`).
pub fn by_script(script: &str) -> Option<Agent> {
    if let Some(agent) = REGISTERED.iter().copied().find(|a| {
        a.adapter()
            .script_markers()
            .iter()
            .any(|m| script.contains(m))
    }) {
        return Some(agent);
    }
    let base = script.rsplit('/').next().unwrap_or(script);
    by_process_name(base.strip_suffix(".js").unwrap_or(base))
}

/// The agent a payload looks like, where no `--agent` was given (see
/// [`AgentAdapter::payload_evidence`]).
pub fn by_payload(fields: &HookFields, event: EventKind) -> Option<Agent> {
    let mut best: Option<(u8, Agent)> = None;
    for &agent in REGISTERED {
        let score = agent.adapter().payload_evidence(fields, event);
        if score > 0 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, agent));
        }
    }
    best.map(|(_, a)| a)
}

/// The file each registered agent's hooks go into, where its folder is known (its
/// [`AgentAdapter::config_dir`] and [`AgentAdapter::hooks_file`]).
pub fn hook_files_from_env() -> Vec<PathBuf> {
    REGISTERED
        .iter()
        .filter_map(|a| {
            let adapter = a.adapter();
            adapter.config_dir().map(|dir| adapter.hooks_file(&dir))
        })
        .collect()
}

/// `$HOME/<rest>` when no override is set.
pub(crate) fn home_dir_or(env: &str, rest: &str) -> Option<PathBuf> {
    match std::env::var_os(env).filter(|v| !v.is_empty()) {
        Some(dir) => Some(absolute(Path::new(&dir))),
        None => std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(rest)),
    }
}

pub(crate) fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir()
        .map(|d| d.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    // An agent added to the domain's vocabulary with its adapter in another place of ADAPTERS
    // would answer for the wrong agent everywhere (names, hooks, processes): each adapter must
    // sit at its own agent's index.
    #[test]
    fn each_adapter_sits_at_its_agents_place() {
        for (agent, adapter) in Agent::ALL.iter().zip(ADAPTERS) {
            assert_eq!(
                adapter.id(),
                agent.as_str(),
                "ADAPTERS is out of step with Agent::ALL"
            );
            assert_eq!(agent.adapter().id(), agent.as_str());
        }
    }
}
