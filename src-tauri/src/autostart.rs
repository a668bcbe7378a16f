//! "Launch at login": the one file each platform reads at login to start the app.
//!
//! - Linux (and other XDG desktops): an autostart entry, `agent-tray.desktop`, under
//!   `$XDG_CONFIG_HOME/autostart` (else `~/.config/autostart`), per the XDG Autostart spec.
//! - macOS: a LaunchAgent, `~/Library/LaunchAgents/dev.agenttray.desktop.plist`, with
//!   `RunAtLoad`. launchd reads it at the next login; nothing is loaded now (`launchctl load`
//!   would start a second copy of the running app).
//!
//! Both start the app with `--background`, so logging in shows the tray and not the window.
//!
//! The text of each file is planned by a pure function from the program's path ([`plan`]), so
//! tests check it without a desktop; [`LoginItem::apply`] only writes or removes that one file.
//! The app writes the entry with its own path at every start while the setting is on, so a moved
//! or upgraded app keeps launching the right program. It never touches other files in those
//! folders, and removing a file that is already gone is not an error.

use std::path::{Path, PathBuf};

/// The entry's file name under the autostart folder (Linux).
pub const DESKTOP_FILE: &str = "agent-tray.desktop";
/// The LaunchAgent's label, and its file name with `.plist` (macOS).
pub const LAUNCH_AGENT_LABEL: &str = "dev.agenttray.desktop";

/// What kind of login entry a platform uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Xdg,
    MacOs,
}

impl Platform {
    pub fn current() -> Self {
        if cfg!(target_os = "macos") {
            Platform::MacOs
        } else {
            Platform::Xdg
        }
    }
}

/// One login entry: where it lives and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginItem {
    pub path: PathBuf,
    pub contents: String,
    /// The program the entry starts.
    pub program: PathBuf,
}

/// What [`LoginItem::apply`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Written,
    Removed,
    /// Off, and there was no file to remove.
    Absent,
}

/// The entry for `program` on `platform`. `home` is the user's home; `xdg_config_home` the value
/// of `$XDG_CONFIG_HOME` when it is set (only an absolute path counts, as the spec says).
pub fn plan(
    platform: Platform,
    home: &Path,
    xdg_config_home: Option<&Path>,
    program: &Path,
) -> LoginItem {
    match platform {
        Platform::Xdg => {
            let config = xdg_config_home
                .filter(|p| p.is_absolute())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| home.join(".config"));
            LoginItem {
                path: config.join("autostart").join(DESKTOP_FILE),
                contents: desktop_entry(program),
                program: program.to_path_buf(),
            }
        }
        Platform::MacOs => LoginItem {
            path: home
                .join("Library/LaunchAgents")
                .join(format!("{LAUNCH_AGENT_LABEL}.plist")),
            contents: launch_agent(program),
            program: program.to_path_buf(),
        },
    }
}

impl LoginItem {
    /// The entry for this program on this machine, from `HOME` and `XDG_CONFIG_HOME`. None when
    /// there is no home or the program's path is unknown (then there is nothing sensible to write).
    pub fn for_this_app() -> Option<Self> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)?;
        let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
        let program = std::env::current_exe().ok()?;
        Some(plan(Platform::current(), &home, xdg.as_deref(), &program))
    }

    /// Writes the entry when `enabled`, else removes it. Writes atomically (see
    /// [`agent_tray::atomic_file`]), so a session manager never reads half a file.
    ///
    /// A program that other users could replace (it, or a folder above it, is writable by them;
    /// see [`agent_tray::install::path_safety`]) is refused: the session would start their code
    /// as this user at every login.
    pub fn apply(&self, enabled: bool) -> std::io::Result<Applied> {
        if enabled {
            if let Err(insecure) = agent_tray::install::path_safety::check(&self.program) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "not starting this app at login: {insecure}. Fix: {}",
                        insecure.fix()
                    ),
                ));
            }
            agent_tray::atomic_file::AtomicWrite::new(&self.path)
                .new_file_mode(0o644)
                .write(self.contents.as_bytes())?;
            Ok(Applied::Written)
        } else {
            match std::fs::remove_file(&self.path) {
                Ok(()) => Ok(Applied::Removed),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Applied::Absent),
                Err(e) => Err(e),
            }
        }
    }
}

/// An XDG desktop entry that starts `program --background`.
fn desktop_entry(program: &Path) -> String {
    format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Agent Tray\n\
         Comment=Every Claude Code and Codex session on this machine, in the tray\n\
         Exec={} --background\n\
         Icon=agent-tray-desktop\n\
         Terminal=false\n\
         X-GNOME-Autostart-enabled=true\n",
        exec_argument(&program.to_string_lossy())
    )
}

/// One argument of an `Exec` key: quoted when it holds a reserved character, with the escapes
/// the Desktop Entry spec asks for inside quotes (`"`, `` ` ``, `$`, `\`), then `\` doubled again
/// because the key's value is itself a string with escapes; `%` doubled (field codes).
fn exec_argument(arg: &str) -> String {
    const RESERVED: &[char] = &[
        ' ', '\t', '\n', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(',
        ')', '`',
    ];
    let arg = arg.replace('%', "%%");
    if !arg.contains(RESERVED) {
        return arg;
    }
    let mut quoted = String::from("\"");
    for c in arg.chars() {
        match c {
            '"' | '`' | '$' => {
                quoted.push_str("\\\\");
                quoted.push(c);
            }
            '\\' => quoted.push_str("\\\\\\\\"),
            '\n' => quoted.push_str("\\n"),
            _ => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// A LaunchAgent that starts `program --background` at login.
fn launch_agent(program: &Path) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{label}</string>
  <key>ProgramArguments</key>
  <array>
    <string>{program}</string>
    <string>--background</string>
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>ProcessType</key>
  <string>Interactive</string>
</dict>
</plist>
"#,
        label = LAUNCH_AGENT_LABEL,
        program = xml_text(&program.to_string_lossy())
    )
}

fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_home() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn turning_it_on_writes_an_autostart_entry_and_off_removes_it() {
        // A fresh Linux account: no ~/.config yet. Ticking "Launch at login" must create the
        // folders; unticking must leave no entry behind, and unticking twice is not an error.
        let home = temp_home();
        let item = plan(
            Platform::Xdg,
            home.path(),
            None,
            Path::new("/usr/bin/agent-tray-desktop"),
        );
        let path = home.path().join(".config/autostart/agent-tray.desktop");
        assert_eq!(item.path, path);
        assert_eq!(
            item.apply(true).unwrap_or_else(|e| panic!("{e}")),
            Applied::Written
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
        assert!(
            text.contains("\nExec=/usr/bin/agent-tray-desktop --background\n"),
            "starts this program, to the tray only: {text}"
        );
        assert!(text.contains("\nType=Application\n"), "{text}");
        assert_eq!(
            item.apply(false).unwrap_or_else(|e| panic!("{e}")),
            Applied::Removed
        );
        assert!(!path.exists(), "the entry is gone");
        assert_eq!(
            item.apply(false).unwrap_or_else(|e| panic!("{e}")),
            Applied::Absent
        );
        let leftovers: Vec<_> = std::fs::read_dir(home.path().join(".config/autostart"))
            .unwrap_or_else(|e| panic!("{e}"))
            .collect();
        assert!(leftovers.is_empty(), "no temp file left: {leftovers:?}");
    }

    #[test]
    fn a_program_other_users_could_replace_is_never_started_at_login() {
        use std::os::unix::fs::PermissionsExt;
        let home = temp_home();
        let shared = home.path().join("shared");
        std::fs::create_dir(&shared).unwrap_or_else(|e| panic!("{e}"));
        let program = shared.join("agent-tray-desktop");
        std::fs::write(&program, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        let chmod = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        chmod(&program, 0o755);
        chmod(&shared, 0o777);
        let item = plan(Platform::Xdg, home.path(), None, &program);
        let Err(err) = item.apply(true) else {
            panic!("a world-writable folder was accepted")
        };
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        let text = err.to_string();
        assert!(
            text.contains("mode 0777") && text.contains(&shared.display().to_string()),
            "{text}"
        );
        assert!(!item.path.exists(), "no login entry written");
        // Positive control: the same program once the folder is private.
        chmod(&shared, 0o755);
        assert_eq!(
            item.apply(true).unwrap_or_else(|e| panic!("{e}")),
            Applied::Written
        );
    }

    #[test]
    fn xdg_config_home_is_honoured_when_it_is_an_absolute_path() {
        let home = temp_home();
        let config = home.path().join("elsewhere");
        let item = plan(Platform::Xdg, home.path(), Some(&config), Path::new("/x"));
        assert_eq!(item.path, config.join("autostart/agent-tray.desktop"));
        // The spec ignores a relative value; so must we, or the file lands under the cwd.
        let item = plan(
            Platform::Xdg,
            home.path(),
            Some(Path::new("relative")),
            Path::new("/x"),
        );
        assert_eq!(
            item.path,
            home.path().join(".config/autostart/agent-tray.desktop")
        );
    }

    #[test]
    fn another_autostart_entry_in_the_folder_is_left_alone() {
        let home = temp_home();
        let folder = home.path().join(".config/autostart");
        std::fs::create_dir_all(&folder).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(folder.join("other.desktop"), "x").unwrap_or_else(|e| panic!("{e}"));
        let item = plan(Platform::Xdg, home.path(), None, Path::new("/x"));
        item.apply(true).unwrap_or_else(|e| panic!("{e}"));
        item.apply(false).unwrap_or_else(|e| panic!("{e}"));
        assert!(folder.join("other.desktop").is_file());
    }

    #[test]
    fn a_program_path_with_spaces_or_specials_is_quoted_in_exec() {
        // An app unpacked under "My Apps" must still start; `$` and `%` must not be expanded.
        assert_eq!(exec_argument("/opt/agent-tray"), "/opt/agent-tray");
        assert_eq!(
            exec_argument("/home/a/My Apps/agent-tray"),
            "\"/home/a/My Apps/agent-tray\""
        );
        assert_eq!(exec_argument("/a$b/100%"), "\"/a\\\\$b/100%%\"");
    }

    #[test]
    fn the_macos_launch_agent_runs_the_app_at_load_with_its_path_as_xml_text() {
        let home = temp_home();
        let item = plan(
            Platform::MacOs,
            home.path(),
            None,
            Path::new("/Applications/Agent Tray & Co.app/Contents/MacOS/agent-tray-desktop"),
        );
        assert_eq!(
            item.path,
            home.path()
                .join("Library/LaunchAgents/dev.agenttray.desktop.plist")
        );
        assert!(item.contents.contains("<key>RunAtLoad</key>\n  <true/>"));
        assert!(
            item.contents.contains(
                "<string>/Applications/Agent Tray &amp; Co.app/Contents/MacOS/agent-tray-desktop</string>"
            ),
            "{}",
            item.contents
        );
        assert!(item.contents.contains("<string>--background</string>"));
        item.apply(true).unwrap_or_else(|e| panic!("{e}"));
        assert!(item.path.is_file());
        item.apply(false).unwrap_or_else(|e| panic!("{e}"));
        assert!(!item.path.exists());
    }
}
