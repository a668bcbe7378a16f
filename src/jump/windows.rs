//! The jump on Windows: where a session goes and the programs that take the user there, decided
//! as data like the rest of [`super`], and compiled on every platform so its tests run on the
//! machines CI has. Only the dispatch in [`super`] (`cfg!(windows)`) makes it the jump there.
//!
//! Where a session can go on Windows:
//! - **Windows Terminal** (the agent's environment has `WT_SESSION`, or an ancestor is
//!   `WindowsTerminal.exe`): its tabs cannot be addressed from outside (`focus-tab` takes a tab
//!   index, which nothing tells), so the jump opens a new tab in the session's folder in the
//!   window used last: `wt.exe -w 0 new-tab -d .`;
//! - **VS Code or Cursor** (their terminal, see [`super::editor_of`]): `code.cmd -- .`, what the
//!   editor installs on PATH (a batch file: `code` alone would not be found, `Command` only adds
//!   `.exe`);
//! - anywhere else, and when Windows Terminal fails: a new **PowerShell** console in the folder,
//!   `powershell.exe -NoExit -Command Set-Location -LiteralPath '<folder>'`.
//!
//! Why the folder is mostly not on the command line: every launch starts *in* the folder (the
//! process's working directory), and names it as `.`. `wt.exe` splits its command line into
//! commands at every `;` (a legal character in a folder name), and `code.cmd` runs through
//! `cmd.exe`, whose `%` and `^` rules differ from every other program's; a folder that is never an
//! argument needs neither escaped. PowerShell gets the folder once more as a literal, because a
//! profile script may move the new shell elsewhere, and because Windows will not start a process
//! in a folder past `MAX_PATH` while `Set-Location` goes there. That literal is
//! [`powershell_literal`]: single-quoted, in which nothing is special but the quote itself, and
//! PowerShell takes four characters as that quote (`'` and the typographic `‘ ’ ‚ ‛`), each
//! doubled.
//!
//! Programs receive their arguments as one command line, which each splits back into words
//! itself; nearly all (the C runtime, `CommandLineToArgvW`, PowerShell, `wt.exe`, `ssh.exe`)
//! with the rules [`quote_argument`] writes for: backslashes are literal except before a `"`,
//! where they escape each other. The standard library quotes by the same rules when it starts a
//! program; [`command_line`] is for the line shown to the user to run by hand (a remote jump
//! where no ssh is installed), and the tests read every line back with those rules.
//!
//! A folder from session data is used only when it is absolute by Windows' rules
//! ([`is_absolute`]: `C:\…` or `\\server\share\…`); `C:folder` and `\folder` depend on the app's
//! own current drive and folder.

use std::path::{Path, PathBuf};

use super::terminals::Terminal;
use super::{Capture, Editor, FrontTerminal, JumpPlan, JumpSteps, Launch, ProcessFacts};
use super::{RemoteJump, LAUNCH_TIMEOUT};
use crate::model::Session;

/// Windows Terminal's command-line launcher (an app execution alias in the user's WindowsApps
/// folder, on PATH wherever Windows Terminal is installed).
pub const WINDOWS_TERMINAL: &str = "wt.exe";
/// Windows PowerShell, present on every Windows since 7 (in System32, on PATH).
pub const POWERSHELL: &str = "powershell.exe";
/// The file manager; it opens a folder given as its one argument.
pub const EXPLORER: &str = "explorer.exe";

/// What the editor installs on PATH to open a folder from a command line (a batch file).
pub fn editor_program(editor: Editor) -> &'static str {
    match editor {
        Editor::VsCode => "code.cmd",
        Editor::Cursor => "cursor.cmd",
    }
}

/// Whether `path` is absolute by Windows' rules: a drive and a root (`C:\`, `C:/`), or a UNC or
/// device path (`\\server\share`, `\\?\C:\`). `C:folder` (relative to that drive's current
/// folder) and `\folder` (relative to the current drive) are not.
pub fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    let separator = |b: u8| b == b'\\' || b == b'/';
    match bytes {
        [drive, b':', root, ..] => drive.is_ascii_alphabetic() && separator(*root),
        [a, b, rest @ ..] => {
            separator(*a) && separator(*b) && rest.first().is_some_and(|c| !separator(*c))
        }
        _ => false,
    }
}

/// A session's folder, when it is somewhere to go: absolute ([`is_absolute`]) and free of
/// control characters, which no Windows file name holds.
fn session_folder(session: &Session) -> Option<PathBuf> {
    session
        .cwd
        .as_deref()
        .filter(|cwd| is_absolute(cwd) && !cwd.chars().any(char::is_control))
        .map(PathBuf::from)
}

/// Where a jump goes on Windows, from the session, what is known of its process and which
/// programs are on PATH (`on_path` is asked for the exact file names: `wt.exe`, `code.cmd`).
/// Pure.
///
/// The editor whose terminal runs the session wins, when its command is installed; then Windows
/// Terminal, when the session runs in it and `wt.exe` is there; then a PowerShell console. Every
/// one of them opens the session's folder: without an absolute one there is nowhere to go.
pub fn decide_jump(
    session: &Session,
    facts: &ProcessFacts,
    on_path: impl Fn(&str) -> bool,
) -> Option<JumpPlan> {
    let dir = session_folder(session)?;
    if let Some(editor) = facts.editor.filter(|e| on_path(editor_program(*e))) {
        return Some(JumpPlan::Editor { editor, dir });
    }
    if facts.terminal == Some(Terminal::WindowsTerminal) && on_path(WINDOWS_TERMINAL) {
        return Some(JumpPlan::Tab {
            front: FrontTerminal {
                terminal: Terminal::WindowsTerminal,
                tty: None,
            },
            dir: Some(dir),
        });
    }
    Some(JumpPlan::Terminal { dir })
}

fn launch_in(program: &str, args: &[&str], dir: &Path, capture: Capture) -> Launch {
    let mut launch = Launch::new(program, args);
    launch.cwd = Some(dir.to_path_buf());
    launch.capture = capture;
    launch
}

/// A PowerShell console of its own, in `dir`, left open for the user.
pub fn powershell_launch(dir: &Path) -> Launch {
    let script = format!(
        "Set-Location -LiteralPath {}",
        powershell_literal(&dir.display().to_string())
    );
    launch_in(
        POWERSHELL,
        &["-NoExit", "-Command", &script],
        dir,
        Capture::Detached,
    )
}

/// The programs a jump runs on Windows, in order. Pure. Only the plans [`decide_jump`] makes
/// have a launch here (no tmux or zellij runs on Windows itself).
pub fn jump_launches(plan: &JumpPlan) -> Vec<Launch> {
    match plan {
        JumpPlan::Tab {
            front,
            dir: Some(dir),
        } if front.terminal == Terminal::WindowsTerminal => vec![launch_in(
            WINDOWS_TERMINAL,
            &["-w", "0", "new-tab", "-d", "."],
            dir,
            Capture::Nothing,
        )],
        JumpPlan::Editor { editor, dir } => vec![launch_in(
            editor_program(*editor),
            &["--", "."],
            dir,
            Capture::Nothing,
        )],
        JumpPlan::Terminal { dir } => vec![powershell_launch(dir)],
        JumpPlan::Tab { .. } | JumpPlan::Tmux { .. } | JumpPlan::Zellij { .. } => Vec::new(),
    }
}

/// How a Windows jump is carried out. Pure. Every plan needs its folder (each starts in it);
/// Windows Terminal falls back to a PowerShell console there.
pub fn jump_steps(plan: &JumpPlan) -> JumpSteps {
    let required = jump_launches(plan);
    let steps = |folder: Option<PathBuf>, what: &'static str| JumpSteps {
        folder,
        program: None,
        best_effort: Vec::new(),
        required: required.clone(),
        what,
        fallback: None,
    };
    match plan {
        JumpPlan::Tab { dir, .. } => JumpSteps {
            fallback: dir.clone().map(|dir| JumpPlan::Terminal { dir }),
            ..steps(dir.clone(), "open a Windows Terminal tab")
        },
        JumpPlan::Editor { editor, dir } => steps(Some(dir.clone()), editor.program()),
        JumpPlan::Terminal { dir } => JumpSteps {
            program: Some(POWERSHELL),
            ..steps(Some(dir.clone()), "open a PowerShell window")
        },
        JumpPlan::Tmux { .. } | JumpPlan::Zellij { .. } => steps(None, "select the pane"),
    }
}

/// A remote session's jump on Windows: `ssh.exe` (Windows' own OpenSSH client, or the one the
/// link is set to use) in a console window of its own, running `argv` (`ssh -t -- DESTINATION
/// …`). The line for the user is quoted for Windows.
pub fn remote_jump(argv: &[String]) -> RemoteJump {
    let command_line = command_line(argv);
    let launch = argv.split_first().map(|(program, args)| Launch {
        program: program.clone(),
        args: args.to_vec(),
        cwd: None,
        capture: Capture::Detached,
        timeout: LAUNCH_TIMEOUT,
    });
    RemoteJump {
        command_line,
        launch,
        program: None,
        script: None,
    }
}

/// How a file is shown in the file manager on Windows: its folder opened by `explorer.exe`
/// (`is_dir`: the path is itself a folder). None for a path that is not absolute. Explorer
/// reports 1 even when it opened the folder, so its status is not waited for.
pub fn reveal_launch(path: &str, is_dir: bool) -> Option<Launch> {
    if !is_absolute(path) || path.chars().any(char::is_control) {
        return None;
    }
    let folder = if is_dir { path } else { parent(path) };
    let mut launch = Launch::new(EXPLORER, &[folder]);
    launch.capture = Capture::Detached;
    Some(launch)
}

/// The folder holding `path` by Windows' separators, never above its root (`C:\f.txt` → `C:\`).
fn parent(path: &str) -> &str {
    let trimmed = path.trim_end_matches(['\\', '/']);
    let Some(cut) = trimmed.rfind(['\\', '/']) else {
        return path;
    };
    let folder = &trimmed[..cut];
    if folder.len() <= 2 {
        // `C:` or the `\\` of a UNC path: keep the root's separator.
        &path[..(cut + 1).min(path.len())]
    } else {
        folder
    }
}

/// `text` as a PowerShell single-quoted string: nothing in it is special (`$`, backticks and
/// `"` stay as they are) except the quote, which PowerShell reads in four forms (`'`, `‘`, `’`,
/// `‚`, `‛`), each written twice to stand for itself.
pub fn powershell_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if is_powershell_quote(c) {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

fn is_powershell_quote(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}')
}

/// One argument as it must appear in a Windows command line for `CommandLineToArgvW` (and the C
/// runtime) to read it back unchanged: bare when it has no space, tab, line break or quote and
/// is not empty; otherwise in double quotes, with each `"` escaped by a backslash and the
/// backslashes before a `"` (or before the closing quote) doubled. Other backslashes are
/// literal and stay single (`C:\a b\` → `"C:\a b\\"`).
pub fn quote_argument(argument: &str) -> String {
    let plain = !argument.is_empty()
        && !argument
            .chars()
            .any(|c| matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '"'));
    if plain {
        return argument.to_string();
    }
    let mut out = String::with_capacity(argument.len() + 2);
    out.push('"');
    let mut backslashes = 0usize;
    for c in argument.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                // Each backslash before a quote escapes the next; one more escapes the quote.
                out.push_str(&"\\".repeat(backslashes * 2 + 1));
                out.push('"');
                backslashes = 0;
            }
            c => {
                out.push_str(&"\\".repeat(backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    // Before the closing quote, backslashes escape each other.
    out.push_str(&"\\".repeat(backslashes * 2));
    out.push('"');
    out
}

/// A whole command line, each word quoted by [`quote_argument`] and separated by a space.
pub fn command_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| quote_argument(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, SessionState};

    /// Splits the arguments of a command line the way `CommandLineToArgvW` and the C runtime
    /// (since 2008) do: runs of 2n backslashes before a `"` are n backslashes and the quote
    /// toggles quoting, 2n+1 are n backslashes and a literal quote, `""` inside quotes is a quote,
    /// other backslashes are literal, and spaces or tabs outside quotes end a word.
    fn split_command_line(line: &str) -> Vec<String> {
        let chars: Vec<char> = line.chars().collect();
        let mut words = Vec::new();
        let mut i = 0;
        loop {
            while i < chars.len() && matches!(chars[i], ' ' | '\t') {
                i += 1;
            }
            if i >= chars.len() {
                return words;
            }
            let mut word = String::new();
            let mut quoted = false;
            while i < chars.len() {
                match chars[i] {
                    '\\' => {
                        let run = chars[i..].iter().take_while(|c| **c == '\\').count();
                        i += run;
                        if chars.get(i) == Some(&'"') {
                            word.push_str(&"\\".repeat(run / 2));
                            if run % 2 == 1 {
                                word.push('"');
                                i += 1;
                            }
                        } else {
                            word.push_str(&"\\".repeat(run));
                        }
                    }
                    '"' if quoted && chars.get(i + 1) == Some(&'"') => {
                        word.push('"');
                        i += 2;
                    }
                    '"' => {
                        quoted = !quoted;
                        i += 1;
                    }
                    ' ' | '\t' if !quoted => break,
                    c => {
                        word.push(c);
                        i += 1;
                    }
                }
            }
            words.push(word);
        }
    }

    /// Reads a PowerShell single-quoted literal at the start of `text`: the string it stands
    /// for, and what follows it. None when it does not close.
    fn read_powershell_literal(text: &str) -> Option<(String, &str)> {
        let mut chars = text.char_indices().peekable();
        let (_, first) = chars.next()?;
        if !is_powershell_quote(first) {
            return None;
        }
        let mut value = String::new();
        while let Some((at, c)) = chars.next() {
            if !is_powershell_quote(c) {
                value.push(c);
                continue;
            }
            match chars.peek() {
                Some(&(_, next)) if is_powershell_quote(next) => {
                    value.push(c);
                    chars.next();
                }
                _ => return Some((value, &text[at + c.len_utf8()..])),
            }
        }
        None
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn session(cwd: Option<&str>) -> Session {
        let mut s = Session::new("s", Agent::Claude, SessionState::Idle, chrono::Utc::now());
        s.cwd = cwd.map(str::to_string);
        s
    }

    fn in_windows_terminal() -> ProcessFacts {
        ProcessFacts {
            terminal: Some(Terminal::WindowsTerminal),
            ..ProcessFacts::default()
        }
    }

    /// Folder names a session could report, hostile ones included: spaces, quotes of both
    /// kinds, trailing backslashes, a `;` (wt's command separator), `%` and `^` (cmd.exe's).
    const HOSTILE_FOLDERS: &[&str] = &[
        r#"C:\a b\"x'y"#,
        r"C:\a b\",
        r"C:\a b\\",
        r"C:\",
        r"C:\it's here",
        r"C:\it’s here",
        r"C:\a;b & c|d %PATH% ^x",
        r"\\server\share\dev\api",
        r#"C:\ends with quote\""#,
        "C:\\tab\there",
        "",
    ];

    #[test]
    fn every_argument_reads_back_as_itself_after_quoting() {
        // Whatever a session reports reaches a program as exactly one argument, unchanged.
        let mut all: Vec<&str> = HOSTILE_FOLDERS.to_vec();
        all.extend([
            "plain",
            "-Command",
            r"a\\b",
            r#"\""#,
            r#"a\\\"b"#,
            r"trailing\",
            "Set-Location -LiteralPath 'C:\\a b\\'",
        ]);
        for argument in all {
            let line = command_line(&words(&["first", argument, "last"]));
            assert_eq!(
                split_command_line(&line),
                words(&["first", argument, "last"]),
                "{argument:?} was written as {line:?}"
            );
        }
    }

    #[test]
    fn quoting_leaves_plain_words_alone_and_doubles_only_backslashes_before_a_quote() {
        assert_eq!(quote_argument(r"C:\dev\api"), r"C:\dev\api");
        assert_eq!(
            quote_argument(""),
            r#""""#,
            "an empty argument still counts"
        );
        assert_eq!(quote_argument(r"C:\a b\"), r#""C:\a b\\""#);
        assert_eq!(quote_argument(r#"C:\a b\"x'y"#), r#""C:\a b\\\"x'y""#);
        assert_eq!(quote_argument(r#"say "hi""#), r#""say \"hi\"""#);
        assert_eq!(quote_argument(r"a\\b c"), r#""a\\b c""#, "no quote follows");
    }

    #[test]
    fn a_powershell_literal_holds_any_folder_and_ends_where_it_should() {
        for folder in HOSTILE_FOLDERS
            .iter()
            .chain(&["C:\\$env:USERPROFILE `n", "C:\\‘‚‛’'"])
        {
            let literal = powershell_literal(folder);
            let script = format!("Set-Location -LiteralPath {literal}; rest");
            let after = script
                .strip_prefix("Set-Location -LiteralPath ")
                .unwrap_or_else(|| panic!("prefix"));
            let (value, rest) =
                read_powershell_literal(after).unwrap_or_else(|| panic!("{script:?} closes"));
            assert_eq!(value, *folder, "{script:?}");
            assert_eq!(rest, "; rest", "nothing of {folder:?} runs as code");
        }
        assert_eq!(powershell_literal(r"C:\it's"), r"'C:\it''s'");
    }

    #[test]
    fn a_windows_folder_is_absolute_only_with_its_drive_and_root_or_a_share() {
        for absolute in [r"C:\", r"c:/dev", r"\\server\share", r"\\?\C:\very\long"] {
            assert!(is_absolute(absolute), "{absolute:?}");
        }
        // Relative to the app's own drive or folder, an option, or nothing.
        for relative in [
            r"C:dev", r"\dev", "dev", "-rf", "--help", "", r"\\", "1:\\x", r"\\\x",
        ] {
            assert!(!is_absolute(relative), "{relative:?}");
        }
    }

    #[test]
    fn a_session_in_windows_terminal_opens_a_tab_there_in_its_folder_and_falls_back_to_powershell()
    {
        // Claude started in a Windows Terminal tab (WT_SESSION in its environment).
        let s = session(Some(r"C:\Users\dev\my api"));
        let plan = decide_jump(&s, &in_windows_terminal(), |p| p == WINDOWS_TERMINAL)
            .unwrap_or_else(|| panic!("a plan"));
        let steps = jump_steps(&plan);
        let [tab] = steps.required.as_slice() else {
            panic!("one launch: {:?}", steps.required)
        };
        assert_eq!(tab.program, "wt.exe");
        assert_eq!(tab.args, ["-w", "0", "new-tab", "-d", "."]);
        assert_eq!(
            tab.cwd.as_deref(),
            Some(Path::new(r"C:\Users\dev\my api")),
            "the folder is where wt starts, never a word wt splits at ';'"
        );
        assert_eq!(
            steps.folder.as_deref(),
            Some(Path::new(r"C:\Users\dev\my api"))
        );
        // When wt fails: a PowerShell console in the same folder.
        assert_eq!(
            steps.fallback,
            Some(JumpPlan::Terminal {
                dir: PathBuf::from(r"C:\Users\dev\my api")
            })
        );
        // Windows Terminal not installed (wt.exe not on PATH): PowerShell at once.
        assert_eq!(
            decide_jump(&s, &in_windows_terminal(), |_| false),
            Some(JumpPlan::Terminal {
                dir: PathBuf::from(r"C:\Users\dev\my api")
            })
        );
    }

    #[test]
    fn a_session_in_vs_codes_terminal_opens_its_folder_in_vs_code_when_code_cmd_is_installed() {
        let s = session(Some(r"D:\work\it's"));
        let facts = ProcessFacts {
            editor: Some(Editor::VsCode),
            ..ProcessFacts::default()
        };
        let plan = decide_jump(&s, &facts, |p| p == "code.cmd").unwrap_or_else(|| panic!("a plan"));
        assert_eq!(
            plan,
            JumpPlan::Editor {
                editor: Editor::VsCode,
                dir: PathBuf::from(r"D:\work\it's")
            }
        );
        let [code] = jump_launches(&plan)
            .try_into()
            .unwrap_or_else(|l| panic!("{l:?}"));
        assert_eq!(
            code.program, "code.cmd",
            "the batch file VS Code puts on PATH"
        );
        assert_eq!(
            code.args,
            ["--", "."],
            "the folder never passes through cmd.exe"
        );
        assert_eq!(code.cwd.as_deref(), Some(Path::new(r"D:\work\it's")));
        let steps = jump_steps(&plan);
        assert_eq!((steps.what, steps.fallback), ("code", None));
        // Cursor's terminal, but only VS Code's command installed: not VS Code, a console.
        let cursor = ProcessFacts {
            editor: Some(Editor::Cursor),
            ..ProcessFacts::default()
        };
        assert_eq!(
            decide_jump(&s, &cursor, |p| p == "code.cmd"),
            Some(JumpPlan::Terminal {
                dir: PathBuf::from(r"D:\work\it's")
            })
        );
    }

    #[test]
    fn anywhere_else_a_powershell_console_opens_in_the_folder_with_the_folder_quoted_as_a_literal()
    {
        // (A tab is in no Windows file name: such a folder is refused, see below.)
        let folders = HOSTILE_FOLDERS
            .iter()
            .filter(|f| is_absolute(f) && !f.contains(char::is_control));
        for folder in folders {
            let s = session(Some(folder));
            let plan = decide_jump(&s, &ProcessFacts::default(), |_| true)
                .unwrap_or_else(|| panic!("{folder:?}: a plan"));
            let steps = jump_steps(&plan);
            assert_eq!(steps.program, Some("powershell.exe"));
            let [shell] = steps.required.as_slice() else {
                panic!("one launch: {:?}", steps.required)
            };
            assert_eq!(shell.program, "powershell.exe");
            assert_eq!(
                shell.capture,
                Capture::Detached,
                "a console of its own, left open"
            );
            assert_eq!(shell.cwd.as_deref(), Some(Path::new(folder)));
            let [no_exit, command, script] = shell.args.as_slice() else {
                panic!("{:?}", shell.args)
            };
            assert_eq!(
                (no_exit.as_str(), command.as_str()),
                ("-NoExit", "-Command")
            );
            // What PowerShell receives after Windows splits the command line, and what its
            // parser makes of it: Set-Location to exactly this folder, and nothing else.
            let mut line = vec![shell.program.clone()];
            line.extend(shell.args.iter().cloned());
            let received = split_command_line(&command_line(&line));
            assert_eq!(received[1..], shell.args[..]);
            assert_eq!(&received[3], script);
            let literal = received[3]
                .strip_prefix("Set-Location -LiteralPath ")
                .unwrap_or_else(|| panic!("{:?}", received[3]));
            assert_eq!(
                read_powershell_literal(literal),
                Some((folder.to_string(), ""))
            );
        }
    }

    #[test]
    fn vs_code_and_cursor_are_told_from_their_windows_program_names() {
        // On Windows another process's environment is not read: the ancestors' names tell, as
        // Windows reports them (with `.exe`).
        let names = |list: &[&str]| words(list);
        assert_eq!(
            super::super::editor_of(&[], &names(&["node.exe", "pwsh.exe", "Code.exe"])),
            Some(Editor::VsCode)
        );
        assert_eq!(
            super::super::editor_of(&[], &names(&["node.exe", "powershell.exe", "Cursor.exe"])),
            Some(Editor::Cursor)
        );
        assert_eq!(
            super::super::editor_of(&[], &names(&["codex.exe", "cmd.exe", "explorer.exe"])),
            None,
            "a program merely called codex is no editor"
        );
        assert_eq!(super::super::program_stem("Code.EXE"), "Code");
        assert_eq!(super::super::program_stem(".exe"), ".exe");
        assert_eq!(super::super::program_stem("zsh"), "zsh");
    }

    #[test]
    fn a_folder_that_is_not_absolute_on_windows_is_nowhere_to_go() {
        for cwd in [
            r"C:api",
            r"\api",
            "api",
            "-rf",
            "",
            "C:\\a\nb",
            "C:\\tab\there",
        ] {
            let s = session(Some(cwd));
            assert_eq!(
                decide_jump(&s, &in_windows_terminal(), |_| true),
                None,
                "{cwd:?}"
            );
        }
        assert_eq!(
            decide_jump(&session(None), &in_windows_terminal(), |_| true),
            None
        );
    }

    #[test]
    fn a_remote_jump_on_windows_runs_ssh_in_its_own_console_and_says_a_windows_quoted_line() {
        let argv = words(&["ssh", "-t", "--", "dev@box", "cd", "/srv/it's here", ""]);
        let jump = remote_jump(&argv);
        let launch = jump.launch.unwrap_or_else(|| panic!("a launch"));
        assert_eq!(launch.program, "ssh");
        assert_eq!(launch.args, argv[1..]);
        assert_eq!(launch.capture, Capture::Detached);
        assert_eq!(
            split_command_line(&jump.command_line),
            argv,
            "the line the user is told to run reads back as the same words"
        );
    }

    #[test]
    fn explorer_opens_the_folder_of_a_file_and_refuses_a_relative_path() {
        let file = reveal_launch(r"C:\Users\dev\.claude\projects\p\s.jsonl", false)
            .unwrap_or_else(|| panic!("absolute"));
        assert_eq!(file.program, "explorer.exe");
        assert_eq!(file.args, [r"C:\Users\dev\.claude\projects\p"]);
        assert_eq!(
            file.capture,
            Capture::Detached,
            "explorer exits 1 when it worked"
        );
        let folder = reveal_launch(r"C:\logs", true).unwrap_or_else(|| panic!("absolute"));
        assert_eq!(folder.args, [r"C:\logs"]);
        let root = reveal_launch(r"C:\s.jsonl", false).unwrap_or_else(|| panic!("absolute"));
        assert_eq!(root.args, [r"C:\"]);
        assert_eq!(reveal_launch("s.jsonl", false), None);
        assert_eq!(reveal_launch(r"\s.jsonl", false), None);
    }
}
