//! Gemini CLI (`@google/gemini-cli`): command hooks in `~/.gemini/settings.json`, run by a node
//! process.
//!
//! Recorded from 0.61.0 (`tests/fixtures/gemini/real-0.61.0/`):
//! - **Events.** `SessionStart`, `BeforeAgent` (the prompt: working), `BeforeTool` (before the
//!   permission dialog, not after approval), `Notification{notification_type:"ToolPermission"}`
//!   (the dialog is up: waiting for permission), `AfterTool` (approved and ran; approving fires
//!   nothing), `AfterAgent` (turn over: idle), `SessionEnd` (three times on `/quit`: the registry
//!   drops what reaches an ended session). `PreCompress` fires before every model request and
//!   means nothing here; `BeforeModel`/`AfterModel` fire per streamed chunk and are never
//!   registered. kill -9 fires nothing: the pid watcher ends the session.
//! - **Processes.** `gemini.js` relaunches itself: an outer node wrapper that ignores signals and
//!   only relays the exit code, and the inner node process that runs the session and spawns the
//!   hooks directly. The walk stops at the first gemini node above the hook: the inner one.
//! - **Config.** `hooks.<Event>: [{matcher, hooks: [{type: "command", command, name, timeout}]}]`,
//!   the timeout in milliseconds; the same hooks-object shape as Claude's, so the same byte-safe
//!   editor ([`crate::install::hooks_json::edit_hooks`]) merges ours.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::findings::{hook_findings, Finding};
use crate::hook_payload::HookFields;
use crate::install::hooks_json::{self, parse_json_with_comments, HookSpec};
use crate::install::{read_optional, Action, InstallError, Plan};
use crate::model::{Agent, EventKind};

/// Gemini CLI's adapter.
pub struct GeminiCli;

/// The events we register, and whether they take a tool matcher. Never `BeforeModel` or
/// `AfterModel` (per streamed chunk), nor `PreCompress`/`BeforeToolSelection` (per model call,
/// saying nothing about the state).
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("BeforeAgent", false),
    ("BeforeTool", true),
    ("Notification", false),
    ("AfterTool", true),
    ("AfterAgent", false),
    ("SessionEnd", false),
];

/// Our hook's timeout, in milliseconds (Gemini waits for its hooks; ours gives up sending after
/// about 100 ms).
const TIMEOUT_MS: u64 = 5000;

/// The `name` Gemini shows while a hook runs.
const HOOK_NAME: &str = "agent-tray";

fn gemini_entry(_event: &str, command: String) -> Value {
    json!({"name": HOOK_NAME, "type": "command", "command": command, "timeout": TIMEOUT_MS})
}

/// Our hooks for `settings.json`.
pub fn spec(bin: &Path) -> HookSpec<'_> {
    HookSpec::for_events(Agent::Gemini, bin, EVENTS, gemini_entry)
}

/// `settings.json` parsed as Gemini CLI reads it: JSON with comments (it strips them first).
/// Anything looser (trailing commas, single quotes) is refused untouched, as Gemini refuses it.
pub fn parse_settings(path: &Path, text: Option<&str>) -> Result<Value, InstallError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Value::Object(serde_json::Map::new()));
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

/// The pure plan for `settings.json` given its current text.
pub fn plan_text(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    action: Action,
) -> Result<Plan, InstallError> {
    let (mut plan, doc) =
        hooks_json::plan_text_parsed_by(path, old, &spec(bin), action, parse_settings)?;
    if action == Action::Install
        && doc.pointer("/hooksConfig/enabled").and_then(Value::as_bool) == Some(false)
    {
        plan.notes.push(format!(
            "{}: hooksConfig.enabled is false, so Gemini CLI runs no hooks; set it to true",
            path.display()
        ));
    }
    Ok(plan)
}

impl AgentAdapter for GeminiCli {
    fn agent(&self) -> Agent {
        Agent::Gemini
    }

    fn hook_event(&self, name: &str, fields: &HookFields) -> HookEvent {
        match name {
            "SessionStart" => HookEvent::Event(EventKind::SessionStart),
            "BeforeAgent" => HookEvent::Event(EventKind::UserPromptSubmit),
            "BeforeTool" => HookEvent::Event(EventKind::PreToolUse),
            "AfterTool" => HookEvent::Event(EventKind::PostToolUse),
            "AfterAgent" => HookEvent::Event(EventKind::Stop),
            "SessionEnd" => HookEvent::Event(EventKind::SessionEnd),
            // The dialog asking to run a tool; no other notification type says anything.
            "Notification" if fields.notification_type.as_deref() == Some("ToolPermission") => {
                HookEvent::Event(EventKind::PermissionRequest)
            }
            "Notification"
            | "PreCompress"
            | "BeforeToolSelection"
            | "BeforeModel"
            | "AfterModel" => HookEvent::Ignored,
            _ => HookEvent::Unknown,
        }
    }
    /// A transcript under `.gemini/tmp/…/chats/`.
    fn payload_evidence(&self, fields: &HookFields, _event: EventKind) -> u8 {
        match fields.transcript_path.as_deref() {
            Some(p) if p.contains("/.gemini/") => 3,
            _ => 0,
        }
    }

    fn config_dir(&self) -> Option<PathBuf> {
        gemini_dir()
    }
    fn hooks_file(&self, dir: &Path) -> PathBuf {
        dir.join("settings.json")
    }
    fn plan_hooks(
        &self,
        dir: &Path,
        bin: &Path,
        action: Action,
        _options: InstallOptions,
    ) -> Result<Plan, InstallError> {
        let path = self.hooks_file(dir);
        let old = read_optional(&path)?;
        plan_text(&path, old.as_deref(), bin, action)
    }
    fn hooks_enabled(
        &self,
        _dir: &Path,
        doc: Option<&Value>,
        _bin: &Path,
        _other_files_change: bool,
    ) -> bool {
        doc.and_then(|d| d.pointer("/hooksConfig/enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        let Some(dir) = gemini_dir() else {
            return (
                vec![Finding::Problem(
                    "cannot find Gemini CLI's folder: set HOME (or GEMINI_CLI_HOME)".into(),
                )],
                None,
            );
        };
        let path = self.hooks_file(&dir);
        let doc = match read_optional(&path).and_then(|t| parse_settings(&path, t.as_deref())) {
            Ok(doc) => doc,
            Err(e) => return (vec![Finding::Problem(e.to_string())], None),
        };
        let events: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
        let (mut out, command) = hook_findings(
            self.entry().product_name,
            &path,
            &doc,
            &events,
            bin,
            agent,
            "agent-tray install --gemini",
        );
        if command.is_some() && !self.hooks_enabled(&dir, Some(&doc), bin, false) {
            out.push(Finding::Problem(format!(
                "Gemini CLI runs no hooks: hooksConfig.enabled is false in {}",
                path.display()
            )));
        }
        (out, command)
    }

    /// Gemini CLI's `SessionStart` payload, as recorded from 0.61.0.
    fn probe_payload(&self, probe_id: &str) -> Vec<u8> {
        json!({
            "session_id": probe_id,
            "transcript_path": "",
            "cwd": crate::doctor::findings::probe_cwd(),
            "hook_event_name": "SessionStart",
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "source": "startup",
        })
        .to_string()
        .into_bytes()
    }
}

/// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini` (Gemini CLI puts its folder under
/// `GEMINI_CLI_HOME` when set, in place of the home folder).
fn gemini_dir() -> Option<PathBuf> {
    super::home_dir_or("GEMINI_CLI_HOME", ".gemini").map(|d| {
        if std::env::var_os("GEMINI_CLI_HOME").is_some_and(|v| !v.is_empty()) {
            d.join(".gemini")
        } else {
            d
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    use chrono::DateTime;

    use crate::agents::{observation_from_payload, Adapters};
    use crate::hook_payload::{parse_hook, HookVocabulary, PayloadError};
    use crate::model::SessionState;
    use crate::transition::{apply, create, Now, SessionRecord};

    const HOOKS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gemini/real-0.61.0/hooks.jsonl"
    );

    fn records() -> Vec<serde_json::Value> {
        std::fs::read_to_string(HOOKS)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn now(secs: i64) -> Now {
        Now {
            wall: DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap(),
            mono: Duration::from_secs(u64::try_from(secs).unwrap()),
        }
    }

    /// The recorded run (0.61.0, hooks.jsonl): session S1 started, ran a shell command after
    /// the permission dialog, finished its turn and quit (SessionEnd three times). Fed through
    /// the hook's parser with `--agent gemini` and the transition rules, each event must leave
    /// the session in the state people expect; PreCompress and BeforeToolSelection (once per
    /// model call) must be known and ignored, the 2nd and 3rd SessionEnd dropped.
    #[test]
    fn a_recorded_gemini_session_goes_through_every_state_the_issue_names() {
        let mut record: Option<SessionRecord> = None;
        let mut seen = Vec::new();
        for (i, line) in records().iter().enumerate() {
            let payload = serde_json::to_vec(&line["payload"]).unwrap();
            if line["payload"]["session_id"].as_str().unwrap()
                != "048a26ea-45f8-4cb0-bcc3-d849903714a3"
            {
                continue;
            }
            let secs = i64::try_from(i).unwrap() + 1;
            let event = line["event"].as_str().unwrap().to_string();
            let parsed =
                observation_from_payload(&payload, Some(Agent::Gemini), None, now(secs).wall);
            let obs = match parsed {
                Ok(obs) => obs,
                Err(PayloadError::KnownIgnored(name)) => {
                    assert!(
                        ["PreCompress", "BeforeToolSelection"].contains(&name.as_str()),
                        "{name} must not be ignored"
                    );
                    continue;
                }
                Err(e) => panic!("line {}: {e}", i + 1),
            };
            assert_eq!(obs.agent, Agent::Gemini);
            let applied = match record.as_mut() {
                None => {
                    record = Some(create(&obs, now(secs)).unwrap());
                    true
                }
                Some(r) => apply(r, &obs, now(secs)).is_ok(),
            };
            if applied {
                let state = record.as_ref().unwrap().session.state;
                if seen.last().map(|(_, s)| *s) != Some(state) {
                    seen.push((event, state));
                }
            }
        }
        use SessionState::*;
        let states: Vec<SessionState> = seen.iter().map(|(_, s)| *s).collect();
        assert_eq!(
            states,
            [
                Starting,
                Working,
                WaitingForPermission,
                Working,
                Idle,
                Ended
            ],
            "the states in order: {seen:?}"
        );
        let s = &record.unwrap().session;
        assert_eq!(s.cwd.as_deref(), Some("/home/dev/work"));
        assert!(s
            .transcript_path
            .as_deref()
            .is_some_and(|p| p.contains("/.gemini/tmp/work/chats/")));
    }

    /// Gemini's payloads carry `timestamp`, a key only Copilot sends to Claude's hooks: with
    /// `--agent gemini` that must not make them a foreign caller's (they were all refused).
    #[test]
    fn gemini_payloads_are_not_taken_for_a_foreign_caller_of_claudes_hooks() {
        for line in records() {
            let payload = serde_json::to_vec(&line["payload"]).unwrap();
            match parse_hook(&payload, Some(Agent::Gemini), &Adapters) {
                Ok(p) => assert_eq!(p.agent, Some(Agent::Gemini)),
                Err(PayloadError::KnownIgnored(_)) => {}
                Err(e) => panic!("{}: {e}", line["event"]),
            }
        }
    }

    /// Without `--agent`, a payload whose transcript is under `.gemini/` is Gemini's.
    #[test]
    fn a_transcript_under_dot_gemini_tells_the_agent_without_the_flag() {
        let fields = HookFields {
            transcript_path: Some("/home/me/.gemini/tmp/p/chats/session-x.jsonl".into()),
            ..Default::default()
        };
        assert_eq!(
            Adapters.infer_agent(&fields, EventKind::UserPromptSubmit),
            Some(Agent::Gemini)
        );
    }

    /// The recorded process tree: the hook's parent is the inner node (`--max-old-space-size`,
    /// the session's process), its parent the outer wrapper that ignores signals. The walk must
    /// report the inner one, never climb to the wrapper, and never mistake Claude's for it.
    #[test]
    fn the_hooks_parent_the_inner_gemini_node_is_the_sessions_process() {
        let line = &records()[0];
        let chain = line["parent_chain"].as_array().unwrap();
        let words = |i: usize| -> Vec<String> {
            chain[i]["cmd"]
                .as_str()
                .unwrap()
                .split(' ')
                .map(str::to_string)
                .collect()
        };
        let inner = u32::try_from(chain[0]["pid"].as_u64().unwrap()).unwrap();
        let outer = u32::try_from(chain[1]["pid"].as_u64().unwrap()).unwrap();
        let tree = crate::test_support::ScriptedTable::default()
            .with_argv(inner, outer, "node", words(0))
            .with_argv(outer, 77, "node", words(1))
            .with(77, 1, "bash", &["bash"]);
        assert_eq!(
            crate::agent_pid::find_agent_pid(&tree, inner, Some(Agent::Gemini), &Adapters),
            Some((inner, Agent::Gemini))
        );
        assert_eq!(
            crate::agent_pid::find_agent_pid(&tree, inner, None, &Adapters),
            Some((inner, Agent::Gemini))
        );
        assert_eq!(
            crate::agent_pid::find_agent_pid(&tree, inner, Some(Agent::Claude), &Adapters),
            None,
            "a Claude hook never reports Gemini's pid"
        );
    }

    const BIN: &str = "/opt/agent-tray/bin/agent-tray";

    /// A settings.json as people have it: Gemini's own keys in their order, another tool's
    /// hook sharing an event with ours, unicode, and numbers written their own way.
    const HOSTILE: &str = r#"{
  "security": {
    "auth": {
      "selectedType": "gemini-api-key"
    }
  },
  "ui": { "theme": "Default", "note": "héllo ✓ \u00fc" },
  "big": 123456789012345678901234567890,
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file",
        "hooks": [
          { "name": "guard", "type": "command", "command": "/usr/local/bin/guard.sh", "timeout": 1e3 }
        ]
      }
    ]
  },
  "zzz": true
}
"#;

    /// Install merges: every byte of the file outside what we add stays, other hooks stay,
    /// BeforeModel/AfterModel are never registered, twice changes nothing, and uninstall gives
    /// back exactly the file it started from.
    #[test]
    fn install_merges_into_settings_json_and_uninstall_gives_back_the_same_bytes() {
        let path = Path::new("/home/me/.gemini/settings.json");
        let bin = Path::new(BIN);
        let plan = plan_text(path, Some(HOSTILE), bin, Action::Install).unwrap();
        let new = plan.changes[0].new.clone().expect("a change");
        for kept in [
            r#""selectedType": "gemini-api-key""#,
            r#""note": "héllo ✓ \u00fc""#,
            "123456789012345678901234567890",
            r#""command": "/usr/local/bin/guard.sh", "timeout": 1e3"#,
            r#""zzz": true"#,
        ] {
            assert!(new.contains(kept), "{kept} kept byte for byte in:\n{new}");
        }
        let doc: Value = serde_json::from_str(&new).unwrap();
        for (event, _) in EVENTS {
            let groups = doc["hooks"][event].as_array().unwrap();
            let ours: Vec<&Value> = groups
                .iter()
                .flat_map(|g| g["hooks"].as_array().unwrap())
                .filter(|h| h["command"] == format!("{BIN} hook --agent gemini"))
                .collect();
            assert_eq!(ours.len(), 1, "{event}");
            assert_eq!(ours[0]["timeout"], 5000, "milliseconds");
        }
        for never in ["BeforeModel", "AfterModel", "PreCompress"] {
            assert!(
                doc["hooks"].get(never).is_none(),
                "{never} is never registered"
            );
        }
        assert_eq!(
            doc["hooks"]["BeforeTool"][0]["hooks"][0]["command"], "/usr/local/bin/guard.sh",
            "the other tool's hook stays first"
        );
        let again = plan_text(path, Some(&new), bin, Action::Install).unwrap();
        assert_eq!(
            again.changes[0].new, None,
            "installing twice changes nothing"
        );
        let back = plan_text(path, Some(&new), bin, Action::Uninstall).unwrap();
        assert_eq!(back.changes[0].new.as_deref(), Some(HOSTILE));
    }

    /// A file Gemini could not read either is refused, and nothing is planned for it.
    #[test]
    fn an_invalid_settings_json_is_refused_untouched() {
        let path = Path::new("/home/me/.gemini/settings.json");
        let err =
            plan_text(path, Some("{\"hooks\": "), Path::new(BIN), Action::Install).unwrap_err();
        assert!(matches!(err, InstallError::Unparsable { .. }), "{err}");
    }

    #[test]
    fn settings_with_comments_are_merged_and_only_truly_invalid_files_refused() {
        let path = Path::new("/g/.gemini/settings.json");
        let bin = Path::new("/usr/bin/agent-tray");
        let original = "{\n  // the theme I like\n  \"ui\": { \"theme\": \"Dracula\" }, /* keep */\n  \"hooks\": {\n    // mine\n    \"BeforeTool\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"mine.sh\"}]}]\n  }\n}\n";
        let plan = plan_text(path, Some(original), bin, Action::Install).expect("JSONC merges");
        let installed = plan.changes[0].new.clone().expect("ours added");
        for kept in [
            "// the theme I like",
            "/* keep */",
            "// mine",
            "\"theme\": \"Dracula\"",
        ] {
            assert!(installed.contains(kept), "{kept} kept:\n{installed}");
        }
        let plan = plan_text(path, Some(&installed), bin, Action::Uninstall).expect("uninstall");
        let back = plan.changes[0].new.clone().expect("ours removed");
        for kept in ["// the theme I like", "/* keep */", "// mine", "mine.sh"] {
            assert!(back.contains(kept), "{kept} kept:\n{back}");
        }
        assert_eq!(
            parse_json_with_comments(&back).unwrap(),
            parse_json_with_comments(original).unwrap()
        );
        // Looser than Gemini CLI reads: refused untouched.
        for bad in ["{\"a\": 1,}", "{'a': 1}", "{\"a\": 1", "[1]"] {
            assert!(
                matches!(
                    plan_text(path, Some(bad), bin, Action::Install),
                    Err(InstallError::Unparsable { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_resume_command_is_geminis_own() {
        assert_eq!(
            crate::tray_model::resume_command(Agent::Gemini, "048a26ea-45f8"),
            "gemini --resume 048a26ea-45f8"
        );
    }
}
