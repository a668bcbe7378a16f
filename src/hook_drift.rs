//! Hook drift: noticing that the hooks `install` wrote are gone or changed, and saying so once.
//!
//! Claude Code rewrites `settings.json` from a stale snapshot (`/model` "save as default", other
//! settings screens), and other tools do the same; users lose our hooks without knowing, and the
//! tray then shows nothing for their sessions. So:
//! - **`install` leaves a record** ([`RECORD_FILE`] in the data folder): which agent's folder it
//!   wrote, with which binary. Only a recorded install can *drift*: a user who never installed,
//!   or who ran `uninstall`, has hooks that are absent, not missing.
//! - **Drift is "install would change the file"**: the check plans the very merge `install` runs
//!   ([`crate::install`]) with the recorded binary and looks at whether it would write anything.
//!   So every kind of damage counts (an entry removed, its command or timeout edited, the whole
//!   `hooks` key dropped), and the repair is that plan applied: byte-safe, other tools' entries
//!   and the user's formatting untouched.
//! - **Watched, not polled**: inotify (the `notify` crate) on the folders holding the recorded
//!   files, non-recursively, plus the data folder (a fresh `install` changes the record). At rest
//!   the watcher thread sleeps in the kernel; a burst of writes (an atomic rename is several
//!   events) is debounced into one check. Debounced by hand, as the file feeds do
//!   ([`crate::folder_wake`]): one timer, no extra crate.
//! - **Alerts once per episode** ([`DriftAlerts`]): a drift is announced when it appears and
//!   again only after it was repaired and came back.
//!
//! The checks are plain functions over files (`status`, `doctor` and the engine share them); the
//! watcher is a cancellable task publishing on a `watch` channel (only the newest state matters).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agents::AgentKnowledge;
use crate::agents::InstallOptions;
use crate::catalogue::InCatalogue;
pub use crate::install::record::{
    note, read_record, record_path, InstalledHooks, RecordError, RECORD_FILE,
};
use crate::install::{self, Action, Ownership};
use crate::model::Agent;

/// Writes arriving together (an atomic save is a create, a write and a rename) are checked once,
/// this long after the last of them.
pub const DEBOUNCE: Duration = Duration::from_millis(250);
/// File-system signals buffered between notify's thread and the checker. When full, signals are
/// dropped: one already waiting causes a full check of every agent, which covers them.
const SIGNALS: usize = 8;

/// What happened to drifted hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftKind {
    /// None of our entries is left.
    Removed,
    /// Some are left, but not as `install` wrote them.
    Changed,
}

/// One agent's hooks, as `status --json` reports them and the tray shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookHealth {
    pub agent: Agent,
    /// The file holding the hooks.
    pub config_file: PathBuf,
    /// Every entry `install` writes is there, as it writes it.
    pub installed: bool,
    /// The agent will run them: Codex has reviewed (trusted) every entry of ours; Claude Code's
    /// `disableAllHooks` is not set. `None` when nothing of ours is there to trust.
    pub trusted: Option<bool>,
    /// `install` recorded hooks here and they are no longer as it wrote them.
    pub drifted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftKind>,
    /// An install was recorded for this agent.
    pub recorded: bool,
    /// The file could not be read or parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl HookHealth {
    /// What the alert and the tray say, e.g. "Claude Code hooks were removed from
    /// ~/.claude/settings.json". `None` when nothing drifted.
    pub fn drift_message(&self, home: Option<&Path>) -> Option<String> {
        let kind = self.drift?;
        let file = tilde(&self.config_file, home);
        let name = agent_name(self.agent);
        Some(match kind {
            DriftKind::Removed => format!("{name} hooks were removed from {file}"),
            DriftKind::Changed => format!("{name} hooks were changed in {file}"),
        })
    }
}

/// "Claude Code", "Codex".
pub fn agent_name(agent: Agent) -> &'static str {
    agent.entry().product_name
}

fn tilde(path: &Path, home: Option<&Path>) -> String {
    match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// The file an agent's hooks live in.
pub fn config_file(agent: Agent, dir: &Path) -> PathBuf {
    agent.adapter().hooks_file(dir)
}

/// Checks one agent's hooks in `dir` against what `install` would write with `bin`.
pub fn check(agent: Agent, dir: &Path, bin: &Path, trust: bool, recorded: bool) -> HookHealth {
    let file = config_file(agent, dir);
    let mut health = HookHealth {
        agent,
        config_file: file.clone(),
        installed: false,
        trusted: None,
        drifted: false,
        drift: None,
        recorded,
        problem: None,
    };
    let plan = agent.adapter().plan_hooks(
        dir,
        bin,
        Action::Install,
        InstallOptions {
            trust,
            ..Default::default()
        },
    );
    let text = install::read_optional(&file).ok().flatten();
    // Read leniently (comments allowed, as Gemini CLI reads its settings): only to count our
    // entries and see the agent's own switches; whether the file is acceptable is the plan's call.
    let doc: Option<Value> = text
        .as_deref()
        .and_then(|t| install::hooks_json::parse_json_with_comments(t).ok());
    let ours = doc.as_ref().map_or(0, |d| our_entries(d, agent, bin));
    match plan {
        Ok(plan) => {
            // Codex's trust lives in config.toml: a change there only is a trust problem, not
            // missing hooks.
            let hooks_change = plan
                .changes
                .iter()
                .any(|c| c.new.is_some() && c.path == file);
            let trust_change = plan
                .changes
                .iter()
                .any(|c| c.new.is_some() && c.path != file);
            health.installed = !hooks_change;
            if ours > 0 {
                health.trusted = Some(agent.adapter().hooks_enabled(
                    dir,
                    doc.as_ref(),
                    bin,
                    trust_change,
                ));
            }
        }
        Err(e) => health.problem = Some(e.to_string()),
    }
    if recorded && !health.installed {
        health.drifted = true;
        health.drift = Some(if ours == 0 {
            DriftKind::Removed
        } else {
            DriftKind::Changed
        });
    }
    health
}

/// How many hook entries of ours (this binary or an older path of it, or edited) a document has:
/// in its `hooks` object, or at its top level where it has none (Factory Droid's `hooks.json`).
fn our_entries(doc: &Value, agent: Agent, bin: &Path) -> usize {
    let Some(hooks) = doc
        .get("hooks")
        .and_then(Value::as_object)
        .or_else(|| doc.as_object())
    else {
        return 0;
    };
    hooks
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|entry| entry.get("command").and_then(Value::as_str))
        .filter(|cmd| install::ownership(cmd, bin, agent) != Ownership::NotOurs)
        .count()
}

/// The `agent-tray` binary hooks should run: this one, or the one beside the desktop app.
pub fn hook_binary() -> Option<PathBuf> {
    let exe = install::current_binary().ok()?;
    if exe.file_name().and_then(|n| n.to_str()) == Some("agent-tray") {
        return Some(exe);
    }
    exe.parent()
        .map(|d| d.join("agent-tray"))
        .filter(|p| p.is_file())
}

/// Where to look for an agent's hooks when no install was recorded, and with which binary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unrecorded {
    /// Each agent's folder, where known.
    pub dirs: Vec<(Agent, PathBuf)>,
    pub bin: Option<PathBuf>,
}

impl Unrecorded {
    /// The agents' folders from the environment, and [`hook_binary`].
    pub fn from_env() -> Self {
        Unrecorded {
            dirs: Agent::ALL
                .iter()
                .filter_map(|&a| Some((a, a.adapter().config_dir()?)))
                .collect(),
            bin: hook_binary(),
        }
    }
}

/// Every agent's hooks: the recorded install where there is one, else `unrecorded`'s folder.
pub fn check_all(data_dir: &Path, unrecorded: &Unrecorded) -> Vec<HookHealth> {
    let record = read_record(data_dir);
    Agent::ALL
        .iter()
        .copied()
        .filter_map(|agent| match record.iter().find(|r| r.agent == agent) {
            Some(r) => Some(check(agent, &r.dir, &r.bin, r.trust, true)),
            None => {
                let dir = unrecorded
                    .dirs
                    .iter()
                    .find(|(a, _)| *a == agent)
                    .map(|(_, d)| d.as_path())?;
                let bin = unrecorded.bin.as_deref()?;
                Some(check(agent, dir, bin, false, false))
            }
        })
        .collect()
}

/// Repairs one agent's drifted hooks with the recorded install's own plan (the merge `install`
/// runs). Returns the files written.
pub fn repair(data_dir: &Path, agent: Agent) -> Result<Vec<PathBuf>, install::InstallError> {
    let Some(r) = read_record(data_dir).into_iter().find(|r| r.agent == agent) else {
        return Ok(Vec::new());
    };
    let plan = agent.adapter().plan_hooks(
        &r.dir,
        &r.bin,
        Action::Install,
        InstallOptions {
            trust: r.trust,
            ..Default::default()
        },
    )?;
    let mut written = Vec::new();
    for change in plan.changes {
        if let Some(new) = change.new.as_deref() {
            install::write_file(&change.path, change.old.as_deref(), new)?;
            written.push(change.path);
        }
    }
    tracing::info!(agent = %agent, files = ?written, "hooks_repaired");
    Ok(written)
}

/// Decides which drifts to announce: each once, when it appears; again only after a repair.
#[derive(Debug, Default)]
pub struct DriftAlerts {
    announced: BTreeSet<Agent>,
}

impl DriftAlerts {
    /// The agents whose drift is new in `health`.
    pub fn decide(&mut self, health: &[HookHealth]) -> Vec<HookHealth> {
        let mut fresh = Vec::new();
        for h in health {
            if h.drifted {
                if self.announced.insert(h.agent) {
                    fresh.push(h.clone());
                }
            } else {
                self.announced.remove(&h.agent);
            }
        }
        fresh
    }
}

/// Watches the recorded hook files and the record, publishing every agent's health on `tx`
/// (at once, then after each debounced change). Returns when `token` is cancelled.
pub fn spawn_watch(
    data_dir: PathBuf,
    unrecorded: Unrecorded,
    tx: watch::Sender<Vec<HookHealth>>,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let (signal_tx, mut signals) = mpsc::channel::<()>(SIGNALS);
        let mut watcher = None;
        let mut watched: BTreeSet<PathBuf> = BTreeSet::new();
        loop {
            let (dd, u) = (data_dir.clone(), unrecorded.clone());
            let health = tokio::task::spawn_blocking(move || check_all(&dd, &u))
                .await
                .unwrap_or_default();
            for h in health.iter().filter(|h| h.drifted) {
                tracing::warn!(agent = %h.agent, file = %h.config_file.display(), kind = ?h.drift, "hook_drift");
            }
            let folders = folders_to_watch(&data_dir, &health);
            if folders != watched {
                watcher = watch_folders(&folders, signal_tx.clone());
                watched = folders;
            }
            tx.send_if_modified(|current| {
                let changed = *current != health;
                *current = health;
                changed
            });
            // Wait for a change, then for the burst to end.
            tokio::select! {
                () = token.cancelled() => break,
                got = signals.recv() => if got.is_none() { break },
            }
            loop {
                tokio::select! {
                    () = token.cancelled() => return,
                    () = tokio::time::sleep(DEBOUNCE) => break,
                    got = signals.recv() => if got.is_none() { break },
                }
            }
        }
        drop(watcher);
    })
}

fn folders_to_watch(data_dir: &Path, health: &[HookHealth]) -> BTreeSet<PathBuf> {
    let mut folders: BTreeSet<PathBuf> = health
        .iter()
        .filter_map(|h| h.config_file.parent().map(Path::to_path_buf))
        .collect();
    folders.insert(data_dir.to_path_buf());
    folders
}

/// The file names whose changes matter: the hook files, Codex's trust, the record.
fn relevant(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("settings.json" | "hooks.json" | "config.toml" | RECORD_FILE)
    )
}

fn watch_folders(
    folders: &BTreeSet<PathBuf>,
    signals: mpsc::Sender<()>,
) -> Option<notify::RecommendedWatcher> {
    // A signal checks everything (see SIGNALS).
    let existing = folders.iter().filter(|f| f.is_dir()).map(PathBuf::as_path);
    match crate::folder_wake::wake_on_change(existing, relevant, signals) {
        Ok((watcher, failed)) => {
            for (folder, error) in failed {
                tracing::warn!(%error, folder = %folder.display(), "cannot watch a hook folder");
            }
            Some(watcher)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot watch the hook files; drift is not noticed");
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn health(agent: Agent, drifted: bool) -> HookHealth {
        HookHealth {
            agent,
            config_file: PathBuf::from("/home/dev/.claude/settings.json"),
            installed: !drifted,
            trusted: Some(true),
            drifted,
            drift: drifted.then_some(DriftKind::Removed),
            recorded: true,
            problem: None,
        }
    }

    #[test]
    fn a_drift_is_announced_once_and_again_only_after_a_repair() {
        let mut alerts = DriftAlerts::default();
        assert_eq!(alerts.decide(&[health(Agent::Claude, true)]).len(), 1);
        assert!(alerts.decide(&[health(Agent::Claude, true)]).is_empty());
        assert!(alerts.decide(&[health(Agent::Claude, false)]).is_empty());
        assert_eq!(alerts.decide(&[health(Agent::Claude, true)]).len(), 1);
    }

    #[test]
    fn the_message_names_the_agent_and_the_file_under_home() {
        let h = health(Agent::Claude, true);
        assert_eq!(
            h.drift_message(Some(Path::new("/home/dev"))).as_deref(),
            Some("Claude Code hooks were removed from ~/.claude/settings.json")
        );
        assert_eq!(health(Agent::Claude, false).drift_message(None), None);
    }

    /// Gemini CLI's settings.json may hold comments (Gemini strips them): the check reads such
    /// a file as Gemini does, so our entries are counted and `hooksConfig.enabled` is seen.
    #[test]
    fn a_gemini_settings_file_with_comments_is_read_as_gemini_reads_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("gemini");
        std::fs::create_dir_all(&dir).unwrap();
        let bin = Path::new("/opt/at/agent-tray");
        let file = dir.join("settings.json");
        std::fs::write(
            &file,
            "{\n  // the user's note\n  \"hooksConfig\": { \"enabled\": false } /* off */\n}\n",
        )
        .unwrap();
        let plan = crate::agents::gemini::plan_text(
            &file,
            Some(&std::fs::read_to_string(&file).unwrap()),
            bin,
            Action::Install,
        )
        .unwrap();
        std::fs::write(&file, plan.changes[0].new.clone().unwrap()).unwrap();
        assert!(std::fs::read_to_string(&file)
            .unwrap()
            .contains("// the user's note"));
        let h = check(Agent::Gemini, &dir, bin, false, true);
        assert!(h.installed && !h.drifted, "{h:?}");
        assert_eq!(
            h.trusted,
            Some(false),
            "hooksConfig.enabled false is seen: {h:?}"
        );

        // One event's entry dropped by hand: changed, not removed.
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("\"AfterAgent\""), "{text}");
        let pruned = text.replacen("\"AfterAgent\"", "\"AfterAgentOff\"", 1);
        std::fs::write(&file, pruned).unwrap();
        let h = check(Agent::Gemini, &dir, bin, false, true);
        assert_eq!(h.drift, Some(DriftKind::Changed), "{h:?}");
    }

    #[test]
    fn removed_changed_and_intact_hooks_are_told_apart_and_repaired_byte_safely() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("claude");
        let data = tmp.path().join("tray");
        std::fs::create_dir_all(&dir).unwrap();
        let bin = Path::new("/opt/at/agent-tray");
        let file = dir.join("settings.json");
        // Other settings, written the user's way.
        std::fs::write(&file, "{\n    \"model\": \"opus\",  \"n\": 1e3\n}\n").unwrap();
        let plan = crate::agents::claude::install::plan_file(&file, bin, Action::Install).unwrap();
        let installed = plan.changes[0].new.clone().unwrap();
        std::fs::write(&file, &installed).unwrap();
        let entry = InstalledHooks {
            agent: Agent::Claude,
            dir: dir.clone(),
            bin: bin.into(),
            trust: false,
            at: Utc::now(),
        };
        note(&data, Action::Install, entry).unwrap();
        let h = check(Agent::Claude, &dir, bin, false, true);
        assert!(
            h.installed && !h.drifted && h.trusted == Some(true),
            "{h:?}"
        );

        // Claude Code rewrites the file from a snapshot without our hooks.
        std::fs::write(&file, "{\n  \"model\": \"sonnet\"\n}\n").unwrap();
        let h = check(Agent::Claude, &dir, bin, false, true);
        assert_eq!((h.drifted, h.drift), (true, Some(DriftKind::Removed)));
        // Repair: the merge puts our hooks back and keeps the agent's own change.
        repair(&data, Agent::Claude).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("{\n  \"model\": \"sonnet\""), "{text}");
        assert!(!check(Agent::Claude, &dir, bin, false, true).drifted);

        // One event's entry dropped (another tool pruned "Stop"): changed, not removed.
        let mut doc: Value = serde_json::from_str(&text).unwrap();
        doc["hooks"].as_object_mut().unwrap().remove("Stop");
        std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let h = check(Agent::Claude, &dir, bin, false, true);
        assert_eq!(h.drift, Some(DriftKind::Changed));

        // Not recorded (never installed, or uninstalled): absent hooks are not a drift.
        note(
            &data,
            Action::Uninstall,
            InstalledHooks {
                agent: Agent::Claude,
                dir: dir.clone(),
                bin: bin.into(),
                trust: false,
                at: Utc::now(),
            },
        )
        .unwrap();
        assert!(read_record(&data).is_empty());
        std::fs::write(&file, "{}").unwrap();
        let h = check(Agent::Claude, &dir, bin, false, false);
        assert!(!h.installed && !h.drifted);
    }
}
