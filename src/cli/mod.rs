//! The command line: a thin layer over the engine and the control socket.
//!
//! Output meant for scripts (`list --json`, `watch --json`) is a public contract, documented in
//! the README. Errors are one plain line on stderr and a non-zero exit, never a panic or a hang:
//! every talk to the engine has a deadline.
//!
//! Human output (the `list`/`history` table, `watch` lines, error lines) carries text that came
//! from outside: folder names, titles, branch names. A control character in it would reach the
//! terminal as a command (an OSC 52 in a folder name writes the clipboard), so such characters are
//! printed escaped (`\u{1b}`), never raw. JSON output is exact: JSON escapes them itself.

pub mod answering;
pub mod history;
pub mod remote;
pub mod talk;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::catalogue::InCatalogue;
use crate::control::client::{ClientError, ControlClient};
use crate::control::protocol::{
    ObserveReply, OutcomeKind, Request, SessionList, SessionsLine, TypedReply, WatchLine,
};
pub use crate::duration_text::human_age;
use crate::engine::{Engine, EngineConfig, HostKind};
use crate::model::{Agent, EventKind, Observation, Session, Source};
use crate::paths::TrayPaths;
pub use crate::terminal_text::escape_controls;

/// How long the CLI waits for the engine.
const CLI_BUDGET: Duration = Duration::from_secs(3);

#[derive(Debug, Parser)]
#[command(
    name = "agent-tray",
    version,
    about = "Knows what every AI coding agent on this machine is doing"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum Command {
    /// Run the engine headless until SIGINT/SIGTERM.
    Daemon,
    /// Send one observation to the running engine (a test and scripting aid).
    Observe(ObserveArgs),
    /// The live sessions.
    List {
        /// One JSON array of sessions (a stable, documented format).
        #[arg(long)]
        json: bool,
    },
    /// Sessions as they change: a snapshot, then one line per change.
    Watch {
        /// NDJSON: the snapshot reply, then one change object per line.
        #[arg(long)]
        json: bool,
        /// The remote protocol the reader speaks (what a remote link sends); refused unless this
        /// version speaks it. Adds the recently ended sessions to the snapshot line.
        #[arg(long, requires = "json")]
        protocol: Option<u32>,
    },
    /// Sessions recorded in the history store, most recently active first (survives restarts).
    History(history::HistoryArgs),
    /// Time your agents spent waiting on you, and working.
    Stats(history::StatsArgs),
    /// Add Agent Tray's hooks: to Claude Code, Codex and every other agent found here, or to the
    /// agents named.
    Install(crate::install_command::InstallArgs),
    /// Remove exactly what `install` added.
    Uninstall(crate::install_command::InstallArgs),
    /// What is installed, hooked, trusted and running, and what to do about what is not.
    Doctor,
    /// Per agent: hooks installed / trusted / drifted, and the last event received.
    Status {
        /// One JSON object (a stable, documented format).
        #[arg(long)]
        json: bool,
    },
    /// How much of each plan window the agents reported is used, and when each resets.
    Limits {
        /// One JSON array, an object per agent account and window (a stable, documented format).
        #[arg(long)]
        json: bool,
    },
    /// The permission requests waiting for an answer from here.
    Pending {
        /// One JSON array of requests (a stable, documented format).
        #[arg(long)]
        json: bool,
    },
    /// Allow a permission request: exits 0 once the agent has the answer.
    Allow(answering::AllowArgs),
    /// Deny a permission request, or decline a question: exits 0 once the agent has the answer.
    Deny(answering::DenyArgs),
    /// Answer an agent's question with its choices or your own words: `answer ID --choice
    /// Postgres`, `answer ID --question 2 --choice Redis --choice Memcached`, `answer ID --text
    /// "…"`; exits 0 once the agent has the answer.
    Answer(answering::AnswerArgs),
    /// Whether each agent's permission requests can be answered from here, and how long they
    /// wait: `answering claude off`, `answering codex on --wait 4`.
    Answering(answering::AnsweringArgs),
    /// Give an idle session its next prompt: `send ID "text"`, `send ID --file F`, or the text
    /// on standard input; exits 0 once the agent took it (`list --json`'s `can_send` says when
    /// it can). A leading `/` or `!` is sent as words unless `--command`.
    Send(talk::SendArgs),
    /// End a session's running turn; exits 0 once the agent took the stop (`can_stop`).
    Stop(talk::StopArgs),
    /// For an agent's own plugin (OpenCode's): holds a way in to the agent's sessions, relaying
    /// the engine's `send` and `stop` orders as JSON lines and the plugin's answers back.
    Inbox(talk::InboxArgs),
    /// Agents on other machines, over SSH: `remote add NAME DESTINATION`, `list`, `remove NAME`.
    #[command(subcommand)]
    Remote(remote::RemoteCommand),
    /// Open the desktop app's window, starting the app if it is not running (what the desktop
    /// entry runs). The binary's entry handles it before this parser; listed here for --help.
    Open {
        /// Start the app with no window (launch at login); a running app is left as it is.
        #[arg(long)]
        background: bool,
    },
    /// The status-line bridge an agent runs on each redraw (`install --claude --status-line`
    /// sets it): reads the agent's status-line input, hands the context window and plan limits
    /// to the engine without waiting, then runs your own status-line command with the same
    /// input and prints its output unchanged (or a short line of its own). The binary's entry
    /// handles it before this parser; listed here for --help.
    StatusLine {
        /// The agent whose input it is.
        #[arg(long)]
        agent: Option<String>,
        /// Your own status-line command, run through `sh -c`.
        #[arg(long)]
        then: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
struct ObserveArgs {
    /// The session's id.
    #[arg(long = "session")]
    session: String,
    /// The event, as the agents' hooks spell it (SessionStart, UserPromptSubmit, Stop, …).
    #[arg(long)]
    event: String,
    /// The agent's process id.
    #[arg(long)]
    pid: Option<u32>,
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The agent (its id, as `list --json` prints it); without it, the agent hook lines meant
    /// before `--agent` existed.
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    model: Option<String>,
    /// A tool's name (PreToolUse, PermissionRequest, …).
    #[arg(long)]
    tool: Option<String>,
    /// Notification's notification_type (permission_prompt, idle_prompt, …).
    #[arg(long)]
    notification_type: Option<String>,
    /// SessionStart's source (startup, resume, clear, compact).
    #[arg(long)]
    start_source: Option<String>,
    /// UserPromptSubmit's source (user, sdk, system, loop_wakeup, schedule_wakeup, poll_event).
    #[arg(long)]
    prompt_source: Option<String>,
    /// Set when the event happened inside a subagent.
    #[arg(long)]
    subagent: Option<String>,
    /// StopFailure's error.
    #[arg(long)]
    error: Option<String>,
    /// When it happened (RFC 3339); default now.
    #[arg(long)]
    at: Option<DateTime<Utc>>,
}

/// The whole program.
pub fn main() -> ExitCode {
    // Parsed through the matches, not `Cli::try_parse`: `answer` needs its flags' order.
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches).map(|cli| (cli, matches)));
    let cli = match parsed {
        Ok((mut cli, matches)) => {
            if let (Command::Answer(args), Some(sub)) =
                (&mut cli.command, matches.subcommand_matches("answer"))
            {
                args.take_order(sub);
            }
            cli
        }
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            // `{}`, not `{:#}`: the line is the outermost error's text alone, as it always was
            // (a typed error whose Display already quotes its source would repeat it).
            eprintln!("agent-tray: {}", escape_controls(&error.to_string()));
            ExitCode::FAILURE
        }
    }
}

/// The edge of the program: every typed error ends here as one line, so `anyhow` carries them.
fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Daemon => daemon(),
        Command::Observe(args) => observe(args),
        Command::List { json } => list(json),
        Command::Watch { json, protocol } => watch(json, protocol),
        Command::History(args) => history(args),
        Command::Stats(args) => Ok(history::stats(&paths()?, &args)?),
        Command::Install(args) => Ok(crate::install_command::run(
            &args,
            crate::install::Action::Install,
        )),
        Command::Uninstall(args) => Ok(crate::install_command::run(
            &args,
            crate::install::Action::Uninstall,
        )),
        Command::Doctor => Ok(crate::doctor::run()),
        Command::Status { json } => Ok(crate::status::run(json)?),
        Command::Remote(command) => Ok(remote::run(command)?),
        Command::Limits { json } => limits(json),
        Command::Pending { json } => Ok(answering::pending(json)?),
        Command::Allow(args) => Ok(answering::allow(&args)?),
        Command::Deny(args) => Ok(answering::deny(&args)?),
        Command::Answer(args) => Ok(answering::answer(&args)?),
        Command::Answering(args) => Ok(answering::answering(&args)?),
        Command::Send(args) => Ok(talk::send(&args)?),
        Command::Stop(args) => Ok(talk::stop(&args)?),
        Command::Inbox(args) => Ok(talk::inbox(&args)?),
        Command::StatusLine { agent, then } => {
            let mut args = Vec::new();
            if let Some(agent) = agent {
                args.extend(["--agent".to_string(), agent]);
            }
            if let Some(then) = then {
                args.extend(["--then".to_string(), then]);
            }
            let code = crate::status_line::run_status_line(&args);
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        Command::Open { background } => {
            let args: Vec<std::ffi::OsString> = background
                .then(|| crate::app_launch::BACKGROUND_ARG.into())
                .into_iter()
                .collect();
            crate::app_launch::run_open(&args)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn paths() -> anyhow::Result<TrayPaths> {
    Ok(TrayPaths::from_env()?)
}

fn connect(paths: &TrayPaths) -> anyhow::Result<ControlClient> {
    ControlClient::connect(&paths.socket, CLI_BUDGET).map_err(|e| match e {
        ClientError::NotRunning(_) => anyhow::anyhow!(
            "no Agent Tray is running (start the app, or `agent-tray daemon`); looked for {}",
            paths.socket.display()
        ),
        other => other.into(),
    })
}

/// Sends one request and reads its result as `T`, streamed from the socket whatever its size.
fn ask<T: serde::de::DeserializeOwned>(request: &Request) -> anyhow::Result<T> {
    let paths = paths()?;
    let mut client = connect(&paths)?;
    let reply: TypedReply<T> = client.request_typed(request)?;
    Ok(reply.into_result()?)
}

pub fn init_logging() {
    let filter = match crate::env_knobs::read_log_filter() {
        Ok(Some(filter)) => filter,
        Ok(None) => tracing_subscriber::EnvFilter::new("info"),
        Err(e) => {
            // Logging is how the rest is diagnosed: say so, and log at the default level.
            eprintln!("agent-tray: {e}; logging at info");
            tracing_subscriber::EnvFilter::new("info")
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn daemon() -> anyhow::Result<ExitCode> {
    init_logging();
    let config = EngineConfig::from_env(HostKind::Daemon)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the runtime: {e}"))?;
    // Bounded: a blocking thread stuck in a system call must not keep the daemon alive after
    // SIGTERM (dropping a runtime waits for its blocking threads without end).
    crate::engine::block_on_bounded(runtime, async move {
        let engine = Engine::start(config)?;
        wait_for_stop_signal().await?;
        tracing::info!("stop signal received; shutting down");
        engine.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(windows)]
async fn wait_for_stop_signal() -> std::io::Result<()> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_shutdown};
    let (mut c, mut brk, mut close, mut shutdown) =
        (ctrl_c()?, ctrl_break()?, ctrl_close()?, ctrl_shutdown()?);
    tokio::select! {
        _ = c.recv() => {}
        _ = brk.recv() => {}
        _ = close.recv() => {}
        _ = shutdown.recv() => {}
    }
    Ok(())
}

#[cfg(unix)]
async fn wait_for_stop_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

fn observe(args: ObserveArgs) -> anyhow::Result<ExitCode> {
    let agent: Agent = match &args.agent {
        Some(name) => name.parse().map_err(|e| anyhow::anyhow!("{e}"))?,
        None => crate::agents::LEGACY_HOOK_AGENT,
    };
    let event: EventKind = args.event.parse().map_err(|_| {
        let known: Vec<&str> = EventKind::HOOK_EVENTS.iter().map(|e| e.as_str()).collect();
        anyhow::anyhow!(
            "unknown event {:?}; expected one of {}",
            args.event,
            known.join(", ")
        )
    })?;
    let mut obs = Observation::new(args.session, agent, event, args.at.unwrap_or_else(Utc::now))
        .with_source(Source::Cli)
        .with_pid(args.pid)
        .with_cwd(args.cwd.map(|p| p.display().to_string()));
    obs.model = args.model;
    obs.tool_name = args.tool;
    obs.notification_type = args.notification_type;
    obs.start_source = args.start_source;
    obs.prompt_source = args.prompt_source;
    obs.subagent_id = args.subagent;
    obs.error = args.error;
    obs.validate()?;
    let result: ObserveReply = ask(&Request::Observe { observation: obs })?;
    if result.outcome == OutcomeKind::Ignored {
        let reason = result.reason.map_or("", |r| r.as_str());
        eprintln!("agent-tray: observation ignored ({reason})");
    }
    Ok(ExitCode::SUCCESS)
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    let list: SessionList = ask(&Request::List)?;
    Ok(print_sessions(&list.sessions, json)?)
}

fn limits(json: bool) -> anyhow::Result<ExitCode> {
    let list: crate::control::protocol::LimitsList = ask(&Request::Limits)?;
    let text = if json {
        serde_json::to_string_pretty(&list.limits)? + "\n"
    } else {
        format_limits(&list.limits, Utc::now())
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// `agent-tray limits` as a table, or a sentence when no agent reported any window.
pub fn format_limits(windows: &[crate::plan_limits::PlanWindow], now: DateTime<Utc>) -> String {
    if windows.is_empty() {
        return "No plan limits reported: no agent here wrote any down (docs/limits.md says \
                which agents do, and when).\n"
            .into();
    }
    let mut out = String::new();
    for w in windows {
        let host = w
            .host
            .as_deref()
            .map_or_else(String::new, |h| format!(" on {}", escape_controls(h)));
        let reset = w.resets_at.map_or_else(String::new, |at| {
            let local = at.with_timezone(&chrono::Local);
            format!(
                ", resets {} (in {})",
                local.format("%a %H:%M"),
                human_age((at - now).num_seconds())
            )
        });
        out.push_str(&format!(
            "{} {}{}: {} window {:.0}% used{}\n",
            w.agent.display_name(),
            escape_controls(&w.account),
            host,
            escape_controls(&w.window),
            w.used_percent,
            reset
        ));
    }
    out
}

/// From the store when there is one; else (no store yet, or it cannot be read) the running
/// engine's in-memory list of ended sessions.
fn history(args: history::HistoryArgs) -> anyhow::Result<ExitCode> {
    let paths = paths()?;
    if let Some(code) = history::history(&paths, &args)? {
        return Ok(code);
    }
    let list: SessionList = ask(&Request::History { limit: args.limit })?;
    Ok(print_sessions(&list.sessions, args.json)?)
}

pub(crate) fn print_sessions(
    sessions: &[Session],
    json: bool,
) -> Result<ExitCode, serde_json::Error> {
    let mut out = std::io::stdout().lock();
    let text = if json {
        serde_json::to_string_pretty(sessions)? + "\n"
    } else {
        format_table(sessions, Utc::now())
    };
    // A closed pipe (`| head`) is not an error worth a message.
    let _ = out.write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

fn watch(json: bool, protocol: Option<u32>) -> anyhow::Result<ExitCode> {
    use crate::control::protocol::REMOTE_PROTOCOL;
    if let Some(asked) = protocol.filter(|p| *p != REMOTE_PROTOCOL) {
        anyhow::bail!(
            "remote protocol {asked} is not spoken here (agent-tray {} speaks {REMOTE_PROTOCOL})",
            env!("CARGO_PKG_VERSION")
        );
    }
    let paths = paths()?;
    let mut client = connect(&paths)?;
    if protocol.is_some() {
        exit_when_stdout_closes();
    }
    client.send(&Request::Watch)?;
    let mut client = client.without_deadline();
    let first: TypedReply<SessionList> = client.read_reply_as()?;
    let snapshot = first.into_result()?.sessions;
    let mut out = std::io::stdout();
    if json {
        // Ended sessions for a remote link, asked after the watch began: one that ends between
        // the two is in the snapshot (lingering) or in the stream, never lost.
        let ended = match protocol {
            Some(_) => Some(ask::<SessionList>(&Request::History { limit: 256 })?.sessions),
            None => None,
        };
        let line = serde_json::to_string(&SessionsLine::Snapshot {
            sessions: snapshot,
            protocol: Some(REMOTE_PROTOCOL),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
            ended,
        })?;
        let _ = writeln!(out, "{line}");
        if protocol.is_some() {
            forward_limits(paths.socket.clone());
        }
    } else {
        let _ = write!(out, "{}", format_table(&snapshot, Utc::now()));
    }
    let _ = out.flush();
    loop {
        let line = match client.read_line() {
            Ok(line) => line,
            Err(_) => anyhow::bail!("the engine went away"),
        };
        if json {
            let _ = writeln!(out, "{line}");
        } else {
            let _ = writeln!(out, "{}", describe_change_line(&line));
        }
        if out.flush().is_err() {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

/// How often a remote link's `watch` asks its engine for the plans' windows.
const LIMITS_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// For a remote link (`watch --json --protocol`): a `{"kind":"limits","limits":[...]}` line with
/// the engine's plan windows at once and whenever they change, asked every [`LIMITS_EVERY`] on
/// a connection of its own (the socket's `watch` carries sessions only, and its stream is a
/// public format that must not change). Each line is written whole under stdout's lock; an
/// engine too old to know `limits` is asked once and never again. Ends with the process.
fn forward_limits(socket: std::path::PathBuf) {
    let spawned = std::thread::Builder::new()
        .name("watch-limits".into())
        .spawn(move || {
            let mut last: Option<Vec<crate::plan_limits::PlanWindow>> = None;
            loop {
                let asked = ControlClient::connect(&socket, CLI_BUDGET)
                    .map_err(|e| e.to_string())
                    .and_then(|mut c| {
                        c.request_typed::<crate::control::protocol::LimitsList>(&Request::Limits)
                            .map_err(|e| e.to_string())
                    })
                    .and_then(|reply| reply.into_result().map_err(|e| e.to_string()));
                match asked {
                    Ok(list) if last.as_ref() != Some(&list.limits) => {
                        let line = serde_json::json!({"kind": "limits", "limits": &list.limits});
                        let mut out = std::io::stdout().lock();
                        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                            return;
                        }
                        last = Some(list.limits);
                    }
                    Ok(_) => {}
                    Err(error) if last.is_none() => {
                        tracing::debug!(%error, "the engine gives no plan limits; not asking again");
                        return;
                    }
                    Err(_) => {}
                }
                std::thread::sleep(LIMITS_EVERY);
            }
        });
    if let Err(e) = spawned {
        eprintln!("agent-tray: cannot forward plan limits ({e}); this watch carries sessions only");
    }
}

/// A remote link's `watch` runs under `sshd` and only writes when something changes: when the
/// link is cut, nothing would tell it to go until the next change, and every reconnect would
/// leave one more behind. So a thread waits for stdout's reader to go (a pipe reports an error
/// or hang-up to `poll` with no events asked) and ends the process then.
#[cfg(not(unix))]
fn exit_when_stdout_closes() {
    // A remote's `watch` runs under sshd on a unix host; on Windows it ends at the next change
    // after its reader goes (the write fails).
}

#[cfg(unix)]
fn exit_when_stdout_closes() {
    let spawned = std::thread::Builder::new()
        .name("stdout-watch".into())
        .spawn(|| loop {
            let mut fd = libc::pollfd {
                fd: 1,
                events: 0,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the duration of the call.
            let n = unsafe { libc::poll(&mut fd, 1, -1) };
            if n > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                std::process::exit(0);
            }
            if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        });
    if let Err(e) = spawned {
        eprintln!("agent-tray: cannot watch stdout ({e}); this watch ends at the next change after its reader goes");
    }
}

/// One `watch` line for people. Every piece of session text is escaped.
/// ` on HOST` for a remote's session (its name escaped), nothing for this machine's.
fn on_host(host: Option<&str>) -> String {
    host.map(|h| format!(" on {}", escape_controls(h)))
        .unwrap_or_default()
}

pub fn describe_change_line(line: &str) -> String {
    use crate::registry::SessionChange;
    match serde_json::from_str::<WatchLine>(line) {
        Ok(WatchLine::Change(SessionChange::Added { session })) => {
            format!(
                "+ {} {} {}{}",
                session.agent,
                escape_controls(short_id(&session.session_id)),
                session.state,
                on_host(session.host.as_deref())
            )
        }
        Ok(WatchLine::Change(SessionChange::Changed { old_state, session })) => format!(
            "~ {} {} {} -> {}{}",
            session.agent,
            escape_controls(short_id(&session.session_id)),
            old_state,
            session.state,
            on_host(session.host.as_deref())
        ),
        Ok(WatchLine::Change(SessionChange::Removed { session_id, host })) => {
            format!(
                "- {}{}",
                escape_controls(short_id(&session_id)),
                on_host(host.as_deref())
            )
        }
        Ok(WatchLine::Sessions(
            SessionsLine::Resync { sessions } | SessionsLine::Snapshot { sessions, .. },
        )) => format!("= {} sessions", sessions.len()),
        Err(_) => escape_controls(line).into_owned(),
    }
}

/// The first 8 characters of an id (never half a character).
pub fn short_id(id: &str) -> &str {
    match id.char_indices().nth(8) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

/// "a", "a or b", "a, b or c".
fn or_list(names: &[&str]) -> String {
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The `list` table. Text from sessions is printed with control characters escaped (see
/// [`escape_controls`]) so a hostile folder name or title cannot drive the terminal.
pub fn format_table(sessions: &[Session], now: DateTime<Utc>) -> String {
    if sessions.is_empty() {
        let names: Vec<&str> = Agent::ALL.iter().map(|a| a.entry().product_name).collect();
        return format!(
            "No sessions. Start {} (and `agent-tray install` for instant updates).\n",
            or_list(&names)
        );
    }
    let clean = |s: &str| -> String { escape_controls(s).into_owned() };
    // HOST first: a remote's pid is that machine's, never one to look for (or kill) here.
    let rows: Vec<[String; 9]> = sessions
        .iter()
        .map(|s| {
            [
                s.host.as_deref().map_or_else(|| "local".into(), clean),
                s.agent.to_string(),
                state_cell(s, now),
                clean(&s.project().unwrap_or_else(|| "-".into())),
                clean(s.branch.as_deref().unwrap_or("-")),
                s.pid.map_or_else(|| "-".into(), |p| p.to_string()),
                human_age((now - s.state_since).num_seconds()),
                context_cell(s),
                clean(&s.session_id),
            ]
        })
        .collect();
    let header = [
        "HOST", "AGENT", "STATE", "PROJECT", "BRANCH", "PID", "FOR", "CONTEXT", "SESSION",
    ];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut push_row = |cells: &[&str]| {
        let line: Vec<String> = cells
            .iter()
            .zip(widths.iter())
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    };
    push_row(&header);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        push_row(&cells);
    }
    // How to learn a window no agent said (once per agent, under the table; live sessions only:
    // the history table is no place to turn anything on).
    let mut hinted: Vec<Agent> = Vec::new();
    for s in sessions
        .iter()
        .filter(|s| s.state != crate::model::SessionState::Ended)
    {
        let hint = crate::tray_model::ContextView::of(s).and_then(|c| c.window_hint);
        if let (Some(hint), false) = (hint, hinted.contains(&s.agent)) {
            hinted.push(s.agent);
            out.push_str(&format!("{}: {hint}\n", s.agent.entry().product_name));
        }
    }
    out
}

/// The table's STATE cell: the state, and until when a used-up plan window stops the session
/// (in local time), while it does.
fn state_cell(session: &Session, now: DateTime<Utc>) -> String {
    match session.blocked_at(now) {
        Some(until) => format!(
            "{}, limit until {}",
            session.state,
            until.with_timezone(&chrono::Local).format("%a %H:%M")
        ),
        None => session.state.to_string(),
    }
}

/// The table's CONTEXT cell: the window's words where the agent says anything, else `-`.
fn context_cell(session: &Session) -> String {
    crate::tray_model::ContextView::of(session).map_or_else(|| "-".into(), |c| c.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_table_says_each_window_with_its_reset_or_why_there_is_none() {
        let now = Utc::now();
        assert!(format_limits(&[], now).starts_with("No plan limits reported:"));
        let w = crate::plan_limits::PlanWindow {
            agent: Agent::Codex,
            host: Some("gpu\u{1b}[2Jbox".into()),
            account: "pro".into(),
            window: "5h".into(),
            window_minutes: Some(300),
            used_percent: 42.4,
            resets_at: Some(now + chrono::Duration::minutes(95)),
            seen_at: now,
            session_id: "t1".into(),
        };
        let line = format_limits(&[w], now);
        assert!(
            line.starts_with("Codex pro on gpu\\u{1b}[2Jbox: 5h window 42% used, resets "),
            "{line}"
        );
        assert!(
            line.trim_end().ends_with("(in 1h 35m)") || line.trim_end().ends_with("(in 1h 34m)"),
            "{line}"
        );
    }

    #[test]
    fn the_context_cell_says_what_the_agent_said_and_nothing_more() {
        let now = Utc::now();
        let mut s = Session::new("s", Agent::Codex, crate::model::SessionState::Idle, now);
        assert_eq!(context_cell(&s), "-");
        s.context_tokens = Some(92_014);
        assert_eq!(context_cell(&s), "92k in context");
        s.context_window = Some(258_400);
        assert_eq!(context_cell(&s), "35% of 258k");
        s.context_tokens = Some(950);
        s.context_window = Some(1_000_000);
        assert_eq!(context_cell(&s), "0% of 1.0M");
        assert_eq!(crate::tray_model::tokens_text(1_250_000), "1.2M");
        let table = format_table(&[s], now);
        assert!(
            table
                .lines()
                .nth(1)
                .unwrap_or("")
                .contains("0s   0% of 1.0M  s"),
            "{table}"
        );
    }

    #[test]
    fn ages_read_like_a_person_would_say_them() {
        assert_eq!(human_age(-3), "0s");
        assert_eq!(human_age(59), "59s");
        assert_eq!(human_age(61), "1m 01s");
        assert_eq!(human_age(245), "4m 05s", "as the window says it");
        assert_eq!(human_age(3600 + 5 * 60), "1h 05m");
        assert_eq!(human_age(3 * 86_400), "3d 0h");
    }

    #[test]
    fn the_table_strips_control_characters_from_session_text() {
        let now = Utc::now();
        let session: Session = serde_json::from_value(serde_json::json!({
            "session_id": "abc", "agent": "claude", "state": "idle", "cwd": "/x/evil\u{1b}[2Jname",
            "repo": null, "branch": null, "model": null, "transcript_path": null, "pid": 7,
            "pid_start": null, "prompted": false, "streamed": false,
            "started_at": now, "last_seen": now, "state_since": now, "last_event": null,
            "last_tool": null, "error": null, "waiting_for": null, "end_reason": null,
            "title": null, "tmux": null, "tty": null, "subagents": 0, "turn_started_at": null
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let table = format_table(&[session], now);
        assert!(!table.contains('\u{1b}'), "{table:?}");
        assert!(table.contains("evil\\u{1b}[2Jname"), "{table:?}");
        assert!(table.starts_with("HOST"));
    }

    // A remote's pid is that machine's: the table and the watch lines say where each runs.
    #[test]
    fn the_table_and_the_watch_lines_say_where_each_session_runs() {
        let now = Utc::now();
        let mut here = Session::new(
            "local-1",
            Agent::Claude,
            crate::model::SessionState::Idle,
            now,
        );
        here.pid = Some(4242);
        let mut far = Session::new(
            "far-1",
            Agent::Codex,
            crate::model::SessionState::Working,
            now,
        );
        far.pid = Some(4242);
        far.host = Some("gpu-box".into());
        let table = format_table(&[here, far.clone()], now);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("HOST     AGENT"), "{table}");
        assert!(lines[1].starts_with("local    claude"), "{table}");
        assert!(lines[2].starts_with("gpu-box  codex"), "{table}");
        let line =
            serde_json::json!({"kind": "changed", "old_state": "idle", "session": far}).to_string();
        assert_eq!(
            describe_change_line(&line),
            "~ codex far-1 idle -> working on gpu-box"
        );
        let gone =
            describe_change_line(r#"{"kind":"removed","session_id":"far-1","host":"gpu-box"}"#);
        assert_eq!(gone, "- far-1 on gpu-box");
    }

    #[test]
    fn short_ids_never_cut_a_character_in_half() {
        assert_eq!(short_id("33413ec6-95b9-4336"), "33413ec6");
        assert_eq!(short_id("ééééééééé"), "éééééééé");
        assert_eq!(short_id("日本語のセッションです"), "日本語のセッショ");
        assert_eq!(short_id("abc"), "abc");
        assert_eq!(short_id(""), "");
    }

    #[test]
    fn watch_lines_for_people_escape_what_they_cannot_parse_and_every_id() {
        let osc = "{\"kind\":\"weird\",\"x\":\"\u{1b}]52;c;aGk=\u{7}\"}";
        let shown = describe_change_line(osc);
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown:?}"
        );
        assert!(shown.contains("\\u{1b}]52;c;aGk=\\u{7}"), "{shown:?}");
        let removed = describe_change_line(r#"{"kind":"removed","session_id":"ab\u001bcdefghij"}"#);
        assert_eq!(removed, "- ab\\u{1b}cdefg");
        assert_eq!(escape_controls("plain /home/dev"), "plain /home/dev");
        assert_eq!(escape_controls("a\u{202E}b"), "a\\u{202e}b");
    }
}
