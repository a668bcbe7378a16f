//! Property tests of the installers' merge: arbitrary settings files in (any numbers, escapes,
//! layouts, other tools' hooks on our events, TOML with comments and every value spelling),
//! our entries added, everything else kept as the user wrote it, and uninstall gives the file
//! back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use agent_tray::agents::claude::install as claude;
use agent_tray::agents::codex::install as codex;
use agent_tray::agents::crush;
use agent_tray::agents::gemini;
use agent_tray::install::Action;
use proptest::prelude::*;
use serde_json::Value;

const BIN: &str = "/opt/agent-tray/bin/agent-tray";
const HOOKS: &str = "/home/dev/.codex/hooks.json";
const CONFIG: &str = "/home/dev/.codex/config.toml";

/// A JSON value that remembers how its scalars were spelled.
#[derive(Debug, Clone)]
enum J {
    Lit(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

fn number() -> impl Strategy<Value = String> {
    "-?(0|[1-9][0-9]{0,29})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,2})?"
}

/// A JSON string literal, quotes included, with every kind of escape.
fn string_lit() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9 _./:-]{1,8}",
        1 => "[é日本✓😀]{1,3}",
        1 => Just("\\\"".to_string()),
        1 => Just("\\\\".to_string()),
        1 => Just("\\/".to_string()),
        1 => prop::sample::select(vec!["\\b", "\\f", "\\n", "\\r", "\\t"]).prop_map(str::to_string),
        1 => (0x20u32..0xd7ff).prop_map(|c| format!("\\u{c:04x}")),
        1 => (0x20u32..0xd7ff).prop_map(|c| format!("\\u{c:04X}")),
        1 => Just("\\ud83d\\ude00".to_string()),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|p| format!("\"{}\"", p.concat()))
}

fn scalar() -> impl Strategy<Value = J> {
    prop_oneof![
        number(),
        string_lit(),
        Just("true".to_string()),
        Just("false".to_string()),
        Just("null".to_string()),
    ]
    .prop_map(J::Lit)
}

/// Object members with distinct keys (a repeated key is legal JSON, but which one counts is
/// up to the reader).
fn members(value: impl Strategy<Value = J>, max: usize) -> impl Strategy<Value = Vec<(String, J)>> {
    prop::collection::vec((string_lit(), value), 0..max).prop_map(|m| {
        let mut seen = Vec::new();
        m.into_iter()
            .filter(|(k, _)| {
                let decoded: String = serde_json::from_str(k).unwrap();
                let fresh = !seen.contains(&decoded) && decoded != "hooks";
                seen.push(decoded);
                fresh
            })
            .collect()
    })
}

fn any_value() -> impl Strategy<Value = J> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(J::Arr),
            members(inner, 4).prop_map(J::Obj),
        ]
    })
}

/// Another tool's hook group: never a command of ours.
fn user_group() -> impl Strategy<Value = J> {
    (
        prop::option::of("[A-Za-z|*]{1,8}"),
        prop::collection::vec(user_entry(), 1..3),
    )
        .prop_map(|(matcher, entries)| {
            let mut m = Vec::new();
            if let Some(matcher) = matcher {
                m.push(("\"matcher\"".to_string(), J::Lit(format!("\"{matcher}\""))));
            }
            m.push(("\"hooks\"".to_string(), J::Arr(entries)));
            J::Obj(m)
        })
}

/// Another tool's hook entry: never a command of ours.
fn user_entry() -> impl Strategy<Value = J> {
    (
        "[a-z/]{1,12}( --[a-z]{1,5})?",
        prop::option::of(number()),
        members(scalar(), 2),
    )
        .prop_map(|(cmd, timeout, extra)| {
            let mut m = vec![
                ("\"type\"".to_string(), J::Lit("\"command\"".into())),
                (
                    "\"command\"".to_string(),
                    J::Lit(format!("\"user-tool {cmd}\"")),
                ),
            ];
            if let Some(t) = timeout {
                m.push(("\"timeout\"".into(), J::Lit(t)));
            }
            m.extend(extra.into_iter().filter(|(k, _)| {
                !["\"type\"", "\"command\"", "\"timeout\""].contains(&k.as_str())
            }));
            J::Obj(m)
        })
}

/// A `crush.json`: the user's keys, and maybe a `hooks` object whose events hold other tools'
/// entries straight in their lists (Crush's flat shape), on some of our events and others.
fn flat_settings() -> impl Strategy<Value = J> {
    let events = prop::sample::subsequence(
        vec![
            "PreToolUse",
            "TurnEnd",
            "SessionStart",
            "PermissionRequest",
            "MyOwnEvent",
        ],
        1..4,
    );
    let hooks = (
        events,
        prop::collection::vec(prop::collection::vec(user_entry(), 1..3), 4),
    )
        .prop_map(|(events, entries)| {
            J::Obj(
                events
                    .into_iter()
                    .zip(entries)
                    .map(|(e, list)| (format!("\"{e}\""), J::Arr(list)))
                    .collect(),
            )
        });
    (members(any_value(), 5), prop::option::of(hooks), 0..6usize).prop_map(|(mut m, hooks, at)| {
        if let Some(h) = hooks {
            let at = at.min(m.len());
            m.insert(at, ("\"hooks\"".to_string(), h));
        }
        J::Obj(m)
    })
}

/// A settings file: the user's keys, and maybe a `hooks` object with other tools' groups on
/// some of our events and on events we never touch.
fn settings() -> impl Strategy<Value = J> {
    let events = prop::sample::subsequence(
        vec![
            "PreToolUse",
            "Stop",
            "SessionStart",
            "SessionEnd",
            "Interrupt",
            "MyOwnEvent",
            // Gemini CLI's names, so other tools' groups sit on its events too.
            "BeforeTool",
            "AfterAgent",
        ],
        1..4,
    );
    let hooks = (
        events,
        prop::collection::vec(prop::collection::vec(user_group(), 1..3), 4),
    )
        .prop_map(|(events, groups)| {
            J::Obj(
                events
                    .into_iter()
                    .zip(groups)
                    .map(|(e, g)| (format!("\"{e}\""), J::Arr(g)))
                    .collect(),
            )
        });
    (members(any_value(), 5), prop::option::of(hooks), 0..6usize).prop_map(|(mut m, hooks, at)| {
        if let Some(h) = hooks {
            let at = at.min(m.len());
            m.insert(at, ("\"hooks\"".to_string(), h));
        }
        J::Obj(m)
    })
}

/// How a file is laid out.
#[derive(Debug, Clone)]
enum Layout {
    Pretty(&'static str),
    Compact,
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Pretty("  ")),
        Just(Layout::Pretty("    ")),
        Just(Layout::Pretty("\t")),
        Just(Layout::Compact),
    ]
}

fn render(j: &J, layout: &Layout) -> String {
    fn go(j: &J, layout: &Layout, depth: usize, out: &mut String) {
        let (nl, ind, colon) = match layout {
            Layout::Pretty(unit) => ("\n", unit.repeat(depth + 1), ": "),
            Layout::Compact => ("", String::new(), ":"),
        };
        let close = match layout {
            Layout::Pretty(unit) => unit.repeat(depth),
            Layout::Compact => String::new(),
        };
        match j {
            J::Lit(s) => out.push_str(s),
            J::Arr(items) if items.is_empty() => out.push_str("[]"),
            J::Obj(m) if m.is_empty() => out.push_str("{}"),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i == 0 { "" } else { "," });
                    out.push_str(nl);
                    out.push_str(&ind);
                    go(item, layout, depth + 1, out);
                }
                out.push_str(nl);
                out.push_str(&close);
                out.push(']');
            }
            J::Obj(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    out.push_str(if i == 0 { "" } else { "," });
                    out.push_str(nl);
                    out.push_str(&ind);
                    out.push_str(k);
                    out.push_str(colon);
                    go(v, layout, depth + 1, out);
                }
                out.push_str(nl);
                out.push_str(&close);
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    go(j, layout, 0, &mut out);
    if matches!(layout, Layout::Pretty(_)) {
        out.push('\n');
    }
    out
}

/// The scalar tokens of a JSON text (strings, keys, numbers, literals), as spelled.
fn scalars(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(text[start..i].to_string());
            }
            c if c == b'-' || c.is_ascii_alphanumeric() => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b"+-.".contains(&b[i])) {
                    i += 1;
                }
                out.push(text[start..i].to_string());
            }
            _ => i += 1,
        }
    }
    out
}

fn is_subsequence(small: &[String], big: &[String]) -> bool {
    let mut it = big.iter();
    small.iter().all(|s| it.any(|b| b == s))
}

fn claude_plan(text: &str, action: Action) -> Option<String> {
    let plan = claude::plan_text(
        Path::new("/c/settings.json"),
        Some(text),
        Path::new(BIN),
        action,
    )
    .unwrap();
    plan.changes[0].new.clone()
}

fn crush_plan(text: &str, action: Action) -> Option<String> {
    let plan = crush::plan_text(
        Path::new("/h/.config/crush/crush.json"),
        Some(text),
        Path::new(BIN),
        action,
    )
    .unwrap();
    plan.changes[0].new.clone()
}

fn gemini_plan(text: &str, action: Action) -> Option<String> {
    let plan = gemini::plan_text(
        Path::new("/g/.gemini/settings.json"),
        Some(text),
        Path::new(BIN),
        action,
    )
    .unwrap();
    plan.changes[0].new.clone()
}

fn codex_plan(
    hooks: &str,
    config: Option<&str>,
    action: Action,
) -> (Option<String>, Option<String>) {
    let plan = codex::plan_texts(
        Path::new(HOOKS),
        Some(hooks),
        Path::new(CONFIG),
        config,
        Path::new(BIN),
        action,
        true,
    )
    .unwrap();
    (plan.changes[0].new.clone(), plan.changes[1].new.clone())
}

/// A config.toml line group: every value spelling TOML has, comments, tables.
fn toml_config() -> impl Strategy<Value = String> {
    // Never `hooks` or `notify`: those are the keys we write.
    let key = "[a-z][a-z0-9_-]{0,8}".prop_filter("not ours", |k| k != "hooks" && k != "notify");
    let value = prop_oneof![
        Just("1_000".to_string()),
        Just("0xff".to_string()),
        Just("0o17".to_string()),
        Just("1e3".to_string()),
        Just("-0.0".to_string()),
        Just("inf".to_string()),
        Just("123456789012345678".to_string()),
        Just("true".to_string()),
        Just("1979-05-27T07:32:00Z".to_string()),
        "[a-zA-Z é✓]{0,8}".prop_map(|s| format!("\"{s}\\t\\u00e9\"")),
        "[a-zA-Z \\\\]{0,8}".prop_map(|s| format!("'{s}'")),
        Just("[ 1, 2 , \"x\" ]".to_string()),
        Just("{ a = 1, b = \"c\" }".to_string()),
        Just("\"\"\"\nmulti\nline\"\"\"".to_string()),
    ];
    let line = (key, value, prop::option::of("[a-z ✓]{0,10}"), "[ ]{0,3}").prop_map(
        |(k, v, comment, pad)| match comment {
            Some(c) => format!("{k}{pad}= {v}{pad}# {c}\n"),
            None => format!("{k} = {v}\n"),
        },
    );
    let table = prop_oneof![
        Just("[model_providers.mock]\n".to_string()),
        Just("[projects.\"/home/dev/prøject\"]\n".to_string()),
        Just("[hooks.state.\"/elsewhere/hooks.json:stop:0:0\"]\n".to_string()),
        Just("\n# a comment line ✓\n".to_string()),
    ];
    (
        prop::collection::vec(line.clone(), 0..4),
        prop::collection::vec((table, prop::collection::vec(line, 0..3)), 0..3),
    )
        .prop_map(|(top, tables)| {
            let mut out = top.concat();
            let mut used = Vec::new();
            for (header, lines) in tables {
                // A table header may appear once.
                if header.starts_with('[') && used.contains(&header) {
                    continue;
                }
                used.push(header.clone());
                out.push_str(&header);
                // Keys are unique within a table.
                let mut keys = Vec::new();
                for l in lines {
                    let k = l.split([' ', '=']).next().unwrap_or("").to_string();
                    if !keys.contains(&k) {
                        keys.push(k);
                        out.push_str(&l);
                    }
                }
            }
            out
        })
        .prop_filter("valid TOML with unique top-level keys", |t| {
            t.parse::<toml_edit::DocumentMut>().is_ok()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn claude_install_adds_ours_keeps_every_token_and_uninstall_gives_the_file_back(
        doc in settings(),
        layout in layout(),
    ) {
        let original = render(&doc, &layout);
        let before: Value = serde_json::from_str(&original).expect("the generator makes JSON");
        let installed = claude_plan(&original, Action::Install).expect("install adds our hooks");
        let after: Value = serde_json::from_str(&installed).unwrap();
        for (event, _) in claude::EVENTS {
            let last = after["hooks"][event].as_array().unwrap().last().unwrap();
            prop_assert_eq!(&last["hooks"][0]["command"], &Value::from(format!("{BIN} hook --agent claude")));
        }
        // Every other key, in its place, same value.
        for (k, v) in before.as_object().unwrap() {
            if k != "hooks" {
                prop_assert_eq!(&after[k], v);
            }
        }
        // Every number and string the user wrote is there, spelled as written, in order.
        prop_assert!(is_subsequence(&scalars(&original), &scalars(&installed)), "{}\n---\n{}", original, installed);
        prop_assert_eq!(claude_plan(&installed, Action::Install), None, "installing twice changes nothing");
        let back = claude_plan(&installed, Action::Uninstall).expect("uninstall removes ours");
        prop_assert_eq!(scalars(&back), scalars(&original));
        if let Layout::Pretty(_) = layout {
            prop_assert_eq!(&back, &original, "byte for byte");
        } else {
            // A compact object we add to gets a line per member; whitespace aside, the same.
            let back_value: Value = serde_json::from_str(&back).unwrap();
            prop_assert_eq!(back_value, before);
        }
    }

    /// Crush's crush.json (flat entries, no groups): the same guarantees as Claude's, each of
    /// our entries appended to its event's own list, the user's entries untouched around it.
    #[test]
    fn crush_install_adds_flat_entries_keeps_every_token_and_uninstall_gives_the_file_back(
        doc in flat_settings(),
        layout in layout(),
    ) {
        let original = render(&doc, &layout);
        let before: Value = serde_json::from_str(&original).expect("the generator makes JSON");
        let installed = crush_plan(&original, Action::Install).expect("install adds our hooks");
        let after: Value = serde_json::from_str(&installed).unwrap();
        for (event, _) in crush::EVENTS {
            let list = after["hooks"][event].as_array().unwrap();
            let last = list.last().unwrap();
            prop_assert_eq!(&last["command"], &Value::from(format!("{BIN} hook --agent crush")));
            prop_assert!(last.get("hooks").is_none(), "flat");
            let theirs = before["hooks"][event].as_array().map(Vec::len).unwrap_or(0);
            prop_assert_eq!(list.len(), theirs + 1, "theirs kept, one of ours");
        }
        for (k, v) in before.as_object().unwrap() {
            if k != "hooks" {
                prop_assert_eq!(&after[k], v);
            }
        }
        prop_assert!(is_subsequence(&scalars(&original), &scalars(&installed)), "{}\n---\n{}", original, installed);
        prop_assert_eq!(crush_plan(&installed, Action::Install), None, "installing twice changes nothing");
        let back = crush_plan(&installed, Action::Uninstall).expect("uninstall removes ours");
        prop_assert_eq!(scalars(&back), scalars(&original));
        if let Layout::Pretty(_) = layout {
            prop_assert_eq!(&back, &original, "byte for byte");
        } else {
            let back_value: Value = serde_json::from_str(&back).unwrap();
            prop_assert_eq!(back_value, before);
        }
    }

    /// Gemini CLI's settings.json: the same guarantees as Claude's, with Gemini's events, and
    /// never the per-chunk BeforeModel/AfterModel.
    #[test]
    fn gemini_install_adds_ours_keeps_every_token_and_uninstall_gives_the_file_back(
        doc in settings(),
        layout in layout(),
    ) {
        let original = render(&doc, &layout);
        let before: Value = serde_json::from_str(&original).expect("the generator makes JSON");
        let installed = gemini_plan(&original, Action::Install).expect("install adds our hooks");
        let after: Value = serde_json::from_str(&installed).unwrap();
        for (event, _) in gemini::EVENTS {
            let last = after["hooks"][event].as_array().unwrap().last().unwrap();
            prop_assert_eq!(&last["hooks"][0]["command"], &Value::from(format!("{BIN} hook --agent gemini")));
        }
        prop_assert!(after["hooks"].get("BeforeModel").is_none() && after["hooks"].get("AfterModel").is_none());
        for (k, v) in before.as_object().unwrap() {
            if k != "hooks" {
                prop_assert_eq!(&after[k], v);
            }
        }
        prop_assert!(is_subsequence(&scalars(&original), &scalars(&installed)), "{}\n---\n{}", original, installed);
        prop_assert_eq!(gemini_plan(&installed, Action::Install), None, "installing twice changes nothing");
        let back = gemini_plan(&installed, Action::Uninstall).expect("uninstall removes ours");
        prop_assert_eq!(scalars(&back), scalars(&original));
        if let Layout::Pretty(_) = layout {
            prop_assert_eq!(&back, &original, "byte for byte");
        } else {
            let back_value: Value = serde_json::from_str(&back).unwrap();
            prop_assert_eq!(back_value, before);
        }
    }

    #[test]
    fn codex_install_with_trust_and_uninstall_give_both_files_back(
        doc in settings(),
        layout in layout(),
        config in prop::option::of(toml_config()),
    ) {
        let hooks = render(&doc, &layout);
        let (hooks1, config1) = codex_plan(&hooks, config.as_deref(), Action::Install);
        let hooks1 = hooks1.expect("our hooks are added");
        let config1 = config1.expect("notify and trust are added");
        prop_assert!(is_subsequence(&scalars(&hooks), &scalars(&hooks1)));
        if let Some(config) = &config {
            // Every line the user wrote is still there, as written.
            for line in config.lines().filter(|l| !l.trim().is_empty()) {
                prop_assert!(config1.contains(line), "{:?} lost:\n{}", line, config1);
            }
        }
        let (again_h, again_c) = codex_plan(&hooks1, Some(&config1), Action::Install);
        prop_assert_eq!(again_h, None);
        prop_assert_eq!(again_c, None);
        let (hooks2, config2) = codex_plan(&hooks1, Some(&config1), Action::Uninstall);
        let hooks2 = hooks2.unwrap();
        prop_assert_eq!(scalars(&hooks2), scalars(&hooks));
        if let Layout::Pretty(_) = layout {
            prop_assert_eq!(&hooks2, &hooks);
        }
        prop_assert_eq!(config2.as_deref().unwrap_or(&config1), config.as_deref().unwrap_or(""));
    }
}
