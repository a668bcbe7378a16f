//! Follows GitHub Copilot CLI's session folders, `$COPILOT_HOME/session-state/<uuid>/`, for what
//! no hook reports: Esc (an `abort` line: the turn is over), a clean shutdown, and a session
//! opened with no prompt yet (a sighting, with the pid of its `inuse.<PID>.lock`).
//!
//! **Only a live lock makes a session.** A killed CLI leaves its lock (and `working: true` in
//! `open-sessions-state.json`) behind until the next launch sweeps it, so a folder is followed
//! only while exactly one of its locks names a live process (zombies count as dead), and its
//! history is never replayed: following starts at the end of `events.jsonl` as first seen,
//! except for the lines written since the holder took its lock, which are that process's own.
//! Copilot creates `events.jsonl` at the first prompt, and an Esc a second later can land in the
//! file before this feed first looks at it (a loaded machine, a rescan after a dropped watch):
//! reading those lines keeps that abort. A followed session whose holder died is left to the pid
//! watcher (which ends it), never to this feed's guess.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use super::session_state::{self, SessionFileEvent};
use crate::feeds::tail::{self, TailReader};
use crate::feeds::watch::{Feed, WatchDepth, WatchRoot};
use crate::feeds::{mtime_of, open_regular_file, FeedOutput, FeedStats};
use crate::model::{Agent, EventKind, Observation, Source};

/// Session folders listed in one rescan, at most (each costs a directory read).
const MAX_SESSIONS: usize = 2000;
/// Entries of one session folder read to find its locks.
const MAX_ENTRIES: usize = 256;
/// At first sight of a followed file, the bytes at its end searched for lines written since the
/// holder took its lock.
const OWN_LINES_WINDOW: u64 = 256 * 1024;

struct Followed {
    reader: TailReader,
    holder: u32,
}

/// The feed. `alive` is the process check (a zombie is dead): `crate::process::exists` in use.
pub struct CopilotSessionsFeed {
    homes: Vec<PathBuf>,
    stats: Arc<FeedStats>,
    followed: HashMap<PathBuf, Followed>,
    alive: fn(u32) -> bool,
}

impl CopilotSessionsFeed {
    pub fn new(homes: Vec<PathBuf>, stats: Arc<FeedStats>, alive: fn(u32) -> bool) -> Self {
        CopilotSessionsFeed {
            homes,
            stats,
            followed: HashMap::new(),
            alive,
        }
    }

    /// The session folder a changed path belongs to.
    fn session_dir_of(&self, path: &Path) -> Option<PathBuf> {
        let is_session = |p: &Path| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(session_state::is_session_dir_name)
                && p.parent().and_then(|s| s.file_name()) == Some("session-state".as_ref())
        };
        if is_session(path) {
            return Some(path.to_path_buf());
        }
        path.parent()
            .filter(|p| is_session(p))
            .map(Path::to_path_buf)
    }

    fn examine(&mut self, dir: &Path, out: &mut Vec<FeedOutput>) {
        let Some(id) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            return;
        };
        let names: Vec<String> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .flatten()
                .take(MAX_ENTRIES)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => {
                self.followed.remove(dir);
                return;
            }
        };
        let locks = session_state::lock_pids(names.iter().map(String::as_str));
        let holder = session_state::live_holder(&locks, self.alive);
        let events = dir.join("events.jsonl");
        let Ok((mut file, meta)) = open_regular_file(&events) else {
            return;
        };
        let stamp = mtime_of(&meta);
        if !self.followed.contains_key(dir) {
            // Never followed: only a session a live process holds, from the end of its file.
            let Some(holder) = holder else { return };
            let cwd = tail::read_first_line(&mut file)
                .ok()
                .flatten()
                .and_then(|(line, _)| String::from_utf8(line).ok())
                .and_then(|line| session_state::parse_line(&line))
                .and_then(|(ev, _)| match ev {
                    SessionFileEvent::Started { cwd } | SessionFileEvent::Resumed { cwd } => cwd,
                    _ => None,
                });
            let mut sighting = Observation::new(&id, Agent::Copilot, EventKind::Sighting, stamp)
                .with_source(Source::Transcript);
            sighting.pid = Some(holder);
            sighting.cwd = cwd;
            out.push(FeedOutput::observe(sighting));
            let lock_taken = std::fs::metadata(dir.join(format!("inuse.{holder}.lock")))
                .and_then(|m| m.modified())
                .ok()
                .map(DateTime::<Utc>::from);
            let reader = match lock_taken {
                Some(taken) => self.read_own_lines(&id, &mut file, &meta, taken, holder, out),
                None => None,
            };
            self.followed.insert(
                dir.to_path_buf(),
                Followed {
                    reader: reader.unwrap_or_else(|| {
                        TailReader::at(meta.len(), Some(tail::FileIdentity::of(&file, &meta)))
                    }),
                    holder,
                },
            );
            return;
        }
        let Some(followed) = self.followed.get_mut(dir) else {
            return;
        };
        if let Some(h) = holder {
            followed.holder = h;
        }
        let pid = followed.holder;
        let mut lines = Vec::new();
        let read = followed
            .reader
            .read_appended(&mut file, &meta, &mut |line| {
                if let Ok(text) = std::str::from_utf8(line) {
                    if let Some(parsed) = session_state::parse_line(text) {
                        lines.push(parsed);
                    }
                }
            });
        match read {
            Ok(appended) if appended.reset => {
                // Replaced or cut: start again from its end.
                followed.reader =
                    TailReader::at(meta.len(), Some(tail::FileIdentity::of(&file, &meta)));
            }
            Ok(appended) => {
                FeedStats::add(&self.stats.bytes_read, appended.bytes_read);
                FeedStats::add(&self.stats.lines, appended.lines);
            }
            Err(_) => return,
        }
        for (event, at) in lines {
            let at = at.unwrap_or(stamp);
            let obs = session_state::observation(Agent::Copilot, &id, &event, at, Some(pid));
            // A resume line in a followed file is the session's own news; a start is none; a
            // usage record is for its context figure.
            if obs.event != EventKind::Sighting || obs.context_tokens.is_some() {
                out.push(FeedOutput::observe(obs));
            }
        }
    }

    /// At first sight: the abort or shutdown lines at the file's end stamped at or after
    /// `lock_taken` (the holder wrote them), and a reader that goes on after them. Older lines
    /// are an earlier process's history (`--resume`) and stay unread. `None` when the file cannot
    /// be read: the caller follows from the end.
    fn read_own_lines(
        &self,
        id: &str,
        file: &mut std::fs::File,
        meta: &std::fs::Metadata,
        lock_taken: DateTime<Utc>,
        holder: u32,
        out: &mut Vec<FeedOutput>,
    ) -> Option<TailReader> {
        let last = tail::read_last_lines(file, meta, OWN_LINES_WINDOW).ok()?;
        FeedStats::add(&self.stats.bytes_read, last.bytes_read);
        FeedStats::add(&self.stats.lines, last.lines.len() as u64);
        for line in &last.lines {
            let Some((event, Some(at))) = std::str::from_utf8(line)
                .ok()
                .and_then(session_state::parse_line)
            else {
                continue;
            };
            if at < lock_taken {
                continue;
            }
            let obs = session_state::observation(Agent::Copilot, id, &event, at, Some(holder));
            if obs.event != EventKind::Sighting || obs.context_tokens.is_some() {
                out.push(FeedOutput::observe(obs));
            }
        }
        Some(TailReader::at(last.resume_at, Some(last.identity)))
    }

    fn session_dirs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for home in &self.homes {
            let Ok(entries) = std::fs::read_dir(home.join("session-state")) else {
                continue;
            };
            out.extend(
                entries
                    .flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_str()
                            .is_some_and(session_state::is_session_dir_name)
                    })
                    .map(|e| e.path())
                    .take(MAX_SESSIONS),
            );
        }
        out
    }
}

impl Feed for CopilotSessionsFeed {
    /// Everything it reads comes by file events and rescans: no tick.
    fn wants_tick(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "copilot_sessions"
    }

    fn stats(&self) -> Arc<FeedStats> {
        self.stats.clone()
    }

    fn watch_roots(&self) -> Vec<WatchRoot> {
        self.homes
            .iter()
            .map(|h| WatchRoot::new(h.join("session-state"), WatchDepth::FlatAndChildren))
            .collect()
    }

    fn on_paths(&mut self, paths: &HashSet<PathBuf>, _now: SystemTime) -> Vec<FeedOutput> {
        let dirs: HashSet<PathBuf> = paths
            .iter()
            .filter_map(|p| self.session_dir_of(p))
            .collect();
        let mut out = Vec::new();
        for dir in dirs {
            self.examine(&dir, &mut out);
        }
        out
    }

    fn rescan(&mut self, _now: SystemTime) -> Vec<FeedOutput> {
        let dirs = self.session_dirs();
        let present: HashSet<&PathBuf> = dirs.iter().collect();
        self.followed.retain(|d, _| present.contains(d));
        let mut out = Vec::new();
        for dir in &dirs {
            self.examine(dir, &mut out);
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const ID: &str = "da763f3d-1272-45ca-939d-52e915d454e7";
    const START: &str = r#"{"type":"session.start","data":{"sessionId":"da763f3d-1272-45ca-939d-52e915d454e7","context":{"cwd":"/home/dev/proj"}},"id":"1","timestamp":"2026-11-30T23:51:26.928Z","parentId":null}"#;
    const ABORT: &str = r#"{"type":"abort","data":{"reason":"user_initiated"},"id":"9","timestamp":"2026-11-30T23:55:01.000Z","parentId":"8"}"#;

    fn observed(out: &[FeedOutput]) -> Vec<(EventKind, Option<u32>)> {
        out.iter()
            .filter_map(|o| match o {
                FeedOutput::Observe(obs) => Some((obs.event, obs.pid)),
                _ => None,
            })
            .collect()
    }

    fn setup(lock_pid: u32) -> (tempfile::TempDir, PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("session-state").join(ID);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("events.jsonl"), format!("{START}\n")).unwrap();
        std::fs::write(
            dir.join(format!("inuse.{lock_pid}.lock")),
            lock_pid.to_string(),
        )
        .unwrap();
        (home, dir)
    }

    fn append(dir: &Path, line: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("events.jsonl"))
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }

    #[test]
    fn a_live_lock_makes_a_sighting_and_a_later_esc_ends_the_turn() {
        let (home, dir) = setup(4242);
        let mut feed =
            CopilotSessionsFeed::new(vec![home.path().to_path_buf()], Arc::default(), |p| {
                p == 4242
            });
        let out = feed.rescan(SystemTime::now());
        assert_eq!(observed(&out), vec![(EventKind::Sighting, Some(4242))]);
        let FeedOutput::Observe(obs) = &out[0] else {
            panic!()
        };
        assert_eq!(obs.cwd.as_deref(), Some("/home/dev/proj"));
        assert_eq!(obs.session_id, ID);
        // Esc at the permission prompt: no hook, only the abort line.
        append(&dir, ABORT);
        let changed: HashSet<PathBuf> = [dir.join("events.jsonl")].into_iter().collect();
        let out = feed.on_paths(&changed, SystemTime::now());
        assert_eq!(observed(&out), vec![(EventKind::Interrupt, Some(4242))]);
    }

    #[test]
    fn a_stale_lock_of_a_killed_cli_makes_no_session_and_history_is_not_replayed() {
        let (home, dir) = setup(4242);
        append(&dir, ABORT);
        // The CLI was killed: its lock stays, its pid is dead.
        let mut dead =
            CopilotSessionsFeed::new(vec![home.path().to_path_buf()], Arc::default(), |_| false);
        assert!(observed(&dead.rescan(SystemTime::now())).is_empty());
        // Positive control: the same folder held by a live CLI is a session, and the abort
        // already in its file (an old turn) is not replayed.
        let mut live =
            CopilotSessionsFeed::new(vec![home.path().to_path_buf()], Arc::default(), |p| {
                p == 4242
            });
        assert_eq!(
            observed(&live.rescan(SystemTime::now())),
            vec![(EventKind::Sighting, Some(4242))]
        );
    }

    /// Sets when the holder took its lock (the lock file's mtime).
    fn lock_taken_at(dir: &Path, pid: u32, at: &str) {
        let at: DateTime<Utc> = DateTime::parse_from_rfc3339(at).unwrap().into();
        std::fs::File::options()
            .write(true)
            .open(dir.join(format!("inuse.{pid}.lock")))
            .unwrap()
            .set_modified(at.into())
            .unwrap();
    }

    #[test]
    fn an_esc_written_before_the_first_look_is_read_and_an_earlier_process_s_lines_are_not() {
        const SHUTDOWN_BEFORE: &str = r#"{"type":"session.shutdown","data":{},"id":"7","timestamp":"2026-11-30T23:54:59.999Z","parentId":"6"}"#;
        let (home, dir) = setup(4242);
        // An earlier run of this session shut down just before this CLI took the lock at
        // 23:55:00; this CLI's user pressed Esc at 23:55:01, before the feed's first look.
        append(&dir, SHUTDOWN_BEFORE);
        append(&dir, ABORT);
        lock_taken_at(&dir, 4242, "2026-11-30T23:55:00Z");
        let mut feed =
            CopilotSessionsFeed::new(vec![home.path().to_path_buf()], Arc::default(), |p| {
                p == 4242
            });
        let out = feed.rescan(SystemTime::now());
        assert_eq!(
            observed(&out),
            vec![
                (EventKind::Sighting, Some(4242)),
                (EventKind::Interrupt, Some(4242))
            ]
        );
        // Read once: the next look finds nothing new, and a later line is read after them.
        assert!(observed(&feed.rescan(SystemTime::now())).is_empty());
        append(&dir, ABORT);
        let changed: HashSet<PathBuf> = [dir.join("events.jsonl")].into_iter().collect();
        assert_eq!(
            observed(&feed.on_paths(&changed, SystemTime::now())),
            vec![(EventKind::Interrupt, Some(4242))]
        );
    }
}
