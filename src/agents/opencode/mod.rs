//! OpenCode (`opencode-ai`, a native Bun binary; recorded with 1.18.33).
//!
//! OpenCode has no command hooks: it loads JavaScript plugins. `agent-tray install --opencode`
//! writes ours ([`install`]), which forwards the bus events that say what a session is doing to
//! `agent-tray hook --agent opencode`; [`event`] turns them into observations.
//!
//! Liveness: nothing fires on exit, clean or killed, so the pid decides. The plugin runs inside
//! the OpenCode process (the TUI's worker thread) and sends `process.pid`, which is the process
//! the user sees. Every `opencode` subcommand (`session list`, `export`) also loads plugins under
//! its own short-lived pid, but emits no session event, so only a process with a session makes
//! one. OpenCode's SQLite store (`opencode.db`) is history, not liveness: never read as sessions.
//!
//! Its fork Kilo Code CLI kept the plugin API and the bus, so [`install`] (given the host agent),
//! [`event`], [`permission_probe`], [`session_probe`] and [`version_beside_if`] also serve
//! `super::kilo`.

pub mod event;
pub mod install;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{AgentAdapter, InstallOptions, OwnHookCall};
use crate::doctor::findings::Finding;
use crate::install::{Action, InstallError, Plan};
use crate::model::Agent;

/// OpenCode's adapter.
pub struct OpenCode;

impl AgentAdapter for OpenCode {
    fn agent(&self) -> Agent {
        Agent::OpenCode
    }

    fn own_ask_call(&self, payload: &[u8]) -> Option<crate::answering::AskCall> {
        event::ask_call(payload)
    }

    fn own_hook_call(
        &self,
        agent: Agent,
        _args: &[String],
        payload: &[u8],
        at: DateTime<Utc>,
    ) -> Option<OwnHookCall> {
        Some(event::hook_call(agent, payload, at))
    }

    /// The plugins folder (`$XDG_CONFIG_HOME/opencode/plugins`), where our file goes.
    fn config_dir(&self) -> Option<PathBuf> {
        install::plugins_dir_from_env()
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join(install::PLUGIN_FILE_NAME)
    }
    fn own_file(&self, dir: &Path) -> Option<PathBuf> {
        Some(self.hooks_file(dir))
    }
    /// Installed here: the program on PATH, or OpenCode's config folder exists.
    fn is_installed(&self) -> bool {
        crate::os_fs::find_on_path(self.entry().program).is_some()
            || self
                .config_dir()
                .and_then(|d| d.parent().map(Path::to_path_buf))
                .is_some_and(|d| d.is_dir())
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
    /// Our plugin is JavaScript: nothing in it can be switched off from a JSON document.
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
            "agent-tray install --opencode",
            install::hook_command_in,
        )
    }
    /// What the plugin forwards when OpenCode asks for a permission.
    fn answer_probe_payload(&self, probe_id: &str) -> Vec<u8> {
        permission_probe(probe_id)
    }

    /// What the plugin forwards when OpenCode makes a session (`session.created`).
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        session_probe(probe_id)
    }

    /// From the running process: OpenCode's hooks and plugin context send no version, but its
    /// binary sits in its npm package (`…/opencode-ai/bin/opencode`, or the platform package
    /// `opencode-linux-x64/bin/opencode`) beside the `package.json` that names it.
    fn version_of(&self, obs: &crate::model::Observation) -> Option<String> {
        let exe = std::fs::read_link(format!("/proc/{}/exe", obs.pid?)).ok()?;
        version_beside(&exe)
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: OpenCode sends none, and its process is gone or not from an npm package"
            .into()
    }
}

/// What our plugin forwards when its host asks for a permission (`permission.asked`), for
/// `doctor`'s answer probe: the same for every host of the plugin.
pub fn permission_probe(probe_id: &str) -> Vec<u8> {
    let cwd = crate::doctor::findings::probe_cwd();
    serde_json::json!({
        "v": 1,
        "directory": cwd,
        "ts": chrono::Utc::now().timestamp_millis(),
        "type": "permission.asked",
        "properties": {
            "id": format!("per_{probe_id}"), "sessionID": probe_id, "permission": "bash",
            "patterns": ["true"], "metadata": {"command": "true"}, "always": [],
        },
    })
    .to_string()
    .into_bytes()
}

/// What our plugin forwards when its host makes a session (`session.created`), for `doctor`'s
/// delivery probe.
pub fn session_probe(probe_id: &str) -> Vec<u8> {
    let cwd = crate::doctor::findings::probe_cwd();
    serde_json::json!({
        "v": 1,
        "directory": cwd,
        "ts": chrono::Utc::now().timestamp_millis(),
        "type": "session.created",
        "properties": {"info": {"id": probe_id, "directory": cwd, "title": "agent-tray doctor"}},
    })
    .to_string()
    .into_bytes()
}

/// The most of a `package.json` read for the version.
const MAX_PACKAGE_JSON: u64 = 64 * 1024;

/// The version in the `package.json` of the npm package whose `bin/` holds `exe`, when that
/// package is OpenCode's (`opencode-ai`, or a platform package `opencode-<os>-<arch>…`).
pub fn version_beside(exe: &Path) -> Option<String> {
    version_beside_if(exe, |name| {
        name == "opencode-ai" || name.starts_with("opencode-")
    })
}

/// The version in the `package.json` of the npm package whose `bin/` holds `exe`, when that
/// package's name passes `is_ours` (OpenCode's forks ship their binaries the same way).
pub fn version_beside_if(exe: &Path, is_ours: fn(&str) -> bool) -> Option<String> {
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
    if !is_ours(name) {
        return None;
    }
    let version = doc.get("version")?.as_str()?;
    (!version.is_empty() && version.len() <= 64).then(|| version.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::catalogue::InCatalogue;

    #[test]
    fn the_version_comes_from_the_npm_package_holding_the_binary() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, want) in [
            ("opencode-ai", Some("1.18.33")),
            ("opencode-linux-x64", Some("1.18.33")),
            ("left-pad", None),
        ] {
            let bin = tmp.path().join(name).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(
                tmp.path().join(name).join("package.json"),
                format!(r#"{{"name":"{name}","version":"1.18.33","bin":{{"opencode":"./bin/opencode"}}}}"#),
            )
            .unwrap();
            assert_eq!(
                version_beside(&bin.join("opencode")).as_deref(),
                want,
                "{name}"
            );
        }
        assert_eq!(version_beside(Path::new("/usr/local/bin/opencode")), None);
    }

    #[test]
    fn resume_names_the_session() {
        assert_eq!(
            Agent::OpenCode
                .entry()
                .resume_command("ses_dd1229c72ffen4TkoQjVFBx9Vv"),
            "opencode --session ses_dd1229c72ffen4TkoQjVFBx9Vv"
        );
        assert_eq!(Agent::OpenCode.as_str(), "opencode");
    }
}
