//! Typing into a session's terminal: the way in of last resort, for an agent with no interface
//! of its own (Claude Code's terminal sessions), and only in a terminal that can be addressed
//! exactly: a tmux pane, named by its server's socket and its pane id.
//!
//! Why it is this careful: keys typed into the wrong place run as whatever reads them there (a
//! shell, an editor, another agent). So, right before typing, [`check_pane`] re-checks, from
//! facts read at that moment, that the pane still exists and is not in copy mode, that the
//! session's process is alive and the same one (its start token), that it runs inside that pane
//! (the pane's process is it or one of its ancestors), and that it holds the terminal (the
//! terminal's foreground process group is its own, so a suspended agent with a shell in front
//! is no target); and the engine re-reads the session's state (idle for a send). Any doubt
//! refuses with a sentence and types nothing.
//!
//! How the text arrives whole and as one prompt: it is put in a tmux buffer and pasted as a
//! bracketed paste (`paste-buffer -p`, the agent's prompt box takes the newlines as text), then
//! Enter; all three are **one tmux command list**, sent by one `tmux` run, so the tmux server
//! carries out all of them or none: our side killed mid-send leaves nothing half-typed. A leading
//! `/` or `!` would be a command in the agent's prompt box: unless the user asked for the
//! command, the agent's [`TerminalTalk::literal_lead`] goes before a `!`; where none makes it
//! text (or for `/`, which Claude Code, Gemini CLI and Copilot CLI all run however it is typed),
//! the text is refused without `--command`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::catalogue::TerminalTalk;
use crate::jump::tmux::{socket_from_env, TmuxLocation, TmuxServer};
use crate::model::Session;

use super::{PromptText, TalkFailure, TalkOrder};

/// The longest a tmux command may take before it is given up (it answers in milliseconds).
pub const TMUX_BUDGET: Duration = Duration::from_secs(3);

/// How long a send waits for the agent's screen to show its empty prompt box after the engine
/// saw it go idle.
pub const PROMPT_SETTLE: Duration = Duration::from_secs(1);

/// The tmux format read about the pane right before typing.
pub const PANE_FORMAT: &str = "#{pane_id} #{pane_pid} #{pane_in_mode} #{pane_dead}";

/// Where a session's pane is: the tmux server (its socket) and the pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxPlace {
    pub server: TmuxServer,
    /// The pane id (`%7`): with the server named, it names exactly one pane.
    pub pane: String,
}

/// The place of a session's pane, from its process's environment (`TMUX` names the server,
/// `TMUX_PANE` the pane; every process started in a tmux pane inherits both) or, where the
/// agent reported its location (`session:@window.%pane`) and the environment names the server,
/// from that. `None` when the session is in no tmux pane that can be named exactly.
pub fn tmux_place(reported: Option<&str>, environ: &[(String, String)]) -> Option<TmuxPlace> {
    let socket: PathBuf = socket_from_env(environ)?;
    let from_env = environ
        .iter()
        .find(|(k, _)| k == "TMUX_PANE")
        .map(|(_, v)| v.as_str())
        .filter(|p| is_pane_id(p));
    let pane = from_env.map(str::to_string).or_else(|| {
        reported
            .and_then(TmuxLocation::parse)
            .and_then(|l| l.pane().map(str::to_string))
    })?;
    Some(TmuxPlace {
        server: TmuxServer::Socket(socket),
        pane,
    })
}

fn is_pane_id(text: &str) -> bool {
    text.strip_prefix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// What tmux said about the pane ([`PANE_FORMAT`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneFacts {
    pub pane_id: String,
    pub pane_pid: u32,
    pub in_mode: bool,
    pub dead: bool,
}

impl PaneFacts {
    /// Reads tmux's answer to [`PANE_FORMAT`].
    pub fn parse(answer: &str) -> Option<Self> {
        let fields: Vec<&str> = answer.split_whitespace().collect();
        let [pane_id, pane_pid, in_mode, dead] = fields[..] else {
            return None;
        };
        Some(PaneFacts {
            pane_id: pane_id.to_string(),
            pane_pid: pane_pid.parse().ok()?,
            in_mode: in_mode != "0",
            dead: dead == "1",
        })
    }
}

/// What the system says about the session's process, read right before typing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessFacts {
    /// Alive, with this start token (`None`: gone).
    pub start_token: Option<String>,
    /// The process and its ancestors, nearest first.
    pub lineage: Vec<u32>,
    /// Whether its process group is its terminal's foreground group (`None`: not known here).
    pub holds_terminal: Option<bool>,
}

/// Whether keys may be typed into `place` for `session` now: `Err` says why not, as a sentence.
pub fn check_pane(
    session: &Session,
    place: &TmuxPlace,
    pane: Option<&PaneFacts>,
    process: &ProcessFacts,
) -> Result<(), String> {
    let name = crate::catalogue::entry(session.agent).display_name;
    let Some(pane) = pane else {
        return Err(format!("its tmux pane {} is gone", place.pane));
    };
    if pane.pane_id != place.pane {
        return Err(format!(
            "tmux answered for pane {} instead of {}",
            pane.pane_id, place.pane
        ));
    }
    if pane.dead {
        return Err(format!("its tmux pane {} has exited", place.pane));
    }
    let Some(pid) = session.pid else {
        return Err(format!("no {name} process is known for the session"));
    };
    let same_process = match (&process.start_token, &session.pid_start) {
        (None, _) => false,
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
    };
    if !same_process {
        return Err(format!(
            "its {name} process ({pid}) has ended: pane {} runs something else now",
            place.pane
        ));
    }
    if !process.lineage.contains(&pane.pane_pid) {
        return Err(format!(
            "pane {} does not run the session's {name} process ({pid}) any more",
            place.pane
        ));
    }
    if process.holds_terminal == Some(false) {
        return Err(format!(
            "{name} is not in front in pane {} (another program holds the terminal)",
            place.pane
        ));
    }
    if pane.in_mode {
        return Err(format!(
            "pane {} is in tmux's copy mode: keys would go to tmux, not to {name}",
            place.pane
        ));
    }
    Ok(())
}

/// The buffer name a send uses: one per engine process, deleted by the paste.
fn buffer_name() -> String {
    format!("agent-tray-{}", std::process::id())
}

/// The text typed for a prompt: a leading `!` gets the agent's literal lead unless the user
/// asked for the command; a leading `/` that the prompt box would run whatever is done is
/// refused (`Err`: why), unless the user asked for the command.
pub fn typed_text(prompt: &PromptText, talk: &TerminalTalk) -> Result<String, String> {
    let text = prompt.as_str();
    if prompt.command() || !prompt.starts_as_command() {
        return Ok(text.to_string());
    }
    if text.trim_start().starts_with('/') && !talk.slash_as_text {
        return Err(
            "its prompt box runs a text that begins with /word as its own command, \
             however it is typed: send it with --command to run that command, or begin the text \
             with other words; nothing was typed"
                .into(),
        );
    }
    match talk.literal_lead {
        Some(lead) => Ok(format!("{lead}{text}")),
        None => Err(
            "its prompt box runs a text that begins with ! in its shell, however it \
             is typed: send it with --command to run it, or begin the text with other words; \
             nothing was typed"
                .into(),
        ),
    }
}

/// Whether the agent's prompt box is empty and the agent idle at it, from the pane's text
/// (`capture-pane -p`): the box is the line between the last two `─` rules, and must be the
/// empty prompt exactly (a draft the user typed would be joined to ours; shell mode changes its
/// sign; a dialog has no box), and the status line under it must not say a turn runs.
pub fn prompt_is_empty(screen: &str, talk: &TerminalTalk) -> bool {
    let lines: Vec<&str> = screen.lines().collect();
    let is_rule = |l: &str| {
        let t = l.trim();
        t.chars().count() >= 8 && t.chars().all(|c| c == '─')
    };
    let rules: Vec<usize> = (0..lines.len()).filter(|i| is_rule(lines[*i])).collect();
    let [.., above, below] = rules[..] else {
        return false;
    };
    if below != above + 2 {
        return false; // a box of more than one line holds a draft
    }
    // Blanks (a no-break space among them) around the line are the box's drawing, not text.
    let box_line = lines[above + 1].trim();
    let empty = talk.empty_prompt.trim();
    // Where the agent shows a running turn differs (under the box, above it): anywhere counts.
    let busy = lines.iter().any(|l| l.contains(talk.busy_status));
    box_line == empty && !busy
}

/// The tmux arguments (after the server's) that carry out `order` in `place`, as one command
/// list: all or nothing.
pub fn order_args(
    place: &TmuxPlace,
    order: &TalkOrder,
    talk: &TerminalTalk,
) -> Result<Vec<String>, String> {
    let target = place.pane.clone();
    Ok(match order {
        TalkOrder::Send { prompt } => {
            let buffer = buffer_name();
            let text = typed_text(prompt, talk)?;
            let mut args: Vec<String> = vec![
                "set-buffer".into(),
                "-b".into(),
                buffer.clone(),
                "--".into(),
                text,
                ";".into(),
                // -p: a bracketed paste (newlines are text, not Enter); -r: newlines stay
                // newlines; -d: the buffer goes with the paste.
                "paste-buffer".into(),
                "-p".into(),
                "-r".into(),
                "-d".into(),
                "-b".into(),
                buffer,
                "-t".into(),
                target.clone(),
            ];
            if talk.enter_delay_ms == 0 {
                args.extend([
                    ";".into(),
                    "send-keys".into(),
                    "-t".into(),
                    target,
                    "Enter".into(),
                ]);
            } else {
                // Pressed by tmux's server after the delay (`-b`: a job of the server, not of
                // this client, so it happens even if our side is gone by then).
                args.extend([
                    ";".into(),
                    "run-shell".into(),
                    "-b".into(),
                    "-C".into(),
                    "-d".into(),
                    format!("{:.3}", talk.enter_delay_ms as f64 / 1000.0),
                    format!("send-keys -t {target} Enter"),
                ]);
            }
            args
        }
        TalkOrder::Stop => {
            let mut keys = talk.stop_keys.iter();
            let first = keys.next().copied().unwrap_or("Escape");
            let mut args = vec![
                "send-keys".to_string(),
                "-t".into(),
                target.clone(),
                first.into(),
            ];
            // The others 150 ms apart, pressed by tmux's server (see the delayed Enter).
            for (i, key) in keys.enumerate() {
                args.extend([
                    ";".into(),
                    "run-shell".into(),
                    "-b".into(),
                    "-C".into(),
                    "-d".into(),
                    format!("{:.3}", 0.15 * (i + 1) as f64),
                    format!("send-keys -t {target} {key}"),
                ]);
            }
            args
        }
    })
}

/// Reads the facts and, if [`check_pane`] passes and `still_allowed` (the session's state, read
/// again) does too, carries out `order` in one tmux run. Blocking: run it off the async threads.
pub fn carry_out(
    session: &Session,
    place: &TmuxPlace,
    order: &TalkOrder,
    talk: &TerminalTalk,
    still_allowed: impl Fn() -> Result<(), String>,
) -> Result<(), TalkFailure> {
    let args = order_args(place, order, talk).map_err(TalkFailure::Refused)?;
    // One tmux run reads both (a send needs the screen too): each run is a process start.
    let (mut pane, mut screen) = read_pane_and_screen(place, order.is_send());
    let process = session.pid.map(read_process).unwrap_or_default();
    // The hook that said "idle" can be a moment ahead of the screen (the box is redrawn after
    // the turn's last line): a send waits up to PROMPT_SETTLE for the empty box, re-reading.
    let settle_until = std::time::Instant::now() + PROMPT_SETTLE;
    while order.is_send()
        && !screen.as_deref().is_some_and(|s| prompt_is_empty(s, talk))
        && std::time::Instant::now() < settle_until
    {
        std::thread::sleep(Duration::from_millis(50));
        (pane, screen) = read_pane_and_screen(place, true);
    }
    check_pane(session, place, pane.as_ref(), &process)
        .map_err(|why| TalkFailure::Refused(format!("{why}; nothing was typed")))?;
    if order.is_send() && !screen.is_some_and(|s| prompt_is_empty(&s, talk)) {
        return Err(TalkFailure::Refused(format!(
            "{} is not idle at an empty prompt in pane {} (a draft is typed there, or a dialog \
             or a turn is on screen): nothing was typed",
            crate::catalogue::entry(session.agent).display_name,
            place.pane
        )));
    }
    still_allowed().map_err(TalkFailure::Refused)?;
    let mut command = place.server.command();
    command.args(args);
    let output = run_bounded(command)
        .map_err(|why| TalkFailure::NotDelivered(format!("tmux could not be run: {why}")))?;
    if output.0 {
        Ok(())
    } else {
        Err(TalkFailure::NotDelivered(format!(
            "tmux refused: {}",
            output.1.trim()
        )))
    }
}

/// Asks tmux about the pane ([`PANE_FORMAT`]) and, with `screen`, for its text as shown
/// (`capture-pane -p`), in one tmux run; `None`s when tmux cannot say (pane or server gone).
pub fn read_pane_and_screen(
    place: &TmuxPlace,
    screen: bool,
) -> (Option<PaneFacts>, Option<String>) {
    let mut command = place.server.command();
    command.args(["display-message", "-p", "-t", &place.pane, PANE_FORMAT]);
    if screen {
        command.args([";", "capture-pane", "-p", "-t", &place.pane]);
    }
    let Ok((true, out)) = run_bounded(command) else {
        return (None, None);
    };
    let (first, rest) = out.split_once('\n').unwrap_or((&out, ""));
    (PaneFacts::parse(first), screen.then(|| rest.to_string()))
}

/// Reads the session process's facts from the system.
pub fn read_process(pid: u32) -> ProcessFacts {
    let table = crate::process::SystemProcesses;
    let start_token = crate::process::ProcessTable::start_token(&table, pid);
    let lineage = crate::process::ancestry(&table, pid, 64)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect();
    ProcessFacts {
        start_token,
        lineage,
        holds_terminal: holds_terminal(pid),
    }
}

/// Whether `pid`'s process group is its terminal's foreground group (Linux: `/proc/<pid>/stat`
/// fields 5 and 8); `None` elsewhere or when it cannot be read.
#[cfg(target_os = "linux")]
fn holds_terminal(pid: u32) -> Option<bool> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = line.get(line.rfind(')')? + 1..)?;
    let fields: Vec<&str> = after.split_ascii_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8).
    let pgrp: i64 = fields.get(2)?.parse().ok()?;
    let tpgid: i64 = fields.get(5)?.parse().ok()?;
    Some(tpgid == pgrp)
}

#[cfg(not(target_os = "linux"))]
fn holds_terminal(_pid: u32) -> Option<bool> {
    None
}

/// Runs a terminal's command (`tmux`, `kitty @`) with `input` on its standard input (none:
/// nothing), bounded by [`TMUX_BUDGET`]: whether it succeeded, and what it printed (stdout, or
/// stderr when it failed; at most 4 MiB). The output is read while it runs (a pipe that fills
/// would stall it), and a command past its budget is killed.
pub(crate) fn run_program(
    mut command: Command,
    input: Option<Vec<u8>>,
) -> std::io::Result<(bool, String)> {
    use std::io::{Read, Write};
    let mut child = command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(4 << 20).read_to_end(&mut out);
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = std::time::Instant::now() + TMUX_BUDGET;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the terminal did not answer in time",
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    Ok((status.success(), if status.success() { out } else { err }))
}

fn run_bounded(command: Command) -> std::io::Result<(bool, String)> {
    run_program(command, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SessionState;
    use crate::test_support::session_in;

    const TALK: TerminalTalk = TerminalTalk {
        literal_lead: Some(" "),
        slash_as_text: false,
        empty_prompt: "❯\u{a0}",
        busy_status: "esc to interrupt",
        stop_keys: &["Escape"],
        enter_delay_ms: 0,
    };

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn place() -> TmuxPlace {
        TmuxPlace {
            server: TmuxServer::Socket("/tmp/tmux-1000/default".into()),
            pane: "%3".into(),
        }
    }

    fn agent_session() -> Session {
        let mut s = session_in(SessionState::Idle);
        s.pid = Some(500);
        s.pid_start = Some("t500".into());
        s
    }

    fn facts() -> (PaneFacts, ProcessFacts) {
        (
            PaneFacts {
                pane_id: "%3".into(),
                pane_pid: 400,
                in_mode: false,
                dead: false,
            },
            ProcessFacts {
                start_token: Some("t500".into()),
                lineage: vec![500, 400, 1],
                holds_terminal: Some(true),
            },
        )
    }

    #[test]
    fn the_place_is_the_server_and_the_pane_from_the_environment() {
        let e = env(&[("TMUX", "/tmp/tmux-1000/default,99,0"), ("TMUX_PANE", "%3")]);
        assert_eq!(tmux_place(None, &e), Some(place()));
        let no_pane = env(&[("TMUX", "/tmp/tmux-1000/default,99,0")]);
        assert_eq!(
            tmux_place(Some("work:@1.%3"), &no_pane),
            Some(place()),
            "the reported location gives the pane"
        );
        assert_eq!(
            tmux_place(Some("work:@1.%3"), &[]),
            None,
            "no server: no place"
        );
        let bad = env(&[("TMUX", "/s,1,0"), ("TMUX_PANE", "%3;kill")]);
        assert_eq!(tmux_place(None, &bad), None);
    }

    #[test]
    fn a_pane_that_still_runs_the_agent_in_front_passes() {
        let (pane, process) = facts();
        assert_eq!(
            check_pane(&agent_session(), &place(), Some(&pane), &process),
            Ok(())
        );
    }

    #[test]
    fn every_doubt_refuses() {
        let s = agent_session();
        let (pane, process) = facts();
        let refused = |pane: Option<&PaneFacts>, process: &ProcessFacts| {
            check_pane(&s, &place(), pane, process)
                .err()
                .unwrap_or_default()
        };
        assert!(refused(None, &process).contains("is gone"));
        let dead = PaneFacts {
            dead: true,
            ..pane.clone()
        };
        assert!(refused(Some(&dead), &process).contains("exited"));
        let other = PaneFacts {
            pane_id: "%0".into(),
            ..pane.clone()
        };
        assert!(refused(Some(&other), &process).contains("instead of"));
        let gone = ProcessFacts::default();
        assert!(refused(Some(&pane), &gone).contains("has ended"));
        let recycled = ProcessFacts {
            start_token: Some("t999".into()),
            ..process.clone()
        };
        assert!(refused(Some(&pane), &recycled).contains("has ended"));
        let elsewhere = ProcessFacts {
            lineage: vec![500, 77, 1],
            ..process.clone()
        };
        assert!(refused(Some(&pane), &elsewhere).contains("does not run"));
        let behind = ProcessFacts {
            holds_terminal: Some(false),
            ..process.clone()
        };
        assert!(refused(Some(&pane), &behind).contains("not in front"));
        let copying = PaneFacts {
            in_mode: true,
            ..pane.clone()
        };
        assert!(refused(Some(&copying), &process).contains("copy mode"));
        let mut no_pid = s.clone();
        no_pid.pid = None;
        assert!(check_pane(&no_pid, &place(), Some(&pane), &process).is_err());
    }

    #[test]
    fn a_send_is_one_command_list_and_a_command_stays_literal_unless_asked() {
        let prompt = PromptText::parse("!ls\nthen more", false).unwrap_or_else(|e| panic!("{e}"));
        let args = order_args(&place(), &TalkOrder::Send { prompt }, &TALK)
            .unwrap_or_else(|e| panic!("{e}"));
        let text_at = args.iter().position(|a| a == "--").map(|i| i + 1);
        assert_eq!(
            text_at.and_then(|i| args.get(i)).map(String::as_str),
            Some(" !ls\nthen more")
        );
        assert_eq!(args.iter().filter(|a| *a == ";").count(), 2, "{args:?}");
        assert!(args.ends_with(&["send-keys".into(), "-t".into(), "%3".into(), "Enter".into()]));
        let slash = PromptText::parse("/clear the cache", false).unwrap_or_else(|e| panic!("{e}"));
        assert!(typed_text(&slash, &TALK).is_err_and(|why| why.contains("--command")));
        let asked = PromptText::parse("/clear", true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(typed_text(&asked, &TALK).as_deref(), Ok("/clear"));
        assert_eq!(
            order_args(&place(), &TalkOrder::Stop, &TALK).unwrap_or_default(),
            ["send-keys", "-t", "%3", "Escape"]
        );
    }

    #[test]
    fn only_an_empty_prompt_box_with_the_idle_status_line_takes_typing() {
        let rule = "─".repeat(40);
        let screen = |box_lines: &[&str], status: &str| {
            let mut s = format!("● ok\n\n{rule}\n");
            for l in box_lines {
                s.push_str(l);
                s.push('\n');
            }
            s.push_str(&format!("{rule}\n{status}\n"));
            s
        };
        let idle = "  ⏸ manual mode on · ? for shortcuts";
        assert!(prompt_is_empty(&screen(&["❯\u{a0}"], idle), &TALK));
        assert!(!prompt_is_empty(
            &screen(&["❯\u{a0}user draft"], "  ⏸ manual mode on"),
            &TALK
        ));
        assert!(!prompt_is_empty(
            &screen(&["❯\u{a0}line one", "  line two"], idle),
            &TALK
        ));
        assert!(!prompt_is_empty(
            &screen(&["❯\u{a0}"], "  ⏸ manual mode on · esc to interrupt"),
            &TALK
        ));
        assert!(!prompt_is_empty(
            &screen(&["!\u{a0}"], "  ! for shell mode"),
            &TALK
        ));
        assert!(
            !prompt_is_empty("Do you want to proceed?\n❯ 1. Yes\n", &TALK),
            "a dialog: no box"
        );
        assert!(!prompt_is_empty("", &TALK));
        let marked_above = TerminalTalk {
            empty_prompt: ">   Type your message or @path/to/file",
            busy_status: "esc to cancel",
            ..TALK
        };
        let box_of = |line: &str, above: &str| {
            format!("{above}\n{rule}\n Shift+Tab to accept edits\n{rule}\n {line}\n{rule}\n workspace\n")
        };
        assert!(prompt_is_empty(
            &box_of(">   Type your message or @path/to/file", "✦ ok"),
            &marked_above
        ));
        assert!(!prompt_is_empty(
            &box_of("> my draft", "✦ ok"),
            &marked_above
        ));
        assert!(
            !prompt_is_empty(
                &box_of(
                    ">   Type your message or @path/to/file",
                    " ⠇ Thinking... (esc to cancel, 1s)"
                ),
                &marked_above
            ),
            "a turn shown above the box"
        );
    }

    #[test]
    fn with_no_literal_lead_a_bang_is_refused_and_a_second_stop_key_waits() {
        let no_lead = TerminalTalk {
            literal_lead: None,
            stop_keys: &["Escape", "Escape"],
            ..TALK
        };
        let bang = PromptText::parse("!ls", false).unwrap_or_else(|e| panic!("{e}"));
        assert!(typed_text(&bang, &no_lead).is_err_and(|why| why.contains("shell")));
        let asked = PromptText::parse("!ls", true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(typed_text(&asked, &no_lead).as_deref(), Ok("!ls"));
        assert_eq!(
            order_args(&place(), &TalkOrder::Stop, &no_lead).unwrap_or_default(),
            [
                "send-keys",
                "-t",
                "%3",
                "Escape",
                ";",
                "run-shell",
                "-b",
                "-C",
                "-d",
                "0.150",
                "send-keys -t %3 Escape"
            ]
        );
    }

    #[test]
    fn a_delayed_enter_is_a_job_of_tmuxs_server() {
        let slow = TerminalTalk {
            enter_delay_ms: 300,
            ..TALK
        };
        let prompt = PromptText::parse("hi", false).unwrap_or_else(|e| panic!("{e}"));
        let args = order_args(&place(), &TalkOrder::Send { prompt }, &slow)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            args.ends_with(&[
                "run-shell".into(),
                "-b".into(),
                "-C".into(),
                "-d".into(),
                "0.300".into(),
                "send-keys -t %3 Enter".into()
            ]),
            "{args:?}"
        );
    }

    #[test]
    fn tmux_answers_are_read_strictly() {
        assert_eq!(
            PaneFacts::parse("%3 400 0 0\n"),
            Some(PaneFacts {
                pane_id: "%3".into(),
                pane_pid: 400,
                in_mode: false,
                dead: false
            })
        );
        assert_eq!(PaneFacts::parse("%3 x 0 0"), None);
        assert_eq!(PaneFacts::parse(""), None);
    }
}
