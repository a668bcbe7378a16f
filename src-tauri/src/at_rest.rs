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
//! - **file pages only this process maps** ([`page_out_file_pages`]): the parts of the binary
//!   and of WebKit, JavaScriptCore, GTK and their libraries that starting up or drawing the window
//!   touched. Mapped by no other process, PSS charges them all to the app (some 50 MB of its 78
//!   at rest under Xvfb, where no other GTK program runs), though a tray at rest runs almost none
//!   of that code. `madvise(MADV_PAGEOUT)` (Linux ≥ 5.4) asks the kernel to reclaim them now, as
//!   it would under memory pressure: it frees only pages no other process maps, never loses data
//!   (they are clean file pages, read again from the file if the app needs them), and leaves
//!   alone every mapping with memory of the app's own in it (written data, relocations), which
//!   the kernel would otherwise move to swap.
//!
//! The release runs once, [`SETTLE`] after the last window (main or popover) is gone, so the web
//! process's IPC buffers have been freed first; a window opened meanwhile cancels it. An app that
//! starts with no window (`--background`, launch at login) runs it once too, [`START_SETTLE`]
//! after starting, when the tray, the engine and the first scan are done with what start-up needs.
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

/// How long after starting with no window the app gives memory back: start-up (the tray, the
/// engine, the first scan of the agents' files) is over well within it.
pub const START_SETTLE: Duration = Duration::from_secs(10);

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

/// Runs `release` once `settle` after each time the last window is gone, and once
/// `start_settle` after starting when no window is open then, until `token` is cancelled. A
/// window that opens before then cancels that release.
pub async fn release_when_closed(
    mut presence: watch::Receiver<bool>,
    start_settle: Duration,
    settle: Duration,
    mut release: impl FnMut(),
    token: CancellationToken,
) {
    if !*presence.borrow() {
        match stays_closed(&mut presence, start_settle, &token).await {
            None => return,
            Some(true) => release(),
            Some(false) => {}
        }
    }
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
        match stays_closed(&mut presence, settle, &token).await {
            None => return,
            Some(true) => release(),
            Some(false) => {}
        }
    }
}

/// Whether no window opens for `settle`; `None` once `token` is cancelled.
async fn stays_closed(
    presence: &mut watch::Receiver<bool>,
    settle: Duration,
    token: &CancellationToken,
) -> Option<bool> {
    let settled = tokio::select! {
        () = token.cancelled() => return None,
        () = tokio::time::sleep(settle) => true,
        _ = presence.wait_for(|open| *open) => false,
    };
    Some(settled && !*presence.borrow())
}

/// What the app does once no window is left: WebKit's network process is ended (not under
/// automation, see [`automation_allowed`]), then the heap is trimmed and the file pages only the
/// app maps are paged out. Blocking (it waits up to a second for the network process to exit):
/// run it on a blocking thread.
pub fn release_now() {
    #[cfg(target_os = "linux")]
    {
        if !automation_allowed(std::env::var_os("TAURI_WEBVIEW_AUTOMATION").as_deref()) {
            let ended = webkit_children::end_network_processes();
            tracing::debug!(ended, "network_process_ended_after_close");
        }
    }
    trim_heap();
    #[cfg(target_os = "linux")]
    {
        let advised = page_out_file_pages();
        tracing::debug!(
            advised_bytes = advised,
            "heap_trimmed_and_file_pages_paged_out"
        );
    }
}

/// Gives back the clean file pages of the app's read-only mappings (see the module comment), in
/// two steps, and returns how many bytes of mappings it advised:
/// - `MADV_PAGEOUT`: the kernel reclaims the pages no other process maps (they leave the page
///   cache: the memory is free for the system);
/// - then `MADV_DONTNEED` on the mappings that were already there, unchanged, before that step:
///   their pages other processes share (the X server's Mesa and LLVM, GLib) leave the app's
///   resident set and stay in the page cache, so reading them again is a page fault, not I/O.
///
/// Only mappings seen unchanged in both readings of smaps, 100 ms apart, get `MADV_DONTNEED`: on
/// a private mapping it would throw away written pages, and the one way a read-only mapping
/// with no copy-on-write page gets written is a library being loaded at that moment (the loader
/// maps the file read-only first, then writes relocations into what it maps over it), which
/// takes microseconds, not 100 ms. Blocking (the pause): run it on a blocking thread. Nothing on
/// a kernel without `MADV_PAGEOUT` (Linux < 5.4).
#[cfg(target_os = "linux")]
pub fn page_out_file_pages() -> u64 {
    let read = || std::fs::read_to_string("/proc/self/smaps").ok();
    let Some(smaps) = read() else {
        return 0;
    };
    let first = clean_file_mappings(&smaps);
    let mut advised = 0;
    for range in &first {
        match advise(range, libc::MADV_PAGEOUT) {
            Ok(()) => advised += (range.end - range.start) as u64,
            // An old kernel: no such advice, and the second step is not worth it alone.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return 0,
            // Unmapped meanwhile: the next one.
            Err(_) => {}
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let Some(smaps) = read() else {
        return advised;
    };
    for range in clean_file_mappings(&smaps) {
        if first.contains(&range) {
            let _ = advise(&range, libc::MADV_DONTNEED);
        }
    }
    advised
}

#[cfg(target_os = "linux")]
fn advise(range: &std::ops::Range<usize>, advice: libc::c_int) -> std::io::Result<()> {
    // SAFETY: `range` is a whole mapping of this process, read from its own smaps and checked
    // by the caller: read-only, from a regular file, with no copy-on-write page, so its pages
    // hold nothing the file does not; MADV_PAGEOUT and MADV_DONTNEED only drop them, and the next
    // access reads them back.
    let rc = unsafe {
        libc::madvise(
            range.start as *mut libc::c_void,
            range.end - range.start,
            advice,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The address ranges, in `/proc/self/smaps` text, of the mappings whose resident pages are all
/// clean file pages: mapped from a regular file (not a device, a memfd or a deleted file), not
/// writable, with no anonymous (copy-on-write) page and something resident.
pub fn clean_file_mappings(smaps: &str) -> Vec<std::ops::Range<usize>> {
    struct Mapping {
        range: std::ops::Range<usize>,
        file: bool,
        rss_kb: u64,
        anonymous_kb: u64,
    }
    let mut mappings: Vec<Mapping> = Vec::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((start, end)) = first.split_once('-') {
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            let perms = fields.next().unwrap_or("");
            let inode = fields.nth(2).unwrap_or("0");
            let path: Vec<&str> = fields.collect();
            let path = path.join(" ");
            let file = path.starts_with('/')
                && !path.starts_with("/dev/")
                && !path.starts_with("/memfd:")
                && !path.ends_with("(deleted)")
                && inode != "0"
                && !perms.contains('w');
            mappings.push(Mapping {
                range: start..end,
                file,
                rss_kb: 0,
                anonymous_kb: 0,
            });
        } else if let Some(mapping) = mappings.last_mut() {
            let kb = || fields.clone().next().and_then(|v| v.parse::<u64>().ok());
            match first {
                "Rss:" => mapping.rss_kb = kb().unwrap_or(0),
                // Unparsable counts as some: such a mapping is left alone.
                "Anonymous:" => mapping.anonymous_kb = kb().unwrap_or(1),
                _ => {}
            }
        }
    }
    mappings
        .into_iter()
        .filter(|m| m.file && m.rss_kb > 0 && m.anonymous_kb == 0)
        .map(|m| m.range)
        .collect()
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
            .filter(|&pid| signal_child(me, pid, libc::SIGTERM, EXIT_WAIT))
            .count()
    }

    /// How long [`end_network_processes`] waits for the process to exit: until it has, its
    /// pages of WebKit and GLib are mapped twice and cannot be paged out (see the module).
    const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

    /// Sends `signal` to `pid` through a pidfd, after checking (with the pidfd held, so the pid
    /// cannot be reused meanwhile) that it is still a child of `parent`; then waits up to
    /// `exit_wait` for it to exit.
    fn signal_child(
        parent: u32,
        pid: u32,
        signal: libc::c_int,
        exit_wait: std::time::Duration,
    ) -> bool {
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
        if sent && !exit_wait.is_zero() {
            let mut exited = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let timeout = libc::c_int::try_from(exit_wait.as_millis()).unwrap_or(libc::c_int::MAX);
            // SAFETY: one pollfd for the pidfd above, which becomes readable when the process
            // exits; bounded by the timeout.
            unsafe { libc::poll(&mut exited, 1, timeout) };
        }
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
        let mut child = crate::test_support::sleeping_child();
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

    #[tokio::test(start_paused = true)]
    async fn an_app_started_with_its_window_open_releases_nothing_until_it_closes() {
        let (presence, released, token, task) = counting_releases(true);
        settle_steps().await;
        tokio::time::sleep(START_SETTLE * 2).await;
        assert_eq!(released.load(Ordering::SeqCst), 0);
        presence.send_replace(false);
        settle_steps().await;
        tokio::time::sleep(SETTLE * 2).await;
        assert_eq!(released.load(Ordering::SeqCst), 1);
        token.cancel();
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .unwrap()
            .unwrap();
    }

    const SMAPS: &str = "\
55d0c0a00000-55d0c0b00000 r--p 00000000 fd:01 1001 /usr/bin/agent-tray-desktop
Rss:                 512 kB
Anonymous:             0 kB
55d0c0b00000-55d0c1b00000 r-xp 00100000 fd:01 1001 /usr/bin/agent-tray-desktop
Rss:                8000 kB
Anonymous:             0 kB
55d0c1b00000-55d0c1c00000 r--p 01100000 fd:01 1001 /usr/bin/agent-tray-desktop
Rss:                 300 kB
Anonymous:           300 kB
55d0c1c00000-55d0c1d00000 rw-p 01200000 fd:01 1001 /usr/bin/agent-tray-desktop
Rss:                  40 kB
Anonymous:            12 kB
55d0c2000000-55d0c3000000 rw-p 00000000 00:00 0 [heap]
Rss:                9000 kB
Anonymous:          9000 kB
7f0000000000-7f0000100000 r-xp 00000000 fd:01 2002 /usr/lib/libwebkit2gtk-4.1.so.0
Rss:                   0 kB
Anonymous:             0 kB
7f0000100000-7f0000200000 r--s 00000000 00:05 3003 /dev/dri/renderD128
Rss:                  64 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 00:01 4004 /memfd:wayland-cursor (deleted)
Rss:                  64 kB
Anonymous:             0 kB
7f0000300000-7f0000400000 r--p 00000000 fd:01 5005 /tmp/gone (deleted)
Rss:                  64 kB
Anonymous:             0 kB
7f0000400000-7f0000500000 r--s 00000000 fd:01 6006 /usr/share/icons/hicolor/icon-theme.cache
Rss:                  16 kB
Anonymous:             0 kB
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]
Rss:                   4 kB
Anonymous:             0 kB
";

    #[test]
    fn only_read_only_file_mappings_with_nothing_of_the_apps_own_are_paged_out() {
        assert_eq!(
            clean_file_mappings(SMAPS),
            vec![
                0x55d0c0a00000..0x55d0c0b00000,
                0x55d0c0b00000..0x55d0c1b00000,
                0x7f0000400000..0x7f0000500000,
            ],
            "the binary's read-only pages and a shared cache, not: relocated (copy-on-write) \
             pages, writable data, the heap, nothing resident, a device, a memfd, a deleted file, \
             the vdso"
        );
    }

    /// Resident kB of the mapping that starts at `start`, from /proc/self/smaps.
    #[cfg(target_os = "linux")]
    fn resident_kb(start: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let header = format!("{start:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&header));
        lines
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    }

    /// A file of `len` known bytes, mapped private and read-only, every page touched: its folder
    /// (kept while the mapping is used), its content and the mapping's start.
    ///
    /// Beside the test binary, on the disk the build is on: /tmp may be a tmpfs, whose pages
    /// have no file to be read back from and stay resident without swap.
    #[cfg(target_os = "linux")]
    fn mapped_file(len: usize) -> (tempfile::TempDir, Vec<u8>, *mut libc::c_void) {
        use std::os::fd::AsRawFd;
        let exe = std::env::current_exe().unwrap();
        let dir = tempfile::tempdir_in(exe.parent().unwrap()).unwrap();
        let path = dir.path().join("pages");
        let content: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a private read-only mapping of a file the caller's test owns and unmaps.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: `base` maps `len` readable bytes.
        let view = unsafe { std::slice::from_raw_parts(base as *const u8, len) };
        assert_eq!(view, &content[..], "touched: every page resident");
        (dir, content, base)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_mapped_only_here_leaves_the_resident_set_and_reads_back_the_same() {
        let len = 4 << 20;
        let (_dir, content, base) = mapped_file(len);
        // SAFETY: `base` maps `len` readable bytes until the munmap below.
        let mapped = unsafe { std::slice::from_raw_parts(base as *const u8, len) };
        let before = resident_kb(base as usize);
        assert!(before >= 4000, "resident before: {before} kB");
        assert!(page_out_file_pages() >= len as u64);
        let after = resident_kb(base as usize);
        assert_eq!(mapped, &content[..], "read back the same");
        // SAFETY: unmapping what this test mapped; `mapped` is not used after.
        unsafe { libc::munmap(base, len) };
        assert!(
            after < before / 4,
            "resident: {before} kB before, {after} kB after"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_another_process_maps_too_leaves_the_resident_set_though_the_kernel_keeps_it() {
        // A forked child maps the same pages, as the X server maps the Mesa and LLVM the window
        // loaded: MADV_PAGEOUT leaves pages another process maps; the second step takes them
        // out of this process all the same.
        let len = 2 << 20;
        let (_dir, content, base) = mapped_file(len);
        // SAFETY: `base` maps `len` readable bytes until the munmap below.
        let view = unsafe { std::slice::from_raw_parts(base as *const u8, len) };
        // SAFETY: the child only waits for its SIGKILL (pause is async-signal-safe).
        let child = unsafe { libc::fork() };
        if child == 0 {
            loop {
                // SAFETY: pause has no preconditions.
                unsafe { libc::pause() };
            }
        }
        assert!(child > 0, "fork");
        let before = resident_kb(base as usize);
        page_out_file_pages();
        let after = resident_kb(base as usize);
        assert_eq!(view, &content[..], "read back the same");
        // SAFETY: SIGKILL to the child forked above, then reaping it; unmapping what this test
        // mapped, `view` not used after.
        unsafe {
            libc::kill(child, libc::SIGKILL);
            libc::waitpid(child, std::ptr::null_mut(), 0);
            libc::munmap(base, len);
        }
        assert!(
            before >= 2000 && after < before / 4,
            "resident: {before} kB before, {after} kB after"
        );
    }

    /// `release_when_closed` with the real settle times, a window open at start or not, counting
    /// its releases: the presence to drive, the count, the token that stops it and its task.
    fn counting_releases(
        open_at_start: bool,
    ) -> (
        watch::Sender<bool>,
        Arc<AtomicUsize>,
        CancellationToken,
        tokio::task::JoinHandle<()>,
    ) {
        let (presence, rx) = watch::channel(open_at_start);
        let released = Arc::new(AtomicUsize::new(0));
        let count = released.clone();
        let token = CancellationToken::new();
        let task = tokio::spawn(release_when_closed(
            rx,
            START_SETTLE,
            SETTLE,
            move || {
                count.fetch_add(1, Ordering::SeqCst);
            },
            token.clone(),
        ));
        (presence, released, token, task)
    }

    async fn settle_steps() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn memory_is_released_once_after_the_last_window_closes_and_not_while_one_is_open() {
        let (presence, released, token, task) = counting_releases(false);
        settle_steps().await;
        tokio::time::sleep(START_SETTLE - Duration::from_secs(1)).await;
        assert_eq!(
            released.load(Ordering::SeqCst),
            0,
            "started with no window: not before start-up is over"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            released.load(Ordering::SeqCst),
            1,
            "started with no window: released once start-up is over"
        );
        tokio::time::sleep(START_SETTLE * 3).await;
        assert_eq!(released.load(Ordering::SeqCst), 1, "and only once");
        released.store(0, Ordering::SeqCst);

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
