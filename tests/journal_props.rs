//! Property tests of the journal line parser: whatever bytes a journal holds (a torn write, a
//! hostile local program, a disk error), parsing never panics and reading a file never stalls
//! or runs past its end; and every record the hook writes reads back as itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tray::journal::{encode_line, parse_line, read_records, CorruptRecord, JournalRecord};
use agent_tray::model::{Agent, EventKind, Observation};
use chrono::{DateTime, Utc};
use proptest::prelude::*;

fn event() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        Just(EventKind::SessionStart),
        Just(EventKind::UserPromptSubmit),
        Just(EventKind::PreToolUse),
        Just(EventKind::PostToolUse),
        Just(EventKind::PermissionRequest),
        Just(EventKind::Notification),
        Just(EventKind::Stop),
        Just(EventKind::SessionEnd),
    ]
}

/// Any record the hook could write: a plausible date (2000 to 2199), any text in the fields.
fn record() -> impl Strategy<Value = JournalRecord> {
    (
        // The session-id rule (model::validate_session_id): a letter or digit first.
        "[A-Za-z0-9][A-Za-z0-9_.-]{0,63}",
        prop_oneof![Just(Agent::Claude), Just(Agent::Codex)],
        event(),
        946_684_800i64..7_258_118_399,
        0u32..1_000_000_000,
        proptest::option::of(1u32..u32::MAX),
        proptest::option::of(any::<String>()),
        proptest::option::of("[ -~]{0,40}"),
        "[0-9]{1,7}-[0-9]{1,20}-[0-9]{1,4}",
        any::<bool>(),
    )
        .prop_map(
            |(session, agent, event, secs, nanos, pid, cwd, tool, seq, cut)| {
                let at = DateTime::<Utc>::from_timestamp(secs, nanos).unwrap();
                let mut o = Observation::new(session, agent, event, at);
                o.pid = pid;
                o.cwd = cwd;
                o.tool_name = tool;
                o.seq = Some(seq);
                JournalRecord::new(o, cut)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_line(&bytes);
    }

    #[test]
    fn a_record_round_trips_through_its_line(rec in record()) {
        let line = encode_line(&rec).unwrap();
        prop_assert_eq!(line.last(), Some(&b'\n'));
        prop_assert!(!line[..line.len() - 1].contains(&b'\n'), "one record, one line");
        prop_assert_eq!(parse_line(&line[..line.len() - 1]).unwrap(), rec);
    }

    #[test]
    fn a_damaged_record_is_an_error_or_a_record_never_a_panic(
        rec in record(),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let mut line = encode_line(&rec).unwrap();
        line.pop();
        for (i, b) in flips {
            let i = i.index(line.len());
            line[i] = b;
        }
        let torn = &line[..cut.index(line.len() + 1)];
        match parse_line(torn) {
            Ok(r) => prop_assert_eq!(r.v, 1),
            Err(CorruptRecord::TooLong(_)) => prop_assert!(false, "short lines are not too long"),
            Err(_) => {}
        }
    }

    #[test]
    fn reading_any_file_ends_within_it_and_counts_every_line(
        lines in proptest::collection::vec(
            prop_oneof![
                record().prop_map(|r| encode_line(&r).unwrap()),
                proptest::collection::vec(any::<u8>(), 0..300),
            ],
            0..20,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("claude-p.jsonl");
        let bytes = lines.concat();
        std::fs::write(&path, &bytes).unwrap();
        let (mut good, mut bad) = (0usize, 0usize);
        let end = read_records(&path, 0, |r| if r.is_ok() { good += 1 } else { bad += 1 }).unwrap();
        prop_assert!(end as usize <= bytes.len());
        // Everything up to `end` is complete lines; whatever follows has no newline.
        prop_assert!(end == 0 || bytes[end as usize - 1] == b'\n');
        prop_assert!(!bytes[end as usize..].contains(&b'\n'));
        let complete = bytes[..end as usize]
            .split(|b| *b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .count();
        // One verdict per line; two for a fragment with a record glued after it.
        prop_assert!(good + bad >= complete && good + bad <= 2 * complete);
    }
}
