//! The app's allocator at rest (see `src/at_rest.rs`): few malloc arenas, and freed heap given
//! back to the kernel by the trim that follows a window's close. One test, in a process of its
//! own: arenas are per process and cannot be unmade.
#![cfg(all(target_os = "linux", target_env = "gnu"))]
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Barrier};

use agent_tray_desktop::at_rest::{limit_arenas, trim_heap, ARENA_MAX};

/// How many arenas glibc has made: one `<heap nr=...>` per arena in `malloc_info`'s report.
fn arenas() -> usize {
    let mut buf: *mut libc::c_char = std::ptr::null_mut();
    let mut len: libc::size_t = 0;
    // SAFETY: open_memstream writes the buffer's address and length at fclose; malloc_info
    // writes into the stream; the buffer is read, then freed, after fclose.
    unsafe {
        let stream = libc::open_memstream(&mut buf, &mut len);
        assert!(!stream.is_null());
        assert_eq!(libc::malloc_info(0, stream), 0);
        libc::fclose(stream);
        let text = std::slice::from_raw_parts(buf.cast::<u8>(), len);
        let count = String::from_utf8_lossy(text).matches("<heap nr=").count();
        libc::free(buf.cast());
        count
    }
}

/// This process's resident set, in MB.
fn rss_mb() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split(' ').nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no memory effects.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
    pages * page / (1024 * 1024)
}

#[test]
fn the_app_uses_few_malloc_arenas_and_the_trim_gives_freed_heap_back() {
    limit_arenas();
    // Eight threads allocating at once: glibc gives each new thread an arena of its own, up to
    // eight per core, and keeps what they free in it.
    let start = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                let blocks: Vec<Vec<u8>> = (0..1000).map(|_| vec![1u8; 512]).collect();
                start.wait();
                blocks.len()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 1000);
    }
    let made = arenas();
    assert!(made >= 1, "malloc_info lists the arenas");
    assert!(
        made <= usize::try_from(ARENA_MAX).unwrap(),
        "{made} arenas for 10 threads"
    );

    // 64 MB in 4 KB blocks, then every block freed but one in 64: the freed pages lie below
    // live blocks, where the heap's top cannot shrink, as a closed window's leave it.
    let before = rss_mb();
    let blocks: Vec<Vec<u8>> = (0..16_384).map(|_| vec![1u8; 4000]).collect();
    let allocated = rss_mb();
    assert!(
        allocated >= before + 48,
        "the blocks are resident: {before} → {allocated} MB"
    );
    let kept: Vec<Vec<u8>> = blocks
        .into_iter()
        .enumerate()
        .filter_map(|(i, b)| (i % 64 == 0).then_some(b))
        .collect();
    let freed = rss_mb();
    trim_heap();
    let trimmed = rss_mb();
    assert!(
        trimmed + 32 <= freed,
        "the trim gave back {} MB of the {} MB freed",
        freed.saturating_sub(trimmed),
        allocated.saturating_sub(before)
    );
    assert_eq!(kept.len(), 256);
}
