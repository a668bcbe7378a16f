//! Property tests of the parsers of outside input the liveness side reads: hook payloads (stdin of
//! every hook), Claude transcripts lines and sessions files, Codex rollout lines, `/proc` stat
//! lines, and the tail reader that cuts agent files into lines. Any program the user runs can
//! write those files, and an agent can send any bytes: no input may panic, none may make the
//! result larger than what was read (bounded memory), and where a value is written and read back
//! it must come back the same.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use agent_tray::agents::claude::sessions::{parse_sessions_file, SessionsFile};
use agent_tray::agents::claude::transcripts::{parse_line, LineKind};
use agent_tray::agents::codex::rollouts::{parse_rollout_line, RolloutLine};
use agent_tray::agents::Adapters;
use agent_tray::feeds::tail::{TailReader, MAX_LINE};
use agent_tray::hook_payload::{hook_event, parse_hook, read_fields, HookFields};
use agent_tray::model::Agent;
use agent_tray::process::parse_stat;
use proptest::prelude::*;
use serde_json::json;

/// The longest string a hook payload field may keep (`hook_payload`'s cap for paths).
const MAX_HOOK_FIELD: usize = 4096;

/// Ids as the agents write them, and as every validation accepts them.
fn an_id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9-]{0,63}"
}

/// Some JSON value, nested a little: what a field of an unexpected type may hold.
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        ".{0,40}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(".{0,12}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON object mixing the fields a parser knows (with values of any type) and unknown ones.
fn object_with(keys: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        (
            prop_oneof![prop::sample::select(keys).prop_map(String::from), ".{0,12}"],
            any_json(),
        ),
        0..8,
    )
    .prop_map(|pairs| {
        let map: serde_json::Map<String, serde_json::Value> = pairs.into_iter().collect();
        serde_json::to_vec(&serde_json::Value::Object(map)).unwrap()
    })
}

fn fields_len(f: &HookFields) -> usize {
    [
        &f.session_id,
        &f.hook_event_name,
        &f.cwd,
        &f.transcript_path,
        &f.model,
        &f.source,
        &f.notification_type,
        &f.tool_name,
        &f.agent_id,
        &f.error,
        &f.turn_id,
        &f.prompt_id,
    ]
    .into_iter()
    .flatten()
    .map(|s| {
        assert!(
            s.len() <= MAX_HOOK_FIELD,
            "a field of {} bytes was kept",
            s.len()
        );
        s.len()
    })
    .sum()
}

const HOOK_KEYS: &[&str] = &[
    "session_id",
    "hook_event_name",
    "cwd",
    "transcript_path",
    "model",
    "source",
    "notification_type",
    "tool_name",
    "agent_id",
    "error",
    "turn_id",
    "prompt_id",
    "tool_input",
];

const HOOK_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Notification",
    "Stop",
    "SubagentStop",
    "SessionEnd",
    "PermissionRequest",
    "NotAnEvent",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_hook_payload_of_any_bytes_never_panics(raw in prop::collection::vec(any::<u8>(), 0..2048)) {
        let (fields, _) = read_fields(&raw);
        fields_len(&fields);
        let _ = parse_hook(&raw, None, &Adapters);
        let _ = parse_hook(&raw, Some(Agent::Codex), &Adapters);
    }

    #[test]
    fn a_hook_payload_keeps_no_field_longer_than_its_cap(
        payload in object_with(HOOK_KEYS),
        long in prop::collection::vec(".{0,4}", 0..3000),
    ) {
        // Any object, and one whose every known field is many kilobytes long.
        let (fields, _) = read_fields(&payload);
        fields_len(&fields);
        let long = long.concat();
        let huge: serde_json::Map<String, serde_json::Value> =
            HOOK_KEYS.iter().map(|k| (k.to_string(), json!(long))).collect();
        let (fields, _) = read_fields(&serde_json::to_vec(&huge).unwrap());
        fields_len(&fields);
    }

    #[test]
    fn a_hook_payload_round_trips_its_session_and_event_even_when_cut(
        id in an_id(),
        event in prop::sample::select(HOOK_EVENTS),
        cwd in "/[ -~]{0,60}",
        bulk in ".{0,200}",
        cut in any::<prop::sample::Index>(),
    ) {
        // The identifying fields come first, as both agents write them; the bulk after.
        let payload = serde_json::to_vec(&json!({
            "session_id": id, "hook_event_name": event, "cwd": cwd, "tool_input": {"x": bulk},
        })).unwrap();
        match (parse_hook(&payload, None, &Adapters), hook_event(event)) {
            (Ok(parsed), Some(kind)) => {
                prop_assert_eq!(&parsed.session_id, &id);
                prop_assert_eq!(parsed.event, kind);
                prop_assert_eq!(parsed.fields.cwd.as_deref(), Some(cwd.as_str()));
            }
            (Err(_), None) => {}
            (other, expected) => prop_assert!(false, "{:?} for {:?}", other, expected),
        }
        // Cut anywhere: never a panic, and the session id survives once it was read whole.
        let at = cut.index(payload.len() + 1);
        let (fields, _) = read_fields(&payload[..at]);
        let whole_id = serde_json::to_vec(&json!({"session_id": id})).unwrap();
        if at >= whole_id.len() {
            prop_assert_eq!(fields.session_id.as_deref(), Some(id.as_str()));
        }
    }

    #[test]
    fn a_transcript_line_of_any_bytes_never_panics(raw in prop::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(line) = parse_line(&raw) {
            let kept = [&line.cwd, &line.branch, &line.model]
                .into_iter()
                .flatten()
                .map(String::len)
                .sum::<usize>();
            prop_assert!(kept <= raw.len());
        }
    }

    #[test]
    fn a_transcript_object_of_any_shape_never_panics_and_keeps_less_than_it_read(
        raw in object_with(&["type", "subtype", "timestamp", "cwd", "gitBranch", "isSidechain", "isMeta", "message"]),
    ) {
        if let Ok(line) = parse_line(&raw) {
            let kept = [&line.cwd, &line.branch, &line.model]
                .into_iter()
                .flatten()
                .map(String::len)
                .sum::<usize>();
            prop_assert!(kept <= raw.len());
        }
    }

    #[test]
    fn a_transcript_line_round_trips_its_time_and_fields(
        kind in prop::sample::select(&["user", "assistant"][..]),
        secs in 0i64..4_000_000_000,
        millis in 0u32..1000,
        cwd in "/[ -~]{1,60}",
        branch in "[a-z0-9/_-]{1,30}",
        text in "[a-z ]{1,40}",
    ) {
        let at = chrono::DateTime::from_timestamp(secs, millis * 1_000_000).unwrap();
        let line = serde_json::to_vec(&json!({
            "type": kind, "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "cwd": cwd, "gitBranch": branch, "message": {"content": text},
        })).unwrap();
        let parsed = parse_line(&line).unwrap();
        prop_assert_eq!(parsed.at, Some(at));
        prop_assert_eq!(parsed.kind, Some(LineKind::Activity));
        prop_assert_eq!(parsed.cwd.as_deref(), Some(cwd.as_str()));
        prop_assert_eq!(parsed.branch.as_deref(), Some(branch.as_str()));
    }

    #[test]
    fn a_rollout_line_of_any_bytes_or_shape_never_panics(
        raw in prop::collection::vec(any::<u8>(), 0..2048),
        obj in object_with(&["timestamp", "type", "payload"]),
        payload in object_with(&["type", "id", "cwd", "source", "model"]),
    ) {
        let _ = parse_rollout_line(&raw);
        let _ = parse_rollout_line(&obj);
        for kind in ["session_meta", "turn_context", "event_msg", "response_item"] {
            let mut line = br#"{"type":""#.to_vec();
            line.extend_from_slice(kind.as_bytes());
            line.extend_from_slice(br#"","payload":"#);
            line.extend_from_slice(&payload);
            line.push(b'}');
            let _ = parse_rollout_line(&line);
        }
    }

    #[test]
    fn a_rollout_session_meta_round_trips_its_id_and_cwd(
        id in an_id(),
        cwd in "/[ -~]{1,60}",
        subagent in any::<bool>(),
    ) {
        let source = if subagent { json!({"subagent": "review"}) } else { json!("cli") };
        let line = serde_json::to_vec(&json!({
            "timestamp": "2026-11-29T19:07:13.123Z", "type": "session_meta",
            "payload": {"id": id, "cwd": cwd, "source": source},
        })).unwrap();
        match parse_rollout_line(&line).unwrap() {
            RolloutLine::Meta { id: got, cwd: got_cwd, subagent: got_sub, at } => {
                prop_assert_eq!(got, Some(id));
                prop_assert_eq!(got_cwd, Some(cwd));
                prop_assert_eq!(got_sub, subagent);
                prop_assert!(at.is_some());
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn a_sessions_file_of_any_bytes_or_shape_never_panics(
        raw in prop::collection::vec(any::<u8>(), 0..2048),
        obj in object_with(&["pid", "sessionId", "cwd", "procStart", "name", "status", "waitingFor", "tmux", "updatedAt", "statusUpdatedAt"]),
    ) {
        let _ = parse_sessions_file(&raw);
        if let Ok(file) = parse_sessions_file(&obj) {
            prop_assert!(file.session_id.is_some());
        }
    }

    #[test]
    fn a_sessions_file_round_trips(
        pid in any::<u32>(),
        id in an_id(),
        cwd in "/[ -~]{1,60}",
        proc_start in "[0-9]{1,12}",
        status in prop::sample::select(&["busy", "idle", "waiting"][..]),
        waiting_for in proptest::option::of("[a-z ]{1,20}"),
        updated_at in 0i64..4_000_000_000_000,
    ) {
        let mut v = json!({
            "pid": pid, "sessionId": id, "cwd": cwd, "procStart": proc_start, "status": status,
            "updatedAt": updated_at, "statusUpdatedAt": updated_at,
        });
        if let Some(w) = &waiting_for {
            v["waitingFor"] = json!(w);
        }
        let file = parse_sessions_file(&serde_json::to_vec(&v).unwrap()).unwrap();
        prop_assert_eq!(file, SessionsFile {
            pid: Some(pid),
            session_id: Some(id),
            cwd: Some(cwd),
            proc_start: Some(proc_start),
            name: None,
            status: Some(status.to_string()),
            waiting_for: waiting_for.filter(|w| !w.trim().is_empty()),
            tmux: None,
            updated_at: Some(updated_at),
            status_updated_at: Some(updated_at),
        });
    }

    #[test]
    fn a_stat_line_of_any_text_never_panics(line in any::<String>()) {
        if let Some(stat) = parse_stat(&line) {
            prop_assert!(stat.comm.len() <= line.len());
        }
    }

    /// However an agent's writes are cut into reads, the tail reader yields the same lines, and
    /// never holds more than one line's cap.
    #[test]
    fn the_tail_reader_yields_the_same_lines_however_the_file_grows(
        lines in prop::collection::vec(prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..200), 0..20),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut body = Vec::new();
        for l in &lines {
            body.extend_from_slice(l);
            body.push(b'\n');
        }
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
        points.push(body.len());
        points.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, b"").unwrap();
        let mut reader = TailReader::at(0, None);
        let mut seen: Vec<Vec<u8>> = Vec::new();
        let mut written = 0;
        for p in points {
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(&body[written..p]).unwrap();
            written = p;
            let mut file = std::fs::File::open(&path).unwrap();
            let meta = file.metadata().unwrap();
            reader.read_appended(&mut file, &meta, &mut |l| seen.push(l.to_vec())).unwrap();
            prop_assert!(reader.buffered() <= MAX_LINE);
        }
        prop_assert_eq!(seen, lines);
    }
}
