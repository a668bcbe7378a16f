//! Test-only fixtures that several modules' unit tests share, so each scripted world is written
//! once: a process table the tests script instead of reading `/proc`.

use std::collections::HashMap;

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

/// `session` waiting on one permission request `id` to run the shell command `command` (asked
/// at `asked`, answerable for five minutes): what a row, an alert or the tray menu is shown.
pub(crate) fn with_request(
    mut session: crate::model::Session,
    id: &str,
    command: &str,
    asked: chrono::DateTime<chrono::Utc>,
) -> crate::model::Session {
    use agent_tray_domain::pending::{Accepts, AskDetail, PendingView, RequestId};
    session.pending = vec![PendingView {
        id: RequestId::parse(id),
        session_id: session.session_id.clone(),
        host: session.host.clone(),
        agent: session.agent,
        detail: AskDetail {
            tool: "Bash".into(),
            command: Some(command.into()),
            ..AskDetail::default()
        },
        asked_at: asked,
        answer_by: asked + chrono::Duration::seconds(300),
        accepts: Accepts {
            allow_for_session: true,
            deny_message: true,
        },
    }];
    session
}
