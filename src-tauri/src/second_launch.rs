//! One app per environment: the Tauri side of the second-launch handover.
//!
//! `main()` settles, before Tauri, GTK or the display do any work, whether this launch is the
//! app or hands over to the running one ([`claim_for_this_launch`]); the running app answers
//! later launches on `desktop.sock` ([`spawn_listener`]). The lock, the socket and the protocol
//! are the core's ([`agent_tray::app_launch::instance`], where they are tested without Tauri);
//! what is left here is opening the window, on the main thread, for each `open`.

use agent_tray::paths::TrayPaths;
use tauri::{AppHandle, Runtime};
use tokio_util::sync::CancellationToken;

pub use agent_tray::app_launch::instance::{
    claim, claim_for_this_launch, listen, lock_path, serve, try_lock, InstanceLock, Launch,
    SecondLaunchError, LOCK_NAME, STARTING_WAIT,
};
pub use agent_tray::app_launch::{
    ask, request_for, socket_path, DEADLINE, MAX_LINE, REPLY_OK, REQUEST_BACKGROUND, REQUEST_OPEN,
    SOCKET_NAME,
};

/// Listens for second launches: each `open` opens the window, on the main thread. Where the
/// socket cannot be bound, second launches wait for an answer and report that none came.
pub fn spawn_listener<R: Runtime>(app: &AppHandle<R>, paths: &TrayPaths, token: CancellationToken) {
    let socket = socket_path(paths);
    let listener = match tauri::async_runtime::block_on(async { listen(&socket) }) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(%error, "second launches cannot be handed over");
            return;
        }
    };
    let app = app.clone();
    let open = move || {
        let handle = app.clone();
        if let Err(error) = app.run_on_main_thread(move || crate::window::show(&handle)) {
            tracing::warn!(%error, "cannot open the window for a second launch");
        }
    };
    tauri::async_runtime::spawn(serve(listener, socket, open, token));
}
