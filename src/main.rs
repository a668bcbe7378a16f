//! `agent-tray`: the command line of Agent Tray.
//!
//! `hook` is what the agents run on every event, so it is dispatched before anything else is set
//! up (no argument parser, no logger, no runtime); every other command goes through clap.
//!
//! The entry point is the C `main`, not Rust's `fn main` (`#![no_main]`): std's start-up code
//! reads `/proc/self/maps` (through `pthread_getattr_np`, to find the main thread's stack guard),
//! installs SIGSEGV/SIGBUS handlers on an alternate signal stack and polls fds 0–2, and on exit
//! tears the alternate stack down again: about a dozen system calls and a quarter of the hook's
//! own start-up time, paid on every agent event for a message printed only on a stack overflow.
//! This entry does the two parts of that which change behaviour itself ([`start`]): fds 0–2 are
//! made valid, SIGPIPE is ignored (a closed stdout is an `EPIPE` error, not a silent death).
//! What is given up: a stack overflow ends the process with a plain SIGSEGV instead of std's
//! "has overflowed its stack" message first, and the main thread has no name in panic messages.
//! Arguments still come from std (`std::env::args_os` gets them from the loader on Linux).
// (Built as a test, the harness provides the entry: there is no C `main` then.)
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
use std::process::ExitCode;

#[cfg(not(test))]
use agent_tray::cli;

/// The process's entry, called by the C runtime. Returns through [`std::process::exit`], which
/// flushes stdout as std's own runtime would.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    start();
    // The agents run these on every event: no parser, no logger, no runtime; exit 0 whatever
    // happens, print nothing.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args.get(1).map(String::as_str) {
        Some("hook") => {
            agent_tray::hook::run_hook(&args[2..]);
            std::process::exit(0)
        }
        Some("notify") => {
            agent_tray::hook::run_notify(&args[2..]);
            std::process::exit(0)
        }
        // The status-line bridge: run on every redraw of an agent's status line, so routed
        // like the hook; it exits with the user's own status-line command's status.
        Some("status-line") => {
            std::process::exit(agent_tray::status_line::run_status_line(&args[2..]))
        }
        // What the desktop entry runs: a launch of the app while it runs costs this binary's
        // start, not the app's (see `app_launch`).
        Some("open") => {
            let rest: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
            match agent_tray::app_launch::run_open(&rest) {
                Ok(()) => std::process::exit(0),
                Err(error) => {
                    eprintln!("agent-tray open: {error}");
                    let usage = matches!(error, agent_tray::app_launch::OpenError::Usage(_));
                    std::process::exit(if usage { 2 } else { 1 })
                }
            }
        }
        _ => {}
    }
    let code = std::panic::catch_unwind(cli::main).unwrap_or(ExitCode::from(101)); // as std: a panic in main exits 101
    std::process::exit(exit_status(code))
}

#[cfg(all(not(test), not(unix)))]
/// Windows has no closed-descriptor or SIGPIPE trap to set right: the C runtime's `main` is enough.
fn start() {}

#[cfg(all(not(test), unix))]
/// What std's runtime does before `main` that matters here: fds 0, 1 and 2 open (to /dev/null if
/// they were closed, so a file opened later never becomes "stdout"), SIGPIPE ignored.
fn start() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: three valid pollfds for the duration of the call; timeout 0 never blocks.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    if polled > 0 {
        for pfd in fds.iter().filter(|p| p.revents & libc::POLLNVAL != 0) {
            // SAFETY: a NUL-terminated path; the new descriptor is the lowest free one, i.e.
            // this closed fd (they are reopened in order).
            let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if fd != pfd.fd {
                std::process::abort(); // as std does: no sane way to run without fds 0-2
            }
        }
    }
    // SAFETY: setting a signal's disposition to ignore; no handler code runs.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

#[cfg(not(test))]
/// The number an [`ExitCode`] stands for (std keeps it private; a command returns one of a few).
fn exit_status(code: ExitCode) -> i32 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .map_or(1, i32::from)
}
