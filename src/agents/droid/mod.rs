//! Factory Droid (npm `droid`, or `@factory/cli`: both install the native binary of
//! `@factory/cli-<os>-<arch>`): Claude-shaped command hooks, the same event names and payload
//! fields, so it reuses Claude's event mapping and the same byte-safe editor.
//!
//! Read from the 0.215.0 binary's bundle and recorded from it (`tests/fixtures/droid/`):
//! - **Where hooks live.** `~/.factory/hooks.json` holds the events at its top level
//!   (`{"PreToolUse": [{matcher, hooks: [entry]}], …, "hooksDisabled": bool}`, no `hooks` key);
//!   while it is absent the older `~/.factory/hooks/hooks.json` is read instead. The `hooks`
//!   object of `~/.factory/settings.json` is still read too, and merged per event with the
//!   hooks file winning: an event the hooks file names hides that event's list in
//!   `settings.json`. So each of our events goes where it will run without hiding the user's:
//!   into `settings.json` when only that file lists the event, else into the hooks file that is
//!   read ([`placement`]). Droid reads both as JSON with comments, and ignores a whole hooks file
//!   that fails its schema (`doctor` says so).
//! - **Events.** Claude's nine: `SessionStart`, `UserPromptSubmit`, `PreToolUse`, `PostToolUse`,
//!   `Notification` (`notification_type` `permission_prompt`, `elicitation_dialog`,
//!   `idle_prompt`, as Claude's), `Stop`, `SubagentStop`, `PreCompact`, `SessionEnd`. No
//!   `PermissionRequest`: its `PreToolUse` decision (`permissionDecision` allow/deny) is honoured
//!   but runs before Droid's own permission check, for every tool call, so nothing here answers
//!   (the catalogue row says so). `droid exec` fires no `UserPromptSubmit`.
//! - **Timeout** in seconds, 60 by default; ours exits within about 100 ms, so none is written.
//! - **Folder.** `$FACTORY_HOME_OVERRIDE/.factory`, else `~/.factory`; sessions are
//!   `sessions/<-cwd-slug>/<id>.jsonl` there (the payloads' `transcript_path`).
//! - **Processes.** The interactive UI runs its agent in a child `droid exec --input-format
//!   stream-jsonrpc …`, which runs the hooks; `droid exec` alone runs them itself. The outermost
//!   `droid` above the hook owns the session ([`outermost_droid`]); `droid daemon` is a helper.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{AgentAdapter, InstallOptions};
use crate::doctor::findings::{hook_findings, Finding};
use crate::hook_payload::HookFields;
use crate::install::hooks_json::{self, parse_json_with_comments, HookSpec, HooksAt};
use crate::install::{read_optional, Action, InstallError, Plan};
use crate::model::{Agent, EventKind};
use crate::process::ProcessTable;

/// Factory Droid's adapter.
pub struct FactoryDroid;

/// The events we register (Droid knows exactly these), and whether they take a tool matcher.
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("UserPromptSubmit", false),
    ("PreToolUse", true),
    ("PostToolUse", true),
    ("Notification", false),
    ("Stop", false),
    ("SubagentStop", false),
    ("PreCompact", false),
    ("SessionEnd", false),
];

/// The hooks file Droid reads now.
pub const HOOKS_FILE: &str = "hooks.json";
/// The one it read before, still read while [`HOOKS_FILE`] is absent.
pub const LEGACY_HOOKS_FILE: &str = "hooks/hooks.json";
/// Its settings, whose `hooks` object is still read.
pub const SETTINGS_FILE: &str = "settings.json";

/// How deep the climb to the outermost `droid` goes.
const MAX_DEPTH: usize = 16;

fn droid_entry(_event: &str, command: String) -> Value {
    json!({"type": "command", "command": command})
}

/// Droid's folder: `.factory` in `$FACTORY_HOME_OVERRIDE`, else in the home folder.
pub fn droid_dir() -> Option<PathBuf> {
    let home = std::env::var_os("FACTORY_HOME_OVERRIDE")
        .filter(|v| !v.is_empty())
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()))?;
    Some(super::absolute(&PathBuf::from(home).join(".factory")))
}

/// The hooks file Droid reads in `dir`: `hooks.json`, or the older `hooks/hooks.json` while only
/// that one exists (writing a new `hooks.json` beside it would silence it).
pub fn active_hooks_file(dir: &Path, exists: &dyn Fn(&Path) -> bool) -> PathBuf {
    let current = dir.join(HOOKS_FILE);
    let legacy = dir.join(LEGACY_HOOKS_FILE);
    if !exists(&current) && exists(&legacy) {
        legacy
    } else {
        current
    }
}

/// A config file parsed as Droid reads it: JSON with comments, an object at the top.
pub fn parse_config(path: &Path, text: Option<&str>) -> Result<Value, InstallError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Value::Object(Map::new()));
    };
    let doc = parse_json_with_comments(text).map_err(|e| InstallError::Unparsable {
        path: path.to_path_buf(),
        format: "JSON with comments",
        detail: e.to_string(),
    })?;
    if !doc.is_object() {
        return Err(InstallError::Unparsable {
            path: path.to_path_buf(),
            format: "JSON with comments",
            detail: "the top level is not an object".into(),
        });
    }
    Ok(doc)
}

/// Events with whether they take a tool matcher, as [`HookSpec::for_events`] takes them.
pub type Events = Vec<(&'static str, bool)>;

/// Where each of our events goes: `(into the hooks file, into settings.json)`. An event only
/// `settings.json`'s `hooks` lists goes there, beside the user's list (in the hooks file it
/// would hide that list); every other event goes into the hooks file.
pub fn placement(hooks_doc: &Value, settings_doc: &Value) -> (Events, Events) {
    let in_hooks_file = |e: &str| hooks_doc.get(e).is_some();
    let in_settings = |e: &str| {
        settings_doc
            .get("hooks")
            .and_then(|h| h.get(e))
            .is_some_and(Value::is_array)
    };
    EVENTS
        .iter()
        .copied()
        .partition(|(e, _)| in_hooks_file(e) || !in_settings(e))
}

/// The hooks Droid runs: `settings.json`'s `hooks`, each event overridden by the hooks file's
/// (its own merge), with `hooksDisabled` the same way.
pub fn effective_hooks(hooks_doc: &Value, settings_doc: &Value) -> Map<String, Value> {
    let mut merged = settings_doc
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(file) = hooks_doc.as_object() {
        for (k, v) in file {
            merged.insert(k.clone(), v.clone());
        }
    }
    merged
}

/// Why Droid would ignore a whole hooks object (it validates each before using any of it):
/// the first entry its schema refuses, or `None` when it takes it.
pub fn schema_problem(hooks: &Map<String, Value>) -> Option<String> {
    for (event, groups) in hooks {
        if matches!(event.as_str(), "hooksDisabled" | "showHookOutput") {
            if !groups.is_boolean() {
                return Some(format!("\"{event}\" is not true or false"));
            }
            continue;
        }
        if !EVENTS.iter().any(|(e, _)| e == event) {
            continue; // Droid drops keys it does not know, and warns
        }
        let Some(groups) = groups.as_array() else {
            return Some(format!("\"{event}\" is not a list"));
        };
        for (gi, group) in groups.iter().enumerate() {
            let bad = |what: &str| Some(format!("\"{event}\"[{gi}]: {what}"));
            let Some(group) = group.as_object() else {
                return bad("not an object");
            };
            for key in ["matcher", "commandRegex"] {
                if group.get(key).is_some_and(|v| !v.is_string()) {
                    return bad(&format!("\"{key}\" is not text"));
                }
            }
            let Some(entries) = group.get("hooks").and_then(Value::as_array) else {
                return bad("\"hooks\" is not a list");
            };
            for entry in entries {
                let ok = entry.get("type").and_then(Value::as_str) == Some("command")
                    && entry.get("command").is_some_and(Value::is_string)
                    && entry.get("timeout").is_none_or(Value::is_number);
                if !ok {
                    return bad("an entry is not {\"type\": \"command\", \"command\": text, \"timeout\"?: seconds}");
                }
            }
        }
    }
    None
}

/// The pure plan over the two files' current texts: our events into the hooks file and into
/// `settings.json` as [`placement`] decides (install), or out of both (uninstall).
pub fn plan_texts(
    hooks_path: &Path,
    hooks_old: Option<&str>,
    settings_path: &Path,
    settings_old: Option<&str>,
    bin: &Path,
    action: Action,
) -> Result<Plan, InstallError> {
    let hooks_doc = parse_config(hooks_path, hooks_old)?;
    let settings_doc = parse_config(settings_path, settings_old)?;
    let (to_hooks_file, to_settings) = match action {
        Action::Install => placement(&hooks_doc, &settings_doc),
        Action::Uninstall => (EVENTS.to_vec(), EVENTS.to_vec()),
    };
    let mut plan = Plan::default();
    let hooks_spec = HookSpec::for_events(Agent::Droid, bin, &to_hooks_file, droid_entry);
    let (hooks_plan, _) = hooks_json::plan_text_at(
        hooks_path,
        hooks_old,
        &hooks_spec,
        action,
        parse_config,
        HooksAt::TopLevel,
    )?;
    plan.changes.extend(hooks_plan.changes);
    plan.notes.extend(hooks_plan.notes);
    // settings.json is touched only for an event placed there, or to take ours out of it: a
    // file without our entries stays byte for byte (a missing one is not created).
    if !to_settings.is_empty() && (settings_old.is_some() || action == Action::Install) {
        let settings_spec = HookSpec::for_events(Agent::Droid, bin, &to_settings, droid_entry);
        let (settings_plan, _) = hooks_json::plan_text_at(
            settings_path,
            settings_old,
            &settings_spec,
            action,
            parse_config,
            HooksAt::HooksKey,
        )?;
        if action == Action::Install && settings_plan.changes.iter().any(|c| c.new.is_some()) {
            plan.notes.push(format!(
                "{}: {} went beside your own hooks there ({} would hide them)",
                settings_path.display(),
                to_settings
                    .iter()
                    .map(|(e, _)| *e)
                    .collect::<Vec<_>>()
                    .join(", "),
                hooks_path.display()
            ));
        }
        plan.changes.extend(settings_plan.changes);
        plan.notes.extend(settings_plan.notes);
    }
    if action == Action::Install {
        let effective = effective_hooks(&hooks_doc, &settings_doc);
        if effective.get("hooksDisabled").and_then(Value::as_bool) == Some(true) {
            plan.notes.push(format!(
                "{}: hooksDisabled is true, so Factory Droid runs no hooks; set it to false (/hooks in droid)",
                hooks_path.display()
            ));
        }
    }
    Ok(plan)
}

/// From a droid process, climbs while the parent is also a `droid` (the interactive UI above
/// the `droid exec` child it runs its agent in): the outermost one owns the session.
pub fn outermost_droid(table: &dyn ProcessTable, pid: u32) -> u32 {
    let mut current = pid;
    for _ in 0..MAX_DEPTH {
        let Some(info) = table.info(current) else {
            return current;
        };
        if info.ppid <= 1 {
            return current;
        }
        match table.info(info.ppid) {
            Some(parent) if super::by_process_name(&parent.comm) == Some(Agent::Droid) => {
                current = info.ppid
            }
            _ => return current,
        }
    }
    current
}

impl FactoryDroid {
    fn read_docs(&self, dir: &Path) -> Result<(PathBuf, Value, PathBuf, Value), InstallError> {
        let hooks_path = self.hooks_file(dir);
        let settings_path = dir.join(SETTINGS_FILE);
        let hooks_doc = parse_config(&hooks_path, read_optional(&hooks_path)?.as_deref())?;
        let settings_doc = parse_config(&settings_path, read_optional(&settings_path)?.as_deref())?;
        Ok((hooks_path, hooks_doc, settings_path, settings_doc))
    }
}

impl AgentAdapter for FactoryDroid {
    fn agent(&self) -> Agent {
        Agent::Droid
    }

    /// A transcript under `.factory/sessions/`.
    fn payload_evidence(&self, fields: &HookFields, _event: EventKind) -> u8 {
        match fields.transcript_path.as_deref() {
            Some(p) if p.contains("/.factory/sessions/") => 3,
            _ => 0,
        }
    }

    /// `droid daemon` serves the desktop app and remote runs: no session of its own.
    fn is_helper_process(&self, argv: &[String]) -> bool {
        argv.get(1).is_some_and(|a| a == "daemon")
    }
    fn session_process(&self, table: &dyn ProcessTable, pid: u32) -> Option<u32> {
        Some(outermost_droid(table, pid))
    }

    fn config_dir(&self) -> Option<PathBuf> {
        droid_dir()
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        active_hooks_file(dir, &|p: &Path| p.exists())
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        _options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        let hooks_path = self.hooks_file(dir);
        let settings_path = dir.join(SETTINGS_FILE);
        let hooks_old = read_optional(&hooks_path)?;
        let settings_old = read_optional(&settings_path)?;
        plan_texts(
            &hooks_path,
            hooks_old.as_deref(),
            &settings_path,
            settings_old.as_deref(),
            bin,
            action,
        )
    }
    /// `hooksDisabled`, as Droid merges it (the hooks file's, else `settings.json`'s).
    fn hooks_enabled(
        &self,
        dir: &Path,
        doc: Option<&Value>,
        _bin: &Path,
        _other_files_change: bool,
    ) -> bool {
        let settings_path = dir.join(SETTINGS_FILE);
        let settings = read_optional(&settings_path)
            .ok()
            .flatten()
            .and_then(|t| parse_json_with_comments(&t).ok())
            .unwrap_or(Value::Null);
        let empty = Value::Object(Map::new());
        effective_hooks(doc.unwrap_or(&empty), &settings)
            .get("hooksDisabled")
            .and_then(Value::as_bool)
            != Some(true)
    }

    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        let Some(dir) = droid_dir() else {
            return (
                vec![Finding::Problem(
                    "cannot find Factory Droid's folder: set HOME (or FACTORY_HOME_OVERRIDE)"
                        .into(),
                )],
                None,
            );
        };
        let (hooks_path, hooks_doc, settings_path, settings_doc) = match self.read_docs(&dir) {
            Ok(docs) => docs,
            Err(e) => return (vec![Finding::Problem(e.to_string())], None),
        };
        doctor_findings(
            self.entry().product_name,
            (&hooks_path, &hooks_doc),
            (&settings_path, &settings_doc),
            bin,
            agent,
        )
    }
}

/// `doctor`'s findings over the two parsed files: our hooks as Droid will run them (the merge),
/// and what would make Droid run none of them.
pub fn doctor_findings(
    name: &str,
    (hooks_path, hooks_doc): (&Path, &Value),
    (settings_path, settings_doc): (&Path, &Value),
    bin: &Path,
    agent: Agent,
) -> (Vec<Finding>, Option<String>) {
    let mut problems = Vec::new();
    if let Some(why) = hooks_doc.as_object().and_then(schema_problem) {
        problems.push(Finding::Problem(format!(
            "{}: {why}, so Factory Droid ignores every hook in that file",
            hooks_path.display()
        )));
    }
    if let Some(why) = settings_doc
        .get("hooks")
        .and_then(Value::as_object)
        .and_then(schema_problem)
    {
        problems.push(Finding::Problem(format!(
            "{}: hooks {why}, so Factory Droid ignores every hook in that file",
            settings_path.display()
        )));
    }
    let effective = json!({"hooks": effective_hooks(hooks_doc, settings_doc)});
    if effective
        .pointer("/hooks/hooksDisabled")
        .and_then(Value::as_bool)
        == Some(true)
    {
        problems.push(Finding::Problem(format!(
            "hooksDisabled is true ({} or {}), so Factory Droid runs no hooks; set it to false (/hooks in droid)",
            hooks_path.display(),
            settings_path.display()
        )));
    }
    let events: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
    let (mut out, command) = hook_findings(
        name,
        hooks_path,
        &effective,
        &events,
        bin,
        agent,
        "agent-tray install --droid",
    );
    out.extend(problems);
    (out, command)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
