//! The command lines that take the user to a remote session: built here, from the configured
//! destination and the session's checked fields, every word shell-quoted.
//!
//! Two shells read them: the local one (when the user pastes a copied command) and the remote
//! login shell (which `ssh` hands its command string to). So the remote command is one string of
//! quoted words, and the whole line is quoted again for the local shell. Nothing a remote sent is
//! ever a program name here: the programs are `ssh`, `tmux` and the agent's own CLI; the remote's
//! values (a tmux location, a folder) are only ever quoted arguments, and a tmux location must
//! parse as `session:@window.%pane` first.

use crate::model::Session;

/// `word` as one shell word: unchanged when it is made of characters no shell treats specially,
/// else in single quotes (a `'` inside written as `'\''`).
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'-' | b'_' | b'.' | b'/' | b'@' | b':' | b',' | b'+' | b'='
                )
        });
    if plain {
        return word.to_string();
    }
    if word.is_empty() {
        return "''".to_string();
    }
    // Single quotes keep everything literal in sh, bash and zsh, and everything but `\'` and
    // `\\` in fish, where a backslash before the closing quote would escape it (a folder named
    // `x\` then ran what followed). So neither a quote nor a backslash ever goes inside them:
    // each is written outside, as `\'` or `\\`, which all four shells read as the character.
    let mut out = String::with_capacity(word.len() + 2);
    let mut open = false;
    for c in word.chars() {
        if c == '\'' || c == '\\' {
            if open {
                out.push('\'');
                open = false;
            }
            out.push('\\');
            out.push(c);
        } else {
            if !open {
                out.push('\'');
                open = true;
            }
            out.push(c);
        }
    }
    if open {
        out.push('\'');
    }
    out
}

fn join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tmux location `session:@window.%pane`, checked as the local jump checks it.
fn tmux_parts(location: &str) -> Option<(String, String, Option<String>)> {
    let (session, rest) = location.trim().rsplit_once(':')?;
    if session.is_empty()
        || session.starts_with('-')
        || session.contains('.')
        || session.chars().any(char::is_control)
    {
        return None;
    }
    let (window, pane) = match rest.split_once('.') {
        Some((w, p)) => (w, Some(p)),
        None => (rest, None),
    };
    let is_id = |s: &str, sigil: char| {
        s.strip_prefix(sigil)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    if !is_id(window, '@') || !pane.is_none_or(|p| is_id(p, '%')) {
        return None;
    }
    Some((
        session.to_string(),
        window.to_string(),
        pane.map(str::to_string),
    ))
}

/// `ssh -t` as the remote's link runs ssh: the same program (`AGENT_TRAY_SSH`) and config
/// (`AGENT_TRAY_SSH_CONFIG`, as `-F`), so a host alias resolves to the machine the link talks to.
fn ssh_words(ssh: &super::link::SshCommand) -> Vec<String> {
    let mut words = vec![ssh.program.display().to_string(), "-t".into()];
    if let Some(config) = &ssh.config_file {
        words.push("-F".into());
        words.push(config.display().to_string());
    }
    words
}

/// The argv that opens the remote session's place: `ssh -t -- DESTINATION <remote command>`,
/// where the remote command attaches its tmux pane, or else opens a login shell in its folder.
/// `None` when the session names neither.
pub fn jump_argv(
    ssh: &super::link::SshCommand,
    destination: &str,
    session: &Session,
) -> Option<Vec<String>> {
    let remote = if let Some((name, window, pane)) = session.tmux.as_deref().and_then(tmux_parts) {
        let mut words = vec![
            "tmux".to_string(),
            "attach".into(),
            "-t".into(),
            name.clone(),
        ];
        words.extend([
            ";".into(),
            "select-window".into(),
            "-t".into(),
            format!("{name}:{window}"),
        ]);
        if let Some(pane) = pane {
            words.extend([";".into(), "select-pane".into(), "-t".into(), pane]);
        }
        join(&words)
    } else {
        let cwd = session.cwd.as_deref().filter(|c| c.starts_with('/'))?;
        format!("cd {} && exec \"$SHELL\" -l", shell_quote(cwd))
    };
    let mut argv = ssh_words(ssh);
    argv.extend(["--".into(), destination.to_string(), remote]);
    Some(argv)
}

/// The command a remote's login shell runs to answer one of its requests, sent by this
/// machine's tray over the link's ssh: `agent-tray allow|deny ID … --over-ssh`, every word
/// quoted for sh, bash, zsh and fish alike (the message is the user's free text). The remote
/// refuses it unless its user turned answering over ssh on there.
pub fn answer_command(request_id: &str, answer: &crate::answering::Answer) -> String {
    use crate::answering::Answer;
    let mut words: Vec<String> = vec!["agent-tray".into()];
    match answer {
        Answer::Allow => words.push("allow".into()),
        Answer::AllowForSession => words.extend(["allow".into(), "--for-session".into()]),
        Answer::Deny { message } => {
            words.push("deny".into());
            // One word with `=`: a message that begins with `-` is never read as an option.
            if let Some(message) = message {
                words.push(format!("--message={message}"));
            }
        }
        Answer::Dismiss => words.extend(["answer".into(), "--cancel".into()]),
        // Never sent over ssh: a remote's session is stopped with `stop` there.
        Answer::Stop => words.push("deny".into()),
        Answer::Questions { answers } => {
            words.push("answer".into());
            // Each question's answers after its number, every value one word with `=`.
            for (i, a) in answers.iter().enumerate() {
                words.push(format!("--question={}", i + 1));
                words.extend(a.choices.iter().map(|c| format!("--choice={c}")));
                words.extend(a.text.iter().map(|t| format!("--text={t}")));
            }
        }
    }
    // The id last, after `--`: whatever a remote named its request, it is never an option.
    words.extend(["--over-ssh".into(), "--".into(), request_id.into()]);
    join(&words)
}

/// The command a remote's login shell runs to give one of its sessions a prompt or a stop, sent
/// by this machine's tray over the link's ssh: `agent-tray send --over-ssh --file - [--command]
/// -- ID` (the text follows on standard input, never on a command line) or `agent-tray stop
/// --over-ssh -- ID`. The remote refuses it unless its user turned answering over ssh on there.
pub fn talk_command(session_id: &str, order: &crate::talk_back::TalkOrder) -> String {
    use crate::talk_back::TalkOrder;
    let mut words: Vec<String> = vec!["agent-tray".into()];
    match order {
        TalkOrder::Send { prompt } => {
            words.extend(["send".into(), "--file".into(), "-".into()]);
            if prompt.command() {
                words.push("--command".into());
            }
        }
        TalkOrder::Stop => words.push("stop".into()),
    }
    words.extend(["--over-ssh".into(), "--".into(), session_id.into()]);
    join(&words)
}

/// [`jump_argv`] as one line to paste into a terminal (where no terminal can be opened).
pub fn jump_command_line(
    ssh: &super::link::SshCommand,
    destination: &str,
    session: &Session,
) -> Option<String> {
    jump_argv(ssh, destination, session).map(|argv| join(&argv))
}

/// A resume command (as [`crate::tray_model::resume_command`] makes it) run on the remote:
/// `ssh -t -- DESTINATION '<resume command>'`.
pub fn wrap_resume(
    ssh: &super::link::SshCommand,
    destination: &str,
    resume_command: &str,
) -> String {
    let mut argv = ssh_words(ssh);
    argv.extend([
        "--".into(),
        destination.to_string(),
        resume_command.to_string(),
    ]);
    join(&argv)
}

/// The window's rows with every remote session's resume command wrapped to run on its remote
/// (its destination from `links`; a row whose remote is gone keeps the bare command), through
/// the same ssh as the links.
pub fn wrap_remote_rows(
    rows: &mut [crate::tray_model::SessionView],
    links: &super::link::RemoteLinks,
    ssh: &super::link::SshCommand,
) {
    for row in rows {
        if let Some(destination) = row
            .session
            .host
            .as_deref()
            .and_then(|host| links.destination_of(host))
        {
            row.resume_command = wrap_resume(ssh, &destination, &row.resume_command);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, SessionState};
    use crate::remote::link::SshCommand;

    /// What `shell` makes of `line`: the words it passes to printf, NUL-separated.
    fn words_in(shell: &str, line: &str) -> Vec<String> {
        let out = std::process::Command::new(shell)
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {shell} ({e}): install it (scripts/setup.sh --test)")
            });
        assert!(
            out.status.success(),
            "{shell} refused {line:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    }

    // An answer sent to a remote's login shell: the user's message, whatever it holds, arrives as
    // one word in every shell, and the id can never be read as an option.
    #[test]
    #[cfg_attr(
        windows,
        ignore = "reads the quoting back with the unix shells a remote runs (sh, dash, bash, zsh, fish)"
    )]
    fn an_answer_sent_over_ssh_reads_back_as_the_same_words_in_every_shell() {
        use crate::answering::Answer;
        let message = "it's \"rm -rf /\"; $(touch pwn) `id` \\ -x";
        let cases = [
            (
                Answer::Allow,
                vec!["agent-tray", "allow", "--over-ssh", "--", "r3-ab12"],
            ),
            (
                Answer::AllowForSession,
                vec![
                    "agent-tray",
                    "allow",
                    "--for-session",
                    "--over-ssh",
                    "--",
                    "r3-ab12",
                ],
            ),
            (
                Answer::Dismiss,
                vec![
                    "agent-tray",
                    "answer",
                    "--cancel",
                    "--over-ssh",
                    "--",
                    "r3-ab12",
                ],
            ),
        ];
        for shell in ["sh", "dash", "bash", "zsh", "fish"] {
            for (answer, want) in &cases {
                assert_eq!(words_in(shell, &answer_command("r3-ab12", answer)), *want);
            }
            let deny = Answer::Deny {
                message: Some(message.into()),
            };
            let words = words_in(shell, &answer_command("-r3", &deny));
            let flag = format!("--message={message}");
            let want = [
                "agent-tray",
                "deny",
                flag.as_str(),
                "--over-ssh",
                "--",
                "-r3",
            ];
            assert_eq!(words, want, "{shell}");
            let answers = Answer::Questions {
                answers: vec![
                    crate::answering::QuestionAnswer {
                        choices: vec!["it's \"A\"".into()],
                        text: None,
                    },
                    crate::answering::QuestionAnswer {
                        choices: vec![],
                        text: Some(message.into()),
                    },
                ],
            };
            let text_flag = format!("--text={message}");
            let want = [
                "agent-tray",
                "answer",
                "--question=1",
                "--choice=it's \"A\"",
                "--question=2",
                text_flag.as_str(),
                "--over-ssh",
                "--",
                "r3-ab12",
            ];
            let words = words_in(shell, &answer_command("r3-ab12", &answers));
            assert_eq!(words, want, "{shell}");
        }
    }

    // Reported: a remote folder named `/tmp/';touch pwn;\` ran `touch pwn` under fish, which
    // reads `\'` inside single quotes as an escaped quote. Every word quoted here reads back as
    // exactly itself in sh, dash, bash, zsh and fish, and creates nothing.
    #[test]
    #[cfg_attr(
        windows,
        ignore = "reads the quoting back with the unix shells a remote runs (sh, dash, bash, zsh, fish)"
    )]
    fn a_quoted_word_is_that_word_in_every_shell_debian_packages() {
        let dir = tempfile::tempdir().unwrap();
        let pwn = dir.path().join("pwn");
        let hostile = [
            format!("/tmp/';touch {};\\", pwn.display()),
            format!("a\\'; touch {} #", pwn.display()),
            "it's here".to_string(),
            "back\\slash\\".to_string(),
            "$(id) `id` $HOME *".to_string(),
            "two\nlines".to_string(),
            "\\\\'\\".to_string(),
            "é ü 日本".to_string(),
            String::new(),
        ];
        for shell in ["sh", "dash", "bash", "zsh", "fish"] {
            for word in &hostile {
                let line = format!("{} {}", shell_quote(word), shell_quote("end"));
                assert_eq!(
                    words_in(shell, &line),
                    [word.as_str(), "end"]
                        .iter()
                        .filter(|w| !w.is_empty())
                        .map(|w| w.to_string())
                        .collect::<Vec<_>>(),
                    "{shell} read {line:?} otherwise"
                );
            }
        }
        assert!(!pwn.exists(), "a quoted word ran a command");
    }

    // Reported: Jump and Copy resume ran plain `ssh`, without the link's program and config, so
    // an alias could resolve to another host than the one the link talks to.
    #[test]
    fn jump_and_resume_use_the_links_own_ssh_program_and_config() {
        let ssh = SshCommand {
            program: "/opt/bin/my-ssh".into(),
            config_file: Some("/home/dev/.config/agent-tray/ssh config".into()),
        };
        let argv = jump_argv(&ssh, "devbox", &remote_session(None, Some("/srv/api"))).unwrap();
        assert_eq!(
            argv[..6],
            [
                "/opt/bin/my-ssh",
                "-t",
                "-F",
                "/home/dev/.config/agent-tray/ssh config",
                "--",
                "devbox"
            ]
        );
        let resume = wrap_resume(&ssh, "devbox", "claude --resume abc-1");
        let words = shlex::split(&resume).unwrap();
        assert_eq!(
            words,
            [
                "/opt/bin/my-ssh",
                "-t",
                "-F",
                "/home/dev/.config/agent-tray/ssh config",
                "--",
                "devbox",
                "claude --resume abc-1"
            ]
        );
    }

    fn remote_session(tmux: Option<&str>, cwd: Option<&str>) -> Session {
        let mut s = Session::new(
            "abc-1",
            Agent::Claude,
            SessionState::Idle,
            chrono::Utc::now(),
        );
        s.host = Some("devbox".into());
        s.tmux = tmux.map(String::from);
        s.cwd = cwd.map(String::from);
        s
    }

    #[test]
    fn a_remote_tmux_session_jumps_through_ssh_to_its_pane() {
        let argv = jump_argv(
            &SshCommand::default(),
            "dev@devbox",
            &remote_session(Some("work:@3.%7"), None),
        )
        .unwrap();
        assert_eq!(argv[..4], ["ssh", "-t", "--", "dev@devbox"]);
        assert_eq!(
            argv[4],
            "tmux attach -t work ';' select-window -t work:@3 ';' select-pane -t '%7'"
        );
        // What the remote shell reads splits back into exactly those words.
        let words = shlex::split(&argv[4]).unwrap();
        assert_eq!(words[..4], ["tmux", "attach", "-t", "work"]);
    }

    #[test]
    fn remote_values_are_quoted_words_never_commands() {
        // A crafted tmux session name is one quoted word to tmux, never shell syntax.
        let s = remote_session(Some("x$(touch p):@1"), None);
        let local = shlex::split(&jump_command_line(&SshCommand::default(), "devbox", &s).unwrap())
            .unwrap();
        let remote = shlex::split(&local[4]).unwrap();
        assert_eq!(remote[..4], ["tmux", "attach", "-t", "x$(touch p)"]);
        // A location that does not parse is not used: the folder is, quoted twice over.
        let s = remote_session(Some("x.y:@1;id"), Some("/srv/a'b; rm -rf ~"));
        let line = jump_command_line(&SshCommand::default(), "devbox", &s).unwrap();
        let local = shlex::split(&line).unwrap();
        assert_eq!(local.len(), 5);
        let remote = shlex::split(&local[4]).unwrap();
        assert_eq!(remote[..2], ["cd", "/srv/a'b; rm -rf ~"]);
        assert_eq!(
            jump_argv(
                &SshCommand::default(),
                "devbox",
                &remote_session(None, Some("relative"))
            ),
            None
        );
    }

    #[test]
    fn a_resume_command_is_wrapped_to_run_on_the_remote() {
        let line = wrap_resume(
            &SshCommand::default(),
            "dev@devbox",
            "claude --resume abc-1",
        );
        assert_eq!(line, "ssh -t -- dev@devbox 'claude --resume abc-1'");
        let words = shlex::split(&line).unwrap();
        assert_eq!(words[4], "claude --resume abc-1");
    }
    #[test]
    fn remote_rows_resume_through_ssh_and_local_rows_stay_as_they_are() {
        use crate::remote::link::{LinkState, RemoteLinkStatus, RemoteLinks};
        use crate::tray_model::SessionView;
        let links = RemoteLinks::default();
        links.set(RemoteLinkStatus {
            name: "devbox".into(),
            destination: "dev@devbox".into(),
            state: LinkState::Connected,
            since: chrono::Utc::now(),
            message: None,
            sessions: 1,
            remote_version: None,
        });
        let local = Session::new("l-1", Agent::Codex, SessionState::Idle, chrono::Utc::now());
        let mut rows = vec![
            SessionView::of(&remote_session(None, None)),
            SessionView::of(&local),
        ];
        wrap_remote_rows(&mut rows, &links, &SshCommand::default());
        assert_eq!(
            rows[0].resume_command,
            "ssh -t -- dev@devbox 'claude --resume abc-1'"
        );
        assert_eq!(rows[1].resume_command, "codex resume l-1");
    }
}
