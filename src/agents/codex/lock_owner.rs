//! Who a Codex thread belongs to, from the holder of its writer lock (read by the rollouts feed
//! and the app-server feed through [`crate::feeds::procfs`]'s lock probe). The walk up is the
//! hook's own ([`outermost_codex`]), so every feed names the same pid.

use super::outermost_codex;
use crate::process::ProcessTable;

fn comm_of(table: &impl ProcessTable, pid: u32) -> Option<String> {
    table.info(pid).map(|i| i.comm)
}

fn is_codex(table: &impl ProcessTable, pid: u32) -> bool {
    comm_of(table, pid).is_some_and(|c| c == "codex" || c == "codex.exe")
}

/// Who a Codex thread belongs to, decided from the holder of its writer lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodexOwner {
    /// The session's pid (the outermost `codex` ancestor of the holder).
    Pid(u32),
    /// Only a `codex app-server` left behind by a TUI that is gone holds the lock: its parent is
    /// init (or a subreaper), no `codex` is above it, and no `codex` runs below it. Nobody can see
    /// or drive this thread any more, so the user's session is over.
    DetachedServer,
}

/// Decides [`CodexOwner`] for a lock held by `holder`. The walk up is the hook's own
/// ([`outermost_codex`]), so both feeds name the same pid.
pub fn codex_owner<T: ProcessTable>(table: &T, holder: u32) -> CodexOwner {
    let owner = outermost_codex(table, holder);
    if owner != holder {
        return CodexOwner::Pid(owner);
    }
    let is_server = table
        .cmdline(holder)
        .is_some_and(|argv| argv.iter().skip(1).any(|a| a == "app-server"));
    let orphaned = match table.info(holder).map(|i| i.ppid) {
        Some(0) | Some(1) | None => true,
        Some(parent) => comm_of(table, parent)
            .is_some_and(|c| matches!(c.as_str(), "systemd" | "init" | "tini" | "dumb-init")),
    };
    let drives_a_tui = table
        .children(holder)
        .into_iter()
        .any(|child| is_codex(table, child));
    if is_server && orphaned && !drives_a_tui {
        CodexOwner::DetachedServer
    } else {
        CodexOwner::Pid(holder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::ScriptedTable;

    #[test]
    fn the_session_pid_is_the_tui_above_the_app_server_that_holds_the_lock() {
        // node launcher (not codex) → codex TUI → codex app-server (holds the lock).
        let t = ScriptedTable::from_rows(&[
            (10, 1, "bash", "bash"),
            (20, 10, "node", "node /usr/bin/codex"),
            (30, 20, "codex", "codex"),
            (40, 30, "codex", "codex app-server"),
        ]);
        assert_eq!(codex_owner(&t, 40), CodexOwner::Pid(30));
    }

    #[test]
    fn a_single_process_codex_holding_its_own_lock_is_its_own_session_pid() {
        // `codex --no-daemon` or `codex exec`: one process writes and holds the lock.
        let t = ScriptedTable::from_rows(&[
            (10, 1, "bash", "bash"),
            (30, 10, "codex", "codex exec hi"),
        ]);
        assert_eq!(codex_owner(&t, 30), CodexOwner::Pid(30));
    }

    #[test]
    fn an_app_server_orphaned_by_its_tui_is_a_session_that_is_over() {
        // The TUI was killed; its server was reparented to init and keeps the lock.
        let t = ScriptedTable::from_rows(&[(40, 1, "codex", "codex app-server")]);
        assert_eq!(codex_owner(&t, 40), CodexOwner::DetachedServer);
        let reaped = ScriptedTable::from_rows(&[
            (5, 1, "systemd", "/lib/systemd/systemd --user"),
            (40, 5, "codex", "codex app-server"),
        ]);
        assert_eq!(codex_owner(&reaped, 40), CodexOwner::DetachedServer);
    }

    #[test]
    fn an_app_server_run_by_an_editor_is_a_live_session() {
        // VS Code's extension host runs `codex app-server` as its child: not orphaned.
        let t = ScriptedTable::from_rows(&[
            (5, 1, "code", "code"),
            (40, 5, "codex", "codex app-server"),
        ]);
        assert_eq!(codex_owner(&t, 40), CodexOwner::Pid(40));
    }

    #[test]
    fn an_orphaned_app_server_that_still_drives_a_codex_child_is_not_over() {
        let t = ScriptedTable::from_rows(&[
            (40, 1, "codex", "codex app-server"),
            (41, 40, "codex", "codex"),
        ]);
        assert_eq!(codex_owner(&t, 40), CodexOwner::Pid(40));
    }
}
