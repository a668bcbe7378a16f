//! `agent-tray send` and `stop`: a session's next prompt and a stop of its running turn, from a
//! terminal or a script; and `agent-tray inbox`, the relay a program of the agent's own
//! (OpenCode's plugin) holds so the engine can hand it orders.
//!
//! A public contract from its first release: `send ID TEXT` (or `--file F`, or the text on
//! standard input) and `stop ID` exit 0 only once the agent's side took it, print one line
//! naming the way it went, and otherwise print one sentence saying why not and exit 1 (nothing
//! was sent, or it is not known whether the agent took it: never retried). `--json` prints the
//! engine's reply (`session_id`, `route`, `took_ms`). A remote's session is sent there over ssh,
//! under the same setting as answers (`agent-tray answering --over-ssh on` on the remote).

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::answering::{run_on_remote, AnsweringCliError};
use crate::control::client::ControlClient;
use crate::control::protocol::{ErrorBody, ReplyError, Request, TalkReply, TypedReply};
use crate::model::Agent;
use crate::paths::TrayPaths;
use crate::talk_back::text::MAX_PROMPT_BYTES;
use crate::talk_back::{PromptText, TalkOrder};
use crate::terminal_text::escape_controls;

/// How long `send`/`stop` wait for the engine: its own wait for the agent's side, and a margin.
const TALK_CLI_BUDGET: Duration = Duration::from_secs(15);

#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// The session's id, from `agent-tray list`.
    pub id: String,
    /// The prompt (quote it); or use --file, or give it on standard input.
    #[arg(conflicts_with = "file")]
    pub text: Option<String>,
    /// Read the prompt from this file (`-`: standard input).
    #[arg(long, value_name = "F")]
    pub file: Option<PathBuf>,
    /// Let a text that begins with `/` or `!` be the agent's command (a slash command, a shell
    /// line); without it such a text is sent to the model as words.
    #[arg(long)]
    pub command: bool,
    /// Print the engine's reply as JSON.
    #[arg(long)]
    pub json: bool,
    /// What a tray on another machine runs here over ssh (see `allow --over-ssh`).
    #[arg(long)]
    pub over_ssh: bool,
}

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// The session's id, from `agent-tray list`.
    pub id: String,
    /// Print the engine's reply as JSON.
    #[arg(long)]
    pub json: bool,
    /// What a tray on another machine runs here over ssh (see `allow --over-ssh`).
    #[arg(long)]
    pub over_ssh: bool,
}

#[derive(Debug, clap::Args)]
pub struct InboxArgs {
    /// The agent whose program holds the way in.
    #[arg(long)]
    pub agent: String,
    /// The agent's process: its sessions are the ones reached, and the relay ends with it.
    #[arg(long)]
    pub pid: u32,
}

/// `agent-tray send`.
pub fn send(args: &SendArgs) -> Result<ExitCode, AnsweringCliError> {
    let raw = read_text(args)?;
    let prompt = PromptText::parse(&raw, args.command)
        .map_err(|e| AnsweringCliError::Usage(e.to_string()))?;
    talk(
        &args.id,
        TalkOrder::Send { prompt },
        args.json,
        args.over_ssh,
    )
}

/// `agent-tray stop`.
pub fn stop(args: &StopArgs) -> Result<ExitCode, AnsweringCliError> {
    talk(&args.id, TalkOrder::Stop, args.json, args.over_ssh)
}

fn read_text(args: &SendArgs) -> Result<String, AnsweringCliError> {
    if let Some(text) = &args.text {
        return Ok(text.clone());
    }
    let mut bytes = Vec::new();
    // One byte past the limit is enough to say it is too long.
    let cap = (MAX_PROMPT_BYTES + 1) as u64;
    let read = match &args.file {
        Some(path) if path.as_os_str() != "-" => std::fs::File::open(path)
            .and_then(|f| f.take(cap).read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
        _ => {
            if args.file.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                return Err(AnsweringCliError::Usage(
                    "no text: give it as an argument, with --file F, or on standard input".into(),
                ));
            }
            std::io::stdin()
                .lock()
                .take(cap)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("cannot read standard input: {e}"))
        }
    };
    read.map_err(AnsweringCliError::Usage)?;
    String::from_utf8(bytes)
        .map_err(|_| AnsweringCliError::Usage("the text is not UTF-8: nothing was sent".into()))
}

fn talk(
    id: &str,
    order: TalkOrder,
    json: bool,
    over_ssh: bool,
) -> Result<ExitCode, AnsweringCliError> {
    let paths = TrayPaths::from_env()?;
    let mut client = ControlClient::connect(&paths.socket, TALK_CLI_BUDGET)?;
    let request = Request::Talk {
        target: id.to_string(),
        host: None,
        order: order.clone(),
        over_ssh,
    };
    let reply: TypedReply<TalkReply> = client.request_typed(&request)?;
    let done = match reply.into_result() {
        Ok(done) => done,
        Err(ReplyError::Refused(ErrorBody {
            on_remote_session: Some(remote),
            message,
            ..
        })) => {
            if over_ssh {
                return Err(AnsweringCliError::Refused(message));
            }
            return on_remote(&paths, &remote.host, &remote.session_id, &order);
        }
        Err(e) => return Err(e.into()),
    };
    if json {
        let text = serde_json::to_string(&done)? + "\n";
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
    } else {
        let what = if order.is_send() {
            "sent to"
        } else {
            "stopped"
        };
        println!(
            "{what} {} {} (in {} ms)",
            escape_controls(&done.session_id),
            done.route.describe(),
            done.took_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn on_remote(
    paths: &TrayPaths,
    host: &str,
    session_id: &str,
    order: &TalkOrder,
) -> Result<ExitCode, AnsweringCliError> {
    let remotes_path = crate::remote::config::remotes_path(&paths.data_dir);
    let (remotes, _) = crate::remote::config::load(&remotes_path)?;
    let entry = remotes
        .find(host)
        .ok_or_else(|| AnsweringCliError::UnknownRemote {
            id: session_id.to_string(),
            host: host.to_string(),
        })?;
    let command = crate::remote::command::talk_command(session_id, order);
    let input = match order {
        TalkOrder::Send { prompt } => Some(prompt.as_str().as_bytes().to_vec()),
        TalkOrder::Stop => None,
    };
    run_on_remote(host, &entry.destination, &command, input)
}

/// `agent-tray inbox --agent A --pid P`: holds a way in to agent A's sessions in process P for
/// the engine. Each order the engine hands over is printed as one JSON line; the holder answers
/// each, in order, with one line on standard input (`{"seq": N, "ok": true}` or `{"seq": N,
/// "ok": false, "error": "…"}`), passed back. It lives as long as its standard input is open and
/// P runs, and finds the engine again after a restart.
pub fn inbox(args: &InboxArgs) -> Result<ExitCode, AnsweringCliError> {
    let agent: Agent = args.agent.parse().map_err(|_| {
        let known: Vec<&str> = Agent::ALL.iter().map(|a| a.as_str()).collect();
        AnsweringCliError::UnknownAgent(args.agent.clone(), known.join(", "))
    })?;
    let paths = TrayPaths::from_env()?;
    // The holder's answers, read by their own thread: its end (the agent exited) ends us.
    let (answers_tx, answers) = std::sync::mpsc::sync_channel::<String>(4);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if answers_tx.send(line).is_err() {
                break;
            }
        }
        std::process::exit(0);
    });
    loop {
        if !crate::process::exists(args.pid) {
            return Ok(ExitCode::SUCCESS);
        }
        if let Ok(client) = ControlClient::connect(&paths.socket, Duration::from_secs(3)) {
            relay(client, agent, args.pid, &answers);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// One engine connection's worth of relaying, until it ends.
fn relay(
    mut client: ControlClient,
    agent: Agent,
    pid: u32,
    answers: &std::sync::mpsc::Receiver<String>,
) {
    if client.send(&Request::Inbox { agent, pid }).is_err() {
        return;
    }
    let mut client = client.without_deadline();
    if client.read_line().is_err() {
        return;
    }
    // Answers left from an engine that went away are for orders it no longer waits on.
    while answers.try_recv().is_ok() {}
    loop {
        let Ok(order) = client.read_line() else {
            return;
        };
        {
            let mut out = std::io::stdout().lock();
            if out.write_all(order.trim_end().as_bytes()).is_err()
                || out.write_all(b"\n").is_err()
                || out.flush().is_err()
            {
                std::process::exit(0);
            }
        }
        let Ok(answer) = answers.recv_timeout(crate::engine::talk::TALK_BUDGET) else {
            return;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&answer) else {
            return;
        };
        if client.send_json(&value).is_err() {
            return;
        }
    }
}
