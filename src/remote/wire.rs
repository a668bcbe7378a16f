//! A remote's `watch --json` lines, parsed into typed sessions with the socket's limits.
//!
//! What comes back over SSH is another machine's output, so it is treated like a request on the
//! control socket: each line is bounded ([`MAX_REMOTE_LINE`]); each text field is cut to its
//! [`crate::model::FieldLimit`] while it is parsed (never copied whole); a session id must pass
//! [`crate::model::validate_session_id`]; a session this version cannot read (an agent it does
//! not know) is skipped alone, not the whole line; unknown fields are ignored (a newer remote).
//! A session the remote itself mirrors from a further remote (its `host` set) is dropped: one hop
//! only, so two machines that list each other cannot loop.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::model::bounded;
use crate::model::{validate_session_id, Agent, EndReason, Session, SessionState};

/// The longest line read from a remote: a snapshot of the remote's 512 live sessions plus its
/// ended ones, each with long paths, fits many times over.
pub const MAX_REMOTE_LINE: usize = 16 << 20;
/// At most this many sessions are taken from one remote (the registry's own live cap).
pub const MAX_REMOTE_SESSIONS: usize = crate::registry::MAX_LIVE_SESSIONS;

/// One session as a remote prints it; every text field bounded.
#[derive(Debug, Deserialize)]
struct WireSession {
    session_id: String,
    agent: Agent,
    state: SessionState,
    #[serde(default, deserialize_with = "bounded::path")]
    cwd: Option<String>,
    #[serde(default, deserialize_with = "bounded::name")]
    repo: Option<String>,
    #[serde(default, deserialize_with = "bounded::name")]
    branch: Option<String>,
    #[serde(default, deserialize_with = "bounded::name")]
    model: Option<String>,
    #[serde(default, deserialize_with = "bounded::path")]
    transcript_path: Option<String>,
    #[serde(default)]
    pid: Option<u32>,
    #[serde(default, deserialize_with = "bounded::name")]
    pid_start: Option<String>,
    #[serde(default)]
    prompted: bool,
    #[serde(default)]
    streamed: bool,
    started_at: DateTime<Utc>,
    last_seen: DateTime<Utc>,
    state_since: DateTime<Utc>,
    #[serde(default, deserialize_with = "bounded::name")]
    last_event: Option<String>,
    #[serde(default, deserialize_with = "bounded::name")]
    last_tool: Option<String>,
    #[serde(default, deserialize_with = "bounded::text")]
    error: Option<String>,
    #[serde(default, deserialize_with = "bounded::text")]
    waiting_for: Option<String>,
    #[serde(default)]
    end_reason: Option<EndReason>,
    #[serde(default, deserialize_with = "bounded::text")]
    title: Option<String>,
    #[serde(default, deserialize_with = "bounded::name")]
    tmux: Option<String>,
    #[serde(default, deserialize_with = "bounded::name")]
    tty: Option<String>,
    #[serde(default)]
    subagents: u32,
    #[serde(default)]
    turn_started_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "bounded::name")]
    host: Option<String>,
    #[serde(default)]
    headless: bool,
    #[serde(default)]
    context_tokens: Option<u64>,
    #[serde(default)]
    context_window: Option<u64>,
    #[serde(default)]
    compacted_at: Option<DateTime<Utc>>,
    /// What the remote's session waits on; at most [`MAX_REMOTE_PENDING`], the rest skipped
    /// unbuilt.
    #[serde(default, deserialize_with = "capped_pending")]
    pending: Vec<WirePending>,
}

/// At most this many of a remote session's permission requests are taken (an agent waits on
/// one at a time; OpenCode on a few).
pub const MAX_REMOTE_PENDING: usize = 4;

/// A remote's permission request, every text field bounded. Shown with its host, answered on
/// that machine: its whole input is not carried (the command, file and address are, cut where
/// long, with the cut mark).
#[derive(Debug, Deserialize)]
struct WirePending {
    #[serde(deserialize_with = "required_name")]
    id: String,
    agent: Agent,
    #[serde(default, deserialize_with = "bounded::name")]
    tool: Option<String>,
    #[serde(default, deserialize_with = "bounded::text")]
    command: Option<String>,
    #[serde(default, deserialize_with = "bounded::path")]
    file_path: Option<String>,
    #[serde(default)]
    change_bytes: Option<u64>,
    #[serde(default, deserialize_with = "bounded::text")]
    url: Option<String>,
    #[serde(default, deserialize_with = "bounded::text")]
    description: Option<String>,
    #[serde(default, deserialize_with = "bounded::path")]
    cwd: Option<String>,
    asked_at: DateTime<Utc>,
    answer_by: DateTime<Utc>,
    /// `"question"` for a question (listed here, answered on that machine); a permission
    /// otherwise, as from a remote older than questions.
    #[serde(default, deserialize_with = "bounded::name")]
    kind: Option<String>,
}

fn required_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    bounded::name(d).map(Option::unwrap_or_default)
}

/// A remote session's requests: the first [`MAX_REMOTE_PENDING`] readable ones ([`capped_list`]).
fn capped_pending<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<WirePending>, D::Error> {
    capped_list(d, MAX_REMOTE_PENDING)
}

/// An element of a remote's list, or something in its place this version cannot read (skipped
/// alone).
#[derive(Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one at a time, while a line is read
enum Readable<T> {
    Item(T),
    Other(serde::de::IgnoredAny),
}

/// Reads a list, keeping the first `cap` readable elements and skipping every other element
/// without building it: a line of seven million zeros costs a scan of its bytes, not gigabytes
/// of parsed values. `null` is an empty list.
fn capped_list<'de, D, T>(d: D, cap: usize) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Capped<T>(usize, std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Capped<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while out.len() < self.0 {
                match seq.next_element::<Readable<T>>()? {
                    Some(Readable::Item(item)) => out.push(item),
                    Some(Readable::Other(_)) => {}
                    None => return Ok(out),
                }
            }
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(out)
        }
    }
    d.deserialize_any(Capped(cap, std::marker::PhantomData))
}

impl WirePending {
    fn into_view(self, session_id: &str, remote: &str) -> Option<crate::answering::PendingView> {
        use crate::answering::{Accepts, AskDetail, PendingView, RequestId, ShownRequest};
        if !RequestId::looks_like(&self.id) {
            return None;
        }
        let detail = AskDetail {
            tool: self.tool.unwrap_or_default(),
            command: self.command,
            file_path: self.file_path,
            change_bytes: self.change_bytes,
            url: self.url,
            description: self.description,
            cwd: self.cwd,
            input: String::new(),
            for_session: None,
            // A remote's questions are listed, not carried: they are answered on that machine.
            questions: None,
        };
        let kind = match self.kind.as_deref() {
            Some("question") => crate::answering::RequestKind::Question,
            _ => crate::answering::RequestKind::Permission,
        };
        Some(PendingView {
            id: RequestId::parse(&self.id),
            session_id: session_id.to_string(),
            host: Some(remote.to_string()),
            agent: self.agent,
            kind,
            // Bounded on the link (maybe cut): never whole for a one-line place.
            shown: ShownRequest::of(&detail, false),
            detail,
            asked_at: self.asked_at,
            answer_by: self.answer_by,
            // Answered on that machine, not from here.
            accepts: Accepts {
                allow_for_session: false,
                deny_message: false,
            },
        })
    }
}

impl WireSession {
    /// The session as this machine holds it, or `None` when it must not be taken.
    fn into_session(self, remote: &str) -> Option<Session> {
        if self.host.is_some() || validate_session_id(&self.session_id).is_err() {
            return None;
        }
        let mut session = Session::new(self.session_id, self.agent, self.state, self.started_at);
        session.cwd = self.cwd;
        session.repo = self.repo;
        session.branch = self.branch;
        session.model = self.model;
        session.transcript_path = self.transcript_path;
        session.pid = self.pid;
        session.pid_start = self.pid_start;
        session.prompted = self.prompted;
        session.streamed = self.streamed;
        session.last_seen = self.last_seen;
        session.state_since = self.state_since;
        session.last_event = self.last_event;
        session.last_tool = self.last_tool;
        session.error = self.error;
        session.waiting_for = self.waiting_for;
        session.end_reason = self.end_reason;
        session.title = self.title;
        session.tmux = self.tmux;
        session.tty = self.tty;
        session.subagents = self.subagents;
        session.turn_started_at = self.turn_started_at;
        session.headless = self.headless;
        session.context_tokens = self.context_tokens;
        session.context_window = self.context_window.filter(|w| *w > 0);
        session.compacted_at = self.compacted_at;
        let id = session.session_id.clone();
        session.pending = self
            .pending
            .into_iter()
            .filter_map(|p| p.into_view(&id, remote))
            .collect();
        session.host = Some(remote.to_string());
        Some(session)
    }
}

/// A session, or something in its place this version cannot read (skipped alone).
type MaybeSession = Readable<WireSession>;

fn sessions_of(list: Vec<WireSession>, remote: &str) -> Vec<Session> {
    list.into_iter()
        .filter_map(|s| s.into_session(remote))
        .take(MAX_REMOTE_SESSIONS)
        .collect()
}

/// A remote's sessions: the first [`MAX_REMOTE_SESSIONS`] readable ones ([`capped_list`]).
fn capped_sessions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<WireSession>, D::Error> {
    capped_list(d, MAX_REMOTE_SESSIONS)
}

/// Only the line's `kind`; every other field is skipped unbuilt. The line is then read again as
/// that kind's struct: two plain passes, because an internally tagged enum first copies the whole
/// line into a tree of values (what took the engine to 3.4 GB on one hostile line).
#[derive(Deserialize)]
struct KindOnly {
    #[serde(deserialize_with = "required_name")]
    kind: String,
}

#[derive(Deserialize)]
struct SnapshotLine {
    #[serde(deserialize_with = "capped_sessions")]
    sessions: Vec<WireSession>,
    #[serde(default)]
    protocol: Option<u32>,
    #[serde(default, deserialize_with = "bounded::name")]
    version: Option<String>,
    #[serde(default, deserialize_with = "capped_sessions")]
    ended: Vec<WireSession>,
}

#[derive(Deserialize)]
struct ResyncLine {
    #[serde(deserialize_with = "capped_sessions")]
    sessions: Vec<WireSession>,
}

#[derive(Deserialize)]
struct OneSessionLine {
    session: MaybeSession,
}

#[derive(Deserialize)]
struct RemovedLine {
    #[serde(deserialize_with = "required_name")]
    session_id: String,
    #[serde(default)]
    host: Option<serde::de::IgnoredAny>,
}

/// One line of a remote's stream, typed.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per line, applied and dropped
pub enum RemoteLine {
    /// The first line: what the remote holds now. `protocol` is `None` from a version before
    /// remotes.
    Snapshot {
        protocol: Option<u32>,
        version: Option<String>,
        live: Vec<Session>,
        ended: Vec<Session>,
    },
    /// The remote's whole list again (this link fell behind there).
    Resync(Vec<Session>),
    /// A session appeared or changed.
    Upsert(Session),
    /// A session left the remote's list (after its ended linger).
    Removed(String),
    /// The remote's plan windows, its whole list (`--protocol` streams only; see
    /// [`crate::plan_limits`]).
    Limits(Vec<crate::plan_limits::PlanWindow>),
    /// Valid, but nothing to take (a further remote's session, an unreadable session).
    Nothing,
}

/// One plan window as a remote prints it; text bounded, figures checked.
#[derive(Debug, Deserialize)]
struct WireWindow {
    agent: Agent,
    #[serde(default, deserialize_with = "bounded::name")]
    account: Option<String>,
    #[serde(default, deserialize_with = "bounded::name")]
    window: Option<String>,
    #[serde(default)]
    window_minutes: Option<u64>,
    used_percent: f64,
    #[serde(default)]
    resets_at: Option<DateTime<Utc>>,
    seen_at: DateTime<Utc>,
    #[serde(default)]
    session_id: String,
    /// A further remote's window: not taken (one hop only).
    #[serde(default)]
    host: Option<serde::de::IgnoredAny>,
}

impl WireWindow {
    fn into_window(self) -> Option<crate::plan_limits::PlanWindow> {
        if self.host.is_some() || !self.used_percent.is_finite() {
            return None;
        }
        Some(crate::plan_limits::PlanWindow {
            agent: self.agent,
            host: None,
            account: self.account.unwrap_or_default(),
            window: self.window?,
            window_minutes: self.window_minutes,
            used_percent: self.used_percent.clamp(0.0, 100.0),
            resets_at: self.resets_at,
            seen_at: self.seen_at,
            session_id: if validate_session_id(&self.session_id).is_ok() {
                self.session_id
            } else {
                String::new()
            },
        })
    }
}

#[derive(Deserialize)]
struct LimitsLine {
    #[serde(deserialize_with = "capped_windows")]
    limits: Vec<WireWindow>,
}

fn capped_windows<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<WireWindow>, D::Error> {
    capped_list(d, crate::plan_limits::MAX_REMOTE_WINDOWS)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("not a line of the watch protocol: {0}")]
    Malformed(String),
}

/// Parses one line from the remote named `remote` (its sessions get `host: remote`).
pub fn parse_line(line: &[u8], remote: &str) -> Result<RemoteLine, WireError> {
    fn read<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Result<T, WireError> {
        serde_json::from_slice(line).map_err(|e| {
            let mut why = e.to_string();
            why.truncate(200);
            WireError::Malformed(why)
        })
    }
    let KindOnly { kind } = read(line)?;
    Ok(match kind.as_str() {
        "snapshot" => {
            let SnapshotLine {
                sessions,
                protocol,
                version,
                ended,
            } = read(line)?;
            RemoteLine::Snapshot {
                protocol,
                version,
                live: sessions_of(sessions, remote),
                ended: sessions_of(ended, remote),
            }
        }
        "resync" => {
            let ResyncLine { sessions } = read(line)?;
            RemoteLine::Resync(sessions_of(sessions, remote))
        }
        "added" | "changed" => {
            let OneSessionLine { session } = read(line)?;
            let one = match session {
                Readable::Item(s) => s.into_session(remote),
                Readable::Other(_) => None,
            };
            match one {
                Some(session) => RemoteLine::Upsert(session),
                None => RemoteLine::Nothing,
            }
        }
        "limits" => {
            let LimitsLine { limits } = read(line)?;
            RemoteLine::Limits(
                limits
                    .into_iter()
                    .filter_map(WireWindow::into_window)
                    .collect(),
            )
        }
        "removed" => {
            let RemovedLine { session_id, host } = read(line)?;
            if host.is_some() || validate_session_id(&session_id).is_err() {
                RemoteLine::Nothing
            } else {
                RemoteLine::Removed(session_id)
            }
        }
        other => {
            let shown: String = other.chars().take(40).collect();
            return Err(WireError::Malformed(format!("unknown kind {shown:?}")));
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{FieldLimit, CUT_MARK};

    fn session_json(id: &str) -> serde_json::Value {
        serde_json::json!({
            "session_id": id, "agent": "claude", "state": "working", "cwd": "/srv/api",
            "repo": null, "branch": "main", "model": null, "transcript_path": null, "pid": 7,
            "pid_start": null, "prompted": true, "streamed": false,
            "started_at": "2026-11-30T10:00:00Z", "last_seen": "2026-11-30T10:05:00Z",
            "state_since": "2026-11-30T10:04:00Z", "last_event": "UserPromptSubmit",
            "last_tool": null, "error": null, "waiting_for": null, "end_reason": null,
            "title": null, "tmux": "work:@1.%2", "tty": null, "subagents": 0,
            "turn_started_at": null, "host": null
        })
    }

    #[test]
    fn a_snapshot_keeps_the_remote_states_and_times_and_names_the_host() {
        let line = serde_json::json!({
            "kind": "snapshot", "protocol": 1, "version": "9.9.9",
            "sessions": [session_json("s1")], "ended": [], "future_field": {"x": 1}
        })
        .to_string();
        let RemoteLine::Snapshot {
            protocol,
            live,
            version,
            ..
        } = parse_line(line.as_bytes(), "devbox").unwrap()
        else {
            panic!("a snapshot")
        };
        assert_eq!(protocol, Some(1));
        assert_eq!(version.as_deref(), Some("9.9.9"));
        let s = &live[0];
        assert_eq!(s.host.as_deref(), Some("devbox"));
        assert_eq!(s.state, SessionState::Working);
        assert_eq!(s.state_since.to_rfc3339(), "2026-11-30T10:04:00+00:00");
        assert_eq!(
            (s.context_tokens, s.context_window),
            (None, None),
            "an older remote"
        );
    }

    #[test]
    fn a_remote_session_carries_its_context_figures_and_a_zero_window_is_none() {
        let mut json = session_json("s1");
        json["context_tokens"] = serde_json::json!(120_000);
        json["context_window"] = serde_json::json!(258_400);
        json["compacted_at"] = serde_json::json!("2026-11-30T10:03:00Z");
        let line = serde_json::json!({"kind": "changed", "session": json}).to_string();
        let RemoteLine::Upsert(s) = parse_line(line.as_bytes(), "devbox").unwrap() else {
            panic!("an upsert")
        };
        assert_eq!(
            (s.context_tokens, s.context_window),
            (Some(120_000), Some(258_400))
        );
        assert_eq!(s.context_percent(), Some(46));
        assert!(s.compacted_at.is_some());
        let mut json = session_json("s1");
        json["context_tokens"] = serde_json::json!(5);
        json["context_window"] = serde_json::json!(0);
        let line = serde_json::json!({"kind": "changed", "session": json}).to_string();
        let RemoteLine::Upsert(s) = parse_line(line.as_bytes(), "devbox").unwrap() else {
            panic!("an upsert")
        };
        assert_eq!((s.context_tokens, s.context_window), (Some(5), None));
        // A figure that is not a count is this session unreadable, not the link's end.
        let mut json = session_json("s1");
        json["context_tokens"] = serde_json::json!("lots");
        let line = serde_json::json!({"kind": "snapshot", "protocol": 1, "sessions": [json, session_json("s2")], "ended": []}).to_string();
        let RemoteLine::Snapshot { live, .. } = parse_line(line.as_bytes(), "devbox").unwrap()
        else {
            panic!("a snapshot")
        };
        let ids: Vec<&str> = live.iter().map(|s| s.session_id.as_str()).collect();
        assert_eq!(ids, vec!["s2"]);
    }

    // A remote's requests show with its host, bounded: at most MAX_REMOTE_PENDING are taken from
    // a list of any length, the rest skipped unbuilt; a long command is cut with the mark; an id
    // that is not one is dropped; none can be answered from here.
    #[test]
    fn a_remotes_requests_show_with_its_host_bounded_and_never_answerable_here() {
        let request = |id: &str| {
            serde_json::json!({
                "id": id, "session_id": "s1", "host": null, "agent": "claude", "tool": "Bash",
                "command": format!("rm -rf {}", "x".repeat(5000)), "cwd": "/srv/api",
                "input": "y".repeat(100_000),
                "asked_at": "2026-11-30T10:04:00Z", "answer_by": "2026-11-30T10:09:00Z",
                "accepts": {"allow_for_session": true, "deny_message": true}
            })
        };
        let mut s = session_json("s1");
        s["state"] = "waiting_for_permission".into();
        let mut list = vec![request("not an id"), request("r1-abc")];
        list.extend((0..100_000).map(|_| serde_json::json!(0)));
        s["pending"] = serde_json::Value::Array(list);
        let line = serde_json::json!({"kind": "changed", "session": s}).to_string();
        let RemoteLine::Upsert(session) = parse_line(line.as_bytes(), "gpu-box").unwrap() else {
            panic!("an upsert")
        };
        assert_eq!(session.pending.len(), 1, "{:?}", session.pending);
        let p = &session.pending[0];
        assert_eq!(p.id.as_str(), "r1-abc");
        assert_eq!(p.host.as_deref(), Some("gpu-box"));
        assert!(p.detail.input.is_empty(), "the whole input is not carried");
        let command = p.detail.command.as_deref().unwrap_or_default();
        assert!(
            command.ends_with(CUT_MARK)
                && command.len() <= FieldLimit::Text.bytes() + CUT_MARK.len()
        );
        assert!(!p.accepts.allow_for_session && !p.accepts.deny_message);
    }

    #[test]
    fn a_snapshot_from_a_version_before_remotes_has_no_protocol() {
        let line = serde_json::json!({"kind": "snapshot", "sessions": [session_json("s1")]});
        let parsed = parse_line(line.to_string().as_bytes(), "r").unwrap();
        assert!(matches!(
            parsed,
            RemoteLine::Snapshot { protocol: None, .. }
        ));
    }

    #[test]
    fn hostile_fields_are_cut_ids_checked_and_unknown_agents_skipped_alone() {
        let mut long = session_json("s1");
        long["cwd"] = serde_json::Value::String(format!("/{}", "d".repeat(1 << 20)));
        long["title"] = serde_json::Value::String("t".repeat(100_000));
        let mut evil_id = session_json("x; rm -rf ~");
        evil_id["session_id"] = "x; rm -rf ~".into();
        let mut future_agent = session_json("s3");
        future_agent["agent"] = "kimi".into();
        let mut chained = session_json("s4");
        chained["host"] = "elsewhere".into();
        let line = serde_json::json!({
            "kind": "resync", "sessions": [long, evil_id, future_agent, chained, session_json("s5")]
        })
        .to_string();
        let RemoteLine::Resync(sessions) = parse_line(line.as_bytes(), "r").unwrap() else {
            panic!("a resync")
        };
        let ids: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
        assert_eq!(
            ids,
            ["s1", "s5"],
            "only the readable, local, well-named ones"
        );
        let cwd = sessions[0].cwd.as_deref().unwrap();
        assert!(cwd.len() <= FieldLimit::Path.bytes() && cwd.ends_with(CUT_MARK));
        assert!(sessions[0].title.as_deref().unwrap().len() <= FieldLimit::Text.bytes());
    }

    #[test]
    fn changes_and_removals_parse_and_garbage_is_an_error() {
        let changed =
            serde_json::json!({"kind":"changed","old_state":"idle","session":session_json("s1")});
        assert!(matches!(
            parse_line(changed.to_string().as_bytes(), "r").unwrap(),
            RemoteLine::Upsert(_)
        ));
        assert_eq!(
            parse_line(br#"{"kind":"removed","session_id":"s1"}"#, "r").unwrap(),
            RemoteLine::Removed("s1".into())
        );
        assert_eq!(
            parse_line(br#"{"kind":"removed","session_id":"s1","host":"x"}"#, "r").unwrap(),
            RemoteLine::Nothing
        );
        assert!(parse_line(b"Welcome to the machine!", "r").is_err());
        assert!(parse_line(br#"{"kind":"run","argv":["sh"]}"#, "r").is_err());
    }
}
