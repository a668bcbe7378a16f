//! The byte-safe editor of a JSON `{"hooks": {Event: [{matcher?, hooks: [entry]}]}}` object:
//! Claude Code's `settings.json` shape, which Codex's `hooks.json`, Gemini CLI's and Qwen Code's
//! `settings.json` copied. Shared machinery that takes the agent's [`HookSpec`] as a parameter;
//! which events and which entry an agent writes is its adapter's (`src/agents/<id>/`).
//!
//! Some agents that took Claude's event names keep the entries straight in the event's list
//! (`{"hooks": {Event: [{matcher?, command, …}]}}`, no groups): [`HookLayout::Flat`]. The same
//! editor serves them, each entry standing where a group would.

use std::path::Path;

use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstObjectProp, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

use super::{hook_command, ownership, Action, FileChange, InstallError, Ownership, Plan};
use crate::model::Agent;

/// One event's hook entry and group, as we write them.
#[derive(Debug, Clone)]
pub struct HookSpec<'a> {
    pub agent: Agent,
    pub bin: &'a Path,
    /// (event, matcher)
    pub events: Vec<(&'static str, Option<&'static str>)>,
    /// The entry for an event.
    pub entry: fn(&str, String) -> Value,
    /// Whether entries sit in groups or straight in the event's list.
    pub layout: HookLayout,
}

/// Where an event's hook entries sit in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HookLayout {
    /// `Event: [{matcher?, hooks: [entry, …]}, …]` (Claude Code's shape).
    #[default]
    Grouped,
    /// `Event: [entry, …]`, the matcher (if any) inside the entry.
    Flat,
}

impl<'a> HookSpec<'a> {
    /// Our hooks for `events` ((event, takes a tool matcher)): a tool event gets the matcher `*`.
    pub fn for_events(
        agent: Agent,
        bin: &'a Path,
        events: &[(&'static str, bool)],
        entry: fn(&str, String) -> Value,
    ) -> Self {
        HookSpec {
            agent,
            bin,
            events: events
                .iter()
                .map(|(e, tools)| (*e, tools.then_some("*")))
                .collect(),
            entry,
            layout: HookLayout::Grouped,
        }
    }

    /// The same hooks, entries straight in each event's list and no matcher written (a flat
    /// entry without one matches every tool).
    pub fn flat(mut self) -> Self {
        self.layout = HookLayout::Flat;
        for (_, matcher) in &mut self.events {
            *matcher = None;
        }
        self
    }
}

/// A flat hooks document ([`HookLayout::Flat`]) seen in the grouped shape (each entry its own
/// group), so what reads the grouped shape (`doctor`'s findings) reads it too.
pub fn flat_as_grouped(doc: &Value) -> Value {
    let mut out = doc.clone();
    if let Some(hooks) = out.get_mut("hooks").and_then(Value::as_object_mut) {
        for entries in hooks.values_mut() {
            if let Some(list) = entries.as_array_mut() {
                for entry in list.iter_mut() {
                    let wrapped = serde_json::json!({ "hooks": [entry.take()] });
                    *entry = wrapped;
                }
            }
        }
    }
    out
}

/// A hook's place: (group index, hook index) within an event's list.
pub type Position = (usize, usize);

/// Where each of our entries sits, and how the others moved (for Codex's trust, which follows
/// positions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HooksEdit {
    pub changed: bool,
    /// (event, group, hook) of each entry of ours after the edit.
    pub ours: Vec<(String, usize, usize)>,
    /// (event, old (group, hook), new (group, hook)) of entries not ours whose position changed.
    pub moved: Vec<(String, Position, Position)>,
    /// (event, group, hook) of entries of ours removed (their old positions).
    pub removed: Vec<(String, usize, usize)>,
    pub notes: Vec<String>,
}

/// Why [`edit_hooks`] left a hooks document alone. The text is today's detail line of
/// `InstallError::Unexpected`, so what the user reads does not change.
#[derive(Debug, thiserror::Error)]
pub enum EditHooksError {
    /// The text is not JSON the syntax tree reads (callers check it with a strict parser first,
    /// so this is rare).
    #[error("{0}")]
    Syntax(#[from] jsonc_parser::errors::ParseError),
    #[error("the top level is not a JSON object")]
    TopLevelNotObject,
    #[error("\"hooks\" is not a JSON object")]
    HooksNotObject,
    #[error("cannot add \"hooks\"")]
    CannotAddHooks,
    #[error("\"hooks\".\"{event}\" is not a list")]
    EventNotList { event: String },
    /// The safety net: the edit itself produced text that does not parse back.
    #[error("editing produced invalid JSON ({0}); please report this")]
    ProducedInvalidJson(ParseJsonError),
}

/// Why [`parse_json_with_comments`] refused a text: the parser's own message.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ParseJsonError(#[from] jsonc_parser::errors::ParseError);

/// The result of [`edit_hooks`]: the new text, its parsed value, and what moved.
#[derive(Debug, Clone)]
pub struct EditedHooks {
    /// The whole file's new text; equal to the input when nothing changed.
    pub text: String,
    /// `text`, parsed (for Codex's trust hashes, which are computed over the groups).
    pub doc: Value,
    pub edit: HooksEdit,
}

/// Installs or removes our entries in the text of a `{"hooks": {...}}` document.
///
/// The text is edited through a concrete syntax tree (`jsonc-parser`), not re-serialised: every
/// number and string of the user's stays the bytes they wrote (`1e3` stays `1e3`, a 30-digit
/// integer keeps its digits, `"\u00fc"` keeps its escape), and so do the layout and the key
/// order. Our groups are appended in the file's own indent; removing them takes back exactly
/// what appending added. `text` must already be valid JSON (see [`parse_json`]); empty means
/// `{}`.
pub fn edit_hooks(
    text: &str,
    spec: &HookSpec<'_>,
    action: Action,
    file: &Path,
) -> Result<EditedHooks, EditHooksError> {
    edit_hooks_at(text, spec, action, file, HooksAt::HooksKey)
}

/// Where a file keeps its events: under a `hooks` key (Claude Code's `settings.json` and its
/// copies) or at its top level (Factory Droid's `hooks.json`: `{Event: [...], "hooksDisabled":
/// …}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HooksAt {
    HooksKey,
    TopLevel,
}

impl HooksAt {
    /// The events object of a parsed document, where it has one.
    pub fn events_of(self, doc: &Value) -> Option<&Map<String, Value>> {
        match self {
            HooksAt::HooksKey => doc.get("hooks").and_then(Value::as_object),
            HooksAt::TopLevel => doc.as_object(),
        }
    }
}

/// [`edit_hooks`] for a file whose events sit where `at` says.
pub fn edit_hooks_at(
    text: &str,
    spec: &HookSpec<'_>,
    action: Action,
    file: &Path,
    at: HooksAt,
) -> Result<EditedHooks, EditHooksError> {
    let source = if text.trim().is_empty() { "{}\n" } else { text };
    let root = CstRootNode::parse(source, &ParseOptions::default())?;
    let obj = root
        .value()
        .and_then(|v| v.as_object())
        .ok_or(EditHooksError::TopLevelNotObject)?;
    let mut edit = HooksEdit::default();
    let hooks = match at {
        HooksAt::TopLevel => Some(obj.clone()),
        HooksAt::HooksKey => match last_prop(&obj, "hooks") {
            Some(prop) => Some(
                prop.value()
                    .and_then(|v| v.as_object())
                    .ok_or(EditHooksError::HooksNotObject)?,
            ),
            None => None,
        },
    };
    let hooks = match (hooks, action) {
        (Some(h), _) => h,
        (None, Action::Uninstall) => return finish(source, &root, edit, spec, at),
        (None, Action::Install) => {
            obj.append("hooks", CstInputValue::Object(Vec::new()));
            edit.changed = true;
            last_prop(&obj, "hooks")
                .and_then(|p| p.value())
                .and_then(|v| v.as_object())
                .ok_or(EditHooksError::CannotAddHooks)?
        }
    };
    let command = hook_command(spec.bin, spec.agent);
    for (event, matcher) in &spec.events {
        let event_prop = last_prop(&hooks, event);
        let groups = match &event_prop {
            Some(prop) => Some(prop.value().and_then(|v| v.as_array()).ok_or_else(|| {
                EditHooksError::EventNotList {
                    event: event.to_string(),
                }
            })?),
            None => None,
        };
        let mut have_ours = false;
        if let Some(groups) = &groups {
            let mut removed_any = false;
            // (old group index, old hook indices kept) of the groups that stay.
            let mut kept_groups: Vec<(usize, Vec<usize>)> = Vec::new();
            // Each unit: (group index, the group's node where a group holds the entries, its
            // entries). A flat list is one unit with no group of its own.
            let units: Vec<(usize, Option<CstNode>, Option<CstArray>)> = match spec.layout {
                HookLayout::Grouped => groups
                    .elements()
                    .into_iter()
                    .enumerate()
                    .map(|(gi, group)| {
                        let entries = group
                            .as_object()
                            .and_then(|g| last_prop(&g, "hooks"))
                            .and_then(|p| p.value())
                            .and_then(|v| v.as_array());
                        (gi, Some(group), entries)
                    })
                    .collect(),
                HookLayout::Flat => vec![(0, None, Some(groups.clone()))],
            };
            for (gi, group, entries) in units {
                let Some(entries) = entries else {
                    kept_groups.push((gi, Vec::new()));
                    continue;
                };
                let mut kept = Vec::new();
                let mut lost = Vec::new();
                for (hi, entry) in entries.elements().into_iter().enumerate() {
                    let command_prop = entry.as_object().and_then(|e| last_prop(&e, "command"));
                    let cmd = command_prop
                        .as_ref()
                        .and_then(|p| p.value())
                        .and_then(|v| v.as_string_lit())
                        .and_then(|s| s.decoded_value().ok())
                        .unwrap_or_default();
                    match (ownership(&cmd, spec.bin, spec.agent), action) {
                        (Ownership::NotOurs, _) => kept.push(hi),
                        (Ownership::Edited, _) => {
                            edit.notes.push(format!(
                                "{}: the {event} hook {cmd:?} runs agent-tray with arguments Agent Tray never writes; left as you edited it",
                                file.display()
                            ));
                            have_ours = true; // never add a second one beside the user's
                            kept.push(hi);
                        }
                        (Ownership::Current, Action::Install) => {
                            if make_synchronous(&entry, &(spec.entry)(event, command.clone())) {
                                edit.notes.push(format!(
                                    "{}: the {event} hook now runs synchronously, so that answers from the tray reach the agent",
                                    file.display()
                                ));
                                edit.changed = true;
                            }
                            have_ours = true;
                            kept.push(hi);
                        }
                        (Ownership::Moved(old), Action::Install) => {
                            if let Some(prop) = &command_prop {
                                prop.set_value(CstInputValue::String(command.clone()));
                            }
                            edit.notes.push(format!(
                                "{}: {event} hook moved from {old} to this binary",
                                file.display()
                            ));
                            edit.changed = true;
                            have_ours = true;
                            kept.push(hi);
                        }
                        (Ownership::Current | Ownership::Moved(_), Action::Uninstall) => {
                            edit.removed.push((event.to_string(), gi, hi));
                            edit.changed = true;
                            removed_any = true;
                            lost.push(entry);
                        }
                    }
                }
                if let Some(group) = group.filter(|_| !lost.is_empty() && kept.is_empty()) {
                    group.remove(); // a group that only held ours goes with it
                    continue;
                }
                for entry in lost.into_iter().rev() {
                    entry.remove();
                }
                kept_groups.push((gi, kept));
            }
            for (new_gi, (old_gi, positions)) in kept_groups.into_iter().enumerate() {
                for (new_hi, old_hi) in positions.iter().enumerate() {
                    if (old_gi, *old_hi) != (new_gi, new_hi) {
                        edit.moved
                            .push((event.to_string(), (old_gi, *old_hi), (new_gi, new_hi)));
                    }
                }
            }
            if removed_any && groups.elements().is_empty() {
                if let Some(prop) = event_prop {
                    prop.remove();
                }
                continue;
            }
        }
        if action == Action::Install && !have_ours {
            let entry = input_value(&(spec.entry)(event, command.clone()));
            let unit = match spec.layout {
                HookLayout::Flat => entry,
                HookLayout::Grouped => {
                    let mut group = Vec::new();
                    if let Some(m) = matcher {
                        group.push(("matcher".to_string(), CstInputValue::String(m.to_string())));
                    }
                    group.push(("hooks".to_string(), CstInputValue::Array(vec![entry])));
                    CstInputValue::Object(group)
                }
            };
            match &groups {
                Some(groups) => {
                    groups.append(unit);
                }
                None => {
                    hooks.append(event, CstInputValue::Array(vec![unit]));
                }
            }
            edit.changed = true;
        }
    }
    if at == HooksAt::HooksKey
        && action == Action::Uninstall
        && edit.changed
        && hooks.properties().is_empty()
    {
        if let Some(prop) = last_prop(&obj, "hooks") {
            prop.remove();
        }
    }
    finish(source, &root, edit, spec, at)
}

/// An entry of ours written as `async` (by a version from before answering) where the entry we
/// write now is synchronous: drops `async` and takes our timeout (the old one was ours too, sized
/// for an async hook). True when it changed the entry. Every other key stays as it is.
fn make_synchronous(entry: &CstNode, wanted: &Value) -> bool {
    let Some(obj) = entry.as_object() else {
        return false;
    };
    if wanted.get("async").is_some() {
        return false;
    }
    let Some(async_prop) = last_prop(&obj, "async") else {
        return false;
    };
    let is_async = async_prop
        .value()
        .and_then(|v| v.as_boolean_lit())
        .is_some_and(|b| b.value());
    if !is_async {
        return false;
    }
    async_prop.remove();
    if let Some(timeout) = wanted.get("timeout") {
        match last_prop(&obj, "timeout") {
            Some(prop) => prop.set_value(input_value(timeout)),
            None => {
                obj.append("timeout", input_value(timeout));
            }
        }
    }
    true
}

/// The new text and value, and where ours are now.
fn finish(
    source: &str,
    root: &CstRootNode,
    mut edit: HooksEdit,
    spec: &HookSpec<'_>,
    at: HooksAt,
) -> Result<EditedHooks, EditHooksError> {
    let text = if edit.changed {
        root.to_string()
    } else {
        source.to_string()
    };
    // A safety net, not a code path: whatever the tree did, never write what is not JSON.
    // Comments pass (Gemini CLI's settings are JSON with comments; a strict JSON input has none).
    let doc: Value =
        parse_json_with_comments(&text).map_err(EditHooksError::ProducedInvalidJson)?;
    if let Some(hooks) = at.events_of(&doc) {
        for (event, _) in &spec.events {
            let Some(groups) = hooks.get(*event).and_then(Value::as_array) else {
                continue;
            };
            let units: Vec<&[Value]> = match spec.layout {
                HookLayout::Grouped => groups
                    .iter()
                    .map(|group| {
                        group
                            .get("hooks")
                            .and_then(Value::as_array)
                            .map(Vec::as_slice)
                            .unwrap_or(&[])
                    })
                    .collect(),
                HookLayout::Flat => vec![groups.as_slice()],
            };
            for (gi, entries) in units.into_iter().enumerate() {
                for (hi, entry) in entries.iter().enumerate() {
                    let cmd = entry.get("command").and_then(Value::as_str).unwrap_or("");
                    if ownership(cmd, spec.bin, spec.agent) == Ownership::Current {
                        edit.ours.push((event.to_string(), gi, hi));
                    }
                }
            }
        }
    }
    Ok(EditedHooks { text, doc, edit })
}

/// An object's property by name; the last one when the name repeats, as JSON parsers (and so
/// the agents) take it.
fn last_prop(obj: &CstObject, name: &str) -> Option<CstObjectProp> {
    obj.properties()
        .into_iter()
        .rfind(|p| p.decoded_name().as_deref() == Some(name))
}

/// Our own entries, as the syntax tree takes them.
fn input_value(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input_value).collect()),
        Value::Object(map) => CstInputValue::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), input_value(v)))
                .collect(),
        ),
    }
}

/// Parses a JSON config (empty or missing: `{}`), refusing anything else clearly.
pub fn parse_json(path: &Path, text: Option<&str>) -> Result<Value, InstallError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Value::Object(Map::new()));
    };
    serde_json::from_str(text).map_err(|e| InstallError::Unparsable {
        path: path.to_path_buf(),
        format: "JSON",
        detail: e.to_string(),
    })
}

/// JSON with comments (`//`, `/* */`) and nothing else loose: what Gemini CLI reads (it strips
/// comments, then parses strict JSON).
pub fn parse_json_with_comments(text: &str) -> Result<Value, ParseJsonError> {
    let options = ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    Ok(jsonc_parser::parse_to_serde_value::<Value>(text, &options)?)
}

/// The pure plan for a JSON settings file that holds our hooks in a `hooks` object (Claude
/// Code's `settings.json` and the agents that copied it), given its current text; with the
/// edited document, for agents that check a setting beside the hooks.
pub fn plan_text(
    path: &Path,
    old: Option<&str>,
    spec: &HookSpec<'_>,
    action: Action,
) -> Result<(Plan, Value), InstallError> {
    plan_text_parsed_by(path, old, spec, action, parse_json)
}

/// [`plan_text`] for a file its agent reads in a looser dialect (Gemini CLI: JSON with
/// comments): `parse` decides what is refused untouched; the edit itself keeps every byte
/// outside our entries.
pub fn plan_text_parsed_by(
    path: &Path,
    old: Option<&str>,
    spec: &HookSpec<'_>,
    action: Action,
    parse: fn(&Path, Option<&str>) -> Result<Value, InstallError>,
) -> Result<(Plan, Value), InstallError> {
    plan_text_at(path, old, spec, action, parse, HooksAt::HooksKey)
}

/// [`plan_text_parsed_by`] for a file whose events sit where `at` says.
pub fn plan_text_at(
    path: &Path,
    old: Option<&str>,
    spec: &HookSpec<'_>,
    action: Action,
    parse: fn(&Path, Option<&str>) -> Result<Value, InstallError>,
    at: HooksAt,
) -> Result<(Plan, Value), InstallError> {
    parse(path, old)?;
    let edited = edit_hooks_at(old.unwrap_or(""), spec, action, path, at).map_err(|e| {
        InstallError::Unexpected {
            path: path.to_path_buf(),
            detail: e.to_string(),
        }
    })?;
    let plan = Plan {
        changes: vec![FileChange {
            path: path.to_path_buf(),
            old: old.map(str::to_string),
            new: edited.edit.changed.then_some(edited.text),
        }],
        notes: edited.edit.notes,
    };
    Ok((plan, edited.doc))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::agents::claude::install::{plan_text, EVENTS};

    const BIN: &str = "/opt/agent-tray/bin/agent-tray";

    /// A settings.json as Claude Code writes it (JSON.stringify, two spaces), with what people
    /// really have in it: other tools' hooks (one sharing an event with us), keys in no
    /// particular order, unicode and escapes, settings we know nothing of.
    const HOSTILE: &str = r#"{
  "permissions": {
    "allow": [
      "Bash(npm run test:*)",
      "Read(~/.zshrc)"
    ],
    "deny": []
  },
  "env": {
    "GREETING": "héllo wörld ✓ 日本語 \"quoted\" \\ back"
  },
  "zzz_last_alphabetically_but_first_here": true,
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/.claude/hooks/guard.sh",
            "timeout": 30
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "afplay /System/Library/Sounds/Glass.aiff"
          }
        ]
      }
    ]
  },
  "model": "opus",
  "statusLine": {
    "type": "command",
    "command": "ccstatus --format \"{model}\""
  },
  "numbers": [
    1.5,
    10000000000,
    -3
  ],
  "emptyObj": {}
}
"#;

    /// The same kind of content, formatted by hand.
    const HAND_FORMATTED: &str = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
        "b": [1, 2,   3], "a": {"ü": "\u00fc"}}"#;

    fn install(text: Option<&str>) -> Option<String> {
        let plan = plan_text(
            Path::new("/c/settings.json"),
            text,
            Path::new(BIN),
            Action::Install,
        )
        .unwrap();
        plan.changes[0].new.clone()
    }

    fn uninstall(text: &str) -> Option<String> {
        let plan = plan_text(
            Path::new("/c/settings.json"),
            Some(text),
            Path::new(BIN),
            Action::Uninstall,
        )
        .unwrap();
        plan.changes[0].new.clone()
    }

    #[test]
    fn install_adds_every_event_and_keeps_every_byte_of_meaning_and_key_order() {
        let new = install(Some(HOSTILE)).unwrap();
        let old: Value = serde_json::from_str(HOSTILE).unwrap();
        let doc: Value = serde_json::from_str(&new).unwrap();
        // Every other key, same value, same order.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&doc), keys(&old));
        for k in keys(&old).iter().filter(|k| *k != "hooks") {
            assert_eq!(doc[k], old[k], "{k}");
        }
        assert!(
            new.contains("héllo wörld ✓ 日本語"),
            "unicode written as is"
        );
        // The other tools' hooks stay first in their events; ours follow.
        assert_eq!(doc["hooks"]["PreToolUse"][0], old["hooks"]["PreToolUse"][0]);
        assert_eq!(doc["hooks"]["Stop"][0], old["hooks"]["Stop"][0]);
        for (event, tools) in EVENTS {
            let groups = doc["hooks"][event].as_array().unwrap();
            let ours = groups.last().unwrap();
            assert_eq!(
                ours["hooks"][0]["command"],
                format!("{BIN} hook --agent claude"),
                "{event}"
            );
            assert_eq!(ours.get("matcher").is_some(), *tools, "{event}");
        }
        assert_eq!(
            doc["hooks"]["SessionEnd"][0]["hooks"][0].get("async"),
            None,
            "SessionEnd runs synchronously"
        );
        assert_eq!(doc["hooks"]["Stop"][1]["hooks"][0]["async"], true);
    }

    #[test]
    fn install_registers_every_claude_event_the_tray_reads_and_none_it_ignores() {
        // Each hook event the engine maps to a state or a field is registered (or its mapping is
        // dead code); the events known to say nothing of state are not (each costs a process).
        let plan = plan_text(Path::new("/s.json"), None, Path::new(BIN), Action::Install).unwrap();
        let doc: Value = serde_json::from_str(plan.changes[0].new.as_deref().unwrap()).unwrap();
        let registered: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
        for kind in crate::model::EventKind::HOOK_EVENTS {
            if kind == crate::model::EventKind::Interrupt
                || kind == crate::model::EventKind::PermissionResult
            {
                continue; // Codex's and Crush's, not Claude Code's
            }
            assert!(
                registered.iter().any(|e| *e == kind.as_str()),
                "{kind} is read by the tray but not registered: {registered:?}"
            );
        }
        for ignored in crate::model::EventKind::IGNORED_HOOK_EVENTS {
            assert!(!registered.iter().any(|e| *e == ignored), "{ignored}");
        }
    }

    #[test]
    fn numbers_and_strings_the_user_wrote_come_back_byte_identical() {
        // serde_json would print 1e3 as 1000.0, lose digits of a big integer and decode the
        // escapes: none of that may reach the user's file.
        let tokens = [
            "1e3",
            "123456789012345678901234567890",
            "-0.0",
            "1E+2",
            "0.1000000000000000055511151231257827",
            "\"\\u00fc\\/\\ud83d\\ude00\"",
            "\"tab\\there\"",
        ];
        let pretty = format!(
            "{{\n  \"a\": {},\n  \"b\": [\n    {},\n    {}\n  ],\n  \"c\": {{\n    \"d\": {},\n    \"e\": {}\n  }},\n  \"f\": {},\n  \"g\": {}\n}}\n",
            tokens[0], tokens[1], tokens[2], tokens[3], tokens[4], tokens[5], tokens[6]
        );
        let compact = pretty.replace(['\n', ' '], "");
        for original in [&pretty, &compact] {
            let once = install(Some(original)).unwrap();
            for t in tokens {
                assert!(once.contains(t), "{t} kept as written in:\n{once}");
            }
            let back = uninstall(&once).unwrap();
            for t in tokens {
                assert!(back.contains(t), "{t} kept as written in:\n{back}");
            }
            if original == &pretty {
                assert_eq!(
                    &back, original,
                    "uninstall gives back the file byte for byte"
                );
            }
        }
    }

    #[test]
    fn installing_twice_changes_nothing_and_uninstall_restores_the_original_exactly() {
        let once = install(Some(HOSTILE)).unwrap();
        assert_eq!(
            install(Some(&once)),
            None,
            "the second install has nothing to do"
        );
        let back = uninstall(&once).unwrap();
        assert_eq!(back, HOSTILE, "uninstall gives back the file byte for byte");
        assert_eq!(
            uninstall(HOSTILE),
            None,
            "nothing of ours: nothing to remove"
        );
    }

    #[test]
    fn a_hand_formatted_file_keeps_its_meaning_and_key_order_through_install_and_uninstall() {
        // Whitespace is re-laid in the file's own indent; every key and value stays.
        let once = install(Some(HAND_FORMATTED)).unwrap();
        let back = uninstall(&once).unwrap();
        let a: Value = serde_json::from_str(HAND_FORMATTED).unwrap();
        let b: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(a, b);
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&a), keys(&b));
    }

    #[test]
    fn a_missing_or_empty_file_gets_just_our_hooks_and_uninstall_leaves_an_empty_object() {
        let new = install(None).unwrap();
        let doc: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(doc.as_object().unwrap().len(), 1);
        assert!(new.ends_with("}\n"));
        assert_eq!(uninstall(&new).unwrap(), "{}\n");
        assert!(install(Some("  \n")).is_some());
    }

    #[test]
    fn a_hook_from_a_moved_binary_is_updated_in_place_and_removed_by_uninstall() {
        let old = r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/old/place/agent-tray hook --agent claude","timeout":3}]},{"hooks":[{"type":"command","command":"notify-send done"}]}]}}"#;
        let new = install(Some(old)).unwrap();
        let doc: Value = serde_json::from_str(&new).unwrap();
        let stop = doc["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "updated, not duplicated");
        assert_eq!(
            stop[0]["hooks"][0]["command"],
            format!("{BIN} hook --agent claude")
        );
        assert_eq!(
            stop[0]["hooks"][0]["timeout"], 3,
            "the entry's other keys stay"
        );
        // Uninstall by a binary elsewhere still finds the entry of the old path.
        let plan = plan_text(
            Path::new("/c/s.json"),
            Some(old),
            Path::new("/new/agent-tray"),
            Action::Uninstall,
        )
        .unwrap();
        let back: Value = serde_json::from_str(plan.changes[0].new.as_deref().unwrap()).unwrap();
        assert_eq!(back["hooks"]["Stop"].as_array().unwrap().len(), 1);
        assert_eq!(
            back["hooks"]["Stop"][0]["hooks"][0]["command"],
            "notify-send done"
        );
    }

    #[test]
    fn an_entry_the_user_edited_is_left_alone_and_reported() {
        let old = r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/x/agent-tray hook --agent claude --debug"}]}]}}"#;
        let plan = plan_text(
            Path::new("/c/s.json"),
            Some(old),
            Path::new(BIN),
            Action::Install,
        )
        .unwrap();
        let doc: Value = serde_json::from_str(plan.changes[0].new.as_deref().unwrap()).unwrap();
        assert_eq!(
            doc["hooks"]["Stop"].as_array().unwrap().len(),
            1,
            "no second hook beside the user's"
        );
        assert!(
            plan.notes.iter().any(|n| n.contains("--debug")),
            "{:?}",
            plan.notes
        );
        let plan = plan_text(
            Path::new("/c/s.json"),
            Some(old),
            Path::new(BIN),
            Action::Uninstall,
        )
        .unwrap();
        assert_eq!(plan.changes[0].new, None, "uninstall keeps the user's edit");
        assert!(!plan.notes.is_empty());
    }

    #[test]
    fn a_group_shared_with_another_hook_keeps_the_other_hook() {
        let old = format!(
            r#"{{"hooks":{{"Stop":[{{"hooks":[{{"type":"command","command":"{BIN} hook --agent claude"}},{{"type":"command","command":"say done"}}]}}]}}}}"#
        );
        let back: Value = serde_json::from_str(&uninstall(&old).unwrap()).unwrap();
        assert_eq!(
            back["hooks"]["Stop"][0]["hooks"].as_array().unwrap().len(),
            1
        );
        assert_eq!(back["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
    }

    #[test]
    fn invalid_or_strange_files_are_refused_with_a_clear_message() {
        for bad in [
            "{\"hooks\": {",
            "[1,2]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"Stop\": {}}}",
            "// comment\n{}",
        ] {
            let err = plan_text(
                Path::new("/c/settings.json"),
                Some(bad),
                Path::new(BIN),
                Action::Install,
            )
            .unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("/c/settings.json") && text.contains("nothing was changed"),
                "{text}"
            );
        }
    }

    #[test]
    fn the_dry_run_diff_shows_only_our_additions() {
        let plan = plan_text(
            Path::new("/c/settings.json"),
            Some(HOSTILE),
            Path::new(BIN),
            Action::Install,
        )
        .unwrap();
        let diff = plan.changes[0].diff().unwrap();
        assert!(
            diff.starts_with("--- /c/settings.json\n+++ /c/settings.json\n"),
            "{diff}"
        );
        assert!(
            diff.lines()
                .filter(|l| l.starts_with('-') && !l.starts_with("---"))
                .all(|l| l.trim_end().ends_with(']')
                    || l.trim_end().ends_with("],")
                    || l.trim_end().ends_with('}')),
            "only closing lines change:\n{diff}"
        );
        assert!(diff.contains(&format!(
            "+            \"command\": \"{BIN} hook --agent claude\""
        )));
    }

    /// Which refusal a settings file gets decides the line the user reads; each of these is a
    /// file someone (or another tool) left in a shape our edit cannot take.
    fn refusal(text: &str) -> EditHooksError {
        let bin = Path::new(BIN);
        let spec = crate::agents::claude::install::spec(bin);
        match edit_hooks(text, &spec, Action::Install, Path::new("settings.json")) {
            Ok(_) => panic!("{text:?} was edited, but our hooks cannot go into it"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_settings_file_whose_top_level_is_a_list_is_refused_as_not_an_object() {
        // A settings.json overwritten with an array by a script gone wrong.
        assert!(matches!(
            refusal("[1, 2]"),
            EditHooksError::TopLevelNotObject
        ));
    }

    #[test]
    fn a_hooks_key_that_is_not_an_object_is_refused_as_such() {
        // Someone wrote `"hooks": []`, thinking hooks were a list.
        assert!(matches!(
            refusal(r#"{"hooks": []}"#),
            EditHooksError::HooksNotObject
        ));
    }

    #[test]
    fn an_event_that_is_not_a_list_is_refused_naming_the_event() {
        // One event's groups written as an object instead of a list.
        match refusal(r#"{"hooks": {"Stop": {"command": "x"}}}"#) {
            EditHooksError::EventNotList { event } => assert_eq!(event, "Stop"),
            other => panic!("expected the Stop event to be named, got {other:?}"),
        }
    }

    #[test]
    fn text_that_is_not_json_is_refused_with_the_parsers_message() {
        // A half-saved file: the syntax tree refuses it before anything is edited.
        let e = refusal(r#"{"hooks": "#);
        assert!(matches!(e, EditHooksError::Syntax(_)), "{e:?}");
    }

    #[test]
    fn json_with_a_trailing_comma_is_refused_by_the_comment_tolerant_parser() {
        // Gemini CLI strips comments but refuses anything looser; so must we.
        assert!(parse_json_with_comments("// ours\n{\"a\": 1}").is_ok());
        assert!(parse_json_with_comments("{\"a\": 1,}").is_err());
    }
}
