//! `agent-tray install` / `uninstall`: the hooks (and Codex's notify and trust) in the agents'
//! own configuration files.
//!
//! These files belong to the user and to every other tool that hooks the same agents; peers have
//! lost users' keys and third-party hooks by rewriting them. So, plan then apply:
//! This module is the kit the adapters build their install from; the run over the agents (the
//! command the CLI and the window share) is [`crate::install_command`], one floor up.
//!
//! - **Plan** (each adapter's `plan_hooks`) is pure: old text in, new text (or "no change")
//!   and notes out. JSON is edited in place through a concrete syntax tree (`jsonc-parser`):
//!   only the nodes we add, change or remove are touched, so every number and string the user
//!   wrote keeps its bytes (`1e3`, a 30-digit integer, `"\u00fc"`), and so do the layout, the
//!   key order and every other hook; it is validated strictly with `serde_json` first. TOML goes
//!   through `toml_edit` (comments and formatting stay). A file that does not parse is refused
//!   with a clear message and left untouched.
//! - **Ours** is recognised by the command, not by the path: the `agent-tray` basename followed
//!   by exactly `hook --agent <agent>` (or bare `hook`). An entry of ours whose binary moved is
//!   updated in place; one the user edited (other arguments) is left alone and reported. Install
//!   twice changes nothing; uninstall removes exactly our entries and the groups that became
//!   empty by it.
//! - **Apply** ([`write_file`]) goes through the [atomic writer](crate::atomic_file) (never a
//!   half-written config; the file's permissions kept; a symlinked config written at its target,
//!   for dotfile managers), keeps a timestamped backup of the previous version, and re-reads the
//!   file right before the rename: if the agent saved it since the plan was made, nothing is
//!   written and the user is asked to run the command again. `--dry-run` prints the plan as a
//!   unified diff and writes nothing.
//! - **Trust in the binary**: the hooks run this binary as the user on every agent event, so
//!   `install` refuses one that other users could replace ([`path_safety`]) unless
//!   `--allow-insecure-path`.

pub mod hooks_json;
pub mod path_safety;
pub mod record;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::atomic_file::{AtomicWrite, AtomicWriteError, Current};
use crate::model::Agent;

/// Backups kept per file; older ones are removed.
const BACKUPS_KEPT: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Uninstall,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{path} is not valid {format} ({detail}); nothing was changed. Fix the file (or move it away) and run this again.")]
    Unparsable {
        path: PathBuf,
        format: &'static str,
        detail: String,
    },
    #[error(
        "{path}: {detail}; nothing was changed. Fix the file (or move it away) and run this again."
    )]
    Unexpected { path: PathBuf, detail: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path} was changed by another program (the agent saving its settings?) while agent-tray was updating it; that file was left as the other program wrote it. Run the same command again to apply the change on top of it.")]
    ChangedMeanwhile { path: PathBuf },
    #[error("cannot tell where {agent} keeps its settings: set HOME (or {env})")]
    NoConfigDir {
        agent: &'static str,
        env: &'static str,
    },
    #[error("cannot tell where this agent-tray binary is: {0}")]
    NoBinary(io::Error),
    #[error("refusing to point the agents at this binary: {0}. The hooks (and any notify program) run it on every agent event. Fix: {fix}; then run `agent-tray install` again from there. To install anyway, pass --allow-insecure-path.", fix = .0.fix())]
    InsecurePath(path_safety::InsecurePath),
}

/// One file's planned change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    /// The current text; `None` when the file does not exist.
    pub old: Option<String>,
    /// The new text; `None` when nothing changes.
    pub new: Option<String>,
}

impl FileChange {
    pub fn diff(&self) -> Option<String> {
        let new = self.new.as_deref()?;
        let old = self.old.as_deref().unwrap_or("");
        let shown = self.path.display().to_string();
        Some(
            similar::TextDiff::from_lines(old, new)
                .unified_diff()
                .context_radius(3)
                .header(
                    &if self.old.is_some() {
                        shown.clone()
                    } else {
                        "/dev/null".into()
                    },
                    &shown,
                )
                .to_string(),
        )
    }
}

/// What a plan decided: the file changes and what to tell the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub changes: Vec<FileChange>,
    pub notes: Vec<String>,
}

/// The hook command for an agent: `<bin> hook --agent <agent>`, the path quoted for `sh -c`
/// when it needs it (on Windows, in the form [`hook_command_on`] gives).
pub fn hook_command(bin: &Path, agent: Agent) -> String {
    hook_command_on(crate::paths::THIS_DESKTOP, bin, agent)
}

/// [`hook_command`] for a given desktop. The agents run a hook's `command` through a POSIX shell
/// everywhere, Windows included: Claude Code there runs it with Git Bash's `bash -c`, which reads
/// a backslash as an escape, so the program's path is written with forward slashes
/// (`C:/Users/…/agent-tray.exe`, which Git Bash and Windows both open) and quoted for `sh`.
pub fn hook_command_on(desktop: crate::paths::Desktop, bin: &Path, agent: Agent) -> String {
    format!(
        "{} hook --agent {}",
        shell_quote(&program_text_on(desktop, bin)),
        agent.as_str()
    )
}

/// The program's path as a hook command names it on `desktop` (see [`hook_command_on`]).
pub fn program_text_on(desktop: crate::paths::Desktop, bin: &Path) -> String {
    let text = bin.display().to_string();
    match desktop {
        crate::paths::Desktop::Windows => text.replace('\\', "/"),
        _ => text,
    }
}

/// The hook command in `cmd.exe`'s form, for agents that run hooks through `%COMSPEC% /C` on
/// Windows (Codex's `commandWindows`): the program in double quotes with its backslashes, which
/// a Windows path never needs escaped (it cannot hold `"`).
pub fn hook_command_for_cmd(bin: &Path, agent: Agent) -> String {
    format!(
        "\"{}\" hook --agent {}",
        bin.display().to_string().replace('/', "\\"),
        agent.as_str()
    )
}

/// The `cmd.exe` form ([`hook_command_for_cmd`]'s) of a hook command written for `sh`: its words
/// re-quoted for `cmd`, the program's slashes turned back. `None` when it does not parse.
pub fn cmd_form_of(command: &str) -> Option<String> {
    let words = shell_words(command)?;
    let (program, args) = words.split_first()?;
    let mut line = format!("\"{}\"", program.replace('/', "\\"));
    for arg in args {
        line.push(' ');
        line.push_str(arg);
    }
    Some(line)
}

/// Whether a hook command's program names the same file as `bin`: equal paths, or on Windows
/// equal once `/` and `\` and letter case are read alike.
fn same_program(program: &str, bin: &Path) -> bool {
    let fold = |t: &str| t.replace('\\', "/").to_lowercase();
    Path::new(program) == bin
        || (cfg!(windows) && fold(program) == fold(&bin.display().to_string()))
}

/// Whether a program's file name is ours: `agent-tray`, or `agent-tray.exe` in any case.
pub fn is_our_program_name(program: &str) -> bool {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    name == "agent-tray" || name.eq_ignore_ascii_case("agent-tray.exe")
}

/// Quotes a word for `sh` when it holds anything but plain path characters.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits a command line the way `sh` would for plain words and quotes (no expansions). `None`
/// when the quoting is unbalanced.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// How a hook command relates to us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Ours, with this binary's path.
    Current,
    /// Ours, from a binary that has moved (its old path).
    Moved(String),
    /// Runs `agent-tray hook` but with arguments we never write: the user's edit.
    Edited,
    NotOurs,
}

/// Classifies a hook command for `agent` against the current binary path.
pub fn ownership(command: &str, bin: &Path, agent: Agent) -> Ownership {
    let Some(words) = shell_words(command) else {
        return Ownership::NotOurs;
    };
    let Some((program, args)) = words.split_first() else {
        return Ownership::NotOurs;
    };
    if !is_our_program_name(program) {
        return Ownership::NotOurs;
    }
    if args.first().map(String::as_str) != Some("hook") {
        return Ownership::NotOurs;
    }
    let exact = args == ["hook"] || args == ["hook", "--agent", agent.as_str()];
    if !exact {
        return Ownership::Edited;
    }
    if same_program(program, bin) {
        Ownership::Current
    } else {
        Ownership::Moved(program.clone())
    }
}

/// The path of this binary, as it should go into the hooks.
pub fn current_binary() -> Result<PathBuf, InstallError> {
    let exe = std::env::current_exe().map_err(InstallError::NoBinary)?;
    // A binary that was replaced while running shows as "… (deleted)"; the path is still right.
    let text = exe.display().to_string();
    Ok(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(&text),
    ))
}

/// Reads a file, `None` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<String>, InstallError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| InstallError::Unparsable {
                path: path.to_path_buf(),
                format: "UTF-8 text",
                detail: "it holds bytes that are not UTF-8".into(),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `text` to `path` through the [atomic writer](crate::atomic_file) (temp file, fsync,
/// rename; the file's mode and a symlink kept), after a timestamped backup of the previous
/// version beside it. `old` is what the plan was made from: if the file no longer holds it when
/// the new text is ready (the agent saved its settings meanwhile), nothing is written and the
/// user is told to run the command again, rather than undoing the agent's change.
pub fn write_file(
    path: &Path,
    old: Option<&str>,
    text: &str,
) -> Result<Option<PathBuf>, InstallError> {
    write_file_with(path, old, text, &|_| {})
}

/// [`write_file`], with a hook run right before the final comparison and rename (tests play
/// the agent there).
pub fn write_file_with(
    path: &Path,
    old: Option<&str>,
    text: &str,
    before_rename: &dyn Fn(&Path),
) -> Result<Option<PathBuf>, InstallError> {
    let werr = |source| InstallError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut backup = None;
    if old.is_some() {
        let target = fs::canonicalize(path).map_err(werr)?;
        let dir = target
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let stamp = chrono::Local::now().format("%Y%m%dT%H%M%S%.3f");
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let copy = dir.join(format!("{name}.agent-tray-backup-{stamp}"));
        fs::copy(&target, &copy).map_err(werr)?;
        prune_backups(&dir, &name);
        backup = Some(copy);
    }
    let current = match old {
        Some(old) => Current::Bytes(old.as_bytes()),
        None => Current::Absent,
    };
    AtomicWrite::new(path)
        .expect_current(current)
        .before_rename(before_rename)
        .write(text.as_bytes())
        .map_err(|e| match e {
            AtomicWriteError::ChangedMeanwhile { path } => InstallError::ChangedMeanwhile { path },
            AtomicWriteError::Io { source, .. } => werr(source),
        })?;
    Ok(backup)
}

fn prune_backups(dir: &Path, name: &str) {
    let prefix = format!("{name}.agent-tray-backup-");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut backups: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    backups.sort();
    let excess = backups.len().saturating_sub(BACKUPS_KEPT);
    for old in backups.into_iter().take(excess) {
        let _ = fs::remove_file(old);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn on_windows_the_hook_runs_under_git_bash_with_forward_slashes_and_under_cmd_quoted() {
        use crate::paths::Desktop;
        let bin = Path::new(r"D:\Tools\Agent Tray\agent-tray.exe");
        let bash = hook_command_on(Desktop::Windows, bin, Agent::Claude);
        assert_eq!(
            bash,
            "'D:/Tools/Agent Tray/agent-tray.exe' hook --agent claude"
        );
        // Read back by sh's rules, the program is the file's path in a form Windows opens.
        assert_eq!(
            shell_words(&bash).unwrap()[0],
            "D:/Tools/Agent Tray/agent-tray.exe"
        );
        let plain = Path::new(r"C:\tools\agent-tray.exe");
        assert_eq!(
            hook_command_on(Desktop::Windows, plain, Agent::Codex),
            "C:/tools/agent-tray.exe hook --agent codex"
        );
        assert_eq!(
            hook_command_for_cmd(bin, Agent::Codex),
            r#""D:\Tools\Agent Tray\agent-tray.exe" hook --agent codex"#
        );
        assert_eq!(
            cmd_form_of(&bash).as_deref(),
            Some(r#""D:\Tools\Agent Tray\agent-tray.exe" hook --agent claude"#)
        );
        assert_eq!(cmd_form_of("'unbalanced"), None);
        // Unix keeps its form.
        assert_eq!(
            hook_command_on(
                Desktop::Linux,
                Path::new("/opt/a b/agent-tray"),
                Agent::Claude
            ),
            "'/opt/a b/agent-tray' hook --agent claude"
        );
    }

    #[test]
    fn a_windows_entry_of_ours_is_recognised_whatever_its_slashes_and_case() {
        assert!(is_our_program_name("C:/x/agent-tray.exe"));
        assert!(is_our_program_name(r"C:\x\Agent-Tray.EXE"));
        assert!(is_our_program_name("/usr/local/bin/agent-tray"));
        assert!(!is_our_program_name("C:/x/agent-tray.exe.bak"));
        assert!(!is_our_program_name("/x/not-agent-tray"));
        let bin = Path::new(r"C:\tools\agent-tray.exe");
        let moved = ownership(
            "D:/old/agent-tray.exe hook --agent claude",
            bin,
            Agent::Claude,
        );
        assert_eq!(moved, Ownership::Moved("D:/old/agent-tray.exe".into()));
        assert_eq!(
            ownership(
                "C:/tools/agent-tray.exe hook --agent claude --x",
                bin,
                Agent::Claude
            ),
            Ownership::Edited
        );
    }

    #[test]
    fn our_hook_is_recognised_wherever_the_binary_lives_and_edits_are_not_ours() {
        let bin = Path::new("/usr/local/bin/agent-tray");
        let c = Agent::Claude;
        assert_eq!(
            ownership("/usr/local/bin/agent-tray hook --agent claude", bin, c),
            Ownership::Current
        );
        assert_eq!(
            ownership("/opt/old/agent-tray hook --agent claude", bin, c),
            Ownership::Moved("/opt/old/agent-tray".into())
        );
        assert_eq!(
            ownership("'/home/me/my tools/agent-tray' hook", bin, c),
            Ownership::Moved("/home/me/my tools/agent-tray".into())
        );
        assert_eq!(
            ownership(
                "/usr/local/bin/agent-tray hook --agent claude --verbose",
                bin,
                c
            ),
            Ownership::Edited
        );
        assert_eq!(
            ownership("/usr/local/bin/agent-tray hook --agent codex", bin, c),
            Ownership::Edited
        );
        assert_eq!(
            ownership("/usr/local/bin/agent-tray list", bin, c),
            Ownership::NotOurs
        );
        assert_eq!(
            ownership("other-tool hook --agent claude", bin, c),
            Ownership::NotOurs
        );
        assert_eq!(ownership("echo 'unbalanced", bin, c), Ownership::NotOurs);
    }

    #[test]
    fn a_binary_path_with_spaces_is_quoted_and_reads_back() {
        let bin = Path::new("/home/me/my tools/agent-tray");
        let cmd = hook_command(bin, Agent::Codex);
        assert_eq!(cmd, "'/home/me/my tools/agent-tray' hook --agent codex");
        assert_eq!(ownership(&cmd, bin, Agent::Codex), Ownership::Current);
        assert_eq!(
            shell_words(r#"a "b c" d\ e 'f''g'"#).unwrap(),
            ["a", "b c", "d e", "fg"]
        );
    }

    #[test]
    fn a_settings_file_the_agent_saves_while_we_write_is_left_as_the_agent_wrote_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        fs::write(&path, "{\n  \"model\": \"opus\"\n}\n").unwrap();
        let old = read_optional(&path).unwrap();
        let plan = crate::agents::claude::install::plan_text(
            &path,
            old.as_deref(),
            Path::new("/opt/agent-tray"),
            Action::Install,
        )
        .unwrap();
        let new = plan.changes[0].new.as_deref().unwrap();
        let agent = "{\n  \"model\": \"sonnet\"\n}\n";
        let err = write_file_with(&path, old.as_deref(), new, &|p| {
            fs::write(p, agent).unwrap()
        })
        .unwrap_err();
        assert!(
            matches!(err, InstallError::ChangedMeanwhile { .. }),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("settings.json")
                && text.contains("changed by another program")
                && text.contains("again"),
            "{text}"
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            agent,
            "the agent's change stays"
        );
        // Positive control: nobody in between, the same write lands.
        write_file_with(&path, Some(agent), new, &|_| {}).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), new);
    }

    #[test]
    #[cfg(unix)] // modes and symlinks
    fn writing_keeps_a_backup_the_mode_and_a_symlinks_target() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("dotfiles/settings.json");
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::write(&real, "{}\n").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = tmp.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let backup = write_file(&link, Some("{}\n"), "{\"a\":1}\n")
            .unwrap()
            .unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link stays a link"
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\":1}\n");
        assert_eq!(fs::read_to_string(&backup).unwrap(), "{}\n");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let leftovers: Vec<_> = fs::read_dir(real.parent().unwrap())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
