//! `agent-tray install --copilot` / `uninstall --copilot`: our own hook file,
//! `$COPILOT_HOME/hooks/agent-tray.json` (default `~/.copilot/hooks/`).
//!
//! Copilot loads every `*.json` in its user hooks folder, so unlike Claude's and Codex's shared
//! settings we never edit a file another tool owns: the file is ours alone, whole. Still:
//! - **Plan, then apply.** The plan is pure (old text in, the operation out); applying goes
//!   through [`crate::install::write_file`] (temp file + rename, a backup, and a re-read right
//!   before the rename).
//! - **A file at our path that we did not write is refused untouched** (invalid JSON, or hooks
//!   whose commands are not `agent-tray hook --agent copilot …`): uninstall never deletes
//!   someone else's file, install never overwrites it.
//! - **Every hook exits 0 and has a short `timeoutSec`.** Copilot runs `preToolUse` and
//!   `permissionRequest` hooks fail-closed (a non-zero exit denies the tool); ours never fails,
//!   and a timeout is fail-open.

use std::path::{Path, PathBuf};

use crate::install::{shell_quote, shell_words, InstallError};

pub use crate::agents::own_file::{apply, diff, FileOp};

use super::hook::EVENTS;

/// The file's name in the hooks folder.
pub const HOOK_FILE_NAME: &str = "agent-tray.json";
/// Seconds Copilot gives each of our hooks (they take about a millisecond).
pub const TIMEOUT_SEC: u32 = 5;

/// The hooks folder: `$COPILOT_HOME/hooks`, else `~/.copilot/hooks`.
pub fn hooks_dir(copilot_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    copilot_home
        .filter(|p| !p.as_os_str().is_empty())
        .or_else(|| home.map(|h| h.join(".copilot")))
        .map(|d| d.join("hooks"))
}

/// Copilot's folder from this process's environment.
pub fn copilot_home_from_env() -> Option<PathBuf> {
    hooks_dir(
        std::env::var_os("COPILOT_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
    .and_then(|h| h.parent().map(Path::to_path_buf))
}

/// The command Copilot runs for one event (its `bash` form; forward slashes on Windows, as
/// for the other agents' `sh` lines).
pub fn hook_command(bin: &Path, event: &str) -> String {
    format!(
        "{} hook --agent copilot --event {event}",
        shell_quote(&crate::install::program_text_on(
            crate::paths::THIS_DESKTOP,
            bin
        ))
    )
}

/// The command Copilot runs for one event on Windows (its `powershell` form): the call operator
/// on the program's path as a PowerShell literal (`'` doubled inside).
pub fn powershell_command(bin: &Path, event: &str) -> String {
    format!(
        "& '{}' hook --agent copilot --event {event}",
        bin.display().to_string().replace('\'', "''")
    )
}

/// The whole file, as we write it.
pub fn render(bin: &Path) -> String {
    render_on(cfg!(windows), bin)
}

/// [`render`] for a desktop: on Windows each entry also carries its `powershell` form.
fn render_on(windows: bool, bin: &Path) -> String {
    let mut hooks = serde_json::Map::new();
    for event in EVENTS {
        let mut entry = serde_json::json!({
            "type": "command",
            "bash": hook_command(bin, event),
            "timeoutSec": TIMEOUT_SEC,
        });
        if windows {
            entry["powershell"] = serde_json::json!(powershell_command(bin, event));
        }
        hooks.insert(event.to_string(), serde_json::json!([entry]));
    }
    let doc = serde_json::json!({ "version": 1, "hooks": hooks });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// The command line the hook file in `text` runs for `sessionStart` (what `doctor` probes).
pub fn session_start_command_in(text: &str) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_str(text).ok()?;
    doc.pointer("/hooks/sessionStart/0/bash")?
        .as_str()
        .map(str::to_string)
}

/// Whether `text` is a hook file every command of which is ours (any binary path).
fn all_ours(text: &str) -> Result<bool, serde_json::Error> {
    let doc: serde_json::Value = serde_json::from_str(text)?;
    let Some(hooks) = doc.get("hooks").and_then(|h| h.as_object()) else {
        return Ok(false);
    };
    let mut any = false;
    for entries in hooks.values() {
        for entry in entries.as_array().into_iter().flatten() {
            let Some(cmd) = entry.get("bash").and_then(|c| c.as_str()) else {
                return Ok(false);
            };
            let Some(words) = shell_words(cmd) else {
                return Ok(false);
            };
            let ours = words
                .first()
                .is_some_and(|p| crate::install::is_our_program_name(p))
                && words
                    .get(1..4)
                    .is_some_and(|w| w == ["hook", "--agent", "copilot"]);
            if !ours {
                return Ok(false);
            }
            any = true;
        }
    }
    Ok(any)
}

/// Plans install (`install = true`) or uninstall of our hook file at `path`, which holds `old`.
pub fn plan(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    install: bool,
) -> Result<FileOp, InstallError> {
    let refuse = |detail: String| InstallError::Unexpected {
        path: path.to_path_buf(),
        detail,
    };
    let Some(old) = old else {
        return Ok(if install {
            FileOp::Write {
                old: None,
                new: render(bin),
            }
        } else {
            FileOp::Keep
        });
    };
    match all_ours(old) {
        Err(e) => Err(InstallError::Unparsable {
            path: path.to_path_buf(),
            format: "JSON",
            detail: e.to_string(),
        }),
        Ok(false) => Err(refuse(
            "this file holds hooks that agent-tray did not write".to_string(),
        )),
        Ok(true) if install => {
            let new = render(bin);
            Ok(if new == old {
                FileOp::Keep
            } else {
                FileOp::Write {
                    old: Some(old.to_string()),
                    new,
                }
            })
        }
        Ok(true) => Ok(FileOp::Remove {
            old: old.to_string(),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn on_windows_each_entry_also_says_how_powershell_runs_it() {
        let bin = Path::new(r"C:\Users\o'neil\Agent Tray\agent-tray.exe");
        let text = render_on(true, bin);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let entry = &doc["hooks"]["sessionStart"][0];
        assert_eq!(
            entry["powershell"],
            r"& 'C:\Users\o''neil\Agent Tray\agent-tray.exe' hook --agent copilot --event sessionStart"
        );
        assert!(all_ours(&text).unwrap(), "our own file is known as ours");
        assert!(render_on(false, bin).find("powershell").is_none());
    }

    fn apply(p: &Path, op: &FileOp) -> Result<Option<String>, InstallError> {
        super::apply(p, HOOK_FILE_NAME, op)
    }

    fn bin() -> PathBuf {
        PathBuf::from("/opt/agent tray/agent-tray")
    }

    #[test]
    fn the_file_registers_every_event_with_a_short_timeout_and_the_event_named() {
        let text = render(&bin());
        let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(doc["version"], 1);
        let hooks = doc["hooks"].as_object().expect("hooks");
        assert_eq!(hooks.len(), EVENTS.len());
        let pre = &hooks["preToolUse"][0];
        assert_eq!(pre["type"], "command");
        assert_eq!(pre["timeoutSec"], TIMEOUT_SEC);
        assert_eq!(
            pre["bash"],
            "'/opt/agent tray/agent-tray' hook --agent copilot --event preToolUse"
        );
    }

    #[test]
    fn install_creates_then_changes_nothing_and_follows_a_moved_binary() {
        let p = Path::new("/h/.copilot/hooks/agent-tray.json");
        let op = plan(p, None, &bin(), true).expect("plan");
        let FileOp::Write { old: None, new } = op else {
            panic!("creates the file: {op:?}")
        };
        assert_eq!(
            plan(p, Some(&new), &bin(), true).expect("again"),
            FileOp::Keep
        );
        let moved = plan(p, Some(&new), Path::new("/usr/bin/agent-tray"), true).expect("moved");
        assert!(matches!(moved, FileOp::Write { old: Some(_), .. }));
    }

    #[test]
    fn uninstall_removes_exactly_our_file_and_refuses_anyone_elses() {
        let p = Path::new("/h/.copilot/hooks/agent-tray.json");
        let ours = render(&bin());
        assert_eq!(
            plan(p, Some(&ours), &bin(), false).expect("ours"),
            FileOp::Remove { old: ours.clone() }
        );
        assert_eq!(plan(p, None, &bin(), false).expect("absent"), FileOp::Keep);
        let theirs =
            r#"{"version":1,"hooks":{"agentStop":[{"type":"command","bash":"notify-send done"}]}}"#;
        assert!(matches!(
            plan(p, Some(theirs), &bin(), false),
            Err(InstallError::Unexpected { .. })
        ));
        assert!(matches!(
            plan(p, Some(theirs), &bin(), true),
            Err(InstallError::Unexpected { .. })
        ));
        assert!(matches!(
            plan(p, Some("{not json"), &bin(), true),
            Err(InstallError::Unparsable { .. })
        ));
    }

    #[test]
    fn apply_writes_through_a_rename_keeps_a_backup_and_removes_only_an_unchanged_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("hooks").join(HOOK_FILE_NAME);
        let op = plan(&p, None, &bin(), true).expect("plan");
        assert!(apply(&p, &op).expect("create").is_some());
        let first = std::fs::read_to_string(&p).expect("written");
        let op = plan(&p, Some(&first), Path::new("/usr/bin/agent-tray"), true).expect("plan");
        let said = apply(&p, &op).expect("update").unwrap_or_default();
        assert!(said.contains("previous version kept"), "{said}");
        let second = std::fs::read_to_string(&p).expect("rewritten");
        let op = plan(&p, Some(&second), &bin(), false).expect("uninstall plan");
        // The user edits the file between plan and apply: it is left as they wrote it.
        std::fs::write(&p, "{}").expect("edit");
        assert!(matches!(
            apply(&p, &op),
            Err(InstallError::ChangedMeanwhile { .. })
        ));
        assert!(p.exists());
        std::fs::write(&p, &second).expect("restore");
        assert!(apply(&p, &op).expect("remove").is_some());
        assert!(!p.exists(), "our file removed");
        assert!(
            dir.path().join("hooks").exists(),
            "the folder (with the backups) stays"
        );
    }

    #[test]
    fn the_hooks_folder_follows_copilot_home_else_home() {
        assert_eq!(
            hooks_dir(Some("/c".into()), Some("/h".into())),
            Some(PathBuf::from("/c/hooks"))
        );
        assert_eq!(
            hooks_dir(None, Some("/h".into())),
            Some(PathBuf::from("/h/.copilot/hooks"))
        );
        assert_eq!(hooks_dir(None, None), None);
    }
}
