//! Which terminal a session runs in, and how to bring its tab or pane to the front: the part of
//! a jump that addresses a terminal emulator rather than a folder.
//!
//! Why a decision plus an action: what a terminal exposes differs per program and platform, and
//! none of it can be tested on a machine that lacks the terminal. So the detection reads only
//! facts handed in (the agent's environment and the names of its ancestors, nearest first), and
//! the result is a list of programs to run ([`focus_launches`]); both are pure and tested on
//! recorded environments. Running the list is the desktop shell's job (its `actions`).
//!
//! What each terminal tells its children, and what addresses a tab from outside:
//! - **kitty**: `KITTY_WINDOW_ID`, and `KITTY_LISTEN_ON` when remote control listens on a socket
//!   (`allow_remote_control` + `listen_on`): `kitty @ --to <socket> focus-window --match id:<N>`.
//!   Without a socket kitty cannot be reached from outside its own windows.
//! - **WezTerm**: `WEZTERM_PANE`: `wezterm cli activate-pane --pane-id <N>`.
//! - **zellij** (a multiplexer, like tmux): `ZELLIJ_SESSION_NAME`, `ZELLIJ_PANE_ID`:
//!   `zellij --session <s> action focus-pane-id terminal_<N>`.
//! - **Terminal.app** (`TERM_PROGRAM=Apple_Terminal`) and **iTerm2** (`TERM_PROGRAM=iTerm.app`,
//!   `ITERM_SESSION_ID`): AppleScript, finding the tab whose `tty` is the agent's terminal
//!   device; when none has it, a new window in the session's folder. Every piece of session text
//!   in a script is an AppleScript string literal ([`applescript_string`]), and a folder reaches
//!   the shell only through `quoted form of`, so a folder named `"; do shell script "…` stays a
//!   folder.
//! - **Ghostty** (`TERM_PROGRAM=ghostty`): no way to address a tab; on macOS the app is brought
//!   to the front (`open -a Ghostty`).
//! - **GNOME Terminal** (`GNOME_TERMINAL_SCREEN=/org/gnome/Terminal/screen/<uuid with _>`): its
//!   search provider's `ActivateResult` with the screen's uuid raises that tab.
//! - **Konsole** (`KONSOLE_DBUS_SERVICE`, `KONSOLE_DBUS_WINDOW`, `KONSOLE_DBUS_SESSION`):
//!   `setCurrentSession` on its window over D-Bus selects the tab.
//! - **Windows Terminal** (`WT_SESSION`, a GUID; or an ancestor `WindowsTerminal.exe`, since
//!   another process's environment is not read on Windows): no tab can be addressed from
//!   outside; the Windows jump opens a new tab in the session's folder ([`super::windows`]).
//!
//! Every value taken from an environment is checked for shape (ids are digits, a socket is
//! `unix:` plus an absolute path, a D-Bus name is `:1.23`) before it reaches a command line,
//! where it is always a separate argument, never shell text.

/// A terminal emulator a session's process runs in, with what addresses its tab or pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Terminal {
    Kitty {
        window_id: String,
        /// `unix:/path` (or `unix:@abstract`): where `kitty @ --to` reaches it.
        listen_on: Option<String>,
    },
    WezTerm {
        pane_id: Option<String>,
    },
    AppleTerminal,
    ITerm2,
    Ghostty,
    GnomeTerminal {
        /// The screen's uuid, as the search provider names results (dashes).
        screen: Option<String>,
    },
    Konsole {
        service: String,
        window: String,
        session: String,
    },
    WindowsTerminal,
}

/// A zellij pane a session runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZellijPane {
    pub session: String,
    pub pane_id: String,
}

/// A program to run and its arguments (no shell between them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FocusCommand {
    pub program: String,
    pub args: Vec<String>,
}

impl FocusCommand {
    fn new<I: IntoIterator<Item = S>, S: Into<String>>(program: &str, args: I) -> Self {
        FocusCommand {
            program: program.to_string(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }
}

fn var<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.len() <= 12 && text.bytes().all(|b| b.is_ascii_digit())
}

/// A name (tmux or zellij session, D-Bus object) safe as one argument: no control characters,
/// not empty, not an option.
fn is_plain_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 256
        && !text.starts_with('-')
        && !text.chars().any(char::is_control)
}

/// `8-4-4-4-12` hexadecimal digits, as Windows Terminal writes `WT_SESSION`.
fn is_guid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn kitty_socket(text: &str) -> Option<String> {
    let rest = text.strip_prefix("unix:")?;
    let ok = (rest.starts_with('/') || rest.starts_with('@')) && is_plain_name(rest);
    ok.then(|| text.to_string())
}

/// The terminal emulator a process runs in, from its environment and its ancestors' names
/// (nearest first). An explicit id (`KITTY_WINDOW_ID`, `WEZTERM_PANE`, …) wins over
/// `TERM_PROGRAM`, which tmux and editors overwrite; ancestry is the last resort (another
/// user's process, whose environment cannot be read). `None` when nothing tells, or when the
/// process runs in an editor's terminal (`TERM_PROGRAM=vscode`: see [`super::editor_of`]).
pub fn terminal_of(env: &[(String, String)], ancestors: &[String]) -> Option<Terminal> {
    let named = |name: &str| {
        ancestors
            .iter()
            .any(|a| super::program_stem(a).eq_ignore_ascii_case(name))
    };
    if var(env, "TERM_PROGRAM") == Some("vscode") {
        return None;
    }
    if let Some(window_id) = var(env, "KITTY_WINDOW_ID").filter(|v| is_number(v)) {
        return Some(Terminal::Kitty {
            window_id: window_id.to_string(),
            listen_on: var(env, "KITTY_LISTEN_ON").and_then(kitty_socket),
        });
    }
    if let Some(pane) = var(env, "WEZTERM_PANE").filter(|v| is_number(v)) {
        return Some(Terminal::WezTerm {
            pane_id: Some(pane.to_string()),
        });
    }
    if let (Some(service), Some(window), Some(session)) = (
        var(env, "KONSOLE_DBUS_SERVICE"),
        var(env, "KONSOLE_DBUS_WINDOW"),
        var(env, "KONSOLE_DBUS_SESSION"),
    ) {
        let session_number = session.strip_prefix("/Sessions/").filter(|n| is_number(n));
        let service_ok = service.starts_with(':') || service.starts_with("org.kde.konsole");
        if let (Some(number), true, true) = (
            session_number,
            service_ok && is_plain_name(service),
            window.starts_with("/Windows/") && is_plain_name(window),
        ) {
            return Some(Terminal::Konsole {
                service: service.to_string(),
                window: window.to_string(),
                session: number.to_string(),
            });
        }
    }
    if let Some(screen) = var(env, "GNOME_TERMINAL_SCREEN") {
        let uuid = screen
            .strip_prefix("/org/gnome/Terminal/screen/")
            .filter(|u| u.len() == 36 && u.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_'))
            .map(|u| u.replace('_', "-"));
        return Some(Terminal::GnomeTerminal { screen: uuid });
    }
    if var(env, "WT_SESSION").is_some_and(is_guid) || named("WindowsTerminal") {
        return Some(Terminal::WindowsTerminal);
    }
    if var(env, "ITERM_SESSION_ID").is_some() {
        return Some(Terminal::ITerm2);
    }
    match var(env, "TERM_PROGRAM") {
        Some("iTerm.app") => return Some(Terminal::ITerm2),
        Some("Apple_Terminal") => return Some(Terminal::AppleTerminal),
        Some("ghostty") => return Some(Terminal::Ghostty),
        Some("WezTerm") => return Some(Terminal::WezTerm { pane_id: None }),
        _ => {}
    }
    if var(env, "GHOSTTY_RESOURCES_DIR").is_some() || named("ghostty") {
        return Some(Terminal::Ghostty);
    }
    if named("gnome-terminal-") || named("gnome-terminal-server") {
        return Some(Terminal::GnomeTerminal { screen: None });
    }
    if named("konsole") {
        return None; // no D-Bus address: nothing to select
    }
    if named("iTerm2") {
        return Some(Terminal::ITerm2);
    }
    if named("Terminal") {
        return Some(Terminal::AppleTerminal);
    }
    if named("wezterm-gui") {
        return Some(Terminal::WezTerm { pane_id: None });
    }
    None
}

/// The zellij pane a process runs in (`ZELLIJ_SESSION_NAME`, `ZELLIJ_PANE_ID`).
pub fn zellij_of(env: &[(String, String)]) -> Option<ZellijPane> {
    let session = var(env, "ZELLIJ_SESSION_NAME").filter(|s| is_plain_name(s))?;
    let pane = var(env, "ZELLIJ_PANE_ID").filter(|p| is_number(p))?;
    Some(ZellijPane {
        session: session.to_string(),
        pane_id: pane.to_string(),
    })
}

/// An AppleScript string literal holding exactly `text`: backslashes and quotes escaped, line
/// breaks and tabs written as escapes, so nothing in it can end the literal.
pub fn applescript_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The AppleScript that selects Terminal.app's tab on `tty` and brings its window to the front;
/// when no tab has it (and a folder is given), opens a new window in the folder.
pub fn apple_terminal_script(tty: &str, folder: Option<&str>) -> String {
    let fallback = folder
        .map(|f| {
            format!(
                "do script \"cd \" & quoted form of {}\n  activate\n",
                applescript_string(f)
            )
        })
        .unwrap_or_default();
    format!(
        "tell application \"Terminal\"\n  repeat with w in windows\n    repeat with t in tabs of w\n      if tty of t is {tty} then\n        set selected of t to true\n        set index of w to 1\n        activate\n        return\n      end if\n    end repeat\n  end repeat\n  {fallback}end tell\n",
        tty = applescript_string(tty),
    )
}

/// The AppleScript that selects iTerm2's session on `tty` (its window, tab and split); when
/// none has it (and a folder is given), opens a new window in the folder.
pub fn iterm_script(tty: &str, folder: Option<&str>) -> String {
    let fallback = folder
        .map(|f| {
            format!(
                "tell current session of (create window with default profile) to write text \"cd \" & quoted form of {}\n  activate\n",
                applescript_string(f)
            )
        })
        .unwrap_or_default();
    format!(
        "tell application \"iTerm2\"\n  repeat with w in windows\n    repeat with t in tabs of w\n      repeat with s in sessions of t\n        if tty of s is {tty} then\n          select w\n          select t\n          select s\n          activate\n          return\n        end if\n      end repeat\n    end repeat\n  end repeat\n  {fallback}end tell\n",
        tty = applescript_string(tty),
    )
}

/// What runs to bring `terminal`'s tab to the front. `tty` is the agent's terminal device
/// (Terminal.app and iTerm2 find the tab by it), `folder` the session's folder (an absolute
/// path) for a new window when the tab is gone. `macos` picks the platform's way. Empty when
/// this terminal cannot be addressed here.
pub fn focus_launches(
    terminal: &Terminal,
    tty: Option<&str>,
    folder: Option<&str>,
    macos: bool,
) -> Vec<FocusCommand> {
    let osascript = |script: String| FocusCommand::new("osascript", ["-e".to_string(), script]);
    let open_app = |app: &str| FocusCommand::new("open", ["-a", app]);
    match terminal {
        Terminal::Kitty {
            window_id,
            listen_on: Some(socket),
        } => {
            let focus = FocusCommand::new(
                "kitty",
                [
                    "@".to_string(),
                    "--to".to_string(),
                    socket.clone(),
                    "focus-window".to_string(),
                    "--match".to_string(),
                    format!("id:{window_id}"),
                ],
            );
            if macos {
                vec![open_app("kitty"), focus]
            } else {
                vec![focus]
            }
        }
        Terminal::Kitty {
            listen_on: None, ..
        } => {
            if macos {
                vec![open_app("kitty")]
            } else {
                Vec::new()
            }
        }
        Terminal::WezTerm { pane_id } => {
            let mut launches = Vec::new();
            if macos {
                launches.push(open_app("WezTerm"));
            }
            if let Some(pane) = pane_id {
                launches.push(FocusCommand::new(
                    "wezterm",
                    ["cli", "activate-pane", "--pane-id", pane.as_str()],
                ));
            }
            launches
        }
        Terminal::AppleTerminal if macos => match tty {
            Some(tty) => vec![osascript(apple_terminal_script(tty, folder))],
            None => vec![open_app("Terminal")],
        },
        Terminal::ITerm2 if macos => match tty {
            Some(tty) => vec![osascript(iterm_script(tty, folder))],
            None => vec![open_app("iTerm")],
        },
        Terminal::Ghostty if macos => vec![open_app("Ghostty")],
        Terminal::GnomeTerminal { screen: Some(uuid) } if !macos => vec![FocusCommand::new(
            "gdbus",
            [
                "call",
                "--session",
                "--dest",
                "org.gnome.Terminal",
                "--object-path",
                "/org/gnome/Terminal/SearchProvider",
                "--method",
                "org.gnome.Shell.SearchProvider2.ActivateResult",
                uuid.as_str(),
                "[]",
                "0",
            ],
        )],
        Terminal::Konsole {
            service,
            window,
            session,
        } if !macos => vec![FocusCommand::new(
            "gdbus",
            [
                "call",
                "--session",
                "--dest",
                service.as_str(),
                "--object-path",
                window.as_str(),
                "--method",
                "org.kde.konsole.Window.setCurrentSession",
                session.as_str(),
            ],
        )],
        _ => Vec::new(),
    }
}

/// What selects a zellij pane (after its terminal is in front).
pub fn zellij_launch(pane: &ZellijPane) -> FocusCommand {
    FocusCommand::new(
        "zellij",
        [
            "--session".to_string(),
            pane.session.clone(),
            "action".to_string(),
            "focus-pane-id".to_string(),
            format!("terminal_{}", pane.pane_id),
        ],
    )
}

/// Reads `tmux list-clients -F '#{client_activity} #{client_pid} #{client_tty}'`: the client
/// used most recently (whose terminal is the one to bring forward) and its terminal device.
pub fn most_recent_tmux_client(text: &str) -> Option<(u32, Option<String>)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let activity = words.next()?.parse::<u64>().ok()?;
            let pid = words.next()?.parse::<u32>().ok().filter(|p| *p > 1)?;
            let tty = words
                .next()
                .filter(|t| t.starts_with("/dev/") && !t.chars().any(char::is_control))
                .map(str::to_string);
            Some((activity, pid, tty))
        })
        .max_by_key(|(activity, _, _)| *activity)
        .map(|(_, pid, tty)| (pid, tty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Reads AppleScript source the way its tokenizer treats strings: returns the text outside
    /// string literals and the decoded literals. A script whose literals do not close is None.
    fn applescript_tokens(script: &str) -> Option<(String, Vec<String>)> {
        let mut outside = String::new();
        let mut literals = Vec::new();
        let mut chars = script.chars();
        while let Some(c) = chars.next() {
            if c != '"' {
                outside.push(c);
                continue;
            }
            let mut literal = String::new();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => match chars.next()? {
                        'n' => literal.push('\n'),
                        'r' => literal.push('\r'),
                        't' => literal.push('\t'),
                        other => literal.push(other),
                    },
                    other => literal.push(other),
                }
            }
            outside.push_str("\"…\"");
            literals.push(literal);
        }
        Some((outside, literals))
    }

    #[test]
    fn a_folder_named_like_applescript_stays_a_folder() {
        let hostile = [
            "/opt/projects/\"; do shell script \"rm -rf ~\"; \"",
            "/opt/projects/back\\\\slash\\\" & (do shell script \"id\") & \"",
            "/opt/projects/line\nbreak\" then do shell script \"id",
            "/opt/projects/$(id) `id` 'quote'",
        ];
        for folder in hostile {
            for script in [
                apple_terminal_script("/dev/ttys003", Some(folder)),
                iterm_script("/dev/ttys003", Some(folder)),
            ] {
                let (outside, literals) =
                    applescript_tokens(&script).unwrap_or_else(|| panic!("unclosed: {script}"));
                assert!(
                    literals.iter().any(|l| l == folder),
                    "the folder is one literal, byte for byte: {script}"
                );
                assert!(
                    !outside.contains("do shell script"),
                    "no code came out of the folder: {outside}"
                );
                assert!(
                    outside.contains("quoted form of \"…\""),
                    "the shell sees the folder only quoted: {outside}"
                );
            }
        }
        assert_eq!(applescript_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }

    #[test]
    fn terminal_app_and_iterm_select_the_tab_on_the_agents_tty() {
        let script = apple_terminal_script("/dev/ttys003", None);
        let (outside, literals) = applescript_tokens(&script).unwrap_or_default();
        assert!(outside.contains("if tty of t is \"…\" then"), "{script}");
        assert_eq!(literals, ["Terminal", "/dev/ttys003"]);
        assert!(!script.contains("do script"), "no folder: no new window");
        let script = iterm_script("/dev/ttys004", Some("/opt/projects/api"));
        let (outside, literals) = applescript_tokens(&script).unwrap_or_default();
        assert!(outside.contains("tty of s is \"…\""));
        assert!(outside.contains("select s"));
        assert_eq!(
            literals,
            ["iTerm2", "/dev/ttys004", "cd ", "/opt/projects/api"]
        );
        let launches = focus_launches(&Terminal::ITerm2, Some("/dev/ttys004"), None, true);
        assert_eq!(launches.len(), 1);
        assert_eq!(launches[0].program, "osascript");
        assert_eq!(launches[0].args[0], "-e");
        assert_eq!(
            focus_launches(&Terminal::AppleTerminal, None, None, true),
            [FocusCommand::new("open", ["-a", "Terminal"])],
            "no tty known: the app comes forward"
        );
        assert!(
            focus_launches(&Terminal::AppleTerminal, Some("/dev/pts/1"), None, false).is_empty(),
            "no AppleScript on Linux"
        );
    }

    /// Environments recorded from agents started in each terminal (trimmed to what matters,
    /// plus the noise around it).
    #[test]
    fn each_terminal_is_told_from_a_recorded_environment() {
        type Case = (Vec<(String, String)>, Vec<String>, Option<Terminal>);
        let cases: Vec<Case> = vec![
            (
                env(&[
                    ("TERM", "xterm-kitty"),
                    ("KITTY_WINDOW_ID", "3"),
                    ("KITTY_LISTEN_ON", "unix:/tmp/kitty-4242"),
                    ("KITTY_PID", "4242"),
                ]),
                names(&["claude", "zsh", "kitty"]),
                Some(Terminal::Kitty {
                    window_id: "3".into(),
                    listen_on: Some("unix:/tmp/kitty-4242".into()),
                }),
            ),
            (
                env(&[
                    ("KITTY_WINDOW_ID", "3"),
                    ("KITTY_LISTEN_ON", "tcp:1.2.3.4:5"),
                ]),
                vec![],
                Some(Terminal::Kitty {
                    window_id: "3".into(),
                    listen_on: None,
                }),
            ),
            (
                env(&[("TERM_PROGRAM", "WezTerm"), ("WEZTERM_PANE", "12")]),
                names(&["codex", "bash", "wezterm-gui"]),
                Some(Terminal::WezTerm {
                    pane_id: Some("12".into()),
                }),
            ),
            (
                env(&[
                    ("TERM_PROGRAM", "Apple_Terminal"),
                    ("TERM_SESSION_ID", "8A0F…"),
                ]),
                names(&["claude", "-zsh", "login", "Terminal"]),
                Some(Terminal::AppleTerminal),
            ),
            (
                env(&[
                    ("TERM_PROGRAM", "tmux"),
                    ("ITERM_SESSION_ID", "w0t1p0:6C1A…"),
                ]),
                vec![],
                Some(Terminal::ITerm2),
            ),
            (
                env(&[("TERM_PROGRAM", "iTerm.app")]),
                vec![],
                Some(Terminal::ITerm2),
            ),
            (
                env(&[
                    ("TERM_PROGRAM", "ghostty"),
                    ("GHOSTTY_RESOURCES_DIR", "/Applications/Ghostty.app/…"),
                ]),
                vec![],
                Some(Terminal::Ghostty),
            ),
            (
                env(&[(
                    "GNOME_TERMINAL_SCREEN",
                    "/org/gnome/Terminal/screen/0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0",
                )]),
                names(&["claude", "bash", "gnome-terminal-"]),
                Some(Terminal::GnomeTerminal {
                    screen: Some("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into()),
                }),
            ),
            (
                env(&[
                    ("KONSOLE_DBUS_SERVICE", ":1.87"),
                    ("KONSOLE_DBUS_WINDOW", "/Windows/1"),
                    ("KONSOLE_DBUS_SESSION", "/Sessions/4"),
                ]),
                names(&["claude", "bash", "konsole"]),
                Some(Terminal::Konsole {
                    service: ":1.87".into(),
                    window: "/Windows/1".into(),
                    session: "4".into(),
                }),
            ),
            // Environment unreadable: the ancestry still tells the app.
            (
                vec![],
                names(&["claude", "bash", "ghostty"]),
                Some(Terminal::Ghostty),
            ),
            (
                vec![],
                names(&["claude", "-zsh", "iTerm2"]),
                Some(Terminal::ITerm2),
            ),
            // An editor's terminal is the editor's (jump::editor_of), not a terminal's.
            (
                env(&[("TERM_PROGRAM", "vscode")]),
                names(&["claude", "zsh", "Code Helper"]),
                None,
            ),
            (env(&[("TERM", "xterm")]), names(&["claude", "sshd"]), None),
            // Windows Terminal: its session GUID, or (the environment of another process is
            // not read on Windows) its program among the ancestors, named with `.exe`.
            (
                env(&[("WT_SESSION", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")]),
                vec![],
                Some(Terminal::WindowsTerminal),
            ),
            (
                vec![],
                names(&["node.exe", "claude.exe", "pwsh.exe", "WindowsTerminal.exe"]),
                Some(Terminal::WindowsTerminal),
            ),
            (env(&[("WT_SESSION", "not a guid")]), vec![], None),
            (
                vec![],
                names(&["node.exe", "pwsh.exe", "explorer.exe"]),
                None,
            ),
            // Shapes that could reach a command line are refused.
            (env(&[("KITTY_WINDOW_ID", "3 --to x")]), vec![], None),
            (env(&[("WEZTERM_PANE", "-1")]), vec![], None),
        ];
        for (env, ancestors, want) in cases {
            assert_eq!(terminal_of(&env, &ancestors), want, "{env:?} {ancestors:?}");
        }
    }

    #[test]
    fn each_terminal_is_addressed_by_its_own_remote_control() {
        let kitty = Terminal::Kitty {
            window_id: "3".into(),
            listen_on: Some("unix:/tmp/kitty-4242".into()),
        };
        assert_eq!(
            focus_launches(&kitty, None, None, false),
            [FocusCommand::new(
                "kitty",
                [
                    "@",
                    "--to",
                    "unix:/tmp/kitty-4242",
                    "focus-window",
                    "--match",
                    "id:3"
                ]
            )]
        );
        assert_eq!(focus_launches(&kitty, None, None, true).len(), 2);
        assert_eq!(
            focus_launches(
                &Terminal::WezTerm {
                    pane_id: Some("12".into())
                },
                None,
                None,
                false
            ),
            [FocusCommand::new(
                "wezterm",
                ["cli", "activate-pane", "--pane-id", "12"]
            )]
        );
        let gnome = focus_launches(
            &Terminal::GnomeTerminal {
                screen: Some("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into()),
            },
            None,
            None,
            false,
        );
        assert_eq!(gnome[0].program, "gdbus");
        assert!(gnome[0]
            .args
            .contains(&"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".to_string()));
        assert_eq!(
            zellij_launch(&ZellijPane {
                session: "work".into(),
                pane_id: "2".into()
            }),
            FocusCommand::new(
                "zellij",
                ["--session", "work", "action", "focus-pane-id", "terminal_2"]
            )
        );
        assert!(focus_launches(&Terminal::Ghostty, None, None, false).is_empty());
        assert_eq!(
            focus_launches(&Terminal::Ghostty, None, None, true),
            [FocusCommand::new("open", ["-a", "Ghostty"])]
        );
    }

    #[test]
    fn zellij_and_the_latest_tmux_client_are_read_from_what_they_print() {
        assert_eq!(
            zellij_of(&env(&[
                ("ZELLIJ", "0"),
                ("ZELLIJ_SESSION_NAME", "work"),
                ("ZELLIJ_PANE_ID", "2")
            ])),
            Some(ZellijPane {
                session: "work".into(),
                pane_id: "2".into()
            })
        );
        assert_eq!(
            zellij_of(&env(&[
                ("ZELLIJ_SESSION_NAME", "--help"),
                ("ZELLIJ_PANE_ID", "2")
            ])),
            None
        );
        assert_eq!(
            most_recent_tmux_client(
                "1796094000 4242 /dev/pts/1\n1796094387 5151 /dev/ttys004\njunk\n"
            ),
            Some((5151, Some("/dev/ttys004".to_string())))
        );
        assert_eq!(most_recent_tmux_client(""), None);
    }
}
