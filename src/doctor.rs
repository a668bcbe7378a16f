//! `agent-tray doctor`: what is installed, hooked, trusted and running, and what to do about
//! whatever is not. One line per fact; problems start with `✗` and say what to run. Exits
//! non-zero when anything is wrong.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use chrono::Utc;

use crate::agents::AgentKnowledge;
use crate::catalogue::InCatalogue;
use crate::control::client::ControlClient;
use crate::control::protocol::{PingInfo, TypedReply};
use crate::control::Request;
use crate::install;
use crate::journal;
use crate::model::Agent;
use crate::paths::TrayPaths;

pub mod findings;
pub(crate) mod probe;

pub use findings::Finding;

pub use probe::agent_version;

/// Runs every check.
pub fn check(bin: &Path, tray: Option<&TrayPaths>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut probe_targets = Vec::new();
    for &agent in Agent::ALL {
        let on_path = crate::os_fs::find_on_path(agent.entry().program);
        match &on_path {
            Some(p) => out.push(Finding::Ok(format!(
                "{} is installed: {}",
                agent.display_name(),
                p.display()
            ))),
            None => out.push(Finding::Note(format!(
                "{} is not on PATH",
                agent.display_name()
            ))),
        }
        out.push(Finding::Note(format!(
            "{}: {}",
            agent.entry().product_name,
            agent.entry().support.summary()
        )));
        let (hooks, command) = agent.adapter().doctor_hooks(agent, bin);
        if let Some(command) = command {
            probe_targets.push((agent, command));
        }
        // Hooks for an agent that is not installed are only a note.
        for finding in hooks {
            out.push(match finding {
                Finding::Problem(p) if on_path.is_none() => Finding::Note(p),
                f => f,
            });
        }
    }
    if let Err(insecure) = install::path_safety::check(bin) {
        out.push(Finding::Problem(format!(
            "{insecure}; hooks installed from here would run it on every agent event. Fix: {}",
            insecure.fix()
        )));
    }
    match tray {
        Some(paths) => {
            let (findings, reachable) = check_app(paths);
            out.extend(findings);
            if reachable {
                for (agent, command) in &probe_targets {
                    out.push(probe::run(*agent, command, paths));
                    let answer_command = agent.adapter().answer_probe_command(command);
                    out.extend(probe::run_answer(*agent, &answer_command, paths));
                }
                out.extend(probe::delivery_findings(paths));
            } else if !probe_targets.is_empty() {
                out.push(Finding::Note(
                    "hook delivery was not probed: the engine cannot be reached".into(),
                ));
            }
        }
        None => out.push(Finding::Problem(
            "cannot tell where Agent Tray keeps its data: set HOME or AGENT_TRAY_HOME".into(),
        )),
    }
    out
}

/// The app's findings, and whether its engine answered.
fn check_app(paths: &TrayPaths) -> (Vec<Finding>, bool) {
    let mut out = Vec::new();
    let mut reachable = false;
    match ControlClient::connect(&paths.socket, Duration::from_secs(2))
        .and_then(|mut c| c.request_typed::<PingInfo>(&Request::Ping))
    {
        Ok(TypedReply {
            ok: true,
            result: Some(info),
            ..
        }) => {
            reachable = true;
            out.push(Finding::Ok(format!(
                "Agent Tray is running ({} pid {}, {} live sessions)",
                info.host, info.pid, info.sessions
            )));
            if let Some(links) = crate::remote::status::link_statuses(paths) {
                out.extend(remote_findings(&links));
            }
        }
        Ok(_) => out.push(Finding::Problem("Agent Tray answered the ping with an error".into())),
        Err(e) => out.push(Finding::Problem(format!(
            "Agent Tray's engine cannot be reached at {} ({e}), so nothing shows what the hooks send; if it is not running, start the app or run `agent-tray daemon` (hooks are journaled meanwhile)",
            paths.socket.display()
        ))),
    }
    let last = journal::last_event_per_agent(&paths.journal_dir());
    for &agent in Agent::ALL {
        match last.get(&agent) {
            Some(record) => {
                let ago = (Utc::now() - record.observation.at).num_seconds().max(0);
                out.push(Finding::Ok(format!(
                    "last {} event: {} {} ago (session {}, {})",
                    agent.display_name(),
                    record.observation.event,
                    human_age(ago),
                    record.observation.session_id,
                    probe::version_text(agent, &record.observation)
                )));
            }
            None => out.push(Finding::Note(format!(
                "no {} event received yet (start a session to check the hooks)",
                agent.display_name()
            ))),
        }
    }
    out.extend(
        journal::health_notes(&paths.journal_dir())
            .into_iter()
            .map(Finding::Note),
    );
    let log = paths.log_dir().join("hook.log");
    if let Ok(meta) = std::fs::metadata(&log) {
        if meta.len() > 0 {
            out.push(Finding::Note(format!(
                "hook errors are logged in {}",
                log.display()
            )));
        }
    }
    (out, reachable)
}

/// One line per remote: fine when connected, a problem (with the one clear reason) when not.
pub fn remote_findings(links: &[crate::remote::RemoteLinkStatus]) -> Vec<Finding> {
    use crate::remote::LinkState;
    links
        .iter()
        .map(|link| {
            let line = format!(
                "remote {} ({}): {}",
                link.name,
                link.destination,
                crate::remote::status::describe(link)
            );
            match link.state {
                LinkState::Connected => Finding::Ok(line),
                LinkState::Connecting => Finding::Note(line),
                LinkState::Unreachable | LinkState::NotRunning | LinkState::Unusable => {
                    Finding::Problem(line)
                }
            }
        })
        .collect()
}

fn human_age(secs: i64) -> String {
    crate::duration_text::format_duration(secs, crate::duration_text::Precision::Seconds)
}

/// `agent-tray doctor`.
pub fn run() -> ExitCode {
    let bin = match install::current_binary() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("agent-tray: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tray = TrayPaths::from_env().ok();
    let findings = check(&bin, tray.as_ref());
    let mut out = std::io::stdout().lock();
    let mut problems = 0;
    for f in &findings {
        let _ = match f {
            Finding::Ok(t) => writeln!(out, "✓ {t}"),
            Finding::Note(t) => writeln!(out, "· {t}"),
            Finding::Problem(t) => {
                problems += 1;
                writeln!(out, "✗ {t}")
            }
        };
    }
    if problems == 0 {
        let _ = writeln!(out, "nothing wrong found");
        ExitCode::SUCCESS
    } else {
        let _ = writeln!(out, "{problems} problem(s) found");
        ExitCode::FAILURE
    }
}
