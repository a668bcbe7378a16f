//! Kilo Code CLI (`@kilocode/cli`, a native Bun binary in `@kilocode/cli-<os>-<arch>`; recorded
//! with 7.7.7, the newest whose Linux binary the registry serves).
//!
//! Kilo is a fork of OpenCode that kept its plugin API and its bus: it loads every `*.js` in
//! `$XDG_CONFIG_HOME/kilo/plugins` (also `~/.kilo/plugins`, `~/.kilocode/plugins`, never
//! OpenCode's folders), calls the plugin's `event` hook with OpenCode's event types and
//! payloads (`session.created`, `session.status`, `permission.asked`, …; see
//! `tests/fixtures/kilo/`), and gives the plugin OpenCode's v1 SDK client. So this adapter is
//! OpenCode's plugin, events and answer path with Kilo's names: the plugin text, its install plan
//! and the event parser are OpenCode's ([`super::opencode`]), given [`Agent::Kilo`] as the host,
//! which names the folder (`kilo`), the `--agent kilo` the plugin passes and the plugin's first
//! line. What Kilo adds to the bus (`session.drained`, `message.part.removed`, …) is dropped in the
//! plugin with every other event it does not forward.
//!
//! Liveness: as OpenCode's, nothing fires on exit; the plugin sends `process.pid`, which is the
//! native `kilo` process (the npm wrapper on PATH is node, which starts it as a child). Kilo's
//! SQLite store (`~/.local/share/kilo/kilo.db`) is history, never read as sessions.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::opencode::{event, install};
use super::{AgentAdapter, InstallOptions, OwnHookCall};
use crate::doctor::findings::Finding;
use crate::install::{Action, InstallError, Plan};
use crate::model::Agent;

/// Kilo Code CLI's adapter.
pub struct KiloCode;

/// The npm packages Kilo's binary ships in: the wrapper `@kilocode/cli` and its platform
/// packages `@kilocode/cli-linux-x64`, `…-baseline`, `…-musl`.
fn is_kilo_package(name: &str) -> bool {
    name == "@kilocode/cli" || name.starts_with("@kilocode/cli-")
}

/// The command line Kilo's plugin in `text` runs (for `doctor`).
fn hook_command_in(text: &str) -> Option<String> {
    install::hook_command_of(Agent::Kilo, text)
}

impl AgentAdapter for KiloCode {
    fn agent(&self) -> Agent {
        Agent::Kilo
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

    /// The plugins folder (`$XDG_CONFIG_HOME/kilo/plugins`), where our file goes.
    fn config_dir(&self) -> Option<PathBuf> {
        install::plugins_dir_of_from_env(Agent::Kilo)
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join(install::PLUGIN_FILE_NAME)
    }
    fn own_file(&self, dir: &Path) -> Option<PathBuf> {
        Some(self.hooks_file(dir))
    }
    /// Installed here: the program on PATH, or Kilo's config folder exists.
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
        let op = install::plan_for(
            Agent::Kilo,
            &path,
            old.as_deref(),
            bin,
            action == Action::Install,
        )?;
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
            "agent-tray install --kilo",
            hook_command_in,
        )
    }
    /// What the plugin forwards when Kilo asks for a permission (OpenCode's shape).
    fn answer_probe_payload(&self, probe_id: &str) -> Vec<u8> {
        super::opencode::permission_probe(probe_id)
    }
    /// What the plugin forwards when Kilo makes a session (`session.created`).
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        super::opencode::session_probe(probe_id)
    }

    /// From the running process: the plugin sends no version, but Kilo's binary sits in its
    /// npm platform package (`@kilocode/cli-linux-x64/bin/kilo`) beside the `package.json`
    /// that names it.
    fn version_of(&self, obs: &crate::model::Observation) -> Option<String> {
        let exe = std::fs::read_link(format!("/proc/{}/exe", obs.pid?)).ok()?;
        super::opencode::version_beside_if(&exe, is_kilo_package)
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: Kilo sends none, and its process is gone or not from an npm package"
            .into()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::catalogue::InCatalogue;
    use crate::model::{EventKind, ReportedStatus};
    use chrono::TimeZone;

    const FIXTURE: &str = include_str!("../../../tests/fixtures/kilo/real-7.7.7/events.jsonl");

    fn now() -> DateTime<Utc> {
        Utc.timestamp_millis_opt(1_796_000_000_000)
            .single()
            .unwrap_or_default()
    }

    /// The recorded events Kilo's bus gave a plugin, as ours forwards them (the types it
    /// forwards, with the pid, the folder and the time).
    fn forwarded() -> Vec<(String, Vec<u8>)> {
        FIXTURE
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["kind"] == "event")
            .filter(|v| event::FORWARDED.contains(&v["type"].as_str().unwrap_or("")))
            .map(|v| {
                let body = serde_json::json!({
                    "v": 1, "pid": v["pid"], "directory": "/home/dev/proj", "ts": v["ts"],
                    "type": v["type"], "properties": v["properties"],
                });
                (
                    v["type"].as_str().unwrap_or("").to_string(),
                    serde_json::to_vec(&body).expect("json"),
                )
            })
            .collect()
    }

    fn call(body: &[u8]) -> OwnHookCall {
        KiloCode
            .own_hook_call(Agent::Kilo, &[], body, now())
            .expect("Kilo parses its own hook calls")
    }

    #[test]
    fn the_recorded_turn_maps_onto_start_working_permission_working_idle() {
        let mut seen = Vec::new();
        for (kind, body) in forwarded() {
            match call(&body) {
                OwnHookCall::Observation(obs) => {
                    assert_eq!(obs.agent, Agent::Kilo, "{kind}");
                    assert!(obs.session_id.starts_with("ses_"), "{kind}");
                    assert!(obs.pid.is_some_and(|p| p > 1), "{kind}: the plugin's pid");
                    assert_ne!(obs.at, now(), "{kind}: stamped by the plugin's ts");
                    let label = match (obs.event, obs.status) {
                        (EventKind::StatusReport, Some(ReportedStatus::Busy)) => "busy",
                        (EventKind::SessionStart, _) => "start",
                        (EventKind::PermissionRequest, _) => "ask",
                        (EventKind::PreToolUse, _) => "replied",
                        (EventKind::Stop, _) => "idle",
                        _ => "other",
                    };
                    if seen.last() != Some(&label) {
                        seen.push(label);
                    }
                }
                OwnHookCall::Ignored => {}
                _ => panic!("a recorded {kind} was refused"),
            }
        }
        // A: created, busy, the bash dialog, approved, busy, idle. B: busy, then kill -9:
        // nothing more fires (the pid watcher ends it).
        assert_eq!(
            seen,
            ["start", "busy", "ask", "replied", "busy", "idle", "busy"],
            "{seen:?}"
        );
    }

    #[test]
    fn the_recorded_permission_ask_shows_its_command_and_offers_always() {
        let line = FIXTURE
            .lines()
            .find(|l| l.contains(r#""type":"permission.asked""#))
            .expect("a recorded permission.asked");
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let body = serde_json::json!({
            "v": 1, "pid": v["pid"], "directory": "/home/dev/proj", "ts": v["ts"],
            "type": "permission.asked", "properties": v["properties"],
        });
        let call = KiloCode
            .own_ask_call(&serde_json::to_vec(&body).unwrap())
            .expect("an answerable ask");
        assert_eq!(call.detail.tool, "bash");
        assert_eq!(call.detail.command.as_deref(), Some("touch made-by-tool"));
        assert!(call.suggests_for_session, "Kilo suggests `touch *`");
        assert!(KiloCode.own_ask_call(b"{}").is_none());
    }

    #[test]
    fn kilos_own_bus_events_are_not_sessions() {
        // Recorded from 7.7.7: not forwarded by the plugin, and refused as unknown if sent.
        for kind in ["message.part.removed", "plugin.added", "catalog.updated"] {
            assert!(!event::FORWARDED.contains(&kind), "{kind}");
            assert!(
                FIXTURE.contains(&format!(r#""type":"{kind}""#)),
                "{kind} recorded"
            );
            let body = format!(r#"{{"pid":7,"type":"{kind}","properties":{{}}}}"#);
            assert!(
                matches!(call(body.as_bytes()), OwnHookCall::Unknown(_)),
                "{kind}"
            );
        }
    }

    #[test]
    fn the_plugin_lives_in_kilos_folder_and_names_kilo() {
        let dir = install::plugins_dir_of(Agent::Kilo, None, Some("/h".into())).unwrap();
        assert_eq!(dir, Path::new("/h/.config/kilo/plugins"));
        let text = install::render_for(Agent::Kilo, Path::new("/opt/agent-tray"));
        assert!(
            text.starts_with("// agent-tray plugin for Kilo Code CLI:"),
            "{text}"
        );
        assert!(text.contains(r#"spawn(BIN, ["hook", "--agent", "kilo"]"#));
        assert!(text.contains(r#"["inbox", "--agent", "kilo","#));
        assert!(!text.contains("\"opencode\"") && !text.contains("__"));
        assert_eq!(
            hook_command_in(&text).as_deref(),
            Some("/opt/agent-tray hook --agent kilo")
        );
    }

    #[test]
    fn the_plugins_of_opencode_and_kilo_are_never_taken_for_each_other() {
        let p = Path::new("/c/kilo/plugins/agent-tray.js");
        let bin = Path::new("/usr/bin/agent-tray");
        let opencodes = install::render_for(Agent::OpenCode, bin);
        assert!(install::plan_for(Agent::Kilo, p, Some(&opencodes), bin, true).is_err());
        assert!(install::plan_for(Agent::Kilo, p, Some(&opencodes), bin, false).is_err());
        let kilos = install::render_for(Agent::Kilo, bin);
        assert!(install::plan_for(Agent::OpenCode, p, Some(&kilos), bin, false).is_err());
        assert_eq!(
            install::plan_for(Agent::Kilo, p, Some(&kilos), bin, true).unwrap(),
            install::FileOp::Keep
        );
        assert_eq!(
            install::plan_for(Agent::Kilo, p, Some(&kilos), bin, false).unwrap(),
            install::FileOp::Remove { old: kilos }
        );
    }

    #[test]
    fn the_version_comes_from_kilos_npm_package() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, want) in [
            ("@kilocode/cli-linux-x64", Some("7.7.7")),
            ("@kilocode/cli", Some("7.7.7")),
            ("opencode-linux-x64", None),
        ] {
            let pkg = tmp.path().join(name.replace('/', "+"));
            std::fs::create_dir_all(pkg.join("bin")).unwrap();
            std::fs::write(
                pkg.join("package.json"),
                format!(r#"{{"name":"{name}","version":"7.7.7"}}"#),
            )
            .unwrap();
            assert_eq!(
                super::super::opencode::version_beside_if(
                    &pkg.join("bin").join("kilo"),
                    is_kilo_package
                )
                .as_deref(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn resume_names_the_session() {
        assert_eq!(
            Agent::Kilo
                .entry()
                .resume_command("ses_db5f34422ffegLlJqtpIJCdSGh"),
            "kilo --session ses_db5f34422ffegLlJqtpIJCdSGh"
        );
        assert_eq!(Agent::by_name("kilocode"), Some(Agent::Kilo));
        assert_eq!(Agent::Kilo.as_str(), "kilo");
    }
}
