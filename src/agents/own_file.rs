//! A file that is ours alone in an agent's folder (Copilot's `hooks/agent-tray.json`, OpenCode's
//! `plugins/agent-tray.js`): the agent loads every file of its kind from that folder, so we
//! never edit anyone else's file, we add one of our own.
//!
//! The same guarantees as the installers of shared files: plan first (pure), write through a
//! temp file and a rename with a backup ([`crate::install::write_file`]), re-read right before
//! the change and leave alone a file changed since the plan, `--dry-run` as a diff. The planner
//! of each agent decides whether a file at that path is ours (and refuses it untouched if not).

use std::path::{Path, PathBuf};

use crate::agents::AgentKnowledge;
use crate::doctor::findings::Finding;
use crate::install::{FileChange, InstallError, Plan};
use crate::model::Agent;

/// What to do to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Nothing to change.
    Keep,
    /// Write `new` (the file held `old`).
    Write { old: Option<String>, new: String },
    /// Remove the file (it held `old`, all ours).
    Remove { old: String },
}

/// Applies a plan. Returns a line to print, or `None` when nothing changed.
pub fn apply(path: &Path, file_name: &str, op: &FileOp) -> Result<Option<String>, InstallError> {
    match op {
        FileOp::Keep => Ok(None),
        FileOp::Write { old, new } => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|source| InstallError::Write {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
            let backup = crate::install::write_file(path, old.as_deref(), new)?;
            Ok(Some(match backup {
                Some(b) => format!(
                    "updated {} (previous version kept as {})",
                    path.display(),
                    b.display()
                ),
                None => format!("created {}", path.display()),
            }))
        }
        FileOp::Remove { old } => {
            // Re-read right before removing: a file changed since the plan is left alone.
            let now = crate::install::read_optional(path)?;
            if now.as_deref() != Some(old.as_str()) {
                return Err(InstallError::ChangedMeanwhile {
                    path: path.to_path_buf(),
                });
            }
            let werr = |source| InstallError::Write {
                path: path.to_path_buf(),
                source,
            };
            // The backup is named like the installers' (`….agent-tray-backup-<stamp>`): not
            // `*.json`, so no agent loads it as a hook file or plugin.
            let stamp = chrono::Local::now().format("%Y%m%dT%H%M%S%.3f");
            let backup = path.with_file_name(format!("{file_name}.agent-tray-backup-{stamp}"));
            std::fs::copy(path, &backup).map_err(werr)?;
            std::fs::remove_file(path).map_err(werr)?;
            Ok(Some(format!(
                "removed {} (kept as {})",
                path.display(),
                backup.display()
            )))
        }
    }
}

/// The diff `--dry-run` prints.
pub fn diff(path: &Path, op: &FileOp) -> Option<String> {
    let (old, new) = match op {
        FileOp::Keep => return None,
        FileOp::Write { old, new } => (old.clone(), Some(new.clone())),
        FileOp::Remove { old } => (Some(old.clone()), Some(String::new())),
    };
    crate::install::FileChange {
        path: path.to_path_buf(),
        old,
        new,
    }
    .diff()
}

/// A planned operation as an install [`Plan`]: a write is a change; keeping or removing the file
/// edits nothing (the removal is applied by `uninstall` through [`apply`], see
/// `AgentAdapter::own_file`).
pub fn as_plan(path: &Path, old: Option<String>, op: FileOp) -> Plan {
    let new = match op {
        FileOp::Write { new, .. } => Some(new),
        FileOp::Keep | FileOp::Remove { .. } => None,
    };
    Plan {
        changes: vec![FileChange {
            path: path.to_path_buf(),
            old,
            new,
        }],
        notes: Vec::new(),
    }
}

/// `doctor`'s lines for an agent whose hooks are a file of ours, and the command line to probe.
/// Installed means the file holds exactly what `install` writes for this binary; otherwise the
/// finding says which of the usual breakages it is (missing, not ours, naming a binary that is
/// gone or another one, edited or written by an older version) and what to run.
/// `probe_command` reads, from the file's text, the command line the agent will run for a
/// session's start (`None`: the file names none we can run).
pub fn doctor_findings(
    agent: Agent,
    dir: Option<PathBuf>,
    bin: &Path,
    fix: &str,
    probe_command: fn(&str) -> Option<String>,
) -> (Vec<Finding>, Option<String>) {
    let adapter = agent.adapter();
    let name = adapter.entry().product_name;
    let Some(dir) = dir else {
        return (
            vec![Finding::Problem(format!(
                "cannot find {name}'s folder: set HOME (or {})",
                adapter.entry().config_dir_env
            ))],
            None,
        );
    };
    let path = adapter.hooks_file(&dir);
    let text = match crate::install::read_optional(&path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return (
                vec![Finding::Problem(format!(
                    "{name} is not hooked: {} is missing, so no {name} event reaches Agent Tray; run `{fix}`",
                    path.display()
                ))],
                None,
            )
        }
        Err(e) => return (vec![Finding::Problem(e.to_string())], None),
    };
    let plan = adapter.plan_hooks(
        &dir,
        bin,
        crate::install::Action::Install,
        Default::default(),
    );
    let command = probe_command(&text);
    let finding = match plan {
        Err(e) => {
            return (
                vec![Finding::Problem(format!(
                "{e}; {name} events do not reach Agent Tray: move that file away, then run `{fix}`"
            ))],
                None,
            )
        }
        Ok(plan) if plan.changes.iter().all(|c| c.new.is_none()) => Finding::Ok(format!(
            "{name} is hooked through {} (ours, current)",
            path.display()
        )),
        Ok(_) => {
            let named = command
                .as_deref()
                .and_then(crate::install::shell_words)
                .and_then(|w| w.into_iter().next());
            match named {
                Some(old) if Path::new(&old) != bin && !Path::new(&old).exists() => {
                    return (
                        vec![Finding::Problem(format!(
                            "{} runs {old}, which no longer exists, so every {name} event is lost; run `{fix}` to point it at {}",
                            path.display(),
                            bin.display()
                        ))],
                        None,
                    )
                }
                Some(old) if Path::new(&old) != bin => Finding::Problem(format!(
                    "{} runs another agent-tray ({old}); run `{fix}` to point it here",
                    path.display()
                )),
                _ => Finding::Problem(format!(
                    "{} is not what this agent-tray writes (edited, or written by an older version); run `{fix}` to rewrite it",
                    path.display()
                )),
            }
        }
    };
    (vec![finding], command)
}
