//! `agent-tray install` / `uninstall` over the agents: which agents, each one's plan, the
//! writes, the files of ours removed, the record for the drift watch, the report. The one run
//! the CLI ([`run`]) and the desktop app ([`crate::app_install`]) share.
//!
//! Why apart from [`crate::install`]: that module is the kit the adapters build their plans
//! from (the merge, the ownership rule, the atomic write); this one loops over the adapters, so
//! it sits above them.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::agents::own_file::{self, FileOp};
use crate::agents::AgentKnowledge;
use crate::catalogue::InCatalogue;
use crate::install::{
    current_binary, path_safety, read_optional, record, write_file, Action, FileChange,
    InstallError, Plan,
};
use crate::model::Agent;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct InstallArgs {
    /// One flag per registered agent (`--claude`, `--codex`, `--gemini`, …).
    #[command(flatten)]
    pub only: AgentFlags,
    /// Also mark the Codex hooks as trusted in config.toml, so Codex runs them at once (Codex
    /// skips hooks you have not reviewed; with this flag Agent Tray records that you trust its
    /// own entries, and only those).
    #[arg(long)]
    pub trust: bool,
    /// Also run Agent Tray's status-line bridge in front of your own status line, where an
    /// agent tells its context window and plan limits only to a status-line command (Claude
    /// Code's `statusLine`): your command still runs, with the same input, and its output is
    /// shown unchanged. `uninstall` gives your setting back as it was.
    #[arg(long)]
    pub status_line: bool,
    /// Print what would change as a diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Install even though this binary, or a folder above it, can be written by other users
    /// (who could then replace it and run code as you on every agent event).
    #[arg(long)]
    pub allow_insecure_path: bool,
}

/// The agents named on the command line: one `--<agent>` flag per registered agent, made from
/// [`crate::agents::REGISTERED`] so an agent added there gets its flag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentFlags(pub Vec<Agent>);

impl clap::FromArgMatches for AgentFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(AgentFlags(
            Agent::ALL
                .iter()
                .copied()
                .filter(|a| {
                    matches
                        .try_get_one::<bool>(a.as_str())
                        .ok()
                        .flatten()
                        .copied()
                        .unwrap_or(false)
                })
                .collect(),
        ))
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for AgentFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Agent::ALL.iter().fold(cmd, |cmd, agent| {
            cmd.arg(
                clap::Arg::new(agent.as_str())
                    .long(agent.as_str())
                    .action(clap::ArgAction::SetTrue)
                    .help(format!(
                        "{} only (its hooks in ${} or the default folder)",
                        agent.entry().product_name,
                        agent.entry().config_dir_env
                    )),
            )
        })
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl InstallArgs {
    /// The agents named by flags; with none, every agent that says so
    /// ([`crate::agents::AgentAdapter::install_by_default`]: found installed here; Claude Code
    /// and Codex always, as before other agents were known).
    pub fn agents(&self) -> Vec<Agent> {
        if !self.only.0.is_empty() {
            return self.only.0.clone();
        }
        Agent::ALL
            .iter()
            .copied()
            .filter(|a| a.adapter().install_by_default())
            .collect()
    }
}

/// Plans the change for the agents asked for.
pub fn plan(args: &InstallArgs, action: Action, bin: &Path) -> Result<Plan, InstallError> {
    let mut plan = Plan::default();
    for agent in args.agents() {
        let adapter = agent.adapter();
        let dir = adapter.config_dir().ok_or(InstallError::NoConfigDir {
            agent: adapter.entry().product_name,
            env: adapter.entry().config_dir_env,
        })?;
        let options = crate::agents::InstallOptions {
            trust: args.trust,
            status_line: args.status_line,
        };
        let part = adapter.plan_hooks(&dir, bin, action, options)?;
        plan.changes.extend(part.changes);
        plan.notes.extend(part.notes);
    }
    Ok(plan)
}

/// The files that are ours alone (Copilot's hook file, OpenCode's plugin, Cline's scripts) that `uninstall`
/// removes: each present one that [`plan`] found ours (it refuses one that is not).
pub fn own_file_removals(
    args: &InstallArgs,
    action: Action,
) -> Result<Vec<(PathBuf, String)>, InstallError> {
    let mut out = Vec::new();
    if action != Action::Uninstall {
        return Ok(out);
    }
    for agent in args.agents() {
        let adapter = agent.adapter();
        let Some(dir) = adapter.config_dir() else {
            continue;
        };
        for path in adapter.own_files(&dir) {
            if let Some(old) = read_optional(&path)? {
                out.push((path, old));
            }
        }
    }
    Ok(out)
}

/// Notes what was installed (or uninstalled) where, so the engine can tell hooks that vanished
/// from hooks never installed ([`crate::hook_drift`]). Best effort: a record that cannot be
/// written costs only the drift alert; the sentences saying so are returned.
pub fn record_install(args: &InstallArgs, action: Action, bin: &Path) -> Vec<String> {
    let mut errors = Vec::new();
    let Ok(paths) = crate::paths::TrayPaths::from_env() else {
        return errors;
    };
    for agent in args.agents() {
        let dir = agent.adapter().config_dir();
        let Some(dir) = dir else { continue };
        let entry = record::InstalledHooks {
            agent,
            dir,
            bin: bin.to_path_buf(),
            trust: args.trust,
            at: chrono::Utc::now(),
        };
        if let Err(e) = record::note(&paths.data_dir, action, entry) {
            errors.push(format!(
                "agent-tray: {e} (removed hooks will not be noticed)"
            ));
        }
    }
    errors
}

/// `agent-tray install` / `uninstall`.
pub fn run(args: &InstallArgs, action: Action) -> ExitCode {
    match run_inner(args, action) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-tray: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: &InstallArgs, action: Action) -> Result<(), InstallError> {
    let bin = current_binary()?;
    if action == Action::Install && !args.allow_insecure_path {
        path_safety::check(&bin).map_err(InstallError::InsecurePath)?;
    }
    let report = apply(args, action, &bin)?;
    let mut out = io::stdout().lock();
    for line in &report.lines {
        let _ = writeln!(out, "{line}");
    }
    if !args.dry_run {
        for error in record_install(args, action, &bin) {
            eprintln!("{error}");
        }
    }
    for note in &report.notes {
        let _ = writeln!(out, "note: {note}");
    }
    Ok(())
}

/// What an install or uninstall did (or, with `--dry-run`, would do): the lines the CLI prints
/// (each change, or the diffs), then the plan's notes.
#[derive(Debug, Default)]
pub struct Report {
    pub lines: Vec<String>,
    pub notes: Vec<String>,
}

/// Plans and applies (or, with `--dry-run`, only describes) the change for the agents asked
/// for. The binary's safety is the caller's to check first.
pub fn apply(args: &InstallArgs, action: Action, bin: &Path) -> Result<Report, InstallError> {
    let plan = plan(args, action, bin)?;
    let removals = own_file_removals(args, action)?;
    let verb = match action {
        Action::Install => "install",
        Action::Uninstall => "uninstall",
    };
    let pending: Vec<&FileChange> = plan.changes.iter().filter(|c| c.new.is_some()).collect();
    let nothing = pending.is_empty() && removals.is_empty();
    let removal =
        |(path, old): &(PathBuf, String)| (path.clone(), FileOp::Remove { old: old.clone() });
    let mut lines = Vec::new();
    if args.dry_run {
        // A diff ends in its own newline; the CLI printed it as it came.
        let diffs = pending.iter().filter_map(|c| c.diff()).chain(
            removals
                .iter()
                .map(removal)
                .filter_map(|(path, op)| own_file::diff(&path, &op)),
        );
        lines.extend(
            diffs
                .filter(|d| !d.is_empty())
                .map(|d| d.trim_end_matches('\n').to_string()),
        );
        if nothing {
            lines.push(format!("agent-tray {verb}: nothing to change"));
        }
    } else {
        for change in &pending {
            if let Some(new) = change.new.as_deref() {
                let backup = write_file(&change.path, change.old.as_deref(), new)?;
                lines.push(match backup {
                    Some(b) => format!(
                        "updated {} (previous version kept as {})",
                        change.path.display(),
                        b.display()
                    ),
                    None => format!("created {}", change.path.display()),
                });
            }
        }
        for (path, op) in removals.iter().map(removal) {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(line) = own_file::apply(&path, &name, &op)? {
                lines.push(line);
            }
        }
        if nothing {
            lines.push(format!("agent-tray {verb}: already done, nothing changed"));
        }
    }
    Ok(Report {
        lines,
        notes: plan.notes,
    })
}
