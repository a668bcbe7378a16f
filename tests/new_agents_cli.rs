//! GitHub Copilot CLI and OpenCode through the real binary: `install`/`uninstall --copilot`,
//! `--opencode` (our own files: `--dry-run`, idempotence, a file we did not write refused
//! untouched, a backup kept), and their hook command lines delivering the recorded payloads to a
//! running daemon.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::path::PathBuf;
use std::time::Duration;

use common::{run_hook_via, wait_until, World};

fn copilot_file(w: &World) -> PathBuf {
    w.path().join("home/.copilot/hooks/agent-tray.json")
}

fn opencode_file(w: &World) -> PathBuf {
    w.path().join("home/.config/opencode/plugins/agent-tray.js")
}

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn install_copilot_writes_our_own_file_once_and_uninstall_removes_exactly_it() {
    // A user installs the Copilot hooks: a dry run shows the file and writes nothing, the install
    // creates it, a second install changes nothing, the uninstall removes it (keeping a backup
    // Copilot never loads), and another tool's hook file beside it is never touched.
    let w = World::new();
    let theirs = w.path().join("home/.copilot/hooks/theirs.json");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, "{\"version\":1,\"hooks\":{}}\n").unwrap();
    let dry = w.run(&["install", "--copilot", "--dry-run", "--allow-insecure-path"]);
    assert!(dry.status.success(), "{}", out(&dry));
    assert!(out(&dry).contains("--event agentStop"), "{}", out(&dry));
    assert!(!copilot_file(&w).exists(), "--dry-run wrote the file");
    let first = w.run(&["install", "--copilot", "--allow-insecure-path"]);
    assert!(first.status.success(), "{}", out(&first));
    let text = std::fs::read_to_string(copilot_file(&w)).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["hooks"]["preToolUse"][0]["timeoutSec"], 5);
    let again = w.run(&["install", "--copilot", "--allow-insecure-path"]);
    assert!(
        out(&again).contains("already done"),
        "a second install changed something: {}",
        out(&again)
    );
    let gone = w.run(&["uninstall", "--copilot"]);
    assert!(gone.status.success(), "{}", out(&gone));
    assert!(!copilot_file(&w).exists(), "uninstall left our file");
    let jsons: Vec<String> = std::fs::read_dir(theirs.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(
        jsons,
        ["theirs.json"],
        "only the other tool's file stays loadable"
    );
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "{\"version\":1,\"hooks\":{}}\n"
    );
}

#[test]
fn a_plugin_at_our_path_that_we_did_not_write_is_refused_untouched() {
    // Someone else's agent-tray.js in OpenCode's plugins folder: install and uninstall both
    // refuse, with the path in the message, and leave it byte for byte.
    let w = World::new();
    let p = opencode_file(&w);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "export const Mine = async () => ({})\n").unwrap();
    for args in [
        &["install", "--opencode", "--allow-insecure-path"][..],
        &["uninstall", "--opencode"][..],
    ] {
        let o = w.run(args);
        assert!(!o.status.success(), "{args:?} accepted a foreign plugin");
        assert!(out(&o).contains("not written by agent-tray"), "{}", out(&o));
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "export const Mine = async () => ({})\n"
        );
    }
    // Positive control: once it is gone, install writes ours.
    std::fs::remove_file(&p).unwrap();
    let o = w.run(&["install", "--opencode", "--allow-insecure-path"]);
    assert!(o.status.success(), "{}", out(&o));
    assert!(std::fs::read_to_string(&p)
        .unwrap()
        .starts_with("// agent-tray plugin for OpenCode"));
}

#[test]
fn the_copilot_and_opencode_hook_command_lines_deliver_their_recorded_payloads() {
    // The agents run exactly what install wrote, with their own payload shapes on stdin.
    let w = World::new();
    let _daemon = w.start_daemon();
    let bin = common::bin().display().to_string();
    let sh = std::path::Path::new("/bin/sh");
    let copilot = r#"{"sessionId":"da763f3d-1272-45ca-939d-52e915d454e7","timestamp":1796082691080,"cwd":"/home/dev/lab/rt/work","toolName":"bash","toolInput":{"command":"touch hello.txt"},"hookName":"permissionRequest","permissionSuggestions":[]}"#;
    run_hook_via(
        &w,
        sh,
        &format!("{bin} hook --agent copilot --event permissionRequest"),
        copilot,
        &[],
    );
    let s = wait_until(Duration::from_secs(5), || {
        w.session("da763f3d-1272-45ca-939d-52e915d454e7")
    })
    .expect("the Copilot session is listed");
    assert_eq!(s["agent"], "copilot");
    assert_eq!(s["state"], "waiting_for_permission");
    assert_eq!(s["cwd"], "/home/dev/lab/rt/work");
    // Answering off: this hook delivers and returns (on, it would wait for an answer: see
    // tests/opencode_plugin.rs).
    let off = w.run(&["answering", "opencode", "off"]);
    assert!(off.status.success(), "{}", out(&off));
    let opencode = r#"{"v":1,"pid":999999,"directory":"/home/dev/proj","ts":1796082597000,"type":"permission.asked","properties":{"id":"per_1","sessionID":"ses_dd1229c72ffen4TkoQjVFBx9Vv","permission":"bash"}}"#;
    run_hook_via(
        &w,
        sh,
        &format!("{bin} hook --agent opencode"),
        opencode,
        &[],
    );
    let s = wait_until(Duration::from_secs(5), || {
        w.session("ses_dd1229c72ffen4TkoQjVFBx9Vv")
    })
    .expect("the OpenCode session is listed");
    assert_eq!(s["agent"], "opencode");
    assert_eq!(s["state"], "waiting_for_permission");
    assert_eq!(s["cwd"], "/home/dev/proj");
}

#[test]
fn status_names_the_copilot_version_from_the_sessions_folder() {
    // Copilot's hooks send no version; the session folder's first line does. A hook event of a
    // session whose folder holds the recorded events.jsonl: `status --json` names 1.0.102.
    let w = World::new();
    let id = "da763f3d-1272-45ca-939d-52e915d454e7";
    let dir = w.path().join("home/.copilot/session-state").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/copilot/real-1.0.102/session-state/da763f3d-1272-45ca-939d-52e915d454e7/events.jsonl"
        ),
        dir.join("events.jsonl"),
    )
    .unwrap();
    let bin = common::bin().display().to_string();
    let payload = format!(
        r#"{{"sessionId":"{id}","timestamp":1796082693107,"cwd":"/home/dev/lab/rt/work","stopReason":"end_turn"}}"#
    );
    run_hook_via(
        &w,
        std::path::Path::new("/bin/sh"),
        &format!("{bin} hook --agent copilot --event agentStop"),
        &payload,
        &[],
    );
    let status = w.run(&["status", "--json"]);
    let text = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        text.contains("1.0.102"),
        "status names no Copilot version: {text}"
    );
    // Positive control: the journaled event is there (the version is read beside it).
    assert!(text.contains(id), "{text}");
}

#[test]
#[cfg(unix)] // a copy of /bin/sleep stands for OpenCode's binary, found by its executable path
fn status_names_the_opencode_version_from_the_package_of_its_running_binary() {
    // OpenCode sends no version; the process the plugin names runs a binary from the
    // `opencode-ai` npm package, whose package.json names it. A real process (a copy of `sleep`
    // at `opencode-ai/bin/opencode`) sends a plugin event; `status --json` names 1.18.33.
    let w = World::new();
    let pkg = w.path().join("npm/node_modules/opencode-ai");
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name":"opencode-ai","version":"1.18.33","bin":{"opencode":"./bin/opencode.exe"}}"#,
    )
    .unwrap();
    let exe = pkg.join("bin/opencode");
    common::copy_executable(std::path::Path::new("/bin/sleep"), &exe);
    let mut child = std::process::Command::new(&exe)
        .arg("30")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn_retrying()
        .unwrap();
    let id = "ses_dd1229c72ffen4TkoQjVFBx9Vv";
    let event = format!(
        r#"{{"v":1,"pid":{},"directory":"/home/dev/proj","ts":1796082597000,"type":"session.status","properties":{{"sessionID":"{id}","status":{{"type":"busy"}}}}}}"#,
        child.id()
    );
    let bin = common::bin().display().to_string();
    run_hook_via(
        &w,
        std::path::Path::new("/bin/sh"),
        &format!("{bin} hook --agent opencode"),
        &event,
        &[],
    );
    let status = w.run(&["status", "--json"]);
    let text = String::from_utf8_lossy(&status.stdout).to_string();
    common::kill_hard(child.id());
    let _ = child.wait();
    assert!(text.contains(id), "the event is there: {text}");
    assert!(
        text.contains(r#""agent_version": "1.18.33""#),
        "status names no OpenCode version: {text}"
    );
}
