//! The hook journal: what the hooks heard, kept on disk so nothing is lost while no app runs.
//!
//! The journal is split by floor, one file each, so a reader (and the hook) finds the part it
//! needs without the rest:
//! - [`record`]: the record, its line encoding and the append the hook does (with the cap it
//!   keeps); `hook` imports from here only.
//! - [`compaction`]: the folder's upkeep: listing the journals, rewriting one down to its head and
//!   tail under a lock, the cap and its drop log.
//! - [`replay`]: the engine's side: reading records back, the replay into the registry, its
//!   status, the liveness probe and the inotify wake-ups.
//!
//! The items are re-exported here so `crate::journal::X` names them as before.
//!
//! Every `agent-tray hook` appends its observation here **before** it tries the socket: with no
//! app running, a wedged one, or a send that runs out of its budget, the event is still on disk,
//! and the engine replays it when it (re)starts and, while it runs, when inotify says a journal
//! changed (with a slow safety tick for what inotify misses). Records carry
//! the hook's sequence id and the registry drops a sequence id it has applied already, so a
//! record that also came over the socket is applied once.
//!
//! Why it is shaped this way:
//! - **One append-only file per session** (`<agent>-<session id>.jsonl`): an append of one short
//!   line with `O_APPEND` is a single `write`, so hooks running in parallel for the same session
//!   never interleave inside a line; and a session's history can be dropped as a whole.
//! - **Private**: the folder is 0700 and the files 0600. Records hold only what an observation
//!   holds (ids, paths, the model, a tool's name): never prompt text, tool input or replies.
//! - **The engine reads only what was appended**: a cursor (inode + offset) per file; a pass
//!   costs a `readdir` and a `stat` per file when nothing changed.
//! - **Woken by inotify, not a clock** (the `notify` crate on the folder): at rest the replay
//!   sleeps; a hook's append wakes it and a burst of them is read in one pass. The engine's own
//!   reads (opens) and the status file it writes do not wake it. A pass still runs every
//!   [`REPLAY_SAFETY_TICK`] for what inotify cannot report (its queue overflowed, the folder was
//!   replaced before the watch moved, no watch could be set up), and compaction and removal run on
//!   their own slow schedule ([`MAINTAIN_EVERY`]). Files are read line by line,
//!   so a long backlog costs time, not memory.
//! - **Replay at start is selective by age, never by size**: replaying a week of journals would
//!   raise ghosts that the TTL then takes five minutes to clear. A file is replayed at start, all
//!   of it, when it was written within the session TTL, or when the process of its last record
//!   is still a live agent that started before that record (so not a recycled pid); the rest is
//!   skipped, never deleted early.
//! - **A bad record costs that record only**: a line that is not JSON, is cut in half, is too
//!   long, or carries an impossible date is skipped and counted ([`CorruptRecord`]); replay goes
//!   on with the next line. A writer that died mid-line leaves a fragment the next append is
//!   glued to: the reader counts the fragment and still reads the record after it (a record
//!   always starts with `{"v":`, which cannot occur inside a JSON string).
//! - **Compaction drops only what was applied**: a file over [`MAX_FILE_BYTES`], quiet for
//!   [`COMPACT_QUIET`], is rewritten to its first records (SessionStart carries the model) and
//!   its last ones, and only once the engine has applied every line of it.
//! - **Capped while nothing reads it** ([`MAX_TOTAL_BYTES`], [`MAX_FILES`]): the hook checks the
//!   folder whenever it starts a file or its file grows past another [`CAP_CHECK_BYTES`], and
//!   drops the oldest files first (a single session larger than the cap loses its oldest
//!   records). Every drop is written to `dropped.log` beside the journals, which the engine logs
//!   and `doctor` shows. Files untouched for [`MAX_AGE`] are removed by the engine.
//! - **Rewrites never lose an append**: a hook holds a shared `flock` on the file while it
//!   appends and a rewrite (compaction, cap) holds an exclusive one while it copies and renames;
//!   a hook that finds the path now names another file appends to that one instead. Waits are
//!   bounded: a hook that cannot get the lock soon appends anyway.

pub mod compaction;
pub mod record;
pub mod replay;

pub use compaction::{
    drop_totals, enforce_cap, read_drops, DropRecord, JournalCap, COMPACT_QUIET, DROP_LOG, MAX_AGE,
    MAX_FILES, MAX_FILE_BYTES, MAX_TOTAL_BYTES,
};
pub use record::{
    agent_of_file, append, encode_line, file_name, parse_line, CorruptRecord, JournalRecord,
    CAP_CHECK_BYTES, RECORD_VERSION,
};
pub use replay::{
    agent_still_running, health_notes, last_event_per_agent, last_record, parse_lines,
    process_started_at, read_from, read_records, read_status, spawn_replay, spawn_replay_with,
    started_before, JournalReplay, LivenessProbe, ReplayStats, ReplayStatus, MAINTAIN_EVERY,
    REPLAY_SAFETY_TICK, STATUS_FILE,
};

/// A hook's observation of `session` with sequence id `seq`, for the tests of every floor.
#[cfg(test)]
fn obs(session: &str, event: crate::model::EventKind, seq: &str) -> crate::model::Observation {
    let mut o = crate::model::Observation::new(
        session,
        crate::model::Agent::Claude,
        event,
        chrono::Utc::now(),
    );
    o.seq = Some(seq.to_string());
    o.cwd = Some("/w".into());
    o
}
