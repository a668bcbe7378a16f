//! What a failed try at a remote means: why it failed, in one line for people and one class
//! ([`classify_failure`]: unreachable, not running, unusable), and when to try again (the
//! [`Backoff`], early after a wake from sleep or a change of routes: [`should_retry_early`]).
//! Pure but for reading the machine's clocks and routes.

use std::time::Duration;

use super::state::LinkState;
use crate::remote::REMOTE_PROTOCOL;

/// The first wait after a failure.
pub const MIN_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between tries at an unreachable remote.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A link that stayed up this long (a healthy spell) starts its backoff from the beginning
/// again: a blip after it is retried after a second, whatever failed before. A host that drops
/// every link sooner (flapping) keeps backing off.
pub const STABLE_LINK: Duration = Duration::from_secs(10);
/// How often a remote that cannot serve (no or too old `agent-tray`) is tried again.
pub const UNUSABLE_RETRY: Duration = Duration::from_secs(600);

/// Exponential waits between tries, from [`MIN_BACKOFF`] to [`MAX_BACKOFF`]. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: MIN_BACKOFF }
    }
}

impl Backoff {
    /// The wait after an attempt that was connected for `connected_for` (`None`: never): a link
    /// that stayed up [`STABLE_LINK`] starts over, a flapping one keeps backing off.
    pub fn after_attempt(&mut self, connected_for: Option<Duration>) -> Duration {
        if connected_for.is_some_and(|d| d >= STABLE_LINK) {
            self.next = MIN_BACKOFF;
        }
        let wait = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        wait
    }
}

/// What the remote's first line said, when it was not a usable snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolProblem {
    /// A snapshot without `protocol`: a version from before remotes.
    NoProtocol,
    /// Another protocol version.
    Other(u32),
    /// Not the watch protocol at all (a login banner, another program's output).
    NotWatchOutput,
}

/// Why a link is down, in one line for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkFailure {
    Unreachable(String),
    NotRunning(String),
    Missing(String),
    TooOld(String),
    BadOutput(String),
}

impl LinkFailure {
    pub fn state(&self) -> LinkState {
        match self {
            LinkFailure::Unreachable(_) => LinkState::Unreachable,
            LinkFailure::NotRunning(_) => LinkState::NotRunning,
            LinkFailure::Missing(_) | LinkFailure::TooOld(_) | LinkFailure::BadOutput(_) => {
                LinkState::Unusable
            }
        }
    }

    pub fn message(&self) -> &str {
        match self {
            LinkFailure::Unreachable(m)
            | LinkFailure::NotRunning(m)
            | LinkFailure::Missing(m)
            | LinkFailure::TooOld(m)
            | LinkFailure::BadOutput(m) => m,
        }
    }
}

/// The last line of `stderr` with something in it, control characters escaped, cut short.
fn last_line(stderr: &str) -> String {
    let line = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut shown: String = crate::terminal_text::escape_controls(line).into_owned();
    if shown.len() > 200 {
        let mut end = 200;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push('…');
    }
    shown
}

/// Why a link's `ssh` ended, from its exit status, the end of its stderr and what its first
/// line was. Pure.
pub fn classify_failure(
    destination: &str,
    exit: Option<i32>,
    stderr: &str,
    problem: Option<ProtocolProblem>,
) -> LinkFailure {
    let too_old = || {
        LinkFailure::TooOld(format!(
            "agent-tray on {destination} is too old for remotes (it does not speak remote protocol {REMOTE_PROTOCOL}); update it there"
        ))
    };
    match problem {
        Some(ProtocolProblem::NoProtocol) => return too_old(),
        Some(ProtocolProblem::Other(v)) => {
            return LinkFailure::TooOld(format!(
                "agent-tray on {destination} speaks remote protocol {v}, this one {REMOTE_PROTOCOL}; install the same version on both"
            ))
        }
        Some(ProtocolProblem::NotWatchOutput) => {
            return LinkFailure::BadOutput(format!(
                "{destination} answered with something that is not agent-tray's watch protocol (a login script that prints?)"
            ))
        }
        None => {}
    }
    let says = |needle: &str| stderr.contains(needle);
    if exit == Some(127)
        || says("command not found")
        || says("agent-tray: not found")
        || (says("agent-tray") && says("No such file or directory"))
    {
        return LinkFailure::Missing(format!(
            "agent-tray is not installed on {destination} (or not on the PATH of a non-interactive ssh session there); install it and run `agent-tray daemon` there"
        ));
    }
    if says("not spoken here") {
        return LinkFailure::TooOld(format!(
            "agent-tray on {destination} does not speak remote protocol {REMOTE_PROTOCOL}: {}",
            last_line(stderr)
        ));
    }
    if exit == Some(2) && (says("unexpected argument") || says("Usage:")) {
        return too_old();
    }
    if says("no Agent Tray is running") || says("the engine went away") {
        return LinkFailure::NotRunning(format!(
            "Agent Tray is not running on {destination}; start `agent-tray daemon` there"
        ));
    }
    let why = last_line(stderr);
    LinkFailure::Unreachable(if why.is_empty() {
        format!(
            "cannot reach {destination} (ssh exited with {})",
            exit.map_or_else(|| "a signal".to_string(), |c| c.to_string())
        )
    } else {
        format!("cannot reach {destination}: {why}")
    })
}

/// What tells a waiting link that trying now may succeed where the last try failed: the time the
/// machine spent asleep (boot time minus awake time) and a digest of its routing tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetworkMark {
    pub asleep: Duration,
    pub routes: u64,
}

impl NetworkMark {
    /// Now, on this machine (Linux: the clocks and `/proc/net/*route`; elsewhere the clocks).
    #[cfg(windows)]
    pub fn read() -> Self {
        // Windows: the tick count includes sleep, the unbiased interrupt time does not; no route
        // digest.
        // SAFETY: plain call with no arguments.
        let with_sleep = unsafe { windows_sys::Win32::System::SystemInformation::GetTickCount64() };
        let boot = Duration::from_millis(with_sleep);
        NetworkMark {
            asleep: boot.saturating_sub(crate::clock::awake_time()),
            routes: 0,
        }
    }

    #[cfg(unix)]
    pub fn read() -> Self {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        #[cfg(target_os = "linux")]
        let boot_clock = libc::CLOCK_BOOTTIME;
        #[cfg(not(target_os = "linux"))]
        let boot_clock = libc::CLOCK_MONOTONIC;
        // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
        let rc = unsafe { libc::clock_gettime(boot_clock, &mut ts) };
        let boot = if rc == 0 {
            Duration::new(
                u64::try_from(ts.tv_sec).unwrap_or(0),
                u32::try_from(ts.tv_nsec).unwrap_or(0),
            )
        } else {
            Duration::ZERO
        };
        let routes = ["/proc/net/route", "/proc/net/ipv6_route"]
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .flatten()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        NetworkMark {
            asleep: boot.saturating_sub(crate::clock::awake_time()),
            routes,
        }
    }
}

/// True when the machine slept (more than two seconds) or its routes changed between two marks.
pub fn should_retry_early(before: &NetworkMark, after: &NetworkMark) -> bool {
    after.asleep > before.asleep + Duration::from_secs(2) || after.routes != before.routes
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_and_starts_over_only_after_a_stable_link() {
        let mut b = Backoff::default();
        let waits: Vec<u64> = (0..8).map(|_| b.after_attempt(None).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        // A link that connects and drops at once (flapping) keeps backing off…
        assert_eq!(b.after_attempt(Some(Duration::from_secs(1))).as_secs(), 60);
        // …one that stayed up starts over.
        assert_eq!(b.after_attempt(Some(STABLE_LINK)).as_secs(), 1);
        assert_eq!(b.after_attempt(None).as_secs(), 2);
    }

    // Reported: a link that had failed a few times at start, then ran healthy for 20 s and
    // dropped while its host stayed up, waited 16 s before the next try (the earlier failures'
    // backoff was kept until a 30 s spell). After a healthy spell the next try comes after 1 s.
    #[test]
    fn a_blip_after_a_healthy_spell_is_retried_after_a_second_whatever_failed_before() {
        let mut b = Backoff::default();
        for expected in [1, 2, 4, 8] {
            assert_eq!(b.after_attempt(None).as_secs(), expected);
        }
        assert_eq!(b.after_attempt(Some(Duration::from_secs(20))).as_secs(), 1);
        // A flapping host (each link drops within a second or two) still backs off.
        let mut flapping = Backoff::default();
        let waits: Vec<u64> = (0..5)
            .map(|_| {
                flapping
                    .after_attempt(Some(Duration::from_secs(2)))
                    .as_secs()
            })
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16]);
    }

    #[test]
    fn a_missing_or_old_agent_tray_is_told_apart_from_a_network_failure() {
        let missing = classify_failure(
            "dev@box",
            Some(127),
            "bash: line 1: agent-tray: command not found\n",
            None,
        );
        assert_eq!(missing.state(), LinkState::Unusable);
        assert!(
            missing.message().contains("not installed on dev@box"),
            "{missing:?}"
        );
        let old_cli = classify_failure(
            "box",
            Some(2),
            "error: unexpected argument '--protocol' found\n\nUsage: agent-tray watch --json\n",
            None,
        );
        assert!(matches!(old_cli, LinkFailure::TooOld(_)), "{old_cli:?}");
        let old_snapshot = classify_failure("box", Some(0), "", Some(ProtocolProblem::NoProtocol));
        assert!(matches!(old_snapshot, LinkFailure::TooOld(_)));
        let banner = classify_failure("box", None, "", Some(ProtocolProblem::NotWatchOutput));
        assert_eq!(banner.state(), LinkState::Unusable);
        let down = classify_failure("box", Some(1), "agent-tray: no Agent Tray is running (start the app, or `agent-tray daemon`); looked for /x\n", None);
        assert_eq!(down.state(), LinkState::NotRunning);
        let net = classify_failure(
            "box",
            Some(255),
            "ssh: connect to host 127.0.0.1 port 1: Connection refused\r\n",
            None,
        );
        assert_eq!(net.state(), LinkState::Unreachable);
        assert!(net.message().ends_with("Connection refused"), "{net:?}");
        let hostile = classify_failure("box", Some(255), "bad \u{1b}]52;c;aGk=\u{7} host\n", None);
        assert!(!hostile.message().contains('\u{1b}'), "{hostile:?}");
    }

    #[test]
    fn a_wake_from_sleep_or_a_route_change_retries_early_and_nothing_else_does() {
        let before = NetworkMark {
            asleep: Duration::from_secs(100),
            routes: 7,
        };
        assert!(!should_retry_early(&before, &before));
        let slept = NetworkMark {
            asleep: Duration::from_secs(400),
            ..before
        };
        assert!(should_retry_early(&before, &slept));
        let moved = NetworkMark {
            routes: 8,
            ..before
        };
        assert!(should_retry_early(&before, &moved));
        let jitter = NetworkMark {
            asleep: Duration::from_millis(100_500),
            ..before
        };
        assert!(!should_retry_early(&before, &jitter));
    }
}
