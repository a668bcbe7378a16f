//! Claude Code's status line: what its input says, and the `statusLine` entry that runs our
//! bridge (`agent-tray status-line --agent claude`) in front of the user's own command.
//!
//! Why it is shaped this way:
//! - **The one place Claude says its window and its plan.** The context window's size (it follows
//!   the model: `claude-sonnet-4-5` 200000, `claude-sonnet-4-5[1m]` 1000000), the last turn's use
//!   and the plan's five-hour and weekly windows reach no hook and no file; Claude hands them
//!   only to the status-line command (recorded: `tests/fixtures/claude/real-2.1.332/`).
//! - **Tolerant, field by field** ([`parse`]): the input is read as a JSON tree (it is at most
//!   1 MiB) and each figure is taken where it has the type we expect; anything else is left
//!   unsaid, never guessed. A payload with no session id, or that is not JSON, says nothing.
//! - **Opt-in, and the user's line kept** ([`plan_text`]): `install --claude --status-line`
//!   moves the user's own command into ours as `--then '<command>'` and writes nothing else of
//!   the entry; every other key of their `statusLine` (padding, …) keeps its bytes. `uninstall`
//!   puts their command back as it was written ([`StatusLineRecord`] keeps its exact JSON text,
//!   escapes and all), or removes the entry we added where there was none.

use std::path::Path;

use chrono::{DateTime, Utc};
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::install::{shell_quote, shell_words, Action, InstallError};
use crate::model::{Agent, EventKind, Observation, Source};
use crate::plan_limits::PlanWindow;

/// The account name of Claude's plan windows: the status line does not name the plan.
pub const ACCOUNT: &str = "plan";

/// What a status-line input says: the session's context (as an observation that moves no
/// state) and the plan's windows. `None` when it is not JSON or names no session.
pub fn parse(payload: &[u8], at: DateTime<Utc>) -> Option<(Observation, Vec<PlanWindow>)> {
    let doc: Value = serde_json::from_slice(payload).ok()?;
    let session_id = doc.get("session_id")?.as_str()?.to_string();
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let mut obs = Observation::new(session_id.clone(), Agent::Claude, EventKind::Sighting, at)
        .with_source(Source::StatusLine);
    obs.cwd = text(doc.pointer("/workspace/current_dir")).or_else(|| text(doc.get("cwd")));
    obs.model = text(doc.pointer("/model/id"));
    obs.transcript_path = text(doc.get("transcript_path"));
    if let Some(window) = doc.get("context_window") {
        obs.context_window = window
            .get("context_window_size")
            .and_then(Value::as_u64)
            .filter(|w| *w > 0);
        obs.context_tokens = window.get("current_usage").and_then(context_tokens);
    }
    let mut limits = Vec::new();
    if let Some(rates) = doc.get("rate_limits").and_then(Value::as_object) {
        for (key, name, minutes) in [("five_hour", "5h", 300), ("seven_day", "weekly", 10080)] {
            if let Some(window) = rates.get(key).and_then(|w| plan_window(w, name, minutes)) {
                limits.push(PlanWindow {
                    session_id: session_id.clone(),
                    seen_at: at,
                    ..window
                });
            }
        }
        if !limits.is_empty() {
            // The windows are the whole picture: a used-up one stops the session until the
            // latest such reset; none used up is "until now" (free).
            let stop = limits
                .iter()
                .filter(|w| w.used_percent >= 100.0)
                .filter_map(|w| w.resets_at)
                .max();
            obs.blocked_until = Some(stop.unwrap_or(at));
        }
    }
    Some((obs, limits))
}

/// The last turn's tokens in the window: input, cache reads and writes, and output, as the
/// transcript feed counts them (so the two agree). `None` before any turn (`null`).
fn context_tokens(usage: &Value) -> Option<u64> {
    let usage = usage.as_object()?;
    let keys = [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
    ];
    let mut total: u64 = 0;
    let mut any = false;
    for key in keys {
        if let Some(n) = usage.get(key).and_then(Value::as_u64) {
            total = total.saturating_add(n);
            any = true;
        }
    }
    any.then_some(total)
}

/// One window (`{"used_percentage": 42, "resets_at": 1796406200}`); its reset in unix seconds,
/// or an RFC 3339 text. A percent that is not a finite number says nothing.
fn plan_window(window: &Value, name: &str, minutes: u64) -> Option<PlanWindow> {
    let used = window.get("used_percentage")?.as_f64()?;
    if !used.is_finite() {
        return None;
    }
    let resets_at = match window.get("resets_at") {
        Some(Value::Number(n)) => n
            .as_i64()
            .filter(|s| *s > 0)
            .and_then(|s| DateTime::from_timestamp(s, 0)),
        Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| d.with_timezone(&Utc)),
        _ => None,
    };
    Some(PlanWindow {
        agent: Agent::Claude,
        host: None,
        account: ACCOUNT.into(),
        window: name.into(),
        window_minutes: Some(minutes),
        used_percent: used.clamp(0.0, 100.0),
        resets_at,
        seen_at: DateTime::<Utc>::MIN_UTC,
        session_id: String::new(),
    })
}

/// The bridge's command line: `<bin> status-line --agent claude`, and `--then '<command>'` when
/// the user had a status line of their own.
pub fn bridge_command(bin: &Path, then: Option<&str>) -> String {
    let program = shell_quote(&crate::install::program_text_on(
        crate::paths::THIS_DESKTOP,
        bin,
    ));
    match then {
        Some(user) => format!(
            "{program} status-line --agent claude --then {}",
            shell_quote(user)
        ),
        None => format!("{program} status-line --agent claude"),
    }
}

/// A `statusLine` command that is our bridge: the user's command it runs, if any (`Some(None)`:
/// ours, with no command of the user's). `None`: not ours.
pub fn bridged_command(command: &str) -> Option<Option<String>> {
    let words = shell_words(command)?;
    let (program, args) = words.split_first()?;
    if !crate::install::is_our_program_name(program) {
        return None;
    }
    match args {
        [sub, flag, agent] if sub == "status-line" && flag == "--agent" && agent == "claude" => {
            Some(None)
        }
        [sub, flag, agent, then, user]
            if sub == "status-line"
                && flag == "--agent"
                && agent == "claude"
                && then == "--then" =>
        {
            Some(Some(user.clone()))
        }
        _ => None,
    }
}

/// What `install --status-line` found in `statusLine`, kept in the data folder so `uninstall`
/// gives it back byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusLineRecord {
    /// The settings file it was in.
    pub settings: std::path::PathBuf,
    /// The user's `command` exactly as its JSON string was written (quotes and escapes
    /// included); `None` when there was no `statusLine` at all.
    pub command_json: Option<String>,
    /// The command we wrote in its place.
    pub bridge: String,
}

/// The planned change of `statusLine`: the new text (`None`: unchanged), the record to keep (on
/// install), and notes for the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusLinePlan {
    pub new_text: Option<String>,
    pub record: Option<StatusLineRecord>,
    pub notes: Vec<String>,
}

/// Plans `statusLine` in the settings `text`: on install with `add`, our bridge in front of the
/// user's command (without `add`, only a bridge already there follows a moved binary); on
/// uninstall, the user's command back (`record` is what install kept). `text` must be valid
/// JSON already (an empty one is `{}`).
pub fn plan_text(
    path: &Path,
    text: &str,
    bin: &Path,
    action: Action,
    add: bool,
    record: Option<&StatusLineRecord>,
) -> Result<StatusLinePlan, InstallError> {
    let unexpected = |detail: String| InstallError::Unexpected {
        path: path.to_path_buf(),
        detail,
    };
    let source = if text.trim().is_empty() { "{}\n" } else { text };
    let root = CstRootNode::parse(source, &ParseOptions::default())
        .map_err(|e| unexpected(e.to_string()))?;
    let obj = root
        .value()
        .and_then(|v| v.as_object())
        .ok_or_else(|| unexpected("the top level is not a JSON object".into()))?;
    let prop = obj
        .properties()
        .into_iter()
        .rfind(|p| p.decoded_name().as_deref() == Some("statusLine"));
    let mut plan = StatusLinePlan::default();
    let Some(prop) = prop else {
        if action == Action::Install && add {
            let bridge = bridge_command(bin, None);
            obj.append(
                "statusLine",
                CstInputValue::Object(vec![
                    ("type".into(), CstInputValue::String("command".into())),
                    ("command".into(), CstInputValue::String(bridge.clone())),
                ]),
            );
            plan.new_text = Some(root.to_string());
            plan.record = Some(StatusLineRecord {
                settings: path.to_path_buf(),
                command_json: None,
                bridge,
            });
        }
        return Ok(plan);
    };
    let Some(line) = prop.value().and_then(|v| v.as_object()) else {
        plan.notes.push(format!(
            "{}: \"statusLine\" is not an object; left as it is",
            path.display()
        ));
        return Ok(plan);
    };
    let command_prop = line
        .properties()
        .into_iter()
        .rfind(|p| p.decoded_name().as_deref() == Some("command"));
    let literal = command_prop
        .as_ref()
        .and_then(|p| p.value())
        .and_then(|v| v.as_string_lit());
    let Some(literal) = literal else {
        plan.notes.push(format!(
            "{}: \"statusLine\" has no command string; left as it is",
            path.display()
        ));
        return Ok(plan);
    };
    let command = literal
        .decoded_value()
        .map_err(|e| unexpected(format!("\"statusLine\".\"command\": {e:?}")))?;
    // A JSON string's text for a command (serde_json's escaping: what Claude itself writes).
    let json_text =
        |command: &str| serde_json::to_string(command).unwrap_or_else(|_| format!("{command:?}"));
    match (bridged_command(&command), action) {
        (None, Action::Install) if add => {
            let bridge = bridge_command(bin, Some(&command));
            plan.record = Some(StatusLineRecord {
                settings: path.to_path_buf(),
                command_json: Some(literal.raw_value()),
                bridge: bridge.clone(),
            });
            literal.set_raw_value(json_text(&bridge));
            plan.new_text = Some(root.to_string());
        }
        (None, _) => {}
        (Some(user), Action::Install) => {
            // Ours already; a moved binary gets the new path, the user's command stays.
            let bridge = bridge_command(bin, user.as_deref());
            if bridge != command {
                literal.set_raw_value(json_text(&bridge));
                plan.new_text = Some(root.to_string());
                plan.record = record.cloned().map(|r| StatusLineRecord { bridge, ..r });
            }
        }
        (Some(None), Action::Uninstall) => {
            // The entry is ours alone: it goes, with the comma and the line it took.
            prop.remove();
            plan.new_text = Some(root.to_string());
        }
        (Some(Some(user)), Action::Uninstall) => {
            // The user's exact bytes where install kept them (and they still say the command
            // ours runs); else their command in Claude's own escaping.
            let kept = record
                .filter(|r| r.bridge == command)
                .and_then(|r| r.command_json.clone())
                .filter(|json| serde_json::from_str::<String>(json).ok().as_deref() == Some(&user));
            literal.set_raw_value(kept.unwrap_or_else(|| json_text(&user)));
            plan.new_text = Some(root.to_string());
        }
    }
    if let Some(new) = &plan.new_text {
        // A safety net, not a code path: never write what is not JSON.
        serde_json::from_str::<Value>(new).map_err(|e| {
            unexpected(format!(
                "editing produced invalid JSON ({e}); please report this"
            ))
        })?;
    }
    Ok(plan)
}

/// `doctor`'s word on the bridge in the settings document `doc`: on (and what it runs behind
/// it), on from a binary that moved, or off and how to turn it on. Whether it works is the
/// engine's to say (the last status line it received: `doctor`'s delivery lines).
pub fn doctor_finding(doc: &Value, bin: &Path) -> crate::doctor::findings::Finding {
    use crate::doctor::findings::Finding;
    let command = doc.pointer("/statusLine/command").and_then(Value::as_str);
    let bridged = command.and_then(|c| bridged_command(c).map(|user| (c, user)));
    match bridged {
        Some((command, user)) => {
            let behind = user.map_or_else(
                || "no status line of yours behind it: it prints its own short line".to_string(),
                |u| format!("your own status line runs behind it: {u}"),
            );
            let current = shell_words(command)
                .and_then(|w| w.into_iter().next())
                .is_some_and(|program| Path::new(&program) == bin);
            if current {
                Finding::Ok(format!(
                    "status-line bridge: on ({behind}); Claude Code tells it the context window and plan limits"
                ))
            } else {
                Finding::Problem(format!(
                    "status-line bridge: on, but from another agent-tray binary ({command}); run `agent-tray install --claude` from this one"
                ))
            }
        }
        None => Finding::Note(
            "status-line bridge: off; Claude Code tells its context window and plan limits only to a status line: `agent-tray install --claude --status-line` turns the bridge on (your own status line still shows)".into(),
        ),
    }
}

/// Where `install --status-line` keeps what it found ([`StatusLineRecord`]).
pub fn record_path() -> Option<std::path::PathBuf> {
    crate::paths::TrayPaths::from_env()
        .ok()
        .map(|p| p.data_dir.join("claude-status-line.json"))
}

/// Adds the `statusLine` change to the hooks' plan of the same `settings.json` (its first
/// change), and the record install keeps beside it (`record_file`).
pub fn plan_into(
    plan: &mut crate::install::Plan,
    path: &Path,
    bin: &Path,
    action: Action,
    add: bool,
    record_file: Option<&Path>,
) -> Result<(), InstallError> {
    let Some(change) = plan.changes.first_mut() else {
        return Ok(());
    };
    let text = change
        .new
        .clone()
        .or_else(|| change.old.clone())
        .unwrap_or_default();
    let old_record = match record_file {
        Some(file) => crate::install::read_optional(file)?,
        None => None,
    };
    let record: Option<StatusLineRecord> = old_record
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .filter(|r: &StatusLineRecord| r.settings == path);
    let planned = plan_text(path, &text, bin, action, add, record.as_ref())?;
    if let Some(new) = planned.new_text {
        change.new = Some(new);
    }
    plan.notes.extend(planned.notes);
    if let (Some(record), Some(file)) = (planned.record, record_file) {
        let text = serde_json::to_string_pretty(&record).map_err(|e| InstallError::Unexpected {
            path: file.to_path_buf(),
            detail: e.to_string(),
        })? + "\n";
        if old_record.as_deref() != Some(text.as_str()) {
            plan.changes.push(crate::install::FileChange {
                path: file.to_path_buf(),
                old: old_record,
                new: Some(text),
            });
        }
    } else if add && action == Action::Install && record_file.is_none() {
        plan.notes.push(
            "no data folder (set HOME or AGENT_TRAY_HOME): uninstall will give back your status line's command in Claude's own escaping".into(),
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const FIRST: &str =
        include_str!("../../../tests/fixtures/claude/real-2.1.332/status-line-first.json");
    const AFTER_TURN: &str =
        include_str!("../../../tests/fixtures/claude/real-2.1.332/status-line-after-turn.json");
    const SONNET: &str = include_str!(
        "../../../tests/fixtures/claude/real-2.1.332/status-line-sonnet-4-5-after-turn.json"
    );
    const SONNET_1M: &str = include_str!(
        "../../../tests/fixtures/claude/real-2.1.332/status-line-sonnet-4-5-1m-after-turn.json"
    );
    const OAUTH: &str = include_str!(
        "../../../tests/fixtures/claude/real-2.1.332/status-line-oauth-after-turn.json"
    );

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    const NOW: i64 = 1_796_400_000;
    const BIN: &str = "/opt/agent-tray/bin/agent-tray";

    #[test]
    fn the_real_input_tells_the_window_the_model_gives_and_the_last_turns_tokens() {
        // After one turn the mock reported 100 input and 10 output tokens: 110 in the window,
        // as the transcript feed counts them.
        let (obs, limits) = parse(AFTER_TURN.as_bytes(), at(NOW)).unwrap();
        assert_eq!(obs.session_id, "82326879-ce47-4343-afa6-e196e431201b");
        assert_eq!(obs.source, Source::StatusLine);
        assert_eq!(obs.event, EventKind::Sighting);
        assert_eq!(obs.context_tokens, Some(110));
        assert_eq!(obs.context_window, Some(1_000_000));
        assert_eq!(obs.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(obs.cwd.as_deref(), Some("/home/dev/proj"));
        assert!(limits.is_empty(), "an API key has no plan windows");
        assert_eq!(obs.blocked_until, None, "and so says nothing of a stop");
        // The size follows the model, as Claude reports it.
        let window = |text: &str| parse(text.as_bytes(), at(NOW)).unwrap().0.context_window;
        assert_eq!(window(SONNET), Some(200_000));
        assert_eq!(window(SONNET_1M), Some(1_000_000));
        // Before any turn: the window, and no tokens (not zero).
        let (first, _) = parse(FIRST.as_bytes(), at(NOW)).unwrap();
        assert_eq!(
            (first.context_tokens, first.context_window),
            (None, Some(1_000_000))
        );
    }

    #[test]
    fn a_plan_login_tells_the_five_hour_and_weekly_windows_with_their_resets() {
        let (obs, limits) = parse(OAUTH.as_bytes(), at(NOW)).unwrap();
        type Shown<'a> = (&'a str, Option<u64>, f64, Option<DateTime<Utc>>);
        let by: Vec<Shown<'_>> = limits
            .iter()
            .map(|w| {
                (
                    w.window.as_str(),
                    w.window_minutes,
                    w.used_percent,
                    w.resets_at,
                )
            })
            .collect();
        assert_eq!(
            by,
            [
                ("5h", Some(300), 42.0, Some(at(1_796_406_200))),
                ("weekly", Some(10080), 12.0, Some(at(1_796_659_700))),
            ]
        );
        assert!(limits.iter().all(|w| w.agent == Agent::Claude
            && w.session_id == obs.session_id
            && w.seen_at == at(NOW)));
        assert_eq!(
            obs.blocked_until,
            Some(at(NOW)),
            "windows said, none used up: free"
        );
    }

    #[test]
    fn a_used_up_window_stops_the_session_until_its_reset() {
        let mut doc: Value = serde_json::from_str(OAUTH).unwrap();
        doc["rate_limits"]["five_hour"]["used_percentage"] = 100.into();
        let (obs, limits) = parse(doc.to_string().as_bytes(), at(NOW)).unwrap();
        assert_eq!(obs.blocked_until, Some(at(1_796_406_200)));
        assert_eq!(limits[0].used_percent, 100.0);
        // Both used up: until the later reset, when both are free again.
        doc["rate_limits"]["seven_day"]["used_percentage"] = 130.into();
        let (obs, limits) = parse(doc.to_string().as_bytes(), at(NOW)).unwrap();
        assert_eq!(obs.blocked_until, Some(at(1_796_659_700)));
        assert_eq!(limits[1].used_percent, 100.0, "bounded to 100");
    }

    #[test]
    fn garbage_or_a_payload_missing_its_fields_says_nothing_it_was_not_told() {
        for bad in [
            "",
            "not json",
            "[]",
            "{}",
            "{\"session_id\": 7}",
            "\u{0}\u{1}",
        ] {
            assert_eq!(parse(bad.as_bytes(), at(NOW)), None, "{bad:?}");
        }
        // Fields of the wrong type are left unsaid, one by one.
        let odd = r#"{"session_id":"s1","context_window":{"context_window_size":"1M",
            "current_usage":{"input_tokens":-3,"output_tokens":10}},"model":{"id":5},
            "rate_limits":{"five_hour":{"used_percentage":"42"},"seven_day":{"used_percentage":12,"resets_at":"soon"}}}"#;
        let (obs, limits) = parse(odd.as_bytes(), at(NOW)).unwrap();
        assert_eq!(obs.context_window, None);
        assert_eq!(obs.context_tokens, Some(10));
        assert_eq!(obs.model, None);
        assert_eq!(limits.len(), 1);
        assert_eq!(
            (limits[0].window.as_str(), limits[0].resets_at),
            ("weekly", None)
        );
        // A session id alone: an observation that fills nothing.
        let (bare, none) = parse(br#"{"session_id":"s1"}"#, at(NOW)).unwrap();
        assert_eq!(
            (
                bare.context_tokens,
                bare.context_window,
                bare.blocked_until,
                none.len()
            ),
            (None, None, None, 0)
        );
    }

    fn install(text: &str) -> StatusLinePlan {
        plan_text(
            Path::new("/h/.claude/settings.json"),
            text,
            Path::new(BIN),
            Action::Install,
            true,
            None,
        )
        .unwrap()
    }

    fn uninstall(text: &str, record: Option<&StatusLineRecord>) -> StatusLinePlan {
        plan_text(
            Path::new("/h/.claude/settings.json"),
            text,
            Path::new(BIN),
            Action::Uninstall,
            false,
            record,
        )
        .unwrap()
    }

    #[test]
    fn the_users_status_line_runs_behind_ours_and_comes_back_byte_for_byte() {
        // Their command with escapes Claude itself would not write, and a key of their own.
        let theirs = "{\n  \"model\": \"opus\",\n  \"statusLine\": {\n    \"type\": \"command\",\n    \"command\": \"~/bin/line.sh --fmt \\u0022{model}\\u0022 \\/ \u{fc}\",\n    \"padding\": 0\n  },\n  \"zzz\": 1e3\n}\n";
        let plan = install(theirs);
        let new = plan.new_text.unwrap();
        let doc: Value = serde_json::from_str(&new).unwrap();
        let command = doc["statusLine"]["command"].as_str().unwrap();
        assert_eq!(
            bridged_command(command),
            Some(Some("~/bin/line.sh --fmt \"{model}\" / \u{fc}".into())),
            "{command}"
        );
        assert!(command
            .starts_with("/opt/agent-tray/bin/agent-tray status-line --agent claude --then "));
        assert!(
            new.contains("\"padding\": 0") && new.contains("1e3"),
            "{new}"
        );
        let record = plan.record.unwrap();
        // Install twice changes nothing.
        assert_eq!(install(&new).new_text, None);
        // Uninstall: exactly the text there was.
        assert_eq!(
            uninstall(&new, Some(&record)).new_text.as_deref(),
            Some(theirs)
        );
        // Without the record, the same command in Claude's own escaping.
        let back = uninstall(&new, None).new_text.unwrap();
        let doc: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(
            doc["statusLine"]["command"],
            "~/bin/line.sh --fmt \"{model}\" / \u{fc}"
        );
        // Nothing of ours: uninstall leaves the file alone.
        assert_eq!(uninstall(theirs, Some(&record)).new_text, None);
    }

    #[test]
    fn with_no_status_line_ours_is_added_and_uninstall_takes_it_away_whole() {
        // As Claude writes its settings (two-space JSON): the very bytes come back.
        for before in [
            "{\n  \"model\": \"opus\"\n}\n",
            "{}\n",
            "{\n  \"a\": [\n    1\n  ]\n}",
        ] {
            let plan = install(before);
            let new = plan.new_text.unwrap();
            let doc: Value = serde_json::from_str(&new).unwrap();
            assert_eq!(doc["statusLine"]["type"], "command");
            assert_eq!(
                bridged_command(doc["statusLine"]["command"].as_str().unwrap()),
                Some(None)
            );
            assert_eq!(plan.record.unwrap().command_json, None);
            assert_eq!(
                uninstall(&new, None).new_text.as_deref(),
                Some(before),
                "{new}"
            );
        }
        // An empty file becomes a settings object; a one-line file gets its value back.
        assert!(install("").new_text.unwrap().contains("statusLine"));
        let line = "{\"a\":[1,2]}";
        let back = uninstall(&install(line).new_text.unwrap(), None)
            .new_text
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&back).unwrap(),
            serde_json::from_str::<Value>(line).unwrap()
        );
    }

    #[test]
    fn without_the_flag_a_bridge_is_only_kept_current_and_odd_entries_are_left_alone() {
        let path = Path::new("/h/.claude/settings.json");
        let moved = r#"{"statusLine":{"type":"command","command":"/old/agent-tray status-line --agent claude --then 'x y'"}}"#;
        let plan = plan_text(path, moved, Path::new(BIN), Action::Install, false, None).unwrap();
        let doc: Value = serde_json::from_str(&plan.new_text.unwrap()).unwrap();
        assert_eq!(
            doc["statusLine"]["command"],
            "/opt/agent-tray/bin/agent-tray status-line --agent claude --then 'x y'"
        );
        let theirs = r#"{"statusLine":{"type":"command","command":"line.sh"}}"#;
        assert_eq!(
            plan_text(path, theirs, Path::new(BIN), Action::Install, false, None)
                .unwrap()
                .new_text,
            None,
            "not asked for: not added"
        );
        for odd in [
            r#"{"statusLine":"line.sh"}"#,
            r#"{"statusLine":{"type":"command"}}"#,
        ] {
            let plan = install(odd);
            assert_eq!(plan.new_text, None, "{odd}");
            assert_eq!(plan.notes.len(), 1, "{odd}");
        }
        // A command that only looks like ours (other arguments) is the user's.
        assert_eq!(
            bridged_command("agent-tray status-line --agent claude --verbose"),
            None
        );
        assert_eq!(
            bridged_command("/x/agent-tray status-line --agent claude"),
            Some(None)
        );
    }
}
