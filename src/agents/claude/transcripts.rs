//! Claude Code transcripts: `<claude>/projects/<dir>/<session_id>.jsonl`.
//!
//! A transcript is appended to as a turn runs, which makes it the signal for the two things hooks
//! miss: **Esc fires no Stop hook**, but Claude writes `[Request interrupted by user…]`; and a
//! user who never installed hooks still gets `working` from growth and `idle` from the
//! `system/turn_duration` line that closes every turn. It also fills in `cwd`, `gitBranch` and the
//! model.
//!
//! Which lines count (decided in [`classify`], on what Claude Code 2.1 writes):
//! - **activity** (→ `TranscriptActivity`): `user` prompts and tool results, `assistant` lines,
//!   `system/api_error` (a retry is running) — lines with a timestamp, from the main thread.
//! - **end of turn** (→ `TurnEnded`): `system/turn_duration`, or a `user` line whose text starts
//!   with `[Request interrupted by user` (Esc, or "No" at a permission prompt).
//! - **nothing**: bookkeeping lines written *after* a turn ends or at an idle prompt (`last-prompt`,
//!   `mode`, `permission-mode`, `file-history-snapshot`, `attachment`, other `system` subtypes,
//!   slash-command echoes and `isMeta` lines), and subagent (`isSidechain`) lines. Counting them as
//!   activity would flip an idle session back to `working` right after its turn ended.
//!
//! **Which files are followed.** There are thousands (30 days by default), some of many MB. A file
//! is followed only while it was modified within the TTL, or while its session has a live
//! `sessions/<pid>.json`; first sight reads only its last 64 KiB for the state (see
//! [`crate::feeds::tail`]) and, in a file of up to [`USAGE_BACKFILL_MAX`], the usage lines before it; after
//! that only appended bytes are read.
//!
//! **Ghosts.** A transcript modified a minute ago may belong to a `claude` that has exited. Where
//! this Claude writes live-session files, a transcript is adopted at first sight only if its session
//! has a live one; otherwise it is adopted when it *grows* while we watch (a live writer is proof
//! enough: that covers `claude -p` and SDK sessions that write no live-session file). Where no
//! `sessions/` folder exists (an older Claude), recency within the TTL is all there is to go on.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::sessions::LiveClaudeSessions;
use crate::feeds::tail::{self, TailReader};
use crate::feeds::watch::{Feed, WatchDepth, WatchRoot};
use crate::feeds::{age_of, mtime_of, parse_time, FeedOutput, FeedStats};
use crate::model::{Agent, EventKind, Observation, Source};
use crate::usage::{TokenUsage, UsageKind, UsageReport};

/// What a transcript line means for the session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Activity,
    TurnEnd,
    /// Bookkeeping, a subagent, or a line without a time: no state change.
    Nothing,
}

/// One parsed transcript line: its meaning and the fields it fills in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TranscriptLine {
    pub kind: Option<LineKind>,
    pub at: Option<DateTime<Utc>>,
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub model: Option<String>,
    /// An `assistant` line's message id and `usage` block (any thread: a subagent's tokens are
    /// paid for too).
    pub usage: Option<(String, TokenUsage)>,
    /// A `user` line's `promptId`: the turn that the usage after it belongs to.
    pub prompt_id: Option<String>,
    /// A main-thread `assistant` line's context: what its request read (fresh input, cache reads
    /// and writes) and wrote, which is what the conversation holds after that turn.
    pub context_tokens: Option<u64>,
    /// A `system` line of subtype `compact_boundary`: the conversation was compacted here, and
    /// the context figure of the turns before it no longer holds.
    pub compact_boundary: bool,
}

#[derive(Debug, Deserialize, Default)]
struct RawLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    timestamp: Option<String>,
    cwd: Option<String>,
    #[serde(rename = "gitBranch")]
    git_branch: Option<String>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta")]
    is_meta: Option<bool>,
    /// The summary a compact puts in place of the conversation, written as a `user` line.
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Option<bool>,
    message: Option<RawMessage>,
    #[serde(rename = "promptId")]
    prompt_id: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
struct RawMessage {
    model: Option<String>,
    content: Option<RawContent>,
    id: Option<String>,
    usage: Option<RawUsage>,
}

/// Claude's `usage` block: cache reads and writes are counted apart from `input_tokens`.
#[derive(Debug, Deserialize, Default)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawContent {
    Text(String),
    Items(Vec<RawItem>),
    Other(IgnoredAny),
}

#[derive(Debug, Deserialize)]
struct RawItem {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
}

/// First sight reads a transcript's usage from its start when the file is at most this big.
///
/// Why: the last window alone misses usage in a young file. Claude Code 2.1.332 writes a
/// `prompt_snapshot` attachment of about 64 KiB right after each assistant message, so a
/// transcript first seen just after its first turn had that turn's `usage` outside the window
/// (and its tokens were never counted). A message's usage is keyed by its id, so reading it again
/// replaces rather than adds. Past this size only the window's usage is counted: a session that
/// was already long when Agent Tray first saw it keeps its earlier tokens uncounted, bounding what
/// first sight reads.
pub const USAGE_BACKFILL_MAX: u64 = 8 * 1024 * 1024;

/// The marker Claude writes when the user interrupts a turn (Esc) or refuses a tool.
const INTERRUPT_MARKER: &str = "[Request interrupted by user";

/// Parses one line. An error is a line that is not a JSON object of the expected shape (truncated,
/// not UTF-8, a field of an unexpected type): the caller skips and counts it.
pub fn parse_line(bytes: &[u8]) -> Result<TranscriptLine, serde_json::Error> {
    let raw: RawLine = serde_json::from_slice(bytes)?;
    Ok(classify(raw))
}

fn classify(raw: RawLine) -> TranscriptLine {
    let at = raw.timestamp.as_deref().and_then(parse_time);
    let main_thread = raw.is_sidechain != Some(true);
    let message = raw.message.unwrap_or_default();
    let first_text = match &message.content {
        Some(RawContent::Text(t)) => Some(t.as_str()),
        Some(RawContent::Items(items)) => items
            .iter()
            .find(|i| i.kind.as_deref() == Some("text"))
            .and_then(|i| i.text.as_deref()),
        _ => None,
    };
    let kind = match raw.kind.as_deref() {
        Some("user") if main_thread => {
            let text = first_text.unwrap_or("").trim_start();
            if text.starts_with(INTERRUPT_MARKER) {
                LineKind::TurnEnd
            } else if raw.is_meta == Some(true)
                || raw.is_compact_summary == Some(true)
                || text.starts_with("<command-name>")
                || text.starts_with("<local-command-")
            {
                LineKind::Nothing
            } else {
                LineKind::Activity
            }
        }
        Some("assistant") if main_thread => LineKind::Activity,
        Some("system") => match raw.subtype.as_deref() {
            Some("turn_duration") => LineKind::TurnEnd,
            Some("api_error") if main_thread => LineKind::Activity,
            _ => LineKind::Nothing,
        },
        _ => LineKind::Nothing,
    };
    let usage = match (raw.kind.as_deref(), &message.id, &message.usage) {
        (Some("assistant"), Some(id), Some(u)) if !id.is_empty() => Some((
            id.clone(),
            TokenUsage {
                input: u.input_tokens,
                output: u.output_tokens,
                cache_read: u.cache_read_input_tokens,
                cache_write: u.cache_creation_input_tokens,
            },
        )),
        _ => None,
    };
    let context_tokens = match (raw.kind.as_deref(), &message.usage) {
        (Some("assistant"), Some(u)) if main_thread => Some(
            u.input_tokens
                .saturating_add(u.cache_read_input_tokens)
                .saturating_add(u.cache_creation_input_tokens)
                .saturating_add(u.output_tokens),
        )
        .filter(|tokens| *tokens > 0),
        _ => None,
    };
    let compact_boundary =
        raw.kind.as_deref() == Some("system") && raw.subtype.as_deref() == Some("compact_boundary");
    let prompt_id = match raw.kind.as_deref() {
        Some("user") if main_thread => raw.prompt_id.filter(|p| !p.is_empty()),
        _ => None,
    };
    let kind = if at.is_none() && kind != LineKind::Nothing {
        // Without a time it cannot be ordered against hooks; it must not move the state.
        LineKind::Nothing
    } else {
        kind
    };
    TranscriptLine {
        kind: Some(kind),
        at,
        cwd: raw.cwd.filter(|c| !c.is_empty()),
        branch: raw.git_branch.filter(|b| !b.is_empty()),
        model: message
            .model
            .filter(|m| !m.is_empty() && !m.starts_with('<')),
        usage,
        prompt_id,
        context_tokens,
        compact_boundary,
    }
}

/// The usage reports of `lines` (in file order): one delta per assistant message, keyed by its
/// id (Claude writes a message's usage on each of its content lines; the last one wins), in the
/// turn of the latest prompt before it. Pure.
pub fn usage_of(
    session_id: &str,
    lines: &[TranscriptLine],
    turn: &mut Option<String>,
) -> Vec<UsageReport> {
    let mut out: Vec<UsageReport> = Vec::new();
    for line in lines {
        if line.prompt_id.is_some() {
            turn.clone_from(&line.prompt_id);
        }
        let (Some((key, usage)), Some(at)) = (&line.usage, line.at) else {
            continue;
        };
        let report = UsageReport {
            session_id: session_id.to_string(),
            agent: Agent::Claude,
            at,
            turn_id: turn.clone(),
            model: line.model.clone(),
            kind: UsageKind::Delta { key: key.clone() },
            usage: *usage,
        };
        // A message repeated in one batch: keep its last figures, reported once.
        out.retain(|r| r.kind != report.kind);
        out.push(report);
    }
    out
}

/// What the lines read so far say of the session, carried on every observation made from them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub model: Option<String>,
    pub context_tokens: Option<u64>,
}

impl Fields {
    fn absorb(&mut self, line: &TranscriptLine) {
        if line.cwd.is_some() {
            self.cwd.clone_from(&line.cwd);
        }
        if line.branch.is_some() {
            self.branch.clone_from(&line.branch);
        }
        if line.model.is_some() {
            self.model.clone_from(&line.model);
        }
        if line.context_tokens.is_some() {
            self.context_tokens = line.context_tokens;
        }
        if line.compact_boundary {
            // Until the next turn says the new figure.
            self.context_tokens = None;
        }
    }

    /// An observation of the session carrying these fields.
    fn observation(
        &self,
        session_id: &str,
        transcript_path: &str,
        event: EventKind,
        at: DateTime<Utc>,
    ) -> Observation {
        let mut obs = Observation::new(session_id, Agent::Claude, event, at)
            .with_source(Source::Transcript)
            .with_cwd(self.cwd.clone());
        obs.branch.clone_from(&self.branch);
        obs.model.clone_from(&self.model);
        obs.context_tokens = self.context_tokens;
        obs.transcript_path = Some(transcript_path.to_string());
        obs
    }
}

/// Turns lines (in file order) into observations: runs of activity collapse into the newest one,
/// every end of turn is kept, in order. Pure.
pub fn observations_of(
    session_id: &str,
    transcript_path: &str,
    lines: &[TranscriptLine],
    fields: &mut Fields,
) -> Vec<Observation> {
    let mut out = Vec::new();
    let mut pending_activity: Option<DateTime<Utc>> = None;
    let make =
        |event, at, fields: &Fields| fields.observation(session_id, transcript_path, event, at);
    for line in lines {
        fields.absorb(line);
        match (line.kind, line.at) {
            (Some(LineKind::Activity), Some(at)) => pending_activity = Some(at),
            (Some(LineKind::TurnEnd), Some(at)) => {
                if let Some(a) = pending_activity.take() {
                    out.push(make(EventKind::TranscriptActivity, a, fields));
                }
                out.push(make(EventKind::TurnEnded, at, fields));
            }
            _ => {}
        }
    }
    if let Some(a) = pending_activity {
        out.push(make(EventKind::TranscriptActivity, a, fields));
    }
    out
}

/// Whether first sight of a transcript should show its session (see the module comment).
pub fn adopt_on_sight(
    has_live_file: bool,
    claude_writes_live_files: bool,
    age: Duration,
    ttl: Duration,
) -> bool {
    if has_live_file {
        return true;
    }
    if claude_writes_live_files {
        // No live file: its claude exited, or it is a `-p`/SDK run; growth will tell.
        return false;
    }
    age <= ttl
}

/// One followed transcript.
#[derive(Debug)]
struct Followed {
    session_id: String,
    reader: TailReader,
    mtime: Option<SystemTime>,
    len: u64,
    adopted: bool,
    fields: Fields,
    /// First sight's newest state line, shown when the session is adopted.
    last_state: Option<TranscriptLine>,
    sighted_at: DateTime<Utc>,
    /// The turn (prompt id) the next usage belongs to.
    turn: Option<String>,
    /// First sight's usage, reported when the session is adopted.
    pending_usage: Vec<UsageReport>,
}

/// The feed.
pub struct ClaudeTranscriptsFeed {
    claude_dirs: Vec<PathBuf>,
    ttl: Duration,
    live: LiveClaudeSessions,
    followed: HashMap<PathBuf, Followed>,
    stats: Arc<FeedStats>,
}

impl ClaudeTranscriptsFeed {
    pub fn new(
        claude_dirs: Vec<PathBuf>,
        ttl: Duration,
        live: LiveClaudeSessions,
        stats: Arc<FeedStats>,
    ) -> Self {
        ClaudeTranscriptsFeed {
            claude_dirs,
            ttl,
            live,
            followed: HashMap::new(),
            stats,
        }
    }

    /// Files followed now (the benchmark's memory check).
    pub fn followed_count(&self) -> usize {
        self.followed.len()
    }

    /// The config folder a transcript path belongs to, if it is `<claude>/projects/<dir>/<id>.jsonl`.
    fn claude_dir_of(&self, path: &Path) -> Option<PathBuf> {
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            return None;
        }
        let projects = path.parent()?.parent()?;
        self.claude_dirs
            .iter()
            .find(|d| d.join("projects") == projects)
            .cloned()
    }

    fn parse_lines(&self, raw: &[Vec<u8>]) -> Vec<TranscriptLine> {
        let mut lines = Vec::with_capacity(raw.len());
        for bytes in raw {
            match parse_line(bytes) {
                Ok(line) => lines.push(line),
                Err(error) => self.bad_line(&error),
            }
        }
        FeedStats::add(&self.stats.lines, raw.len() as u64);
        lines
    }

    fn bad_line(&self, error: &serde_json::Error) {
        FeedStats::add(&self.stats.bad_lines, 1);
        tracing::debug!(%error, total = FeedStats::get(&self.stats.bad_lines), "transcript_line_skipped");
    }

    /// Looks at one transcript path (which may have been removed).
    fn examine(&mut self, path: &Path, now: SystemTime, out: &mut Vec<FeedOutput>) {
        let Some(claude_dir) = self.claude_dir_of(path) else {
            return;
        };
        let Ok((mut file, meta)) = crate::feeds::open_regular_file(path) else {
            // Gone, or not a regular file (a FIFO must never be opened for a blocking read).
            self.followed.remove(path);
            return;
        };
        let mtime = meta.modified().ok();
        let Some(f) = self.followed.get_mut(path) else {
            self.discover(path, claude_dir, &mut file, &meta, now, out);
            return;
        };
        if f.mtime == mtime && f.len == meta.len() {
            return;
        }
        f.mtime = mtime;
        f.len = meta.len();
        let mut raw: Vec<Vec<u8>> = Vec::new();
        let result = f
            .reader
            .read_appended(&mut file, &meta, &mut |line| raw.push(line.to_vec()));
        let appended = match result {
            Ok(a) => a,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "transcript_unreadable");
                return;
            }
        };
        FeedStats::add(&self.stats.bytes_read, appended.bytes_read);
        FeedStats::add(&self.stats.bad_lines, appended.oversized);
        if appended.oversized > 0 {
            tracing::debug!(path = %path.display(), count = appended.oversized, "transcript_oversized_line_skipped");
        }
        if appended.reset {
            // Rewritten or replaced: start over from its last window, keeping what we decided.
            let adopted = f.adopted;
            self.followed.remove(path);
            self.discover(path, claude_dir, &mut file, &meta, now, out);
            if adopted {
                self.adopt(path, out);
            }
            return;
        }
        let lines = self.parse_lines(&raw);
        let Some(f) = self.followed.get_mut(path) else {
            return;
        };
        let path_text = path.to_string_lossy();
        let obs = observations_of(&f.session_id, &path_text, &lines, &mut f.fields);
        let mut usage = Vec::new();
        if !obs.is_empty() && !f.adopted {
            // It grew while we watched: a live writer. What first sight counted is its too.
            f.adopted = true;
            usage = std::mem::take(&mut f.pending_usage);
            tracing::debug!(session_id = %f.session_id, "transcript_adopted_on_growth");
        }
        usage.extend(usage_of(&f.session_id, &lines, &mut f.turn));
        if f.adopted {
            out.extend(obs.into_iter().map(FeedOutput::observe));
            // After the observations: the registry takes usage only for a session it knows.
            out.extend(usage.into_iter().map(|u| FeedOutput::Usage(Box::new(u))));
        }
    }

    /// First sight: read the last window for the newest fields and state; adopt if it may be shown.
    fn discover(
        &mut self,
        path: &Path,
        claude_dir: PathBuf,
        file: &mut std::fs::File,
        meta: &std::fs::Metadata,
        now: SystemTime,
        out: &mut Vec<FeedOutput>,
    ) {
        let Some(session_id) = path.file_stem().and_then(|s| s.to_str()).map(String::from) else {
            return;
        };
        let has_live_file = self.live.contains(&session_id);
        let age = age_of(meta, now);
        if age > self.ttl && !has_live_file {
            return;
        }
        let mut window = tail::DISCOVERY_WINDOW;
        let (lines, resume_at, identity) = loop {
            let last = match tail::read_last_lines(file, meta, window) {
                Ok(last) => last,
                Err(error) => {
                    tracing::debug!(path = %path.display(), %error, "transcript_unreadable");
                    return;
                }
            };
            FeedStats::add(&self.stats.bytes_read, last.bytes_read);
            let lines = self.parse_lines(&last.lines);
            let found = lines.iter().any(|l| l.at.is_some());
            if found || window >= tail::MAX_DISCOVERY_WINDOW || window >= meta.len() {
                break (lines, last.resume_at, last.identity);
            }
            window *= 4;
        };
        let mut fields = Fields::default();
        let mut last_state = None;
        for line in &lines {
            fields.absorb(line);
            if matches!(line.kind, Some(LineKind::Activity | LineKind::TurnEnd)) {
                last_state = Some(line.clone());
            }
        }
        let writes_live_files = self.live.writes_sessions_files(&claude_dir);
        let mut turn = None;
        let pending_usage = match self.usage_lines_before(file, meta, resume_at) {
            Some(all) => {
                // Claude follows each message with a prompt snapshot of tens of KiB: the last
                // message, and its context figure, is often outside the last window.
                if fields.context_tokens.is_none() {
                    fields.context_tokens = all
                        .iter()
                        .rev()
                        .take_while(|l| !l.compact_boundary)
                        .find_map(|l| l.context_tokens);
                }
                usage_of(&session_id, &all, &mut turn)
            }
            None => usage_of(&session_id, &lines, &mut turn),
        };
        let followed = Followed {
            turn,
            pending_usage,
            session_id,
            reader: TailReader::at(resume_at, Some(identity)),
            mtime: meta.modified().ok(),
            len: meta.len(),
            adopted: false,
            fields,
            last_state,
            sighted_at: mtime_of(meta),
        };
        self.followed.insert(path.to_path_buf(), followed);
        if adopt_on_sight(has_live_file, writes_live_files, age, self.ttl) {
            self.adopt(path, out);
        }
    }

    /// First sight's usage from the whole file up to `end`, for a file of at most
    /// [`USAGE_BACKFILL_MAX`] bytes: only the lines that can carry usage or a turn's id are parsed.
    /// `None` for a bigger file (its last window's usage is all that is counted) or a read error.
    fn usage_lines_before(
        &self,
        file: &mut std::fs::File,
        meta: &std::fs::Metadata,
        end: u64,
    ) -> Option<Vec<TranscriptLine>> {
        use std::io::{Read, Seek, SeekFrom};
        if meta.len() > USAGE_BACKFILL_MAX {
            return None;
        }
        let mut buf = Vec::with_capacity(usize::try_from(end).ok()?);
        file.seek(SeekFrom::Start(0)).ok()?;
        file.take(end).read_to_end(&mut buf).ok()?;
        FeedStats::add(&self.stats.bytes_read, buf.len() as u64);
        let contains = |line: &[u8], needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        let raw: Vec<Vec<u8>> = buf
            .split(|b| *b == b'\n')
            .filter(|l| l.len() <= tail::MAX_LINE)
            .filter(|l| contains(l, b"\"usage\"") || contains(l, b"\"promptId\""))
            .map(<[u8]>::to_vec)
            .collect();
        Some(self.parse_lines(&raw))
    }

    /// Shows a followed transcript's session: its fields and its newest known state.
    fn adopt(&mut self, path: &Path, out: &mut Vec<FeedOutput>) {
        let Some(f) = self.followed.get_mut(path) else {
            return;
        };
        f.adopted = true;
        let path_text = path.to_string_lossy();
        let state: Vec<TranscriptLine> = f.last_state.take().into_iter().collect();
        let mut obs = observations_of(&f.session_id, &path_text, &state, &mut f.fields);
        if obs.is_empty() {
            obs.push(f.fields.observation(
                &f.session_id,
                &path_text,
                EventKind::Sighting,
                f.sighted_at,
            ));
        }
        out.extend(obs.into_iter().map(FeedOutput::observe));
        out.extend(
            std::mem::take(&mut f.pending_usage)
                .into_iter()
                .map(|u| FeedOutput::Usage(Box::new(u))),
        );
    }

    /// Looks at one project folder. Allocates nothing per old file beyond its name: a rescan of
    /// thousands of transcripts must not churn the heap (it runs every few seconds for days).
    fn scan_project_dir(&mut self, dir: &Path, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return out;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if !meta.file_type().is_file() {
                continue;
            }
            // An old file is left alone without opening it, unless a live session owns it.
            if age_of(&meta, now) > self.ttl && !self.live.contains(id) {
                continue;
            }
            let path = entry.path();
            if let Some(f) = self.followed.get(&path) {
                // An unchanged followed file needs no open.
                if f.mtime == meta.modified().ok() && f.len == meta.len() {
                    continue;
                }
            }
            self.examine(&path, now, &mut out);
        }
        out
    }
}

impl Feed for ClaudeTranscriptsFeed {
    fn name(&self) -> &'static str {
        "claude_transcripts"
    }

    fn stats(&self) -> Arc<FeedStats> {
        self.stats.clone()
    }

    fn watch_roots(&self) -> Vec<WatchRoot> {
        self.claude_dirs
            .iter()
            .map(|d| WatchRoot::new(d.join("projects"), WatchDepth::FlatAndChildren))
            .collect()
    }

    fn on_paths(&mut self, paths: &HashSet<PathBuf>, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        for path in paths {
            if self.claude_dir_of(path).is_some() {
                self.examine(path, now, &mut out);
                continue;
            }
            // A project folder that appeared: its files may predate our watch on it.
            let is_project_dir = path
                .parent()
                .is_some_and(|p| self.claude_dirs.iter().any(|d| d.join("projects") == p))
                && path.is_dir();
            if is_project_dir {
                out.extend(self.scan_project_dir(path, now));
            }
        }
        out
    }

    fn rescan(&mut self, now: SystemTime) -> Vec<FeedOutput> {
        let mut out = Vec::new();
        for claude_dir in self.claude_dirs.clone() {
            let Ok(projects) = std::fs::read_dir(claude_dir.join("projects")) else {
                continue;
            };
            for project in projects.flatten() {
                if project.file_type().is_ok_and(|t| t.is_dir()) {
                    out.extend(self.scan_project_dir(&project.path(), now));
                }
            }
        }
        // Forget files that are gone, or quiet for the TTL with no live session behind them.
        let ttl = self.ttl;
        let live = self.live.clone();
        self.followed.retain(|path, f| {
            let quiet = f
                .mtime
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age > ttl);
            (!quiet || live.contains(&f.session_id)) && path.exists()
        });
        self.stats.followed.store(
            self.followed.len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        out
    }

    /// A followed transcript not adopted yet waits for its live-session file (which another
    /// feed reads): only then is there something to tick for.
    fn wants_tick(&self) -> bool {
        self.followed.values().any(|f| !f.adopted)
    }

    /// Adopts transcripts whose live-session file has appeared since first sight.
    fn tick(&mut self, _now: SystemTime) -> Vec<FeedOutput> {
        let waiting: Vec<PathBuf> = self
            .followed
            .iter()
            .filter(|(_, f)| !f.adopted && self.live.contains(&f.session_id))
            .map(|(p, _)| p.clone())
            .collect();
        let mut out = Vec::new();
        for path in waiting {
            self.adopt(&path, &mut out);
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fixture_lines() -> Vec<Vec<u8>> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude/real-2.1.328/transcript-excerpt.jsonl");
        std::fs::read(path)
            .unwrap()
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }

    fn kinds(lines: &[Vec<u8>]) -> Vec<LineKind> {
        lines
            .iter()
            .map(|l| parse_line(l).unwrap().kind.unwrap())
            .collect()
    }

    #[test]
    fn the_recorded_turn_carries_its_last_main_thread_context_and_no_window() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude/real-2.1.332/transcript-excerpt.jsonl");
        let lines: Vec<TranscriptLine> = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| parse_line(l.as_bytes()).unwrap())
            .collect();
        let mut fields = Fields::default();
        let obs = observations_of("s1", "/t.jsonl", &lines, &mut fields);
        let last = obs.last().unwrap();
        // The mock's usage on its last message: 100 in, 10 out, nothing cached.
        assert_eq!(last.context_tokens, Some(110));
        assert_eq!(
            last.context_window, None,
            "Claude's transcript names no window"
        );
        assert_eq!(fields.context_tokens, Some(110), "kept for the next lines");
        // A subagent's message is its own context, not the session's.
        let side = br#"{"isSidechain":true,"type":"assistant","timestamp":"2026-12-01T06:07:07.341Z","message":{"id":"m9","role":"assistant","content":[],"usage":{"input_tokens":5000,"cache_read_input_tokens":90000,"cache_creation_input_tokens":0,"output_tokens":9}}}"#;
        assert_eq!(parse_line(side).unwrap().context_tokens, None);
        let main = br#"{"isSidechain":false,"type":"assistant","timestamp":"2026-12-01T06:07:07.341Z","message":{"id":"m9","role":"assistant","content":[],"usage":{"input_tokens":5,"cache_read_input_tokens":90000,"cache_creation_input_tokens":2000,"output_tokens":9}}}"#;
        assert_eq!(parse_line(main).unwrap().context_tokens, Some(92_014));
    }

    #[test]
    fn a_recorded_compact_drops_the_context_figure_and_its_summary_is_no_activity() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude/real-2.1.332/compact-excerpt.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<TranscriptLine> = text
            .lines()
            .map(|l| parse_line(l.as_bytes()).unwrap())
            .collect();
        let boundary = lines.iter().position(|l| l.compact_boundary).unwrap();
        // The turn before it: 150 000 read, 10 written.
        let before = &lines[..boundary];
        let mut fields = Fields::default();
        let obs = observations_of("s1", "/t.jsonl", before, &mut fields);
        assert_eq!(obs.last().unwrap().context_tokens, Some(150_010));
        // Read in one batch with the compact, nothing carries the old figure on.
        let mut fields = Fields::default();
        let obs = observations_of("s1", "/t.jsonl", &lines, &mut fields);
        assert_eq!(fields.context_tokens, None);
        assert!(
            obs.iter()
                .all(|o| o.at < lines[boundary].at.unwrap() || o.context_tokens.is_none()),
            "{obs:?}"
        );
        // The summary Claude writes in place of the conversation is not the user prompting.
        let summary = text
            .lines()
            .position(|l| l.contains("\"isCompactSummary\":true"))
            .unwrap();
        assert_eq!(lines[summary].kind, Some(LineKind::Nothing));
        assert!(
            lines[boundary..]
                .iter()
                .all(|l| l.kind != Some(LineKind::Activity)),
            "nothing after the boundary is activity: {:?}",
            &lines[boundary..]
        );
    }

    #[test]
    fn the_recorded_turn_reports_each_messages_usage_once_in_its_prompts_turn() {
        let lines: Vec<TranscriptLine> = fixture_lines()
            .iter()
            .map(|l| parse_line(l).unwrap())
            .collect();
        let mut turn = None;
        let usage = usage_of("s1", &lines, &mut turn);
        let keys: Vec<_> = usage.iter().map(|u| u.kind.clone()).collect();
        assert_eq!(
            keys,
            [
                UsageKind::Delta {
                    key: "msg_0".into()
                },
                UsageKind::Delta {
                    key: "msg_1".into()
                }
            ]
        );
        assert_eq!(usage[0].usage.input, 5);
        assert_eq!(usage[0].usage.output, 5);
        assert_eq!(usage[1].usage.output, 1);
        assert_eq!(usage[0].model.as_deref(), Some("claude-opus-5-5"));
        assert!(usage[0].turn_id.is_some(), "the prompt's promptId");
        // Cache reads and writes are taken apart, and a message's later line replaces its figures.
        let line = |out: u64| {
            format!(
                r#"{{"type":"assistant","timestamp":"2026-11-29T19:01:22.981Z","message":{{"id":"m9","model":"claude-sonnet-4-5","usage":{{"input_tokens":3,"cache_creation_input_tokens":2000,"cache_read_input_tokens":9000,"output_tokens":{out}}}}}}}"#
            )
        };
        let two = [
            parse_line(line(1).as_bytes()).unwrap(),
            parse_line(line(70).as_bytes()).unwrap(),
        ];
        let usage = usage_of("s1", &two, &mut turn);
        assert_eq!(usage.len(), 1);
        assert_eq!(
            usage[0].usage,
            TokenUsage {
                input: 3,
                output: 70,
                cache_read: 9000,
                cache_write: 2000
            }
        );
    }

    #[test]
    fn the_recorded_turn_reads_as_activity_then_one_end_of_turn() {
        use LineKind::*;
        // prompt, tool call, tool result, answer, stop-hook summary, turn_duration, and the
        // bookkeeping lines around them that must never count as activity.
        let lines = fixture_lines();
        assert_eq!(
            kinds(&lines),
            vec![
                Nothing, Nothing, Activity, Activity, Nothing, Nothing, Nothing, Activity,
                Activity, Nothing, Nothing, Nothing, Nothing, TurnEnd, Nothing
            ]
        );
        let assistant = parse_line(&lines[3]).unwrap();
        assert_eq!(assistant.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(assistant.cwd.as_deref(), Some("/home/dev/proj"));
        assert_eq!(assistant.branch.as_deref(), Some("HEAD"));
    }

    #[test]
    fn the_recorded_turn_becomes_one_activity_and_one_turn_end_stamped_by_the_lines() {
        let parsed: Vec<TranscriptLine> = fixture_lines()
            .iter()
            .map(|l| parse_line(l).unwrap())
            .collect();
        let mut fields = Default::default();
        let obs = observations_of("s", "/p/s.jsonl", &parsed, &mut fields);
        let events: Vec<EventKind> = obs.iter().map(|o| o.event).collect();
        assert_eq!(
            events,
            vec![EventKind::TranscriptActivity, EventKind::TurnEnded]
        );
        assert_eq!(
            obs[0].at,
            parse_time("2026-11-29T19:01:34.588Z").unwrap(),
            "the newest activity line's own time"
        );
        assert_eq!(obs[1].at, parse_time("2026-11-29T19:01:34.649Z").unwrap());
        assert_eq!(obs[1].model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(obs[1].source, Source::Transcript);
        assert_eq!(obs[1].transcript_path.as_deref(), Some("/p/s.jsonl"));
    }

    #[test]
    fn an_interrupt_marker_ends_the_turn_in_either_content_shape() {
        // Esc fires no Stop hook; this line is the only trace of it.
        let text = br#"{"type":"user","message":{"role":"user","content":"[Request interrupted by user]"},"timestamp":"2026-11-29T19:01:22.793Z"}"#;
        let items = br#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"timestamp":"2026-11-29T19:01:22.793Z"}"#;
        assert_eq!(parse_line(text).unwrap().kind, Some(LineKind::TurnEnd));
        assert_eq!(parse_line(items).unwrap().kind, Some(LineKind::TurnEnd));
    }

    #[test]
    fn slash_command_echoes_meta_lines_and_subagent_lines_are_not_activity() {
        // Typed at an idle prompt: they must not flip the session to working.
        let cmd = br#"{"type":"user","message":{"content":"<command-name>/model</command-name>"},"timestamp":"2026-11-29T19:01:22.793Z"}"#;
        let meta = br#"{"type":"user","isMeta":true,"message":{"content":"x"},"timestamp":"2026-11-29T19:01:22.793Z"}"#;
        let side = br#"{"type":"assistant","isSidechain":true,"message":{"content":[]},"timestamp":"2026-11-29T19:01:22.793Z"}"#;
        let no_time = br#"{"type":"assistant","message":{"content":[]}}"#;
        for line in [&cmd[..], meta, side, no_time] {
            assert_eq!(parse_line(line).unwrap().kind, Some(LineKind::Nothing));
        }
    }

    #[test]
    fn broken_lines_are_errors_and_unknown_types_are_nothing() {
        assert!(parse_line(br#"{"type":"assistant","message":{"mod"#).is_err());
        assert!(parse_line(b"{\"type\":\"user\",\"cwd\":\"\xff\xfe\"}").is_err());
        assert!(parse_line(b"[1,2]").is_err());
        let unknown =
            br#"{"type":"hologram","timestamp":"2026-11-29T19:01:22.793Z","x":{"y":[1]}}"#;
        assert_eq!(parse_line(unknown).unwrap().kind, Some(LineKind::Nothing));
    }

    #[test]
    fn first_sight_adopts_a_live_session_and_waits_for_growth_without_one() {
        let ttl = Duration::from_secs(300);
        let minute = Duration::from_secs(60);
        assert!(adopt_on_sight(true, true, minute, ttl));
        // This Claude writes live-session files and there is none: exited, or a `-p` run.
        assert!(!adopt_on_sight(false, true, minute, ttl));
        // An older Claude with no sessions folder: recency is all there is.
        assert!(adopt_on_sight(false, false, minute, ttl));
        assert!(!adopt_on_sight(false, false, ttl * 2, ttl));
    }

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn append(path: &Path, bytes: &[u8]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(bytes).unwrap();
    }

    fn events(out: &[FeedOutput]) -> Vec<EventKind> {
        out.iter()
            .filter_map(|o| match o {
                FeedOutput::Observe(o) => Some(o.event),
                _ => None,
            })
            .collect()
    }

    const PROMPT: &str = r#"{"type":"user","message":{"role":"user","content":"hi"},"timestamp":"2026-11-29T19:01:22.793Z","cwd":"/w","gitBranch":"main","sessionId":"s1"}"#;
    const END: &str = r#"{"type":"system","subtype":"turn_duration","timestamp":"2026-11-29T19:01:34.649Z","cwd":"/w"}"#;

    #[test]
    fn a_transcript_full_of_bad_lines_still_yields_its_good_ones_and_counts_the_rest() {
        // Truncated JSON, a 5 MB line, an unknown type, bytes that are not UTF-8.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("projects/p/s1.jsonl");
        write(&path, format!("{PROMPT}\n").as_bytes());
        let stats = Arc::new(FeedStats::default());
        let mut feed = ClaudeTranscriptsFeed::new(
            vec![dir.path().to_path_buf()],
            Duration::from_secs(300),
            LiveClaudeSessions::default(),
            stats.clone(),
        );
        let out = feed.rescan(SystemTime::now());
        assert_eq!(events(&out), vec![EventKind::TranscriptActivity]);

        let mut junk = Vec::new();
        junk.extend_from_slice(b"{\"type\":\"assistant\",\"mess\n");
        junk.extend_from_slice(&vec![b'x'; 5 * 1024 * 1024]);
        junk.push(b'\n');
        junk.extend_from_slice(b"{\"type\":\"hologram\",\"timestamp\":\"2026-11-29T19:01:30Z\"}\n");
        junk.extend_from_slice(b"\xff\xfe\xfd not utf-8\n");
        junk.extend_from_slice(END.as_bytes());
        junk.push(b'\n');
        append(&path, &junk);
        let out = feed.on_paths(&HashSet::from([path.clone()]), SystemTime::now());
        assert_eq!(
            events(&out),
            vec![EventKind::TurnEnded],
            "the good line after the junk is read"
        );
        assert_eq!(
            FeedStats::get(&stats.bad_lines),
            3,
            "truncated, oversized, not UTF-8"
        );
    }

    /// The 2.1.332 recording as Claude wrote it: after each assistant message, a
    /// `prompt_snapshot` attachment of about 64 KiB (left out of the fixture, rebuilt here).
    fn transcript_2_1_332() -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude/real-2.1.332/transcript-excerpt.jsonl");
        let snapshot = format!(
            r#"{{"parentUuid":"p","isSidechain":false,"attachment":{{"type":"prompt_snapshot","content":"{}"}},"type":"attachment","uuid":"u","timestamp":"2026-12-01T06:07:07.341Z","cwd":"/home/dev/proj","sessionId":"s1","version":"2.1.332"}}"#,
            "x".repeat(64_300)
        );
        let mut out = Vec::new();
        for line in std::fs::read_to_string(path).unwrap().lines() {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
            if line.contains(r#""type":"assistant""#) {
                out.extend_from_slice(snapshot.as_bytes());
                out.push(b'\n');
            }
        }
        out
    }

    fn usage_reports(out: &[FeedOutput]) -> Vec<(String, TokenUsage)> {
        out.iter()
            .filter_map(|o| match o {
                FeedOutput::Usage(u) => match &u.kind {
                    UsageKind::Delta { key } => Some((key.clone(), u.usage)),
                    UsageKind::ThreadTotal => None,
                },
                _ => None,
            })
            .collect()
    }

    #[test]
    fn first_sight_of_a_young_2_1_332_transcript_counts_usage_outside_its_last_window() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("projects/p/s1.jsonl");
        let body = transcript_2_1_332();
        write(&path, &body);
        // The recorded turn's usage is further from the end than first sight's window.
        let last = body
            .windows(b"msg_mock_2".len())
            .rposition(|w| w == b"msg_mock_2")
            .unwrap();
        assert!(body.len() - last > tail::DISCOVERY_WINDOW as usize);
        let mut feed = ClaudeTranscriptsFeed::new(
            vec![dir.path().to_path_buf()],
            Duration::from_secs(300),
            LiveClaudeSessions::default(),
            Arc::new(FeedStats::default()),
        );
        let out = feed.rescan(SystemTime::now());
        let sighted = TokenUsage {
            input: 100,
            output: 10,
            cache_read: 0,
            cache_write: 0,
        };
        assert_eq!(
            usage_reports(&out),
            vec![
                ("msg_mock_1".to_string(), sighted),
                ("msg_mock_2".to_string(), sighted)
            ],
            "each message the mock answered, once"
        );
        // And the session's context is the last message's, though it too is outside the window.
        let context: Vec<Option<u64>> = out
            .iter()
            .filter_map(|o| match o {
                FeedOutput::Observe(obs) => Some(obs.context_tokens),
                _ => None,
            })
            .collect();
        assert_eq!(context.last(), Some(&Some(110)), "{context:?}");
    }

    #[test]
    fn a_transcript_adopted_on_growth_reports_what_first_sight_counted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sessions")).unwrap();
        let path = dir.path().join("projects/p/s1.jsonl");
        write(&path, &transcript_2_1_332());
        let live = LiveClaudeSessions::default();
        super::super::sessions::ClaudeSessionsFeed::new(
            vec![dir.path().to_path_buf()],
            live.clone(),
            Arc::new(FeedStats::default()),
        )
        .rescan(SystemTime::now());
        let mut feed = ClaudeTranscriptsFeed::new(
            vec![dir.path().to_path_buf()],
            Duration::from_secs(300),
            live,
            Arc::new(FeedStats::default()),
        );
        assert!(feed.rescan(SystemTime::now()).is_empty(), "not shown yet");
        append(&path, format!("{PROMPT}\n").as_bytes());
        let out = feed.on_paths(&HashSet::from([path]), SystemTime::now());
        assert_eq!(events(&out), vec![EventKind::TranscriptActivity]);
        assert_eq!(usage_reports(&out).len(), 2, "{out:?}");
    }

    #[test]
    fn a_transcript_is_followed_from_its_end_and_only_appended_bytes_are_read() {
        // Bigger than first sight reads whole for usage: only its last window is read.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("projects/p/s1.jsonl");
        let mut body = String::new();
        while body.len() as u64 <= USAGE_BACKFILL_MAX {
            body.push_str(PROMPT);
            body.push('\n');
        }
        body.push_str(END);
        body.push('\n');
        write(&path, body.as_bytes());
        let stats = Arc::new(FeedStats::default());
        let mut feed = ClaudeTranscriptsFeed::new(
            vec![dir.path().to_path_buf()],
            Duration::from_secs(300),
            LiveClaudeSessions::default(),
            stats.clone(),
        );
        let out = feed.rescan(SystemTime::now());
        assert_eq!(
            events(&out),
            vec![EventKind::TurnEnded],
            "its newest state: idle"
        );
        assert!(FeedStats::get(&stats.bytes_read) <= tail::DISCOVERY_WINDOW);
        let before = FeedStats::get(&stats.bytes_read);
        let line = format!("{PROMPT}\n");
        append(&path, line.as_bytes());
        let out = feed.on_paths(&HashSet::from([path.clone()]), SystemTime::now());
        assert_eq!(events(&out), vec![EventKind::TranscriptActivity]);
        assert_eq!(
            FeedStats::get(&stats.bytes_read) - before,
            line.len() as u64
        );
    }

    #[test]
    fn without_a_live_session_file_a_transcript_is_shown_only_once_it_grows() {
        // This Claude writes live-session files, and none names this session.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sessions")).unwrap();
        let path = dir.path().join("projects/p/s1.jsonl");
        write(&path, format!("{PROMPT}\n{END}\n").as_bytes());
        let live = LiveClaudeSessions::default();
        let mut sessions = super::super::sessions::ClaudeSessionsFeed::new(
            vec![dir.path().to_path_buf()],
            live.clone(),
            Arc::new(FeedStats::default()),
        );
        sessions.rescan(SystemTime::now());
        let mut feed = ClaudeTranscriptsFeed::new(
            vec![dir.path().to_path_buf()],
            Duration::from_secs(300),
            live,
            Arc::new(FeedStats::default()),
        );
        assert!(
            feed.rescan(SystemTime::now()).is_empty(),
            "probably an exited claude"
        );
        assert!(feed.tick(SystemTime::now()).is_empty());
        append(&path, format!("{PROMPT}\n").as_bytes());
        let out = feed.on_paths(&HashSet::from([path]), SystemTime::now());
        assert_eq!(events(&out), vec![EventKind::TranscriptActivity]);
    }

    #[test]
    fn subagent_transcripts_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let feed = ClaudeTranscriptsFeed::new(
            vec![dir.path().to_path_buf()],
            Duration::from_secs(300),
            LiveClaudeSessions::default(),
            Arc::new(FeedStats::default()),
        );
        assert!(feed
            .claude_dir_of(&dir.path().join("projects/p/s.jsonl"))
            .is_some());
        assert!(feed
            .claude_dir_of(&dir.path().join("projects/p/s/subagents/a.jsonl"))
            .is_none());
    }
}
