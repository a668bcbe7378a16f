//! `agent-tray doctor` for GitHub Copilot CLI, OpenCode and Gemini CLI, in a temp HOME with a
//! real daemon: after `install` each is reported hooked and its own probe (the exact command line
//! the installer wrote, fed a payload of that agent's shape) is confirmed by the engine; a hook
//! file or plugin that is missing, altered, or names a binary that is gone fails doctor with a
//! line that says which and what to run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{bin, World};

fn copilot_file(w: &World) -> PathBuf {
    w.path()
        .join("home")
        .join(".copilot")
        .join("hooks")
        .join("agent-tray.json")
}

fn opencode_file(w: &World) -> PathBuf {
    w.path()
        .join("home")
        .join(".config")
        .join("opencode")
        .join("plugins")
        .join("agent-tray.js")
}

fn gemini_file(w: &World) -> PathBuf {
    w.path().join("home").join(".gemini").join("settings.json")
}

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?}:\n{text}"))
}

#[test]
fn after_install_doctor_probes_each_agent_with_its_own_payload_and_the_engine_confirms() {
    let w = World::new();
    let path = fake_agents(&w);
    install(&w, &bin(), &path);
    let daemon = w.start_daemon();
    let (ok, text) = doctor(&w, &path);
    assert!(ok, "doctor failed:\n{text}");
    for name in ["GitHub Copilot CLI", "OpenCode", "Gemini CLI"] {
        let l = line(
            &text,
            &format!("✓ {name}'s hook delivered a probe to Agent Tray"),
        );
        assert!(common::mentions_path(l, &bin()), "{l}");
    }
    assert!(
        line(&text, "✓ OpenCode is hooked through").contains("(ours, current)"),
        "{text}"
    );
    assert!(
        text.contains("✓ GitHub Copilot CLI is hooked through"),
        "{text}"
    );
    // The probe ran the command lines the installers wrote: Copilot's sessionStart hook and the
    // plugin's `hook --agent opencode`.
    assert!(
        text.contains("hook --agent copilot --event sessionStart`"),
        "{text}"
    );
    assert!(text.contains("hook --agent opencode`"), "{text}");
    // OpenCode's answer path, proven through the plugin's command line with its own shape.
    assert!(text.contains("✓ OpenCode's answer path works"), "{text}");
    // Copilot's, through its `permissionRequest` command line (not the sessionStart one probed
    // for delivery), printing Copilot's bare behaviour; off until the user opts in.
    assert!(
        text.contains("✓ GitHub Copilot CLI's answer path works"),
        "{text}"
    );
    assert!(
        text.contains("`agent-tray answering copilot on` to use it"),
        "{text}"
    );
    // Probes are never sessions.
    assert!(
        w.list().iter().all(|s| !s["session_id"]
            .as_str()
            .unwrap_or("")
            .starts_with("agent-tray-probe-")),
        "{:?}",
        w.list()
    );
    assert!(!w.journal_text().contains("agent-tray-probe-"));
    drop(daemon);
}

#[test]
fn a_missing_hook_file_or_plugin_fails_doctor_with_the_install_to_run() {
    let w = World::new();
    let path = fake_agents(&w);
    install(&w, &bin(), &path);
    let daemon = w.start_daemon();
    std::fs::remove_file(copilot_file(&w)).unwrap();
    std::fs::remove_file(opencode_file(&w)).unwrap();
    std::fs::write(gemini_file(&w), "{}\n").unwrap();
    let (ok, text) = doctor(&w, &path);
    assert!(!ok, "doctor passed with no hooks:\n{text}");
    let l = line(&text, "✗ OpenCode is not hooked:");
    assert!(
        l.contains(&opencode_file(&w).display().to_string()) && l.contains("is missing"),
        "{l}"
    );
    assert!(l.contains("run `agent-tray install --opencode`"), "{l}");
    let l = line(&text, "✗ GitHub Copilot CLI is not hooked:");
    assert!(l.contains("run `agent-tray install --copilot`"), "{l}");
    let l = line(&text, "✗ Gemini CLI hooks are not installed");
    assert!(l.contains("run `agent-tray install --gemini`"), "{l}");
    assert!(!text.contains("delivered a probe"), "{text}");
    // Positive control: installing again makes doctor pass.
    install(&w, &bin(), &path);
    let (ok, text) = doctor(&w, &path);
    assert!(ok, "{text}");
    drop(daemon);
}

#[test]
fn an_altered_hook_file_or_plugin_fails_doctor_and_names_the_file() {
    let w = World::new();
    let path = fake_agents(&w);
    install(&w, &bin(), &path);
    let daemon = w.start_daemon();
    let plugin = opencode_file(&w);
    let text = std::fs::read_to_string(&plugin).unwrap();
    std::fs::write(
        &plugin,
        text.replace("const MAX_OPEN = 64;", "const MAX_OPEN = 8;"),
    )
    .unwrap();
    let hooks = copilot_file(&w);
    let text = std::fs::read_to_string(&hooks).unwrap();
    std::fs::write(
        &hooks,
        text.replacen("\"timeoutSec\": 5", "\"timeoutSec\": 60", 1),
    )
    .unwrap();
    let (ok, text) = doctor(&w, &path);
    assert!(!ok, "doctor passed with altered files:\n{text}");
    let l = line(
        &text,
        &format!("✗ {} is not what this agent-tray writes", plugin.display()),
    );
    assert!(
        l.contains("run `agent-tray install --opencode` to rewrite it"),
        "{l}"
    );
    let l = line(
        &text,
        &format!("✗ {} is not what this agent-tray writes", hooks.display()),
    );
    assert!(l.contains("run `agent-tray install --copilot`"), "{l}");
    // The command lines in them still run: the probes say delivery works.
    assert!(
        text.contains("✓ OpenCode's hook delivered a probe"),
        "{text}"
    );
    assert!(
        text.contains("✓ GitHub Copilot CLI's hook delivered a probe"),
        "{text}"
    );
    // A file at our path that we did not write: refused, with what to do.
    std::fs::write(&plugin, "export const Mine = async () => ({})\n").unwrap();
    let (ok, text) = doctor(&w, &path);
    assert!(!ok, "{text}");
    let l = text
        .lines()
        .find(|l| l.starts_with("✗ ") && l.contains("not written by agent-tray"))
        .unwrap_or_else(|| panic!("no refusal line:\n{text}"));
    assert!(
        l.contains("move that file away, then run `agent-tray install --opencode`"),
        "{l}"
    );
    drop(daemon);
}

#[test]
fn a_hook_file_or_plugin_naming_a_binary_that_is_gone_fails_doctor_with_the_path() {
    let w = World::new();
    let path = fake_agents(&w);
    let old_dir = w.path().join("old-bin");
    std::fs::create_dir_all(&old_dir).unwrap();
    let copy = old_dir.join(format!("agent-tray{}", std::env::consts::EXE_SUFFIX));
    common::copy_executable(&bin(), &copy);
    install(&w, &copy, &path);
    std::fs::remove_file(&copy).unwrap();
    let daemon = w.start_daemon();
    let (ok, text) = doctor(&w, &path);
    assert!(!ok, "doctor passed with a binary that is gone:\n{text}");
    for file in [opencode_file(&w), copilot_file(&w)] {
        let l = line(&text, &format!("✗ {} runs ", file.display()));
        assert!(
            common::mentions_path(l, &copy) && l.contains(", which no longer exists"),
            "{l}"
        );
        assert!(l.contains("event is lost"), "{l}");
        let (_, pointed_at) = l.split_once("to point it at ").unwrap_or_default();
        assert!(common::mentions_path(pointed_at, &bin()), "{l}");
    }
    let l = line(&text, "✗ Gemini CLI hook binary moved");
    assert!(
        common::mentions_path(l, &copy) && l.contains("run `agent-tray install --gemini`"),
        "{l}"
    );
    assert!(
        !text.contains("delivered a probe"),
        "nothing to probe:\n{text}"
    );
    // Positive control: installing from here again makes doctor pass.
    install(&w, &bin(), &path);
    let (ok, text) = doctor(&w, &path);
    assert!(ok, "{text}");
    drop(daemon);
}

fn fake_agents(w: &World) -> String {
    common::path_with_fake_agents(w, &["copilot", "opencode", "gemini"])
}

fn install(w: &World, program: &Path, path: &str) {
    common::install_with_path(w, program, path, &["--copilot", "--opencode", "--gemini"]);
}

fn doctor(w: &World, path: &str) -> (bool, String) {
    common::doctor_with_path(w, path)
}
