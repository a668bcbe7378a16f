//! `agent-tray status-line --agent <id> [--then '<command>']`: the status-line bridge an agent
//! runs on every redraw of its status line (Claude Code's `statusLine`, installed by `install
//! --claude --status-line`).
//!
//! Some agents tell their context window and plan limits only to a status-line command. The
//! bridge takes them to the engine and still shows the user's own status line, so:
//! - **The user's line first, and unchanged.** Their command (`--then`) is started as soon as
//!   the input is read, with the same input on its stdin (all of it, past our own read limit
//!   too) and our stdout and stderr as its own: its bytes, colours and all, reach the agent
//!   untouched, and the bridge exits with its exit status. Without one the bridge prints a short
//!   line of its own ([`own_line`]).
//! - **Never waits on the engine.** One request, sent and not answered, within [`SEND_BUDGET`];
//!   an engine that is down costs a failed connect, a wedged one at most the budget, and the
//!   user's command runs meanwhile. Nothing is journaled: each status line says it all again.
//! - **Bad input changes nothing.** The adapter reads the input field by field
//!   ([`crate::agents::AgentAdapter::status_line_report`]); input that is not JSON, names no
//!   session, or was cut at [`MAX_STDIN`] is not sent at all, and the user's line prints anyway.

use std::io::{self, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::agents::AgentKnowledge;
use crate::control::client::{ClientError, ControlClient};
use crate::control::Request;
use crate::hook::{agent_flag, log_error, read_stdin_past};
use crate::model::Observation;
use crate::paths::TrayPaths;
use crate::plan_limits::PlanWindow;

/// The most of stdin the bridge reads to understand it (the rest still goes to the user's
/// command).
pub const MAX_STDIN: usize = 1 << 20;
/// How long the bridge waits for its input (the agents write it at once and close it).
pub const STDIN_BUDGET: Duration = Duration::from_millis(1000);
/// Connect + write to the engine.
pub const SEND_BUDGET: Duration = Duration::from_millis(50);

/// `agent-tray status-line`: returns the exit status to exit with (the user's command's).
pub fn run_status_line(args: &[String]) -> i32 {
    crate::hook::silence_panics();
    let at = Utc::now();
    let agent = agent_flag(args);
    let then = then_flag(args);
    // A cut read keeps what it took past the limit: all of it goes on to the user's command.
    let (payload, cut) = read_stdin_past(MAX_STDIN, STDIN_BUDGET);
    let user = then
        .as_deref()
        .map(|command| start_user_line(command, &payload, cut));
    let report = (!cut)
        .then(|| agent.and_then(|a| a.adapter().status_line_report(&payload, at)))
        .flatten();
    let paths = TrayPaths::from_env().ok();
    if let (Some(paths), Some((observation, limits))) = (&paths, &report) {
        send(paths, observation, limits);
    }
    match user {
        Some(Ok(mut child)) => match child.wait() {
            Ok(status) => exit_code(status),
            Err(e) => {
                if let Some(paths) = &paths {
                    log_error(
                        paths,
                        &format!("status-line: waiting for your command: {e}"),
                    );
                }
                1
            }
        },
        Some(Err(e)) => {
            if let Some(paths) = &paths {
                log_error(paths, &format!("status-line: cannot run your command: {e}"));
            }
            print_own_line(report.as_ref(), at);
            0
        }
        None => {
            print_own_line(report.as_ref(), at);
            0
        }
    }
}

/// `--then <command>` (or `--then=<command>`), anywhere in the arguments.
pub fn then_flag(args: &[String]) -> Option<String> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--then" {
            return it.next().cloned();
        }
        if let Some(v) = arg.strip_prefix("--then=") {
            return Some(v.to_string());
        }
    }
    None
}

/// Starts the user's status-line command, with our stdout and stderr, and hands it the input on
/// a thread: what was read, then whatever stdin still holds when the read was cut. A command of
/// plain words (a path, its arguments, a leading `~/`) is started directly, saving the second
/// shell's start on every redraw; anything else runs through `sh -c`, as the agent itself runs
/// a status line.
fn start_user_line(command: &str, payload: &[u8], cut: bool) -> io::Result<std::process::Child> {
    let spawn = |cmd: &mut Command| {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .spawn()
    };
    let home = std::env::var("HOME").ok();
    let direct = plain_words(command, home.as_deref()).and_then(|words| {
        let (program, args) = words.split_first()?;
        spawn(Command::new(program).args(args)).ok()
    });
    let mut child = match direct {
        Some(child) => child,
        None => spawn(Command::new("sh").arg("-c").arg(command))?,
    };
    if let Some(mut stdin) = child.stdin.take() {
        let payload = payload.to_vec();
        // A command that never reads its stdin must not hold the bridge: the thread ends with
        // the process (a write to a gone reader fails with EPIPE, which we ignore).
        let _ = std::thread::Builder::new()
            .name("status-line-stdin".into())
            .spawn(move || {
                if stdin.write_all(&payload).is_ok() && cut {
                    let _ = io::copy(&mut io::stdin().lock(), &mut stdin);
                }
            });
    }
    Ok(child)
}

/// The words of a command that a shell would run as they are: only plain path characters and
/// spaces, a `~/` only at a word's start (expanded with `home`). `None` for anything a shell
/// would read differently (quotes, `$`, globs, redirections, `;`, a `~user`).
pub fn plain_words(command: &str, home: Option<&str>) -> Option<Vec<String>> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    let words: Vec<&str> = command.split(' ').filter(|w| !w.is_empty()).collect();
    if words.is_empty() || command.chars().any(|c| c != ' ' && c != '~' && !plain(c)) {
        return None;
    }
    words
        .into_iter()
        .map(|word| match word.strip_prefix("~/") {
            Some(rest) if !rest.contains('~') => home.map(|h| format!("{h}/{rest}")),
            None if !word.contains('~') => Some(word.to_string()),
            _ => None,
        })
        .collect()
}

/// The exit code a shell would give: the code, or 128 + the signal that ended it.
fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    1
}

/// Sends the report within [`SEND_BUDGET`]; never waits for the answer.
fn send(paths: &TrayPaths, observation: &Observation, limits: &[PlanWindow]) {
    let observation = match observation.clone().admit() {
        Ok(obs) => obs,
        Err(e) => return log_error(paths, &format!("status-line: refused: {e}")),
    };
    let request = Request::StatusLine {
        observation,
        limits: limits.to_vec(),
    };
    let result = ControlClient::connect(&paths.socket, SEND_BUDGET)
        .and_then(|mut client| client.send(&request));
    match result {
        Ok(()) | Err(ClientError::NotRunning(_)) => {}
        Err(e) => log_error(paths, &format!("status-line: send: {e}")),
    }
}

fn print_own_line(report: Option<&(Observation, Vec<PlanWindow>)>, now: DateTime<Utc>) {
    let line = report.map(|(obs, limits)| own_line(obs, limits, now));
    if let Some(line) = line.filter(|l| !l.is_empty()) {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// The bridge's own line where the user has none: the model, the context and the plan's
/// windows, each only where the agent said it (`claude-opus-5-5 · 11% of 1.0M context · 5h 42%
/// · weekly 12%`). Empty when it said none of them.
pub fn own_line(obs: &Observation, limits: &[PlanWindow], now: DateTime<Utc>) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(model) = obs.model.as_deref() {
        parts.push(crate::terminal_text::escape_controls(model).into_owned());
    }
    match (obs.context_tokens, obs.context_window) {
        (Some(tokens), Some(window)) if window > 0 => {
            let percent = tokens.saturating_mul(100) / window;
            parts.push(format!(
                "{}% of {} context",
                percent.min(100),
                crate::tray_model::tokens_text(window)
            ));
        }
        (Some(tokens), _) => parts.push(format!(
            "{} in context",
            crate::tray_model::tokens_text(tokens)
        )),
        (None, Some(window)) => parts.push(format!(
            "{} context",
            crate::tray_model::tokens_text(window)
        )),
        (None, None) => {}
    }
    for window in limits.iter().filter(|w| !w.is_over(now)) {
        parts.push(format!(
            "{} {:.0}%",
            crate::terminal_text::escape_controls(&window.window),
            window.used_percent.floor()
        ));
    }
    parts.join(" · ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_commands_a_shell_would_run_as_they_are_skip_the_shell() {
        let w = |c: &str| plain_words(c, Some("/home/me"));
        assert_eq!(
            w("~/.claude/line.sh"),
            Some(vec!["/home/me/.claude/line.sh".into()])
        );
        assert_eq!(
            w("node  /opt/ccstatus/index.js --compact"),
            Some(vec![
                "node".into(),
                "/opt/ccstatus/index.js".into(),
                "--compact".into()
            ])
        );
        for shell in [
            "a | b",
            "echo $HOME",
            "x > y",
            "a; b",
            "'q'",
            "ls *",
            "~me/x",
            "a~/b",
            "",
            "  ",
            "a\tb",
        ] {
            assert_eq!(w(shell), None, "{shell:?} needs a shell");
        }
        assert_eq!(plain_words("~/x", None), None, "no HOME: the shell decides");
    }

    #[test]
    fn the_own_line_says_only_what_the_agent_said() {
        let now = Utc::now();
        let mut obs = Observation::new(
            "s",
            crate::model::Agent::Claude,
            crate::model::EventKind::Sighting,
            now,
        );
        assert_eq!(own_line(&obs, &[], now), "");
        obs.model = Some("claude-opus-5-5".into());
        obs.context_window = Some(1_000_000);
        assert_eq!(own_line(&obs, &[], now), "claude-opus-5-5 · 1.0M context");
        obs.context_tokens = Some(110_000);
        assert_eq!(
            own_line(&obs, &[], now),
            "claude-opus-5-5 · 11% of 1.0M context"
        );
        obs.model = Some("evil\u{1b}[2J".into());
        assert!(
            !own_line(&obs, &[], now).contains('\u{1b}'),
            "no terminal control from input"
        );
    }
}
