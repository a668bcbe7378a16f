//! How the file feeds watch: file-system events as the fast path, a slow rescan as the safety net.
//!
//! - **Events** come from the `notify` crate (inotify, FSEvents). Its callback runs on notify's own
//!   thread and only forwards *paths* into a **bounded** channel; a task drains the channel after
//!   a short debounce (a burst of writes to one file becomes one read) and hands the set of paths
//!   to the feed on a blocking thread, where the files are read. Decoding happens after the channel,
//!   from the file itself, on purpose: a dropped path costs nothing but latency, because the next
//!   rescan finds the file again and its reader goes on from its offset; a decoded state change
//!   dropped on a full channel would be lost for good.
//! - **The rescan** (every [`FeedTiming::rescan`]) re-lists the folders and compares sizes and
//!   mtimes, for whatever events were missed (a full channel, an overflowed inotify queue, a
//!   network file system, a watch that could not be added).
//! - **The tick** (every [`FeedTiming::tick`]) is for what no file-system event reports: a lock
//!   released by a dead process, a process gone while its file stays behind. It runs only while
//!   the feed has such a thing to check ([`Feed::wants_tick`]): at rest, with no agent file
//!   followed, nothing wakes a feed but a file event and the rescan.
//! - **Folders that do not exist yet** (an agent installed after the tray) are watched through
//!   their nearest existing ancestor, non-recursively; when something appears there, the watches
//!   are re-synced and the new folder scanned. The rescan re-syncs too, so even a missed event only
//!   delays discovery by one rescan.
//! - **Watch depth is chosen per folder**: inotify costs one watch per directory and users have a
//!   limit (8192 on older kernels). `~/.claude/projects` holds a folder per project and, inside,
//!   a folder per session with subagent transcripts the feeds ignore, so it is watched two levels
//!   deep only ([`WatchDepth::FlatAndChildren`]), never recursively.
//!
//! Access events are filtered out in the callback: notify reports `open`s, and our own reads
//! would otherwise wake us up to read again.
//!
//! Nothing here knows what a session is: a [`Feed`] does.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{apply_outputs, FeedOutput, FeedSink, FeedStats};

/// The timings of one feed. The defaults suit a desktop; tests shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedTiming {
    /// How long to gather events after the first one before reading.
    pub debounce: Duration,
    /// The full rescan: the safety net for missed events.
    pub rescan: Duration,
    /// Liveness checks no file event reports (locks, processes).
    pub tick: Duration,
    /// Paths buffered between the watcher thread and the feed.
    pub channel_capacity: usize,
}

impl Default for FeedTiming {
    fn default() -> Self {
        FeedTiming {
            debounce: Duration::from_millis(100),
            rescan: Duration::from_secs(20),
            tick: Duration::from_secs(5),
            channel_capacity: 4096,
        }
    }
}

/// How deep a folder is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchDepth {
    /// The folder's own entries.
    Flat,
    /// The folder's entries and each sub-folder's entries (`projects/<dir>/<id>.jsonl`).
    FlatAndChildren,
    /// The whole tree (`sessions/YYYY/MM/DD/…`).
    Recursive,
}

/// A folder a feed wants watched.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WatchRoot {
    pub path: PathBuf,
    pub depth: WatchDepth,
}

impl WatchRoot {
    pub fn new(path: PathBuf, depth: WatchDepth) -> Self {
        WatchRoot { path, depth }
    }
}

/// A source of observations from files. The runner calls it from one blocking thread at a time.
pub trait Feed: Send + 'static {
    fn name(&self) -> &'static str;
    fn stats(&self) -> Arc<FeedStats>;
    /// The folders to watch (they may not exist yet).
    fn watch_roots(&self) -> Vec<WatchRoot>;
    /// Some paths changed (files or folders, possibly removed). Read what they say.
    fn on_paths(&mut self, paths: &HashSet<PathBuf>, now: SystemTime) -> Vec<FeedOutput>;
    /// Look at everything again.
    fn rescan(&mut self, now: SystemTime) -> Vec<FeedOutput>;
    /// Check what no file event reports.
    fn tick(&mut self, _now: SystemTime) -> Vec<FeedOutput> {
        Vec::new()
    }
    /// Whether [`Feed::tick`] has anything to check now (a process the feed vouches for, a lock
    /// it follows). Asked after every piece of work; while it is false the runner does not wake
    /// for ticks at all. A feed that overrides `tick` and follows nothing says false.
    fn wants_tick(&self) -> bool {
        true
    }
}

/// The watches held for one feed: its roots that exist, and ancestors standing in for the rest.
struct Watches {
    watcher: Option<notify::RecommendedWatcher>,
    /// Path → mode, for every watch added.
    active: HashMap<PathBuf, RecursiveMode>,
    feed: &'static str,
}

impl Watches {
    fn new(
        feed: &'static str,
        tx: mpsc::Sender<PathBuf>,
        overflow: Arc<AtomicBool>,
        stats: Arc<FeedStats>,
    ) -> Self {
        let handler = move |res: notify::Result<notify::Event>| {
            let event = match res {
                Ok(event) => event,
                Err(error) => {
                    // An error (an inotify queue overflow among them) may mean events were lost.
                    tracing::debug!(feed, %error, "file_watch_error");
                    overflow.store(true, Ordering::Relaxed);
                    return;
                }
            };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            if event.need_rescan() {
                overflow.store(true, Ordering::Relaxed);
            }
            for path in event.paths {
                match tx.try_send(path) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        // Dropped: a path, never a decoded change. The file is still there and
                        // its reader keeps its offset, so the rescan this flag asks for finds it
                        // again and reads exactly what this event would have read.
                        FeedStats::add(&stats.dropped_paths, 1);
                        overflow.store(true, Ordering::Relaxed);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => return,
                }
            }
        };
        let watcher = match notify::recommended_watcher(handler) {
            Ok(w) => Some(w),
            Err(error) => {
                // Recoverable: the rescan still finds everything, only later.
                tracing::warn!(feed, %error, "file_watcher_unavailable_using_rescan_only");
                None
            }
        };
        Watches {
            watcher,
            active: HashMap::new(),
            feed,
        }
    }

    /// Makes the watches match the roots as they exist now. Returns true when a root (or a
    /// sub-folder of one) gained a watch, so the caller scans what may already be inside.
    fn sync(&mut self, roots: &[WatchRoot]) -> bool {
        let Some(watcher) = self.watcher.as_mut() else {
            return false;
        };
        let mut wanted: HashMap<PathBuf, RecursiveMode> = HashMap::new();
        let mut scan_needed = false;
        for root in roots {
            if root.path.is_dir() {
                let mode = match root.depth {
                    WatchDepth::Recursive => RecursiveMode::Recursive,
                    _ => RecursiveMode::NonRecursive,
                };
                wanted.insert(root.path.clone(), mode);
                if root.depth == WatchDepth::FlatAndChildren {
                    if let Ok(entries) = std::fs::read_dir(&root.path) {
                        for entry in entries.flatten() {
                            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                                wanted.insert(entry.path(), RecursiveMode::NonRecursive);
                            }
                        }
                    }
                }
            } else if let Some(ancestor) = nearest_existing_ancestor(&root.path) {
                wanted
                    .entry(ancestor)
                    .or_insert(RecursiveMode::NonRecursive);
            }
        }
        let stale: Vec<PathBuf> = self
            .active
            .iter()
            .filter(|(p, m)| wanted.get(*p) != Some(*m) || !p.exists())
            .map(|(p, _)| p.clone())
            .collect();
        for path in stale {
            // The kernel drops the watch of a deleted folder itself; an error here is expected.
            let _ = watcher.unwatch(&path);
            self.active.remove(&path);
        }
        for (path, mode) in wanted {
            if self.active.contains_key(&path) {
                continue;
            }
            match watcher.watch(&path, mode) {
                Ok(()) => {
                    let is_root_or_child = roots.iter().any(|r| path.starts_with(&r.path));
                    scan_needed |= is_root_or_child;
                    self.active.insert(path, mode);
                }
                Err(error) => {
                    tracing::debug!(feed = self.feed, path = %path.display(), %error, "file_watch_not_added");
                }
            }
        }
        scan_needed
    }
}

/// The closest folder above `path` that exists (`path` itself excluded).
fn nearest_existing_ancestor(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .find(|p| p.is_dir())
        .map(Path::to_path_buf)
}

/// True when a batch of paths may change which watches are needed: a folder appeared, or
/// something happened outside every root (in an ancestor standing in for a missing root).
fn batch_touches_folders(paths: &HashSet<PathBuf>, roots: &[WatchRoot]) -> bool {
    paths.iter().any(|p| {
        let inside = roots.iter().any(|r| p.starts_with(&r.path) && p != &r.path);
        !inside
            || (p.is_dir()
                && roots
                    .iter()
                    .any(|r| r.depth == WatchDepth::FlatAndChildren && p.parent() == Some(&r.path)))
    })
}

/// What one blocking run of the feed does.
#[derive(Debug, Clone)]
enum Work {
    Paths(HashSet<PathBuf>),
    Rescan,
    Tick,
}

struct Shared<F> {
    feed: F,
    watches: Watches,
    roots: Vec<WatchRoot>,
}

fn lock<F>(m: &Mutex<Shared<F>>) -> MutexGuard<'_, Shared<F>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs one piece of work on a blocking thread, then applies what it found to the registry.
///
/// The mutex is the feed's own, taken by one blocking job at a time (the task awaits each job
/// before starting the next), so holding it across the file reads blocks nobody; the registry's
/// lock is taken only inside `observe`, after the feed is done.
async fn run<F: Feed>(shared: &Arc<Mutex<Shared<F>>>, sink: &FeedSink, work: Work) {
    let shared = shared.clone();
    let sink = sink.clone();
    let job = tokio::task::spawn_blocking(move || {
        let outputs = {
            let mut guard = lock(&shared);
            let s = &mut *guard;
            let now = SystemTime::now();
            match work {
                Work::Paths(paths) => {
                    let mut outputs = Vec::new();
                    if batch_touches_folders(&paths, &s.roots) && s.watches.sync(&s.roots) {
                        outputs.extend(s.feed.rescan(now));
                    }
                    outputs.extend(s.feed.on_paths(&paths, now));
                    FeedStats::add(&s.feed.stats().event_batches, 1);
                    outputs
                }
                Work::Rescan => {
                    s.watches.sync(&s.roots);
                    let outputs = s.feed.rescan(now);
                    FeedStats::add(&s.feed.stats().rescans, 1);
                    outputs
                }
                Work::Tick => s.feed.tick(now),
            }
        };
        apply_outputs(&sink, outputs);
    });
    if let Err(error) = job.await {
        tracing::warn!(%error, "file_feed_job_failed");
    }
}

/// Spawns the loop of one feed: first scan, then events, ticks and rescans until `token` is
/// cancelled. Must be called from within a tokio runtime.
pub fn spawn_feed<F: Feed>(
    feed: F,
    sink: FeedSink,
    timing: FeedTiming,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let name = feed.name();
        let (tx, mut rx) = mpsc::channel::<PathBuf>(timing.channel_capacity.max(1));
        let overflow = Arc::new(AtomicBool::new(false));
        let watches = Watches::new(name, tx, overflow.clone(), feed.stats());
        let roots = feed.watch_roots();
        let shared = Arc::new(Mutex::new(Shared {
            feed,
            watches,
            roots,
        }));
        // Watches first, then the first scan: whatever is written in between is seen by both,
        // never by neither.
        run(&shared, &sink, Work::Rescan).await;
        tracing::debug!(feed = name, "file_feed_started");

        let mut rescan = tokio::time::interval(timing.rescan);
        rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        rescan.tick().await;
        let mut tick = tokio::time::interval(timing.tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        // At rest (no agent file followed) a feed has nothing to tick for: it then sleeps until
        // a file event or its rescan. Its lock is free here: every job was awaited.
        let mut tick_wanted = lock(&shared).feed.wants_tick();
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                first = rx.recv() => {
                    let Some(first) = first else { break };
                    let mut batch = HashSet::from([first]);
                    tokio::select! {
                        () = token.cancelled() => break,
                        () = tokio::time::sleep(timing.debounce) => {}
                    }
                    while let Ok(path) = rx.try_recv() {
                        batch.insert(path);
                    }
                    run(&shared, &sink, Work::Paths(batch)).await;
                }
                _ = rescan.tick() => run(&shared, &sink, Work::Rescan).await,
                _ = tick.tick(), if tick_wanted => run(&shared, &sink, Work::Tick).await,
            }
            if overflow.swap(false, Ordering::Relaxed) {
                run(&shared, &sink, Work::Rescan).await;
            }
            tick_wanted = lock(&shared).feed.wants_tick();
        }
        tracing::debug!(feed = name, "file_feed_stopped");
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::registry::SessionsRegistry;

    #[test]
    fn a_missing_folder_is_stood_in_for_by_its_nearest_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a/b/c");
        assert_eq!(
            nearest_existing_ancestor(&root).as_deref(),
            Some(dir.path())
        );
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        assert_eq!(nearest_existing_ancestor(&root), Some(dir.path().join("a")));
    }

    #[test]
    fn a_new_project_folder_or_an_event_outside_the_roots_asks_for_a_resync() {
        // A new `projects/<dir>` needs its own watch; a file inside an existing one does not.
        let dir = tempfile::tempdir().unwrap();
        let projects = dir.path().join("projects");
        std::fs::create_dir_all(projects.join("p1")).unwrap();
        let roots = [WatchRoot::new(
            projects.clone(),
            WatchDepth::FlatAndChildren,
        )];
        let file = projects.join("p1/s.jsonl");
        assert!(!batch_touches_folders(&HashSet::from([file]), &roots));
        assert!(batch_touches_folders(
            &HashSet::from([projects.join("p1")]),
            &roots
        ));
        assert!(batch_touches_folders(
            &HashSet::from([dir.path().join("elsewhere")]),
            &roots
        ));
    }
    /// A feed with nothing to read that counts its ticks, and wants them only when told to.
    struct CountingFeed {
        ticks: Arc<std::sync::atomic::AtomicU64>,
        wants: Arc<AtomicBool>,
        stats: Arc<FeedStats>,
    }

    impl Feed for CountingFeed {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn stats(&self) -> Arc<FeedStats> {
            self.stats.clone()
        }
        fn watch_roots(&self) -> Vec<WatchRoot> {
            Vec::new()
        }
        fn on_paths(&mut self, _: &HashSet<PathBuf>, _: SystemTime) -> Vec<FeedOutput> {
            Vec::new()
        }
        fn rescan(&mut self, _: SystemTime) -> Vec<FeedOutput> {
            Vec::new()
        }
        fn tick(&mut self, _: SystemTime) -> Vec<FeedOutput> {
            self.ticks.fetch_add(1, Ordering::Relaxed);
            Vec::new()
        }
        fn wants_tick(&self) -> bool {
            self.wants.load(Ordering::Relaxed)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_feed_following_nothing_is_not_woken_by_its_tick_and_one_following_something_is() {
        // The tray at rest with no agent files: the feeds ticked every 5 s anyway (12 wake-ups
        // a minute each, for nothing to check).
        let ticks = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let wants = Arc::new(AtomicBool::new(false));
        let feed = CountingFeed {
            ticks: ticks.clone(),
            wants: wants.clone(),
            stats: Arc::new(FeedStats::default()),
        };
        let token = CancellationToken::new();
        let task = spawn_feed(
            feed,
            FeedSink::without_history(std::sync::Arc::new(SessionsRegistry::new())),
            FeedTiming::default(),
            token.clone(),
        );
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(
            ticks.load(Ordering::Relaxed),
            0,
            "no tick while nothing is followed"
        );
        // The positive control: once the feed follows something (seen after its next piece of
        // work, here the rescan), it ticks every 5 s again.
        wants.store(true, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs(60)).await;
        let ticked = ticks.load(Ordering::Relaxed);
        assert!(ticked >= 7, "ticked {ticked} times in the minute after");
        token.cancel();
        task.await.unwrap();
    }
}
