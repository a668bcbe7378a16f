//! Codex: our hooks in `$CODEX_HOME/hooks.json`, their trust entries and `notify` in
//! `config.toml`.
//!
//! Codex silently skips hooks the user has not trusted. Trust lives in `config.toml` as
//! `[hooks.state."<abs path of hooks.json>:<event_snake_case>:<group>:<hook>"]` with
//! `trusted_hash = "sha256:<hex>"` over the compact, key-sorted JSON of the group
//! (`{"event_name", ["matcher",] "hooks": [{"type", "command", "timeout", "async"}]}`, timeout
//! 600 by default and 1 for SessionEnd and Interrupt; see the Codex fixture README). Trust
//! follows position, so our groups are appended after the user's (nobody else's position moves
//! on install), and on uninstall the trust entries of groups that moved up are re-keyed so the
//! user's own hooks stay trusted. Trust entries are written only with `--trust`, and only their
//! `trusted_hash`: a user's `enabled = false` beside it stays.
//!
//! Codex waits for a hook up to its `timeout` (600 s by default), so ours carry a short one
//! ([`TIMEOUT_SECS`]).

use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use toml_edit::{Array, DocumentMut, Item, Table};

use crate::install::hooks_json::{edit_hooks, parse_json, HookSpec, HooksEdit};
use crate::install::{read_optional, Action, FileChange, InstallError, Plan};
use crate::model::Agent;

/// Codex's hook events that matter to the state, with their snake_case names.
pub const EVENTS: &[(&str, &str)] = &[
    ("SessionStart", "session_start"),
    ("UserPromptSubmit", "user_prompt_submit"),
    ("PreToolUse", "pre_tool_use"),
    ("PermissionRequest", "permission_request"),
    ("PostToolUse", "post_tool_use"),
    ("Stop", "stop"),
    ("Interrupt", "interrupt"),
    ("SessionEnd", "session_end"),
];

/// Our hooks' timeout in seconds. Codex waits for a hook before it goes on, up to the entry's
/// `timeout` (600 s when the entry has none): a hook wedged on a full disk would stall the
/// agent for ten minutes. Ours gives up on the app after about 100 ms and only appends a line
/// to its journal first, so a few seconds is plenty.
pub const TIMEOUT_SECS: u64 = 5;

/// The timeout we write for an event: ours, or Codex's own default when that is shorter
/// (SessionEnd and Interrupt run as Codex stops, with 1 s).
pub fn timeout_secs(event: &str) -> u64 {
    let codex_default = match event {
        "SessionEnd" | "Interrupt" => 1,
        _ => 600,
    };
    TIMEOUT_SECS.min(codex_default)
}

fn codex_entry(event: &str, command: String) -> Value {
    codex_entry_on(cfg!(windows), event, command)
}

/// Codex's entry; on Windows with `commandWindows`, the same command in `cmd.exe`'s form, which
/// Codex runs there through `%COMSPEC% /C` (the `sh` form's single quotes mean nothing to cmd).
fn codex_entry_on(windows: bool, event: &str, command: String) -> Value {
    let mut entry = json!({"type": "command", "command": command, "timeout": timeout_secs(event)});
    if windows {
        if let Some(cmd) = crate::install::cmd_form_of(&command) {
            entry["commandWindows"] = json!(cmd);
        }
    }
    entry
}

pub fn spec(bin: &Path) -> HookSpec<'_> {
    HookSpec {
        agent: Agent::Codex,
        bin,
        events: EVENTS.iter().map(|(e, _)| (*e, None)).collect(),
        entry: codex_entry,
        layout: crate::install::hooks_json::HookLayout::Grouped,
    }
}

pub fn snake(event: &str) -> Option<&'static str> {
    EVENTS.iter().find(|(e, _)| *e == event).map(|(_, s)| *s)
}

/// The trust key of a hook at a position.
pub fn trust_key(hooks_json: &Path, event_snake: &str, group: usize, hook: usize) -> String {
    format!("{}:{event_snake}:{group}:{hook}", hooks_json.display())
}

/// Codex's trust hash of one hooks.json group.
pub fn trust_hash(event_snake: &str, group: &Value) -> String {
    let default_timeout = if matches!(event_snake, "session_end" | "interrupt") {
        1
    } else {
        600
    };
    let hooks: Vec<Value> = group
        .get("hooks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|h| {
            json!({
                "async": h.get("async").cloned().unwrap_or(Value::Bool(false)),
                "command": h.get("command").cloned().unwrap_or(Value::Null),
                "timeout": h.get("timeout").cloned().unwrap_or(json!(default_timeout)),
                "type": h.get("type").cloned().unwrap_or(json!("command")),
            })
        })
        .collect();
    let mut canon = serde_json::Map::new();
    canon.insert("event_name".into(), json!(event_snake));
    canon.insert("hooks".into(), Value::Array(hooks));
    if let Some(m) = group.get("matcher") {
        canon.insert("matcher".into(), m.clone());
    }
    let text = serde_json::to_string(&sorted(Value::Object(canon))).unwrap_or_default();
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The value with every object's keys sorted (serde_json keeps insertion order here).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The `notify` program we set.
pub fn notify_argv(bin: &Path) -> Vec<String> {
    vec![
        bin.display().to_string(),
        "notify".into(),
        "--agent".into(),
        "codex".into(),
    ]
}

/// Whether a `notify` value is ours (any path to an `agent-tray` binary, `agent-tray.exe` on
/// Windows, and our arguments).
pub fn notify_is_ours(argv: &[String]) -> bool {
    argv.first()
        .is_some_and(|p| crate::install::is_our_program_name(p))
        && argv[1..] == ["notify", "--agent", "codex"]
}

fn notify_of(doc: &DocumentMut) -> Option<Vec<String>> {
    let array = doc.get("notify")?.as_array()?;
    Some(
        array
            .iter()
            .map(|v| v.as_str().unwrap_or("").to_string())
            .collect(),
    )
}

/// Plans both files for a Codex home (an absolute path).
pub fn plan_files(
    codex_home: &Path,
    bin: &Path,
    action: Action,
    trust: bool,
) -> Result<Plan, InstallError> {
    let hooks_path = codex_home.join("hooks.json");
    let config_path = codex_home.join("config.toml");
    let hooks_old = read_optional(&hooks_path)?;
    let config_old = read_optional(&config_path)?;
    plan_texts(
        &hooks_path,
        hooks_old.as_deref(),
        &config_path,
        config_old.as_deref(),
        bin,
        action,
        trust,
    )
}

/// The pure plan, given both files' texts.
#[allow(clippy::too_many_arguments)]
pub fn plan_texts(
    hooks_path: &Path,
    hooks_old: Option<&str>,
    config_path: &Path,
    config_old: Option<&str>,
    bin: &Path,
    action: Action,
    trust: bool,
) -> Result<Plan, InstallError> {
    // Parse both before changing either: a broken config.toml must not leave hooks.json edited.
    parse_json(hooks_path, hooks_old)?;
    let mut config: DocumentMut =
        config_old
            .unwrap_or("")
            .parse()
            .map_err(|e: toml_edit::TomlError| InstallError::Unparsable {
                path: config_path.to_path_buf(),
                format: "TOML",
                detail: e.to_string().trim().replace('\n', " "),
            })?;
    let edited =
        edit_hooks(hooks_old.unwrap_or(""), &spec(bin), action, hooks_path).map_err(|e| {
            InstallError::Unexpected {
                path: hooks_path.to_path_buf(),
                detail: e.to_string(),
            }
        })?;
    let (hooks_doc, edit) = (edited.doc, edited.edit);
    let mut notes = edit.notes.clone();
    let config_changed = edit_config(
        &mut config,
        &hooks_doc,
        &edit,
        hooks_path,
        config_path,
        bin,
        action,
        trust,
        &mut notes,
    )?;
    let hooks_new = edit.changed.then_some(edited.text);
    let config_new = config_changed.then(|| config.to_string());
    Ok(Plan {
        changes: vec![
            FileChange {
                path: hooks_path.to_path_buf(),
                old: hooks_old.map(str::to_string),
                new: hooks_new,
            },
            FileChange {
                path: config_path.to_path_buf(),
                old: config_old.map(str::to_string),
                new: config_new,
            },
        ],
        notes,
    })
}

#[allow(clippy::too_many_arguments)]
fn edit_config(
    config: &mut DocumentMut,
    hooks_doc: &Value,
    edit: &HooksEdit,
    hooks_path: &Path,
    config_path: &Path,
    bin: &Path,
    action: Action,
    trust: bool,
    notes: &mut Vec<String>,
) -> Result<bool, InstallError> {
    let unexpected = |detail: &str| InstallError::Unexpected {
        path: config_path.to_path_buf(),
        detail: detail.to_string(),
    };
    let mut changed = false;
    let ours_argv = notify_argv(bin);
    match (notify_of(config), action) {
        (None, Action::Install) if config.get("notify").is_none() => {
            config.insert("notify", Item::Value(ours_argv.iter().collect::<Array>().into()));
            changed = true;
        }
        (Some(argv), Action::Install) if notify_is_ours(&argv) => {
            if argv != ours_argv {
                config.insert("notify", Item::Value(ours_argv.iter().collect::<Array>().into()));
                changed = true;
            }
        }
        (Some(argv), Action::Uninstall) if notify_is_ours(&argv) => {
            config.remove("notify");
            changed = true;
        }
        (_, Action::Install) => notes.push(format!(
            "{}: you already have a Codex notify program ({}); kept it. Agent Tray still hears Codex through its hooks; it only misses notify's turn-complete calls.",
            config_path.display(),
            config.get("notify").map(|i| i.to_string().trim().to_string()).unwrap_or_default()
        )),
        (_, Action::Uninstall) => {}
    }

    let wants_state = (action == Action::Install && trust && !edit.ours.is_empty())
        || (action == Action::Uninstall && (!edit.removed.is_empty() || !edit.moved.is_empty()));
    if !wants_state {
        if action == Action::Install && !trust && !edit.ours.is_empty() {
            let untrusted = edit.ours.iter().any(|(event, g, h)| {
                let key = snake(event).map(|s| trust_key(hooks_path, s, *g, *h));
                key.is_none_or(|k| trust_entry(config, &k).is_none())
            });
            if untrusted {
                notes.push(
                    "Codex runs hooks only once they are trusted, and skips the others silently. \
                     Run `agent-tray install --codex --trust` to record in config.toml that you trust \
                     Agent Tray's own entries (and only those), or trust them in Codex yourself."
                        .into(),
                );
            }
        }
        return Ok(changed);
    }
    let hooks_item = config.as_table_mut().entry("hooks").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let hooks_table = hooks_item
        .as_table_like_mut()
        .ok_or_else(|| unexpected("`hooks` is not a table"))?;
    if hooks_table.get("state").is_none() {
        let mut t = Table::new();
        t.set_implicit(true);
        hooks_table.insert("state", Item::Table(t));
    }
    let state = hooks_table
        .get_mut("state")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| unexpected("`hooks.state` is not a table"))?;
    match action {
        Action::Install => {
            let groups = hooks_doc.get("hooks");
            for (event, g, h) in &edit.ours {
                let (Some(snake), Some(group)) = (
                    snake(event),
                    groups.and_then(|x| x.get(event)).and_then(|x| x.get(g)),
                ) else {
                    continue;
                };
                let key = trust_key(hooks_path, snake, *g, *h);
                let hash = trust_hash(snake, group);
                let current = state
                    .get(&key)
                    .and_then(|i| i.get("trusted_hash"))
                    .and_then(Item::as_str)
                    .map(str::to_string);
                if state
                    .get(&key)
                    .and_then(|i| i.get("enabled"))
                    .and_then(Item::as_bool)
                    == Some(false)
                {
                    notes.push(format!(
                        "{}: you turned Agent Tray's Codex {event} hook off (enabled = false); it stays off. Remove that line to let Codex run it.",
                        config_path.display()
                    ));
                }
                if current.as_deref() != Some(hash.as_str()) {
                    // Only the hash is ours to set: the entry's other keys (the user's
                    // `enabled = false`) stay as they are.
                    match state.get_mut(&key).and_then(Item::as_table_like_mut) {
                        Some(entry) => {
                            entry.insert("trusted_hash", toml_edit::value(hash));
                        }
                        None => {
                            let mut entry = Table::new();
                            entry.insert("trusted_hash", toml_edit::value(hash));
                            state.insert(&key, Item::Table(entry));
                        }
                    }
                    changed = true;
                }
            }
            if changed {
                notes.push(
                    "--trust: config.toml now records Agent Tray's Codex hooks as trusted, so Codex runs them \
                     from the next session on. Only our entries are marked; your other hooks are untouched."
                        .into(),
                );
            }
        }
        Action::Uninstall => {
            for (event, g, h) in &edit.removed {
                if let Some(snake) = snake(event) {
                    changed |= state
                        .remove(&trust_key(hooks_path, snake, *g, *h))
                        .is_some();
                }
            }
            let mut moved = edit.moved.clone();
            moved.sort_by_key(|(_, _, new)| *new);
            for (event, (og, oh), (ng, nh)) in moved {
                let Some(snake) = snake(&event) else {
                    continue;
                };
                if let Some(item) = state.remove(&trust_key(hooks_path, snake, og, oh)) {
                    state.insert(&trust_key(hooks_path, snake, ng, nh), item);
                    changed = true;
                }
            }
        }
    }
    Ok(changed)
}

fn trust_entry<'a>(config: &'a DocumentMut, key: &str) -> Option<&'a str> {
    config
        .get("hooks")?
        .get("state")?
        .get(key)?
        .get("trusted_hash")?
        .as_str()
}

/// Whether each of our hooks in `hooks.json` is trusted with the right hash (for `doctor`):
/// (event, trusted).
pub fn trust_status(
    hooks_path: &Path,
    hooks_doc: &Value,
    config: &DocumentMut,
    bin: &Path,
) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let Some(hooks) = hooks_doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, snake) in EVENTS {
        let Some(groups) = hooks.get(*event).and_then(Value::as_array) else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let entries = group
                .get("hooks")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            for (h, entry) in entries.iter().enumerate() {
                let cmd = entry.get("command").and_then(Value::as_str).unwrap_or("");
                if crate::install::ownership(cmd, bin, Agent::Codex)
                    == crate::install::Ownership::NotOurs
                {
                    continue;
                }
                let key = trust_key(hooks_path, snake, g, h);
                let ok = trust_entry(config, &key) == Some(trust_hash(snake, group).as_str());
                out.push((event.to_string(), ok));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_notify_of_ours_is_known_by_its_program_on_every_desktop() {
        let argv = |p: &str| -> Vec<String> {
            [p, "notify", "--agent", "codex"]
                .iter()
                .map(|w| w.to_string())
                .collect()
        };
        assert!(notify_is_ours(&argv("/usr/local/bin/agent-tray")));
        assert!(notify_is_ours(&argv(r"C:\Tools\agent-tray.exe")));
        assert!(!notify_is_ours(&argv("/usr/bin/notify-send")));
        assert!(!notify_is_ours(&argv("agent-tray")[..1]));
    }

    #[test]
    fn on_windows_an_entry_also_carries_the_command_in_cmds_form() {
        let command = "'C:/Program Files/Agent Tray/agent-tray.exe' hook --agent codex".to_string();
        let entry = codex_entry_on(true, "Stop", command.clone());
        assert_eq!(entry["command"], command.as_str());
        assert_eq!(
            entry["commandWindows"],
            r#""C:\Program Files\Agent Tray\agent-tray.exe" hook --agent codex"#
        );
        assert!(codex_entry_on(false, "Stop", command)
            .get("commandWindows")
            .is_none());
    }

    const BIN: &str = "/opt/agent-tray/bin/agent-tray";
    const HOOKS: &str = "/home/dev/.codex/hooks.json";
    const CONFIG: &str = "/home/dev/.codex/config.toml";

    /// A config.toml as people have them: comments, a provider table, a project trust table,
    /// unicode, odd spacing, a notify of nobody's yet.
    const CONFIG_TOML: &str = r#"# My Codex settings — handle with care ✓
model = "gpt-5"   # the default model
approval_policy = "on-request"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:9999/v1"  # local
wire_api = "responses"

# projects I trust
[projects."/home/dev/prøject"]
trust_level = "trusted"
"#;

    fn plan(hooks: Option<&str>, config: Option<&str>, action: Action, trust: bool) -> Plan {
        plan_texts(
            Path::new(HOOKS),
            hooks,
            Path::new(CONFIG),
            config,
            Path::new(BIN),
            action,
            trust,
        )
        .unwrap()
    }

    #[test]
    fn the_trust_hash_is_codexs_over_the_compact_sorted_group() {
        // Computed as the Codex fixture README says (and as tests/e2e's recorder does), for a
        // group holding one command hook with no timeout: the defaults are part of the hash.
        let group = json!({"hooks": [{"type": "command", "command": "/x/rec Stop"}]});
        let canon = r#"{"event_name":"stop","hooks":[{"async":false,"command":"/x/rec Stop","timeout":600,"type":"command"}]}"#;
        let expected: String = Sha256::digest(canon.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(trust_hash("stop", &group), format!("sha256:{expected}"));
        let end = r#"{"event_name":"session_end","hooks":[{"async":false,"command":"/x/rec Stop","timeout":1,"type":"command"}]}"#;
        let expected: String = Sha256::digest(end.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            trust_hash("session_end", &group),
            format!("sha256:{expected}")
        );
        let with_matcher =
            json!({"matcher": "Bash", "hooks": [{"command": "c", "timeout": 5, "async": true}]});
        let canon = r#"{"event_name":"pre_tool_use","hooks":[{"async":true,"command":"c","timeout":5,"type":"command"}],"matcher":"Bash"}"#;
        let expected: String = Sha256::digest(canon.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            trust_hash("pre_tool_use", &with_matcher),
            format!("sha256:{expected}")
        );
    }

    #[test]
    fn install_with_trust_writes_hooks_notify_and_trust_and_keeps_comments() {
        let p = plan(None, Some(CONFIG_TOML), Action::Install, true);
        let hooks: Value = serde_json::from_str(p.changes[0].new.as_deref().unwrap()).unwrap();
        for (event, _) in EVENTS {
            assert_eq!(
                hooks["hooks"][event][0]["hooks"][0]["command"],
                format!("{BIN} hook --agent codex")
            );
        }
        let config = p.changes[1].new.as_deref().unwrap();
        assert!(config.starts_with("# My Codex settings — handle with care ✓\nmodel = \"gpt-5\"   # the default model\n"), "{config}");
        assert!(config.contains("base_url = \"http://127.0.0.1:9999/v1\"  # local"));
        assert!(config.contains("# projects I trust\n[projects.\"/home/dev/prøject\"]"));
        let doc: DocumentMut = config.parse().unwrap();
        assert_eq!(notify_of(&doc).unwrap(), notify_argv(Path::new(BIN)));
        let status = trust_status(Path::new(HOOKS), &hooks, &doc, Path::new(BIN));
        assert_eq!(status.len(), EVENTS.len());
        assert!(status.iter().all(|(_, ok)| *ok), "{status:?}");
        assert!(
            config.contains(&format!("[hooks.state.\"{HOOKS}:interrupt:0:0\"]")),
            "{config}"
        );
        assert!(p.notes.iter().any(|n| n.contains("--trust")));
        // The notify key lands among the top-level keys, before the first table.
        assert!(config.find("notify").unwrap() < config.find("[model_providers.mock]").unwrap());
    }

    #[test]
    fn our_codex_hooks_carry_a_short_timeout_and_the_trust_hash_covers_it() {
        // Without one, Codex waits up to 600 s for a hook that hangs.
        let p = plan(None, None, Action::Install, true);
        let hooks: Value = serde_json::from_str(p.changes[0].new.as_deref().unwrap()).unwrap();
        for (event, snake) in EVENTS {
            let entry = &hooks["hooks"][event][0]["hooks"][0];
            let timeout = entry["timeout"]
                .as_u64()
                .unwrap_or_else(|| panic!("{event}: {entry}"));
            assert!(timeout <= TIMEOUT_SECS, "{event}: {timeout}");
            let expected = if *snake == "session_end" || *snake == "interrupt" {
                1
            } else {
                TIMEOUT_SECS
            };
            assert_eq!(timeout, expected, "{event}");
        }
        let doc: DocumentMut = p.changes[1].new.as_deref().unwrap().parse().unwrap();
        let status = trust_status(Path::new(HOOKS), &hooks, &doc, Path::new(BIN));
        assert!(status.iter().all(|(_, ok)| *ok), "{status:?}");
    }

    #[test]
    fn trusting_never_turns_back_on_a_hook_the_user_turned_off() {
        let hooks = format!(
            r#"{{"hooks":{{"Stop":[{{"hooks":[{{"type":"command","command":"{BIN} hook --agent codex","timeout":5}}]}}]}}}}"#
        );
        let config = format!(
            "[hooks.state.\"{HOOKS}:stop:0:0\"]\nenabled = false # too chatty\ntrusted_hash = \"sha256:stale\"\n"
        );
        let p = plan(Some(&hooks), Some(&config), Action::Install, true);
        let new = p.changes[1].new.as_deref().unwrap();
        assert!(new.contains("enabled = false # too chatty"), "{new}");
        let doc: DocumentMut = new.parse().unwrap();
        let hooks_doc: Value = serde_json::from_str(&hooks).unwrap();
        let stop = trust_hash("stop", &hooks_doc["hooks"]["Stop"][0]);
        assert_eq!(
            trust_entry(&doc, &format!("{HOOKS}:stop:0:0")),
            Some(stop.as_str())
        );
        assert!(
            p.notes.iter().any(|n| n.contains("enabled = false")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn without_trust_no_trust_entry_is_written_and_the_user_is_told() {
        let p = plan(None, Some(CONFIG_TOML), Action::Install, false);
        let config = p.changes[1].new.as_deref().unwrap();
        assert!(!config.contains("hooks.state"));
        assert!(
            p.notes.iter().any(|n| n.contains("trusted")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn a_users_notify_is_kept_and_reported() {
        let mine = format!(
            "notify = [\"/usr/bin/terminal-notifier\", \"-title\", \"Codex\"]\n{CONFIG_TOML}"
        );
        let p = plan(None, Some(&mine), Action::Install, false);
        assert_eq!(p.changes[1].new, None, "config.toml untouched");
        assert!(
            p.notes.iter().any(|n| n.contains("terminal-notifier")),
            "{:?}",
            p.notes
        );
        let p = plan(None, Some(&mine), Action::Uninstall, false);
        assert_eq!(p.changes[1].new, None);
    }

    #[test]
    fn install_twice_is_a_no_op_and_uninstall_restores_both_files() {
        let user_hooks = r#"{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/say-done"
          }
        ]
      }
    ]
  }
}
"#;
        let user_trust = format!(
            "{CONFIG_TOML}\n[hooks.state.\"{HOOKS}:stop:0:0\"]\ntrusted_hash = \"sha256:abc\"\n"
        );
        let p = plan(Some(user_hooks), Some(&user_trust), Action::Install, true);
        let hooks1 = p.changes[0].new.clone().unwrap();
        let config1 = p.changes[1].new.clone().unwrap();
        let hooks_doc: Value = serde_json::from_str(&hooks1).unwrap();
        assert_eq!(
            hooks_doc["hooks"]["Stop"][0]["hooks"][0]["command"], "/usr/local/bin/say-done",
            "the user's group keeps position 0"
        );
        assert!(config1.contains(&format!("{HOOKS}:stop:1:0")));
        let again = plan(Some(&hooks1), Some(&config1), Action::Install, true);
        assert!(
            again.changes.iter().all(|c| c.new.is_none()),
            "second install changes nothing"
        );
        let back = plan(Some(&hooks1), Some(&config1), Action::Uninstall, false);
        assert_eq!(back.changes[0].new.as_deref(), Some(user_hooks));
        assert_eq!(back.changes[1].new.as_deref(), Some(user_trust.as_str()));
    }

    #[test]
    fn uninstall_re_keys_the_trust_of_user_groups_that_moved_up() {
        // Ours was first, the user's came after (installed later): removing ours moves theirs
        // from group 1 to 0, and their trust must follow or Codex would stop running it.
        let hooks = format!(
            r#"{{"hooks":{{"Stop":[{{"hooks":[{{"type":"command","command":"{BIN} hook --agent codex"}}]}},{{"hooks":[{{"type":"command","command":"say"}}]}}]}}}}"#
        );
        let config = format!("[hooks.state.\"{HOOKS}:stop:0:0\"]\ntrusted_hash = \"sha256:ours\"\n\n[hooks.state.\"{HOOKS}:stop:1:0\"]\ntrusted_hash = \"sha256:theirs\"\n");
        let p = plan(Some(&hooks), Some(&config), Action::Uninstall, false);
        let new = p.changes[1].new.as_deref().unwrap();
        let doc: DocumentMut = new.parse().unwrap();
        assert_eq!(
            trust_entry(&doc, &format!("{HOOKS}:stop:0:0")),
            Some("sha256:theirs"),
            "{new}"
        );
        assert_eq!(trust_entry(&doc, &format!("{HOOKS}:stop:1:0")), None);
    }

    #[test]
    fn a_broken_config_toml_is_refused_and_nothing_is_planned() {
        let err = plan_texts(
            Path::new(HOOKS),
            None,
            Path::new(CONFIG),
            Some("model = \n[[["),
            Path::new(BIN),
            Action::Install,
            true,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("config.toml")
                && text.contains("TOML")
                && text.contains("nothing was changed"),
            "{text}"
        );
    }
}
