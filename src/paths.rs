//! Where Agent Tray keeps things, and where the agents keep theirs.
//!
//! Everything derives from the environment so a test, a CI run or a second user gets a private
//! world: `AGENT_TRAY_HOME` (everything of ours under one folder), else the platform's data and
//! runtime folders (`XDG_DATA_HOME`, `XDG_RUNTIME_DIR`, `HOME`). The agents' folders honour
//! `CLAUDE_CONFIG_DIR` (replaces `~/.claude` entirely) and `CODEX_HOME` (replaces `~/.codex`).
//!
//! The control socket sits in a folder only the user can enter (0700) and is itself 0600: any
//! process that can reach it can feed sessions into the tray, so other users must not. On
//! Windows the same folders get a protected DACL for this user and SYSTEM, and an existing one
//! another SID owns is refused (`os_fs::folder_dacl`).
//!
//! On Windows the data folder is `%LOCALAPPDATA%\agent-tray` (per machine, not roaming: journals
//! and the store are this machine's), the home folder is `%USERPROFILE%` (where Claude Code and
//! Codex keep `.claude` and `.codex` there too), and the socket path only names the control
//! channel: the engine listens on a named pipe derived from it (see the control channel's
//! transport).
//! Which folder is which on each desktop is decided by pure functions of the environment
//! ([`data_dir_on`], [`home_dir_on`]), tested on every OS.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The longest path a unix socket address can hold (`sun_path`, minus the NUL).
#[cfg(target_os = "macos")]
const MAX_SOCKET_PATH: usize = 103;
#[cfg(not(target_os = "macos"))]
const MAX_SOCKET_PATH: usize = 107;

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot tell where to keep data: neither AGENT_TRAY_HOME nor HOME is set")]
    NoHome,
    #[error("the socket path {0} is too long for a unix socket ({1} bytes at most); set AGENT_TRAY_HOME or XDG_RUNTIME_DIR to a shorter folder")]
    SocketPathTooLong(PathBuf, usize),
    #[error(transparent)]
    Knob(#[from] crate::env_knobs::KnobError),
    #[error("cannot create {path}: {source}")]
    Create { path: PathBuf, source: io::Error },
}

/// Agent Tray's own folders and files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayPaths {
    /// Data: journals, logs, settings, the store.
    pub data_dir: PathBuf,
    /// Runtime: the control socket (0700).
    pub runtime_dir: PathBuf,
    pub socket: PathBuf,
}

impl TrayPaths {
    /// Everything under one folder (what `AGENT_TRAY_HOME` selects).
    pub fn under(home: &Path) -> Self {
        let runtime_dir = home.join("run");
        TrayPaths {
            data_dir: home.to_path_buf(),
            socket: runtime_dir.join("agent-tray.sock"),
            runtime_dir,
        }
    }

    /// The folders for this process's environment.
    pub fn from_env() -> Result<Self, PathsError> {
        if let Some(home) = crate::env_knobs::read_dir(crate::env_knobs::HOME)? {
            return Ok(Self::under(&home));
        }
        let data_dir = platform_data_dir().ok_or(PathsError::NoHome)?;
        let runtime_dir = match non_empty_env("XDG_RUNTIME_DIR") {
            Some(dir) => PathBuf::from(dir).join("agent-tray"),
            None => data_dir.join("run"),
        };
        Ok(TrayPaths {
            socket: runtime_dir.join("agent-tray.sock"),
            runtime_dir,
            data_dir,
        })
    }

    pub fn journal_dir(&self) -> PathBuf {
        self.data_dir.join("journal")
    }

    pub fn log_dir(&self) -> PathBuf {
        self.data_dir.join("logs")
    }

    pub fn settings_file(&self) -> PathBuf {
        self.data_dir.join("settings.json")
    }

    /// Creates the data and runtime folders, private to the user, and checks the socket path
    /// fits in a socket address.
    pub fn ensure_private_dirs(&self) -> Result<(), PathsError> {
        for dir in [&self.data_dir, &self.runtime_dir] {
            create_private_dir(dir)?;
        }
        let len = self.socket.as_os_str().len();
        if cfg!(unix) && len > MAX_SOCKET_PATH {
            return Err(PathsError::SocketPathTooLong(
                self.socket.clone(),
                MAX_SOCKET_PATH,
            ));
        }
        Ok(())
    }
}

/// Creates `dir` (and parents) and makes it 0700; on Windows, gives it a protected DACL for this
/// user and SYSTEM only, refusing an existing folder someone else owns (see the folder DACL
/// module of `os_fs`).
pub fn create_private_dir(dir: &Path) -> Result<(), PathsError> {
    let err = |source| PathsError::Create {
        path: dir.to_path_buf(),
        source,
    };
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    #[cfg(windows)]
    let existed = dir.is_dir();
    builder.create(dir).map_err(err)?;
    // An existing folder keeps the mode (or DACL) it had; ours must be private whatever made it.
    #[cfg(windows)]
    return crate::os_fs::folder_dacl::make_private(dir, existed).map_err(err);
    #[cfg(not(windows))]
    crate::os_fs::make_owner_only(dir, true).map_err(err)
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The desktops whose folders differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Desktop {
    Linux,
    MacOs,
    Windows,
}

/// The desktop this build runs on (the BSDs and others lay folders out as Linux does).
pub const THIS_DESKTOP: Desktop = if cfg!(windows) {
    Desktop::Windows
} else if cfg!(target_os = "macos") {
    Desktop::MacOs
} else {
    Desktop::Linux
};

/// The user's home folder on `desktop`, from the environment `env` gives: `HOME` on unix;
/// `USERPROFILE` on Windows (what Node's `os.homedir()` and so Claude Code read first), else
/// `HOME` (set by Git Bash and MSYS).
pub fn home_dir_on(desktop: Desktop, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    match desktop {
        Desktop::Windows => set("USERPROFILE").or_else(|| set("HOME")),
        Desktop::Linux | Desktop::MacOs => set("HOME"),
    }
    .map(PathBuf::from)
}

/// Agent Tray's data folder on `desktop` when `AGENT_TRAY_HOME` does not say.
pub fn data_dir_on(desktop: Desktop, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let home = || home_dir_on(desktop, env);
    match desktop {
        Desktop::MacOs => home().map(|h| h.join("Library/Application Support/agent-tray")),
        Desktop::Linux => match set("XDG_DATA_HOME") {
            Some(dir) => Some(PathBuf::from(dir).join("agent-tray")),
            None => home().map(|h| h.join(".local/share/agent-tray")),
        },
        Desktop::Windows => match set("LOCALAPPDATA") {
            Some(dir) => Some(PathBuf::from(dir).join("agent-tray")),
            None => home().map(|h| h.join("AppData").join("Local").join("agent-tray")),
        },
    }
}

pub fn home_dir() -> Option<PathBuf> {
    home_dir_on(THIS_DESKTOP, &|name| std::env::var(name).ok())
}

fn platform_data_dir() -> Option<PathBuf> {
    data_dir_on(THIS_DESKTOP, &|name| std::env::var(name).ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn everything_lives_under_agent_tray_home_when_given() {
        let p = TrayPaths::under(Path::new("/x/home"));
        assert_eq!(p.socket, Path::new("/x/home/run/agent-tray.sock"));
        assert_eq!(p.journal_dir(), Path::new("/x/home/journal"));
    }

    #[test]
    fn each_desktop_keeps_data_where_its_users_expect() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let windows = env(&[
            ("USERPROFILE", r"C:\Users\ada"),
            ("LOCALAPPDATA", r"C:\Users\ada\AppData\Local"),
            ("HOME", "/x/home/ada"),
        ]);
        assert_eq!(
            data_dir_on(Desktop::Windows, &windows),
            Some(Path::new(r"C:\Users\ada\AppData\Local").join("agent-tray"))
        );
        assert_eq!(
            home_dir_on(Desktop::Windows, &windows),
            Some(PathBuf::from(r"C:\Users\ada"))
        );
        // No LOCALAPPDATA (a stripped environment): the same folder under the profile.
        let bare = env(&[("USERPROFILE", r"C:\Users\ada"), ("LOCALAPPDATA", " ")]);
        assert_eq!(
            data_dir_on(Desktop::Windows, &bare),
            Some(
                PathBuf::from(r"C:\Users\ada")
                    .join("AppData")
                    .join("Local")
                    .join("agent-tray")
            )
        );
        let msys = env(&[("HOME", "/c/Users/ada")]);
        assert_eq!(
            home_dir_on(Desktop::Windows, &msys),
            Some(PathBuf::from("/c/Users/ada"))
        );
        assert_eq!(
            data_dir_on(Desktop::Linux, &env(&[("HOME", "/x/home/ada")])),
            Some(PathBuf::from("/x/home/ada/.local/share/agent-tray"))
        );
        assert_eq!(
            data_dir_on(Desktop::MacOs, &env(&[("HOME", "/x/Users/ada")])),
            Some(PathBuf::from(
                "/x/Users/ada/Library/Application Support/agent-tray"
            ))
        );
        assert_eq!(data_dir_on(Desktop::Windows, &env(&[])), None);
    }

    /// Windows' twin: the same folders read back with a DACL for this user and SYSTEM only,
    /// also the one that existed first with its parent's grants (under Wine, Everyone's read).
    #[test]
    #[cfg(windows)]
    fn private_dirs_are_private_even_when_they_existed_wider() {
        use crate::os_fs::folder_dacl::{check, read, Rule};
        let me = crate::os_fs::windows_security::this_user_sid().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        fs::create_dir_all(home.join("run")).unwrap();
        let p = TrayPaths::under(&home);
        p.ensure_private_dirs().unwrap();
        for dir in [&p.data_dir, &p.runtime_dir] {
            let security = read(dir).unwrap();
            assert_eq!(
                check(&me, &security, Rule::Private),
                Ok(()),
                "{}",
                dir.display()
            );
        }
    }

    #[test]
    #[cfg(unix)] // file modes
    fn private_dirs_are_private_even_when_they_existed_wider() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        fs::create_dir_all(home.join("run")).unwrap();
        fs::set_permissions(home.join("run"), fs::Permissions::from_mode(0o755)).unwrap();
        let p = TrayPaths::under(&home);
        p.ensure_private_dirs().unwrap();
        for dir in [&p.data_dir, &p.runtime_dir] {
            let mode = fs::metadata(dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", dir.display());
        }
    }

    #[test]
    #[cfg(unix)] // a named pipe's name is derived, never too long
    fn a_socket_path_too_long_for_an_address_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let long = tmp.path().join("x".repeat(120));
        let err = TrayPaths::under(&long).ensure_private_dirs().unwrap_err();
        assert!(matches!(err, PathsError::SocketPathTooLong(..)), "{err}");
        assert!(err.to_string().contains("AGENT_TRAY_HOME"));
    }
}
