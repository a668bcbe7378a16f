//! `agent-tray`: the command line of Agent Tray.
//!
//! `hook` is what the agents run on every event, so it is dispatched before anything else is set
//! up (no argument parser, no logger, no runtime); every other command goes through clap.

use std::process::ExitCode;

use agent_tray::cli;

fn main() -> ExitCode {
    // The agents run these on every event: no parser, no logger, no runtime; exit 0 whatever
    // happens, print nothing.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args.get(1).map(String::as_str) {
        Some("hook") => {
            agent_tray::hook::run_hook(&args[2..]);
            return ExitCode::SUCCESS;
        }
        Some("notify") => {
            agent_tray::hook::run_notify(&args[2..]);
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    cli::main()
}
