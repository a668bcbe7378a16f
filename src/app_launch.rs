//! How a launch reaches the running desktop app: its private socket, one line asked, one answered.
//!
//! The desktop app (`agent-tray-desktop`) runs once per environment and listens on
//! `desktop.sock` in the runtime folder; a second launch asks it to open its window and is done.
//! The app's own binary does that first thing in `main()`, but by then the dynamic loader has
//! mapped GTK, WebKitGTK and their ~150 libraries: 80–100 ms of a 250 ms budget from the launch
//! to the window painted (README "At rest" → Opening). `agent-tray open`, which the desktop
//! entry runs, asks from this lean, static binary instead (a millisecond or two) and only when no
//! app answers starts the app itself, by `exec`, so the launcher's process becomes the app.
//!
//! The request side lives here, in the core both binaries share; so does the app's side (the
//! lock that makes it one per environment, the listener and its replies: [`instance`]), which the
//! desktop crate's `second_launch` wires to its window.

pub mod instance;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::paths::TrayPaths;

/// The socket's file name in the runtime folder.
pub const SOCKET_NAME: &str = "desktop.sock";
/// What a launch asks: open the window.
pub const REQUEST_OPEN: &str = "open";
/// What a `--background` launch asks (a login autostart while the app already runs): only
/// whether an app is there. It opens nothing, as `--background` never opens the window.
pub const REQUEST_BACKGROUND: &str = "background";
/// What the running app answers once it has taken the request.
pub const REPLY_OK: &str = "ok";
/// The argument that starts the app with no window (launch at login), and asks a running one
/// for nothing.
pub const BACKGROUND_ARG: &str = "--background";
/// How long either side waits for the other: a running app answers in microseconds; one that
/// takes longer is treated as not there.
pub const DEADLINE: Duration = Duration::from_millis(500);
/// A request or a reply is one short line; more is not ours.
pub const MAX_LINE: usize = 64;
/// The desktop app's binary: beside this CLI in every package (/usr/bin on Linux,
/// Contents/MacOS in the macOS bundle), else on `PATH`.
pub const APP_BINARY: &str = if cfg!(windows) {
    "agent-tray-desktop.exe"
} else {
    "agent-tray-desktop"
};

#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("no app answers on {0}")]
    NoAnswer(PathBuf, #[source] std::io::Error),
    #[error("the app on {0} answered {1:?}")]
    Refused(PathBuf, String),
}

/// Where the running app listens for this environment's launches.
/// The `Exec=` value of an XDG desktop entry that runs `program` with `args`, quoted as the
/// Desktop Entry Specification says: an argument holding a reserved character (a space, `%`'s
/// company of `$`, quotes, …) goes in double quotes with `"`, `` ` ``, `$` and `\` escaped, a
/// `%` is written `%%` (else it is a field code), and the value's own backslashes are doubled
/// (the key file's escaping). A path with a space or a `%` then still starts the app. Tested by
/// GLib's own launcher (`gio launch`) in the desktop crate's `autostart_exec` test.
pub fn desktop_exec(program: &Path, args: &[&str]) -> String {
    const RESERVED: &[char] = &[
        ' ', '\t', '\n', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(',
        ')', '`', '%',
    ];
    let quote = |word: &str| -> String {
        let word = word.replace('%', "%%");
        if word.is_empty() || word.contains(RESERVED) {
            let mut out = String::from("\"");
            for c in word.chars() {
                if matches!(c, '"' | '`' | '$' | '\\') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
            out
        } else {
            word
        }
    };
    let program = program.to_string_lossy();
    // GLib looks the program up before it expands `%%`, so a program path holding a `%` is not
    // found as written: such a program is started through `env`, which is, and gets its path as
    // an argument (expanded by then).
    let through_env = program.contains('%').then_some("/usr/bin/env");
    through_env
        .into_iter()
        .chain(std::iter::once(program.as_ref()))
        .chain(args.iter().copied())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
        .replace('\\', "\\\\")
}

/// `text` (a desktop entry) with its `Exec=` line replaced by `exec`, the other lines as they
/// were.
pub fn with_exec_line(text: &str, exec: &str) -> String {
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with("Exec=") {
                format!("Exec={exec}")
            } else {
                l.to_string()
            }
        })
        .collect();
    if !out.iter().any(|l| l.starts_with("Exec=")) {
        out.push(format!("Exec={exec}"));
    }
    out.join("\n") + "\n"
}

pub fn socket_path(paths: &TrayPaths) -> PathBuf {
    paths.runtime_dir.join(SOCKET_NAME)
}

/// What a launch with these arguments asks a running app: [`REQUEST_BACKGROUND`] with
/// [`BACKGROUND_ARG`], else [`REQUEST_OPEN`].
pub fn request_for(args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>) -> &'static str {
    if args.into_iter().any(|a| a.as_ref() == BACKGROUND_ARG) {
        REQUEST_BACKGROUND
    } else {
        REQUEST_OPEN
    }
}

/// Sends `request` to the app listening on `socket`; `Ok` once it answered [`REPLY_OK`].
pub fn ask(socket: &Path, request: &str, deadline: Duration) -> Result<(), AskError> {
    let no_answer = |e| AskError::NoAnswer(socket.to_path_buf(), e);
    // A unix connect does not wait for the app to accept: it fails at once on a missing or
    // stale socket, and succeeds at once on a live one.
    #[cfg(unix)]
    let mut stream = std::os::unix::net::UnixStream::connect(socket).map_err(no_answer)?;
    #[cfg(windows)]
    let mut stream = {
        use crate::control::transport::{pipe_name, ConnectError, PipeClient};
        PipeClient::connect(&pipe_name(socket), deadline).map_err(|e| {
            no_answer(match e {
                ConnectError::NotRunning => std::io::ErrorKind::NotFound.into(),
                ConnectError::TimedOut => std::io::ErrorKind::TimedOut.into(),
                ConnectError::Untrusted(reason) => std::io::Error::other(reason),
                ConnectError::Io(e) => e,
            })
        })?
    };
    stream.set_read_timeout(Some(deadline)).map_err(no_answer)?;
    stream
        .set_write_timeout(Some(deadline))
        .map_err(no_answer)?;
    stream
        .write_all(format!("{request}\n").as_bytes())
        .map_err(no_answer)?;
    let mut reply = Vec::with_capacity(8);
    stream
        .take(MAX_LINE as u64)
        .read_to_end(&mut reply)
        .map_err(no_answer)?;
    let reply = String::from_utf8_lossy(&reply).trim().to_string();
    if reply == REPLY_OK {
        Ok(())
    } else {
        Err(AskError::Refused(socket.to_path_buf(), reply))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("usage: agent-tray open [--background] (unknown argument {0:?})")]
    Usage(String),
    #[error(
        "the Agent Tray app ({APP_BINARY}) is neither beside this program nor on PATH; \
         install the agent-tray package (it holds both), or build it with `cargo build -p agent-tray-desktop`"
    )]
    NoApp,
    #[error("cannot start {0}: {1}")]
    Exec(PathBuf, #[source] std::io::Error),
}

/// What `agent-tray open` does, given its arguments after `open`: asks the running app, and
/// when none answers, which binary to start with which arguments.
#[derive(Debug, PartialEq, Eq)]
pub enum OpenPlan {
    /// The running app took the request.
    HandedOver,
    /// No app answered: start this one (it settles a race with another launch itself).
    Start(PathBuf, Vec<OsString>),
}

/// Asks the app of `paths` (when there are paths) and otherwise finds the app to start: beside
/// `own_exe`, else on `path_var`.
pub fn plan_open(
    args: &[OsString],
    paths: Option<&TrayPaths>,
    own_exe: Option<&Path>,
    path_var: Option<&std::ffi::OsStr>,
) -> Result<OpenPlan, OpenError> {
    if let Some(unknown) = args.iter().find(|a| a.as_os_str() != BACKGROUND_ARG) {
        return Err(OpenError::Usage(unknown.to_string_lossy().into_owned()));
    }
    if let Some(paths) = paths {
        if ask(&socket_path(paths), request_for(args), DEADLINE).is_ok() {
            return Ok(OpenPlan::HandedOver);
        }
    }
    let app = find_app(own_exe, path_var).ok_or(OpenError::NoApp)?;
    Ok(OpenPlan::Start(app, args.to_vec()))
}

/// The app binary beside `own_exe` (symlinks resolved, as a package's /usr/bin entries may be
/// links), else the first on `path_var`.
pub fn find_app(own_exe: Option<&Path>, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let beside = own_exe.and_then(|exe| {
        let exe = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_path_buf());
        exe.parent().map(|dir| dir.join(APP_BINARY))
    });
    let on_path = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(APP_BINARY));
    beside.into_iter().chain(on_path).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    crate::os_fs::is_executable(path)
}

/// `agent-tray open [--background]`: hands over to the running app, or becomes the app. Returns
/// only on an error (a successful start replaces this process).
pub fn run_open(args: &[OsString]) -> Result<(), OpenError> {
    let paths = TrayPaths::from_env().ok();
    let own_exe = std::env::current_exe().ok();
    let path_var = std::env::var_os("PATH");
    match plan_open(
        args,
        paths.as_ref(),
        own_exe.as_deref(),
        path_var.as_deref(),
    )? {
        OpenPlan::HandedOver => Ok(()),
        #[cfg(unix)]
        OpenPlan::Start(app, args) => {
            use std::os::unix::process::CommandExt;
            let error = std::process::Command::new(&app).args(args).exec();
            Err(OpenError::Exec(app, error))
        }
        // Windows has no exec: the app starts detached and this process ends.
        #[cfg(not(unix))]
        OpenPlan::Start(app, args) => match std::process::Command::new(&app).args(args).spawn() {
            Ok(_) => Ok(()),
            Err(error) => Err(OpenError::Exec(app, error)),
        },
    }
}

#[cfg(test)]
mod entry_tests {
    use super::*;

    #[test]
    fn a_login_entrys_exec_quotes_what_the_specification_reserves() {
        let exec = |p: &str| desktop_exec(Path::new(p), &["--background"]);
        assert_eq!(
            exec("/usr/bin/agent-tray-desktop"),
            "/usr/bin/agent-tray-desktop --background"
        );
        assert_eq!(
            exec("/home/dev/My Apps/agent-tray-desktop"),
            "\"/home/dev/My Apps/agent-tray-desktop\" --background"
        );
        // `$`, `"` and a backslash escaped inside the quotes; the key file doubles backslashes.
        assert_eq!(
            exec("/opt/a$b\"c\\d"),
            "\"/opt/a\\\\$b\\\\\"c\\\\\\\\d\" --background"
        );
        // A `%` is `%%`, and such a program starts through env (GLib finds it there).
        assert_eq!(
            exec("/opt/100%/agent-tray-desktop"),
            "/usr/bin/env \"/opt/100%%/agent-tray-desktop\" --background"
        );
        let text = "[Desktop Entry]\nName=agent-tray\nExec=/x y --background\nTerminal=false";
        assert_eq!(
            with_exec_line(text, "\"/x y\" --background"),
            "[Desktop Entry]\nName=agent-tray\nExec=\"/x y\" --background\nTerminal=false\n"
        );
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {

    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;
    #[cfg(unix)]
    use std::os::unix::net::UnixListener;

    #[cfg(unix)]
    fn executable(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// An app's side answering `reply` to each of `n` connections on `socket` (the app's own
    /// listener: a unix socket, or the pipe on Windows), on a thread; the requests it read, in
    /// order. Listening when this returns.
    fn answering(
        socket: &Path,
        reply: &'static str,
        n: usize,
    ) -> std::thread::JoinHandle<Vec<String>> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut listener = rt
            .block_on(async { instance::listen(socket) })
            .expect("listen");
        std::thread::spawn(move || {
            rt.block_on(async move {
                let mut requests = Vec::new();
                for _ in 0..n {
                    let mut stream = crate::control::transport::accept_local(&mut listener)
                        .await
                        .expect("accept");
                    let mut line = [0u8; MAX_LINE];
                    let read = stream.read(&mut line).await.expect("read");
                    stream
                        .write_all(format!("{reply}\n").as_bytes())
                        .await
                        .expect("reply");
                    drop(stream);
                    requests.push(String::from_utf8_lossy(&line[..read]).trim().to_string());
                }
                requests
            })
        })
    }

    fn paths_in(root: &Path) -> TrayPaths {
        TrayPaths::under(&root.join("home"))
    }

    #[test]
    fn a_running_app_takes_the_request_and_nothing_is_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = paths_in(dir.path());
        std::fs::create_dir_all(&paths.runtime_dir).expect("runtime dir");
        let app = answering(&socket_path(&paths), REPLY_OK, 2);
        let plan = plan_open(&[], Some(&paths), None, None).expect("plan");
        assert_eq!(plan, OpenPlan::HandedOver);
        let background = plan_open(&[BACKGROUND_ARG.into()], Some(&paths), None, None);
        assert_eq!(background.expect("plan"), OpenPlan::HandedOver);
        assert_eq!(
            app.join().expect("app"),
            vec![REQUEST_OPEN, REQUEST_BACKGROUND]
        );
    }

    #[test]
    #[cfg(unix)] // executables by their mode bits, and a stale socket file
    fn with_no_app_answering_the_app_beside_the_launcher_is_started_with_the_same_arguments() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = paths_in(dir.path());
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("bin");
        executable(&bin.join(APP_BINARY));
        let own = bin.join("agent-tray");
        executable(&own);
        // No socket at all, then a stale socket file nobody listens on.
        let plan = plan_open(&[], Some(&paths), Some(&own), None).expect("plan");
        assert_eq!(plan, OpenPlan::Start(bin.join(APP_BINARY), vec![]));
        std::fs::create_dir_all(&paths.runtime_dir).expect("runtime dir");
        drop(UnixListener::bind(socket_path(&paths)).expect("bind"));
        let plan = plan_open(&[BACKGROUND_ARG.into()], Some(&paths), Some(&own), None);
        assert_eq!(
            plan.expect("plan"),
            OpenPlan::Start(bin.join(APP_BINARY), vec![BACKGROUND_ARG.into()])
        );
    }

    #[test]
    fn an_app_that_answers_otherwise_is_not_taken_for_a_handover() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = paths_in(dir.path());
        std::fs::create_dir_all(&paths.runtime_dir).expect("runtime dir");
        let app = answering(&socket_path(&paths), "unknown", 1);
        let error = ask(&socket_path(&paths), REQUEST_OPEN, DEADLINE).expect_err("refused");
        assert!(
            matches!(error, AskError::Refused(_, ref r) if r == "unknown"),
            "{error}"
        );
        app.join().expect("app");
    }

    #[test]
    #[cfg(unix)] // executables by their mode bits, and a stale socket file
    fn the_app_is_found_on_path_when_not_beside_and_a_clear_error_names_it_when_nowhere() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lone = dir.path().join("lone");
        let on_path = dir.path().join("on-path");
        let not_executable = dir.path().join("not-executable");
        for d in [&lone, &on_path, &not_executable] {
            std::fs::create_dir_all(d).expect("dir");
        }
        executable(&lone.join("agent-tray"));
        executable(&on_path.join(APP_BINARY));
        std::fs::write(not_executable.join(APP_BINARY), "").expect("write");
        let path_var = std::env::join_paths([&not_executable, &on_path]).expect("PATH");
        let own = lone.join("agent-tray");
        assert_eq!(
            find_app(Some(&own), Some(&path_var)),
            Some(on_path.join(APP_BINARY))
        );
        let nowhere = std::env::join_paths([&not_executable]).expect("PATH");
        let error = plan_open(&[], None, Some(&own), Some(&nowhere)).expect_err("no app");
        assert!(matches!(error, OpenError::NoApp));
        assert!(error.to_string().contains(APP_BINARY), "{error}");
    }

    #[test]
    fn an_unknown_argument_is_a_usage_error_before_anything_is_asked_or_started() {
        let error = plan_open(&["--window".into()], None, None, None).expect_err("usage");
        assert!(
            matches!(error, OpenError::Usage(ref a) if a == "--window"),
            "{error}"
        );
    }
}
