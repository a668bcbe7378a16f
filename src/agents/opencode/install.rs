//! `agent-tray install --opencode` / `uninstall --opencode`: our own plugin file,
//! `$XDG_CONFIG_HOME/opencode/plugins/agent-tray.js` (default `~/.config/opencode/plugins/`).
//!
//! OpenCode loads every `*.js` in that folder, so we add a file of our own and never edit the
//! user's `opencode.json`. The file is recognised as ours by its first line; a file at our path
//! without it is refused untouched (install never overwrites it, uninstall never removes it).
//! Writing and removing go through [`crate::agents::own_file`] (temp file and rename, backup,
//! re-read before the change, `--dry-run` diff).
//!
//! The plugin ([`PLUGIN_TEMPLATE`], `plugin.js` beside this file) filters events in OpenCode
//! itself (a token delta fires an event per token: only the state events leave the process),
//! copies only the fields [`super::event`] reads, starts the hook without waiting for it, and
//! catches everything.
//!
//! The same plugin serves OpenCode's forks that kept its plugin API and its bus (Kilo Code CLI:
//! `$XDG_CONFIG_HOME/kilo/plugins`): every function here takes the host agent, whose id names
//! its folder under the config home and the `--agent` the plugin passes, and whose product name
//! is in the first line. For OpenCode the text is exactly what it always was.

use std::path::{Path, PathBuf};

use crate::catalogue::InCatalogue;
use crate::install::InstallError;
use crate::model::Agent;

pub use crate::agents::own_file::{apply, diff, FileOp};

use super::event::FORWARDED;

/// The file's name in the plugins folder.
pub const PLUGIN_FILE_NAME: &str = "agent-tray.js";
/// The plugin, with `__AGENT_TRAY_BIN__`, `__FORWARDED__`, `__AGENT__` (the host's id) and
/// `__PRODUCT__` (its name) to fill in.
pub const PLUGIN_TEMPLATE: &str = include_str!("plugin.js");

/// The first line of every plugin we write for `host`.
fn marker(host: Agent) -> String {
    format!("// agent-tray plugin for {}", host.entry().product_name)
}

/// The plugins folder: `$XDG_CONFIG_HOME/opencode/plugins`, else `~/.config/opencode/plugins`.
pub fn plugins_dir(xdg_config_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    plugins_dir_of(Agent::OpenCode, xdg_config_home, home)
}

/// `host`'s plugins folder: `$XDG_CONFIG_HOME/<id>/plugins`, else `~/.config/<id>/plugins`.
pub fn plugins_dir_of(
    host: Agent,
    xdg_config_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    xdg_config_home
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".config")))
        .map(|d| d.join(host.as_str()).join("plugins"))
}

/// The plugins folder from this process's environment.
pub fn plugins_dir_from_env() -> Option<PathBuf> {
    plugins_dir_of_from_env(Agent::OpenCode)
}

/// `host`'s plugins folder from this process's environment.
pub fn plugins_dir_of_from_env(host: Agent) -> Option<PathBuf> {
    plugins_dir_of(
        host,
        std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

/// The plugin text for this binary.
pub fn render(bin: &Path) -> String {
    render_for(Agent::OpenCode, bin)
}

/// The plugin text `host` loads, for this binary.
pub fn render_for(host: Agent, bin: &Path) -> String {
    let bin = serde_json::to_string(&bin.display().to_string()).unwrap_or_default();
    let forwarded = serde_json::to_string(&FORWARDED).unwrap_or_default();
    PLUGIN_TEMPLATE
        .replace("__AGENT_TRAY_BIN__", &bin)
        .replace("__FORWARDED__", &forwarded)
        .replace("__AGENT__", host.as_str())
        .replace("__PRODUCT__", host.entry().product_name)
}

/// The command line the plugin in `text` runs for every event (`<BIN> hook --agent opencode`,
/// shell-quoted as `doctor` runs it), or `None` when the text names no binary.
pub fn hook_command_in(text: &str) -> Option<String> {
    hook_command_of(Agent::OpenCode, text)
}

/// The command line `host`'s plugin in `text` runs for every event (`<BIN> hook --agent <id>`).
pub fn hook_command_of(host: Agent, text: &str) -> Option<String> {
    let line = text.lines().find_map(|l| l.strip_prefix("const BIN = "))?;
    let bin: String = serde_json::from_str(line.trim_end().strip_suffix(';')?).ok()?;
    Some(format!(
        "{} hook --agent {}",
        crate::install::shell_quote(&bin),
        host.as_str()
    ))
}

/// Plans install (`install = true`) or uninstall of our plugin at `path`, which holds `old`.
pub fn plan(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    install: bool,
) -> Result<FileOp, InstallError> {
    plan_for(Agent::OpenCode, path, old, bin, install)
}

/// Plans install or uninstall of `host`'s plugin at `path`, which holds `old`.
pub fn plan_for(
    host: Agent,
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    install: bool,
) -> Result<FileOp, InstallError> {
    let Some(old) = old else {
        return Ok(if install {
            FileOp::Write {
                old: None,
                new: render_for(host, bin),
            }
        } else {
            FileOp::Keep
        });
    };
    if !old.starts_with(&marker(host)) {
        return Err(InstallError::Unexpected {
            path: path.to_path_buf(),
            detail: "this plugin was not written by agent-tray".to_string(),
        });
    }
    if !install {
        return Ok(FileOp::Remove {
            old: old.to_string(),
        });
    }
    let new = render_for(host, bin);
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
    fn the_plugin_names_this_binary_as_a_js_string_and_every_forwarded_event() {
        let text = render(Path::new("/opt/a \"b\"/agent-tray"));
        assert!(text.starts_with(&marker(Agent::OpenCode)));
        assert!(
            text.contains(r#"const BIN = "/opt/a \"b\"/agent-tray";"#),
            "{text}"
        );
        for e in FORWARDED {
            assert!(text.contains(&format!("\"{e}\"")), "{e} forwarded");
        }
        assert!(!text.contains("__"), "every placeholder filled");
        // Never awaited, never thrown: the spawn is fire-and-forget inside a try.
        assert!(text.contains("child.unref()") && text.contains("catch (_)"));
    }

    // The plugin became a template shared with OpenCode's forks: OpenCode's own text must stay
    // what earlier installs wrote (or every upgrade would rewrite it and `doctor` flag it).
    #[test]
    fn opencodes_plugin_still_names_opencode_everywhere_it_did() {
        let text = render(Path::new("/usr/bin/agent-tray"));
        assert!(text.starts_with(
            "// agent-tray plugin for OpenCode: written by `agent-tray install --opencode`, removed by\n\
             // `agent-tray uninstall --opencode`; edits are overwritten by the next install.\n"
        ));
        assert!(text.contains("`agent-tray hook --agent opencode`, with this process's id"));
        assert!(text.contains("never throws: OpenCode runs exactly as it would without it."));
        assert_eq!(
            text.matches(r#"spawn(BIN, ["hook", "--agent", "opencode"]"#)
                .count(),
            2
        );
        assert!(text.contains(r#"["inbox", "--agent", "opencode", "--pid""#));
        assert!(text.contains("\"this OpenCode's plugin client cannot reach its server\""));
        assert!(
            text.contains("\"OpenCode's commands are run from its terminal; nothing was sent\"")
        );
        assert!(!text.contains("Kilo"));
    }

    #[test]
    fn doctor_reads_the_hook_command_line_the_plugin_runs() {
        let text = render(Path::new("/opt/a b/agent-tray"));
        assert_eq!(
            hook_command_in(&text).as_deref(),
            Some("'/opt/a b/agent-tray' hook --agent opencode")
        );
        assert_eq!(hook_command_in("export const X = 1;\n"), None);
    }

    #[test]
    fn install_is_idempotent_and_uninstall_removes_only_our_plugin() {
        let p = Path::new("/c/opencode/plugins/agent-tray.js");
        let bin = Path::new("/usr/bin/agent-tray");
        let FileOp::Write { new, .. } = plan(p, None, bin, true).expect("plan") else {
            panic!("creates the plugin")
        };
        assert_eq!(plan(p, Some(&new), bin, true).expect("again"), FileOp::Keep);
        assert_eq!(
            plan(p, Some(&new), bin, false).expect("uninstall"),
            FileOp::Remove { old: new.clone() }
        );
        let theirs = "export const Mine = async () => ({})\n";
        assert!(plan(p, Some(theirs), bin, true).is_err());
        assert!(plan(p, Some(theirs), bin, false).is_err());
        assert_eq!(plan(p, None, bin, false).expect("absent"), FileOp::Keep);
    }

    #[test]
    fn the_plugins_folder_follows_xdg_config_home_else_home() {
        let (x, h) = if cfg!(windows) {
            (r"C:\x", r"C:\h")
        } else {
            ("/x", "/h")
        };
        assert_eq!(
            plugins_dir(Some(x.into()), Some(h.into())),
            Some(Path::new(x).join("opencode").join("plugins"))
        );
        assert_eq!(
            plugins_dir(Some("relative".into()), Some(h.into())),
            Some(
                Path::new(h)
                    .join(".config")
                    .join("opencode")
                    .join("plugins")
            )
        );
    }
}
