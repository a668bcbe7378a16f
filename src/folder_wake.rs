//! A folder watch that only wakes a task up: what the journal replay, hook drift and the Codex
//! app-server feed each need, where a file feed ([`crate::feeds::watch`]) needs the changed paths
//! themselves.
//!
//! A leaf of its own (it knows `notify` and a channel, nothing of sessions) so that the journal
//! and hook drift, which sit beside the feeds rather than above them, can use it without
//! importing the feeds and, through them, the registry.

use std::path::{Path, PathBuf};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// A folder watch whose only job is a wake-up: one `()` down `wake` for each change in `folders`
/// (each watched on its own, not recursively) to a path `matters` accepts, for a task that then
/// looks at everything it cares about. What the journal replay, hook drift and the Codex
/// app-server feed each need, where a feed ([`crate::feeds::watch`]) needs the paths themselves.
///
/// Opens and reads are not changes (notify reports them, and the woken task's own reads would
/// wake it again). A watch error or an overflowed kernel queue may hide a change: they wake it
/// too. `try_send`: a full channel already holds a wake-up, and the look it starts sees this
/// change as well. Returns the watcher (dropping it ends the watch) and the folders it could not
/// watch with why; `Err` when no watcher could be made at all.
#[allow(clippy::type_complexity)]
pub fn wake_on_change<'a>(
    folders: impl IntoIterator<Item = &'a Path>,
    matters: impl Fn(&Path) -> bool + Send + 'static,
    wake: mpsc::Sender<()>,
) -> notify::Result<(notify::RecommendedWatcher, Vec<(PathBuf, notify::Error)>)> {
    let handler = move |event: notify::Result<notify::Event>| {
        if change_wakes(&event, &matters) {
            let _ = wake.try_send(());
        }
    };
    let mut watcher = notify::recommended_watcher(handler)?;
    let mut failed = Vec::new();
    for folder in folders {
        if let Err(error) = watcher.watch(folder, RecursiveMode::NonRecursive) {
            failed.push((folder.to_path_buf(), error));
        }
    }
    Ok((watcher, failed))
}

/// Whether `event` wakes a [`wake_on_change`] watch whose paths of interest `matters` accepts.
pub fn change_wakes(
    event: &notify::Result<notify::Event>,
    matters: impl Fn(&Path) -> bool,
) -> bool {
    match event {
        Err(_) => true,
        Ok(event) if event.need_rescan() => true,
        Ok(event) if matches!(event.kind, notify::EventKind::Access(_)) => false,
        Ok(event) => event.paths.iter().any(|p| matters(p)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_watch_error_or_a_lost_queue_wakes_whatever_path_and_an_open_never_does() {
        use notify::event::{AccessKind, Flag, ModifyKind};
        use notify::{Event, EventKind};
        let none = |_: &Path| false;
        let all = |_: &Path| true;
        let modified = || Event::new(EventKind::Modify(ModifyKind::Any)).add_path("/x/a".into());
        assert!(change_wakes(&Err(notify::Error::generic("lost")), none));
        assert!(change_wakes(
            &Ok(Event::new(EventKind::Other).set_flag(Flag::Rescan)),
            none
        ));
        assert!(!change_wakes(
            &Ok(Event::new(EventKind::Access(AccessKind::Any)).add_path("/x/a".into())),
            all
        ));
        assert!(change_wakes(&Ok(modified()), all));
        assert!(!change_wakes(&Ok(modified()), none));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_change_to_a_path_that_matters_wakes_once_and_others_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let (tx, mut rx) = mpsc::channel(1);
        let (_watcher, failed) = wake_on_change(
            [tmp.path()],
            |p: &Path| p.extension().is_some_and(|e| e == "jsonl"),
            tx,
        )
        .unwrap();
        assert!(failed.is_empty());
        std::fs::write(tmp.path().join("status.json"), b"{}").unwrap();
        let quiet = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await;
        assert!(quiet.is_err(), "woken by a path that does not matter");
        std::fs::write(tmp.path().join("claude-s1.jsonl"), b"{}\n").unwrap();
        let woken = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        assert_eq!(woken.ok().flatten(), Some(()));
    }
}
