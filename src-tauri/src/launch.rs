//! Running the programs the app hands work to (`code`, `xdg-open`, `open`, `tmux`, the
//! installer) so that none outlives its welcome: each runs with no terminal of ours (stdin,
//! stdout and stderr are not the app's), is waited for with a deadline, is killed by its pid when
//! it overstays, and is always reaped (a spawned-and-forgotten child stays a zombie for the
//! app's lifetime).
//!
//! Launchers that hand off to a long-lived program (an editor's CLI, `xdg-open`, `setsid -f` in
//! front of a terminal) return within milliseconds; the long-lived program is not our child.
//! Their output is not read: a program they leave behind could hold a pipe open forever. Short
//! commands that leave nothing behind (`tmux`, the installer) have their output captured, each
//! stream read on its own thread so a full pipe cannot stall them.
//!
//! Blocking: call from a blocking thread, never from an async worker or the main thread.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a launch's output is wanted for, and how long a launcher may take: the core's, whose
/// jump plans name them ([`agent_tray::jump`]).
pub use agent_tray::jump::{Capture, LAUNCH_TIMEOUT};
/// Output kept per stream; the rest is read and dropped.
const OUTPUT_CAP: usize = 64 * 1024;
const POLL: Duration = Duration::from_millis(10);

/// A program that ran to its end within its deadline.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} did not finish within {}s and was stopped", timeout.as_secs_f32())]
    TimedOut { program: String, timeout: Duration },
    #[error("cannot wait for {program}: {source}")]
    Wait {
        program: String,
        source: std::io::Error,
    },
}

fn reader<R: Read + Send + 'static>(stream: Option<R>) -> Option<JoinHandle<String>> {
    let mut stream = stream?;
    std::thread::Builder::new()
        .name("launch-output".into())
        .spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            String::from_utf8_lossy(&kept).into_owned()
        })
        .ok()
}

/// Kills the child by its pid and reaps it.
fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `command` to its end, or kills it at `timeout`. The child is reaped on every path.
/// On Windows a [`Capture::Detached`] program is started and left to run (see [`detach`]).
pub fn run_within(
    command: &mut Command,
    timeout: Duration,
    capture: Capture,
) -> Result<Finished, LaunchError> {
    let program = command.get_program().to_string_lossy().into_owned();
    #[cfg(windows)]
    if capture == Capture::Detached {
        return detach(command, program);
    }
    let out = || match capture {
        Capture::Nothing | Capture::Detached => Stdio::null(),
        Capture::Output => Stdio::piped(),
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out())
        .stderr(out())
        .spawn()
        .map_err(|source| LaunchError::Spawn {
            program: program.clone(),
            source,
        })?;
    let stdout = reader(child.stdout.take());
    let stderr = reader(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            Ok(None) => {
                stop(&mut child);
                tracing::warn!(%program, pid = child.id(), "launched program overstayed; killed");
                return Err(LaunchError::TimedOut { program, timeout });
            }
            Err(source) => {
                stop(&mut child);
                return Err(LaunchError::Wait { program, source });
            }
        }
    };
    // Captured commands leave nothing holding their pipes, so these end with the child.
    let joined = |handle: Option<JoinHandle<String>>| {
        handle
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    Ok(Finished {
        status,
        stdout: joined(stdout),
        stderr: joined(stderr),
    })
}

/// Starts a program the user keeps (a PowerShell console) or whose status means nothing
/// (Explorer exits 1 when it worked), without waiting for it: on Windows a child that is not
/// waited for leaves no zombie, its handle closes when the `Child` is dropped. Its stdio is left
/// alone: the app has none (a GUI program), so the console Windows gives the child is its own.
#[cfg(windows)]
fn detach(command: &mut Command, program: String) -> Result<Finished, LaunchError> {
    command
        .spawn()
        .map_err(|source| LaunchError::Spawn { program, source })?;
    Ok(Finished {
        status: ExitStatus::default(),
        stdout: String::new(),
        stderr: String::new(),
    })
}

// Both tests read /proc to see that nothing is left behind: Linux only.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn gone(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_program_that_overstays_is_killed_and_reaped_at_its_deadline() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let pid_file = dir.path().join("pid");
        let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
        let started = Instant::now();
        let result = run_within(
            Command::new("sh").args(["-c", &script]),
            Duration::from_millis(500),
            Capture::Nothing,
        );
        let took = started.elapsed();
        assert!(
            matches!(result, Err(LaunchError::TimedOut { .. })),
            "{result:?}"
        );
        assert!(took < Duration::from_secs(5), "took {took:?}");
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("pid file: {e}"));
        // Killed and reaped: not even a zombie is left in /proc.
        assert!(gone(pid), "pid {pid} still in /proc");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_program_that_ends_is_reaped_and_its_output_and_status_reported() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let pid_file = dir.path().join("pid");
        let script = format!(
            "echo $$ > '{}'; echo out; echo oops >&2; exit 3",
            pid_file.display()
        );
        let done = run_within(
            Command::new("sh").args(["-c", &script]),
            Duration::from_secs(10),
            Capture::Output,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(
            (done.stdout.as_str(), done.stderr.as_str()),
            ("out", "oops")
        );
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("pid file: {e}"));
        assert!(gone(pid), "pid {pid} was not reaped");
        // Not captured: nothing read, the status still reported.
        let quiet = run_within(
            Command::new("sh").args(["-c", "echo hidden; exit 0"]),
            Duration::from_secs(10),
            Capture::Nothing,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(quiet.status.success());
        assert_eq!(quiet.stdout, "");
        assert!(matches!(
            run_within(
                &mut Command::new("/nonexistent/agent-tray-test"),
                Duration::from_secs(1),
                Capture::Nothing
            ),
            Err(LaunchError::Spawn { .. })
        ));
    }
}
