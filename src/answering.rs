//! Answering an agent's permission request from outside its terminal: what the hook sends, what
//! it prints, and the user's per-agent choice.
//!
//! The path, end to end: the agent runs `agent-tray hook` for its `PermissionRequest`; the hook
//! journals the event as always, then sends it to the engine as an `ask` with what is asked
//! ([`AskCall`]) and keeps the connection open. The engine records the request in its book
//! ([`agent_tray_domain::pending`]), shows it on the session's row, and writes one
//! [`HookDecision`] back when someone answers, when the agent moves on, or at the deadline. The
//! hook prints the answer in the agent's own shape ([`hook_output`]) and exits.
//!
//! Why the safety lives where it does:
//! - **Every failure prints nothing.** No engine, an engine that dies mid-wait, a broken socket,
//!   an unreadable line, the deadline: the hook prints no decision and the agent asks in its
//!   terminal as it would without us. Only an explicit answer from the user is ever printed.
//! - **The wait is bounded twice**: by the user's setting, clamped by the engine to the agent's
//!   [`AnswerPath::max_wait_secs`], and by the hook itself from its own start, so an engine that
//!   answers late or a clock that jumps cannot hold the agent past its hook timeout.
//! - **What is asked is digested**: the same call asked again with other input is another request
//!   (see the book), so an Allow given while reading one command never allows another.
//! - **The choice is a file the engine reads per request** ([`SETTINGS_FILE`]), so the daemon, the
//!   desktop app and a headless machine share it, and a change needs no restart.

pub mod forms;
pub mod grant;
pub mod route;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use agent_tray_domain::pending::{
    Accepts, Answer, AnswerPath, AnswerSource, AskDetail, GrantItem, GrantKind, Outcome,
    PendingView, Question, QuestionAnswer, QuestionOption, ReplyShape, RequestId, RequestKind,
    SessionGrant, ShownOption, ShownQuestion, ShownRequest, Target,
};

use crate::catalogue::InCatalogue;
use crate::model::Agent;
use crate::paths::TrayPaths;

/// The message of the deny the engine gives `doctor`'s probe of the answer path.
pub const PROBE_ANSWER: &str = "Agent Tray doctor probe: not a real request";

/// The user's per-agent choices, in the data folder.
pub const SETTINGS_FILE: &str = "answering.json";

/// The most of a tool's input an ask carries: the request line's own limit leaves room for the
/// observation beside it. A larger input is not offered for an answer (the user could not read
/// it whole); the agent asks in its terminal.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;

/// The user's choice for one agent; unset fields take the agent's defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentChoice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_secs: Option<u64>,
}

impl AgentChoice {
    /// Takes what is given; `None` leaves that part as it is.
    fn update(&mut self, enabled: Option<bool>, wait_secs: Option<u64>) {
        if enabled.is_some() {
            self.enabled = enabled;
        }
        if wait_secs.is_some() {
            self.wait_secs = wait_secs;
        }
    }
}

/// `answering.json`: `{"agents": {"claude": {"enabled": true, "wait_secs": 120}}}`, and
/// `"over_ssh": true` where this machine's user lets a tray elsewhere answer over ssh.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerSettings {
    #[serde(default)]
    pub agents: BTreeMap<String, AgentChoice>,
    /// The same, for MCP servers' forms (`"forms": {"claude": {"enabled": true}}`): a route of its
    /// own, since its wait can hide the terminal's form where a permission's does not.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub forms: BTreeMap<String, AgentChoice>,
    /// Whether `allow`/`deny --over-ssh` (what a tray on another machine runs here through its
    /// remote link) may answer this machine's requests. Off unless turned on here
    /// (`agent-tray answering --over-ssh on`): a machine that is someone's remote decides for
    /// itself whether answers may come from elsewhere.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_ssh: bool,
}

/// What is in force for one agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct EffectiveChoice {
    pub agent: Agent,
    pub enabled: bool,
    #[ts(type = "number")]
    pub wait_secs: u64,
    #[ts(type = "number")]
    pub default_wait_secs: u64,
    #[ts(type = "number")]
    pub max_wait_secs: u64,
    pub on_by_default: bool,
    /// Whether the terminal keeps its own dialog while the hook waits.
    pub terminal_stays_open: bool,
    pub accepts: Accepts,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid answering settings: {source}; fix or delete it (the defaults apply without it)")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Write(#[from] crate::atomic_file::AtomicWriteError),
    #[error("{0} cannot be answered from outside its terminal")]
    NotAnswerable(Agent),
    #[error("{0}'s MCP forms cannot be answered from outside its terminal")]
    NoForms(Agent),
}

impl AnswerSettings {
    pub fn path(paths: &TrayPaths) -> PathBuf {
        paths.data_dir.join(SETTINGS_FILE)
    }

    /// The settings on disk; none yet is the defaults.
    pub fn load(paths: &TrayPaths) -> Result<AnswerSettings, SettingsError> {
        Self::load_in(&paths.data_dir)
    }

    /// The settings in the data folder `data_dir`.
    pub fn load_in(data_dir: &std::path::Path) -> Result<AnswerSettings, SettingsError> {
        let path = data_dir.join(SETTINGS_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|source| SettingsError::Parse { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AnswerSettings::default()),
            Err(source) => Err(SettingsError::Read { path, source }),
        }
    }

    /// Writes the settings (atomically, private to the user).
    pub fn save(&self, paths: &TrayPaths) -> Result<(), SettingsError> {
        paths
            .ensure_private_dirs()
            .map_err(|e| SettingsError::Read {
                path: paths.data_dir.clone(),
                source: std::io::Error::other(e.to_string()),
            })?;
        let mut text = serde_json::to_vec_pretty(self).map_err(|source| SettingsError::Parse {
            path: Self::path(paths),
            source,
        })?;
        text.push(b'\n');
        crate::atomic_file::write(&Self::path(paths), &text)?;
        Ok(())
    }

    /// Sets one agent's choice (`None` leaves that part as it is).
    pub fn set(
        &mut self,
        agent: Agent,
        enabled: Option<bool>,
        wait_secs: Option<u64>,
    ) -> Result<EffectiveChoice, SettingsError> {
        if agent.entry().answer_path.is_none() {
            return Err(SettingsError::NotAnswerable(agent));
        }
        self.agents
            .entry(agent.as_str().to_string())
            .or_default()
            .update(enabled, wait_secs);
        self.effective(agent)
            .ok_or(SettingsError::NotAnswerable(agent))
    }

    /// Sets one agent's choice for MCP forms (`None` leaves that part as it is).
    pub fn set_forms(
        &mut self,
        agent: Agent,
        enabled: Option<bool>,
        wait_secs: Option<u64>,
    ) -> Result<EffectiveChoice, SettingsError> {
        if agent.entry().form_path.is_none() {
            return Err(SettingsError::NoForms(agent));
        }
        self.forms
            .entry(agent.as_str().to_string())
            .or_default()
            .update(enabled, wait_secs);
        self.effective_forms(agent)
            .ok_or(SettingsError::NoForms(agent))
    }

    /// What is in force for `agent`'s MCP forms; `None` when they cannot be answered from here.
    pub fn effective_forms(&self, agent: Agent) -> Option<EffectiveChoice> {
        let path = agent.entry().form_path?;
        let choice = self.forms.get(agent.as_str()).copied().unwrap_or_default();
        Some(Self::in_force(agent, &path, choice))
    }

    /// What is in force for `agent`; `None` when it cannot be answered from outside.
    pub fn effective(&self, agent: Agent) -> Option<EffectiveChoice> {
        let path = agent.entry().answer_path?;
        let choice = self.agents.get(agent.as_str()).copied().unwrap_or_default();
        Some(Self::in_force(agent, &path, choice))
    }

    fn in_force(agent: Agent, path: &AnswerPath, choice: AgentChoice) -> EffectiveChoice {
        EffectiveChoice {
            agent,
            enabled: choice.enabled.unwrap_or(path.on_by_default),
            wait_secs: clamp_wait(choice.wait_secs.unwrap_or(path.default_wait_secs), path),
            default_wait_secs: path.default_wait_secs,
            max_wait_secs: path.max_wait_secs,
            on_by_default: path.on_by_default,
            terminal_stays_open: path.terminal_stays_open,
            accepts: path.accepts,
        }
    }

    /// Every answerable agent's choice in force.
    pub fn all_effective(&self) -> Vec<EffectiveChoice> {
        Agent::ALL
            .iter()
            .filter_map(|agent| self.effective(*agent))
            .collect()
    }
}

/// What an answer names: a request id (`r<number>-<salt>`), else a session of this machine.
pub fn target_of(text: &str) -> Target {
    let text = text.trim();
    if RequestId::looks_like(text) {
        Target::Request(RequestId::parse(text))
    } else {
        Target::Session(agent_tray_domain::pending::SessionKey {
            host: None,
            session_id: text.to_string(),
        })
    }
}

/// A wait within what the agent allows: at least one second, at most its maximum.
pub fn clamp_wait(secs: u64, path: &AnswerPath) -> u64 {
    secs.clamp(1, path.max_wait_secs.max(1))
}

/// What the hook sends with a permission request's observation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskCall {
    /// The agent's id for the call where it gives one, else the digest.
    pub call_id: String,
    /// A digest of the tool, its whole input and its session grant ([`asked_digest`]).
    pub input_digest: String,
    pub detail: AskDetail,
    /// Whether "allow for this session" has anything to allow: the agent suggested rules for it
    /// (Claude's `permission_suggestions`). Without them the answer is not offered.
    #[serde(default)]
    pub suggests_for_session: bool,
}

/// What the engine writes to a waiting hook: an answer to print, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum HookDecision {
    Allow,
    AllowForSession,
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The user's answers to a question, one per question, already checked against it.
    Answers {
        answers: Vec<QuestionAnswer>,
    },
    /// A question closed without an answer (an MCP form's `cancel`; elsewhere a decline).
    Dismiss,
    /// A deny that also ends the turn (Claude Code's `interrupt`; elsewhere a deny).
    Stop,
    /// Nothing to print: the agent asks in its terminal (or already moved on).
    None {
        reason: String,
    },
}

impl HookDecision {
    pub fn from_answer(answer: &Answer) -> HookDecision {
        match answer {
            Answer::Allow => HookDecision::Allow,
            Answer::AllowForSession => HookDecision::AllowForSession,
            Answer::Deny { message } => HookDecision::Deny {
                message: message.clone(),
            },
            Answer::Questions { answers } => HookDecision::Answers {
                answers: answers.clone(),
            },
            Answer::Dismiss => HookDecision::Dismiss,
            Answer::Stop => HookDecision::Stop,
        }
    }
}

/// The hook's word that it printed the answer (what makes `allow` exit 0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Printed {
    pub printed: RequestId,
}

/// Reads what a `PermissionRequest` payload asks: the tool, its whole input, the folder. `None`
/// when the payload names no tool, or its input is too large to show whole.
pub fn ask_call_from_payload(payload: &Value) -> Option<AskCall> {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| payload.get(*k).and_then(Value::as_str))
            .map(str::to_string)
    };
    let tool = text(&["tool_name", "toolName"])?;
    if tool.trim().is_empty() {
        return None;
    }
    let input = payload
        .get("tool_input")
        .or_else(|| payload.get("toolInput"))
        .cloned()
        .unwrap_or(Value::Null);
    let input_text = serde_json::to_string(&input).ok()?;
    if input_text.len() > MAX_INPUT_BYTES {
        return None;
    }
    let field = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .map(str::to_string)
    };
    let change_bytes = ["content", "new_string", "newString", "patch"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(|s| s.len() as u64);
    let questions = if tool == QUESTION_TOOL {
        // A question that cannot be answered faithfully is not offered: the terminal asks it.
        Some(questions_of(&input)?)
    } else {
        None
    };
    let for_session = grant::session_grant(payload).filter(|_| questions.is_none());
    let call_digest = digest(&tool, &input_text);
    let call_id =
        text(&["tool_use_id", "toolUseId", "call_id"]).unwrap_or_else(|| call_digest.clone());
    Some(AskCall {
        call_id,
        input_digest: asked_digest(&tool, &input_text, for_session.as_ref()),
        suggests_for_session: for_session.as_ref().is_some_and(SessionGrant::is_offered),
        detail: AskDetail {
            tool,
            command: field(&["command", "cmd"]),
            file_path: field(&["file_path", "path", "filePath", "notebook_path"]),
            change_bytes,
            url: field(&["url"]),
            description: field(&["description"]),
            cwd: text(&["cwd"]),
            input: input_text,
            for_session,
            questions,
        },
    })
}

/// Claude Code's question tool: its `PermissionRequest` fires while the terminal shows the
/// question, and the hook's answer carries the choices in `updatedInput.answers`.
pub const QUESTION_TOOL: &str = crate::transition::QUESTION_TOOL;

/// The questions of a question tool's input (`{"questions": [{question, header, options:
/// [{label, description}], multiSelect}]}`), or `None` where they cannot be answered exactly as
/// asked: none, too many, a question without options or with an empty label, or two questions
/// with the same text (Claude keys its answers by the text, so they could not be told apart).
/// Claude's dialog always lets the user type an answer of their own, so every question allows
/// "Other".
pub fn questions_of(input: &Value) -> Option<Vec<Question>> {
    use agent_tray_domain::question::{MAX_OPTIONS, MAX_QUESTIONS};
    let list = input.get("questions")?.as_array()?;
    if list.is_empty() || list.len() > MAX_QUESTIONS {
        return None;
    }
    let mut questions: Vec<Question> = Vec::with_capacity(list.len());
    for q in list {
        let text = q.get("question")?.as_str()?.to_string();
        if text.trim().is_empty() || questions.iter().any(|seen| seen.question == text) {
            return None;
        }
        let options = q.get("options")?.as_array()?;
        if options.is_empty() || options.len() > MAX_OPTIONS {
            return None;
        }
        let mut parsed: Vec<QuestionOption> = Vec::with_capacity(options.len());
        for o in options {
            let label = o.get("label")?.as_str()?.to_string();
            if label.trim().is_empty() || parsed.iter().any(|p| p.label == label) {
                return None;
            }
            parsed.push(QuestionOption {
                label,
                description: o
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
        questions.push(Question {
            question: text,
            header: q.get("header").and_then(Value::as_str).map(str::to_string),
            options: parsed,
            multi_select: q
                .get("multiSelect")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            allows_other: true,
        });
    }
    Some(questions)
}

/// What the agent receives for one answered question: the labels chosen, then the user's own
/// words, joined by `", "` (Claude's own way of writing a multi-select answer).
pub fn answer_text(answer: &QuestionAnswer) -> String {
    answer
        .choices
        .iter()
        .map(String::as_str)
        .chain(answer.text.as_deref().filter(|t| !t.trim().is_empty()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tool input the agent gets back with the answers: what it asked, unchanged, plus
/// `answers` keyed by each question's text. `None` if the asked input holds no questions or not
/// as many as there are answers (the hook then prints nothing, and the terminal asks).
fn answered_input(payload: &Value, answers: &[QuestionAnswer]) -> Option<Value> {
    let input = payload
        .get("tool_input")
        .or_else(|| payload.get("toolInput"))?;
    let asked = questions_of(input)?;
    if asked.len() != answers.len() {
        return None;
    }
    let by_text: serde_json::Map<String, Value> = asked
        .iter()
        .zip(answers)
        .map(|(q, a)| (q.question.clone(), Value::String(answer_text(a))))
        .collect();
    let mut updated = input.clone();
    updated
        .as_object_mut()?
        .insert("answers".into(), Value::Object(by_text));
    Some(updated)
}

/// A digest of everything asked: the tool, its input and what "allow for this session" would
/// grant, so the same call asked again with another grant is a new request (an allow given
/// while reading one grant never hands back another).
pub fn asked_digest(tool: &str, input: &str, grant: Option<&SessionGrant>) -> String {
    match grant {
        None => digest(tool, input),
        Some(grant) => {
            let grant = serde_json::to_string(grant).unwrap_or_default();
            digest(tool, &format!("{input}\u{0}{grant}"))
        }
    }
}

/// A digest of a call: the tool and its input, as 64-bit FNV-1a in hex. Not a secret: it only
/// tells one input from another.
pub fn digest(tool: &str, input: &str) -> String {
    let hash = tool
        .bytes()
        .chain(std::iter::once(0))
        .chain(input.bytes())
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}")
}

/// What the hook prints for an answer, in the agent's shape. `None` prints nothing (the agent's
/// own prompt decides). `payload` is the request's payload: "allow for this session" hands back
/// the agent's own suggestions of what to allow.
pub fn hook_output(shape: ReplyShape, decision: &HookDecision, payload: &Value) -> Option<String> {
    if shape == ReplyShape::ElicitationAction {
        // An MCP server's form: the answers as its content, a decline; nothing else.
        let (action, content) = match decision {
            HookDecision::Answers { answers } => {
                ("accept", Some(forms::form_content(payload, answers)?))
            }
            HookDecision::Deny { .. } | HookDecision::Stop => ("decline", None),
            HookDecision::Dismiss => ("cancel", None),
            _ => return None,
        };
        let mut output = json!({"hookEventName": "Elicitation", "action": action});
        if let Some(content) = content {
            output["content"] = content;
        }
        return Some(json!({ "hookSpecificOutput": output }).to_string());
    }
    if shape == ReplyShape::ReplyWords {
        let reply = match decision {
            // OpenCode's question reply: the labels chosen per question, own words among them.
            HookDecision::Answers { answers } => json!({
                "answers": answers
                    .iter()
                    .map(|a| {
                        a.choices
                            .iter()
                            .cloned()
                            .chain(a.text.clone().filter(|t| !t.trim().is_empty()))
                            .collect::<Vec<String>>()
                    })
                    .collect::<Vec<_>>()
            }),
            HookDecision::Allow => json!({"reply": "once"}),
            HookDecision::AllowForSession => json!({"reply": "always"}),
            HookDecision::Deny { message: Some(m) } => json!({"reply": "reject", "message": m}),
            HookDecision::Deny { message: None } | HookDecision::Dismiss | HookDecision::Stop => {
                json!({"reply": "reject"})
            }
            HookDecision::None { .. } => return None,
        };
        return Some(reply.to_string());
    }
    let behaviour = match decision {
        HookDecision::Allow => json!({"behavior": "allow"}),
        HookDecision::AllowForSession => {
            // Exactly the items shown, as our own serialisation; nothing where they cannot be.
            let suggestions = grant::updated_permissions(payload)?;
            json!({"behavior": "allow", "updatedPermissions": suggestions})
        }
        HookDecision::Deny { message } => match message {
            Some(m) => json!({"behavior": "deny", "message": m}),
            None => json!({"behavior": "deny", "message": "Denied from Agent Tray."}),
        },
        HookDecision::Dismiss => {
            json!({"behavior": "deny", "message": "Dismissed from Agent Tray without an answer."})
        }
        // Claude Code's `interrupt` ends the turn with the deny; only Claude's shape has it.
        HookDecision::Stop if shape == ReplyShape::HookSpecificDecision => json!({
            "behavior": "deny", "message": "Stopped from Agent Tray.", "interrupt": true,
        }),
        HookDecision::Stop => json!({"behavior": "deny", "message": "Stopped from Agent Tray."}),
        HookDecision::Answers { answers } => {
            if shape != ReplyShape::HookSpecificDecision {
                return None; // only Claude's shape carries answers
            }
            json!({"behavior": "allow", "updatedInput": answered_input(payload, answers)?})
        }
        HookDecision::None { .. } => return None,
    };
    match shape {
        ReplyShape::ElicitationAction => None, // answered above
        ReplyShape::HookSpecificDecision => Some(
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": behaviour}})
                .to_string(),
        ),
        ReplyShape::Behavior => Some(behaviour.to_string()),
        ReplyShape::ReplyWords => None,
    }
}

/// How long the hook waits, from its own start: the engine's deadline, but never past the
/// agent's maximum.
pub fn hook_wait(engine_wait: Duration, path: &AnswerPath) -> Duration {
    engine_wait.min(Duration::from_secs(path.max_wait_secs))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn claude_payload(command: &str) -> Value {
        json!({
            "session_id": "s1", "hook_event_name": "PermissionRequest", "cwd": "/w/api",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "Make a file"},
            "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}], "behavior": "allow", "destination": "session"}]
        })
    }

    fn claude_question(questions: Value) -> Value {
        json!({
            "session_id": "s1", "hook_event_name": "PermissionRequest", "cwd": "/w/api",
            "tool_name": "AskUserQuestion", "tool_use_id": "toolu_q",
            "tool_input": {"questions": questions},
            "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
        })
    }

    // Recorded shape (Claude Code 2.1.332): the question tool's input, and its answer as the
    // hook prints it, keyed by each question's text, multi-select joined by ", ".
    #[test]
    fn a_claude_question_is_listed_whole_and_answered_in_its_own_shape() {
        let payload = claude_question(json!([
            {"question": "Which database?", "header": "DB", "multiSelect": false,
             "options": [{"label": "Postgres", "description": "server"}, {"label": "SQLite", "description": "file"}]},
            {"question": "Which caches?", "header": "Caches", "multiSelect": true,
             "options": [{"label": "Redis"}, {"label": "Memcached"}]}
        ]));
        let call = ask_call_from_payload(&payload).unwrap();
        let questions = call.detail.questions.as_ref().unwrap();
        assert_eq!(call.detail.kind(), RequestKind::Question);
        assert_eq!(questions.len(), 2);
        assert_eq!(questions[0].options[1].description.as_deref(), Some("file"));
        assert!(questions[1].multi_select && questions[1].allows_other);
        assert!(
            call.detail.for_session.is_none() && !call.suggests_for_session,
            "a question grants nothing for the session"
        );
        let answers = vec![
            QuestionAnswer {
                choices: vec!["SQLite".into()],
                text: None,
            },
            QuestionAnswer {
                choices: vec!["Redis".into(), "Memcached".into()],
                text: Some("a local one".into()),
            },
        ];
        let decision = HookDecision::Answers { answers };
        let printed: Value = serde_json::from_str(
            &hook_output(ReplyShape::HookSpecificDecision, &decision, &payload).unwrap(),
        )
        .unwrap();
        let decided = &printed["hookSpecificOutput"]["decision"];
        assert_eq!(decided["behavior"], "allow");
        assert_eq!(
            decided["updatedInput"]["questions"], payload["tool_input"]["questions"],
            "the questions go back as asked"
        );
        assert_eq!(
            decided["updatedInput"]["answers"],
            json!({"Which database?": "SQLite", "Which caches?": "Redis, Memcached, a local one"})
        );
        assert_eq!(
            hook_output(ReplyShape::Behavior, &decision, &payload),
            None,
            "Copilot's shape carries no answers"
        );
        // OpenCode's question reply: the labels per question, own words among them.
        let words: Value = serde_json::from_str(
            &hook_output(ReplyShape::ReplyWords, &decision, &payload).unwrap(),
        )
        .unwrap();
        assert_eq!(
            words,
            json!({"answers": [["SQLite"], ["Redis", "Memcached", "a local one"]]})
        );
        let short = HookDecision::Answers { answers: vec![] };
        assert_eq!(
            hook_output(ReplyShape::HookSpecificDecision, &short, &payload),
            None,
            "answers that do not match the questions print nothing"
        );
    }

    #[test]
    fn a_question_that_cannot_be_answered_exactly_is_not_offered() {
        let option = json!([{"label": "A"}, {"label": "B"}]);
        let cases = [
            json!([]),
            json!([{"question": "Same?", "options": option}, {"question": "Same?", "options": option}]),
            json!([{"question": "No options?", "options": []}]),
            json!([{"question": "Blank label?", "options": [{"label": " "}]}]),
            json!([{"question": "Twice?", "options": [{"label": "A"}, {"label": "A"}]}]),
            json!([{"question": "", "options": option}]),
        ];
        for questions in cases {
            assert!(
                ask_call_from_payload(&claude_question(questions.clone())).is_none(),
                "{questions}"
            );
        }
    }

    #[test]
    fn a_request_shows_the_whole_command_its_folder_and_description() {
        let long = format!("echo {}", "x".repeat(10_000));
        let call = ask_call_from_payload(&claude_payload(&long)).unwrap();
        assert_eq!(call.detail.tool, "Bash");
        assert_eq!(
            call.detail.command.as_deref(),
            Some(long.as_str()),
            "never cut"
        );
        assert_eq!(call.detail.cwd.as_deref(), Some("/w/api"));
        assert_eq!(call.detail.description.as_deref(), Some("Make a file"));
        assert!(call.detail.input.contains(&long));
    }

    #[test]
    fn other_input_for_the_same_tool_is_another_digest() {
        let a = ask_call_from_payload(&claude_payload("touch a")).unwrap();
        let b = ask_call_from_payload(&claude_payload("touch b")).unwrap();
        let a2 = ask_call_from_payload(&claude_payload("touch a")).unwrap();
        assert_ne!(a.input_digest, b.input_digest);
        assert_eq!(a.input_digest, a2.input_digest);
        assert_eq!(
            a.call_id,
            digest("Bash", &a.detail.input),
            "no tool-use id: the digest of the call names it"
        );
        // The same call with another session grant is another request: an allow for the
        // session given while reading one grant never hands back another.
        let mut other = claude_payload("touch a");
        other["permission_suggestions"] =
            json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]);
        let c = ask_call_from_payload(&other).unwrap();
        assert_eq!(c.call_id, a.call_id);
        assert_ne!(c.input_digest, a.input_digest);
    }

    #[test]
    fn an_edit_shows_its_file_and_the_size_of_the_change() {
        let payload = json!({"tool_name": "Write", "tool_input": {"file_path": "/w/a.rs", "content": "fn main() {}\n"}});
        let call = ask_call_from_payload(&payload).unwrap();
        assert_eq!(call.detail.file_path.as_deref(), Some("/w/a.rs"));
        assert_eq!(call.detail.change_bytes, Some(13));
    }

    #[test]
    fn an_input_too_large_to_show_whole_is_not_offered() {
        let payload =
            json!({"tool_name": "Write", "tool_input": {"content": "x".repeat(MAX_INPUT_BYTES)}});
        assert!(ask_call_from_payload(&payload).is_none());
        assert!(
            ask_call_from_payload(&json!({"tool_input": {}})).is_none(),
            "no tool"
        );
    }

    #[test]
    fn allow_and_deny_print_claudes_decision_and_nothing_prints_nothing() {
        let payload = claude_payload("touch x");
        let shape = ReplyShape::HookSpecificDecision;
        let allow: Value =
            serde_json::from_str(&hook_output(shape, &HookDecision::Allow, &payload).unwrap())
                .unwrap();
        assert_eq!(
            allow,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
        let deny = HookDecision::Deny {
            message: Some("not now".into()),
        };
        let deny: Value =
            serde_json::from_str(&hook_output(shape, &deny, &payload).unwrap()).unwrap();
        assert_eq!(deny["hookSpecificOutput"]["decision"]["behavior"], "deny");
        assert_eq!(deny["hookSpecificOutput"]["decision"]["message"], "not now");
        let none = HookDecision::None {
            reason: "expired".into(),
        };
        assert_eq!(hook_output(shape, &none, &payload), None);
    }

    #[test]
    fn a_stop_is_claudes_deny_that_interrupts_and_a_plain_deny_elsewhere() {
        let payload = claude_payload("touch x");
        let stop = hook_output(
            ReplyShape::HookSpecificDecision,
            &HookDecision::Stop,
            &payload,
        )
        .unwrap();
        let stop: Value = serde_json::from_str(&stop).unwrap();
        let decision = &stop["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "deny");
        assert_eq!(decision["interrupt"], true);
        let copilot: Value = serde_json::from_str(
            &hook_output(ReplyShape::Behavior, &HookDecision::Stop, &payload).unwrap(),
        )
        .unwrap();
        assert_eq!(copilot["behavior"], "deny");
        assert!(
            copilot.get("interrupt").is_none(),
            "only Claude's shape has it"
        );
        assert_eq!(
            hook_output(ReplyShape::ReplyWords, &HookDecision::Stop, &payload).as_deref(),
            Some(r#"{"reply":"reject"}"#)
        );
    }

    #[test]
    fn allow_for_the_session_hands_back_the_agents_own_suggestions_or_prints_nothing() {
        let payload = claude_payload("touch x");
        let shape = ReplyShape::HookSpecificDecision;
        let out: Value = serde_json::from_str(
            &hook_output(shape, &HookDecision::AllowForSession, &payload).unwrap(),
        )
        .unwrap();
        assert_eq!(
            out["hookSpecificOutput"]["decision"]["updatedPermissions"],
            payload["permission_suggestions"]
        );
        // Without suggestions there is nothing to allow for the session: no decision rather
        // than a plain allow the user did not choose.
        let bare = json!({"tool_name": "Bash", "tool_input": {"command": "x"}});
        assert_eq!(
            hook_output(shape, &HookDecision::AllowForSession, &bare),
            None
        );
    }

    #[test]
    fn claude_is_answered_by_default_and_codex_only_when_chosen_with_a_short_wait() {
        let settings = AnswerSettings::default();
        let claude = settings.effective(Agent::Claude).unwrap();
        assert!(claude.enabled && claude.terminal_stays_open);
        assert!(claude.max_wait_secs < crate::agents::claude::install::PERMISSION_TIMEOUT_SECS);
        let codex = settings.effective(Agent::Codex).unwrap();
        assert!(!codex.enabled && !codex.accepts.allow_for_session);
        assert!(
            codex.max_wait_secs < crate::agents::codex::install::timeout_secs("PermissionRequest")
        );
        assert!(
            settings.effective(Agent::Gemini).is_none(),
            "Gemini has no permission hook"
        );
    }

    #[test]
    fn a_chosen_wait_is_held_within_what_the_agent_allows() {
        let mut settings = AnswerSettings::default();
        let codex = settings.set(Agent::Codex, Some(true), Some(3600)).unwrap();
        assert!(codex.enabled);
        assert_eq!(codex.wait_secs, codex.max_wait_secs);
        let claude = settings.set(Agent::Claude, None, Some(0)).unwrap();
        assert_eq!(claude.wait_secs, 1);
        assert!(matches!(
            settings.set(Agent::Gemini, Some(true), None),
            Err(SettingsError::NotAnswerable(_))
        ));
    }

    #[test]
    fn settings_survive_a_round_trip_through_their_file_and_a_broken_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let paths = TrayPaths::under(dir.path());
        assert_eq!(
            AnswerSettings::load(&paths).unwrap(),
            AnswerSettings::default()
        );
        let mut settings = AnswerSettings::default();
        settings.set(Agent::Claude, Some(false), Some(42)).unwrap();
        settings.save(&paths).unwrap();
        let back = AnswerSettings::load(&paths).unwrap();
        assert_eq!(back, settings);
        assert!(!back.effective(Agent::Claude).unwrap().enabled);
        std::fs::write(AnswerSettings::path(&paths), "{not json").unwrap();
        let err = AnswerSettings::load(&paths).unwrap_err();
        assert!(err.to_string().contains("fix or delete it"), "{err}");
    }

    // OpenCode's shape: what our plugin gives to OpenCode's reply API; nothing for no decision.
    #[test]
    fn opencode_answers_print_as_its_reply_words() {
        let out = |d: &HookDecision| hook_output(ReplyShape::ReplyWords, d, &Value::Null);
        assert_eq!(out(&HookDecision::Allow).unwrap(), r#"{"reply":"once"}"#);
        assert_eq!(
            out(&HookDecision::AllowForSession).unwrap(),
            r#"{"reply":"always"}"#
        );
        assert_eq!(
            out(&HookDecision::Deny { message: None }).unwrap(),
            r#"{"reply":"reject"}"#
        );
        assert!(out(&HookDecision::None {
            reason: "expired".into()
        })
        .is_none());
    }

    // Copilot's shape: the behaviour alone, at the top level; nothing for no decision.
    #[test]
    fn copilot_answers_print_as_a_bare_behaviour() {
        let out = |d: &HookDecision| hook_output(ReplyShape::Behavior, d, &Value::Null);
        assert_eq!(
            out(&HookDecision::Allow).unwrap(),
            r#"{"behavior":"allow"}"#
        );
        let deny = out(&HookDecision::Deny {
            message: Some("not on main".into()),
        });
        assert_eq!(
            deny.unwrap(),
            r#"{"behavior":"deny","message":"not on main"}"#
        );
        assert!(out(&HookDecision::None {
            reason: "expired".into()
        })
        .is_none());
    }
}
