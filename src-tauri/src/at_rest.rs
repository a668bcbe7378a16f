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
//! - **WebKit's network process** (~25-30 MB) is not ended here. WebKit starts one per web
//!   context and never ends it while the context lives, Tauri keeps the context for the app's
//!   lifetime on Linux (so a reopened window does not start a second one), and no API ends it.
//!   Ending it by signal was tried: the next window then never finished loading its page
//!   (benches/at_rest.sh, leg 5), so it stays until WebKit or Tauri can end it.
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

/// What the app does once no window is left: the heap is trimmed.
pub fn release_now() {
    trim_heap();
    tracing::debug!("heap_trimmed_after_close");
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
