//! Test-only fixtures that several modules' unit tests share, so each scripted world is written
//! once: a process table the tests script instead of reading `/proc`.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The environment variable that makes [`tests::a_sleeper_when_asked`] sleep.
const SLEEP_SECS: &str = "AGENT_TRAY_TEST_SLEEP_SECS";

/// A real child process that sleeps `secs` and exits 0, on every OS (Windows has no `sleep`):
/// this very test binary, running only the test that sleeps when asked.
pub(crate) fn spawn_sleeper(secs: u64) -> Child {
    #[allow(clippy::expect_used)]
    let exe = std::env::current_exe().expect("the test binary's path");
    // A spawn can fail for a moment on a busy machine (EAGAIN): try a few times, then say why.
    let mut last = None;
    for _ in 0..5 {
        match Command::new(&exe)
            .args([
                "--exact",
                "test_support::tests::a_sleeper_when_asked",
                "--test-threads=1",
                "-q",
            ])
            .env(SLEEP_SECS, secs.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => return child,
            Err(e) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    panic!(
        "the test binary {} did not start again: {last:?}",
        exe.display()
    )
}

/// How long [`spawn_sleeper`]'s child sleeps (none when not asked).
fn asked_sleep() -> Option<Duration> {
    std::env::var(SLEEP_SECS)
        .ok()?
        .parse()
        .ok()
        .map(Duration::from_secs)
}

use crate::process::{ProcInfo, ProcessTable};

/// A scripted process table: pid → (ppid, comm, argv). Children are the processes whose ppid
/// names the parent; no process has a start token.
#[derive(Debug, Default, Clone)]
pub(crate) struct ScriptedTable(HashMap<u32, (u32, String, Vec<String>)>);

impl ScriptedTable {
    /// Adds a process with its argument vector.
    pub(crate) fn with(self, pid: u32, ppid: u32, comm: &str, argv: &[&str]) -> Self {
        self.with_argv(
            pid,
            ppid,
            comm,
            argv.iter().map(|a| a.to_string()).collect(),
        )
    }

    /// Adds a process with an owned argument vector (read from a recording).
    pub(crate) fn with_argv(mut self, pid: u32, ppid: u32, comm: &str, argv: Vec<String>) -> Self {
        self.0.insert(pid, (ppid, comm.to_string(), argv));
        self
    }

    /// A table from rows of (pid, ppid, comm, command line split on white space).
    pub(crate) fn from_rows(rows: &[(u32, u32, &str, &str)]) -> Self {
        rows.iter()
            .fold(Self::default(), |t, (pid, ppid, comm, cmd)| {
                let argv = cmd.split_whitespace().map(String::from).collect();
                t.with_argv(*pid, *ppid, comm, argv)
            })
    }
}

impl ProcessTable for ScriptedTable {
    fn info(&self, pid: u32) -> Option<ProcInfo> {
        self.0.get(&pid).map(|(ppid, comm, _)| ProcInfo {
            ppid: *ppid,
            comm: comm.clone(),
        })
    }
    fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
        self.0.get(&pid).map(|(_, _, argv)| argv.clone())
    }
    fn exists(&self, pid: u32) -> bool {
        self.0.contains_key(&pid)
    }
    fn start_token(&self, _pid: u32) -> Option<String> {
        None
    }
    fn children(&self, pid: u32) -> Vec<u32> {
        let mut children: Vec<u32> = self
            .0
            .iter()
            .filter(|(_, p)| p.0 == pid)
            .map(|(c, _)| *c)
            .collect();
        children.sort_unstable();
        children
    }
}

/// The JSON lines of a fixture recorded from a real agent, `rel` under `tests/fixtures/`
/// (tests/fixtures/*/README.md says how each was recorded).
pub(crate) fn recorded_json_lines(rel: &str) -> Vec<serde_json::Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("fixture {rel}: {e}")))
        .collect()
}

/// A session `s1` of the first agent registered, in `state`, first seen now, nothing else known.
pub(crate) fn session_in(state: crate::model::SessionState) -> crate::model::Session {
    let agent = crate::model::Agent::ALL[0];
    crate::model::Session::new("s1", agent, state, chrono::Utc::now())
}

/// `session` waiting on one permission request `id` to run the shell command `command` (asked
/// at `asked`, answerable for five minutes): what a row, an alert or the tray menu is shown.
pub(crate) fn with_request(
    mut session: crate::model::Session,
    id: &str,
    command: &str,
    asked: chrono::DateTime<chrono::Utc>,
) -> crate::model::Session {
    use agent_tray_domain::pending::{Accepts, AskDetail, PendingView, RequestId, ShownRequest};
    let detail = AskDetail {
        tool: "Bash".into(),
        command: Some(command.into()),
        input: serde_json::json!({"command": command}).to_string(),
        ..AskDetail::default()
    };
    session.pending = vec![PendingView {
        id: RequestId::parse(id),
        session_id: session.session_id.clone(),
        host: session.host.clone(),
        agent: session.agent,
        kind: Default::default(),
        shown: ShownRequest::of(&detail, session.host.is_none()),
        detail,
        asked_at: asked,
        answer_by: asked + chrono::Duration::seconds(300),
        accepts: Accepts {
            allow_for_session: true,
            deny_message: true,
        },
    }];
    session
}

/// `session` waiting on one question request `id` asking `questions` (Claude's shape: every
/// question takes words of one's own), asked at `asked`.
pub(crate) fn with_question(
    mut session: crate::model::Session,
    id: &str,
    questions: Vec<agent_tray_domain::pending::Question>,
    asked: chrono::DateTime<chrono::Utc>,
) -> crate::model::Session {
    use agent_tray_domain::pending::{Accepts, AskDetail, PendingView, RequestId, ShownRequest};
    let detail = AskDetail {
        tool: "AskUserQuestion".into(),
        questions: Some(questions),
        ..AskDetail::default()
    };
    session.pending = vec![PendingView {
        id: RequestId::parse(id),
        session_id: session.session_id.clone(),
        host: session.host.clone(),
        agent: session.agent,
        kind: detail.kind(),
        shown: ShownRequest::of(&detail, session.host.is_none()),
        detail,
        asked_at: asked,
        answer_by: asked + chrono::Duration::seconds(300),
        accepts: Accepts {
            allow_for_session: false,
            deny_message: true,
        },
    }];
    session
}

/// A question as Claude asks it, with these option labels.
pub(crate) fn question(
    text: &str,
    labels: &[&str],
    multi_select: bool,
) -> agent_tray_domain::pending::Question {
    agent_tray_domain::pending::Question {
        question: text.into(),
        header: None,
        options: labels
            .iter()
            .map(|l| agent_tray_domain::pending::QuestionOption {
                label: (*l).into(),
                description: None,
            })
            .collect(),
        multi_select,
        allows_other: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not a check: the body of [`spawn_sleeper`]'s child. Run as an ordinary test it is not
    /// asked and returns at once.
    #[test]
    fn a_sleeper_when_asked() {
        if let Some(sleep) = asked_sleep() {
            std::thread::sleep(sleep);
        }
    }

    #[test]
    fn a_sleeper_runs_until_it_is_killed() {
        let mut child = spawn_sleeper(600);
        std::thread::sleep(Duration::from_millis(300));
        assert!(child.try_wait().unwrap_or(None).is_none(), "still running");
        let _ = child.kill();
        assert!(child.wait().is_ok_and(|s| !s.success()));
    }
}
