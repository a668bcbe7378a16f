//! Which process is the agent that ran this hook?
//!
//! The pid a hook reports is what the pid watcher later watches, and what tells a resumed
//! session's new process from the old one: a wrong pid is worse than none. So:
//! - **Never trust the parent blindly.** A Claude command hook runs under `sh -c` (recorded: the
//!   hook's parent is `sh`, the agent its grandparent); Codex runs it directly or through a shell.
//!   The walk goes up from the parent past shells only, to the first process that *is* an agent
//!   (by its name, or for a `node`/`bun` launcher by its command line). Anything else on the way
//!   (an editor, a wrapper, init) ends the walk with no pid.
//! - **Codex: the outermost codex.** By default the Codex TUI runs hooks from a background
//!   `codex app-server` it started. The session belongs to the process the user sees, so the walk
//!   keeps climbing while the parent is also a (native) `codex`. The discovery feed applies the
//!   same rule to the holder of a rollout's writer lock ([`crate::agents::codex::outermost_codex`]), so both feeds
//!   report the same pid and never take a session over from each other.
//! - **A hook for one agent never reports the other's pid** (Claude running `codex exec` as a
//!   tool, or the other way round): the first agent found must be the one asked for.
//!
//! The walk is a pure function over a [`ProcessTable`] (see [`crate::process`], shared with the
//! feeds and the pid watcher), so the tests script every tree; the Linux table reads `/proc` (one
//! small read per step). Other platforms report no pid for now.

use crate::model::Agent;

/// Deeper than any real hook ancestry (hook → sh → claude is two steps).
const MAX_DEPTH: usize = 16;

/// Shells a hook command may run under. They are stepped over, never reported.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "ash", "busybox", "tcsh", "csh", "yash",
    "nu", "pwsh",
];

/// Interpreters that may host an agent; their command line tells which.
const LAUNCHERS: &[&str] = &["node", "nodejs", "bun", "deno", "MainThread"];

pub use crate::process::{ProcInfo, ProcessTable, SystemProcesses};

/// What each agent says of its own processes: the port the walk asks, implemented by the
/// adapters one floor up (`crate::agents::Adapters`) and handed in by the caller, so this kit
/// (which the adapters use) never names them.
pub trait AgentProcesses: Sync {
    /// A process of `agent` that is no session (a pool helper, a supervisor).
    fn is_helper_process(&self, agent: Agent, argv: &[String]) -> bool;
    /// The process that owns the session, from the first process of `agent` found above a hook
    /// (climbing past the agent's own wrappers); `None` when that process owns none.
    fn session_process(&self, agent: Agent, table: &dyn ProcessTable, pid: u32) -> Option<u32>;
}

/// What one process is, for the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcKind {
    Shell,
    /// The agent's own native binary (`claude`, `codex`).
    Native(Agent),
    /// An interpreter running the agent (`node …/claude-code/cli.js`).
    Launched(Agent),
    Other,
}

impl ProcKind {
    fn agent(self) -> Option<Agent> {
        match self {
            ProcKind::Native(a) | ProcKind::Launched(a) => Some(a),
            ProcKind::Shell | ProcKind::Other => None,
        }
    }
}

/// Classifies a process by its name, and for a launcher by its command line. A Claude Code
/// helper ([`AgentProcesses::is_helper_process`]) is no agent here: the walk stops at it with no pid, rather than
/// bind a session to a process that outlives it.
pub fn classify(
    table: &dyn ProcessTable,
    pid: u32,
    info: &ProcInfo,
    processes: &dyn AgentProcesses,
) -> ProcKind {
    let comm = info.comm.as_str();
    if SHELLS.contains(&comm) {
        return ProcKind::Shell;
    }
    if let Some(agent) = crate::catalogue::by_process_name(comm) {
        if table
            .cmdline(pid)
            .is_some_and(|a| processes.is_helper_process(agent, &a))
        {
            return ProcKind::Other;
        }
        return ProcKind::Native(agent);
    }
    if LAUNCHERS.contains(&comm) {
        if let Some(argv) = table.cmdline(pid) {
            match agent_in_cmdline(&argv) {
                Some(agent) if processes.is_helper_process(agent, &argv) => return ProcKind::Other,
                Some(agent) => return ProcKind::Launched(agent),
                None => {}
            }
        }
    }
    ProcKind::Other
}

/// A launcher's script: `node /…/@anthropic-ai/claude-code/cli.js`, `node /usr/bin/claude`,
/// `node /…/@openai/codex/bin/codex.js`. Only the script counts (the first argument that is not
/// an option): a later argument, a prompt say, may mention anything.
pub fn agent_in_cmdline(argv: &[String]) -> Option<Agent> {
    let script = argv.iter().skip(1).find(|a| !a.starts_with('-'))?;
    crate::catalogue::by_script(script)
}

/// Walks up from `start` (the hook's parent) to the agent's pid. `want` is the agent the hook
/// was installed for, when known; returns the pid and the agent found.
pub fn find_agent_pid(
    table: &dyn ProcessTable,
    start: u32,
    want: Option<Agent>,
    processes: &dyn AgentProcesses,
) -> Option<(u32, Agent)> {
    let mut pid = start;
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return None;
        }
        let info = table.info(pid)?;
        match classify(table, pid, &info, processes) {
            ProcKind::Shell => pid = info.ppid,
            ProcKind::Other => return None,
            kind => {
                let agent = kind.agent()?;
                if want.is_some_and(|w| w != agent) {
                    return None;
                }
                // The agent's own rule: climbing past its wrappers (Codex's outermost codex),
                // or no session process at all (Codex's app-server with no TUI above it).
                let pid = processes.session_process(agent, table, pid)?;
                return Some((pid, agent));
            }
        }
    }
    None
}

/// The name of the first process above `start` that is not a shell: who ran the hook when it is
/// not an agent we know (GitHub Copilot CLI's `copilot`, say).
pub fn caller_name(table: &dyn ProcessTable, start: u32) -> Option<String> {
    table
        .info(first_non_shell(table, start)?)
        .map(|info| info.comm)
}

/// [`caller_name`] for this hook process.
pub fn caller_name_of_this_hook() -> Option<String> {
    caller_name(&SystemProcesses, crate::process::parent_of_this_process()?)
}

/// The first process above `start` (itself included) that is not a shell: what ran the hook.
pub fn first_non_shell(table: &dyn ProcessTable, start: u32) -> Option<u32> {
    let mut pid = start;
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return None;
        }
        let info = table.info(pid)?;
        if !SHELLS.contains(&info.comm.as_str()) {
            return Some(pid);
        }
        pid = info.ppid;
    }
    None
}

/// The agent process that ran this hook, from the real process table.
pub fn agent_pid_of_this_hook(
    want: Option<Agent>,
    processes: &dyn AgentProcesses,
) -> Option<(u32, Agent)> {
    let parent = crate::process::parent_of_this_process()?;
    find_agent_pid(&SystemProcesses, parent, want, processes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    // The walk with every adapter's rules, as the hook runs it.
    fn find_agent_pid(
        table: &dyn ProcessTable,
        start: u32,
        want: Option<Agent>,
    ) -> Option<(u32, Agent)> {
        super::find_agent_pid(table, start, want, &crate::agents::Adapters)
    }
    use crate::agents::claude::is_agent_helper;
    use crate::agents::codex::outermost_codex;

    use crate::test_support::ScriptedTable as Tree;

    #[test]
    fn a_claude_command_hook_finds_claude_past_its_sh() {
        // Recorded: hook_ppid_comm "sh", hook_grandparent_comm "claude".
        let t = Tree::default()
            .with(2873, 500, "sh", &["sh", "-c", "agent-tray hook"])
            .with(500, 400, "claude", &["claude"])
            .with(400, 1, "bash", &["bash"]);
        assert_eq!(
            find_agent_pid(&t, 2873, Some(Agent::Claude)),
            Some((500, Agent::Claude))
        );
        assert_eq!(find_agent_pid(&t, 2873, None), Some((500, Agent::Claude)));
    }

    #[test]
    fn a_codex_hook_run_by_an_app_server_with_no_tui_reports_no_pid() {
        // The TUI was killed (the server was re-parented to init), or `codex queue` runs a turn:
        // the server's pid would make the session live as long as the server, a ghost.
        let server = [
            "/home/dev/.codex/packages/app-server-daemon/releases/0.171.0/bin/codex",
            "app-server",
            "--listen",
            "unix://",
            "--managed-daemon",
        ];
        let t = Tree::default().with(900, 1, "codex", &server).with(
            950,
            900,
            "agent-tray",
            &["agent-tray", "hook"],
        );
        assert_eq!(find_agent_pid(&t, 900, Some(Agent::Codex)), None);
        // Positive control: with its TUI above it, the TUI is the session's process.
        let t = Tree::default()
            .with(800, 700, "codex", &["codex"])
            .with(900, 800, "codex", &server)
            .with(700, 1, "bash", &["bash"]);
        assert_eq!(
            find_agent_pid(&t, 900, Some(Agent::Codex)),
            Some((800, Agent::Codex))
        );
    }

    #[test]
    fn a_codex_hook_run_by_the_app_server_belongs_to_the_tui_above_it() {
        // Default Codex: TUI → codex app-server → hook. The user sees the TUI; its death is the
        // session's death.
        let t = Tree::default()
            .with(900, 800, "codex", &["codex", "app-server"])
            .with(800, 700, "codex", &["codex"])
            .with(
                700,
                600,
                "node",
                &["node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"],
            )
            .with(600, 1, "zsh", &["zsh"]);
        assert_eq!(
            find_agent_pid(&t, 900, Some(Agent::Codex)),
            Some((800, Agent::Codex))
        );
        // The node launcher is not a codex for ownership: the lock holder is never the launcher.
        assert_eq!(outermost_codex(&t, 900), 800);
    }

    #[test]
    fn a_codex_hook_run_directly_reports_the_codex_parent() {
        // Recorded with --no-daemon: hook_parent_comm "codex", grandparent "node".
        let t = Tree::default()
            .with(300, 200, "codex", &["codex", "--no-daemon"])
            .with(200, 1, "node", &["node", "/x/codex.js"]);
        assert_eq!(find_agent_pid(&t, 300, None), Some((300, Agent::Codex)));
    }

    #[test]
    fn claude_launched_by_node_is_found_by_its_command_line() {
        let t = Tree::default()
            .with(50, 40, "dash", &["/bin/sh", "-c", "x"])
            .with(
                40,
                1,
                "node",
                &[
                    "node",
                    "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js",
                    "--resume",
                ],
            );
        assert_eq!(
            find_agent_pid(&t, 50, Some(Agent::Claude)),
            Some((40, Agent::Claude))
        );
    }

    #[test]
    fn a_tree_without_an_agent_gives_no_pid_rather_than_a_wrong_one() {
        // A person running the hook from a terminal, an editor's task runner, a plain node app.
        let t = Tree::default()
            .with(10, 9, "bash", &["bash"])
            .with(9, 8, "tmux: server", &["tmux"])
            .with(8, 1, "systemd", &["systemd"])
            .with(20, 19, "sh", &["sh"])
            .with(19, 1, "node", &["node", "server.js", "claude"]);
        assert_eq!(find_agent_pid(&t, 10, None), None);
        assert_eq!(
            find_agent_pid(&t, 20, None),
            None,
            "only the script names the agent, not a later argument"
        );
        assert_eq!(find_agent_pid(&t, 1, None), None);
        assert_eq!(find_agent_pid(&t, 12345, None), None, "a vanished parent");
    }

    #[test]
    fn a_hook_for_one_agent_never_reports_the_other() {
        // Claude ran `codex exec` as a tool; a Claude-installed hook fired inside it would
        // otherwise report codex's pid for a Claude session.
        let t = Tree::default()
            .with(70, 60, "sh", &["sh"])
            .with(60, 50, "codex", &["codex", "exec"])
            .with(50, 1, "claude", &["claude"]);
        assert_eq!(find_agent_pid(&t, 70, Some(Agent::Claude)), None);
        assert_eq!(
            find_agent_pid(&t, 70, Some(Agent::Codex)),
            Some((60, Agent::Codex))
        );
    }

    #[test]
    fn a_background_pool_helper_or_the_claude_daemon_is_never_a_sessions_pid() {
        // Claude Code's background sessions: `claude daemon` supervises, `claude --bg-spare`
        // processes wait in a pool. Neither is a session; bound as one, the session would live
        // as long as the pool (a ghost). Ancestries as `ps -o pid,ppid,args` shows them.
        let spare = Tree::default()
            .with(
                610,
                600,
                "sh",
                &["/bin/sh", "-c", "agent-tray hook --agent claude"],
            )
            .with(
                600,
                500,
                "claude",
                &["claude", "--bg-spare", "--pool-id", "3"],
            )
            .with(500, 1, "claude", &["claude", "daemon"]);
        assert_eq!(find_agent_pid(&spare, 610, Some(Agent::Claude)), None);
        assert_eq!(find_agent_pid(&spare, 610, None), None);
        let daemon = Tree::default()
            .with(710, 500, "sh", &["/bin/sh", "-c", "agent-tray hook"])
            .with(
                500,
                1,
                "claude",
                &["/usr/local/bin/claude", "daemon", "--foreground"],
            );
        assert_eq!(find_agent_pid(&daemon, 710, Some(Agent::Claude)), None);
        let launched = Tree::default()
            .with(810, 800, "sh", &["sh", "-c", "x"])
            .with(
                800,
                1,
                "node",
                &[
                    "node",
                    "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js",
                    "--bg-spare",
                ],
            );
        assert_eq!(find_agent_pid(&launched, 810, None), None);
        // Positive control: a session started with `claude --bg` (its worker) and one whose
        // prompt merely mentions the flag are sessions.
        let worker = Tree::default()
            .with(910, 900, "sh", &["sh", "-c", "x"])
            .with(900, 500, "claude", &["claude", "--bg", "fix the tests"])
            .with(500, 1, "claude", &["claude", "daemon"]);
        assert_eq!(
            find_agent_pid(&worker, 910, None),
            Some((900, Agent::Claude))
        );
        let prompt = Tree::default()
            .with(920, 901, "sh", &["sh", "-c", "x"])
            .with(
                901,
                1,
                "claude",
                &["claude", "-p", "explain --bg-spare and daemon"],
            );
        assert_eq!(
            find_agent_pid(&prompt, 920, None),
            Some((901, Agent::Claude))
        );
        assert!(is_agent_helper(&["claude".into(), "--bg-spare".into()]));
        assert!(!is_agent_helper(&[
            "claude".into(),
            "--resume".into(),
            "daemon".into()
        ]));
    }

    #[test]
    fn a_loop_in_the_table_ends_the_walk() {
        let t = Tree::default()
            .with(5, 6, "sh", &["sh"])
            .with(6, 5, "sh", &["sh"]);
        assert_eq!(find_agent_pid(&t, 5, None), None);
    }

    #[cfg(target_os = "linux")]
    mod real_processes {
        use super::*;
        use std::process::{Child, Command, Stdio};
        use std::time::{Duration, Instant};

        /// A directory holding an executable called `name` that sleeps (a copy of `sleep`, so
        /// the kernel names the process after the file).
        fn fake_binary(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
            let path = dir.join(name);
            let sleep = ["/bin/sleep", "/usr/bin/sleep"]
                .into_iter()
                .find(|p| std::path::Path::new(p).exists())
                .expect("sleep exists");
            crate::test_executables::copy_executable(std::path::Path::new(sleep), &path);
            path
        }

        fn children_of(pid: u32) -> Vec<u32> {
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        }

        struct Kill(Child);
        impl Drop for Kill {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }

        fn wait_for_chain(root: u32, depth: usize) -> Vec<u32> {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let mut chain = vec![root];
                while let Some(c) = children_of(*chain.last().unwrap()).first() {
                    chain.push(*c);
                }
                if chain.len() >= depth || Instant::now() > deadline {
                    return chain;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }

        /// A copy of the system shell under another name, so the kernel names the process
        /// after it (`comm`) while it still runs commands.
        fn shell_named(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
            let sh = ["/bin/sh", "/usr/bin/sh"]
                .into_iter()
                .find(|p| std::path::Path::new(p).exists())
                .expect("a shell exists");
            let path = dir.join(name);
            crate::test_executables::copy_executable(&std::fs::canonicalize(sh).unwrap(), &path);
            path
        }

        #[test]
        fn the_walk_finds_a_real_claude_above_a_real_shell() {
            // claude → sh → hook: the recorded shape of every Claude command hook. The trailing
            // `; true`s keep each shell from exec-ing into its last command.
            let dir = tempfile::tempdir().unwrap();
            let claude = shell_named(dir.path(), "claude");
            let hook = fake_binary(dir.path(), "hookish");
            let child = Command::new(&claude)
                .arg("-c")
                .arg(format!("sh -c '{} 30; true'; true", hook.display()))
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            let root = child.id();
            let _guard = Kill(child);
            let chain = wait_for_chain(root, 3);
            assert_eq!(chain.len(), 3, "claude → sh → hook: {chain:?}");
            let hook_parent = SystemProcesses.info(chain[2]).unwrap().ppid;
            assert_eq!(SystemProcesses.info(hook_parent).unwrap().comm, "sh");
            assert_eq!(
                find_agent_pid(&SystemProcesses, hook_parent, Some(Agent::Claude)),
                Some((root, Agent::Claude))
            );
            assert_eq!(
                find_agent_pid(&SystemProcesses, hook_parent, Some(Agent::Codex)),
                None,
                "a Codex hook under Claude reports no pid"
            );
        }

        #[test]
        fn the_walk_climbs_nested_real_codex_processes_to_the_outermost() {
            // codex (TUI) → codex (app-server) → sh → hook.
            let dir = tempfile::tempdir().unwrap();
            let codex = shell_named(dir.path(), "codex");
            let sleeper = fake_binary(dir.path(), "hookish");
            let inner = format!("sh -c '{} 30; true'; true", sleeper.display());
            let child = Command::new(&codex)
                .arg("-c")
                .arg(format!("{} -c \"{}\"; true", codex.display(), inner))
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            let root = child.id();
            let _guard = Kill(child);
            let chain = wait_for_chain(root, 4);
            assert_eq!(chain.len(), 4, "codex → codex → sh → hook: {chain:?}");
            let hook_parent = SystemProcesses.info(chain[3]).unwrap().ppid;
            assert_eq!(hook_parent, chain[2]);
            assert_eq!(
                find_agent_pid(&SystemProcesses, hook_parent, Some(Agent::Codex)),
                Some((root, Agent::Codex)),
                "the outermost codex owns the session"
            );
            // And from the inner codex itself (the discovery feed's lock holder): the same pid.
            assert_eq!(outermost_codex(&SystemProcesses, chain[1]), root);
        }

        #[test]
        fn a_real_claude_whose_argv_says_bg_spare_is_stepped_over_not_bound() {
            // A real process named `claude` whose command line carries `--bg-spare`, running a
            // shell that runs the hook: the walk must not report it; the same tree without
            // the flag reports it (positive control).
            let dir = tempfile::tempdir().unwrap();
            let claude = shell_named(dir.path(), "claude");
            let hook = fake_binary(dir.path(), "hookish");
            let script = format!("sh -c '{} 30; true'; true", hook.display());
            for (flags, expect_bound) in [(vec!["--bg-spare"], false), (vec![], true)] {
                // `sh -c SCRIPT NAME ARGS…`: the flags land in the process's argv.
                let child = Command::new(&claude)
                    .arg("-c")
                    .arg(&script)
                    .args(&flags)
                    .stdin(Stdio::null())
                    .spawn()
                    .unwrap();
                let root = child.id();
                let _guard = Kill(child);
                let chain = wait_for_chain(root, 3);
                assert_eq!(chain.len(), 3, "claude → sh → hook: {chain:?}");
                let argv = SystemProcesses.cmdline(root).unwrap();
                assert!(
                    flags.iter().all(|f| argv.contains(&f.to_string())),
                    "{argv:?}"
                );
                let hook_parent = SystemProcesses.info(chain[2]).unwrap().ppid;
                let found = find_agent_pid(&SystemProcesses, hook_parent, Some(Agent::Claude));
                assert_eq!(
                    found,
                    expect_bound.then_some((root, Agent::Claude)),
                    "argv {argv:?}"
                );
            }
        }

        #[test]
        fn the_walk_reports_nothing_under_an_ordinary_process() {
            // This test binary is not an agent: a hook run from it finds none.
            let me = std::process::id();
            assert_eq!(find_agent_pid(&SystemProcesses, me, None), None);
        }
    }
}
