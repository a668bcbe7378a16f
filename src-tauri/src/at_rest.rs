//! What the app gives back once no window is open, and how its allocator is set up for a day in
//! the tray.
//!
//! A window costs a webview, and destroying it ends the WebKit web process, but not all it
//! left behind (benches/at_rest.sh, before this module: 126 MB ten seconds after closing,
//! against 62 MB for an app that never opened it):
//! - **the heap**: the page's IPC, the GTK widgets and WebKit's own structures were freed, but
//!   glibc keeps freed memory in its arenas for reuse, and most of it sits below live blocks
//!   where the heap top cannot shrink. `malloc_trim(0)` returns every whole free page in every
//!   arena to the kernel;
//! - **WebKit's network process** (20-35 MB): WebKit starts one per web context and never ends
//!   it while the context lives, Tauri keeps the context for the app's lifetime on Linux (so a
//!   reopened window does not start a second one), and no API ends it. So the app ends it with
//!   SIGTERM, once no web process of its own is left (through a pidfd, after checking that
//!   it is still the app's child running WebKit's binary), and WebKit starts a new one when the
//!   next window loads its page. Not while WebKit automation is on (WebDriver tests): WebKit
//!   ends its automation session when the network process goes, which once read as "the next
//!   window never loads" (it did load; only the WebDriver session was gone).
//!
//! The trim runs once, [`SETTLE`] after the last window (main or popover) is gone, so the web
//! process's IPC buffers have been freed first; a window opened meanwhile cancels it.
//!
//! **Arenas.** glibc gives each thread that allocates its own arena (up to eight per core), and
//! an arena's freed memory is kept for that arena's next use: a day of a few allocations on
//! whichever thread the tokio runtime picks leaves memory in many arenas. Two arenas are plenty
//! for a program that mostly sleeps ([`limit_arenas`], called first thing in `main`).

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long after the last window closed the app gives memory back: time for the webview's
/// teardown (and the web process's exit) to free what it held.
pub const SETTLE: Duration = Duration::from_secs(2);

/// The most glibc malloc arenas the app uses (see the module comment).
pub const ARENA_MAX: i32 = 2;

/// Limits glibc's malloc arenas to [`ARENA_MAX`]. Call before any thread starts. Elsewhere (not
/// glibc) it does nothing.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator; M_ARENA_MAX takes any positive int.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENA_MAX);
    }
}

/// Whether the app turns GTK's OpenGL off (`GDK_GL=disable`), given the environment's
/// `WEBKIT_DISABLE_COMPOSITING_MODE` (after `main` set its default) and `GDK_GL`. GTK 3 opens
/// GLX when it opens the display, to pick GL-capable visuals, which maps Mesa's driver and, for
/// software GL (a VM, a remote display, Xvfb), libLLVM: 24 MB of the 64 MB the app held at rest
/// under Xvfb (benches/at_rest.sh, by mapping), for nothing, since with WebKit's compositing
/// off nothing in the app draws through GL. The user's own `GDK_GL`, or compositing turned on
/// (`WEBKIT_DISABLE_COMPOSITING_MODE=0`), leaves GL as it is.
pub fn gl_disabled_by_default(
    compositing_disabled: Option<&std::ffi::OsStr>,
    gdk_gl: Option<&std::ffi::OsStr>,
) -> bool {
    let compositing_off = compositing_disabled.is_some_and(|v| !v.is_empty() && v != "0");
    compositing_off && gdk_gl.is_none()
}

/// Returns free heap pages in every arena to the kernel. Elsewhere (not glibc) it does nothing.
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim walks the allocator's own lists under its own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs `release` once [`SETTLE`] (here `settle`) after each time the last window is gone, until
/// `token` is cancelled. A window that opens again before then cancels that release; the app
/// starting with no window releases nothing (nothing was held).
pub async fn release_when_closed(
    mut presence: watch::Receiver<bool>,
    settle: Duration,
    mut release: impl FnMut(),
    token: CancellationToken,
) {
    loop {
        // Wait for a window to exist, then for it to be gone.
        for want in [true, false] {
            tokio::select! {
                () = token.cancelled() => return,
                changed = presence.wait_for(|open| *open == want) => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
        let settled = tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(settle) => true,
            _ = presence.wait_for(|open| *open) => false,
        };
        if settled && !*presence.borrow() {
            release();
        }
    }
}

/// What the app does once no window is left: WebKit's network process is ended (not under
/// automation, see [`automation_allowed`]), then the heap is trimmed.
pub fn release_now() {
    #[cfg(target_os = "linux")]
    {
        if !automation_allowed(std::env::var_os("TAURI_WEBVIEW_AUTOMATION").as_deref()) {
            let ended = webkit_children::end_network_processes();
            tracing::debug!(ended, "network_process_ended_after_close");
        }
    }
    trim_heap();
    tracing::debug!("heap_trimmed_after_close");
}

/// Whether WebKit automation (WebDriver) is allowed, as Tauri reads `TAURI_WEBVIEW_AUTOMATION`.
/// WebKit ends its automation session when the network process goes, so a WebDriver driving
/// the app would lose its session at the first close: under automation the network process is
/// left alone.
pub fn automation_allowed(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| v == "true")
}

/// The WebKit processes the app started, found by what they are (a child of this process running
/// WebKit's network or web process binary), never by name alone.
#[cfg(target_os = "linux")]
pub mod webkit_children {
    use std::path::Path;

    /// The binary of WebKit's network process (in WebKit's libexec folder).
    pub const NETWORK_PROCESS: &str = "WebKitNetworkProcess";
    /// The binary of WebKit's web process.
    pub const WEB_PROCESS: &str = "WebKitWebProcess";

    /// Live (not zombie) children of `parent` whose binary is called `binary`.
    pub fn children_running(parent: u32, binary: &str) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| {
                let ours = agent_tray::process::read_stat(pid)
                    .is_some_and(|stat| stat.ppid == parent && !stat.is_zombie());
                ours && std::fs::read_link(Path::new("/proc").join(pid.to_string()).join("exe"))
                    .is_ok_and(|exe| exe.file_name().is_some_and(|n| n == binary))
            })
            .collect()
    }

    /// Ends this process's WebKit network processes, unless a web process of ours still runs
    /// (a window is still being torn down, or exists). Returns how many it signalled.
    pub fn end_network_processes() -> usize {
        let me = std::process::id();
        if !children_running(me, WEB_PROCESS).is_empty() {
            return 0;
        }
        children_running(me, NETWORK_PROCESS)
            .into_iter()
            .filter(|&pid| signal_child(me, pid, libc::SIGTERM))
            .count()
    }

    /// Sends `signal` to `pid` through a pidfd, after checking (with the pidfd held, so the pid
    /// cannot be reused meanwhile) that it is still a child of `parent`.
    fn signal_child(parent: u32, pid: u32, signal: libc::c_int) -> bool {
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        let Ok(fd) = libc::c_int::try_from(fd) else {
            return false;
        };
        if fd < 0 {
            return false;
        }
        let still_ours = agent_tray::process::read_stat(pid).is_some_and(|s| s.ppid == parent);
        // SAFETY: fd is the pidfd opened above; a null siginfo is allowed; close takes it back.
        let sent = still_ours
            && unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd,
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            } == 0;
        // SAFETY: fd is ours and closed once.
        unsafe { libc::close(fd) };
        sent
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn gtk_gl_is_off_only_while_compositing_is_and_the_user_did_not_choose() {
        use std::ffi::OsStr;
        let on = Some(OsStr::new("1"));
        assert!(gl_disabled_by_default(on, None), "the app's default");
        assert!(!gl_disabled_by_default(on, Some(OsStr::new("always"))));
        assert!(!gl_disabled_by_default(Some(OsStr::new("0")), None));
        assert!(!gl_disabled_by_default(None, None));
    }

    #[test]
    fn the_network_process_is_left_alone_only_under_automation() {
        use std::ffi::OsStr;
        assert!(automation_allowed(Some(OsStr::new("true"))));
        assert!(!automation_allowed(Some(OsStr::new("1"))));
        assert!(!automation_allowed(None));
    }

    /// The finder goes by parent and binary: a real child of this test runs `sleep`; it is
    /// found as `sleep` (the positive control) and never as a WebKit process.
    #[cfg(target_os = "linux")]
    #[test]
    fn children_are_found_by_parent_and_binary() {
        use webkit_children::{children_running, NETWORK_PROCESS};
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let me = std::process::id();
        let found = children_running(me, "sleep");
        let not_webkit = children_running(me, NETWORK_PROCESS);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.contains(&child.id()), "{found:?}");
        assert!(!not_webkit.contains(&child.id()));
        assert!(
            !children_running(me, "sleep").contains(&child.id()),
            "gone once reaped"
        );
    }

    async fn settle_steps() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn memory_is_released_once_after_the_last_window_closes_and_not_while_one_is_open() {
        let (presence, rx) = watch::channel(false);
        let released = Arc::new(AtomicUsize::new(0));
        let count = released.clone();
        let token = CancellationToken::new();
        let task = tokio::spawn(release_when_closed(
            rx,
            SETTLE,
            move || {
                count.fetch_add(1, Ordering::SeqCst);
            },
            token.clone(),
        ));
        settle_steps().await;
        tokio::time::sleep(SETTLE * 3).await;
        assert_eq!(
            released.load(Ordering::SeqCst),
            0,
            "never opened: nothing held"
        );

        presence.send_replace(true);
        settle_steps().await;
        tokio::time::sleep(SETTLE * 3).await;
        assert_eq!(released.load(Ordering::SeqCst), 0, "open: nothing released");

        presence.send_replace(false);
        settle_steps().await;
        tokio::time::sleep(SETTLE / 2).await;
        assert_eq!(
            released.load(Ordering::SeqCst),
            0,
            "the web process gets its time"
        );
        tokio::time::sleep(SETTLE).await;
        assert_eq!(released.load(Ordering::SeqCst), 1, "released after closing");

        // Reopened before the settle is over: nothing released while it is open.
        presence.send_replace(true);
        settle_steps().await;
        presence.send_replace(false);
        settle_steps().await;
        tokio::time::sleep(SETTLE / 2).await;
        presence.send_replace(true);
        settle_steps().await;
        tokio::time::sleep(SETTLE * 3).await;
        assert_eq!(released.load(Ordering::SeqCst), 1, "reopened in time");
        presence.send_replace(false);
        settle_steps().await;
        tokio::time::sleep(SETTLE * 2).await;
        assert_eq!(released.load(Ordering::SeqCst), 2, "closed again");

        token.cancel();
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .unwrap()
            .unwrap();
    }
}
