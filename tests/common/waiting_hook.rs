//! A Claude `PermissionRequest` hook left waiting on an engine, as the answering tests drive it:
//! the payload Claude sends, the hook process, what it printed, and `pending --json`. Shared by
//! the tests that answer it from this machine (`answering_cli.rs`) and from another over ssh
//! (`remote_ssh.rs`).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::common::{wait_until, RetryStart, World};
use serde_json::Value;

pub fn payload(session: &str, command: &str) -> String {
    serde_json::json!({
        "session_id": session,
        "hook_event_name": "PermissionRequest",
        "cwd": "/tmp/api-server",
        "transcript_path": format!("/tmp/.claude/projects/p/{session}.jsonl"),
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Make a file"},
        "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}], "behavior": "allow", "destination": "session"}]
    })
    .to_string()
}

/// A hook as Claude runs it for a permission request: started, fed its payload, left waiting.
pub struct WaitingHook {
    pub child: Child,
    started: Instant,
    args: Vec<String>,
    payload: String,
}

impl WaitingHook {
    pub fn start(w: &World, session: &str, command: &str) -> WaitingHook {
        Self::start_as(
            w,
            &["hook", "--agent", "claude"],
            &payload(session, command),
        )
    }

    /// Another agent's hook command line (`args` after the binary), fed `payload`.
    pub fn start_as(w: &World, args: &[&str], payload: &str) -> WaitingHook {
        let (child, started) = spawn_fed(w, args, payload);
        WaitingHook {
            child,
            started,
            args: args.iter().map(|a| a.to_string()).collect(),
            payload: payload.to_string(),
        }
    }

    /// Waits (bounded) for this hook's request to show in `pending`, and returns it.
    ///
    /// A hook gives up on the engine when its send budget (100 ms from its start) is spent
    /// before it connects, and leaves the agent to its own dialog: by design, it never holds the
    /// agent for the tray. Under Wine on a loaded machine that happens (a CI run: the request
    /// never showed). That hook has nothing left to test, so it is started again, at most twice,
    /// saying why; a hook still running with no request shown fails as before.
    pub fn wait_for_request(&mut self, w: &World, session: &str) -> Value {
        self.wait_for_request_other_than(w, session, None)
    }

    /// As `wait_for_request`, for a session that held request `earlier` before this hook asked:
    /// the request returned is this hook's, never that one.
    pub fn wait_for_request_other_than(
        &mut self,
        w: &World,
        session: &str,
        earlier: Option<&str>,
    ) -> Value {
        const STARTS: usize = 3;
        let ours = |r: &Value| r["session_id"] == session && r["id"].as_str() != earlier;
        for start in 1..=STARTS {
            let seen = wait_until(Duration::from_secs(10), || {
                if let Some(found) = pending(w).into_iter().find(ours) {
                    return Some(Some(found));
                }
                self.child.try_wait().unwrap().map(|_| None)
            });
            match seen {
                Some(Some(request)) => return request,
                Some(None) if start < STARTS => {
                    eprintln!(
                        "the hook for {session} exited before its request reached the engine \
                         (start {start} of {STARTS}); its log: {:?}; starting it again",
                        hook_log(w)
                    );
                    let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
                    (self.child, self.started) = spawn_fed(w, &args, &self.payload);
                }
                Some(None) => panic!(
                    "the hook for {session} exited before its request reached the engine, \
                     {STARTS} times; its log: {:?}",
                    hook_log(w)
                ),
                None => panic!("no request for {session} appeared in `pending`"),
            }
        }
        unreachable!("every start returns or panics")
    }

    /// Waits (bounded) for the hook to exit; its stdout, and how long it ran.
    pub fn finish(mut self, limit: Duration) -> (String, Duration) {
        let status = wait_until(limit, || self.child.try_wait().unwrap());
        if status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!("the hook was still waiting after {limit:?}");
        }
        let ran = self.started.elapsed();
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(status.unwrap().success(), "the hook always exits 0");
        (out, ran)
    }

    pub fn still_waiting(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for WaitingHook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn pending(w: &World) -> Vec<Value> {
    let out = w.run(&["pending", "--json"]);
    assert!(
        out.status.success(),
        "pending --json failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A hook process started and fed its payload, stdin then closed as an agent does.
fn spawn_fed(w: &World, args: &[&str], payload: &str) -> (Child, Instant) {
    let mut child = w
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retrying()
        .unwrap();
    let started = Instant::now();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    (child, started)
}

/// What the hooks wrote to their log (why one gave up), or "" when none did.
fn hook_log(w: &World) -> String {
    std::fs::read_to_string(w.tray_home().join("logs").join("hook.log")).unwrap_or_default()
}

pub fn decision(out: &str) -> Value {
    let v: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("the hook printed no JSON decision ({e}): {out:?}"));
    v["hookSpecificOutput"]["decision"].clone()
}
