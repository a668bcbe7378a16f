//! The environment knobs, parsed in one place.
//!
//! Why a module of its own: each knob used to be read where it was needed, each with its own
//! idea of what a bad value means (ignored, half-parsed, or a panic: `Duration::from_secs_f64`
//! on `1e20` aborts the process). Here every knob has a name, a type and a range, and a value
//! outside them is a [`KnobError`] that names the knob, repeats the value and says what is
//! expected, so a host can refuse to start with a message a person can act on.
//!
//! The parsers are pure functions of the text (`parse_*`), tested without touching the
//! process environment; the `read_*` functions only add the lookup.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// A knob set to something it cannot mean.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    #[error("{name}={value:?} is not valid: {expected}")]
    Invalid {
        name: &'static str,
        value: String,
        expected: String,
    },
    #[error("{name} is not valid UTF-8: {expected}")]
    NotUnicode {
        name: &'static str,
        expected: String,
    },
}

/// The session TTL in seconds (`AGENT_TRAY_SESSION_TTL`).
pub const SESSION_TTL: &str = "AGENT_TRAY_SESSION_TTL";
/// The pid watcher's tick in milliseconds (`AGENT_TRAY_PID_WATCH_INTERVAL_MS`).
pub const PID_WATCH_INTERVAL_MS: &str = "AGENT_TRAY_PID_WATCH_INTERVAL_MS";
/// Set to turn off watching the agents' own files (`AGENT_TRAY_NO_FILE_DISCOVERY`).
pub const NO_FILE_DISCOVERY: &str = "AGENT_TRAY_NO_FILE_DISCOVERY";
/// Everything of ours under one folder (`AGENT_TRAY_HOME`).
pub const HOME: &str = "AGENT_TRAY_HOME";

/// The log filter (`AGENT_TRAY_LOG`, tracing's `EnvFilter` syntax, e.g. `debug`).
pub const LOG: &str = "AGENT_TRAY_LOG";

/// The longest session TTL accepted: thirty days.
pub const MAX_SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// The shortest and longest pid-watcher tick accepted.
pub const MIN_PID_WATCH_INTERVAL: Duration = Duration::from_millis(10);
pub const MAX_PID_WATCH_INTERVAL: Duration = Duration::from_secs(600);

fn invalid(name: &'static str, value: &str, expected: impl Into<String>) -> KnobError {
    KnobError::Invalid {
        name,
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// A number of seconds (decimals allowed) within `min..=max`.
pub fn parse_secs(
    name: &'static str,
    text: &str,
    min: Duration,
    max: Duration,
) -> Result<Duration, KnobError> {
    let expected = || {
        format!(
            "expected a number of seconds from {} to {}",
            min.as_secs_f64(),
            max.as_secs_f64()
        )
    };
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| invalid(name, text, expected()))?;
    if !secs.is_finite() || secs < min.as_secs_f64() || secs > max.as_secs_f64() {
        return Err(invalid(name, text, expected()));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| invalid(name, text, expected()))
}

/// A whole number of milliseconds within `min..=max`.
pub fn parse_millis(
    name: &'static str,
    text: &str,
    min: Duration,
    max: Duration,
) -> Result<Duration, KnobError> {
    let expected = || {
        format!(
            "expected a whole number of milliseconds from {} to {}",
            min.as_millis(),
            max.as_millis()
        )
    };
    let ms: u64 = text
        .trim()
        .parse()
        .map_err(|_| invalid(name, text, expected()))?;
    let value = Duration::from_millis(ms);
    if value < min || value > max {
        return Err(invalid(name, text, expected()));
    }
    Ok(value)
}

/// An on/off switch that is on when set: set and empty, `1`, `true`, `yes` or `on` mean on;
/// `0`, `false`, `no` or `off` mean off (any case).
pub fn parse_flag(name: &'static str, text: &str) -> Result<bool, KnobError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(invalid(
            name,
            text,
            "expected 1, true, yes, on (or empty) to turn it on, or 0, false, no, off",
        )),
    }
}

/// A folder: unset or blank is `None`; anything else must be an absolute path (a relative one
/// would mean a different folder for the hook, the app and the CLI, which run in different
/// working directories).
pub fn parse_dir(name: &'static str, value: OsString) -> Result<Option<PathBuf>, KnobError> {
    if value.to_str().is_some_and(|s| s.trim().is_empty()) {
        return Ok(None);
    }
    let path = PathBuf::from(value);
    if !path.is_absolute() {
        return Err(invalid(
            name,
            &path.to_string_lossy(),
            "expected an absolute path",
        ));
    }
    Ok(Some(path))
}

fn var(name: &'static str, expected: &str) -> Result<Option<String>, KnobError> {
    match std::env::var(name) {
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(KnobError::NotUnicode {
            name,
            expected: expected.to_string(),
        }),
    }
}

/// `name` as seconds within `min..=max`; `None` when unset.
pub fn read_secs(
    name: &'static str,
    min: Duration,
    max: Duration,
) -> Result<Option<Duration>, KnobError> {
    var(name, "expected a number of seconds")?
        .map(|t| parse_secs(name, &t, min, max))
        .transpose()
}

/// `name` as whole milliseconds within `min..=max`; `None` when unset.
pub fn read_millis(
    name: &'static str,
    min: Duration,
    max: Duration,
) -> Result<Option<Duration>, KnobError> {
    var(name, "expected a number of milliseconds")?
        .map(|t| parse_millis(name, &t, min, max))
        .transpose()
}

/// `name` as a switch; unset is off.
pub fn read_flag(name: &'static str) -> Result<bool, KnobError> {
    Ok(var(name, "expected 1 or 0")?
        .map(|t| parse_flag(name, &t))
        .transpose()?
        .unwrap_or(false))
}

/// `name` as an absolute folder; unset or blank is `None`.
pub fn read_dir(name: &'static str) -> Result<Option<PathBuf>, KnobError> {
    match std::env::var_os(name) {
        Some(v) => parse_dir(name, v),
        None => Ok(None),
    }
}

/// A log filter in tracing's syntax (`info`, `agent_tray=debug`, ...).
pub fn parse_log_filter(
    name: &'static str,
    text: &str,
) -> Result<tracing_subscriber::EnvFilter, KnobError> {
    tracing_subscriber::EnvFilter::try_new(text.trim()).map_err(|e| {
        invalid(
            name,
            text,
            format!("expected a log filter such as info or agent_tray=debug ({e})"),
        )
    })
}

/// `AGENT_TRAY_LOG` as a log filter; `None` when unset or blank.
pub fn read_log_filter() -> Result<Option<tracing_subscriber::EnvFilter>, KnobError> {
    match var(LOG, "expected a log filter")? {
        Some(t) if !t.trim().is_empty() => parse_log_filter(LOG, &t).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn a_huge_ttl_is_a_clear_error_not_a_panic() {
        // `1e20` used to reach Duration::from_secs_f64, which panics on overflow.
        for bad in ["1e20", "inf", "NaN", "-5", "0", "ten", "", "1e400"] {
            let err =
                parse_secs(SESSION_TTL, bad, Duration::from_secs(1), MAX_SESSION_TTL).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(SESSION_TTL), "{text}");
            assert!(text.contains("seconds from 1 to 2592000"), "{text}");
        }
        assert_eq!(
            parse_secs(SESSION_TTL, " 2.5 ", Duration::from_secs(1), DAY).unwrap(),
            Duration::from_millis(2500)
        );
    }

    #[test]
    fn milliseconds_are_whole_and_in_range() {
        let p = |t| parse_millis(PID_WATCH_INTERVAL_MS, t, MIN_PID_WATCH_INTERVAL, DAY);
        assert_eq!(p("300").unwrap(), Duration::from_millis(300));
        for bad in ["0", "5", "1.5", "-1", "99999999999999999999999", "x"] {
            assert!(
                p(bad).unwrap_err().to_string().contains("milliseconds"),
                "{bad}"
            );
        }
    }

    #[test]
    fn flags_take_the_usual_spellings_and_refuse_the_rest() {
        for on in ["", "1", "true", "YES", "on"] {
            assert!(parse_flag(NO_FILE_DISCOVERY, on).unwrap(), "{on}");
        }
        for off in ["0", "false", "No", "off"] {
            assert!(!parse_flag(NO_FILE_DISCOVERY, off).unwrap(), "{off}");
        }
        assert!(parse_flag(NO_FILE_DISCOVERY, "maybe").is_err());
    }

    #[test]
    fn a_log_filter_that_does_not_parse_is_named() {
        assert!(parse_log_filter(LOG, "agent_tray=debug").is_ok());
        let err = parse_log_filter(LOG, "=[[").unwrap_err().to_string();
        assert!(err.contains("AGENT_TRAY_LOG"), "{err}");
    }

    #[test]
    fn folders_must_be_absolute_and_blank_means_unset() {
        assert_eq!(parse_dir(HOME, "  ".into()).unwrap(), None);
        let absolute = if cfg!(windows) { r"C:\tmp\x" } else { "/tmp/x" };
        assert_eq!(
            parse_dir(HOME, absolute.into()).unwrap(),
            Some(PathBuf::from(absolute))
        );
        let err = parse_dir(HOME, "tray".into()).unwrap_err().to_string();
        assert!(
            err.contains("AGENT_TRAY_HOME") && err.contains("absolute"),
            "{err}"
        );
    }
}
