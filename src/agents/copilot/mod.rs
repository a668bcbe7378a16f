//! GitHub Copilot CLI (`@github/copilot`, a native binary; recorded with 1.0.102).
//!
//! Everything the tray knows about Copilot lives here: its hook payloads ([`hook`]), its
//! session folder ([`session_state`]), its hook file ([`install`]), which process is it
//! ([`find_pid`]), and its resume and jump commands.
//!
//! Which process: the CLI runs hooks as its own children (no shell between, recorded), and its
//! `comm` is its main thread's name, `MainThread`, not `copilot`: a walk by name never finds it.
//! So the walk steps over shells and takes the first other process only when its command line
//! is Copilot's (`…/copilot`, or node running `@github/copilot`'s loader) **or** the session's
//! folder holds an `inuse.<PID>.lock` naming it.

pub mod feed;
pub mod hook;
pub mod install;
pub mod session_state;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{AgentAdapter, InstallOptions, OwnHookCall};
use crate::doctor::findings::Finding;
use crate::install::{Action, InstallError, Plan};
use crate::model::Agent;
use crate::process::{ProcessTable, SystemProcesses};

/// GitHub Copilot CLI's adapter.
pub struct CopilotCli;

/// Shells a hook command may run under (stepped over).
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "ash", "busybox",
];
/// Deeper than any real hook ancestry.
const MAX_DEPTH: usize = 6;

/// Whether a command line is Copilot's CLI: its native binary, or node running its loader.
pub fn is_copilot_cmdline(argv: &[String]) -> bool {
    let base = |a: &String| {
        Path::new(a)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match argv.first() {
        Some(prog) if base(prog) == "copilot" => true,
        Some(prog) if matches!(base(prog).as_str(), "node" | "nodejs") => argv
            .get(1)
            .is_some_and(|s| s.contains("@github/copilot") || base(s) == "copilot"),
        _ => false,
    }
}

/// The Copilot process above a hook whose parent is `parent`: past shells, the first process
/// that is Copilot by its command line or by a lock in the session's folder (`lock_pids`).
/// Anything else gives `None`: no pid rather than a wrong one.
pub fn find_pid(table: &dyn ProcessTable, parent: u32, lock_pids: &[u32]) -> Option<u32> {
    let mut pid = parent;
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return None;
        }
        let info = table.info(pid)?;
        if SHELLS.contains(&info.comm.as_str()) {
            pid = info.ppid;
            continue;
        }
        let by_lock = lock_pids.contains(&pid);
        let by_cmdline = table.cmdline(pid).is_some_and(|a| is_copilot_cmdline(&a));
        return (by_lock || by_cmdline).then_some(pid);
    }
    None
}

/// The command that resumes a session in its folder (`quoted_id` already shell-quoted).
pub fn resume_command(quoted_id: &str) -> String {
    format!("copilot --resume={quoted_id}")
}

/// The pids named by the locks in a session's folder under `home`.
fn session_lock_pids(home: &Path, session_id: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(home.join("session-state").join(session_id)) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .flatten()
        .take(64)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    session_state::lock_pids(names.iter().map(String::as_str))
}

/// Our hook file as `install` would plan it, as a [`Plan`] (a removal plans no edit: see
/// [`AgentAdapter::own_file`]).
fn plan_own_file(path: &Path, bin: &Path, action: Action) -> Result<Plan, InstallError> {
    let old = crate::install::read_optional(path)?;
    let op = install::plan(path, old.as_deref(), bin, action == Action::Install)?;
    Ok(super::own_file::as_plan(path, old, op))
}

impl AgentAdapter for CopilotCli {
    fn agent(&self) -> Agent {
        Agent::Copilot
    }

    fn own_hook_call(
        &self,
        agent: Agent,
        args: &[String],
        payload: &[u8],
        at: DateTime<Utc>,
    ) -> Option<OwnHookCall> {
        let event = hook::event_flag(args);
        Some(match hook::parse(event.as_deref(), payload) {
            Ok(call) => {
                // The CLI's lock in the session's folder names its pid (its comm does not).
                let locks = install::copilot_home_from_env()
                    .map(|home| session_lock_pids(&home, &call.session_id))
                    .unwrap_or_default();
                let parent = crate::process::parent_of_this_process().unwrap_or(0);
                let pid = find_pid(&SystemProcesses, parent, &locks);
                OwnHookCall::Observation(Box::new(call.into_observation(agent, at, pid)))
            }
            Err(hook::CopilotHookError::UnknownEvent(e)) => OwnHookCall::Unknown(e),
            Err(hook::CopilotHookError::KnownIgnored(_)) => OwnHookCall::Ignored,
            Err(e) => OwnHookCall::Invalid(e.to_string()),
        })
    }

    fn config_dir(&self) -> Option<PathBuf> {
        install::copilot_home_from_env().map(|d| super::absolute(&d))
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join("hooks").join(install::HOOK_FILE_NAME)
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
        plan_own_file(&self.hooks_file(dir), bin, action)
    }

    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        super::own_file::doctor_findings(
            agent,
            self.config_dir(),
            bin,
            "agent-tray install --copilot",
            install::session_start_command_in,
        )
    }

    /// A `permissionRequest` for a tool Copilot asks about by default ([`hook::ASKING_TOOLS`]);
    /// every other call only reports.
    fn own_ask_call(&self, payload: &[u8]) -> Option<crate::answering::AskCall> {
        hook::ask_call(payload)
    }

    /// Our hook file runs one command per event; the answer path is `permissionRequest`'s.
    fn answer_probe_command(&self, probed: &str) -> String {
        probed.replace(" --event sessionStart", " --event permissionRequest")
    }

    /// A `permissionRequest` as Copilot sends it, for a shell command.
    fn answer_probe_payload(&self, probe_id: &str) -> Vec<u8> {
        serde_json::json!({
            "hookName": "permissionRequest",
            "sessionId": probe_id,
            "timestamp": chrono::Utc::now().timestamp_millis(),
            "cwd": crate::doctor::findings::probe_cwd(),
            "toolName": "bash",
            "toolInput": {"command": "true", "description": "Agent Tray doctor probe"},
            "permissionSuggestions": [],
        })
        .to_string()
        .into_bytes()
    }

    /// Copilot's `sessionStart` payload (the command probed is the `sessionStart` one).
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        serde_json::json!({
            "sessionId": probe_id,
            "timestamp": chrono::Utc::now().timestamp_millis(),
            "cwd": crate::doctor::findings::probe_cwd(),
            "source": "new",
            "initialPrompt": "",
        })
        .to_string()
        .into_bytes()
    }
    /// From the session folder's first line (`session.start` names the CLI's version).
    fn version_of(&self, obs: &crate::model::Observation) -> Option<String> {
        if !session_state::is_session_dir_name(&obs.session_id) {
            return None;
        }
        let path = self
            .config_dir()?
            .join("session-state")
            .join(&obs.session_id)
            .join("events.jsonl");
        let (mut file, _) = crate::feeds::open_regular_file(&path).ok()?;
        let (line, _) = crate::feeds::tail::read_first_line(&mut file).ok()??;
        session_state::version_in_first_line(std::str::from_utf8(&line).ok()?)
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: its hooks send none and the session's folder is gone".into()
    }

    /// Its session folders (`session-state/<uuid>/`: events and the process's lock).
    fn spawn_feeds(&self, ctx: &crate::feeds::FeedContext<'_>) -> Vec<crate::feeds::NamedTask> {
        let feed = feed::CopilotSessionsFeed::new(
            ctx.dirs.to_vec(),
            ctx.config.stats.of("feed_copilot_sessions"),
            crate::process::exists,
        );
        vec![(
            "feed_copilot_sessions",
            crate::feeds::watch::spawn_feed(
                feed,
                ctx.sink.clone(),
                ctx.config.timing,
                ctx.token.clone(),
            ),
        )]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::catalogue::InCatalogue;

    use crate::test_support::ScriptedTable as Tree;

    #[test]
    fn a_hook_run_by_the_native_cli_named_mainthread_finds_it() {
        // Recorded: the hook's parent is the CLI, whose comm is its main thread's name.
        let t = Tree::default()
            .with(
                12681,
                900,
                "MainThread",
                &["/opt/n/@github/copilot-linux-x64/copilot"],
            )
            .with(900, 1, "tmux: server", &["tmux"]);
        assert_eq!(find_pid(&t, 12681, &[]), Some(12681));
    }

    #[test]
    fn a_shell_between_is_stepped_over_and_a_lock_alone_is_enough() {
        let t = Tree::default()
            .with(50, 40, "bash", &["bash", "-c", "agent-tray hook"])
            .with(40, 1, "MainThread", &["/renamed/binary"]);
        assert_eq!(find_pid(&t, 50, &[40]), Some(40));
        assert_eq!(find_pid(&t, 50, &[]), None, "neither lock nor command line");
    }

    #[test]
    fn another_program_above_the_hook_gives_no_pid() {
        let t = Tree::default()
            .with(70, 60, "sh", &["sh"])
            .with(60, 1, "claude", &["claude"]);
        assert_eq!(find_pid(&t, 70, &[]), None);
    }

    #[test]
    fn the_npm_loader_under_node_is_copilot_too() {
        let argv: Vec<String> = [
            "node",
            "/usr/lib/node_modules/@github/copilot/npm-loader.js",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert!(is_copilot_cmdline(&argv));
        assert!(!is_copilot_cmdline(&[
            "node".to_string(),
            "server.js".to_string()
        ]));
    }

    #[test]
    fn resume_names_the_session() {
        assert_eq!(
            Agent::Copilot
                .entry()
                .resume_command("da763f3d-1272-45ca-939d-52e915d454e7"),
            "copilot --resume=da763f3d-1272-45ca-939d-52e915d454e7"
        );
        assert_eq!(Agent::Copilot.as_str(), "copilot");
    }
}
