//! What GitHub Copilot CLI's own session folder says: `$COPILOT_HOME/session-state/<uuid>/`
//! holds `events.jsonl` (one `{type, data, id, timestamp}` line per event) and, while a CLI has
//! the session open, `inuse.<PID>.lock` naming that process.
//!
//! Why this exists beside the hooks: Esc (at the permission prompt or mid-stream) and kill -9
//! fire **no hook at all** (recorded with 1.0.102). Esc leaves `abort` in `events.jsonl`;
//! a clean exit leaves `session.shutdown` and removes the locks. A killed CLI leaves its lock
//! and `open-sessions-state.json`'s `working: true` behind until the next launch sweeps them:
//! **a lock names a pid, it never proves a live session** — the pid watcher decides.
//!
//! Pure functions over a line or a folder listing; the caller does the reading.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::model::{Agent, EventKind, Observation, Source};

/// What one `events.jsonl` line means for the session's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionFileEvent {
    /// `session.start`: the CLI opened a new session (at launch, before any hook).
    Started { cwd: Option<String> },
    /// `session.resume`: `copilot --resume` reopened it.
    Resumed { cwd: Option<String> },
    /// `abort`: the user cancelled the turn with Esc (no hook fires).
    Aborted,
    /// `session.shutdown`: the CLI closed the session cleanly.
    Shutdown,
    /// `session.usage_record` of the main conversation: what its last request held (input and
    /// output tokens, as Copilot counts them) against the model's prompt limit
    /// (`maxPromptTokens`).
    Context { tokens: u64, window: Option<u64> },
}

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    timestamp: Option<String>,
}

#[derive(Deserialize, Default)]
struct Data {
    #[serde(default)]
    context: Option<Context>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    max_prompt_tokens: Option<u64>,
    #[serde(default)]
    interaction_type: Option<String>,
}

#[derive(Deserialize, Default)]
struct Context {
    #[serde(default)]
    cwd: Option<String>,
}

/// One line of `events.jsonl`, when it says something about the session's state, with its
/// timestamp. Every other line (messages, tool calls, hook.start/end, usage) is `None`.
pub fn parse_line(line: &str) -> Option<(SessionFileEvent, Option<DateTime<Utc>>)> {
    // Cheap filter first: most lines are messages and deltas, some of them large.
    let head = line.get(..line.len().min(40))?;
    if ![
        "\"session.start\"",
        "\"session.resume\"",
        "\"abort\"",
        "\"session.shutdown\"",
        "\"session.usage_record\"",
    ]
    .iter()
    .any(|t| head.contains(t))
    {
        return None;
    }
    let parsed: Line = serde_json::from_str(line).ok()?;
    let cwd = || {
        parsed
            .data
            .as_ref()
            .and_then(|d| d.context.as_ref())
            .and_then(|c| c.cwd.clone())
    };
    let event = match parsed.kind.as_str() {
        "session.start" => SessionFileEvent::Started { cwd: cwd() },
        "session.resume" => SessionFileEvent::Resumed { cwd: cwd() },
        "abort" => SessionFileEvent::Aborted,
        "session.shutdown" => SessionFileEvent::Shutdown,
        "session.usage_record" => {
            let usage = parsed.data.as_ref().and_then(|d| d.usage.as_ref())?;
            // A side request (a title, a subagent's) is not the conversation's context.
            if usage
                .interaction_type
                .as_deref()
                .is_some_and(|t| t != "conversation-agent")
            {
                return None;
            }
            let tokens = usage
                .input_tokens?
                .saturating_add(usage.output_tokens.unwrap_or(0));
            SessionFileEvent::Context {
                tokens,
                window: usage.max_prompt_tokens.filter(|w| *w > 0),
            }
        }
        _ => return None,
    };
    let at = parsed
        .timestamp
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    Some((event, at))
}

/// The observation a file event makes, for `agent` (the registered Copilot agent). A start or
/// resume is a sighting (the session exists; no turn yet: Copilot fires `sessionStart` only at
/// the first prompt); an abort ends the turn; a shutdown ends the session.
pub fn observation(
    agent: Agent,
    session_id: &str,
    event: &SessionFileEvent,
    at: DateTime<Utc>,
    pid: Option<u32>,
) -> Observation {
    let (kind, cwd) = match event {
        SessionFileEvent::Started { cwd } | SessionFileEvent::Resumed { cwd } => {
            (EventKind::Sighting, cwd.clone())
        }
        SessionFileEvent::Aborted => (EventKind::Interrupt, None),
        SessionFileEvent::Shutdown => (EventKind::SessionEnd, None),
        SessionFileEvent::Context { .. } => (EventKind::Sighting, None),
    };
    let mut obs = Observation::new(session_id, agent, kind, at).with_source(Source::Transcript);
    obs.cwd = cwd;
    obs.pid = pid;
    if let SessionFileEvent::Context { tokens, window } = event {
        obs.context_tokens = Some(*tokens);
        obs.context_window = *window;
    }
    obs
}

/// The CLI version in a session's first `events.jsonl` line (`session.start`'s
/// `copilotVersion`): the hooks send none.
pub fn version_in_first_line(line: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct First {
        #[serde(rename = "type")]
        kind: String,
        data: StartData,
    }
    #[derive(Deserialize)]
    struct StartData {
        #[serde(rename = "copilotVersion")]
        version: Option<String>,
    }
    let first: First = serde_json::from_str(line).ok()?;
    (first.kind == "session.start")
        .then_some(first.data.version)
        .flatten()
        .filter(|v| v.len() <= 64)
}

/// The pids named by the `inuse.<PID>.lock` files among a session folder's entries (sorted,
/// without duplicates). Stale locks of killed CLIs are included: check each pid.
pub fn lock_pids<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<u32> {
    let mut pids: Vec<u32> = names
        .into_iter()
        .filter_map(|n| {
            n.strip_prefix("inuse.")?
                .strip_suffix(".lock")?
                .parse()
                .ok()
        })
        .filter(|p| *p > 1)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The process that has the session open: the one lock whose pid is alive (by `alive`, which
/// must treat a zombie as dead). Several live holders, or none, give `None`: no guess.
pub fn live_holder(lock_pids: &[u32], alive: impl Fn(u32) -> bool) -> Option<u32> {
    let mut live = lock_pids.iter().copied().filter(|p| alive(*p));
    let first = live.next()?;
    live.next().is_none().then_some(first)
}

/// Is this a session folder's name (a UUID)? Other entries of `session-state/` are skipped.
pub fn is_session_dir_name(name: &str) -> bool {
    name.len() == 36
        && name.chars().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const HAPPY: &str = include_str!(
        "../../../tests/fixtures/copilot/real-1.0.102/session-state/da763f3d-1272-45ca-939d-52e915d454e7/events.jsonl"
    );
    const KILLED_AT_PROMPT: &str = include_str!(
        "../../../tests/fixtures/copilot/real-1.0.102/session-state/5ffe6845-e5ca-4c13-968b-ac5f98eb3a3a/events.jsonl"
    );
    const KILLED_THEN_RESUMED: &str = include_str!(
        "../../../tests/fixtures/copilot/real-1.0.102/session-state/ee3f173c-643f-4e2b-9a51-ef694a8761b5/events.jsonl"
    );

    /// The events that move the state (the context figures apart).
    fn events(text: &str) -> Vec<SessionFileEvent> {
        text.lines()
            .filter_map(parse_line)
            .map(|(e, _)| e)
            .filter(|e| !matches!(e, SessionFileEvent::Context { .. }))
            .collect()
    }

    // Recorded from the real 1.0.102 against the mock (100 in, 10 out, a 128000-token prompt
    // limit): each main request's usage record is the session's context figure.
    #[test]
    fn the_recorded_usage_records_give_the_context_against_the_prompt_limit() {
        let context: Vec<SessionFileEvent> = HAPPY
            .lines()
            .filter_map(parse_line)
            .map(|(e, _)| e)
            .filter(|e| matches!(e, SessionFileEvent::Context { .. }))
            .collect();
        assert!(!context.is_empty());
        assert!(context.iter().all(|e| *e
            == SessionFileEvent::Context {
                tokens: 110,
                window: Some(128_000)
            }));
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let obs = observation(Agent::Copilot, "s1", &context[0], at, Some(7));
        assert_eq!(
            (obs.context_tokens, obs.context_window),
            (Some(110), Some(128_000))
        );
        // A side request (a title, a subagent's) says nothing of the conversation's context.
        let side = r#"{"type":"session.usage_record","data":{"usage":{"inputTokens":900,"outputTokens":9,"maxPromptTokens":128000,"interactionType":"title-generation"}},"timestamp":"2026-11-30T23:51:32.000Z"}"#;
        assert_eq!(parse_line(side), None);
    }

    #[test]
    fn a_clean_session_starts_in_its_folder_and_shuts_down() {
        let ev = events(HAPPY);
        assert_eq!(
            ev,
            vec![
                SessionFileEvent::Started {
                    cwd: Some("/home/dev/lab/rt/work".into())
                },
                SessionFileEvent::Shutdown
            ]
        );
    }

    #[test]
    fn a_killed_cli_leaves_no_shutdown_and_its_resume_is_seen() {
        // Killed at the permission prompt: the file just stops (only the pid can tell).
        assert_eq!(events(KILLED_AT_PROMPT).len(), 1);
        // Killed while streaming, then `copilot --resume`: start, resume, shutdown.
        let ev = events(KILLED_THEN_RESUMED);
        assert!(matches!(ev[1], SessionFileEvent::Resumed { .. }), "{ev:?}");
        assert_eq!(ev.last(), Some(&SessionFileEvent::Shutdown));
    }

    #[test]
    fn esc_leaves_an_abort_that_ends_the_turn() {
        // The line Copilot 1.0.102 wrote on Esc at the permission prompt (shape as recorded).
        let line = r#"{"type":"abort","data":{"reason":"user_initiated"},"id":"x","timestamp":"2026-11-30T23:55:01.000Z","parentId":null}"#;
        let (ev, at) = parse_line(line).expect("abort line");
        assert_eq!(ev, SessionFileEvent::Aborted);
        let at = at.expect("timestamp");
        let obs = observation(Agent::Claude, "s1", &ev, at, Some(7));
        assert_eq!(obs.event, EventKind::Interrupt);
        assert_eq!(obs.pid, Some(7));
    }

    #[test]
    fn message_lines_are_skipped_without_parsing_them_as_events() {
        let line =
            r#"{"type":"assistant.message","data":{"content":"session.shutdown abort"},"id":"y"}"#;
        assert_eq!(parse_line(line), None);
        assert_eq!(parse_line("not json at all, \"abort\""), None);
    }

    #[test]
    fn lock_files_name_pids_and_only_a_single_live_one_is_the_holder() {
        let names = [
            "inuse.12681.lock",
            "inuse.12681.hold",
            "events.jsonl",
            "inuse.13275.lock",
            "inuse.x.lock",
            "inuse.1.lock",
        ];
        let pids = lock_pids(names);
        assert_eq!(pids, vec![12681, 13275]);
        // The killed CLI's lock stays behind: its pid is dead, the live one holds the session.
        assert_eq!(live_holder(&pids, |p| p == 13275), Some(13275));
        assert_eq!(live_holder(&pids, |_| false), None);
        assert_eq!(
            live_holder(&pids, |_| true),
            None,
            "two live holders: no guess"
        );
    }

    #[test]
    fn the_version_is_in_the_first_line_of_every_session() {
        let first = HAPPY.lines().next().unwrap_or_default();
        assert_eq!(version_in_first_line(first).as_deref(), Some("1.0.102"));
        let second = HAPPY.lines().nth(1).unwrap_or_default();
        assert_eq!(version_in_first_line(second), None, "not a session.start");
    }

    #[test]
    fn only_uuid_folders_are_sessions() {
        assert!(is_session_dir_name("da763f3d-1272-45ca-939d-52e915d454e7"));
        assert!(!is_session_dir_name("open-sessions-state.json"));
        assert!(!is_session_dir_name("da763f3d-1272-45ca-939d-52e915d454eZ"));
    }
}
