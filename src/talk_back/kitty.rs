//! Typing into a kitty window: the terminal route where the session runs in kitty (not in tmux
//! inside it) and kitty listens for remote control.
//!
//! kitty is reached only through the socket it names in its children's environment
//! (`KITTY_LISTEN_ON`, set when kitty runs with `--listen-on unix:…` and remote control is
//! allowed) and the window it names there (`KITTY_WINDOW_ID`); a kitty that does not listen is
//! not typed into (that is the user's choice, and `kitty @` from outside its windows needs it).
//! Seen with kitty 0.26.5 under Xvfb: `kitty @ --to … ls` lists every window with its
//! `foreground_processes`, `get-text --match id:N` gives the screen, and `send-text --match id:N
//! --stdin` sends the bytes as they are, in one write: the text wrapped in the bracketed-paste
//! marks and Enter go as **one** `send-text`, so our side killed mid-send leaves nothing
//! half-typed. Right before typing the same rules as tmux's hold ([`super::terminal`]): the
//! window still exists, the session's process (same start) is one of its foreground processes,
//! the prompt box is empty, the session idle. An agent whose Enter must come later than its
//! paste (Gemini CLI, Copilot CLI) is not typed into here: only tmux's server can hold a delayed
//! Enter for us.

use std::process::Command;

use crate::catalogue::TerminalTalk;
use crate::model::Session;

use super::terminal::{prompt_is_empty, read_process, run_program, typed_text, ProcessFacts};
use super::{TalkFailure, TalkOrder};

/// Where a session's kitty window is: kitty's socket and the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KittyPlace {
    /// `unix:/path` (or `unix:@abstract`), as `kitty @ --to` takes it.
    pub to: String,
    /// The window id (digits).
    pub window: String,
}

/// The kitty window of a process, from its environment; `None` unless both the window and the
/// socket are named, and named in their shapes.
pub fn kitty_place(environ: &[(String, String)]) -> Option<KittyPlace> {
    let var = |name: &str| {
        environ
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let window = var("KITTY_WINDOW_ID")
        .filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))?;
    let to = var("KITTY_LISTEN_ON").filter(|s| {
        s.strip_prefix("unix:").is_some_and(|p| {
            (p.starts_with('/') || p.starts_with('@')) && !p.chars().any(char::is_control)
        })
    })?;
    Some(KittyPlace {
        to: to.to_string(),
        window: window.to_string(),
    })
}

/// What `kitty @ ls` says of the window: the pids of its foreground processes. `None` when the
/// answer does not parse or names no such window.
pub fn window_foreground(ls: &str, window: &str) -> Option<Vec<u32>> {
    let doc: serde_json::Value = serde_json::from_str(ls).ok()?;
    let id: u64 = window.parse().ok()?;
    doc.as_array()?
        .iter()
        .flat_map(|os| {
            os.get("tabs")
                .and_then(|t| t.as_array())
                .into_iter()
                .flatten()
        })
        .flat_map(|tab| {
            tab.get("windows")
                .and_then(|w| w.as_array())
                .into_iter()
                .flatten()
        })
        .find(|w| w.get("id").and_then(|i| i.as_u64()) == Some(id))
        .map(|w| {
            w.get("foreground_processes")
                .and_then(|p| p.as_array())
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("pid").and_then(|pid| pid.as_u64()))
                .filter_map(|pid| u32::try_from(pid).ok())
                .collect()
        })
}

/// Whether keys may be typed into the window for `session` now: `Err` says why not.
pub fn check_window(
    session: &Session,
    place: &KittyPlace,
    foreground: Option<&[u32]>,
    process: &ProcessFacts,
) -> Result<(), String> {
    let name = crate::catalogue::entry(session.agent).display_name;
    let Some(foreground) = foreground else {
        return Err(format!("its kitty window {} is gone", place.window));
    };
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
            "its {name} process ({pid}) has ended: kitty window {} runs something else now",
            place.window
        ));
    }
    if !foreground.contains(&pid) {
        return Err(format!(
            "{name} ({pid}) is not in front in kitty window {} (another program holds it)",
            place.window
        ));
    }
    Ok(())
}

/// The bytes one `send-text` writes for `order`: a prompt as one bracketed paste and Enter, a
/// stop as its key; `Err` when this agent cannot be typed into here.
pub fn keys_for(order: &TalkOrder, talk: &TerminalTalk) -> Result<Vec<u8>, String> {
    match order {
        TalkOrder::Send { prompt } => {
            if talk.enter_delay_ms > 0 {
                return Err(
                    "its prompt box needs the Enter a moment after the paste, which only \
                     tmux can hold for us: run it in tmux to send it prompts; nothing was typed"
                        .into(),
                );
            }
            let text = typed_text(prompt, talk)?;
            let mut bytes = b"\x1b[200~".to_vec();
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(b"\x1b[201~\r");
            Ok(bytes)
        }
        TalkOrder::Stop => match talk.stop_keys {
            ["Escape"] => Ok(b"\x1b".to_vec()),
            _ => Err(
                "its stop is not a single Esc, which is all that is typed into kitty; \
                 nothing was typed"
                    .into(),
            ),
        },
    }
}

fn kitty(place: &KittyPlace, args: &[&str]) -> Command {
    let mut command = Command::new("kitty");
    command.args(["@", "--to", &place.to]).args(args);
    command
}

/// Reads the facts and, if they allow it, types `order` into the window in one `send-text`.
/// Blocking: run it off the async threads.
pub fn carry_out(
    session: &Session,
    place: &KittyPlace,
    order: &TalkOrder,
    talk: &TerminalTalk,
    still_allowed: impl Fn() -> Result<(), String>,
) -> Result<(), TalkFailure> {
    let bytes = keys_for(order, talk).map_err(TalkFailure::Refused)?;
    let not_run = |e: std::io::Error| {
        TalkFailure::Refused(format!(
            "kitty could not be asked about window {} ({e}; is kitty on PATH?); nothing was typed",
            place.window
        ))
    };
    let (ok, ls) = run_program(kitty(place, &["ls"]), None).map_err(not_run)?;
    let foreground = if ok {
        window_foreground(&ls, &place.window)
    } else {
        None
    };
    let process = session.pid.map(read_process).unwrap_or_default();
    check_window(session, place, foreground.as_deref(), &process)
        .map_err(|why| TalkFailure::Refused(format!("{why}; nothing was typed")))?;
    if order.is_send() {
        let matcher = format!("id:{}", place.window);
        let (ok, screen) =
            run_program(kitty(place, &["get-text", "--match", &matcher]), None).map_err(not_run)?;
        if !ok || !prompt_is_empty(&screen, talk) {
            return Err(TalkFailure::Refused(format!(
                "{} is not idle at an empty prompt in kitty window {} (a draft is typed there, \
                 or a dialog or a turn is on screen): nothing was typed",
                crate::catalogue::entry(session.agent).display_name,
                place.window
            )));
        }
    }
    still_allowed().map_err(TalkFailure::Refused)?;
    let matcher = format!("id:{}", place.window);
    let (ok, said) = run_program(
        kitty(place, &["send-text", "--match", &matcher, "--stdin"]),
        Some(bytes),
    )
    .map_err(|e| TalkFailure::NotDelivered(format!("kitty could not be run: {e}")))?;
    if ok {
        Ok(())
    } else {
        Err(TalkFailure::NotDelivered(format!(
            "kitty refused: {}",
            said.trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SessionState;
    use crate::talk_back::PromptText;
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

    #[test]
    fn the_window_and_the_socket_come_from_the_environment_in_their_shapes() {
        let place = kitty_place(&env(&[
            ("KITTY_WINDOW_ID", "3"),
            ("KITTY_LISTEN_ON", "unix:/tmp/kitty-1"),
        ]));
        assert_eq!(
            place,
            Some(KittyPlace {
                to: "unix:/tmp/kitty-1".into(),
                window: "3".into()
            })
        );
        assert_eq!(
            kitty_place(&env(&[("KITTY_WINDOW_ID", "3")])),
            None,
            "a kitty that does not listen"
        );
        assert_eq!(
            kitty_place(&env(&[
                ("KITTY_WINDOW_ID", "3;x"),
                ("KITTY_LISTEN_ON", "unix:/s")
            ])),
            None
        );
        assert_eq!(
            kitty_place(&env(&[
                ("KITTY_WINDOW_ID", "3"),
                ("KITTY_LISTEN_ON", "tcp:localhost:1")
            ])),
            None
        );
    }

    #[test]
    fn kittys_window_list_gives_the_foreground_pids_of_that_window_only() {
        // The shape `kitty @ ls` printed (0.26.5), trimmed.
        let ls = r#"[{"id":1,"tabs":[{"id":1,"windows":[
            {"id":1,"pid":400,"foreground_processes":[{"pid":400,"cmdline":["sh"]},{"pid":500,"cmdline":["claude"]}]},
            {"id":2,"pid":600,"foreground_processes":[{"pid":600,"cmdline":["bash"]}]}]}]}]"#;
        assert_eq!(window_foreground(ls, "1"), Some(vec![400, 500]));
        assert_eq!(window_foreground(ls, "2"), Some(vec![600]));
        assert_eq!(window_foreground(ls, "9"), None);
        assert_eq!(window_foreground("not json", "1"), None);
    }

    #[test]
    fn only_the_sessions_own_process_in_front_of_its_window_takes_keys() {
        let mut s = session_in(SessionState::Idle);
        s.pid = Some(500);
        s.pid_start = Some("t".into());
        let place = KittyPlace {
            to: "unix:/k".into(),
            window: "1".into(),
        };
        let alive = ProcessFacts {
            start_token: Some("t".into()),
            lineage: vec![500, 400],
            holds_terminal: Some(true),
        };
        assert_eq!(check_window(&s, &place, Some(&[400, 500]), &alive), Ok(()));
        assert!(check_window(&s, &place, Some(&[400, 777]), &alive)
            .is_err_and(|w| w.contains("not in front")));
        assert!(check_window(&s, &place, None, &alive).is_err_and(|w| w.contains("gone")));
        let recycled = ProcessFacts {
            start_token: Some("u".into()),
            ..alive
        };
        assert!(
            check_window(&s, &place, Some(&[500]), &recycled).is_err_and(|w| w.contains("ended"))
        );
    }

    #[test]
    fn a_prompt_is_one_paste_and_enter_and_a_delayed_enter_is_refused() {
        let prompt = PromptText::parse("two\nlines", false).unwrap_or_else(|e| panic!("{e}"));
        let send = TalkOrder::Send { prompt };
        assert_eq!(
            keys_for(&send, &TALK).unwrap_or_default(),
            b"\x1b[200~two\nlines\x1b[201~\r".to_vec()
        );
        assert_eq!(
            keys_for(&TalkOrder::Stop, &TALK).unwrap_or_default(),
            b"\x1b".to_vec()
        );
        let slow = TerminalTalk {
            enter_delay_ms: 300,
            ..TALK
        };
        assert!(keys_for(&send, &slow).is_err_and(|w| w.contains("tmux")));
    }
}
