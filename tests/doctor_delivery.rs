//! `agent-tray doctor` proves delivery: with hooks installed by the real `install` into temp agent
//! folders and a real daemon, doctor runs the exact command line in each config with a probe and
//! the engine confirms it; probes never become sessions; a moved hook binary and an engine that
//! cannot be reached each fail doctor with their own line; unknown hook events sent through the
//! real hook are counted and shown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{bin, run_with_path, World};
use serde_json::Value;

/// The hook command line `install` wrote for Claude's `event`.
fn claude_command(w: &World, event: &str) -> String {
    let text = std::fs::read_to_string(w.path().join("claude/settings.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc.pointer(&format!("/hooks/{event}/0/hooks/0/command"))
        .and_then(Value::as_str)
        .unwrap()
        .to_string()
}

/// Runs a hook command line the way Claude does: `sh -c`, payload on stdin.
fn run_hook_line(w: &World, command: &str, payload: &str) {
    common::run_hook_via(w, Path::new("sh"), command, payload, &[]);
}

#[test]
fn doctor_runs_the_installed_hooks_and_the_engine_confirms_the_probes() {
    let w = World::new();
    let path = fake_agents(&w);
    install(&w, &bin(), &path);
    let daemon = w.start_daemon();

    let started = Instant::now();
    let (ok, text) = doctor(&w, &path);
    let took = started.elapsed();
    assert!(ok, "doctor failed:\n{text}");
    assert!(
        text.contains("✓ Claude Code's hook delivered a probe to Agent Tray"),
        "{text}"
    );
    assert!(
        text.contains("✓ Codex's hook delivered a probe to Agent Tray"),
        "{text}"
    );
    assert!(took < Duration::from_secs(10), "doctor took {took:?}");
    // The answer path, end to end through the same command lines, with no agent involved.
    assert!(
        text.contains("✓ Claude Code's answer path works: its hook took an answer from Agent Tray and printed it for Claude Code"),
        "{text}"
    );
    assert!(text.contains("answering from the tray is on"), "{text}");
    assert!(
        text.contains("✓ Codex's answer path works")
            && text.contains(
                "answering from the tray is off; `agent-tray answering codex on` to use it"
            ),
        "{text}"
    );

    // Probes are never sessions: not listed, not in history, not journaled for the replay.
    let list = w.list();
    assert!(
        list.iter().all(|s| !s["session_id"]
            .as_str()
            .unwrap_or("")
            .starts_with("agent-tray-probe-")),
        "{list:?}"
    );
    let history = w.run(&["history", "--json"]);
    assert!(
        !String::from_utf8_lossy(&history.stdout).contains("agent-tray-probe-"),
        "a probe in history"
    );
    assert!(
        !w.journal_text().contains("agent-tray-probe-"),
        "a probe was journaled"
    );

    // Positive control: a real event through the same command line is a session, and doctor
    // names it as the last event the engine received.
    run_hook_line(
        &w,
        &claude_command(&w, "SessionStart"),
        r#"{"session_id":"real-1","hook_event_name":"SessionStart","source":"startup","cwd":"/tmp"}"#,
    );
    assert!(common::wait_until(Duration::from_secs(5), || w.session("real-1")).is_some());
    let (ok, text) = doctor(&w, &path);
    assert!(ok, "{text}");
    assert!(
        text.contains("the engine received Claude Code's last hook event (SessionStart)"),
        "{text}"
    );
    assert!(text.contains("last Claude event: SessionStart"), "{text}");
    assert!(text.contains("version unknown"), "{text}");
    drop(daemon);
}

#[test]
fn doctor_fails_with_the_moved_line_when_the_hook_binary_is_gone() {
    let w = World::new();
    let path = fake_agents(&w);
    let old_dir = w.path().join("old-bin");
    std::fs::create_dir_all(&old_dir).unwrap();
    let copy: PathBuf = old_dir.join(format!("agent-tray{}", std::env::consts::EXE_SUFFIX));
    common::copy_executable(&bin(), &copy);
    install(&w, &copy, &path);
    std::fs::remove_file(&copy).unwrap();
    let daemon = w.start_daemon();

    let (ok, text) = doctor(&w, &path);
    assert!(
        !ok,
        "doctor passed with a hook binary that is gone:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("✗ Claude Code hook binary moved"))
        .unwrap_or_else(|| panic!("no moved line:\n{text}"));
    assert!(common::mentions_path(line, &copy), "{line}");
    assert!(line.contains("run `agent-tray install --claude`"), "{line}");
    assert!(
        text.contains("✗ Codex hook binary moved"),
        "no Codex moved line:\n{text}"
    );
    assert!(
        text.contains("✗ Codex notify binary moved"),
        "no Codex notify moved line:\n{text}"
    );

    // Positive control: installing from here again makes doctor pass.
    install(&w, &bin(), &path);
    let (ok, text) = doctor(&w, &path);
    assert!(ok, "{text}");
    drop(daemon);
}

#[test]
fn doctor_fails_with_the_engine_line_when_no_engine_runs() {
    let w = World::new();
    let path = fake_agents(&w);
    install(&w, &bin(), &path);

    let (ok, text) = doctor(&w, &path);
    assert!(!ok, "doctor passed with no engine:\n{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("✗ Agent Tray's engine cannot be reached"))
        .unwrap_or_else(|| panic!("no engine line:\n{text}"));
    assert!(line.contains("`agent-tray daemon`"), "{line}");
    assert!(!text.contains("delivered a probe"), "{text}");

    // Positive control: with the engine up, the same doctor passes.
    let daemon = w.start_daemon();
    let (ok, text) = doctor(&w, &path);
    assert!(ok, "{text}");
    drop(daemon);
}

#[test]
fn unknown_hook_events_through_the_real_hook_are_counted_and_shown_by_doctor() {
    let w = World::new();
    let path = fake_agents(&w);
    install(&w, &bin(), &path);
    let daemon = w.start_daemon();
    let command = claude_command(&w, "Stop");
    for _ in 0..2 {
        run_hook_line(
            &w,
            &command,
            r#"{"session_id":"future-1","hook_event_name":"FutureEvent","cwd":"/tmp"}"#,
        );
    }
    // Codex's notify program with a notification type this version does not know.
    let out = run_with_path(
        &w,
        &bin(),
        &path,
        &[
            "notify",
            "--agent",
            "codex",
            r#"{"type":"future-type","thread-id":"t-1"}"#,
        ],
    );
    assert!(out.status.success() && out.stdout.is_empty());
    let text = common::wait_until(Duration::from_secs(5), || {
        let (_, text) = doctor(&w, &path);
        (text.contains("FutureEvent ×2") && text.contains("future-type ×1")).then_some(text)
    })
    .unwrap_or_else(|| {
        panic!(
            "the unknown event was not counted:\n{}",
            doctor(&w, &path).1
        )
    });
    let line = text.lines().find(|l| l.contains("FutureEvent")).unwrap();
    assert!(line.starts_with("· Claude Code sent hook events"), "{line}");
    let line = text.lines().find(|l| l.contains("future-type")).unwrap();
    assert!(line.starts_with("· Codex sent hook events"), "{line}");
    // Ignored: no session for it, and nothing journaled.
    assert!(w.session("future-1").is_none());
    assert!(!w.journal_text().contains("FutureEvent"));
    drop(daemon);
}

fn fake_agents(w: &World) -> String {
    common::path_with_fake_agents(w, &["claude", "codex"])
}

fn install(w: &World, program: &Path, path: &str) {
    common::install_with_path(w, program, path, &["--trust"]);
}

fn doctor(w: &World, path: &str) -> (bool, String) {
    common::doctor_with_path(w, path)
}
