//! Typing into a WezTerm pane: the terminal route where the session runs in WezTerm (not in
//! tmux inside it).
//!
//! **From WezTerm's documentation, not run here** (WezTerm is not packaged for Debian, so no test
//! drives a real one): `wezterm cli list --format json` lists the panes (`pane_id`, and where the
//! version says it, `tty_name`), `wezterm cli get-text --pane-id N` gives the screen, and
//! `wezterm cli send-text --pane-id N --no-paste` sends its standard input as it is. The pane is
//! the one the session's process names in its environment (`WEZTERM_PANE`), through the mux the
//! environment names (`WEZTERM_UNIX_SOCKET`, passed on). As for tmux and kitty: the pane must
//! still exist, the session's process be the same one and in front of its terminal (and on the
//! pane's tty where the list says it), the prompt box empty and the session idle; the text
//! wrapped in the bracketed-paste marks and Enter go as one `send-text`.

use std::path::PathBuf;
use std::process::Command;

use crate::catalogue::TerminalTalk;
use crate::model::Session;

use super::kitty::keys_for;
use super::terminal::{prompt_is_empty, read_process, run_program, ProcessFacts};
use super::{TalkFailure, TalkOrder};

/// Where a session's WezTerm pane is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WezTermPlace {
    /// The pane id (digits).
    pub pane: String,
    /// The mux socket the process's environment names, if any (else `wezterm cli` finds it).
    pub socket: Option<PathBuf>,
}

/// The WezTerm pane of a process, from its environment.
pub fn wezterm_place(environ: &[(String, String)]) -> Option<WezTermPlace> {
    let var = |name: &str| {
        environ
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let pane =
        var("WEZTERM_PANE").filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))?;
    let socket = var("WEZTERM_UNIX_SOCKET")
        .filter(|s| s.starts_with('/') && !s.chars().any(char::is_control))
        .map(PathBuf::from);
    Some(WezTermPlace {
        pane: pane.to_string(),
        socket,
    })
}

/// What `wezterm cli list --format json` says of the pane: `None` when it is not listed, else
/// its tty where the version tells it.
pub fn pane_tty(list: &str, pane: &str) -> Option<Option<String>> {
    let doc: serde_json::Value = serde_json::from_str(list).ok()?;
    let id: u64 = pane.parse().ok()?;
    doc.as_array()?
        .iter()
        .find(|p| p.get("pane_id").and_then(|i| i.as_u64()) == Some(id))
        .map(|p| {
            p.get("tty_name")
                .and_then(|t| t.as_str())
                .map(str::to_string)
        })
}

/// Whether keys may be typed into the pane for `session` now: `Err` says why not. `listed` is
/// [`pane_tty`]'s answer; `session_tty` the session process's terminal (`/dev/pts/N`).
pub fn check_pane(
    session: &Session,
    place: &WezTermPlace,
    listed: Option<Option<&str>>,
    session_tty: Option<&str>,
    process: &ProcessFacts,
) -> Result<(), String> {
    let name = crate::catalogue::entry(session.agent).display_name;
    let Some(tty) = listed else {
        return Err(format!("its WezTerm pane {} is gone", place.pane));
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
            "its {name} process ({pid}) has ended: WezTerm pane {} runs something else now",
            place.pane
        ));
    }
    if let (Some(pane_tty), Some(own)) = (tty, session_tty) {
        if pane_tty != own {
            return Err(format!(
                "{name} ({pid}) does not run on WezTerm pane {}'s terminal any more",
                place.pane
            ));
        }
    }
    if process.holds_terminal != Some(true) {
        return Err(format!(
            "{name} is not in front in WezTerm pane {} (another program holds the terminal)",
            place.pane
        ));
    }
    Ok(())
}

fn wezterm(place: &WezTermPlace, args: &[&str]) -> Command {
    let mut command = Command::new("wezterm");
    command.args(["cli"]).args(args);
    if let Some(socket) = &place.socket {
        command.env("WEZTERM_UNIX_SOCKET", socket);
    }
    command
}

/// Reads the facts and, if they allow it, types `order` into the pane in one `send-text`.
/// Blocking: run it off the async threads.
pub fn carry_out(
    session: &Session,
    place: &WezTermPlace,
    order: &TalkOrder,
    talk: &TerminalTalk,
    still_allowed: impl Fn() -> Result<(), String>,
) -> Result<(), TalkFailure> {
    let bytes = keys_for(order, talk).map_err(TalkFailure::Refused)?;
    let not_run = |e: std::io::Error| {
        TalkFailure::Refused(format!(
            "WezTerm could not be asked about pane {} ({e}; is wezterm on PATH?); nothing was typed",
            place.pane
        ))
    };
    let (ok, list) =
        run_program(wezterm(place, &["list", "--format", "json"]), None).map_err(not_run)?;
    let listed = if ok {
        pane_tty(&list, &place.pane)
    } else {
        None
    };
    let process = session.pid.map(read_process).unwrap_or_default();
    let own_tty = session.pid.and_then(crate::process::tty);
    check_pane(
        session,
        place,
        listed.as_ref().map(|t| t.as_deref()),
        own_tty.as_deref(),
        &process,
    )
    .map_err(|why| TalkFailure::Refused(format!("{why}; nothing was typed")))?;
    if order.is_send() {
        let (ok, screen) = run_program(
            wezterm(place, &["get-text", "--pane-id", &place.pane]),
            None,
        )
        .map_err(not_run)?;
        if !ok || !prompt_is_empty(&screen, talk) {
            return Err(TalkFailure::Refused(format!(
                "{} is not idle at an empty prompt in WezTerm pane {} (a draft is typed there, \
                 or a dialog or a turn is on screen): nothing was typed",
                crate::catalogue::entry(session.agent).display_name,
                place.pane
            )));
        }
    }
    still_allowed().map_err(TalkFailure::Refused)?;
    let (ok, said) = run_program(
        wezterm(
            place,
            &["send-text", "--pane-id", &place.pane, "--no-paste"],
        ),
        Some(bytes),
    )
    .map_err(|e| TalkFailure::NotDelivered(format!("wezterm could not be run: {e}")))?;
    if ok {
        Ok(())
    } else {
        Err(TalkFailure::NotDelivered(format!(
            "WezTerm refused: {}",
            said.trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SessionState;
    use crate::test_support::session_in;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_pane_and_its_mux_come_from_the_environment_in_their_shapes() {
        assert_eq!(
            wezterm_place(&env(&[
                ("WEZTERM_PANE", "7"),
                ("WEZTERM_UNIX_SOCKET", "/run/user/1000/wezterm/sock")
            ])),
            Some(WezTermPlace {
                pane: "7".into(),
                socket: Some("/run/user/1000/wezterm/sock".into())
            })
        );
        assert_eq!(
            wezterm_place(&env(&[("WEZTERM_PANE", "7")])).map(|p| p.socket),
            Some(None)
        );
        assert_eq!(wezterm_place(&env(&[("WEZTERM_PANE", "7 --x")])), None);
        assert_eq!(wezterm_place(&[]), None);
    }

    #[test]
    fn the_list_gives_the_pane_and_its_tty_where_the_version_tells_it() {
        // The shape of `wezterm cli list --format json` in WezTerm's documentation, with the
        // `tty_name` newer versions add.
        let list = r#"[{"window_id":0,"tab_id":0,"pane_id":0,"workspace":"default","size":{"rows":24,"cols":80},"title":"t","cwd":"file://h/p"},
                       {"window_id":0,"tab_id":1,"pane_id":7,"workspace":"default","size":{"rows":24,"cols":80},"title":"claude","cwd":"file://h/p","tty_name":"/dev/pts/4"}]"#;
        assert_eq!(pane_tty(list, "7"), Some(Some("/dev/pts/4".into())));
        assert_eq!(pane_tty(list, "0"), Some(None));
        assert_eq!(pane_tty(list, "9"), None);
    }

    #[test]
    fn only_the_sessions_own_process_in_front_on_the_panes_tty_takes_keys() {
        let mut s = session_in(SessionState::Idle);
        s.pid = Some(500);
        s.pid_start = Some("t".into());
        let place = WezTermPlace {
            pane: "7".into(),
            socket: None,
        };
        let front = ProcessFacts {
            start_token: Some("t".into()),
            lineage: vec![500],
            holds_terminal: Some(true),
        };
        let tty = Some("/dev/pts/4");
        assert_eq!(check_pane(&s, &place, Some(tty), tty, &front), Ok(()));
        assert_eq!(
            check_pane(&s, &place, Some(None), tty, &front),
            Ok(()),
            "an older list names no tty"
        );
        assert!(check_pane(&s, &place, None, tty, &front).is_err_and(|w| w.contains("gone")));
        assert!(
            check_pane(&s, &place, Some(Some("/dev/pts/9")), tty, &front)
                .is_err_and(|w| w.contains("terminal"))
        );
        let behind = ProcessFacts {
            holds_terminal: Some(false),
            ..front.clone()
        };
        assert!(check_pane(&s, &place, Some(tty), tty, &behind)
            .is_err_and(|w| w.contains("not in front")));
        let unknown = ProcessFacts {
            holds_terminal: None,
            ..front
        };
        assert!(
            check_pane(&s, &place, Some(tty), tty, &unknown).is_err(),
            "not known is no yes"
        );
    }
}
