//! Installing the hooks from the desktop app: what `agent-tray install` does, in-process, with
//! its report as text.
//!
//! The window's "Install hooks" and the tray's item once ran a child `agent-tray install` and
//! passed its output along. In-process, the run is the CLI's own ([`crate::install_command`]:
//! the same plan, merge, backup and re-read before the rename, the same record for the drift
//! watch), and the report's lines are the ones the CLI prints, so the window shows what it
//! showed before.
//!
//! One thing differs from running the CLI: the hooks must run the `agent-tray` CLI, not the app
//! that installs them. [`hook_binary`] finds it as the CLI would name itself (its canonical
//! path, as `current_exe` gives it), so an install from the app and one from a shell write the
//! same command and neither sees the other's entries as moved.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::install::{self, Action, InstallError};
use crate::install_command::{self, InstallArgs};

/// The CLI's binary name (beside the app in every package, else on PATH).
pub const CLI_BINARY: &str = if cfg!(windows) {
    "agent-tray.exe"
} else {
    "agent-tray"
};

/// What an install from the app did: whether it succeeded, and what `agent-tray install` would
/// have printed (stdout, then stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallOutcome {
    pub ok: bool,
    pub output: String,
}

/// The `agent-tray` CLI the hooks should run: beside `own_exe` (how the bundles ship it), else
/// the first on `path_var`; canonical, as the CLI's own `current_exe` names it. None when there
/// is none.
pub fn hook_binary(own_exe: Option<&Path>, path_var: Option<&OsStr>) -> Option<PathBuf> {
    let beside = own_exe.and_then(|exe| exe.parent().map(|dir| dir.join(CLI_BINARY)));
    let on_path = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(CLI_BINARY));
    beside
        .into_iter()
        .chain(on_path)
        .find(|p| is_executable(p))
        // Canonical, but never in Windows' verbatim form (`\\?\C:\…`), which `current_exe`
        // does not give the CLI and Git Bash, cmd.exe and PowerShell cannot run.
        .map(|p| dunce::canonicalize(&p).unwrap_or(p))
}

fn is_executable(path: &Path) -> bool {
    crate::os_fs::is_executable(path)
}

/// `agent-tray install` (no flags) with `bin` as the program the hooks run: refuses a `bin`
/// other users could replace, plans, writes, records the install for the drift watch (in the
/// data folder of `TrayPaths::from_env`, as the CLI does), and reports in the CLI's words.
/// Blocking: a few small file reads and writes.
pub fn install_hooks(bin: &Path) -> InstallOutcome {
    let args = InstallArgs::default();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let ok = match apply(&args, bin, &mut out) {
        Ok(()) => {
            err.extend(install_command::record_install(&args, Action::Install, bin));
            true
        }
        Err(e) => {
            err.push(format!("agent-tray: {e}"));
            false
        }
    };
    let mut output = out.join("\n");
    if !output.is_empty() && !err.is_empty() {
        output.push('\n');
    }
    output.push_str(&err.join("\n"));
    InstallOutcome {
        ok,
        output: output.trim().to_string(),
    }
}

/// The CLI's install ([`install_command::apply`]), its lines pushed to `out`; the notes come
/// last, as the CLI prints them after recording the install.
fn apply(args: &InstallArgs, bin: &Path, out: &mut Vec<String>) -> Result<(), InstallError> {
    install::path_safety::check(bin).map_err(InstallError::InsecurePath)?;
    let report = install_command::apply(args, Action::Install, bin)?;
    out.extend(report.lines);
    out.extend(report.notes.iter().map(|note| format!("note: {note}")));
    Ok(())
}

#[cfg(all(test, unix))] // executables made with chmod
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[test]
    fn the_hooks_run_the_cli_beside_the_app_else_the_one_on_path_never_the_app_itself() {
        // A package: /usr/bin/agent-tray-desktop beside /usr/bin/agent-tray.
        let dir = tempfile::tempdir().expect("tempdir");
        let bundle = dir.path().join("bundle");
        let elsewhere = dir.path().join("elsewhere");
        let empty = dir.path().join("empty");
        for d in [&bundle, &elsewhere, &empty] {
            std::fs::create_dir_all(d).expect("dir");
        }
        let app = bundle.join("agent-tray-desktop");
        executable(&app);
        executable(&bundle.join(CLI_BINARY));
        executable(&elsewhere.join(CLI_BINARY));
        let path_var = std::env::join_paths([&elsewhere]).expect("PATH");
        let canonical = |p: PathBuf| dunce::canonicalize(p).expect("canonical");
        assert_eq!(
            hook_binary(Some(&app), Some(&path_var)),
            Some(canonical(bundle.join(CLI_BINARY)))
        );
        // A development build run from elsewhere: the CLI on PATH.
        let lone = empty.join("agent-tray-desktop");
        assert_eq!(
            hook_binary(Some(&lone), Some(&path_var)),
            Some(canonical(elsewhere.join(CLI_BINARY)))
        );
        // A symlink on PATH is written as its target, as the CLI's current_exe names it.
        let links = dir.path().join("links");
        std::fs::create_dir_all(&links).expect("dir");
        std::os::unix::fs::symlink(elsewhere.join(CLI_BINARY), links.join(CLI_BINARY))
            .expect("symlink");
        let via_link = std::env::join_paths([&links]).expect("PATH");
        assert_eq!(
            hook_binary(Some(&lone), Some(&via_link)),
            Some(canonical(elsewhere.join(CLI_BINARY)))
        );
        // Nowhere (or only a relative PATH entry): none, rather than a bare name in the hooks.
        let relative = std::env::join_paths(["bin"]).expect("PATH");
        assert_eq!(hook_binary(Some(&lone), Some(&relative)), None);
        assert_eq!(hook_binary(None, None), None);
    }
}

#[cfg(test)] // on every desktop: the verbatim form is Windows'
#[allow(clippy::expect_used)]
mod plain_path_tests {
    use super::*;

    /// Windows: the path the app writes into the hooks is the one the CLI names itself by
    /// (`C:\…`), not the verbatim `\\?\C:\…` a plain canonicalize gives there, which no
    /// agent's shell runs and which would make the CLI see the app's hooks as moved.
    #[test]
    fn the_cli_found_for_the_hooks_is_named_in_the_plain_form() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cli = dir.path().join(CLI_BINARY);
        std::fs::write(&cli, b"").expect("cli");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).expect("mode");
        }
        let app = dir.path().join("agent-tray-desktop");
        let found = hook_binary(Some(&app), None).expect("the CLI beside the app");
        assert!(
            !found.to_string_lossy().starts_with(r"\\?\"),
            "a verbatim path in the hooks: {}",
            found.display()
        );
        assert!(found.ends_with(CLI_BINARY), "{}", found.display());
    }
}
