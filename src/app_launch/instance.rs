//! One app per environment, and a second launch hands over to it before it initialises anything.
//!
//! Starting the app again (a launcher, a desktop entry, the CLI's users, a login autostart) must
//! open the running app's window, not start a second app. `main()` settles that before Tauri,
//! GTK or the display do any work (they cost a second launch some 180 ms of a 250 ms budget for
//! the window to open, benches/at_rest.sh leg 3), and needs no display, so a launch from a shell
//! with no `DISPLAY` works too:
//!
//! 1. it connects to the running app's private socket, `desktop.sock` beside the control socket
//!    (in the runtime folder, 0700; the socket 0600), and sends `open` (or `background`, which
//!    opens nothing); on `ok` it exits at once;
//! 2. else it takes an exclusive `flock` on `desktop.lock` beside it, held for the app's whole
//!    life (close-on-exec, so no child it starts keeps it), and starts;
//! 3. a lock already held means another launch is starting at the same moment (it holds the
//!    lock but is not listening yet): it asks again until that app answers (up to
//!    [`STARTING_WAIT`]); an app that holds the lock and never answers is reported, not doubled.
//!
//! The request side (the socket's name, [`ask`](super::ask)) is [`super`], shared with the CLI's
//! `agent-tray open`: the desktop entry runs that, so a launch while the app runs costs a small
//! static binary's start instead of the app's loading of GTK and WebKit.
//!
//! Holding the lock, the app knows any socket file left is a crash's and replaces it. The lock is
//! per environment (`XDG_RUNTIME_DIR`/`AGENT_TRAY_HOME`), as every other file of the app is; the
//! single-instance plugin it replaces keyed on a D-Bus name, one per user's session bus, and its
//! zbus executor woke a thread twice a second for the app's whole life (the largest share of
//! the app's idle CPU once the engine's own timers were gone).
//!
//! Hand-written rather than a crate: it is a lock, a connect, a line and a reply.
//!
//! It lives in the core, beside the request side, because none of it needs Tauri: the lock, the
//! listener and the protocol are tested here, and the desktop crate's `second_launch` only
//! wires [`serve`] to its window.

use std::fs::File;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::control::transport::{accept_local, LocalListener};
use crate::paths::TrayPaths;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::{
    ask, request_for, socket_path, DEADLINE, MAX_LINE, REPLY_OK, REQUEST_BACKGROUND, REQUEST_OPEN,
};

/// The lock's file name beside the socket: the running app holds it for its whole life.
pub const LOCK_NAME: &str = "desktop.lock";
/// How long a launch that finds the lock held waits for the app holding it to answer: another
/// launch at the same moment gets from its lock to its socket in about a second, more on a
/// loaded machine.
pub const STARTING_WAIT: Duration = Duration::from_secs(10);
/// Between two questions to an app that holds the lock but does not answer yet.
const STARTING_POLL: Duration = Duration::from_millis(25);

#[derive(Debug, thiserror::Error)]
pub enum SecondLaunchError {
    #[error(transparent)]
    Ask(#[from] crate::app_launch::AskError),
    #[error("another app already listens on {0}")]
    AlreadyServed(PathBuf),
    #[error("cannot listen on {0}: {1}")]
    Listen(PathBuf, #[source] std::io::Error),
    #[error("cannot take the app's lock {0}: {1}")]
    Lock(PathBuf, #[source] std::io::Error),
    #[error(
        "another Agent Tray holds {lock} but did not answer on {socket} within {waited:?}; \
         if it hangs, end it and start again"
    )]
    NotAnswering {
        lock: PathBuf,
        socket: PathBuf,
        waited: Duration,
    },
    #[error(transparent)]
    Paths(#[from] crate::paths::PathsError),
}

/// Where the running app's lock is.
pub fn lock_path(paths: &TrayPaths) -> PathBuf {
    paths.runtime_dir.join(LOCK_NAME)
}

/// The running app's claim on its environment: the `flock` on [`LOCK_NAME`], released when this
/// is dropped or the process ends, however it ends.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// What a launch does.
#[derive(Debug)]
pub enum Launch {
    /// A running app took the request: this process has nothing left to do.
    HandedOver,
    /// No app runs here: this process is the app, for as long as it holds the lock.
    First(InstanceLock),
}

/// Takes the lock at `path` (creating it 0600, its folder 0700) without waiting: `None` when
/// another process holds it.
pub fn try_lock(path: &Path) -> Result<Option<InstanceLock>, SecondLaunchError> {
    if let Some(dir) = path.parent() {
        crate::paths::create_private_dir(dir)?;
    }
    let lock_err = |e| SecondLaunchError::Lock(path.to_path_buf(), e);
    // std opens with O_CLOEXEC: a child the app starts (a terminal it focuses, WebKit's
    // processes) must not inherit the lock and keep it after the app has gone.
    let file = crate::os_fs::private_options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(lock_err)?;
    if crate::os_fs::try_lock(&file, crate::os_fs::LockKind::Exclusive) {
        return Ok(Some(InstanceLock { _file: file }));
    }
    Ok(None)
}

/// Settles a launch: hands `request` over to the app answering on `socket`, or takes `lock`
/// and is the app; while another process holds the lock without answering yet (starting at the
/// same moment), asks again until it answers, for at most `starting_wait`.
pub fn claim(
    socket: &Path,
    lock: &Path,
    request: &str,
    starting_wait: Duration,
) -> Result<Launch, SecondLaunchError> {
    let given_up_at = Instant::now() + starting_wait;
    loop {
        if ask(socket, request, DEADLINE).is_ok() {
            return Ok(Launch::HandedOver);
        }
        if let Some(held) = try_lock(lock)? {
            return Ok(Launch::First(held));
        }
        if Instant::now() >= given_up_at {
            return Err(SecondLaunchError::NotAnswering {
                lock: lock.to_path_buf(),
                socket: socket.to_path_buf(),
                waited: starting_wait,
            });
        }
        std::thread::sleep(STARTING_POLL);
    }
}

/// What `main()` calls first, for this process's environment and arguments. `Ok(None)` when the
/// environment names no folders (the app's start reports that).
pub fn claim_for_this_launch() -> Result<Option<Launch>, SecondLaunchError> {
    let Ok(paths) = TrayPaths::from_env() else {
        return Ok(None);
    };
    claim(
        &socket_path(&paths),
        &lock_path(&paths),
        request_for(std::env::args_os().skip(1)),
        STARTING_WAIT,
    )
    .map(Some)
}

/// The running app's side: binds `socket` (0600, in a 0700 folder), replacing a file left by a
/// crash, but never one another app answers on (an app of an older version, which took no lock).
#[cfg(unix)]
pub fn listen(socket: &Path) -> Result<LocalListener, SecondLaunchError> {
    use std::os::unix::net::UnixStream;
    use tokio::net::UnixListener;
    let listen_err = |e| SecondLaunchError::Listen(socket.to_path_buf(), e);
    if let Some(dir) = socket.parent() {
        crate::paths::create_private_dir(dir)?;
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
    crate::os_fs::make_owner_only(socket, false).map_err(listen_err)?;
    Ok(listener)
}

/// The running app's side on Windows: the named pipe derived from `socket`
/// ([`crate::control::transport::pipe_name`]); a name already served is another app's.
#[cfg(windows)]
pub fn listen(socket: &Path) -> Result<LocalListener, SecondLaunchError> {
    let pipe = crate::control::transport::pipe_name(socket);
    match LocalListener::bind(&pipe) {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(SecondLaunchError::AlreadyServed(socket.to_path_buf()))
        }
        Err(e) => Err(SecondLaunchError::Listen(socket.to_path_buf(), e)),
    }
}

/// What the running app answers `request`, and whether it opens the window for it: `open`
/// opens; `background` (a login autostart) is only told the app is there; anything else is not
/// ours.
pub fn reply_to(request: &str) -> (&'static str, bool) {
    match request {
        REQUEST_OPEN => (REPLY_OK, true),
        REQUEST_BACKGROUND => (REPLY_OK, false),
        _ => (REPLY_UNKNOWN, false),
    }
}

/// The reply to a request that is not ours.
pub const REPLY_UNKNOWN: &str = "unknown";

/// Answers second launches until `token` is cancelled, calling `open` for each `open` request
/// (it must not block: the app's passes the work to the main thread), then removes the socket
/// file. One connection at a time, each bounded by [`DEADLINE`]: second
/// launches are rare, and a client that stalls costs at most that.
pub async fn serve(
    mut listener: LocalListener,
    socket: PathBuf,
    open: impl Fn() + Send + 'static,
    token: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = token.cancelled() => break,
            accepted = accept_local(&mut listener) => accepted,
        };
        let Ok(mut stream) = accepted else {
            continue;
        };
        let answered = tokio::time::timeout(DEADLINE, async {
            let request = read_line(&mut stream).await?;
            let (reply, opens) = reply_to(&request);
            if opens {
                open();
            }
            stream.write_all(format!("{reply}\n").as_bytes()).await?;
            stream.shutdown().await
        })
        .await;
        if !matches!(answered, Ok(Ok(()))) {
            tracing::debug!("a second launch did not complete its request");
        }
    }
    #[cfg(unix)]
    let _ = std::fs::remove_file(&socket);
    #[cfg(windows)]
    drop((listener, socket));
}

/// The first line (up to [`MAX_LINE`] bytes), without its newline.
async fn read_line(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> std::io::Result<String> {
    let mut buf = Vec::with_capacity(MAX_LINE);
    let mut byte = [0u8; 1];
    while buf.len() < MAX_LINE {
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

    use super::super::SOCKET_NAME;
    use std::io::{Read, Write};

    /// A real child process of the test (sleeping 30 s, its output nowhere); the test kills it
    /// and reaps it.
    fn sleeping_child() -> std::process::Child {
        crate::test_support::spawn_sleeper(30)
    }

    /// A raw client of the app's channel: the unix socket, or the pipe on Windows.
    #[cfg(unix)]
    fn raw_client(socket: &Path) -> std::os::unix::net::UnixStream {
        std::os::unix::net::UnixStream::connect(socket).expect("connect")
    }

    /// A raw client of the app's channel: the unix socket, or the pipe on Windows.
    #[cfg(windows)]
    fn raw_client(socket: &Path) -> crate::control::transport::PipeClient {
        use crate::control::transport::{pipe_name, PipeClient};
        PipeClient::connect(&pipe_name(socket), Duration::from_secs(5)).expect("connect")
    }

    /// The permission bits of `path` (unix only: Windows' folders are private by their ACL).
    #[cfg(unix)]
    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).expect("file").permissions().mode() & 0o777
    }

    #[test]
    fn only_open_opens_the_window_and_a_request_not_ours_is_told_so() {
        // A plain second launch, a login autostart while the app runs, and something else on
        // the socket (another program, a newer launcher's request).
        assert_eq!(reply_to(REQUEST_OPEN), (REPLY_OK, true));
        assert_eq!(reply_to(REQUEST_BACKGROUND), (REPLY_OK, false));
        assert_eq!(reply_to("quit"), (REPLY_UNKNOWN, false));
        assert_eq!(reply_to(""), (REPLY_UNKNOWN, false));
    }

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
            ask(&socket, REQUEST_OPEN, DEADLINE),
            Err(crate::app_launch::AskError::NoAnswer(..))
        ));
    }

    #[test]
    fn a_running_app_takes_the_open_request_and_the_second_launch_is_done() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("run").join(SOCKET_NAME);
        let (rt, opened, token, served) = serving(&socket);
        #[cfg(unix)]
        assert_eq!(mode_of(&socket), 0o600);
        ask(&socket, REQUEST_OPEN, DEADLINE).expect("handed over");
        ask(&socket, REQUEST_OPEN, DEADLINE).expect("handed over again");
        assert_eq!(opened.load(Ordering::SeqCst), 2);
        token.cancel();
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), served).await })
            .expect("stops when cancelled")
            .expect("task");
        #[cfg(unix)]
        assert!(!socket.exists(), "the socket file goes with the app");
        // And the channel with it: a launch now finds no app.
        assert!(ask(&socket, REQUEST_OPEN, DEADLINE).is_err());
    }

    #[test]
    #[cfg(unix)] // a socket file outlives its listener on unix; a pipe does not
    fn a_socket_left_by_a_crash_is_replaced_and_does_not_hold_a_launch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        // A listener that died without removing its file.
        drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
        assert!(socket.exists());
        let started = std::time::Instant::now();
        assert!(ask(&socket, REQUEST_OPEN, DEADLINE).is_err());
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
        assert!(
            matches!(second, Err(SecondLaunchError::AlreadyServed(_))),
            "{second:?}"
        );
        #[cfg(unix)]
        assert!(socket.exists(), "the first app's socket is still there");
    }

    #[test]
    #[cfg(unix)] // a listener that never accepts: a unix socket's backlog
    fn an_app_that_does_not_answer_is_given_up_on_within_the_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        // Bound and listening, but never accepting or answering (a wedged app).
        let _silent = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let started = std::time::Instant::now();
        let deadline = Duration::from_millis(200);
        assert!(matches!(
            ask(&socket, REQUEST_OPEN, deadline),
            Err(crate::app_launch::AskError::NoAnswer(..))
        ));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_request_that_is_not_open_is_refused_and_opens_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        let (rt, opened, token, served) = serving(&socket);
        let mut stream = raw_client(&socket);
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        stream.write_all(b"quit\n").expect("write");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).expect("read");
        assert_eq!(reply.trim(), "unknown");
        assert_eq!(opened.load(Ordering::SeqCst), 0);
        // Positive control: the same server opens on "open".
        ask(&socket, REQUEST_OPEN, DEADLINE).expect("handed over");
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
    /// Takes the lock at `path` once it is free, trying for up to 3 s. Another test thread's
    /// fork holds every open descriptor of this process (the lock's too) until that child
    /// execs, which frees it within milliseconds; a holder that keeps it (a child that
    /// inherited it and sleeps 30 s) keeps it for the whole wait.
    fn lock_once_free(path: &Path) -> Option<InstanceLock> {
        let given_up_at = Instant::now() + Duration::from_secs(3);
        loop {
            let taken = try_lock(path).expect("lock");
            if taken.is_some() || Instant::now() >= given_up_at {
                return taken;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn the_lock_is_held_once_until_its_holder_lets_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = dir.path().join("run").join(LOCK_NAME);
        let first = try_lock(&lock).expect("lock").expect("free at first");
        #[cfg(unix)]
        assert_eq!(mode_of(&lock), 0o600);
        assert!(
            try_lock(&lock).expect("lock").is_none(),
            "held by the first"
        );
        drop(first);
        assert!(lock_once_free(&lock).is_some(), "free once let go");
    }

    #[test]
    fn a_child_the_app_starts_does_not_keep_its_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = dir.path().join(LOCK_NAME);
        let held = try_lock(&lock).expect("lock").expect("free");
        let mut child = sleeping_child();
        drop(held);
        let taken = lock_once_free(&lock);
        let _ = child.kill();
        let _ = child.wait();
        assert!(taken.is_some(), "the child inherited the lock");
    }

    #[test]
    fn a_launch_at_the_same_moment_as_the_first_waits_for_it_and_hands_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        let lock = dir.path().join(LOCK_NAME);
        // The first launch: holds the lock, listens only 300 ms later (its start).
        let first = try_lock(&lock).expect("lock").expect("free");
        let starting = {
            let socket = socket.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                serving(&socket)
            })
        };
        let launch = claim(&socket, &lock, REQUEST_OPEN, Duration::from_secs(10)).expect("claim");
        let (rt, opened, token, served) = starting.join().expect("first app");
        assert!(matches!(launch, Launch::HandedOver), "{launch:?}");
        assert_eq!(
            opened.load(Ordering::SeqCst),
            1,
            "the first app opened its window"
        );
        token.cancel();
        let _ = rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), served).await });
        drop(first);
    }

    #[test]
    fn an_app_holding_the_lock_without_answering_is_reported_and_one_that_died_is_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join(SOCKET_NAME);
        let lock = dir.path().join(LOCK_NAME);
        let Launch::First(first) =
            claim(&socket, &lock, REQUEST_OPEN, Duration::ZERO).expect("no app yet")
        else {
            panic!("no app runs: this launch is the app");
        };
        let started = Instant::now();
        let wait = Duration::from_millis(300);
        let second = claim(&socket, &lock, REQUEST_OPEN, wait);
        assert!(
            matches!(second, Err(SecondLaunchError::NotAnswering { .. })),
            "{second:?}"
        );
        assert!(started.elapsed() >= wait, "it waited for the app to answer");
        // The holder is gone (a crash releases the lock with the process): the next launch is
        // the app.
        drop(first);
        assert!(matches!(
            claim(&socket, &lock, REQUEST_OPEN, wait),
            Ok(Launch::First(_))
        ));
    }
}
