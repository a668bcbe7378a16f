//! `agent-tray pending`, `allow`, `deny` and `answering`: answering permission requests from a
//! terminal, and choosing per agent whether the tray answers at all.
//!
//! A public contract from its first release: `pending --json` is a JSON array of requests, each
//! with its `id` and `session_id`; `allow`/`deny` exit 0 only when the answer reached the agent's
//! hook, and otherwise print one sentence saying why (unknown, already answered, expired, the
//! agent moved on) and exit 1. Text from the agents (commands, paths) is printed escaped in the
//! human output, never raw: a command line is exactly what an attacker would fill with terminal
//! escapes.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use chrono::Utc;

use super::{Answer, AnswerSettings, AnswerSource, EffectiveChoice, PendingView};
use crate::agents::AgentKnowledge;
use crate::control::client::{ClientError, ControlClient};
use crate::control::protocol::{AnswerReply, PendingList, ReplyError, Request, TypedReply};
use crate::duration_text::{format_duration, Precision};
use crate::model::Agent;
use crate::paths::{PathsError, TrayPaths};
use crate::terminal_text::escape_controls;

/// How long `allow`/`deny` wait for the engine: its own wait for the hook's confirmation and a
/// margin.
const ANSWER_BUDGET: Duration = Duration::from_secs(5);
const LIST_BUDGET: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum AnsweringCliError {
    #[error(transparent)]
    Paths(#[from] PathsError),
    #[error("no Agent Tray is running (start the app, or `agent-tray daemon`); looked for {0}")]
    NotRunning(String),
    #[error(transparent)]
    Client(ClientError),
    /// The engine refused: the message is its sentence (unknown, closed, ambiguous, …).
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Settings(#[from] super::SettingsError),
    #[error("unknown agent {0:?}; expected one of {1}")]
    UnknownAgent(String, String),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl From<ClientError> for AnsweringCliError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::NotRunning(path) => AnsweringCliError::NotRunning(path),
            other => AnsweringCliError::Client(other),
        }
    }
}

impl From<ReplyError> for AnsweringCliError {
    fn from(e: ReplyError) -> Self {
        match e {
            ReplyError::Refused(body) => AnsweringCliError::Refused(body.message),
            ReplyError::Malformed(m) => AnsweringCliError::Refused(m),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct AllowArgs {
    /// A request id (from `agent-tray pending`), or a session id with exactly one request.
    pub id: String,
    /// Allow this and what the agent suggests for the rest of the session (where the agent
    /// offers it: Claude Code).
    #[arg(long)]
    pub for_session: bool,
}

#[derive(Debug, clap::Args)]
pub struct DenyArgs {
    /// A request id (from `agent-tray pending`), or a session id with exactly one request.
    pub id: String,
    /// What to tell the model instead.
    #[arg(long)]
    pub message: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct AnsweringArgs {
    /// The agent to change (claude, codex); without it, every answerable agent is shown.
    pub agent: Option<String>,
    /// `on` or `off`.
    #[arg(value_parser = ["on", "off"])]
    pub state: Option<String>,
    /// How long a request waits for an answer from here, in seconds, before the agent asks in
    /// its terminal (held within what the agent allows).
    #[arg(long)]
    pub wait: Option<u64>,
    /// One JSON array, one object per agent.
    #[arg(long)]
    pub json: bool,
}

/// `agent-tray pending [--json]`.
pub fn pending(json: bool) -> Result<ExitCode, AnsweringCliError> {
    let paths = TrayPaths::from_env()?;
    let mut client = ControlClient::connect(&paths.socket, LIST_BUDGET)?;
    let reply: TypedReply<PendingList> = client.request_typed(&Request::Pending)?;
    let list = reply.into_result()?;
    let text = if json {
        serde_json::to_string_pretty(&list.pending)? + "\n"
    } else {
        format_pending(&list.pending, Utc::now())
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// `agent-tray allow ID [--for-session]`.
pub fn allow(args: &AllowArgs) -> Result<ExitCode, AnsweringCliError> {
    let answer = if args.for_session {
        Answer::AllowForSession
    } else {
        Answer::Allow
    };
    send_answer(&args.id, answer)
}

/// `agent-tray deny ID [--message TEXT]`.
pub fn deny(args: &DenyArgs) -> Result<ExitCode, AnsweringCliError> {
    send_answer(
        &args.id,
        Answer::Deny {
            message: args.message.clone(),
        },
    )
}

fn send_answer(target: &str, answer: Answer) -> Result<ExitCode, AnsweringCliError> {
    let paths = TrayPaths::from_env()?;
    let mut client = ControlClient::connect(&paths.socket, ANSWER_BUDGET)?;
    let request = Request::Answer {
        target: target.to_string(),
        answer,
        source: AnswerSource::Cli,
    };
    let reply: TypedReply<AnswerReply> = client.request_typed(&request)?;
    let done = reply.into_result()?;
    let what = match done.answer {
        Answer::Allow => "allowed",
        Answer::AllowForSession => "allowed for the session",
        Answer::Deny { .. } => "denied",
    };
    println!(
        "{what} {} (session {}, after {})",
        done.id,
        escape_controls(&done.session_id),
        format_duration((done.waited_ms / 1000) as i64, Precision::Seconds)
    );
    Ok(ExitCode::SUCCESS)
}

/// `agent-tray answering [AGENT [on|off]] [--wait SECS] [--json]`.
pub fn answering(args: &AnsweringArgs) -> Result<ExitCode, AnsweringCliError> {
    let paths = TrayPaths::from_env()?;
    let mut settings = AnswerSettings::load(&paths)?;
    if let Some(name) = &args.agent {
        let agent = crate::agents::by_name(name).ok_or_else(|| {
            let known: Vec<&str> = Agent::ALL
                .iter()
                .filter(|a| a.adapter().answer_path().is_some())
                .map(|a| a.as_str())
                .collect();
            AnsweringCliError::UnknownAgent(name.clone(), known.join(", "))
        })?;
        if args.state.is_some() || args.wait.is_some() {
            let enabled = args.state.as_deref().map(|s| s == "on");
            settings.set(agent, enabled, args.wait)?;
            settings.save(&paths)?;
        } else if agent.adapter().answer_path().is_none() {
            return Err(super::SettingsError::NotAnswerable(agent).into());
        }
    }
    let shown: Vec<EffectiveChoice> = settings
        .all_effective()
        .into_iter()
        .filter(|c| {
            args.agent
                .as_deref()
                .and_then(crate::agents::by_name)
                .is_none_or(|a| a == c.agent)
        })
        .collect();
    let text = if args.json {
        serde_json::to_string_pretty(&shown)? + "\n"
    } else {
        shown.iter().map(describe_choice).collect::<String>()
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

fn describe_choice(c: &EffectiveChoice) -> String {
    let name = c.agent.adapter().display_name();
    if !c.enabled {
        return format!("{name}: off (its requests are answered in the terminal only)\n");
    }
    let terminal = if c.terminal_stays_open {
        "the terminal's dialog stays open meanwhile"
    } else {
        "the terminal's prompt appears only after it"
    };
    format!(
        "{name}: on, waits up to {} s for an answer from here ({terminal})\n",
        c.wait_secs
    )
}

/// The human table: one request per paragraph, everything shown whole and escaped.
pub fn format_pending(pending: &[PendingView], now: chrono::DateTime<Utc>) -> String {
    if pending.is_empty() {
        return "no permission request is waiting\n".into();
    }
    let mut out = String::new();
    for p in pending {
        let left = (p.answer_by - now).num_seconds();
        let host = p
            .host
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "{}  {}{}  session {}  {} left\n",
            p.id,
            p.agent.adapter().display_name(),
            escape_controls(&host),
            escape_controls(&p.session_id),
            format_duration(left, Precision::Seconds),
        ));
        let d = &p.detail;
        out.push_str(&format!("  tool: {}\n", escape_controls(&d.tool)));
        if let Some(cwd) = &d.cwd {
            out.push_str(&format!("  in: {}\n", escape_controls(cwd)));
        }
        if let Some(command) = &d.command {
            out.push_str(&format!("  runs: {}\n", escape_controls(command)));
        }
        if let Some(file) = &d.file_path {
            let size = d
                .change_bytes
                .map(|b| format!(" ({b} bytes)"))
                .unwrap_or_default();
            out.push_str(&format!("  file: {}{size}\n", escape_controls(file)));
        }
        if let Some(url) = &d.url {
            out.push_str(&format!("  url: {}\n", escape_controls(url)));
        }
        if d.command.is_none() && d.file_path.is_none() && d.url.is_none() {
            out.push_str(&format!("  input: {}\n", escape_controls(&d.input)));
        }
        match &p.host {
            Some(host) => out.push_str(&format!(
                "  answer: on {} (its terminal, or agent-tray there)\n",
                escape_controls(host)
            )),
            None => {
                let also = if p.accepts.allow_for_session {
                    ", allow --for-session"
                } else {
                    ""
                };
                out.push_str(&format!("  answer: agent-tray allow|deny {}{also}\n", p.id));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::answering::{Accepts, AskDetail, RequestId};

    #[test]
    fn the_table_shows_the_whole_command_escaped_never_raw() {
        let now = Utc::now();
        let view = PendingView {
            id: RequestId::parse("r1-abc"),
            session_id: "s1".into(),
            host: None,
            agent: Agent::Claude,
            detail: AskDetail {
                tool: "Bash".into(),
                command: Some(format!(
                    "printf '\u{1b}]52;c;aGk=\u{7}' {}",
                    "y".repeat(500)
                )),
                cwd: Some("/w/api".into()),
                ..AskDetail::default()
            },
            asked_at: now,
            answer_by: now + chrono::Duration::seconds(90),
            accepts: Accepts {
                allow_for_session: true,
                deny_message: true,
            },
        };
        let text = format_pending(&[view], now);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("\\u{1b}]52"), "{text}");
        assert!(text.contains(&"y".repeat(500)), "never cut");
        assert!(text.contains("/w/api") && text.contains("allow --for-session"));
        assert!(
            text.contains("r1-abc  Claude  session s1  1m 30s left"),
            "{text}"
        );
    }
}
