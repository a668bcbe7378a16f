//! How long something has lasted, in words: the one duration formatter of the project.
//!
//! The tray menu, the window, the CLI, `doctor` and the alerts all show durations; they used to
//! format them four ways. They now share these rules, so "4m 05s" in the window is "4m" in the
//! menu and never "4min" or "4m5s" elsewhere:
//!
//! - at most two units, largest first: `45s`, `4m 05s`, `1h 04m`, `2d 3h`;
//! - the second unit is zero-padded to two digits where it can reach two digits (seconds,
//!   minutes), so a ticking label keeps its width;
//! - negative durations (a clock stepped backwards) read as zero.
//!
//! [`Precision::Minutes`] drops the seconds (`<1m`, `4m`): the tray menu uses it because a label
//! that changes every second would rewrite the native menu every second (on Linux each rewrite
//! is re-exported over D-Bus). Everything else shows seconds.
//!
//! The window counts up live in TypeScript (`ui/src/format.ts`), which cannot call Rust every
//! second. It follows these rules, and a table of examples written by the test below
//! (`tests/fixtures/duration_text.json`) is checked by the UI tests too, so the two cannot drift.

/// How fine a duration is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// `45s`, `4m 05s`, `1h 04m`, `2d 3h`.
    Seconds,
    /// `<1m`, `4m`, `1h 04m`, `2d 3h`: changes at most once a minute.
    Minutes,
}

const MINUTE: i64 = 60;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// `seconds` as text, by the rules in the module comment.
pub fn format_duration(seconds: i64, precision: Precision) -> String {
    let s = seconds.max(0);
    if s < MINUTE {
        return match precision {
            Precision::Seconds => format!("{s}s"),
            Precision::Minutes => "<1m".to_string(),
        };
    }
    if s < HOUR {
        return match precision {
            Precision::Seconds => format!("{}m {:02}s", s / MINUTE, s % MINUTE),
            Precision::Minutes => format!("{}m", s / MINUTE),
        };
    }
    if s < DAY {
        return format!("{}h {:02}m", s / HOUR, (s % HOUR) / MINUTE);
    }
    format!("{}d {}h", s / DAY, (s % DAY) / HOUR)
}

/// A human duration: `45s`, `3m 05s`, `2h 05m`, `3d 4h` (the core's one duration formatter, as
/// the window shows it).
pub fn human_age(secs: i64) -> String {
    format_duration(secs, Precision::Seconds)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Durations worth pinning: every boundary of the rules, and a few ordinary values.
    const EXAMPLES: [i64; 22] = [
        -30, 0, 1, 9, 59, 60, 61, 65, 245, 599, 600, 3599, 3600, 3660, 3_905, 7_199, 86_399,
        86_400, 90_000, 183_600, 1_209_600, 31_536_000,
    ];

    fn table() -> String {
        let rows: Vec<serde_json::Value> = EXAMPLES
            .iter()
            .map(|&seconds| {
                serde_json::json!({
                    "seconds": seconds,
                    "window": format_duration(seconds, Precision::Seconds),
                    "menu": format_duration(seconds, Precision::Minutes),
                })
            })
            .collect();
        serde_json::to_string_pretty(&rows).unwrap() + "\n"
    }

    #[test]
    fn the_committed_table_of_examples_matches_the_formatter() {
        // The UI's tests read this table to check the TypeScript copy of the rules. Regenerate:
        // UPDATE_DURATION_TABLE=1 cargo test -p agent-tray --lib duration_text
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/duration_text.json");
        let fresh = table();
        if std::env::var_os("UPDATE_DURATION_TABLE").is_some() {
            std::fs::write(&path, &fresh).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "{} is stale: regenerate it with UPDATE_DURATION_TABLE=1",
            path.display()
        );
    }

    #[test]
    fn seconds_show_up_to_a_minute_then_two_units_with_the_second_padded() {
        let s = |n| format_duration(n, Precision::Seconds);
        assert_eq!(s(0), "0s");
        assert_eq!(s(59), "59s");
        assert_eq!(s(60), "1m 00s");
        assert_eq!(s(245), "4m 05s");
        assert_eq!(s(3599), "59m 59s");
        assert_eq!(s(3600 + 4 * 60 + 59), "1h 04m");
        assert_eq!(s(2 * 86_400 + 3 * 3600 + 59), "2d 3h");
        assert_eq!(
            s(-30),
            "0s",
            "a clock stepped backwards is not negative time"
        );
    }

    #[test]
    fn minute_precision_is_the_same_text_without_the_seconds() {
        for n in EXAMPLES {
            let fine = format_duration(n, Precision::Seconds);
            let coarse = format_duration(n, Precision::Minutes);
            match n {
                n if n < MINUTE => assert_eq!(coarse, "<1m"),
                n if n < HOUR => assert!(fine.starts_with(&format!("{coarse} ")), "{fine}"),
                _ => assert_eq!(coarse, fine),
            }
        }
    }

    #[test]
    fn the_cli_and_the_tray_say_a_duration_as_the_window_does() {
        // They used to disagree: the CLI said "4m" and "1h05m" where the window said "4m 05s"
        // and "1h 05m".
        for n in EXAMPLES {
            assert_eq!(human_age(n), format_duration(n, Precision::Seconds));
            assert_eq!(
                crate::tray_model::format_elapsed(n),
                format_duration(n, Precision::Minutes)
            );
        }
    }

    #[test]
    fn a_minute_precision_label_changes_at_most_once_a_minute() {
        for start in (0..2 * DAY).step_by(60) {
            let first = format_duration(start, Precision::Minutes);
            assert!((start..start + 60).all(|n| format_duration(n, Precision::Minutes) == first));
        }
    }
}
