//! Qwen Code (`@qwen-code/qwen-code`): Claude-compatible command hooks in `~/.qwen/settings.json`
//! (the same `hooks.<Event>: [{matcher, hooks: [entry]}]` shape, the same event names and
//! payload fields), so it reuses Claude's event mapping and the same byte-safe editor.
//!
//! Run here with its real binary, 0.24.4 (`tests/fixtures/qwen/real-0.24.4/`, the e2e suite
//! `test_qwen.py`). What differs from Claude, as seen there:
//! - **It asks before its tool hooks.** A call that needs approval fires `PermissionRequest`
//!   (with a `prompt_id`, no `tool_use_id`), waits for the hook's answer, and only then shows its
//!   dialog; `PreToolUse` comes once the call is allowed. So a `PreToolUse` after an ask is the
//!   answer taking effect (every observation says so: `asks_before_tool_hooks`), and the request
//!   is known by its tool and input (the answer path's digest), which is what it asks.
//! - **Its `PermissionRequest` hook answers in Claude's shape**
//!   (`hookSpecificOutput.decision.behavior` allow/deny, with a deny `message`): the answer path
//!   is Claude's, but the terminal shows no dialog while our hook waits (see the catalogue row).
//! - **Hook timeouts**: 0.24.4 reads a `timeout` below 1000 as seconds and one of 1000 or more as
//!   milliseconds (the unit older versions had); a missing one is 60 s. We write milliseconds of
//!   at least 1000, read the same by both: 600 000 for `PermissionRequest` (Claude's 600 s, which
//!   our wait stays under), 5 000 for the rest (our hook exits in about 100 ms).
//! - **`Stop` carries the context figure**: `input_tokens` (the last request's) and
//!   `context_limit` (the model's window) become the session's context.
//! - **Live-session files**: each running session writes `~/.qwen/sessions/<pid>.json`
//!   (`sessionId`, `pid`, `cwd`, `procStart` as `<boot id>:<start token>`), read by Claude's feed
//!   for the same kind of file: a session is listed without hooks, and with both it is one row
//!   (the same id and pid). The pid is the innermost `cli.js` node (its launcher relaunches
//!   itself twice), the process its hooks run under: kill it and the session ends.
//!
//! Its own events that say nothing about a session's state (`SessionDelete`, `MessageDisplay`,
//! `TodoCreated`, `TodoCompleted`) are known and ignored; `MessageDisplay` fires per streamed batch
//! and is never registered.

pub mod controller;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::claude::sessions::{ClaudeSessionsFeed, LiveFileKind};
use super::{standard_hook_event, AgentAdapter, HookEvent, InstallOptions};
use crate::doctor::findings::{hook_findings, Finding};
use crate::feeds::watch::spawn_feed;
use crate::feeds::{FeedContext, NamedTask};
use crate::hook_payload::HookFields;
use crate::install::hooks_json::{self, parse_json, HookSpec};
use crate::install::{read_optional, Action, InstallError, Plan};
use crate::model::{Agent, EventKind, Observation};

/// Its live-session files: the same kind as Claude's, with no helper processes and a generated
/// `name` that is no title.
pub const LIVE_FILES: LiveFileKind = LiveFileKind {
    agent: Agent::Qwen,
    feed_name: "qwen_sessions",
    is_helper: never_a_helper,
    name_is_title: false,
    start_token: super::claude::sessions::start_token_of,
};

fn never_a_helper(_: &[String]) -> bool {
    false
}

/// Its tools whose answer it takes only from its own dialog (`ask_user_question`; `exit_plan_mode`
/// in plan mode; `propose_goal`).
pub const USER_DIALOG_TOOLS: &[&str] = &["ask_user_question", "exit_plan_mode", "propose_goal"];

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

/// The `PermissionRequest` hook's timeout, in milliseconds: Claude's 600 s. The hook waits there
/// for an answer from the tray and gives up by itself before this.
pub const PERMISSION_TIMEOUT_MS: u64 = 600_000;
/// Every other hook's timeout, in milliseconds (the hook exits in about 100 ms).
pub const TIMEOUT_MS: u64 = 5_000;

/// The timeout written for `event`, in milliseconds.
pub fn timeout_ms(event: &str) -> u64 {
    match event {
        "PermissionRequest" => PERMISSION_TIMEOUT_MS,
        _ => TIMEOUT_MS,
    }
}

fn qwen_entry(event: &str, command: String) -> Value {
    json!({"type": "command", "command": command, "timeout": timeout_ms(event)})
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

    /// Not its tools that need the user (read in the 0.24.4 bundle: `requiresUserInteraction`):
    /// for those Qwen ignores a hook's allow, honours a deny, and shows its dialog only once the
    /// hook is done, so waiting on one would hide the question and answering it could only
    /// refuse it.
    fn offers_answer_for(&self, tool: &str) -> bool {
        !USER_DIALOG_TOOLS.contains(&tool)
    }

    /// Every call says the agent asks before its tool hooks; `Stop` carries the context figure.
    fn refine_observation(&self, fields: &HookFields, obs: &mut Observation) {
        obs.asks_before_tool_hooks = true;
        if obs.event == EventKind::Stop {
            obs.context_tokens = fields.input_tokens;
            obs.context_window = fields.context_limit;
        }
    }

    /// Its live-session files (`~/.qwen/sessions/<pid>.json`).
    fn spawn_feeds(&self, ctx: &FeedContext<'_>) -> Vec<NamedTask> {
        let feed = ClaudeSessionsFeed::of_kind(
            LIVE_FILES,
            ctx.dirs.to_vec(),
            ctx.config.stats.of("feed_qwen_sessions"),
        );
        let timing = ctx.config.timing;
        vec![(
            "feed_qwen_sessions",
            spawn_feed(feed, ctx.sink.clone(), timing, ctx.token.clone()),
        )]
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

    fn recorded(name: &str) -> Vec<u8> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen/real-0.24.4");
        std::fs::read(dir.join(name)).unwrap()
    }

    /// Every hook call Qwen Code 0.24.4 made in a recorded session (a plain turn, a command it
    /// asked about and that was approved in the terminal, /quit), replayed in order: the session
    /// goes starting → working → idle → working → waiting_for_permission → working → idle →
    /// ended, the wait ends with the call's PreToolUse, and each Stop carries its context figure.
    #[test]
    fn the_recorded_session_moves_through_its_states_with_its_context() {
        let text = String::from_utf8(recorded("hooks.jsonl")).unwrap();
        let mut record: Option<SessionRecord> = None;
        let mut seen = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let row: Value = serde_json::from_str(line).unwrap();
            let payload = serde_json::to_vec(&row["payload"]).unwrap();
            let secs = i64::try_from(i).unwrap() + 1;
            let obs = observation_from_payload(&payload, Some(Agent::Qwen), None, now(secs).wall)
                .unwrap_or_else(|e| panic!("line {i}: {e}"));
            assert!(obs.asks_before_tool_hooks, "line {i}");
            if obs.event == EventKind::Stop {
                assert_eq!(
                    (obs.context_tokens, obs.context_window),
                    (Some(100), Some(200_000)),
                    "Stop's input_tokens and context_limit"
                );
            }
            match record.as_mut() {
                None => record = Some(create(&obs, now(secs)).unwrap()),
                Some(r) => {
                    let _ = apply(r, &obs, now(secs));
                }
            }
            let r = record.as_ref().unwrap();
            if seen.last() != Some(&r.session.state) {
                seen.push(r.session.state);
            }
            if obs.event == EventKind::PreToolUse {
                assert_eq!(r.session.state, SessionState::Working, "the tool runs");
            }
        }
        use SessionState::*;
        assert_eq!(
            seen,
            vec![
                Starting,
                Working,
                Idle,
                Working,
                WaitingForPermission,
                Working,
                Idle,
                Ended
            ]
        );
        let r = record.unwrap();
        assert_eq!(r.session.context_tokens, Some(100));
        assert_eq!(r.session.context_window, Some(200_000));
    }

    /// The recorded PermissionRequest is offered as Claude's are, known by its tool and input
    /// (it carries no tool-call id): the same command asked again is the same request, another
    /// command in the same turn another one.
    #[test]
    fn the_recorded_permission_request_is_offered_and_known_by_what_it_asks() {
        let text = String::from_utf8(recorded("hooks.jsonl")).unwrap();
        let ask: Value = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["payload"].clone())
            .find(|p| p["hook_event_name"] == "PermissionRequest")
            .unwrap();
        assert!(ask.get("tool_use_id").is_none(), "0.24.4 sends none");
        let call = crate::answering::ask_call_from_payload(&ask).unwrap();
        assert_eq!(call.detail.tool, "run_shell_command");
        assert_eq!(call.detail.command.as_deref(), Some("touch made-by-tool"));
        let again = crate::answering::ask_call_from_payload(&ask).unwrap();
        assert_eq!(call.call_id, again.call_id);
        let mut other = ask.clone();
        other["tool_input"]["command"] = json!("touch another");
        let other = crate::answering::ask_call_from_payload(&other).unwrap();
        assert_ne!(call.call_id, other.call_id);
        let path = crate::catalogue::entry(Agent::Qwen).answer_path.unwrap();
        let printed = crate::answering::hook_output(
            path.reply,
            &crate::answering::HookDecision::Deny {
                message: Some("no".into()),
            },
            &ask,
        )
        .unwrap();
        let printed: Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(
            printed["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "no"}),
            "what Qwen reads: hookSpecificOutput.decision"
        );
    }

    /// The recorded live-session file is read as a sighting of the session its hooks name,
    /// owned by the pid it names, with no title (its `name` is a generated handle), and its
    /// `<boot id>:<token>` start is compared by the token.
    #[test]
    fn the_recorded_session_file_is_a_sighting_of_the_hooks_session() {
        use crate::agents::claude::sessions::{
            judge_with, observation_for, parse_sessions_file, start_token_of, Verdict,
        };
        let file = parse_sessions_file(&recorded("session-file.json")).unwrap();
        let hooks = String::from_utf8(recorded("hooks.jsonl")).unwrap();
        let first: Value = serde_json::from_str(hooks.lines().next().unwrap()).unwrap();
        assert_eq!(
            file.session_id.as_deref(),
            first["payload"]["session_id"].as_str()
        );
        let pid = file.pid.unwrap();
        let obs = observation_for(&LIVE_FILES, &file, pid, now(1).wall).unwrap();
        assert_eq!(obs.agent, Agent::Qwen);
        assert_eq!(obs.event, EventKind::Sighting);
        assert_eq!(obs.pid, Some(pid));
        assert_eq!(obs.cwd.as_deref(), Some("/home/dev/proj"));
        assert_eq!(obs.title, None);
        let recorded_start = file.proc_start.clone().unwrap();
        let token = start_token_of(&recorded_start).to_string();
        assert_ne!(token, recorded_start, "the boot id is cut off");
        struct Procs(u32, String);
        impl crate::process::ProcessTable for Procs {
            fn info(&self, _: u32) -> Option<crate::process::ProcInfo> {
                None
            }
            fn cmdline(&self, _: u32) -> Option<Vec<String>> {
                None
            }
            fn exists(&self, pid: u32) -> bool {
                pid == self.0
            }
            fn start_token(&self, _: u32) -> Option<String> {
                Some(self.1.clone())
            }
            fn children(&self, _: u32) -> Vec<u32> {
                Vec::new()
            }
        }
        let live = Procs(pid, token);
        let check = |procs: &Procs| judge_with(pid, Some(&recorded_start), procs, &LIVE_FILES);
        assert_eq!(check(&live), Verdict::Live);
        assert_eq!(check(&Procs(pid, "1".into())), Verdict::PidReused);
        assert_eq!(check(&Procs(pid + 1, "1".into())), Verdict::NotRunning);
    }

    /// Its question tool is never offered (Qwen would ignore our allow and hide the question
    /// while we wait); its shell tool is.
    #[test]
    fn only_tools_it_lets_a_hook_allow_are_offered() {
        let adapter = QwenCode;
        assert!(adapter.offers_answer_for("run_shell_command"));
        assert!(adapter.offers_answer_for("write_file"));
        assert!(!adapter.offers_answer_for("ask_user_question"));
        assert!(crate::agents::adapter_of(Agent::Claude).offers_answer_for("ask_user_question"));
    }

    /// Qwen 0.24.4 reads a timeout of 1000 or more as milliseconds, and older versions read
    /// every timeout so: the permission hook may wait 600 s, every other hook 5 s.
    #[test]
    fn install_writes_timeouts_in_milliseconds_long_only_for_the_permission_hook() {
        let path = Path::new("/home/me/.qwen/settings.json");
        let bin = Path::new("/opt/agent-tray/bin/agent-tray");
        let new = plan_text(path, None, bin, Action::Install).unwrap().changes[0]
            .new
            .clone()
            .unwrap();
        let doc: Value = serde_json::from_str(&new).unwrap();
        for (event, _) in EVENTS {
            let timeout = doc["hooks"][event][0]["hooks"][0]["timeout"].as_u64();
            let want = if *event == "PermissionRequest" {
                600_000
            } else {
                5_000
            };
            assert_eq!(timeout, Some(want), "{event}");
            assert!(
                timeout.unwrap() >= 1000,
                "read as milliseconds by every version"
            );
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
