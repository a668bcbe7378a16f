//! Property tests of the control socket's request parser, the engine's first contact with
//! whatever a local program writes: arbitrary bytes and arbitrary JSON never panic, what comes
//! out is always within the documented limits (memory is bounded by the limits, not by the line),
//! and every valid request survives the trip through one line unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tray::control::protocol::{decode_request, encode_request, Request, MAX_HISTORY_LIMIT};
use agent_tray::model::{
    validate_session_id, Agent, EventKind, FieldLimit, Observation, ReportedStatus, Source,
    CUT_MARK,
};
use chrono::{DateTime, Utc};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Every text field of a decoded observation is within its limit and its id follows the rule.
fn assert_bounded(obs: &Observation) {
    assert_eq!(validate_session_id(&obs.session_id), Ok(()));
    let check = |field: &Option<String>, limit: FieldLimit| {
        if let Some(text) = field {
            assert!(
                text.len() <= limit.bytes(),
                "{} > {}",
                text.len(),
                limit.bytes()
            );
        }
    };
    check(&obs.cwd, FieldLimit::Path);
    check(&obs.transcript_path, FieldLimit::Path);
    check(&obs.title, FieldLimit::Text);
    check(&obs.error, FieldLimit::Text);
    check(&obs.waiting_for, FieldLimit::Text);
    for name in [
        &obs.subagent_id,
        &obs.repo,
        &obs.branch,
        &obs.model,
        &obs.start_source,
        &obs.notification_type,
        &obs.tool_name,
        &obs.tmux,
        &obs.tty,
        &obs.seq,
    ] {
        check(name, FieldLimit::Name);
    }
}

fn assert_decoded_is_bounded(line: &[u8]) {
    match decode_request(line) {
        Ok(Request::Observe { observation }) => assert_bounded(&observation),
        Ok(Request::History { limit }) => assert!(limit <= MAX_HISTORY_LIMIT),
        Ok(_) => {}
        Err(reply) => {
            assert!(!reply.ok);
            assert!(reply.error.is_some(), "an error reply names its error");
        }
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            btree_map(".{0,12}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

const OBSERVATION_KEYS: [&str; 24] = [
    "session_id",
    "agent",
    "event",
    "source",
    "at",
    "pid",
    "subagent_id",
    "cwd",
    "repo",
    "branch",
    "model",
    "transcript_path",
    "start_source",
    "notification_type",
    "tool_name",
    "error",
    "status",
    "waiting_for",
    "title",
    "tmux",
    "tty",
    "seq",
    "unknown_field",
    "v",
];

/// A value a field might plausibly hold, or anything at all.
fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[A-Za-z0-9._-]{1,40}".prop_map(Value::String),
        Just(json!("claude")),
        Just(json!("Stop")),
        Just(json!("2026-01-01T00:00:00Z")),
        (0usize..20_000).prop_map(|n| Value::String("x".repeat(n))),
        any::<u32>().prop_map(Value::from),
        any_json(),
    ]
}

/// Objects shaped like requests, most of them almost right: the parser's real battlefield.
fn request_shaped() -> impl Strategy<Value = Value> {
    let op = prop_oneof![
        Just(json!("observe")),
        Just(json!("list")),
        Just(json!("history")),
        Just(json!("ping")),
        Just(json!("watch")),
        any_json(),
    ];
    let v = prop_oneof![4 => Just(json!(1)), 1 => any_json()];
    let observation = btree_map(
        proptest::sample::select(OBSERVATION_KEYS.to_vec()),
        field_value(),
        0..24,
    );
    (
        v,
        op,
        option::of(any_json()),
        option::of(observation),
        option::of(any_json()),
    )
        .prop_map(|(v, op, limit, observation, extra)| {
            let mut m = Map::new();
            m.insert("v".into(), v);
            m.insert("op".into(), op);
            if let Some(limit) = limit {
                m.insert("limit".into(), limit);
            }
            if let Some(fields) = observation {
                let mut o: Map<String, Value> = [
                    ("session_id", json!("s-1")),
                    ("agent", json!("codex")),
                    ("event", json!("Stop")),
                    ("at", json!("2026-01-01T00:00:00Z")),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                for (k, v) in fields {
                    o.insert(k.to_string(), v);
                }
                m.insert("observation".into(), Value::Object(o));
            }
            if let Some(extra) = extra {
                m.insert("extra".into(), extra);
            }
            Value::Object(m)
        })
}

fn session_id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
}

fn text(max: usize) -> impl Strategy<Value = Option<String>> {
    option::of(proptest::string::string_regex(&format!(".{{0,{max}}}")).unwrap())
}

fn at() -> impl Strategy<Value = DateTime<Utc>> {
    (0i64..4_102_444_800_000).prop_map(|ms| DateTime::from_timestamp_millis(ms).unwrap())
}

fn valid_observation() -> impl Strategy<Value = Observation> {
    let head = (
        session_id(),
        prop_oneof![Just(Agent::Claude), Just(Agent::Codex)],
        proptest::sample::select(EventKind::HOOK_EVENTS.to_vec()),
        prop_oneof![Just(Source::Hook), Just(Source::Cli), Just(Source::Notify)],
        at(),
        option::of(1u32..),
        option::of(prop_oneof![
            Just(ReportedStatus::Busy),
            Just(ReportedStatus::Idle),
            Just(ReportedStatus::Waiting)
        ]),
    );
    // Lengths up to the limits, counted in characters well under the byte limits.
    let fields = (
        text(60),
        text(200),
        text(40),
        text(40),
        text(40),
        text(200),
        text(20),
        text(20),
        text(40),
        text(200),
        text(200),
        text(200),
    );
    let tail = (text(30), text(30), text(50));
    (head, fields, tail).prop_map(
        |(
            (id, agent, event, source, at, pid, status),
            (sub, cwd, repo, branch, model, transcript, start, notif, tool, error, waiting, title),
            (tmux, tty, seq),
        )| {
            let mut o = Observation::new(id, agent, event, at).with_source(source);
            o.pid = pid;
            o.status = status;
            o.subagent_id = sub;
            o.cwd = cwd;
            o.repo = repo;
            o.branch = branch;
            o.model = model;
            o.transcript_path = transcript;
            o.start_source = start;
            o.notification_type = notif;
            o.tool_name = tool;
            o.error = error;
            o.waiting_for = waiting;
            o.title = title;
            o.tmux = tmux;
            o.tty = tty;
            o.seq = seq;
            o
        },
    )
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..4096)) {
        assert_decoded_is_bounded(&bytes);
    }

    #[test]
    fn arbitrary_json_never_panics(value in any_json()) {
        assert_decoded_is_bounded(&serde_json::to_vec(&value).unwrap());
    }

    #[test]
    fn request_shaped_json_never_panics_and_stays_within_the_limits(value in request_shaped()) {
        assert_decoded_is_bounded(&serde_json::to_vec(&value).unwrap());
    }

    #[test]
    fn a_valid_request_round_trips_through_one_line(obs in valid_observation(), limit in 0usize..=MAX_HISTORY_LIMIT) {
        for request in [
            Request::Observe { observation: obs.clone() },
            Request::History { limit },
            Request::List,
            Request::Ping,
            Request::Watch,
        ] {
            let line = encode_request(&request).unwrap();
            prop_assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            prop_assert_eq!(decode_request(&line), Ok(request));
        }
    }

    #[test]
    fn over_long_fields_come_out_cut_at_their_limit_with_their_start_kept(
        obs in valid_observation(),
        cwd_len in 0usize..20_000,
        title in ".{0,3000}",
    ) {
        let mut obs = obs;
        let cwd = format!("/{}", "é".repeat(cwd_len));
        obs.cwd = Some(cwd.clone());
        obs.title = Some(title.clone());
        let line = encode_request(&Request::Observe { observation: obs }).unwrap();
        let Ok(Request::Observe { observation }) = decode_request(&line) else {
            panic!("a valid observation decodes");
        };
        assert_bounded(&observation);
        for (got, sent, limit) in [
            (observation.cwd.unwrap(), cwd, FieldLimit::Path),
            (observation.title.unwrap(), title, FieldLimit::Text),
        ] {
            if sent.len() <= limit.bytes() {
                prop_assert_eq!(got, sent);
            } else {
                let kept = got.strip_suffix(CUT_MARK).expect("a cut is marked");
                prop_assert!(sent.starts_with(kept));
                prop_assert!(got.len() + 4 > limit.bytes(), "cut no shorter than it must be");
            }
        }
    }
}
