//! `agent-tray install --cline` / `uninstall --cline`: one small hook script of ours per event,
//! `$CLINE_DIR/hooks/<Event>.sh` (default `~/.cline/hooks/`).
//!
//! Cline (seen in 3.0.65's bundle and with the binary) runs every file in its hooks folders
//! whose name is an event's (`TaskStart`, any case) with no extension or one of `.sh`, `.bash`,
//! `.py`, `.js`, …; several files for one event all run. It has no settings file listing hooks,
//! so we never edit anything of the user's: we add files of our own beside theirs. Ours are
//! named `<Event>.sh`; a user's `TaskStart` (no extension) or `TaskStart.py` keeps running next
//! to ours. A file at one of our names that we did not write (no [`MARKER`] line) is refused
//! untouched, by install and uninstall alike: the error names it and says how to rename it so
//! both run. Writing and removing go through [`crate::agents::own_file`] (temp file and rename,
//! backup, re-read before the change, `--dry-run` diff). The backups (`TaskStart.sh.agent-tray-
//! backup-<stamp>`) end in an extension Cline does not run.
//!
//! Each script starts with `#!/bin/sh`: Cline reads the shebang and runs `sh <file>`, which
//! `exec`s `agent-tray hook --agent cline`; the JSON payload arrives on stdin, and the event is
//! in it (`hookName`). `PreCompact` is not installed: Cline maps that file to no event and
//! never runs it.

use std::path::{Path, PathBuf};

use crate::install::{FileChange, InstallError, Plan};

pub use crate::agents::own_file::FileOp;

/// The hook files we install, by Cline's event file names.
pub const EVENT_FILES: [&str; 9] = [
    "TaskStart",
    "TaskResume",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "TaskComplete",
    "TaskCancel",
    "TaskError",
    "SessionShutdown",
];
/// The extension of ours (see the module comment).
pub const EXTENSION: &str = "sh";
/// The second line of every script we write (the first is the shebang).
pub const MARKER: &str = "# agent-tray hook for Cline";

/// Cline's folder: `$CLINE_DIR`, else `~/.cline`.
pub fn cline_dir(cline_dir_env: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    cline_dir_env
        .filter(|p| !p.as_os_str().is_empty())
        .or_else(|| home.map(|h| h.join(".cline")))
}

/// Cline's folder from this process's environment.
pub fn cline_dir_from_env() -> Option<PathBuf> {
    cline_dir(
        std::env::var_os("CLINE_DIR").map(PathBuf::from),
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
    )
    .map(|d| crate::agents::absolute(&d))
}

/// The hooks folder inside Cline's folder.
pub fn hooks_dir(dir: &Path) -> PathBuf {
    dir.join("hooks")
}

/// Our script for `event` in Cline's folder `dir`.
pub fn script_path(dir: &Path, event: &str) -> PathBuf {
    hooks_dir(dir).join(format!("{event}.{EXTENSION}"))
}

/// Every script of ours in Cline's folder `dir`.
pub fn script_paths(dir: &Path) -> Vec<PathBuf> {
    EVENT_FILES.iter().map(|e| script_path(dir, e)).collect()
}

/// The script text for this binary (the same for every event: the payload names it).
pub fn render(bin: &Path) -> String {
    format!(
        "#!/bin/sh\n{MARKER} (written by `agent-tray install --cline`; `agent-tray uninstall --cline` removes it)\nexec {} hook --agent cline\n",
        crate::install::shell_quote(&bin.display().to_string())
    )
}

/// The command line the script in `text` runs (`<BIN> hook --agent cline`, shell-quoted as
/// `doctor` runs it), or `None` when the text runs none.
pub fn hook_command_in(text: &str) -> Option<String> {
    let line = text.lines().find_map(|l| l.strip_prefix("exec "))?;
    let words = crate::install::shell_words(line)?;
    let bin = words.first()?;
    (words.get(1..) == Some(&["hook".to_string(), "--agent".into(), "cline".into()][..]))
        .then(|| format!("{} hook --agent cline", crate::install::shell_quote(bin)))
}

/// Whether `text` is a script we wrote.
fn is_ours(text: &str) -> bool {
    text.lines().nth(1).is_some_and(|l| l.starts_with(MARKER))
}

/// Plans install (`install = true`) or uninstall of our script at `path`, which holds `old`.
pub fn plan(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    install: bool,
) -> Result<FileOp, InstallError> {
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
    if !is_ours(old) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let event = name.strip_suffix(".sh").unwrap_or(&name);
        return Err(InstallError::Unexpected {
            path: path.to_path_buf(),
            detail: format!(
                "this hook file is not agent-tray's, and agent-tray never overwrites or removes \
                 a file of yours; rename it to `{event}` or `{event}.bash` (Cline runs every \
                 {event} file of that folder, so yours and ours both run)"
            ),
        });
    }
    if !install {
        return Ok(FileOp::Remove {
            old: old.to_string(),
        });
    }
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

/// The plan for every script of ours in Cline's folder `dir`, reading each file. All are
/// checked before anything is written: one file that is not ours refuses the whole install.
pub fn plan_all(dir: &Path, bin: &Path, install: bool) -> Result<Plan, InstallError> {
    let mut changes = Vec::new();
    for path in script_paths(dir) {
        let old = crate::install::read_optional(&path)?;
        let op = plan(&path, old.as_deref(), bin, install)?;
        let new = match op {
            FileOp::Write { new, .. } => Some(new),
            FileOp::Keep | FileOp::Remove { .. } => None,
        };
        changes.push(FileChange { path, old, new });
    }
    Ok(Plan {
        changes,
        notes: Vec::new(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_this_binary_through_sh_and_is_recognised_as_ours() {
        let text = render(Path::new("/opt/a b/agent-tray"));
        assert!(
            text.starts_with("#!/bin/sh\n"),
            "Cline runs it by its shebang"
        );
        assert!(is_ours(&text));
        assert!(text.contains("exec '/opt/a b/agent-tray' hook --agent cline\n"));
        assert_eq!(
            hook_command_in(&text).as_deref(),
            Some("'/opt/a b/agent-tray' hook --agent cline")
        );
        assert_eq!(hook_command_in("#!/bin/sh\necho hi\n"), None);
        assert_eq!(hook_command_in("exec /bin/other --flag\n"), None);
    }

    #[test]
    fn install_is_idempotent_and_uninstall_removes_only_our_script() {
        let p = Path::new("/h/.cline/hooks/TaskStart.sh");
        let bin = Path::new("/usr/bin/agent-tray");
        let FileOp::Write { new, .. } = plan(p, None, bin, true).expect("plan") else {
            panic!("creates the script")
        };
        assert_eq!(plan(p, Some(&new), bin, true).expect("again"), FileOp::Keep);
        assert_eq!(
            plan(p, Some(&new), bin, false).expect("uninstall"),
            FileOp::Remove { old: new.clone() }
        );
        assert_eq!(plan(p, None, bin, false).expect("absent"), FileOp::Keep);
        // Another binary: rewritten, the old text kept for the backup.
        let FileOp::Write { old, .. } =
            plan(p, Some(&new), Path::new("/opt/agent-tray"), true).expect("moved")
        else {
            panic!("points the script at the new binary")
        };
        assert_eq!(old.as_deref(), Some(new.as_str()));
    }

    // A user's own TaskStart.sh (their notifier, say) at our name: never overwritten, never
    // removed, and the message says how to keep both.
    #[test]
    fn a_users_hook_file_at_our_name_is_refused_untouched_with_a_way_out() {
        let p = Path::new("/h/.cline/hooks/TaskStart.sh");
        let bin = Path::new("/usr/bin/agent-tray");
        let theirs = "#!/bin/bash\nnotify-send started\n";
        for install in [true, false] {
            let e = plan(p, Some(theirs), bin, install).expect_err("refused");
            let text = e.to_string();
            assert!(
                text.contains("rename it to `TaskStart` or `TaskStart.bash`"),
                "{text}"
            );
        }
    }

    #[test]
    fn one_foreign_file_refuses_the_whole_install_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let hooks = hooks_dir(tmp.path());
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("TaskComplete.sh"), "#!/bin/sh\necho mine\n").unwrap();
        let bin = Path::new("/usr/bin/agent-tray");
        assert!(plan_all(tmp.path(), bin, true).is_err());
        let names: Vec<_> = std::fs::read_dir(&hooks).unwrap().collect();
        assert_eq!(names.len(), 1, "nothing written beside the user's file");
        // Without it, every event gets a script.
        std::fs::remove_file(hooks.join("TaskComplete.sh")).unwrap();
        let plan = plan_all(tmp.path(), bin, true).expect("plan");
        assert_eq!(plan.changes.len(), EVENT_FILES.len());
        assert!(plan.changes.iter().all(|c| c.new.is_some()));
        assert!(plan
            .changes
            .iter()
            .all(|c| c.path.extension().is_some_and(|e| e == "sh")));
    }

    #[test]
    fn the_folder_follows_cline_dir_else_home() {
        assert_eq!(
            cline_dir(Some("/c".into()), Some("/h".into())),
            Some(PathBuf::from("/c"))
        );
        assert_eq!(
            cline_dir(Some("".into()), Some("/h".into())),
            Some(PathBuf::from("/h/.cline"))
        );
        assert_eq!(cline_dir(None, None), None);
    }
}
