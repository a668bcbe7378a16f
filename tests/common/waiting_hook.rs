//! A Claude `PermissionRequest` hook left waiting on an engine, as the answering tests drive it:
//! the payload Claude sends, the hook process, what it printed, and `pending --json`. Shared by
//! the tests that answer it from this machine (`answering_cli.rs`) and from another over ssh
//! (`remote_ssh.rs`).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::common::{wait_until, World};
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
        let mut child = w
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
        WaitingHook { child, started }
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

pub fn wait_for_request(w: &World, session: &str) -> Value {
    wait_until(Duration::from_secs(10), || {
        pending(w).into_iter().find(|r| r["session_id"] == session)
    })
    .unwrap_or_else(|| panic!("no request for {session} appeared in `pending`"))
}

pub fn decision(out: &str) -> Value {
    let v: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("the hook printed no JSON decision ({e}): {out:?}"));
    v["hookSpecificOutput"]["decision"].clone()
}
