//! Pi's session files: `<agent dir>/sessions/--<cwd, / as ->--/<time>_<session id>.jsonl`
//! (`$PI_CODING_AGENT_SESSION_DIR` moves them; then the files may sit right in that folder).
//!
//! Each file is one session (recorded with 0.73.1, `tests/fixtures/pi/real-0.73.1/`): a header
//! `{"type":"session","version":3,"id","timestamp","cwd"}`, then entries with a `timestamp`:
//! `model_change` (`modelId`), `thinking_level_change`, and `message` entries whose `message` has
//! a `role`: `user`, `assistant` (with `stopReason` and `usage`), `toolResult`. Pi writes the
//! file only once a run has its first reply, then appends each entry as it ends.
//!
//! What a line says (decided in [`parse_line`]):
//! - **activity** (working): a `user` or `toolResult` message, an `assistant` one that stops to
//!   call tools (`stopReason: "toolUse"`), and Pi's `bashExecution` (the user's `!` line).
//! - **end of a run** (idle): an `assistant` message that stops for any other reason (`stop`,
//!   `length`, `error`, `aborted`: Esc).
//! - the **model** (`model_change`'s `modelId`, an assistant message's `model`) and the
//!   **context** the last reply held: its `usage.totalTokens` (input, output and cache, what Pi's
//!   own footer counts), else the sum of those parts.
//!
//! Which files are followed: those modified within the TTL (first sight reads the header for the
//! folder and the last 64 KiB for the state; then only appended bytes are read). A file is shown
//! at first sight, as Claude transcripts are where Claude writes no live-session file: nothing on
//! disk says whether its Pi still runs, so a Pi that quit within the TTL is shown, idle, until
//! the TTL ends it. The extension (`agent-tray install --pi`) is what brings the pid, the
//! tool calls and the end: its hook observations and these share the session id, one row.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::feeds::tail::{self, TailReader};
use crate::feeds::watch::{Feed, WatchDepth, WatchRoot};
use crate::feeds::{age_of, mtime_of, parse_time, FeedOutput, FeedStats};
use crate::model::{Agent, EventKind, Observation, Source};

/// What one session line means for the session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Activity,
    RunEnd,
    /// The header, the model, bookkeeping: no state change.
    Nothing,
}

/// One parsed session line: its meaning and the fields it fills in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionLine {
    pub kind: Option<LineKind>,
    pub at: Option<DateTime<Utc>>,
    /// The header's session id.
    pub id: Option<String>,
    /// The header's folder.
    pub cwd: Option<String>,
    pub model: Option<String>,
    /// The context an assistant reply held (its usage).
    pub context_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct RawLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    timestamp: Option<String>,
    id: Option<String>,
    cwd: Option<String>,
    #[serde(rename = "modelId")]
    model_id: Option<String>,
    message: Option<RawMessage>,
}

#[derive(Debug, Deserialize)]
struct RawMessage {
    role: Option<String>,
    #[serde(rename = "stopReason")]
    stop_reason: Option<String>,
    model: Option<String>,
    usage: Option<RawUsage>,
}

#[derive(Debug, Deserialize)]
struct RawUsage {
    input: Option<u64>,
    output: Option<u64>,
    #[serde(rename = "cacheRead")]
    cache_read: Option<u64>,
    #[serde(rename = "cacheWrite")]
    cache_write: Option<u64>,
    #[serde(rename = "totalTokens")]
    total_tokens: Option<u64>,
}

impl RawUsage {
    fn context_tokens(&self) -> Option<u64> {
        let total = self.total_tokens.filter(|t| *t > 0).or_else(|| {
            let parts = [self.input, self.output, self.cache_read, self.cache_write];
            parts.iter().any(Option::is_some).then(|| {
                parts
                    .iter()
                    .flatten()
                    .fold(0u64, |a, b| a.saturating_add(*b))
            })
        })?;
        // A reply that failed before any token (an error, an abort) says nothing of the context.
        (total > 0).then_some(total)
    }
}

/// Parses one line of a session file. Pure; unknown types and roles mean nothing.
pub fn parse_line(bytes: &[u8]) -> Result<SessionLine, serde_json::Error> {
    let raw: RawLine = serde_json::from_slice(bytes)?;
    let mut line = SessionLine {
        at: raw.timestamp.as_deref().and_then(parse_time),
        kind: Some(LineKind::Nothing),
        ..SessionLine::default()
    };
    match raw.kind.as_deref() {
        Some("session") => {
            line.id = raw.id;
            line.cwd = raw.cwd;
        }
        Some("model_change") => line.model = raw.model_id,
        Some("message") => {
            let Some(message) = raw.message else {
                return Ok(line);
            };
            line.kind = Some(match message.role.as_deref() {
                Some("user" | "toolResult" | "bashExecution") => LineKind::Activity,
                Some("assistant") => {
                    line.model = message.model;
                    line.context_tokens = message.usage.as_ref().and_then(RawUsage::context_tokens);
                    if message.stop_reason.as_deref() == Some("toolUse") {
                        LineKind::Activity
                    } else {
                        LineKind::RunEnd
                    }
                }
                _ => LineKind::Nothing,
            });
        }
        _ => {}
    }
    Ok(line)
}

/// The session id a file's name carries (`<time>_<id>.jsonl`), which is its header's `id`.
pub fn session_id_of(path: &Path) -> Option<String> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let (_, id) = stem.rsplit_once('_')?;
    (!id.is_empty() && id.len() <= 128).then(|| id.to_string())
}

/// What is known of a session from its file so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub context_tokens: Option<u64>,
}

impl Fields {
    fn absorb(&mut self, line: &SessionLine) {
        if line.cwd.is_some() {
            self.cwd.clone_from(&line.cwd);
        }
        if line.model.is_some() {
            self.model.clone_from(&line.model);
        }
        if line.context_tokens.is_some() {
            self.context_tokens = line.context_tokens;
        }
    }

    fn observation(
        &self,
        session_id: &str,
        path: &str,
        event: EventKind,
        at: DateTime<Utc>,
    ) -> Observation {
        let mut obs = Observation::new(session_id, Agent::Pi, event, at)
            .with_source(Source::Transcript)
            .with_cwd(self.cwd.clone());
        obs.model.clone_from(&self.model);
        obs.context_tokens = self.context_tokens;
        obs.transcript_path = Some(path.to_string());
        obs
    }
}

/// Turns lines (in file order) into observations: runs of activity collapse into the newest one,
/// every end of a run is kept, in order. Pure.
pub fn observations_of(
    session_id: &str,
    path: &str,
    lines: &[SessionLine],
    fields: &mut Fields,
) -> Vec<Observation> {
    let mut out = Vec::new();
    let mut pending_activity: Option<DateTime<Utc>> = None;
    for line in lines {
        fields.absorb(line);
        match (line.kind, line.at) {
            (Some(LineKind::Activity), Some(at)) => pending_activity = Some(at),
            (Some(LineKind::RunEnd), Some(at)) => {
                if let Some(a) = pending_activity.take() {
                    out.push(fields.observation(
                        session_id,
                        path,
                        EventKind::TranscriptActivity,
                        a,
                    ));
                }
                out.push(fields.observation(session_id, path, EventKind::TurnEnded, at));
            }
            _ => {}
        }
    }
    if let Some(a) = pending_activity {
        out.push(fields.observation(session_id, path, EventKind::TranscriptActivity, a));
    }
    out
}

/// One followed session file.
struct Followed {
    session_id: String,
    reader: TailReader,
    mtime: Option<SystemTime>,
    len: u64,
    fields: Fields,
}

/// Follows Pi's session files (see the module comment).
pub struct PiSessionsFeed {
    /// The folders holding the session folders (`<agent dir>/sessions`, the env's folder).
    roots: Vec<PathBuf>,
    ttl: Duration,
    followed: HashMap<PathBuf, Followed>,
    stats: Arc<FeedStats>,
}

impl PiSessionsFeed {
    pub fn new(roots: Vec<PathBuf>, ttl: Duration, stats: Arc<FeedStats>) -> Self {
        PiSessionsFeed {
            roots,
            ttl,
            followed: HashMap::new(),
            stats,
        }
    }

    /// Whether `path` is a session file under one of the roots (in it, or one folder down).
    fn is_session_file(&self, path: &Path) -> bool {
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl")
            || session_id_of(path).is_none()
        {
            return false;
        }
        let Some(parent) = path.parent() else {
            return false;
        };
        self.roots
            .iter()
            .any(|r| parent == r || parent.parent() == Some(r.as_path()))
    }

    fn parse_lines(&self, raw: &[Vec<u8>]) -> Vec<SessionLine> {
        let mut lines = Vec::with_capacity(raw.len());
        for bytes in raw {
            match parse_line(bytes) {
                Ok(line) => lines.push(line),
                Err(error) => {
                    FeedStats::add(&self.stats.bad_lines, 1);
                    tracing::debug!(%error, "pi_session_line_skipped");
                }
            }
        }
        FeedStats::add(&self.stats.lines, raw.len() as u64);
        lines
    }

    /// Looks at one session file path (which may have been removed).
    fn examine(&mut self, path: &Path, now: SystemTime, out: &mut Vec<FeedOutput>) {
        let Ok((mut file, meta)) = crate::feeds::open_regular_file(path) else {
            self.followed.remove(path);
            return;
        };
        let mtime = meta.modified().ok();
        let Some(f) = self.followed.get_mut(path) else {
            self.discover(path, &mut file, &meta, now, out);
            return;
        };
        if f.mtime == mtime && f.len == meta.len() {
            return;
        }
        f.mtime = mtime;
        f.len = meta.len();
        let mut raw: Vec<Vec<u8>> = Vec::new();
        let appended = match f
            .reader
            .read_appended(&mut file, &meta, &mut |line| raw.push(line.to_vec()))
        {
            Ok(a) => a,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "pi_session_unreadable");
                return;
            }
        };
        FeedStats::add(&self.stats.bytes_read, appended.bytes_read);
        FeedStats::add(&self.stats.bad_lines, appended.oversized);
        if appended.reset {
            // Rewritten (Pi rewrites a file it migrates): start over from its last window.
            self.followed.remove(path);
            self.discover(path, &mut file, &meta, now, out);
            return;
        }
        let lines = self.parse_lines(&raw);
        let Some(f) = self.followed.get_mut(path) else {
            return;
        };
        let path_text = path.to_string_lossy();
        out.extend(
            observations_of(&f.session_id, &path_text, &lines, &mut f.fields)
                .into_iter()
                .map(FeedOutput::observe),
        );
    }

    /// First sight: the header for the folder, the last window for the newest fields and state.
    fn discover(
        &mut self,
        path: &Path,
        file: &mut std::fs::File,
        meta: &std::fs::Metadata,
        now: SystemTime,
        out: &mut Vec<FeedOutput>,
    ) {
        let Some(session_id) = session_id_of(path) else {
            return;
        };
        if age_of(meta, now) > self.ttl {
            return;
        }
        let mut fields = Fields::default();
        if let Ok(Some((first, _))) = tail::read_first_line(file) {
            if let Ok(header) = parse_line(&first) {
                if header.id.as_deref().is_some_and(|id| id != session_id) {
                    // Not the file Pi names: someone else's JSONL in the folder.
                    return;
                }
                fields.absorb(&header);
            }
        }
        let last = match tail::read_last_lines(file, meta, tail::DISCOVERY_WINDOW) {
            Ok(last) => last,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "pi_session_unreadable");
                return;
            }
        };
        FeedStats::add(&self.stats.bytes_read, last.bytes_read);
        let lines = self.parse_lines(&last.lines);
        let mut last_state = None;
        for line in &lines {
            fields.absorb(line);
            if matches!(line.kind, Some(LineKind::Activity | LineKind::RunEnd)) {
                last_state = Some(line.clone());
            }
        }
        let path_text = path.to_string_lossy();
        let state: Vec<SessionLine> = last_state.into_iter().collect();
        let mut scratch = fields.clone();
        let mut obs = observations_of(&session_id, &path_text, &state, &mut scratch);
        if obs.is_empty() {
            obs.push(fields.observation(
                &session_id,
                &path_text,
                EventKind::Sighting,
                mtime_of(meta),
            ));
        }
        out.extend(obs.into_iter().map(FeedOutput::observe));
        self.followed.insert(
            path.to_path_buf(),
            Followed {
                session_id,
                reader: TailReader::at(last.resume_at, Some(last.identity)),
                mtime: meta.modified().ok(),
                len: meta.len(),
                fields,
            },
        );
    }

    /// Looks at one folder of session files (or a root holding them directly).
    fn scan_dir(&mut self, dir: &Path, now: SystemTime, out: &mut Vec<FeedOutput>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if !meta.file_type().is_file() || !self.is_session_file(&path) {
                continue;
            }
            // An old file is left alone without opening it.
            if age_of(&meta, now) > self.ttl {
                continue;
            }
            if let Some(f) = self.followed.get(&path) {
                if f.mtime == meta.modified().ok() && f.len == meta.len() {
                    continue;
                }
            }
            self.examine(&path, now, out);
        }
    }
}

impl Feed for PiSessionsFeed {
    fn name(&self) -> &'static str {
        "pi_sessions"
    }

    fn stats(&self) -> Arc<FeedStats> {
        self.stats.clone()
    }

    fn watch_roots(&self) -> Vec<WatchRoot> {
        self.roots
            .iter()
            .map(|r| WatchRoot::new(r.clone(), WatchDepth::FlatAndChildren))
            .collect()
    }

    fn on_paths(&mut self, paths: &HashSet<PathBuf>, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        for path in paths {
            if self.is_session_file(path) {
                self.examine(path, now, &mut out);
            } else if path
                .parent()
                .is_some_and(|p| self.roots.iter().any(|r| r == p))
                && path.is_dir()
            {
                // A project folder that appeared: its files may predate our watch on it.
                self.scan_dir(path, now, &mut out);
            }
        }
        out
    }

    fn rescan(&mut self, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        for root in self.roots.clone() {
            self.scan_dir(&root, now, &mut out);
            let Ok(dirs) = std::fs::read_dir(&root) else {
                continue;
            };
            for dir in dirs.flatten() {
                if dir.file_type().is_ok_and(|t| t.is_dir()) {
                    self.scan_dir(&dir.path(), now, &mut out);
                }
            }
        }
        let ttl = self.ttl;
        self.followed.retain(|path, f| {
            let quiet = f
                .mtime
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age > ttl);
            !quiet && path.exists()
        });
        self.stats.followed.store(
            self.followed.len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        out
    }

    /// Everything comes from the files' own changes: nothing to tick for.
    fn wants_tick(&self) -> bool {
        false
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const FIXTURE: &str = "tests/fixtures/pi/real-0.73.1/session-tool-turn.jsonl";

    fn fixture() -> Vec<SessionLine> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| parse_line(l.as_bytes()).unwrap())
            .collect()
    }

    // The recorded run (a prompt, a bash call, its result, the closing reply) reads as working
    // through the tool call and idle at the final reply, with the header's folder, the model and
    // the last reply's context.
    #[test]
    fn the_recorded_tool_run_is_activity_then_the_end_of_the_run() {
        let lines = fixture();
        let kinds: Vec<LineKind> = lines.iter().map(|l| l.kind.unwrap()).collect();
        assert_eq!(
            kinds,
            [
                LineKind::Nothing,  // session header
                LineKind::Nothing,  // model_change
                LineKind::Nothing,  // thinking_level_change
                LineKind::Activity, // the user's prompt
                LineKind::Activity, // the reply that calls bash (stopReason toolUse)
                LineKind::Activity, // the tool's result
                LineKind::RunEnd,   // the closing reply (stopReason stop)
            ]
        );
        assert_eq!(
            lines[0].id.as_deref(),
            Some("01a24a00-059a-71ec-abe3-b5531d2d5e7e")
        );
        let mut fields = Fields::default();
        let obs = observations_of("s1", "/p.jsonl", &lines, &mut fields);
        let events: Vec<EventKind> = obs.iter().map(|o| o.event).collect();
        assert_eq!(
            events,
            [EventKind::TranscriptActivity, EventKind::TurnEnded]
        );
        let last = obs.last().unwrap();
        assert_eq!(last.agent, Agent::Pi);
        assert_eq!(last.cwd.as_deref(), Some("/tmp/pirec/proj"));
        assert_eq!(last.model.as_deref(), Some("claude-mock"));
        assert_eq!(
            last.context_tokens,
            Some(110),
            "the last reply's usage.totalTokens"
        );
        assert_eq!(last.source, Source::Transcript);
        assert!(
            obs[0].at < last.at,
            "the activity comes before the end of the run"
        );
    }

    // Only the lines up to the tool call: the run is still going (a kill -9 here writes nothing
    // more, and the pid watcher, not the file, ends it).
    #[test]
    fn a_file_that_ends_at_a_tool_call_says_working() {
        let lines = fixture();
        let mut fields = Fields::default();
        let obs = observations_of("s1", "/p.jsonl", &lines[..5], &mut fields);
        assert_eq!(
            obs.iter().map(|o| o.event).collect::<Vec<_>>(),
            [EventKind::TranscriptActivity]
        );
    }

    // The recorded Esc: the prompt, then an empty `aborted` reply that ends the run and, with no
    // token counted, leaves the context unknown rather than zero.
    #[test]
    fn the_recorded_esc_ends_the_run_without_a_context() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pi/real-0.73.1/session-esc.jsonl");
        let lines: Vec<SessionLine> = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| parse_line(l.as_bytes()).unwrap())
            .collect();
        let mut fields = Fields::default();
        let obs = observations_of("s1", "/p.jsonl", &lines, &mut fields);
        assert_eq!(
            obs.iter().map(|o| o.event).collect::<Vec<_>>(),
            [EventKind::TranscriptActivity, EventKind::TurnEnded]
        );
        assert_eq!(obs[1].context_tokens, None);
        assert_eq!(obs[1].model.as_deref(), Some("claude-mock"));
    }

    #[test]
    fn a_reply_ending_in_error_or_abort_ends_the_run_and_an_empty_usage_says_no_context() {
        let line = |stop: &str, usage: &str| {
            parse_line(format!(
                r#"{{"type":"message","timestamp":"2026-12-06T06:14:01.159Z","message":{{"role":"assistant","stopReason":"{stop}","usage":{usage}}}}}"#
            ).as_bytes())
            .unwrap()
        };
        let aborted = line(
            "aborted",
            r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0}"#,
        );
        assert_eq!(aborted.kind, Some(LineKind::RunEnd));
        assert_eq!(aborted.context_tokens, None);
        let parts = line("error", r#"{"input":7,"output":3,"cacheRead":5}"#);
        assert_eq!(parts.kind, Some(LineKind::RunEnd));
        assert_eq!(parts.context_tokens, Some(15));
        let odd = parse_line(
            br#"{"type":"message","timestamp":"2026-12-06T06:14:01Z","message":{"role":"custom"}}"#,
        )
        .unwrap();
        assert_eq!(odd.kind, Some(LineKind::Nothing));
        assert!(parse_line(b"not json").is_err());
    }

    #[test]
    fn the_session_id_is_the_part_of_the_name_after_the_time() {
        assert_eq!(
            session_id_of(Path::new(
                "/h/.pi/agent/sessions/--tmp-p--/2026-12-06T06-17-25-146Z_01a24a00-059a-71ec-abe3-b5531d2d5e7e.jsonl"
            ))
            .as_deref(),
            Some("01a24a00-059a-71ec-abe3-b5531d2d5e7e")
        );
        assert_eq!(session_id_of(Path::new("/h/notes.jsonl")), None);
        assert_eq!(session_id_of(Path::new("/h/a_b.json")), None);
    }

    // A real file in a temp folder, read as the engine's watcher would hand it over: first sight
    // shows the session with its state, growth is read from where it stopped, and a file in
    // another folder, or older than the TTL, is not followed.
    #[test]
    fn the_feed_shows_a_session_file_and_follows_what_is_appended() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("sessions");
        let dir = root.join("--tmp-pirec-proj--");
        std::fs::create_dir_all(&dir).unwrap();
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap();
        let all: Vec<&str> = text.lines().collect();
        let path = dir.join("2026-12-06T06-17-25-146Z_01a24a00-059a-71ec-abe3-b5531d2d5e7e.jsonl");
        std::fs::write(&path, format!("{}\n", all[..5].join("\n"))).unwrap();
        let mut feed =
            PiSessionsFeed::new(vec![root.clone()], Duration::from_secs(600), Arc::default());
        let now = SystemTime::now();
        let first = feed.rescan(now);
        let obs: Vec<&Observation> = first
            .iter()
            .filter_map(|o| match o {
                FeedOutput::Observe(obs) => Some(obs.as_ref()),
                _ => None,
            })
            .collect();
        assert_eq!(obs.len(), 1, "one observation at first sight: {first:?}");
        assert_eq!(obs[0].session_id, "01a24a00-059a-71ec-abe3-b5531d2d5e7e");
        assert_eq!(
            obs[0].event,
            EventKind::TranscriptActivity,
            "mid-run: working"
        );
        assert_eq!(
            obs[0].cwd.as_deref(),
            Some("/tmp/pirec/proj"),
            "the header's folder"
        );

        std::fs::write(&path, format!("{}\n", all.join("\n"))).unwrap();
        let paths: HashSet<PathBuf> = [path.clone()].into();
        let grown = feed.on_paths(&paths, SystemTime::now());
        let events: Vec<EventKind> = grown
            .iter()
            .filter_map(|o| match o {
                FeedOutput::Observe(obs) => Some(obs.event),
                _ => None,
            })
            .collect();
        assert_eq!(
            events,
            [EventKind::TranscriptActivity, EventKind::TurnEnded],
            "only the appended lines"
        );

        let elsewhere = tmp.path().join("other").join("x_abc.jsonl");
        assert!(!feed.is_session_file(&elsewhere));
        let old = PiSessionsFeed::new(vec![root], Duration::from_secs(600), Arc::default())
            .rescan(now + Duration::from_secs(3600));
        assert!(
            old.is_empty(),
            "a file quiet for longer than the TTL is not shown"
        );
    }
}
