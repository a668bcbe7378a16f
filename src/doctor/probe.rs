//! `doctor`'s proof of delivery: run the exact hook command line an agent's config holds, the way
//! the agent runs it (`sh -c`, payload on stdin), with a probe payload, and ask the engine whether
//! the probe arrived.
//!
//! Reading the config only says what should happen; a hook whose binary cannot run, a shell that
//! cannot parse the line, or a hook that writes to another data folder than the app reads all look
//! fine on paper. The probe takes the same path as a real event. It carries a session id with
//! [`PROBE_PREFIX`], which the hook sends as a `probe` request instead of journaling it, so it
//! never becomes a session. Bounded: the command gets [`PROBE_DEADLINE`], is killed and reaped
//! past it, and inherits none of doctor's stdio.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;

use super::findings::Finding;
use crate::agents::AgentKnowledge;
use crate::catalogue::InCatalogue;
use crate::control::client::ControlClient;
use crate::control::Request;
use crate::delivery::{DeliveryReport, PROBE_PREFIX};
use crate::model::{Agent, Observation};
use crate::paths::TrayPaths;

/// How long the hook command may run (the hook itself gives up sending after 100 ms).
pub const PROBE_DEADLINE: Duration = Duration::from_secs(2);
/// How long the engine is asked, after the hook exited, whether the probe arrived.
const CONFIRM_DEADLINE: Duration = Duration::from_millis(1000);

fn fix_for(agent: Agent) -> String {
    format!("agent-tray install --{}", agent.as_str())
}

fn agent_name(agent: Agent) -> &'static str {
    agent.entry().product_name
}

/// How running the command went.
#[derive(Debug, PartialEq, Eq)]
enum RunOutcome {
    Exited(Option<i32>),
    TimedOut,
    CannotStart(String),
}

/// How a hook command line is run for the probe on `desktop`: `sh -c` on unix, as the agents run
/// it. On Windows the agents run it through Git Bash (Claude Code) or `cmd.exe` (Codex's
/// `commandWindows`), neither of which every machine has; a line of plain words (every line
/// `install` writes) is run as those words, which both shells would also do. Anything else
/// goes to Git Bash's `bash -c`. Pure.
pub fn probe_invocation(windows: bool, command: &str) -> (String, Vec<String>) {
    if windows {
        let plain = !command.contains(['|', '&', ';', '<', '>', '$', '`', '(', ')', '*', '?']);
        if let Some(words) = crate::install::shell_words(command).filter(|w| plain && !w.is_empty())
        {
            let (program, args) = words.split_first().map_or_else(
                || (String::new(), Vec::new()),
                |(p, a)| (p.clone(), a.to_vec()),
            );
            return (program, args);
        }
        return ("bash".into(), vec!["-c".into(), command.into()]);
    }
    ("sh".into(), vec!["-c".into(), command.into()])
}

/// Runs `sh -c command` with `payload` on stdin, no inherited stdio, for at most `deadline`
/// (on Windows as [`probe_invocation`] says).
fn run_command(command: &str, payload: &[u8], deadline: Duration) -> RunOutcome {
    run_command_reading(command, payload, deadline, None)
}

/// The most of a hook's stdout read (an answer is one short line).
const MAX_STDOUT: u64 = 64 * 1024;

/// As [`run_command`], keeping what the command printed (bounded) in `stdout`.
fn run_command_reading(
    command: &str,
    payload: &[u8],
    deadline: Duration,
    stdout: Option<&mut String>,
) -> RunOutcome {
    use std::io::Read;
    let started = Instant::now();
    let (program, args) = probe_invocation(cfg!(windows), command);
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(if stdout.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return RunOutcome::CannotStart(e.to_string()),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that exits without reading makes this fail (EPIPE): its exit says the rest.
        let _ = stdin.write_all(payload);
    }
    // The answer is one line, printed as the hook exits: read on a thread so a full pipe can
    // never hold the hook.
    let reader = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.take(MAX_STDOUT).read_to_string(&mut text);
            text
        })
    });
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) => break RunOutcome::Exited(status.code()),
            Ok(None) if started.elapsed() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break RunOutcome::TimedOut;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                break RunOutcome::CannotStart(e.to_string());
            }
        }
    };
    if let (Some(reader), Some(stdout)) = (reader, stdout) {
        *stdout = reader.join().unwrap_or_default();
    }
    outcome
}

/// Proves an agent's answer path end to end: runs its hook command line with a probe
/// permission request; the engine answers the probe at once, and the hook must print that
/// answer in the agent's shape. No agent is involved, and the probe is never a session.
pub fn run_answer(agent: Agent, command: &str, paths: &TrayPaths) -> Option<Finding> {
    let path = agent.entry().answer_path?;
    let name = agent_name(agent);
    let enabled = crate::answering::AnswerSettings::load(paths)
        .ok()
        .and_then(|s| s.effective(agent))
        .is_some_and(|c| c.enabled);
    let probe_id = format!(
        "{PROBE_PREFIX}{}-answer-{}-{}",
        agent.as_str(),
        std::process::id(),
        Utc::now().timestamp_nanos_opt().unwrap_or_default()
    );
    let payload = agent.adapter().answer_probe_payload(&probe_id);
    let started = Instant::now();
    let mut printed = String::new();
    let outcome = run_command_reading(command, &payload, PROBE_DEADLINE, Some(&mut printed));
    let expected = crate::answering::hook_output(
        path.reply,
        &crate::answering::HookDecision::Deny {
            message: Some(crate::answering::PROBE_ANSWER.into()),
        },
        &serde_json::Value::Null,
    );
    let same = |a: &str, b: &str| {
        serde_json::from_str::<serde_json::Value>(a.trim()).ok()
            == serde_json::from_str::<serde_json::Value>(b).ok()
    };
    let finding = match (outcome, expected) {
        (RunOutcome::Exited(Some(0)), Some(expected)) if same(&printed, &expected) => {
            let state = if enabled {
                "on".to_string()
            } else {
                format!("off; `agent-tray answering {} on` to use it", agent.as_str())
            };
            Finding::Ok(format!(
                "{name}'s answer path works: its hook took an answer from Agent Tray and printed it for {name} ({} ms); answering from the tray is {state}",
                started.elapsed().as_millis()
            ))
        }
        (RunOutcome::Exited(Some(0)), _) if printed.trim().is_empty() => Finding::Problem(format!(
            "{name}'s hook printed no answer to a probe request (`{command}`): answers from the tray cannot reach {name}; run `{}` (an older agent-tray binary?)",
            fix_for(agent)
        )),
        (RunOutcome::Exited(Some(0)), _) => Finding::Problem(format!(
            "{name}'s hook printed something other than an answer to a probe request: {:?}",
            printed.trim()
        )),
        _ => Finding::Problem(format!(
            "{name}'s hook did not answer a probe request (`{command}`); run `{}`",
            fix_for(agent)
        )),
    };
    Some(finding)
}

fn delivery_report(paths: &TrayPaths) -> Option<DeliveryReport> {
    ControlClient::connect(&paths.socket, Duration::from_millis(500))
        .and_then(|mut c| c.request_typed::<DeliveryReport>(&Request::Delivery))
        .ok()
        .and_then(|reply| reply.into_result().ok())
}

/// Runs one agent's hook command with a probe and says whether the engine received it.
pub fn run(agent: Agent, command: &str, paths: &TrayPaths) -> Finding {
    let name = agent_name(agent);
    let fix = fix_for(agent);
    let at = Utc::now();
    let probe_id = format!(
        "{PROBE_PREFIX}{}-{}-{}",
        agent.as_str(),
        std::process::id(),
        at.timestamp_nanos_opt().unwrap_or_default()
    );
    let started = Instant::now();
    let payload = agent.adapter().probe_payload(&probe_id);
    match run_command(command, &payload, PROBE_DEADLINE) {
        RunOutcome::Exited(Some(0)) => {}
        RunOutcome::Exited(code) => {
            let code = code.map_or("a signal".to_string(), |c| format!("code {c}"));
            return Finding::Problem(format!(
                "{name}'s hook command failed with {code} (`{command}`), so {name} events are lost; run `{fix}`"
            ));
        }
        RunOutcome::TimedOut => {
            return Finding::Problem(format!(
                "{name}'s hook command did not finish within {} s (`{command}`) and was killed; {name} waits for its hooks, so this slows every event: run `{fix}`",
                PROBE_DEADLINE.as_secs()
            ));
        }
        RunOutcome::CannotStart(e) => {
            return Finding::Problem(format!(
                "cannot run {name}'s hook command through sh ({e}); check that /bin/sh exists"
            ));
        }
    }
    let ran = started.elapsed();
    let confirm_until = Instant::now() + CONFIRM_DEADLINE;
    loop {
        let received =
            delivery_report(paths).is_some_and(|r| r.probes.iter().any(|p| p.probe_id == probe_id));
        if received {
            return Finding::Ok(format!(
                "{name}'s hook delivered a probe to Agent Tray ({} ms; ran `{command}`)",
                started.elapsed().as_millis().max(ran.as_millis())
            ));
        }
        if Instant::now() >= confirm_until {
            return Finding::Problem(format!(
                "{name}'s hook ran (`{command}`) but Agent Tray never received its probe; look in {} for the hook's errors, and make sure the agent and the app see the same AGENT_TRAY_HOME ({})",
                paths.log_dir().join("hook.log").display(),
                paths.data_dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// What the engine counted: unknown hook events, and the last hook event it received per agent.
pub fn delivery_findings(paths: &TrayPaths) -> Vec<Finding> {
    let Some(report) = delivery_report(paths) else {
        return vec![Finding::Note(
            "the engine does not report hook delivery (an older Agent Tray?)".into(),
        )];
    };
    let mut out = Vec::new();
    for &agent in Agent::ALL {
        let unknown: Vec<String> = report
            .unknown_events
            .iter()
            .filter(|u| u.agent == Some(agent))
            .map(|u| format!("{} ×{}", u.event, u.count))
            .collect();
        if !unknown.is_empty() {
            out.push(Finding::Note(format!(
                "{} sent hook events this Agent Tray does not know (ignored, counted since the engine started): {}; a newer Agent Tray may use them",
                agent_name(agent),
                unknown.join(", ")
            )));
        }
        if let Some(last) = report.last_status_lines.iter().find(|l| l.agent == agent) {
            let ago = (Utc::now() - last.at).num_seconds().max(0);
            out.push(Finding::Ok(format!(
                "the engine received {}'s last status line {} ago: the status-line bridge works",
                agent_name(agent),
                super::human_age(ago)
            )));
        }
        if let Some(last) = report.last_hook_events.iter().find(|l| l.agent == agent) {
            let ago = (Utc::now() - last.at).num_seconds().max(0);
            out.push(Finding::Ok(format!(
                "the engine received {}'s last hook event ({}) {} ago",
                agent_name(agent),
                last.event,
                super::human_age(ago)
            )));
        }
    }
    for call in &report.foreign_calls {
        let last = if call.last_event.is_empty() {
            "?"
        } else {
            call.last_event.as_str()
        };
        let Some(caller) = crate::hook_payload::ForeignCaller::from_name(&call.caller) else {
            out.push(Finding::Note(format!(
                "{} ran one of Agent Tray's hooks ×{} (last: {last}). These calls were ignored",
                call.caller, call.count
            )));
            continue;
        };
        let program = caller.program();
        out.push(Finding::Note(format!(
            "{} ran Agent Tray's {} hook ×{} (last: {}); it loads hooks from {}. These calls were ignored: they are not {} sessions",
            program.name,
            program.host.entry().product_name,
            call.count,
            last,
            program.loads_from,
            program.host.display_name(),
        )));
    }
    let untold: Vec<String> = report
        .unknown_events
        .iter()
        .filter(|u| u.agent.is_none())
        .map(|u| format!("{} ×{}", u.event, u.count))
        .collect();
    if !untold.is_empty() {
        out.push(Finding::Note(format!(
            "hook events this Agent Tray does not know, from a hook without --agent (ignored): {}",
            untold.join(", ")
        )));
    }
    out
}

/// The agent version behind an observation, where something on disk tells it; otherwise says
/// plainly that it is not known. Claude Code's hook payloads carry no version, but its session
/// file (`sessions/<pid>.json`) does while the session lives; a Codex rollout's first line
/// (`session_meta`) carries `cli_version`.
pub fn version_text(agent: Agent, obs: &Observation) -> String {
    let found = agent_version(agent, obs);
    match found {
        Some(v) => format!("{} {v}", agent_name(agent)),
        None => agent.adapter().version_unknown_text(),
    }
}

/// The agent version behind an observation, where something on disk tells it.
pub fn agent_version(agent: Agent, obs: &Observation) -> Option<String> {
    agent.adapter().version_of(obs)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn on_windows_a_line_of_plain_words_is_run_as_its_words_and_anything_else_by_bash() {
        let line = "'C:/Program Files/Agent Tray/agent-tray.exe' hook --agent claude";
        assert_eq!(
            probe_invocation(true, line),
            (
                "C:/Program Files/Agent Tray/agent-tray.exe".to_string(),
                vec!["hook".to_string(), "--agent".into(), "claude".into()]
            )
        );
        let shelled = "agent-tray hook --agent claude; true";
        assert_eq!(
            probe_invocation(true, shelled),
            ("bash".to_string(), vec!["-c".to_string(), shelled.into()])
        );
        assert_eq!(
            probe_invocation(false, line),
            ("sh".to_string(), vec!["-c".to_string(), line.into()])
        );
    }
    use crate::agents::claude::claude_version;
    use crate::agents::codex::codex_version;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    #[test]
    fn versions_come_from_the_recorded_session_file_and_rollout() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::copy(
            format!("{FIXTURES}/claude/real-2.1.328/sessions-idle.json"),
            tmp.path().join("2861.json"),
        )
        .unwrap();
        assert_eq!(
            claude_version(tmp.path(), "33413ec6-95b9-4336-8b7d-2d91c4d8b30c").as_deref(),
            Some("2.1.328")
        );
        assert_eq!(claude_version(tmp.path(), "another"), None);
        let rollout = std::fs::read_dir(format!("{FIXTURES}/codex/real-0.169.0"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("rollout-"))
            .unwrap();
        assert_eq!(codex_version(&rollout).as_deref(), Some("0.169.0"));
    }

    #[test]
    #[cfg_attr(windows, ignore = "a shell script stands for the hook (sh)")]
    fn a_hook_that_exits_0_without_delivering_is_a_problem() {
        // `true` is what a hook that silently drops everything looks like from outside.
        let tmp = tempfile::tempdir().unwrap();
        let paths = TrayPaths::under(tmp.path());
        let finding = run(Agent::Claude, "cat >/dev/null; true", &paths);
        match finding {
            Finding::Problem(text) => {
                assert!(text.contains("never received its probe"), "{text}");
                assert!(text.contains("hook.log"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        // A command that fails says so, with the fix.
        match run(Agent::Codex, "exit 7", &paths) {
            Finding::Problem(text) => {
                assert!(text.contains("code 7"), "{text}");
                assert!(text.contains("agent-tray install --codex"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    #[cfg_attr(windows, ignore = "a shell script stands for the hook (sh)")]
    fn a_hung_command_is_killed_at_the_deadline() {
        let t = Instant::now();
        let outcome = run_command("sleep 30", b"{}", Duration::from_millis(200));
        assert_eq!(outcome, RunOutcome::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(5));
        // Positive control: a command that exits is reported with its code.
        assert_eq!(
            run_command("cat >/dev/null; exit 3", b"{}", Duration::from_secs(5)),
            RunOutcome::Exited(Some(3))
        );
    }
}
