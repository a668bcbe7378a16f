//! A second launch of the app hands over to the running one before it initialises anything.
//!
//! Starting the app again (a launcher, a desktop entry, the CLI's users) must open the running
//! app's window, not a second app. The single-instance plugin does that, but only once Tauri,
//! GTK and the display are up in the second process: some 180 ms of a 250 ms budget for the
//! window to open (benches/at_rest.sh, leg 3). So the running app also listens on a private unix
//! socket of its own, `desktop.sock` beside the control socket (in the runtime folder, 0700; the
//! socket 0600), and `main()` of a second launch first connects to it and sends `open`: on `ok`
//! it exits at once, before the dynamic GUI libraries do any work. It needs no display, so it
//! works from a shell with no `DISPLAY` too.
//!
//! Every failure falls back to the normal start, where the single-instance plugin still stands
//! (no app, a stale socket left by a crash, an app that does not answer within [`DEADLINE`]). Two
//! first launches at once both find no socket and start; the plugin lets one through, and only
//! that one binds the socket (the other exits in the plugin's setup, before binding). A socket
//! file nobody answers on is a crash's leftover and is replaced; one that answers belongs to a
//! running app and is left alone.
//!
//! Hand-written rather than a crate: the one crate-shaped piece (single-instance) is the plugin,
//! which is what cannot run early; the rest is a connect, a line and a reply.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_tray::paths::TrayPaths;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

/// The socket's file name in the runtime folder.
pub const SOCKET_NAME: &str = "desktop.sock";
/// What a second launch asks.
pub const REQUEST_OPEN: &str = "open";
/// What a second `--background` launch asks (a login autostart while the app already runs):
/// only whether an app is there. It opens nothing, as `--background` never opens the window.
pub const REQUEST_BACKGROUND: &str = "background";
/// What the running app answers once it has taken the request.
pub const REPLY_OK: &str = "ok";
/// How long either side waits for the other: a running app answers in microseconds; one that
/// takes longer is treated as not there (the second launch then starts normally).
pub const DEADLINE: Duration = Duration::from_millis(500);
/// A request is one short line; more is not ours.
const MAX_REQUEST: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum SecondLaunchError {
    #[error("no app answers on {0}")]
    NoAnswer(PathBuf, #[source] std::io::Error),
    #[error("the app on {0} answered {1:?}")]
    Refused(PathBuf, String),
    #[error("another app already listens on {0}")]
    AlreadyServed(PathBuf),
    #[error("cannot listen on {0}: {1}")]
    Listen(PathBuf, #[source] std::io::Error),
    #[error(transparent)]
    Paths(#[from] agent_tray::paths::PathsError),
}

/// Where the running app listens for this environment's second launches.
pub fn socket_path(paths: &TrayPaths) -> PathBuf {
    paths.runtime_dir.join(SOCKET_NAME)
}

/// What a launch with these arguments asks a running app: [`REQUEST_BACKGROUND`] with
/// `--background`, else [`REQUEST_OPEN`].
pub fn request_for(args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>) -> &'static str {
    if args
        .into_iter()
        .any(|a| a.as_ref() == crate::autostart::BACKGROUND_ARG)
    {
        REQUEST_BACKGROUND
    } else {
        REQUEST_OPEN
    }
}

/// The second launch's side: asks the app listening on `socket` to open its window. `Ok` means
/// it took the request and this process has nothing left to do.
pub fn hand_over(socket: &Path, deadline: Duration) -> Result<(), SecondLaunchError> {
    ask(socket, REQUEST_OPEN, deadline)
}

/// Sends `request` to the app listening on `socket`; `Ok` once it answered [`REPLY_OK`].
pub fn ask(socket: &Path, request: &str, deadline: Duration) -> Result<(), SecondLaunchError> {
    let no_answer = |e| SecondLaunchError::NoAnswer(socket.to_path_buf(), e);
    // A unix connect does not wait for the app to accept: it fails at once on a missing or
    // stale socket, and succeeds at once on a live one.
    let mut stream = UnixStream::connect(socket).map_err(no_answer)?;
    stream.set_read_timeout(Some(deadline)).map_err(no_answer)?;
    stream
        .set_write_timeout(Some(deadline))
        .map_err(no_answer)?;
    stream
        .write_all(format!("{request}\n").as_bytes())
        .map_err(no_answer)?;
    let mut reply = Vec::with_capacity(8);
    stream
        .take(MAX_REQUEST as u64)
        .read_to_end(&mut reply)
        .map_err(no_answer)?;
    let reply = String::from_utf8_lossy(&reply).trim().to_string();
    if reply == REPLY_OK {
        Ok(())
    } else {
        Err(SecondLaunchError::Refused(socket.to_path_buf(), reply))
    }
}

/// What `main()` calls first: true when a running app took the launch over (exit now).
pub fn handed_over() -> bool {
    let Ok(paths) = TrayPaths::from_env() else {
        return false;
    };
    ask(
        &socket_path(&paths),
        request_for(std::env::args_os().skip(1)),
        DEADLINE,
    )
    .is_ok()
}

/// The running app's side: binds `socket` (0600, in a 0700 folder), replacing a file left by a
/// crash, but never one another app answers on.
pub fn listen(socket: &Path) -> Result<UnixListener, SecondLaunchError> {
    let listen_err = |e| SecondLaunchError::Listen(socket.to_path_buf(), e);
    if let Some(dir) = socket.parent() {
        agent_tray::paths::create_private_dir(dir)?;
    }
    let listener = match UnixListener::bind(socket) {
        Ok(listener) => listener,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            if UnixStream::connect(socket).is_ok() {
                return Err(SecondLaunchError::AlreadyServed(socket.to_path_buf()));
            }
            std::fs::remove_file(socket).map_err(listen_err)?;
            UnixListener::bind(socket).map_err(listen_err)?
        }
        Err(e) => return Err(listen_err(e)),
    };
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600)).map_err(listen_err)?;
    Ok(listener)
}

/// Answers second launches until `token` is cancelled, calling `open` for each `open` request
/// (it must not block: the app's passes the work to the main thread), then removes the socket
/// file. One connection at a time, each bounded by [`DEADLINE`]: second
/// launches are rare, and a client that stalls costs at most that.
pub async fn serve(
    listener: UnixListener,
    socket: PathBuf,
    open: impl Fn() + Send + 'static,
    token: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = token.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut stream, _)) = accepted else {
            continue;
        };
        let answered = tokio::time::timeout(DEADLINE, async {
            let request = read_line(&mut stream).await?;
            let reply = match request.as_str() {
                REQUEST_OPEN => {
                    open();
                    REPLY_OK
                }
                REQUEST_BACKGROUND => REPLY_OK,
                _ => "unknown",
            };
            stream.write_all(format!("{reply}\n").as_bytes()).await?;
            stream.shutdown().await
        })
        .await;
        if !matches!(answered, Ok(Ok(()))) {
            tracing::debug!("a second launch did not complete its request");
        }
    }
    let _ = std::fs::remove_file(&socket);
}

/// The first line (up to [`MAX_REQUEST`] bytes), without its newline.
async fn read_line(stream: &mut tokio::net::UnixStream) -> std::io::Result<String> {
    let mut buf = Vec::with_capacity(MAX_REQUEST);
    let mut byte = [0u8; 1];
    while buf.len() < MAX_REQUEST {
        if stream.read(&mut byte).await? == 0 || byte[0] == b'\n' {
            break;
        }
        buf.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&buf).trim().to_string())
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime")
    }

    /// An app's side listening on `socket`: the runtime, the count of `open`s it took, the
    /// token that stops it and its task.
    fn serving(
        socket: &Path,
    ) -> (
        tokio::runtime::Runtime,
        Arc<AtomicUsize>,
        CancellationToken,
        tokio::task::JoinHandle<()>,
    ) {
        let rt = rt();
        let opened = Arc::new(AtomicUsize::new(0));
        let token = CancellationToken::new();
        let listener = rt.block_on(async { listen(socket) }).expect("listen");
        let counter = opened.clone();
        let served = rt.spawn(serve(
            listener,
            socket.to_path_buf(),
            move || {
                counter.fetch_add(1, Ordering::SeqCst);
            },
            token.clone(),
        ));
        (rt, opened, token, served)
    }

    #[test]
    fn a_launch_with_no_app_running_does_not_hand_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        assert!(matches!(
            hand_over(&socket, DEADLINE),
            Err(SecondLaunchError::NoAnswer(..))
        ));
    }

    #[test]
    fn a_running_app_takes_the_open_request_and_the_second_launch_is_done() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("run").join(SOCKET_NAME);
        let (rt, opened, token, served) = serving(&socket);
        let mode = std::fs::metadata(&socket)
            .expect("socket")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        hand_over(&socket, DEADLINE).expect("handed over");
        hand_over(&socket, DEADLINE).expect("handed over again");
        assert_eq!(opened.load(Ordering::SeqCst), 2);
        token.cancel();
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), served).await })
            .expect("stops when cancelled")
            .expect("task");
        assert!(!socket.exists(), "the socket file goes with the app");
    }

    #[test]
    fn a_socket_left_by_a_crash_is_replaced_and_does_not_hold_a_launch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        // A listener that died without removing its file.
        drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
        assert!(socket.exists());
        let started = std::time::Instant::now();
        assert!(hand_over(&socket, DEADLINE).is_err());
        assert!(
            started.elapsed() < DEADLINE,
            "a stale socket refuses at once"
        );
        let rt = rt();
        rt.block_on(async { listen(&socket) })
            .expect("the stale file is replaced");
    }

    #[test]
    fn a_socket_another_app_answers_on_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        let rt = rt();
        let _first = rt.block_on(async { listen(&socket) }).expect("first");
        let second = rt.block_on(async { listen(&socket) });
        assert!(matches!(second, Err(SecondLaunchError::AlreadyServed(_))));
        assert!(socket.exists(), "the first app's socket is still there");
    }

    #[test]
    fn an_app_that_does_not_answer_is_given_up_on_within_the_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        // Bound and listening, but never accepting or answering (a wedged app).
        let _silent = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let started = std::time::Instant::now();
        let deadline = Duration::from_millis(200);
        assert!(matches!(
            hand_over(&socket, deadline),
            Err(SecondLaunchError::NoAnswer(..))
        ));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_request_that_is_not_open_is_refused_and_opens_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        let (rt, opened, token, served) = serving(&socket);
        let mut stream = UnixStream::connect(&socket).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        stream.write_all(b"quit\n").expect("write");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).expect("read");
        assert_eq!(reply.trim(), "unknown");
        assert_eq!(opened.load(Ordering::SeqCst), 0);
        // Positive control: the same server opens on "open".
        hand_over(&socket, DEADLINE).expect("handed over");
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        token.cancel();
        let _ = rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), served).await });
    }

    #[test]
    fn a_second_background_launch_is_answered_and_opens_nothing() {
        // A login autostart while the app already runs: the launch must end (the app is
        // there) without opening the window, as `--background` never does.
        assert_eq!(request_for(["--background"]), REQUEST_BACKGROUND);
        assert_eq!(request_for(Vec::<String>::new()), REQUEST_OPEN);
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        let (rt, opened, token, served) = serving(&socket);
        ask(&socket, request_for(["--background"]), DEADLINE).expect("answered");
        assert_eq!(
            opened.load(Ordering::SeqCst),
            0,
            "a background launch opened the window"
        );
        // Positive control: a plain second launch opens it.
        ask(&socket, request_for(Vec::<String>::new()), DEADLINE).expect("answered");
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        token.cancel();
        let _ = rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), served).await });
    }
}
