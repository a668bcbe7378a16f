//! OpenCode (`opencode-ai`, a native Bun binary; recorded with 1.18.33).
//!
//! OpenCode has no command hooks: it loads JavaScript plugins. `agent-tray install --opencode`
//! writes ours ([`install`]), which forwards the bus events that say what a session is doing to
//! `agent-tray hook --agent opencode`; [`event`] turns them into observations.
//!
//! Liveness: nothing fires on exit, clean or killed, so the pid decides. The plugin runs inside
//! the OpenCode process (the TUI's worker thread) and sends `process.pid`, which is the process
//! the user sees. Every `opencode` subcommand (`session list`, `export`) also loads plugins under
//! its own short-lived pid, but emits no session event, so only a process with a session makes
//! one. OpenCode's SQLite store (`opencode.db`) is history, not liveness: never read as sessions.

pub mod event;
pub mod install;

/// The `agent` field's value.
pub const NAME: &str = "opencode";
/// The name people see.
pub const DISPLAY_NAME: &str = "OpenCode";
/// Its colour in the window and the tray.
pub const COLOUR: &str = "#c78a00";

/// The command that resumes a session in its folder.
pub fn resume_command(session_id: &str) -> String {
    format!(
        "opencode --session {}",
        crate::install::shell_quote(session_id)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn resume_names_the_session() {
        assert_eq!(
            resume_command("ses_dd1229c72ffen4TkoQjVFBx9Vv"),
            "opencode --session ses_dd1229c72ffen4TkoQjVFBx9Vv"
        );
    }
}
