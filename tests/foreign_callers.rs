//! Foreign callers of the Claude hook: GitHub Copilot CLI and Cursor load hooks from a project's
//! `.claude/settings.json`, so `agent-tray hook --agent claude` receives their payloads. Run
//! through the real hook binary, under real (renamed) parent processes, against a real daemon:
//! none of them may become a Claude session, each is counted and named by `doctor`, and a real
//! Claude payload through the same command line still makes its session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{bin, World};
use serde_json::Value;

/// A copy of the system shell named `name`, so the kernel names the hook's parent after it (as
/// the real `copilot` or `claude` process would be).
fn shell_named(w: &World, name: &str) -> PathBuf {
    let dir = w.path().join("parents");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    if !path.exists() {
        common::copy_executable(&std::fs::canonicalize("/bin/sh").unwrap(), &path);
    }
    path
}

/// Runs the Claude hook command line as `parent -c`, payload on stdin, with extra env.
fn run_hook(w: &World, parent: &Path, payload: &str, env: &[(&str, &str)]) {
    let command = format!("{} hook --agent claude; true", bin().display());
    common::run_hook_via(w, parent, &command, payload, env);
}

fn doctor_text(w: &World) -> String {
    let out = w.run(&["doctor"]);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Copilot's recorded payloads (camelCase, `sessionId`), one per event of a real session.
fn copilot_payloads() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/copilot/real-1.0.102/hooks.jsonl"
    ))
    .unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let id = v["payload"]["sessionId"].as_str().unwrap().to_string();
            (id, serde_json::to_string(&v["payload"]).unwrap())
        })
        .collect()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook line through sh as the agent does on unix; Git Bash is not under Wine"
)]
fn copilot_and_cursor_payloads_through_the_claude_hook_make_no_claude_session() {
    let w = World::new();
    let _daemon = w.start_daemon();
    let sh = shell_named(&w, "sh");
    let copilot = shell_named(&w, "copilot");
    let claude = shell_named(&w, "claude");

    // 1. Copilot's own (camelCase) payloads, recorded from Copilot CLI 1.0.102, run by `copilot`.
    let payloads = copilot_payloads();
    for (_, payload) in payloads.iter().take(6) {
        run_hook(&w, &copilot, payload, &[]);
    }
    // 2. Copilot with a PascalCase config (what `.claude/settings.json` gives it): the
    //    VS Code-compatible snake_case shape, with its ISO `timestamp` (built by hand).
    let pascal = r#"{"session_id":"c0p1l0t0-5a5c-4a1e-9e3d-0000000000aa","hook_event_name":"PreToolUse","timestamp":"2026-11-30T23:51:30.847Z","cwd":"/home/dev/proj","tool_name":"bash","tool_input":{"command":"ls"}}"#;
    run_hook(&w, &sh, pascal, &[]);
    // 3. Cursor: its own fields (`conversation_id`, `cursor_version`).
    let cursor = r#"{"conversation_id":"cur-1","generation_id":"g-1","hook_event_name":"stop","cursor_version":"1.7.2","workspace_roots":["/home/dev/proj"],"session_id":"cur50000-0000-4000-8000-000000000001","status":"completed"}"#;
    run_hook(&w, &sh, cursor, &[]);
    // 4. Cursor's environment with a payload shaped like Claude's, and no Claude above the hook.
    let claude_shaped = |id: &str| {
        format!(
            r#"{{"session_id":"{id}","transcript_path":"/home/dev/.claude/projects/p/{id}.jsonl","cwd":"/home/dev/proj","hook_event_name":"UserPromptSubmit","prompt":"x"}}"#
        )
    };
    run_hook(
        &w,
        &sh,
        &claude_shaped("cur50000-0000-4000-8000-000000000002"),
        &[("CURSOR_VERSION", "1.7.2")],
    );
    // 5. Run by a `copilot` process, with a payload shaped like Claude's.
    run_hook(
        &w,
        &copilot,
        &claude_shaped("c0p1l0t0-5a5c-4a1e-9e3d-0000000000bb"),
        &[],
    );

    // Positive control: a real Claude, even inside Cursor's terminal (its env inherited), makes
    // its session through the very same command line.
    let real = "c1a0de00-0000-4000-8000-00000000c1a0";
    run_hook(
        &w,
        &claude,
        &claude_shaped(real),
        &[("CURSOR_VERSION", "1.7.2")],
    );
    common::wait_until(Duration::from_secs(5), || w.session(real))
        .expect("a real Claude payload still makes its session");

    let text = common::wait_until(Duration::from_secs(5), || {
        let text = doctor_text(&w);
        (text.contains("GitHub Copilot CLI") && text.contains("Cursor")).then_some(text)
    })
    .unwrap_or_else(|| panic!("foreign calls not reported:\n{}", doctor_text(&w)));
    // Copilot is an agent of its own now, with its own `doctor` lines: the foreign-call line
    // is the one that counts calls.
    let line = text
        .lines()
        .find(|l| l.contains("GitHub Copilot CLI") && l.contains('×'))
        .unwrap();
    assert!(line.contains("×8"), "6 + 1 + 1 Copilot calls: {line}");
    let line = text.lines().find(|l| l.contains("Cursor ")).unwrap();
    assert!(line.contains("×2"), "2 Cursor calls: {line}");

    let sessions = w.list();
    assert_eq!(
        sessions.len(),
        1,
        "only the real Claude session: {sessions:#?}"
    );
    let journal = w.journal_text();
    for (id, _) in &payloads {
        assert!(w.session(id).is_none());
        assert!(!journal.contains(id.as_str()), "{id} was journaled");
    }
    for id in ["c0p1l0t0", "cur50000"] {
        assert!(!journal.contains(id), "{id} was journaled");
    }
    assert!(journal.contains(real));
}
