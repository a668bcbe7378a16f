//! Time, injected.
//!
//! Two clocks: wall time for what people read (`started_at`, `last_seen`), and a monotonic clock
//! for how long a session has been silent. The monotonic one must not advance while the machine
//! sleeps — otherwise closing a laptop lid for the TTL would end every session on wake. On Linux
//! that is `CLOCK_MONOTONIC` (not `CLOCK_BOOTTIME`, which counts suspend); on macOS
//! `CLOCK_UPTIME_RAW` (not `CLOCK_MONOTONIC`, which does count sleep there).
//!
//! Logic under test takes a [`Clock`] so tests can move time by hand ([`ManualClock`]).

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// The two clocks a decision needs: wall time for what people see, monotonic time for how long
/// a session has been silent (it must not jump with the wall clock, nor run while asleep).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub wall: DateTime<Utc>,
    pub mono: Duration,
}

pub trait Clock: Send + Sync {
    fn wall(&self) -> DateTime<Utc>;
    /// Time that stops while the machine sleeps; only differences mean anything.
    fn mono(&self) -> Duration;
    fn now(&self) -> Now {
        Now {
            wall: self.wall(),
            mono: self.mono(),
        }
    }
}

/// The real clocks.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn wall(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn mono(&self) -> Duration {
        awake_time()
    }
}

#[cfg(target_os = "macos")]
const AWAKE_CLOCK: libc::clockid_t = libc::CLOCK_UPTIME_RAW;
#[cfg(all(unix, not(target_os = "macos")))]
const AWAKE_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Time since boot, not counting sleep.
#[cfg(unix)]
pub fn awake_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    let rc = unsafe { libc::clock_gettime(AWAKE_CLOCK, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Time since boot, not counting sleep or hibernation: the unbiased interrupt time, in units of
/// 100 ns (Windows' own clock for "awake time").
#[cfg(windows)]
pub fn awake_time() -> Duration {
    let mut hundred_ns: u64 = 0;
    // SAFETY: the pointer is to a valid, writable u64; the call only writes into it.
    let ok = unsafe {
        windows_sys::Win32::System::WindowsProgramming::QueryUnbiasedInterruptTime(&mut hundred_ns)
    };
    if ok == 0 {
        return Duration::ZERO;
    }
    Duration::from_nanos(hundred_ns.saturating_mul(100))
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    state: Mutex<(DateTime<Utc>, Duration)>,
}

impl ManualClock {
    pub fn new(wall: DateTime<Utc>) -> Self {
        ManualClock {
            state: Mutex::new((wall, Duration::from_secs(1_000))),
        }
    }

    /// Moves both clocks forward, as time passing while awake does.
    pub fn advance(&self, by: Duration) {
        if let Ok(mut s) = self.state.lock() {
            s.0 += chrono::Duration::from_std(by).unwrap_or_default();
            s.1 += by;
        }
    }

    /// Moves only the wall clock, as a suspended machine does.
    pub fn sleep_machine(&self, by: Duration) {
        if let Ok(mut s) = self.state.lock() {
            s.0 += chrono::Duration::from_std(by).unwrap_or_default();
        }
    }
}

impl Clock for ManualClock {
    fn wall(&self) -> DateTime<Utc> {
        self.state.lock().map(|s| s.0).unwrap_or_default()
    }

    fn mono(&self) -> Duration {
        self.state.lock().map(|s| s.1).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_awake_clock_moves_forward() {
        let a = awake_time();
        std::thread::sleep(Duration::from_millis(5));
        let b = awake_time();
        assert!(b > a, "{a:?} then {b:?}");
        assert!(a > Duration::ZERO);
    }

    #[test]
    fn a_sleeping_machine_moves_the_wall_clock_only() {
        let c = ManualClock::new(Utc::now());
        let (w, m) = (c.wall(), c.mono());
        c.sleep_machine(Duration::from_secs(3600));
        assert_eq!(c.mono(), m);
        assert_eq!(c.wall() - w, chrono::Duration::seconds(3600));
    }
}
