//! What `status --json` says of each agent is what the README's table and the pinned real-agent
//! suite say: an agent "proven with its real binary" must have that exact version pinned for the
//! suite under `tests/e2e/agents/`, and the README's row must name the same version (or say
//! "from docs, not run" for an agent built from its documentation).
//!
//! Why a test: the table is what people read before installing anything, and it drifts the day a
//! pin moves or an agent is added without its row.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every exact version pinned by the real-agent suite's package.json files (not node_modules).
fn pinned_versions() -> Vec<(String, String)> {
    let root = repo().join("tests/e2e/agents");
    let mut files = vec![root.join("package.json")];
    if let Ok(dir) = std::fs::read_dir(&root) {
        for e in dir.flatten() {
            let p = e.path().join("package.json");
            if e.path().is_dir() && e.file_name() != "node_modules" && p.is_file() {
                files.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        for section in ["dependencies", "devDependencies", "optionalDependencies"] {
            if let Some(deps) = doc.get(section).and_then(|d| d.as_object()) {
                for (name, v) in deps {
                    if let Some(v) = v.as_str() {
                        out.push((name.clone(), v.to_string()));
                    }
                }
            }
        }
    }
    out
}

fn status_json(home: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-tray"))
        .args(["status", "--json"])
        .env("HOME", home)
        .env("AGENT_TRAY_HOME", home.join("tray"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("CLAUDE_CONFIG_DIR", home.join("claude"))
        .env("CODEX_HOME", home.join("codex"))
        .env_remove("COPILOT_HOME")
        .output()
        .expect("agent-tray status runs");
    serde_json::from_slice(&out.stdout).expect("status --json prints JSON")
}

#[test]
fn status_json_lists_every_agent_with_its_support_and_the_readme_and_pins_agree() {
    let home = tempfile::tempdir().expect("temp home");
    let report = status_json(home.path());
    let agents = report["agents"].as_array().expect("an agents list");
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let table: Vec<&str> = readme
        .split("## Every agent")
        .nth(1)
        .expect("README has an \"Every agent\" section")
        .lines()
        .filter(|l| l.starts_with("| `"))
        .collect();
    let pins = pinned_versions();
    for a in agents {
        let id = a["agent"].as_str().expect("agent id");
        for point in [
            "hooks",
            "files",
            "process",
            "answering",
            "questions",
            "send",
            "stop",
            "context",
        ] {
            assert!(
                a["supports"][point].is_boolean(),
                "{id}: supports.{point} missing in {a}"
            );
        }
        assert!(
            !a["name"].as_str().unwrap_or("").is_empty(),
            "{id}: no name"
        );
        let row = table
            .iter()
            .find(|l| l.starts_with(&format!("| `{id}`")))
            .unwrap_or_else(|| panic!("README's agent table has no row for `{id}`"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let listed: std::collections::BTreeSet<&str> = cells
            .get(5)
            .unwrap_or(&"")
            .split(", ")
            .filter_map(|p| p.split_whitespace().next())
            .collect();
        let held: std::collections::BTreeSet<&str> = a["supports"]
            .as_object()
            .expect("supports")
            .iter()
            .filter(|(_, v)| v.as_bool() == Some(true))
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(
            listed, held,
            "README's \"what works here\" for `{id}` differs from status --json's supports"
        );
        let version = a["proven"]["version"].as_str().expect("a version");
        assert!(
            row.contains(version),
            "README's row for `{id}` does not name the version {version}: {row}"
        );
        match a["proven"]["how"].as_str() {
            Some("real_binary") => {
                assert!(
                    pins.iter().any(|(_, v)| v == version),
                    "{id} is said to be proven with its real binary {version}, but no package.json under tests/e2e/agents pins it ({pins:?})"
                );
                assert!(
                    !row.contains("from docs, not run"),
                    "README says `{id}` is from docs, status says real: {row}"
                );
            }
            Some("from_docs") => assert!(
                row.contains("from docs, not run"),
                "README's row for `{id}` must say \"from docs, not run\": {row}"
            ),
            other => panic!("{id}: unknown proven.how {other:?}"),
        }
    }
    assert!(
        agents.len() >= 13,
        "status --json lists {} agents; at least 13 are expected",
        agents.len()
    );
}
