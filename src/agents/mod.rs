//! One adapter per coding agent, and the one `match` that finds them.
//!
//! What an agent *does* lives in its folder here: how its hook payloads map onto
//! [`Observation`](crate::model::Observation)s, which of its processes owns a session, where its
//! configuration lives and how our hooks are merged into it, what `doctor` checks, its feeds.
//! What it *is* (names, colour, programs, process names, how it is answered and resumed) is
//! plain data in its row of [`crate::catalogue`], which everything below the adapters may read.
//!
//! The domain's [`Agent`] is an exhaustive enum: [`adapter_of`] and [`crate::catalogue::entry`]
//! are the only `match`es over it, so an agent added to the domain does not compile until it has
//! its row and its adapter, and no other code names an agent (`tests/adapter_boundary.rs`).
//!
//! # Adding an agent
//! 1. Add its variant (and the other spellings people type) to `Agent` in the domain crate
//!    (`domain/src/model.rs`; the id is what `list --json` prints, never changed once released).
//! 2. Add its row to `src/catalogue.rs`.
//! 3. Make a folder `src/agents/<name>/` with a `mod.rs` holding a unit struct that implements
//!    [`AgentAdapter`], add `pub mod <name>;` and its arm in [`adapter_of`]. The `--<id>` flag
//!    of `install`/`uninstall`, `doctor`, the window's filter and the UI's colour follow.
//! 4. Test the adapter on payloads recorded from the real binary (`tests/fixtures/<id>/`).

use std::path::{Path, PathBuf};

use crate::doctor::findings::Finding;
use crate::hook_payload::HookFields;
use crate::install::{Action, InstallError, Plan};
use crate::model::{Agent, EventKind, Observation};
use crate::process::ProcessTable;

pub mod auggie;
pub mod claude;
pub mod cline;
pub mod codex;
pub mod copilot;
pub mod crush;
pub mod droid;
pub mod gemini;
pub mod kilo;
pub mod opencode;
pub mod own_file;
pub mod pi;
pub mod qoder;
pub mod qwen;
pub mod settings_hooks;
#[cfg(test)]
pub(crate) mod story;

/// Every agent Agent Tray knows, in the order the window and `doctor` list them.
pub const REGISTERED: &[Agent] = Agent::ALL;

/// Each agent's adapter: the one `match` that registers them.
pub const fn adapter_of(agent: Agent) -> &'static dyn AgentAdapter {
    match agent {
        Agent::Claude => &claude::ClaudeCode,
        Agent::Codex => &codex::Codex,
        Agent::Gemini => &gemini::GeminiCli,
        Agent::Qwen => &qwen::QwenCode,
        Agent::Copilot => &copilot::CopilotCli,
        Agent::OpenCode => &opencode::OpenCode,
        Agent::Pi => &pi::PiAgent,
        Agent::Qoder => &qoder::QoderCli,
        Agent::Auggie => &auggie::Auggie,
        Agent::Droid => &droid::FactoryDroid,
        Agent::Crush => &crush::Crush,
        Agent::Cline => &cline::ClineCli,
        Agent::Kilo => &kilo::KiloCode,
    }
}

/// What an agent does, asked through its id (what it *is* is its catalogue row:
/// [`crate::catalogue::InCatalogue`]).
pub trait AgentKnowledge {
    /// Everything this agent's integration does.
    fn adapter(self) -> &'static dyn AgentAdapter;
}

impl AgentKnowledge for Agent {
    fn adapter(self) -> &'static dyn AgentAdapter {
        adapter_of(self)
    }
}

pub use crate::hook_payload::{standard_hook_event, HookEvent};

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
    /// The agent this adapter is for (a test checks [`adapter_of`] returns each agent's own).
    fn agent(&self) -> Agent;
    /// The agent's catalogue row: its names, colour, programs (the plain data).
    fn entry(&self) -> &'static crate::catalogue::Entry {
        crate::catalogue::entry(self.agent())
    }

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
    /// What a hook call parsed by the adapter itself ([`Self::own_hook_call`]) asks, when it is
    /// a permission request that can be answered from outside the terminal; `None` (the
    /// default) for every other call and agent.
    fn own_ask_call(&self, payload: &[u8]) -> Option<crate::answering::AskCall> {
        let _ = payload;
        None
    }
    /// Whether a standard (Claude-shaped) permission request for `tool` is offered for an
    /// answer from here; `false` for a tool whose answer the agent takes only from its own
    /// dialog (then the hook returns at once and the terminal asks). Every tool by default.
    fn offers_answer_for(&self, tool: &str) -> bool {
        let _ = tool;
        true
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
            "cwd": crate::doctor::findings::probe_cwd(),
            "tool_name": "Bash",
            "tool_input": {"command": "true", "description": "Agent Tray doctor probe"},
            "probe": true,
        })
        .to_string()
        .into_bytes()
    }

    // --- processes --------------------------------------------------------------------------

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

    /// Whether a permission request reported by a hook that `hook_parent` ran is answered
    /// through a route of the agent's own rather than by the hook's wait (Codex's managed
    /// server asks the engine itself): then the hook only reports.
    fn asked_elsewhere(&self, table: &dyn ProcessTable, hook_parent: u32) -> bool {
        let _ = (table, hook_parent);
        false
    }

    // --- talking back -----------------------------------------------------------------------

    /// A way in to its sessions that the engine opens itself (a socket the agent listens on),
    /// for `agent-tray send` and `stop` (`crate::talk_back`); `None` (the default): none, or one
    /// its own program holds and registers (a feed's connection, a plugin).
    fn direct_talk(&self) -> Option<&'static dyn crate::talk_back::DirectTalk> {
        None
    }
    /// Turns on (`true`) or off a way in that needs the user's consent first (Qwen Code's
    /// controller token): `None` when the agent has none; else what was done, or why not.
    fn consent_to_talk(&self, on: bool) -> Option<Result<String, String>> {
        let _ = on;
        None
    }

    // --- configuration and install ----------------------------------------------------------

    /// The agent's configuration folder (from its environment variable or the home folder),
    /// absolute.
    fn config_dir(&self) -> Option<PathBuf>;
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
        crate::os_fs::find_on_path(self.entry().program).is_some()
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
        crate::doctor::findings::probe_payload(probe_id)
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
            self.entry().product_name
        )
    }

    // --- commands ---------------------------------------------------------------------------

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
    /// For an agent whose payloads carry Claude's meaning under other keys (Auggie's
    /// `conversation_id` and `workspace_roots`): the payload rewritten into Claude's keys, which
    /// the standard parser then reads (pid walk, repository, answering and all). `None` (the
    /// default): read as it came.
    fn standard_shaped_payload(&self, payload: &[u8]) -> Option<Vec<u8>> {
        let _ = payload;
        None
    }
    /// The file in `dir` that is ours alone (the agent loads every file of its kind from that
    /// folder): `uninstall` removes it, after [`AgentAdapter::plan_hooks`] said it is ours.
    /// `None` (the default): our hooks live in a shared file and are edited out of it.
    fn own_file(&self, dir: &Path) -> Option<PathBuf> {
        let _ = dir;
        None
    }
    /// Every file in `dir` that is ours alone, for an agent that loads one file per event
    /// (Cline's hook scripts); the default is [`Self::own_file`].
    fn own_files(&self, dir: &Path) -> Vec<PathBuf> {
        self.own_file(dir).into_iter().collect()
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

    fn spawn_feeds(&self, ctx: &crate::feeds::FeedContext<'_>) -> Vec<crate::feeds::NamedTask> {
        let _ = ctx;
        Vec::new()
    }
}

pub use crate::catalogue::ForeignProgram;

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

/// The registered agent with this id or alias (case-insensitive).
pub fn by_name(name: &str) -> Option<Agent> {
    Agent::by_name(name)
}

pub use crate::catalogue::{by_process_name, by_script, LEGACY_HOOK_AGENT};

/// Every adapter, as the ports of the kits below ask for them (the hook's payload parser, the
/// process walk): the composition root hands this to them, so the kits never name the adapters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Adapters;

impl crate::hook_payload::HookVocabulary for Adapters {
    fn hook_event(&self, agent: Agent, name: &str, fields: &HookFields) -> HookEvent {
        agent.adapter().hook_event(name, fields)
    }
    fn refine_observation(&self, agent: Agent, fields: &HookFields, obs: &mut Observation) {
        agent.adapter().refine_observation(fields, obs);
    }
    /// The highest [`AgentAdapter::payload_evidence`] wins; ties go to the earlier agent.
    fn infer_agent(&self, fields: &HookFields, event: EventKind) -> Option<Agent> {
        let mut best: Option<(u8, Agent)> = None;
        for &agent in REGISTERED {
            let score = agent.adapter().payload_evidence(fields, event);
            if score > 0 && best.is_none_or(|(b, _)| score > b) {
                best = Some((score, agent));
            }
        }
        best.map(|(_, a)| a)
    }
}

impl crate::agent_pid::AgentProcesses for Adapters {
    fn is_helper_process(&self, agent: Agent, argv: &[String]) -> bool {
        agent.adapter().is_helper_process(argv)
    }
    fn session_process(&self, agent: Agent, table: &dyn ProcessTable, pid: u32) -> Option<u32> {
        agent.adapter().session_process(table, pid)
    }
}

/// A hook payload's observation, read with every adapter's vocabulary (see
/// [`crate::hook_payload::observation_from_payload`]).
pub fn observation_from_payload(
    payload: &[u8],
    agent_hint: Option<Agent>,
    walked: Option<(u32, Agent)>,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Observation, crate::hook_payload::PayloadError> {
    crate::hook_payload::observation_from_payload(payload, agent_hint, walked, at, &Adapters)
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

    // Each agent must find its own adapter (names, hooks, processes would otherwise answer for
    // another agent).
    #[test]
    fn each_agent_finds_its_own_adapter() {
        for &agent in Agent::ALL {
            assert_eq!(adapter_of(agent).agent(), agent);
        }
    }

    // The answer paths' longest waits live in the catalogue as plain numbers; each must stay
    // below the hook timeout the agent's install writes, or the agent kills our hook first.
    #[test]
    fn answer_waits_end_before_the_hook_timeouts_install_writes() {
        use crate::catalogue::entry;
        let wait = |a: Agent| entry(a).answer_path.map(|p| p.max_wait_secs);
        assert_eq!(
            wait(Agent::Claude),
            Some(claude::install::PERMISSION_TIMEOUT_SECS - 10)
        );
        assert_eq!(
            wait(Agent::Codex),
            Some(codex::install::timeout_secs("PermissionRequest") - 1)
        );
        assert_eq!(
            wait(Agent::Qwen),
            Some(qwen::PERMISSION_TIMEOUT_MS / 1000 - 10),
            "Qwen's hook timeout is written in milliseconds"
        );
        assert_eq!(
            wait(Agent::Copilot),
            Some(u64::from(copilot::install::TIMEOUT_SEC) - 1)
        );
    }
}
