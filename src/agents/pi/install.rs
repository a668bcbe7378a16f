//! `agent-tray install --pi` / `uninstall --pi`: our own extension file,
//! `<agent dir>/extensions/agent-tray.js`, where the agent dir is `$PI_CODING_AGENT_DIR`, else
//! `~/.pi/agent` (Pi's own rule, read in its `config.js`, 0.73.1).
//!
//! Pi loads every `*.ts` and `*.js` in that folder (its `discoverExtensionsInDir`), so we add a
//! file of our own and never edit the user's extensions or `settings.json`. The file is ours by
//! its first line; a file at our path without it is refused untouched (install never overwrites
//! it, uninstall never removes it). Writing and removing go through
//! [`crate::agents::own_file`] (temp file and rename, backup, re-read before the change,
//! `--dry-run` diff); its backups end in `.agent-tray-backup-<stamp>`, which Pi does not load.
//!
//! The extension ([`EXTENSION_TEMPLATE`], `extension.js` beside this file) forwards Pi's events
//! named in [`super::FORWARDED`], starts one hook at a time without Pi ever waiting for it, and
//! catches everything.

use std::path::{Path, PathBuf};

use crate::install::InstallError;

pub use crate::agents::own_file::FileOp;

/// The extensions folder inside Pi's agent dir.
pub const EXTENSIONS_DIR: &str = "extensions";
/// Our file's name in the extensions folder.
pub const EXTENSION_FILE_NAME: &str = "agent-tray.js";
/// The extension, with `__AGENT_TRAY_BIN__` to fill in.
pub const EXTENSION_TEMPLATE: &str = include_str!("extension.js");
/// The first line of every extension we write.
const MARKER: &str = "// agent-tray extension for Pi";

/// Pi's agent dir: `$PI_CODING_AGENT_DIR` (a leading `~` is the home folder, as Pi reads it),
/// else `~/.pi/agent`.
pub fn agent_dir(env_dir: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(dir) = env_dir.filter(|d| !d.as_os_str().is_empty()) {
        let text = dir.to_string_lossy();
        if text == "~" {
            return home;
        }
        if let Some(rest) = text.strip_prefix("~/") {
            return home.map(|h| h.join(rest));
        }
        return Some(super::super::absolute(&dir));
    }
    home.filter(|h| !h.as_os_str().is_empty())
        .map(|h| h.join(".pi").join("agent"))
}

/// Pi's agent dir from this process's environment.
pub fn agent_dir_from_env() -> Option<PathBuf> {
    agent_dir(
        std::env::var_os("PI_CODING_AGENT_DIR").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

/// The extension text for this binary.
pub fn render(bin: &Path) -> String {
    let bin = serde_json::to_string(&bin.display().to_string()).unwrap_or_default();
    EXTENSION_TEMPLATE.replace("__AGENT_TRAY_BIN__", &bin)
}

/// The command line the extension in `text` runs for every event (`<BIN> hook --agent pi`,
/// shell-quoted as `doctor` runs it), or `None` when the text names no binary.
pub fn hook_command_in(text: &str) -> Option<String> {
    let line = text.lines().find_map(|l| l.strip_prefix("const BIN = "))?;
    let bin: String = serde_json::from_str(line.trim_end().strip_suffix(';')?).ok()?;
    Some(format!(
        "{} hook --agent pi",
        crate::install::shell_quote(&bin)
    ))
}

/// Plans install (`install = true`) or uninstall of our extension at `path`, which holds `old`.
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
    if !old.starts_with(MARKER) {
        return Err(InstallError::Unexpected {
            path: path.to_path_buf(),
            detail: "this extension was not written by agent-tray".to_string(),
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_names_this_binary_as_a_js_string_and_every_forwarded_event() {
        let text = render(Path::new("/opt/a \"b\"/agent-tray"));
        assert!(text.starts_with(MARKER));
        assert!(
            text.contains(r#"const BIN = "/opt/a \"b\"/agent-tray";"#),
            "{text}"
        );
        for e in super::super::FORWARDED {
            assert!(
                text.contains(&format!("pi.on(\"{e}\"")),
                "{e} subscribed to"
            );
        }
        assert!(!text.contains("__"), "every placeholder filled");
        // Never awaited, never thrown, bounded: the hooks are queued, capped and time-limited.
        assert!(text.contains("child.unref()") && text.contains("catch (_)"));
        assert!(text.contains("MAX_QUEUED") && text.contains("HOOK_LIMIT_MS"));
    }

    #[test]
    fn doctor_reads_the_hook_command_line_the_extension_runs() {
        let text = render(Path::new("/opt/a b/agent-tray"));
        assert_eq!(
            hook_command_in(&text).as_deref(),
            Some("'/opt/a b/agent-tray' hook --agent pi")
        );
        assert_eq!(hook_command_in("export default function () {}\n"), None);
    }

    #[test]
    fn install_is_idempotent_and_uninstall_removes_only_our_extension() {
        let p = Path::new("/h/.pi/agent/extensions/agent-tray.js");
        let bin = Path::new("/usr/bin/agent-tray");
        let FileOp::Write { new, .. } = plan(p, None, bin, true).expect("plan") else {
            panic!("creates the extension")
        };
        assert_eq!(plan(p, Some(&new), bin, true).expect("again"), FileOp::Keep);
        let FileOp::Write { old, .. } =
            plan(p, Some(&new), Path::new("/other/agent-tray"), true).expect("another binary")
        else {
            panic!("points the extension at the new binary")
        };
        assert_eq!(old.as_deref(), Some(new.as_str()));
        assert_eq!(
            plan(p, Some(&new), bin, false).expect("uninstall"),
            FileOp::Remove { old: new.clone() }
        );
        let theirs = "export default function (pi) { pi.on(\"agent_end\", () => {}); }\n";
        assert!(plan(p, Some(theirs), bin, true).is_err());
        assert!(plan(p, Some(theirs), bin, false).is_err());
        assert_eq!(plan(p, None, bin, false).expect("absent"), FileOp::Keep);
    }

    #[test]
    fn the_agent_dir_follows_pi_coding_agent_dir_else_home() {
        let (x, h) = if cfg!(windows) {
            (r"C:\x", r"C:\h")
        } else {
            ("/x", "/h")
        };
        assert_eq!(
            agent_dir(Some(x.into()), Some(h.into())),
            Some(PathBuf::from(x))
        );
        assert_eq!(
            agent_dir(Some("~/pi-conf".into()), Some(h.into())),
            Some(Path::new(h).join("pi-conf"))
        );
        assert_eq!(
            agent_dir(Some("".into()), Some(h.into())),
            Some(Path::new(h).join(".pi").join("agent"))
        );
        assert_eq!(
            agent_dir(None, Some(h.into())),
            Some(Path::new(h).join(".pi").join("agent"))
        );
        assert_eq!(agent_dir(None, None), None);
    }
}
