//! `agent-tray status [--json]`: per agent, whether its hooks are installed, trusted and as
//! `install` wrote them (see [`crate::hook_drift`]), and the last event the engine's journal
//! holds from it, with the agent version that sent it where the agent's files tell.
//!
//! `list --json`'s companion for scripts and bug reports: it reads files only (the agents'
//! configs, the install record, the hook journal) and asks the engine one `ping`, so it answers
//! whether or not the engine runs.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::catalogue::{Proven, Support};
use crate::control::client::ControlClient;
use crate::control::protocol::{PingInfo, TypedReply};
use crate::control::Request;
use crate::hook_drift::{self, HookHealth};
use crate::model::Agent;
use crate::paths::TrayPaths;

/// The last event received from one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastEvent {
    pub event: String,
    pub at: DateTime<Utc>,
    pub session_id: String,
    /// `None` when nothing on disk tells (Claude's hooks send no version).
    pub agent_version: Option<String>,
}

/// One agent's line of `status --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStatus {
    pub agent: Agent,
    /// The product's name ("Qwen Code").
    #[serde(default)]
    pub name: String,
    /// What Agent Tray does for it here (its catalogue row's [`Support`]).
    #[serde(default)]
    pub supports: Supports,
    /// How that was established: `{"how": "real_binary", "version"}` or
    /// `{"how": "from_docs", "version", "why_not_run"}`.
    #[serde(default)]
    pub proven: Option<ProvenReport>,
    pub hooks: Option<HookHealth>,
    pub last_event: Option<LastEvent>,
}

/// [`Support`]'s points, as `status --json` spells them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Supports {
    pub hooks: bool,
    pub files: bool,
    pub process: bool,
    pub answering: bool,
    pub questions: bool,
    pub send: bool,
    pub stop: bool,
    pub context: bool,
}

impl From<&Support> for Supports {
    fn from(s: &Support) -> Self {
        Supports {
            hooks: s.hooks,
            files: s.files,
            process: s.process,
            answering: s.answering,
            questions: s.questions,
            send: s.send,
            stop: s.stop,
            context: s.context,
        }
    }
}

/// [`Proven`], as `status --json` spells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum ProvenReport {
    RealBinary {
        version: String,
    },
    FromDocs {
        version: String,
        why_not_run: String,
    },
}

impl From<&Proven> for ProvenReport {
    fn from(p: &Proven) -> Self {
        match *p {
            Proven::RealBinary { version } => ProvenReport::RealBinary {
                version: version.to_string(),
            },
            Proven::FromDocs {
                version,
                why_not_run,
            } => ProvenReport::FromDocs {
                version: version.to_string(),
                why_not_run: why_not_run.to_string(),
            },
        }
    }
}

/// `status --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusReport {
    /// The engine answering on the socket, `None` when none does.
    pub engine: Option<PingInfo>,
    pub agents: Vec<AgentStatus>,
}

/// Gathers the report.
pub fn report(paths: &TrayPaths) -> StatusReport {
    let engine = ControlClient::connect(&paths.socket, Duration::from_millis(500))
        .and_then(|mut c| c.request_typed::<PingInfo>(&Request::Ping))
        .ok()
        .and_then(|r: TypedReply<PingInfo>| r.into_result().ok());
    let health = hook_drift::check_all(&paths.data_dir, &hook_drift::Unrecorded::from_env());
    let last = crate::journal::last_event_per_agent(&paths.journal_dir());
    let agents = Agent::ALL
        .iter()
        .copied()
        .map(|agent| AgentStatus {
            agent,
            name: crate::catalogue::entry(agent).product_name.to_string(),
            supports: Supports::from(&crate::catalogue::entry(agent).support),
            proven: Some(ProvenReport::from(
                &crate::catalogue::entry(agent).support.proven,
            )),
            hooks: health.iter().find(|h| h.agent == agent).cloned(),
            last_event: last.get(&agent).map(|record| LastEvent {
                event: record.observation.event.as_str().to_string(),
                at: record.observation.at,
                session_id: record.observation.session_id.clone(),
                agent_version: crate::doctor::agent_version(agent, &record.observation),
            }),
        })
        .collect();
    StatusReport { engine, agents }
}

/// Why `status` printed no report; each text is its source's.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error(transparent)]
    Paths(#[from] crate::paths::PathsError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Prints the report; exits 1 when any recorded hooks drifted.
pub fn run(json: bool) -> Result<ExitCode, StatusError> {
    let paths = TrayPaths::from_env()?;
    let report = report(&paths);
    let mut text = String::new();
    if json {
        text = serde_json::to_string_pretty(&report)? + "\n";
    } else {
        match &report.engine {
            Some(p) => text.push_str(&format!("engine: {} pid {}\n", p.host, p.pid)),
            None => text.push_str("engine: not running\n"),
        }
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        for a in &report.agents {
            let name = hook_drift::agent_name(a.agent);
            let hooks = match &a.hooks {
                None => "hooks: cannot tell (no folder)".to_string(),
                Some(h) => match h.drift_message(home.as_deref()) {
                    Some(message) => format!("{message}; run `agent-tray install`"),
                    None if h.installed => format!(
                        "hooks installed{}",
                        if h.trusted == Some(false) {
                            ", not trusted"
                        } else {
                            ""
                        }
                    ),
                    None => "hooks not installed".to_string(),
                },
            };
            let last = match &a.last_event {
                Some(e) => format!(
                    "last event {} at {}{}",
                    e.event,
                    e.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    e.agent_version
                        .as_deref()
                        .map(|v| format!(" (version {v})"))
                        .unwrap_or_default()
                ),
                None => "no event yet".to_string(),
            };
            text.push_str(&format!("{name}: {hooks}; {last}\n"));
            text.push_str(&format!(
                "  supports {}\n",
                crate::catalogue::entry(a.agent).support.summary()
            ));
        }
    }
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    let drifted = report
        .agents
        .iter()
        .any(|a| a.hooks.as_ref().is_some_and(|h| h.drifted));
    Ok(if drifted {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
