//! What `doctor` finds, and the checks an adapter's own doctor is built from: the findings, the
//! check of our hook entries in an agent's hooks file, the probe payload most agents accept.
//!
//! Why apart from `doctor` itself: the adapters build their checks from these, and `doctor`'s
//! run loops over the adapters; with both in one module the adapters and `doctor` imported each
//! other. This kit sits below the adapters and names none of them.

use std::path::Path;

use serde_json::Value;

use crate::install::{self, Ownership};
use crate::model::Agent;

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Ok(String),
    Note(String),
    Problem(String),
}

/// The findings, and the hook command line to probe (ours, as written in the config).
pub type HookCheck = (Vec<Finding>, Option<String>);

pub fn hook_findings(
    name: &str,
    path: &Path,
    doc: &Value,
    events: &[&str],
    bin: &Path,
    agent: Agent,
    fix: &str,
) -> HookCheck {
    let mut command = None;
    let mut gone = Vec::new();
    let mut current = Vec::new();
    let mut moved = Vec::new();
    let mut edited = Vec::new();
    let mut missing = Vec::new();
    for event in events {
        let mut found = None;
        let groups = doc
            .pointer(&format!("/hooks/{event}"))
            .and_then(Value::as_array);
        for group in groups.map(Vec::as_slice).unwrap_or(&[]) {
            for entry in group
                .get("hooks")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
            {
                let cmd = entry.get("command").and_then(Value::as_str).unwrap_or("");
                match install::ownership(cmd, bin, agent) {
                    Ownership::NotOurs => {}
                    o => {
                        // The first of ours is what gets probed: the agent runs exactly this.
                        if command.is_none() && o != Ownership::Edited {
                            command = Some(cmd.to_string());
                        }
                        found = Some(o);
                    }
                }
            }
        }
        match found {
            Some(Ownership::Current) => current.push(*event),
            Some(Ownership::Moved(old)) if !Path::new(&old).exists() => {
                if !gone.contains(&old) {
                    gone.push(old);
                }
            }
            Some(Ownership::Moved(old)) => moved.push(format!("{event} ({old})")),
            Some(_) => edited.push(*event),
            None => missing.push(*event),
        }
    }
    let mut out = Vec::new();
    if missing.len() == events.len() {
        out.push(Finding::Problem(format!(
            "{name} hooks are not installed in {}; run `{fix}`",
            path.display()
        )));
        return (out, None);
    }
    if !gone.is_empty() {
        out.push(Finding::Problem(format!(
            "{name} hook binary moved: {} (named in {}) no longer exists, so every {name} hook fails; run `{fix}` to point them at {}",
            gone.join(", "),
            path.display(),
            bin.display()
        )));
        // Nothing to probe: the command cannot run.
        command = None;
    }
    if !missing.is_empty() {
        out.push(Finding::Problem(format!(
            "{name} hooks missing for {}; run `{fix}`",
            missing.join(", ")
        )));
    }
    if !moved.is_empty() {
        out.push(Finding::Problem(format!(
            "{name} hooks run another agent-tray: {}; run `{fix}` to point them here",
            moved.join(", ")
        )));
    }
    if !edited.is_empty() {
        out.push(Finding::Note(format!(
            "{name} hooks you edited (left alone): {}",
            edited.join(", ")
        )));
    }
    if missing.is_empty() && moved.is_empty() && gone.is_empty() {
        out.push(Finding::Ok(format!(
            "{name} hooks are installed and current ({})",
            path.display()
        )));
    }
    (out, command)
}

/// The folder `doctor` runs in, for a probe payload's `cwd`.
pub fn probe_cwd() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

/// The payload Claude Code would send, reduced to what the hook needs, with a probe session id
/// (an adapter's default probe payload).
pub fn probe_payload(probe_id: &str) -> Vec<u8> {
    let cwd = probe_cwd();
    serde_json::json!({
        "session_id": probe_id,
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": cwd,
        "probe": true,
    })
    .to_string()
    .into_bytes()
}
