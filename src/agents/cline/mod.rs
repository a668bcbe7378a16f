//! Cline CLI (npm `cline`, a Node launcher for a compiled Bun binary; recorded with 3.0.65).
//!
//! Cline runs executable hook files from its hooks folders, one per event name
//! (`~/.cline/hooks/TaskStart.sh`, …; also `~/Documents/Cline/Hooks/` and a project's
//! `.clinerules/hooks/`), with a JSON payload on stdin. `agent-tray install --cline` adds one
//! small script of ours per event ([`install`]); [`event`] turns the payloads into
//! observations. Hooks can only cancel a tool call (PreToolUse `{"cancel": true}`): nothing is
//! asked through them, so nothing is answered from the tray.
//!
//! Processes: a `cline` CLI (the interactive `cline -i`, or a one-shot `cline "prompt"`) runs
//! its session in its own process when no hub of Cline's runs yet for this user, and starts
//! one in the background (`cline --cline-hub-daemon`); every later CLI runs its session in that
//! shared hub, which runs the hooks (seen with 3.0.65; `CLINE_SESSION_BACKEND_MODE=local` keeps
//! a one-shot run in its own process). In the first case the hooks' parent is the CLI: it is
//! the session's pid, and its exit, `kill -9` included, ends the session. The hub is no
//! session's process (it serves all of them and lives on when the CLI that started a session
//! is closed or killed), so a hook it runs reports no pid ([`AgentAdapter::is_helper_process`]):
//! such a session ends by its time-out. Leaving the CLI fires no hook in either case.
//!
//! Cline's own store (`~/.cline/data/sessions/<id>/<id>.json`, `sessions.db`) is history, and
//! its `pid` field names the hub: it is not read.

pub mod event;
pub mod install;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{AgentAdapter, InstallOptions, OwnHookCall};
use crate::doctor::findings::Finding;
use crate::install::{Action, InstallError, Plan};
use crate::model::Agent;

/// The argument that makes the `cline` binary the shared hub.
pub const HUB_DAEMON_FLAG: &str = "--cline-hub-daemon";

/// Cline's adapter.
pub struct ClineCli;

impl AgentAdapter for ClineCli {
    fn agent(&self) -> Agent {
        Agent::Cline
    }

    fn own_hook_call(
        &self,
        agent: Agent,
        _args: &[String],
        payload: &[u8],
        at: DateTime<Utc>,
    ) -> Option<OwnHookCall> {
        let pid = crate::agent_pid::agent_pid_of_this_hook(Some(agent), &super::Adapters)
            .map(|(pid, _)| pid);
        Some(match event::parse(agent, payload, at, pid) {
            Ok(obs) => OwnHookCall::Observation(Box::new(obs)),
            Err(event::ClineEventError::UnknownEvent(e)) => OwnHookCall::Unknown(e),
            Err(event::ClineEventError::KnownIgnored(_)) => OwnHookCall::Ignored,
            Err(e) => OwnHookCall::Invalid(e.to_string()),
        })
    }

    /// The hub serves every session and outlives them: never a session's process.
    fn is_helper_process(&self, argv: &[String]) -> bool {
        argv.iter().skip(1).any(|a| a == HUB_DAEMON_FLAG)
    }

    /// Cline's folder (`$CLINE_DIR`, else `~/.cline`); our scripts go in its `hooks/`.
    fn config_dir(&self) -> Option<PathBuf> {
        install::cline_dir_from_env()
    }
    /// The script for a session's start (the one `doctor` probes and drift watches).
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        install::script_path(dir, "TaskStart")
    }
    fn own_file(&self, dir: &Path) -> Option<PathBuf> {
        Some(self.hooks_file(dir))
    }
    fn own_files(&self, dir: &Path) -> Vec<PathBuf> {
        install::script_paths(dir)
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        _options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        install::plan_all(dir, bin, action == Action::Install)
    }
    /// Scripts, not a JSON document: nothing in them can be switched off.
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
            "agent-tray install --cline",
            install::hook_command_in,
        )
    }

    /// What Cline sends its `TaskStart` script at a turn's start (3.0.65's shape).
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        let cwd = crate::doctor::findings::probe_cwd();
        serde_json::json!({
            "clineVersion": "",
            "timestamp": Utc::now().to_rfc3339(),
            "taskId": format!("conv_{probe_id}"),
            "sessionContext": {"rootSessionId": probe_id},
            "workspaceRoots": [cwd],
            "userId": "agent-tray-doctor",
            "agent_id": "agent_probe",
            "parent_agent_id": null,
            "hookName": "agent_start",
            "taskStart": {"taskMetadata": {}},
        })
        .to_string()
        .into_bytes()
    }

    /// From the session's process, when it has one: Cline's payloads carry an empty
    /// `clineVersion`, but its binary sits in its npm platform package
    /// (`@cline/cli-linux-x64/bin/cline`) beside the `package.json` that names it.
    fn version_of(&self, obs: &crate::model::Observation) -> Option<String> {
        let exe = std::fs::read_link(format!("/proc/{}/exe", obs.pid?)).ok()?;
        version_beside(&exe)
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: Cline sends none, and its session runs in its hub (no process of its own)"
            .into()
    }
}

/// The most of a `package.json` read for the version.
const MAX_PACKAGE_JSON: u64 = 64 * 1024;

/// The version in the `package.json` of the npm package whose `bin/` holds `exe`, when that
/// package is Cline's (`cline`, or a platform package `@cline/cli-<os>-<arch>`).
pub fn version_beside(exe: &Path) -> Option<String> {
    use std::io::Read as _;
    let path = exe.parent()?.parent()?.join("package.json");
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_PACKAGE_JSON)
        .read_to_string(&mut text)
        .ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    let name = doc.get("name")?.as_str()?;
    if name != "cline" && !name.starts_with("@cline/cli-") {
        return None;
    }
    let version = doc.get("version")?.as_str()?;
    (!version.is_empty() && version.len() <= 64).then(|| version.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::agent_pid::find_agent_pid;
    use crate::catalogue::InCatalogue;
    use crate::process::{ProcInfo, ProcessTable};
    use std::collections::HashMap;

    struct Table(HashMap<u32, (String, u32, Vec<String>)>);
    impl ProcessTable for Table {
        fn info(&self, pid: u32) -> Option<ProcInfo> {
            self.0.get(&pid).map(|(comm, ppid, _)| ProcInfo {
                comm: comm.clone(),
                ppid: *ppid,
            })
        }
        fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
            self.0.get(&pid).map(|(_, _, argv)| argv.clone())
        }
        fn exists(&self, pid: u32) -> bool {
            self.0.contains_key(&pid)
        }
        fn start_token(&self, _pid: u32) -> Option<String> {
            None
        }
        fn children(&self, _pid: u32) -> Vec<u32> {
            Vec::new()
        }
    }
    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    // As seen with 3.0.65: the TUI's hooks run under the detached hub (parent: init), through
    // `sh`; a one-shot run in local mode runs them under its own `cline` process.
    #[test]
    fn a_hook_run_by_the_hub_has_no_pid_and_one_run_by_a_local_cline_is_that_process() {
        let hub = Table(HashMap::from([
            (
                2808,
                (
                    "cline".into(),
                    1,
                    argv("/n/@cline/cli-linux-x64/bin/cline --cline-hub-daemon --cwd /p --port 25463"),
                ),
            ),
            (3074, ("sh".into(), 2808, argv("sh /h/.cline/hooks/TaskStart.sh"))),
        ]));
        assert_eq!(
            find_agent_pid(&hub, 3074, Some(Agent::Cline), &crate::agents::Adapters),
            None,
            "the hub serves every session: no session's pid"
        );
        let local = Table(HashMap::from([
            (552, ("node".into(), 100, argv("node /n/.bin/cline hi"))),
            (554, ("cline".into(), 552, argv("/n/.bin/cline hi"))),
            (
                560,
                ("sh".into(), 554, argv("sh /h/.cline/hooks/TaskStart.sh")),
            ),
        ]));
        assert_eq!(
            find_agent_pid(&local, 560, Some(Agent::Cline), &crate::agents::Adapters),
            Some((554, Agent::Cline))
        );
    }

    #[test]
    fn the_version_comes_from_the_npm_platform_package_holding_the_binary() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, want) in [
            ("@cline/cli-linux-x64", Some("3.0.65")),
            ("cline", Some("3.0.65")),
            ("left-pad", None),
        ] {
            let bin = tmp.path().join(name.replace('/', "_")).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(
                bin.parent().unwrap().join("package.json"),
                format!(r#"{{"name":"{name}","version":"3.0.65"}}"#),
            )
            .unwrap();
            assert_eq!(
                version_beside(&bin.join("cline")).as_deref(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn resume_names_the_session_and_the_probe_parses_as_a_turn_start() {
        assert_eq!(
            Agent::Cline.entry().resume_command("1796539572804_hx0m0"),
            "cline --id 1796539572804_hx0m0"
        );
        let payload = ClineCli.probe_payload("probe-1");
        let obs = event::parse(Agent::Cline, &payload, Utc::now(), None).expect("probe parses");
        assert_eq!(obs.session_id, "probe-1");
        assert_eq!(obs.event, crate::model::EventKind::UserPromptSubmit);
    }
}
