//! Qwen Code (`@qwen-code/qwen-code`): Claude-compatible command hooks in `~/.qwen/settings.json`
//! (the same `hooks.<Event>: [{matcher, hooks: [entry]}]` shape, the same event names and
//! payload fields), so it reuses Claude's event mapping and the same byte-safe editor.
//!
//! Not yet run here with its real binary: the mapping follows its documentation (hooks.md), and
//! the tests feed Claude-shaped payloads with the fields Qwen documents. Its own events that say
//! nothing about a session's state (`SessionDelete`, `MessageDisplay`, `TodoCreated`,
//! `TodoCompleted`) are known and ignored; `MessageDisplay` fires per streamed batch and is never
//! registered. No `timeout` is written: its unit is not documented consistently across versions,
//! and ours exits within about 100 ms.

pub mod controller;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{standard_hook_event, AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::findings::{hook_findings, Finding};
use crate::hook_payload::HookFields;
use crate::install::hooks_json::{self, parse_json, HookSpec};
use crate::install::{read_optional, Action, InstallError, Plan};
use crate::model::{Agent, EventKind};

/// Qwen Code's adapter.
pub struct QwenCode;

/// The events we register (Claude's names), and whether they take a tool matcher.
pub const EVENTS: &[(&str, bool)] = &[
    ("SessionStart", false),
    ("UserPromptSubmit", false),
    ("PreToolUse", true),
    ("PermissionRequest", true),
    ("PostToolUse", true),
    ("PostToolUseFailure", true),
    ("Notification", false),
    ("Stop", false),
    ("SubagentStart", false),
    ("SubagentStop", false),
    ("PreCompact", false),
    ("SessionEnd", false),
];

fn qwen_entry(_event: &str, command: String) -> Value {
    json!({"type": "command", "command": command})
}

/// Our hooks for `settings.json`.
pub fn spec(bin: &Path) -> HookSpec<'_> {
    HookSpec::for_events(Agent::Qwen, bin, EVENTS, qwen_entry)
}

/// The pure plan for `settings.json` given its current text.
pub fn plan_text(
    path: &Path,
    old: Option<&str>,
    bin: &Path,
    action: Action,
) -> Result<Plan, InstallError> {
    hooks_json::plan_text(path, old, &spec(bin), action).map(|(plan, _)| plan)
}

impl AgentAdapter for QwenCode {
    fn agent(&self) -> Agent {
        Agent::Qwen
    }

    /// Its controller inbox, once the user minted a token for us (`controller`).
    fn direct_talk(&self) -> Option<&'static dyn crate::talk_back::DirectTalk> {
        Some(&controller::ControllerInbox)
    }
    /// Mints (or revokes) our controller token with Qwen's own command.
    fn consent_to_talk(&self, on: bool) -> Option<Result<String, String>> {
        Some(if on {
            controller::turn_on().map(|id| {
                format!("Qwen Code's sessions now take prompts from `agent-tray send` (controller {id}, \"{}\")", controller::LABEL)
            })
        } else {
            controller::turn_off().map(|was| {
                if was {
                    "the controller token is revoked in Qwen Code and forgotten here".to_string()
                } else {
                    "it was off".to_string()
                }
            })
        })
    }

    fn hook_event(&self, name: &str, _fields: &HookFields) -> HookEvent {
        match name {
            "SessionDelete" | "MessageDisplay" | "TodoCreated" | "TodoCompleted" => {
                HookEvent::Ignored
            }
            _ => standard_hook_event(name),
        }
    }
    /// A transcript under `.qwen/`.
    fn payload_evidence(&self, fields: &HookFields, _event: EventKind) -> u8 {
        match fields.transcript_path.as_deref() {
            Some(p) if p.contains("/.qwen/") => 3,
            _ => 0,
        }
    }

    fn config_dir(&self) -> Option<PathBuf> {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".qwen"))
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

    fn doctor_hooks(&self, agent: Agent, bin: &Path) -> (Vec<Finding>, Option<String>) {
        let Some(dir) = self.config_dir() else {
            return (
                vec![Finding::Problem(
                    "cannot find Qwen Code's folder: set HOME".into(),
                )],
                None,
            );
        };
        let path = self.hooks_file(&dir);
        let doc = match read_optional(&path).and_then(|t| parse_json(&path, t.as_deref())) {
            Ok(doc) => doc,
            Err(e) => return (vec![Finding::Problem(e.to_string())], None),
        };
        let events: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
        hook_findings(
            self.entry().product_name,
            &path,
            &doc,
            &events,
            bin,
            agent,
            "agent-tray install --qwen",
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    use chrono::DateTime;

    use crate::agents::observation_from_payload;
    use crate::hook_payload::PayloadError;
    use crate::model::SessionState;
    use crate::transition::{apply, create, Now, SessionRecord};

    fn now(secs: i64) -> Now {
        Now {
            wall: DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap(),
            mono: Duration::from_secs(u64::try_from(secs).unwrap()),
        }
    }

    /// Payloads shaped as Qwen Code documents them (Claude's fields plus `timestamp`): with
    /// `--agent qwen` they move a session like Claude's, its own extra events are ignored, and
    /// the `timestamp` key does not make them a foreign caller's.
    #[test]
    fn documented_qwen_payloads_move_a_session_like_claudes() {
        let base = |event: &str, extra: Value| {
            let mut p = json!({
                "session_id": "q-1", "hook_event_name": event, "cwd": "/w",
                "transcript_path": "/home/me/.qwen/projects/-w/chats/q-1.jsonl",
                "timestamp": "2026-12-01T06:00:00Z",
            });
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::to_vec(&p).unwrap()
        };
        let story = [
            (
                base("SessionStart", json!({"source": "startup"})),
                Some(SessionState::Starting),
            ),
            (
                base("UserPromptSubmit", json!({"prompt": "hi"})),
                Some(SessionState::Working),
            ),
            (base("MessageDisplay", json!({})), None),
            (
                base("PreToolUse", json!({"tool_name": "run_shell_command"})),
                Some(SessionState::Working),
            ),
            (
                base(
                    "PermissionRequest",
                    json!({"tool_name": "run_shell_command"}),
                ),
                Some(SessionState::WaitingForPermission),
            ),
            (
                base("PostToolUse", json!({"tool_name": "run_shell_command"})),
                Some(SessionState::Working),
            ),
            (base("Stop", json!({})), Some(SessionState::Idle)),
            (base("TodoCreated", json!({})), None),
            (
                base("SessionEnd", json!({"reason": "exit"})),
                Some(SessionState::Ended),
            ),
        ];
        let mut record: Option<SessionRecord> = None;
        for (i, (payload, want)) in story.iter().enumerate() {
            let secs = i64::try_from(i).unwrap() + 1;
            match observation_from_payload(payload, Some(Agent::Qwen), None, now(secs).wall) {
                Ok(obs) => {
                    assert_eq!(obs.agent, Agent::Qwen);
                    match record.as_mut() {
                        None => record = Some(create(&obs, now(secs)).unwrap()),
                        Some(r) => {
                            apply(r, &obs, now(secs)).unwrap();
                        }
                    }
                    assert_eq!(
                        Some(record.as_ref().unwrap().session.state),
                        *want,
                        "step {i}"
                    );
                }
                Err(PayloadError::KnownIgnored(_)) => assert_eq!(*want, None, "step {i}"),
                Err(e) => panic!("step {i}: {e}"),
            }
        }
    }

    #[test]
    fn install_merges_into_qwen_settings_and_uninstall_gives_the_bytes_back() {
        let path = Path::new("/home/me/.qwen/settings.json");
        let bin = Path::new("/opt/agent-tray/bin/agent-tray");
        // As Qwen Code writes it (JSON.stringify, two spaces), with another tool's hook.
        let old = r#"{
  "model": {
    "name": "qwen3-coder"
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "mine"
          }
        ]
      }
    ]
  }
}
"#;
        let new = plan_text(path, Some(old), bin, Action::Install)
            .unwrap()
            .changes[0]
            .new
            .clone()
            .unwrap();
        assert!(new.contains("\"command\": \"mine\""), "{new}");
        assert!(new.contains("/opt/agent-tray/bin/agent-tray hook --agent qwen"));
        assert!(
            !new.contains("MessageDisplay"),
            "per streamed batch: never registered"
        );
        let back = plan_text(path, Some(&new), bin, Action::Uninstall).unwrap();
        assert_eq!(back.changes[0].new.as_deref(), Some(old));
        assert_eq!(
            crate::tray_model::resume_command(Agent::Qwen, "q-1"),
            "qwen --resume q-1"
        );
    }
}
