//! "Launch at login", through `tauri-plugin-autostart`: a LaunchAgent on macOS
//! (`~/Library/LaunchAgents/dev.agenttray.desktop.plist`), an XDG autostart entry on Linux
//! (`~/.config/autostart/agent-tray.desktop`), a value `agent-tray` under the user's
//! `HKCU\Software\Microsoft\Windows\CurrentVersion\Run` on Windows. All start the app with
//! `--background`, so logging in shows the tray and not the window.
//!
//! Windows: the plugin writes the program's path unquoted, and the installer puts it under
//! `…\Agent Tray\`, a folder with a space: Windows would try `…\Agent` first. So the value is
//! written again with the path quoted ([`windows_run_command`]), as the Linux entry's `Exec`
//! line is. The app never wrote a login entry of its own there: nothing to migrate.
//!
//! The plugin replaced a hand-written module that wrote the same two files. Its names were kept
//! (the plugin's `app_name` is the old file's stem), so on most machines the plugin simply
//! rewrites the old file in place. Where the old module wrote elsewhere (it honoured
//! `$XDG_CONFIG_HOME`, which the plugin's `auto-launch` does not), [`migrate`] removes the old
//! entry, so no login starts the app twice; and a user who had it on keeps it on: the old entry's
//! presence turns the setting on when the settings file had lost it.
//!
//! The old module's refusal stays: a program other users could replace (it, or a folder above
//! it, is writable by them; see [`agent_tray::install::path_safety`]) is never started at login,
//! since the session would run their code as this user at every login.

use std::path::{Path, PathBuf};

use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_autostart::AutoLaunchManager;

/// The plugin's `app_name`: the entry's file stem (and, on macOS, the LaunchAgent's label).
/// The same names as the entries the app wrote before the plugin.
pub const ENTRY_NAME: &str = if cfg!(target_os = "macos") {
    "dev.agenttray.desktop"
} else {
    "agent-tray"
};

/// The argument every login entry passes: start in the tray, without the window.
pub use agent_tray::app_launch::BACKGROUND_ARG;

/// The plugin, configured with the entry's name and `--background`.
pub fn plugin<R: Runtime>() -> TauriPlugin<R> {
    tauri_plugin_autostart::Builder::new()
        .app_name(ENTRY_NAME)
        .arg(BACKGROUND_ARG)
        .build()
}

/// The switch and its errors are the settings' (which apply it); the plugin implements it.
pub use crate::settings::{LoginError, LoginSwitch};

/// The plugin's entry for this program.
pub struct PluginLogin<R: Runtime> {
    app: AppHandle<R>,
    /// The program the entry starts (the plugin uses the same `current_exe`); None when unknown.
    program: Option<PathBuf>,
}

impl<R: Runtime> PluginLogin<R> {
    pub fn new(app: &AppHandle<R>) -> Self {
        PluginLogin {
            app: app.clone(),
            program: std::env::current_exe().ok(),
        }
    }
}

impl<R: Runtime> LoginSwitch for PluginLogin<R> {
    fn set(&self, enabled: bool) -> Result<(), LoginError> {
        let manager = self
            .app
            .try_state::<AutoLaunchManager>()
            .ok_or(LoginError::NoPlugin)?;
        if enabled {
            if let Some(program) = &self.program {
                if let Err(insecure) = agent_tray::install::path_safety::check(program) {
                    return Err(LoginError::InsecureProgram {
                        reason: insecure.to_string(),
                        fix: insecure.fix(),
                    });
                }
            }
            manager
                .enable()
                .map_err(|e| LoginError::Plugin(e.to_string()))?;
            #[cfg(all(unix, not(target_os = "macos")))]
            if let (Some(program), Some(home)) =
                (&self.program, std::env::var_os("HOME").map(PathBuf::from))
            {
                quote_exec_line(&linux_entry(&home), program)?;
            }
            #[cfg(windows)]
            if let Some(program) = &self.program {
                quote_run_value(program)?;
            }
            Ok(())
        } else {
            manager
                .disable()
                .map_err(|e| LoginError::Plugin(e.to_string()))
        }
    }
}

/// Where the plugin writes the Linux entry (its `auto-launch` uses `$HOME/.config/autostart`).
pub fn linux_entry(home: &Path) -> PathBuf {
    home.join(".config/autostart")
        .join(format!("{ENTRY_NAME}.desktop"))
}

/// The plugin writes `Exec=<path> --background` unquoted: a path with a space or a `%` would not
/// start the app at login. Rewrites that one line quoted as the specification says
/// ([`agent_tray::app_launch::desktop_exec`]), the rest of the entry as the plugin wrote it.
pub fn quote_exec_line(entry: &Path, program: &Path) -> Result<(), LoginError> {
    let text = std::fs::read_to_string(entry)
        .map_err(|e| LoginError::Plugin(format!("cannot read {}: {e}", entry.display())))?;
    let exec = agent_tray::app_launch::desktop_exec(program, &[BACKGROUND_ARG]);
    let fixed = agent_tray::app_launch::with_exec_line(&text, &exec);
    if fixed != text {
        agent_tray::atomic_file::write(entry, fixed.as_bytes())
            .map_err(|e| LoginError::Plugin(e.to_string()))?;
    }
    Ok(())
}

/// The command line the Windows Run value holds: the program's path quoted for Windows (a
/// folder with a space), then `--background`.
pub fn windows_run_command(program: &Path) -> String {
    agent_tray::jump::windows::command_line(&[
        program.display().to_string(),
        BACKGROUND_ARG.to_string(),
    ])
}

/// Writes the Run value again with the program's path quoted ([`windows_run_command`]), through
/// the same writer the plugin uses (`auto-launch`), which puts the path and the arguments
/// together as they are given.
#[cfg(windows)]
fn quote_run_value(program: &Path) -> Result<(), LoginError> {
    let quoted = agent_tray::jump::windows::quote_argument(&program.display().to_string());
    auto_launch::AutoLaunchBuilder::new()
        .set_app_name(ENTRY_NAME)
        .set_app_path(&quoted)
        .set_args(&[BACKGROUND_ARG])
        .build()
        .and_then(|entry| entry.enable())
        .map_err(|e| LoginError::Plugin(e.to_string()))
}

/// Where the app's login entry was written before the plugin: `$XDG_CONFIG_HOME/autostart` (an
/// absolute value only, as the spec says) and `~/.config/autostart` on Linux, the LaunchAgent
/// on macOS. Pure: tests give a temp home.
pub fn legacy_entries(home: &Path, xdg_config_home: Option<&Path>, macos: bool) -> Vec<PathBuf> {
    if macos {
        return vec![home
            .join("Library/LaunchAgents")
            .join("dev.agenttray.desktop.plist")];
    }
    let mut entries: Vec<PathBuf> = xdg_config_home
        .filter(|p| p.is_absolute())
        .map(|config| config.join("autostart/agent-tray.desktop"))
        .into_iter()
        .collect();
    let default = home.join(".config/autostart/agent-tray.desktop");
    if !entries.contains(&default) {
        entries.push(default);
    }
    entries
}

/// Whether `text` is an entry the old module wrote (and not the plugin's, which may have the
/// same path): the old desktop entry carried `X-GNOME-Autostart-enabled`, the old LaunchAgent a
/// `ProcessType` and no `AssociatedBundleIdentifiers`; the plugin writes neither.
pub fn written_by_the_old_module(text: &str) -> bool {
    text.contains("X-GNOME-Autostart-enabled=true")
        || (text.contains("<key>ProcessType</key>")
            && !text.contains("<key>AssociatedBundleIdentifiers</key>"))
}

/// Removes the entries the old module wrote (and nothing else: another program's file of the
/// same name is left alone). Returns whether there was one: the user had it on.
pub fn migrate(home: &Path, xdg_config_home: Option<&Path>) -> bool {
    let mut found = false;
    for path in legacy_entries(home, xdg_config_home, cfg!(target_os = "macos")) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !written_by_the_old_module(&text) {
            continue;
        }
        found = true;
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "old login entry removed"),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot remove the old login entry")
            }
        }
    }
    found
}

/// [`migrate`] from `HOME` and `XDG_CONFIG_HOME`: whether the old module's entry was there.
#[cfg(unix)]
fn migrate_from_env() -> bool {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    home.is_some_and(|home| migrate(&home, xdg.as_deref()))
}

/// The old module never ran on Windows.
#[cfg(not(unix))]
fn migrate_from_env() -> bool {
    false
}

/// At start: migrates the old entry (from `HOME` and `XDG_CONFIG_HOME`), turns the setting on
/// when the old entry said it was, and returns the switch the settings applier uses. None when
/// the plugin is not set up (a test's shell).
pub fn prepare<R: Runtime>(app: &AppHandle<R>) -> Option<Box<dyn LoginSwitch>> {
    app.try_state::<AutoLaunchManager>()?;
    let had_it_on = migrate_from_env();
    if had_it_on {
        if let Some(store) = app.try_state::<crate::settings::SettingsStore>() {
            let mut settings = store.get();
            if !settings.launch_at_login {
                settings.launch_at_login = true;
                if let Err(error) = store.save(settings) {
                    tracing::warn!(%error, "cannot keep launch at login on");
                }
            }
        }
    }
    Some(Box::new(PluginLogin::new(app)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_windows_run_value_quotes_a_program_path_with_a_space() {
        // Where the per-user installer puts the app: a folder with a space in its name.
        let program = Path::new(r"C:\Users\dev\AppData\Local\Agent Tray\agent-tray-desktop.exe");
        assert_eq!(
            windows_run_command(program),
            r#""C:\Users\dev\AppData\Local\Agent Tray\agent-tray-desktop.exe" --background"#
        );
        // A path without one is still one word.
        assert_eq!(
            windows_run_command(Path::new(r"C:\Apps\agent-tray-desktop.exe")),
            r"C:\Apps\agent-tray-desktop.exe --background"
        );
    }

    #[test]
    fn the_old_entries_are_where_the_old_module_wrote_them() {
        let home = Path::new("/home/me");
        assert_eq!(
            legacy_entries(home, None, false),
            vec![PathBuf::from(
                "/home/me/.config/autostart/agent-tray.desktop"
            )]
        );
        // A custom XDG_CONFIG_HOME: the old module wrote there; ~/.config is checked too.
        assert_eq!(
            legacy_entries(home, Some(Path::new("/cfg")), false),
            vec![
                PathBuf::from("/cfg/autostart/agent-tray.desktop"),
                PathBuf::from("/home/me/.config/autostart/agent-tray.desktop"),
            ]
        );
        // A relative value is ignored, as the spec says (and as the old module did).
        assert_eq!(legacy_entries(home, Some(Path::new("rel")), false).len(), 1);
        assert_eq!(
            legacy_entries(home, None, true),
            vec![PathBuf::from(
                "/home/me/Library/LaunchAgents/dev.agenttray.desktop.plist"
            )]
        );
    }

    #[test]
    fn only_the_old_modules_text_is_taken_for_an_old_entry() {
        let old_desktop = "[Desktop Entry]\nType=Application\nName=Agent Tray\nExec=/usr/bin/agent-tray-desktop --background\nX-GNOME-Autostart-enabled=true\n";
        let plugin_desktop = "[Desktop Entry]\nType=Application\nVersion=1.0\nName=agent-tray\nComment=agent-tray startup script\nExec=/usr/bin/agent-tray-desktop --background\nStartupNotify=false\nTerminal=false";
        let old_plist = "<dict>\n  <key>Label</key>\n  <string>dev.agenttray.desktop</string>\n  <key>ProcessType</key>\n  <string>Interactive</string>\n</dict>";
        let plugin_plist = "<dict>\n  <key>Label</key>\n  <string>dev.agenttray.desktop</string>\n  <key>AssociatedBundleIdentifiers</key>\n  <array></array>\n  <key>ProcessType</key>\n</dict>";
        assert!(written_by_the_old_module(old_desktop));
        assert!(written_by_the_old_module(old_plist));
        assert!(!written_by_the_old_module(plugin_desktop));
        assert!(!written_by_the_old_module(plugin_plist));
    }

    #[test]
    #[cfg(not(target_os = "macos"))]
    fn migrating_removes_the_old_entry_and_leaves_other_files_alone() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = home.path().join("cfg");
        let old = config.join("autostart/agent-tray.desktop");
        let other = config.join("autostart/other.desktop");
        std::fs::create_dir_all(config.join("autostart")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&old, "[Desktop Entry]\nX-GNOME-Autostart-enabled=true\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&other, "x").unwrap_or_else(|e| panic!("{e}"));
        assert!(migrate(home.path(), Some(&config)), "the user had it on");
        assert!(!old.exists());
        assert!(other.is_file());
        assert!(
            !migrate(home.path(), Some(&config)),
            "nothing left to migrate"
        );
    }
}
