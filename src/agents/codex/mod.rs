//! Codex: hooks in `$CODEX_HOME/hooks.json` (or `~/.codex/hooks.json`) with their trust entries
//! and `notify` in `config.toml`, the native `codex` binary (its TUI and the background
//! `codex app-server` it starts), its rollouts and thread locks (read by its feeds: [`rollouts`], [`app_server`]).
//!
//! The session's process is the outermost `codex`: by default the TUI runs hooks from the
//! app-server it started, and the session belongs to the process the user sees.

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
use crate::process::ProcessTable;

// Codex's app-server socket is a unix socket; on Windows its messages are understood (the same
// parsers) but only the rollouts are followed.
pub mod app_server;
pub mod install;
pub mod lock_owner;
pub mod notify;
pub mod rollouts;

/// Codex's folder: `CODEX_HOME`, else `~/.codex`.
pub fn home_from_env() -> Option<PathBuf> {
    std::env::var("CODEX_HOME")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| paths::home_dir().map(|h| h.join(".codex")))
}

/// Deeper than any real chain of codex processes.
const MAX_DEPTH: usize = 16;

/// Codex's adapter.
pub struct Codex;

/// The most of a rollout's first line read for its version.
pub(crate) const MAX_META_LINE: u64 = 64 * 1024;

impl AgentAdapter for Codex {
    fn agent(&self) -> Agent {
        Agent::Codex
    }

    /// Its `turn_id`, a rollout `transcript_path`, or a `model` outside SessionStart (Claude
    /// sends `model` only there).
    fn payload_evidence(&self, fields: &HookFields, event: EventKind) -> u8 {
        if fields.turn_id.is_some() {
            return 4;
        }
        if let Some(path) = fields.transcript_path.as_deref() {
            let file = path.rsplit('/').next().unwrap_or(path);
            if path.contains("/.codex/") || file.starts_with("rollout-") {
                return 3;
            }
        }
        if fields.model.is_some() && event != EventKind::SessionStart {
            return 1;
        }
        0
    }

    /// The outermost codex; none when that is the managed app-server with no TUI above it (the
    /// TUI died, or the thread runs from `codex queue`): the server is nobody's session process.
    fn session_process(&self, table: &dyn ProcessTable, pid: u32) -> Option<u32> {
        let pid = outermost_codex(table, pid);
        (!is_codex_app_server(table, pid)).then_some(pid)
    }

    /// A hook run by the managed background server (`codex app-server … --managed-daemon`,
    /// which every default-mode TUI of a `CODEX_HOME` shares): its requests reach the engine
    /// through the server's control socket (the app-server feed), so the hook must not also
    /// wait. An editor's own `codex app-server` (no `--managed-daemon`) and a `--no-daemon` TUI
    /// keep the hook route.
    fn asked_elsewhere(&self, table: &dyn ProcessTable, hook_parent: u32) -> bool {
        crate::agent_pid::first_non_shell(table, hook_parent).is_some_and(|pid| {
            table.cmdline(pid).is_some_and(|argv| {
                argv.iter().skip(1).any(|a| a == "app-server")
                    && argv.iter().any(|a| a == "--managed-daemon")
            })
        })
    }

    fn config_dir(&self) -> Option<PathBuf> {
        home_from_env().map(|d| super::absolute(&d))
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join("hooks.json")
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        install::plan_files(dir, bin, action, options.trust)
    }
    /// Codex skips hooks nobody trusted: every entry of ours must have its trust entry, and the
    /// install plan must not still change `config.toml`.
    fn hooks_enabled(
        &self,
        dir: &Path,
        doc: Option<&Value>,
        bin: &Path,
        other_files_change: bool,
    ) -> bool {
        let Some(doc) = doc else { return false };
        let config = std::fs::read_to_string(dir.join("config.toml"))
            .ok()
            .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
            .unwrap_or_default();
        let status = install::trust_status(&self.hooks_file(dir), doc, &config, bin);
        !other_files_change && !status.is_empty() && status.iter().all(|(_, trusted)| *trusted)
    }

    /// `install` with no flag has always written its hooks, found or not.
    fn install_by_default(&self) -> bool {
        true
    }

    fn doctor_hooks(&self, _agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        check_codex(bin)
    }
    /// A Codex rollout's first line (`session_meta`) carries `cli_version`.
    fn version_of(&self, obs: &Observation) -> Option<String> {
        obs.transcript_path
            .as_deref()
            .and_then(|p| codex_version(Path::new(p)))
    }
    fn version_unknown_text(&self) -> String {
        "version unknown: Codex's hooks do not send one and its rollout names none".into()
    }

    fn notify_observation(
        &self,
        _agent: Agent,
        json: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<Result<Observation, crate::hook_payload::PayloadError>> {
        Some(notify::observation_from_notify(json, at))
    }

    /// Its rollouts (with the threads' writer locks) and its shared app-server's socket.
    fn spawn_feeds(&self, ctx: &FeedContext<'_>) -> Vec<NamedTask> {
        let rollouts = rollouts::CodexRolloutsFeed::new(
            ctx.dirs.to_vec(),
            ctx.config.ttl,
            ctx.config.stats.of("feed_codex_rollouts"),
        );
        #[allow(unused_mut)] // Windows has no app-server feed
        let mut feeds = vec![(
            "feed_codex_rollouts",
            spawn_feed(
                rollouts,
                ctx.sink.clone(),
                ctx.config.timing,
                ctx.token.clone(),
            ),
        )];
        #[cfg(unix)]
        feeds.push((
            "feed_codex_app_server",
            app_server::spawn(ctx.sink.clone(), ctx.dirs.to_vec(), ctx.token.clone()),
        ));
        feeds
    }
}

pub(crate) fn check_codex(bin: &Path) -> HookCheck {
    let Some(home) = home_from_env() else {
        return (
            vec![Finding::Problem(
                "cannot find Codex's folder: set HOME or CODEX_HOME".into(),
            )],
            None,
        );
    };
    let hooks_path = home.join("hooks.json");
    let config_path = home.join("config.toml");
    let doc = match read_optional(&hooks_path)
        .and_then(|t| hooks_json::parse_json(&hooks_path, t.as_deref()))
    {
        Ok(doc) => doc,
        Err(e) => return (vec![Finding::Problem(e.to_string())], None),
    };
    let events: Vec<&str> = install::EVENTS.iter().map(|(e, _)| *e).collect();
    let (mut out, command) = hook_findings(
        "Codex",
        &hooks_path,
        &doc,
        &events,
        bin,
        Agent::Codex,
        "agent-tray install --codex",
    );
    let config_text = match read_optional(&config_path) {
        Ok(t) => t.unwrap_or_default(),
        Err(e) => {
            out.push(Finding::Problem(e.to_string()));
            return (out, command);
        }
    };
    let config: toml_edit::DocumentMut = match config_text.parse() {
        Ok(c) => c,
        Err(e) => {
            out.push(Finding::Problem(format!(
                "{} is not valid TOML: {}",
                config_path.display(),
                e.to_string().trim()
            )));
            return (out, command);
        }
    };
    let status = install::trust_status(&hooks_path, &doc, &config, bin);
    let untrusted: Vec<&str> = status
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(e, _)| e.as_str())
        .collect();
    if !status.is_empty() {
        if untrusted.is_empty() {
            out.push(Finding::Ok("Codex hooks are trusted".into()));
        } else {
            out.push(Finding::Problem(format!(
                "Codex skips untrusted hooks, and these are not trusted: {}; run `agent-tray install --codex --trust` (or trust them in Codex)",
                untrusted.join(", ")
            )));
        }
    }
    let notify: Option<Vec<String>> = config.get("notify").and_then(|i| i.as_array()).map(|a| {
        a.iter()
            .map(|v| v.as_str().unwrap_or("").to_string())
            .collect()
    });
    match notify {
        Some(argv) if argv == install::notify_argv(bin) => {
            out.push(Finding::Ok("Codex notify runs this agent-tray".into()))
        }
        Some(argv) if install::notify_is_ours(&argv) && !Path::new(&argv[0]).exists() => {
            out.push(Finding::Problem(format!(
                "Codex notify binary moved: {} (named in {}) no longer exists; run `agent-tray install --codex` to point it at {}",
                argv[0],
                config_path.display(),
                bin.display()
            )))
        }
        Some(argv) if install::notify_is_ours(&argv) => out.push(Finding::Problem(format!(
            "Codex notify runs {} (moved?); run `agent-tray install --codex`",
            argv[0]
        ))),
        Some(argv) => out.push(Finding::Note(format!(
            "Codex notify runs your own program ({}); Agent Tray relies on its hooks instead",
            argv.first().map(String::as_str).unwrap_or("?")
        ))),
        None => out.push(Finding::Note(
            "Codex notify is not set; `agent-tray install --codex` sets it".into(),
        )),
    }
    (out, command)
}

/// `cli_version` from a Codex rollout's first line.
pub(crate) fn codex_version(rollout: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let file = std::fs::File::open(rollout).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file.take(MAX_META_LINE))
        .read_line(&mut line)
        .ok()?;
    let doc: Value = serde_json::from_str(line.trim()).ok()?;
    doc.pointer("/payload/cli_version")?
        .as_str()
        .map(str::to_string)
}

/// A `codex app-server …` process (the shared background server since Codex 0.171).
pub fn is_codex_app_server(table: &dyn ProcessTable, pid: u32) -> bool {
    table
        .cmdline(pid)
        .is_some_and(|argv| argv.get(1).is_some_and(|a| a == "app-server"))
}

/// From a codex process, climbs while the parent is also a native `codex` (the app-server the
/// TUI started, or the TUI itself): the outermost one owns the session.
pub fn outermost_codex(table: &dyn ProcessTable, pid: u32) -> u32 {
    let mut current = pid;
    for _ in 0..MAX_DEPTH {
        let Some(info) = table.info(current) else {
            return current;
        };
        if info.ppid <= 1 {
            return current;
        }
        match table.info(info.ppid) {
            Some(parent) if super::by_process_name(&parent.comm) == Some(Agent::Codex) => {
                current = info.ppid
            }
            _ => return current,
        }
    }
    current
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::test_support::ScriptedTable as Tree;

    // Issue 39: a hook the managed server runs leaves the answer to the server's own route (the
    // app-server feed); a hook an editor's server or a --no-daemon TUI runs still asks.
    #[test]
    fn only_the_managed_server_s_hooks_are_asked_elsewhere() {
        let adapter = Codex;
        let managed = [
            "codex",
            "app-server",
            "--listen",
            "unix://",
            "--managed-daemon",
        ];
        let t = Tree::default()
            .with(800, 700, "codex", &["codex"])
            .with(900, 800, "codex", &managed)
            .with(910, 900, "bash", &["/bin/bash", "-c", "agent-tray hook"]);
        assert!(adapter.asked_elsewhere(&t, 910));
        assert!(adapter.asked_elsewhere(&t, 900));
        let editor = Tree::default()
            .with(900, 800, "codex", &["codex", "app-server"])
            .with(800, 1, "code", &["code"]);
        assert!(!adapter.asked_elsewhere(&editor, 900));
        let no_daemon = Tree::default().with(800, 1, "codex", &["codex", "--no-daemon"]);
        assert!(!adapter.asked_elsewhere(&no_daemon, 800));
        assert!(!adapter.asked_elsewhere(&no_daemon, 1));
    }
}
