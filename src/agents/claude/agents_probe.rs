//! `claude agents --json`: Claude Code's own list of live sessions (2.1.145+; `waitingFor` since
//! 2.1.162), interactive and background, as one more source.
//!
//! Why once, at the engine's start, and never on the hook path: the command starts a whole
//! Claude Code (about 1.8 s of wall time, measured with 2.1.328), so it is no heartbeat. Its
//! value is what the other feeds cannot know at start: background sessions (`claude --bg`)
//! whose worker is not a terminal's process, and every session's state (`status`, `waitingFor`)
//! before any hook of theirs fires again. A version without the command fails, or prints no
//! JSON array: the probe then simply adds nothing.
//!
//! The entries have the live-session file's fields (recorded: `pid`, `cwd`, `kind`, `startedAt`,
//! `sessionId`, `name`, `status`, `waitingFor`), so they are read by that feed's parser and
//! believed by its rule: only while their pid is alive and not one of Claude Code's helpers
//! ([`super::sessions::judge`]).
//!
//! The probe runs on a blocking thread with a deadline and is cancellable: on shutdown the
//! child is killed and reaped at once.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::sessions::{judge, observation_of, parse_sessions_file, SessionsFile, Verdict};
use crate::model::Observation;
use crate::process::ProcessTable;

/// How long the probe may run before it is killed.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(10);
/// The most output read from it (a few hundred bytes per session).
const MAX_OUTPUT: u64 = 1 << 20;

/// The entries of `claude agents --json` that name a session.
pub fn parse_agents_list(bytes: &[u8]) -> Vec<SessionsFile> {
    let Ok(Value::Array(entries)) = serde_json::from_slice::<Value>(bytes) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| serde_json::to_vec(entry).ok())
        .filter_map(|bytes| parse_sessions_file(&bytes).ok())
        .collect()
}

/// The observations the believed entries make (see the module comment).
pub fn observations(
    list: &[SessionsFile],
    table: &impl ProcessTable,
    at: DateTime<Utc>,
) -> Vec<Observation> {
    list.iter()
        .filter_map(|file| {
            let pid = file.pid?;
            (judge(pid, file.proc_start.as_deref(), table) == Verdict::Live)
                .then(|| observation_of(file, pid, at))
                .flatten()
        })
        .collect()
}

/// Runs `program agents --json` once and returns its output, or `None` (failed, too slow,
/// cancelled).
fn run_probe(program: &PathBuf, token: &CancellationToken) -> Option<Vec<u8>> {
    let mut child = Command::new(program)
        .args(["agents", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if token.is_cancelled() || started.elapsed() > PROBE_DEADLINE => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => break None,
        }
    };
    if !status.is_some_and(|s| s.success()) {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    let mut out = Vec::new();
    child
        .stdout
        .take()?
        .take(MAX_OUTPUT)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// Probes once and feeds what it finds to the sessions.
pub fn spawn_probe(
    sink: crate::feeds::FeedSink,
    program: PathBuf,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        let Some(out) = run_probe(&program, &token) else {
            tracing::debug!(program = %program.display(), "claude agents --json gave nothing");
            return;
        };
        let list = parse_agents_list(&out);
        let found = observations(&list, &crate::process::SystemProcesses, Utc::now());
        tracing::info!(
            entries = list.len(),
            believed = found.len(),
            "claude_agents_probe"
        );
        for obs in found {
            if let Err(error) = sink.sessions().observe(obs) {
                tracing::debug!(%error, "claude agents entry refused");
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::model::{EventKind, ReportedStatus};

    /// Recorded with Claude Code 2.1.328 while a question (AskUserQuestion) was on screen.
    const RECORDED: &str = r#"[
  {
    "pid": 31016,
    "cwd": "/var/tmp/agent-tray-e2e/claude_quest-h7c9zygz/proj",
    "kind": "interactive",
    "startedAt": 1796097499455,
    "sessionId": "f24bfced-a6c7-4874-bc6c-a884d8d30b7a",
    "name": "proj-d5",
    "status": "waiting",
    "waitingFor": "input needed"
  }
]"#;

    struct Alive(Vec<(u32, Vec<String>)>);
    impl ProcessTable for Alive {
        fn info(&self, _: u32) -> Option<crate::process::ProcInfo> {
            None
        }
        fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
            self.0
                .iter()
                .find(|(p, _)| *p == pid)
                .map(|(_, a)| a.clone())
        }
        fn exists(&self, pid: u32) -> bool {
            self.0.iter().any(|(p, _)| *p == pid)
        }
        fn start_token(&self, _: u32) -> Option<String> {
            None
        }
        fn children(&self, _: u32) -> Vec<u32> {
            Vec::new()
        }
    }

    #[test]
    fn a_recorded_waiting_session_is_a_wait_for_input_owned_by_its_live_pid() {
        let list = parse_agents_list(RECORDED.as_bytes());
        assert_eq!(list.len(), 1);
        let table = Alive(vec![(31016, vec!["claude".into()])]);
        let obs = observations(&list, &table, Utc::now());
        assert_eq!(obs.len(), 1);
        let o = &obs[0];
        assert_eq!(o.session_id, "f24bfced-a6c7-4874-bc6c-a884d8d30b7a");
        assert_eq!(o.event, EventKind::StatusReport);
        assert_eq!(o.status, Some(ReportedStatus::Waiting));
        assert_eq!(o.waiting_for.as_deref(), Some("input needed"));
        assert_eq!(o.pid, Some(31016));
        // A dead pid, or the pool helper under that pid: nothing.
        assert!(observations(&list, &Alive(vec![]), Utc::now()).is_empty());
        let helper = Alive(vec![(31016, vec!["claude".into(), "--bg-spare".into()])]);
        assert!(observations(&list, &helper, Utc::now()).is_empty());
    }

    #[test]
    fn an_older_claude_without_the_command_adds_nothing() {
        for out in ["", "error: unknown option '--json'", "{}", "[1, \"x\", {}]"] {
            assert!(parse_agents_list(out.as_bytes()).is_empty(), "{out}");
        }
    }

    #[test]
    #[cfg_attr(windows, ignore = "runs a shell script as the program (sh)")]
    fn the_probe_runs_a_real_program_and_is_killed_at_cancellation() {
        // A stand-in `claude` that prints the recorded list, and one that hangs.
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("claude-good");
        let script = format!("#!/bin/sh\ncat <<'EOF'\n{RECORDED}\nEOF\n");
        crate::test_executables::write_executable(&good, script.as_bytes());
        let hung = dir.path().join("claude-hung");
        crate::test_executables::write_executable(&hung, b"#!/bin/sh\nexec sleep 60\n");
        let token = CancellationToken::new();
        let out = run_probe(&good, &token).unwrap();
        assert_eq!(parse_agents_list(&out).len(), 1);
        let cancelled = CancellationToken::new();
        let canceller = cancelled.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            canceller.cancel();
        });
        let t = Instant::now();
        assert_eq!(run_probe(&hung, &cancelled), None);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }
}
