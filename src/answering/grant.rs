//! "Allow for this session" in the standard hook shape: the agent's `permission_suggestions`
//! read into items we know, each said in words, and handed back exactly as shown.
//!
//! Why typed and strict: a suggestion for a plain `touch` may switch the session to
//! accept-edits (every later edit accepted without asking) or add a folder to those the agent
//! may work in, and a rule may be saved in the project's or the user's settings, not only the
//! session's. The user must read all of that before choosing it, and a click must grant what was
//! read and nothing else. So every suggestion is read into a known kind with known fields
//! (`deny_unknown_fields`); what is handed back is our own serialisation of those items, never
//! the agent's text. A suggestion of a kind, a mode, a destination or a field we do not know, or
//! one we cannot read, withholds the whole grant: no session grant is offered, and
//! `allow --for-session` is refused with why.
//!
//! Pure: the hook reads a payload into a [`SessionGrant`] (sent with its ask, shown by the
//! engine) and, when the answer is "allow for the session", reads the same payload again into
//! the same items ([`updated_permissions`]): the same function of the same bytes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use agent_tray_domain::pending::{GrantItem, GrantKind, SessionGrant};
use agent_tray_domain::visible::visible_line;

/// The payload field that holds the suggestions.
pub const SUGGESTIONS_FIELD: &str = "permission_suggestions";

/// The most suggestions a grant may hold and still be shown whole.
pub const MAX_SUGGESTIONS: usize = 32;

/// One suggestion, as the agent's hook output takes it back (`updatedPermissions`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Suggestion {
    AddRules(Rules),
    ReplaceRules(Rules),
    RemoveRules(Rules),
    SetMode(SetMode),
    AddDirectories(Directories),
    RemoveDirectories(Directories),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rules {
    pub rules: Vec<Rule>,
    pub behavior: Behavior,
    pub destination: Destination,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetMode {
    pub mode: Mode,
    pub destination: Destination,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Directories {
    pub directories: Vec<String>,
    pub destination: Destination,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Behavior {
    Allow,
    Deny,
    Ask,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Destination {
    Session,
    LocalSettings,
    ProjectSettings,
    UserSettings,
    CliArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    Default,
    AcceptEdits,
    Plan,
    BypassPermissions,
    DontAsk,
}

impl Destination {
    /// How long or where the item holds, as the end of its sentence.
    fn words(self) -> &'static str {
        match self {
            Destination::Session => " for this session",
            Destination::CliArg => " for this run",
            Destination::LocalSettings => ", saved in this project's local settings",
            Destination::ProjectSettings => ", saved in this project's shared settings",
            Destination::UserSettings => ", saved in your user settings (every project)",
        }
    }
}

impl Mode {
    fn words(self) -> &'static str {
        match self {
            Mode::Default => "switch back to the default mode (ask as usual)",
            Mode::AcceptEdits => {
                "switch to accept-edits (every later file edit accepted without asking)"
            }
            Mode::Plan => "switch to plan mode (nothing run or changed)",
            Mode::BypassPermissions => "switch to bypass-permissions (nothing asked again)",
            Mode::DontAsk => "switch to don't-ask (what no rule allows is denied without asking)",
        }
    }
}

impl Behavior {
    fn word(self) -> &'static str {
        match self {
            Behavior::Allow => "allow",
            Behavior::Deny => "deny",
            Behavior::Ask => "ask",
        }
    }
}

/// `` `Bash(npm test:*)` ``, or `` `Bash` (every call) `` for a rule without a pattern.
fn rule_words(rule: &Rule) -> String {
    let tool = visible_line(&rule.tool_name);
    match &rule.rule_content {
        Some(content) => format!("`{tool}({})`", visible_line(content)),
        None => format!("`{tool}` (every call)"),
    }
}

fn and_list(items: Vec<String>) -> String {
    match items.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

impl Suggestion {
    /// The suggestion in words, with where it holds; `None` where it grants nothing to show (no
    /// rule, no folder): such a suggestion withholds the grant.
    pub fn item(&self) -> Option<GrantItem> {
        let (kind, text) = match self {
            Suggestion::AddRules(r) | Suggestion::ReplaceRules(r) | Suggestion::RemoveRules(r) => {
                if r.rules.is_empty() {
                    return None;
                }
                let rules = and_list(r.rules.iter().map(rule_words).collect());
                let (kind, text) = match (self, r.behavior) {
                    (Suggestion::AddRules(_), Behavior::Ask) => {
                        (GrantKind::AddRules, format!("always ask before {rules}"))
                    }
                    (Suggestion::AddRules(_), b) => {
                        (GrantKind::AddRules, format!("{} {rules}", b.word()))
                    }
                    (Suggestion::ReplaceRules(_), b) => (
                        GrantKind::ReplaceRules,
                        format!("replace every {} rule with {rules}", b.word()),
                    ),
                    (_, b) => (
                        GrantKind::RemoveRules,
                        format!("remove the {} rule {rules}", b.word()),
                    ),
                };
                (kind, format!("{text}{}", r.destination.words()))
            }
            Suggestion::SetMode(m) => (
                GrantKind::SetMode,
                format!("{}{}", m.mode.words(), m.destination.words()),
            ),
            Suggestion::AddDirectories(d) | Suggestion::RemoveDirectories(d) => {
                if d.directories.is_empty() {
                    return None;
                }
                let folders = and_list(d.directories.iter().map(|p| visible_line(p)).collect());
                let (kind, text) = if matches!(self, Suggestion::AddDirectories(_)) {
                    (
                        GrantKind::AddDirectories,
                        format!("add {folders} to allowed folders"),
                    )
                } else {
                    (
                        GrantKind::RemoveDirectories,
                        format!("remove {folders} from allowed folders"),
                    )
                };
                (kind, format!("{text}{}", d.destination.words()))
            }
        };
        Some(GrantItem { kind, text })
    }
}

/// Why a payload's suggestions cannot be shown faithfully.
fn read_suggestions(list: &[Value]) -> Result<Vec<Suggestion>, String> {
    if list.len() > MAX_SUGGESTIONS {
        return Err(format!(
            "the agent suggests {} changes, more than the {MAX_SUGGESTIONS} shown",
            list.len()
        ));
    }
    list.iter()
        .enumerate()
        .map(|(n, value)| {
            serde_json::from_value::<Suggestion>(value.clone()).map_err(|_| {
                let kind = value.get("type").and_then(Value::as_str).map_or_else(
                    || "of no type".to_string(),
                    |t| format!("{:?}", visible_line(t)),
                );
                format!(
                    "suggestion {} ({kind}) is of a kind or has a field Agent Tray cannot show",
                    n + 1
                )
            })
        })
        .collect()
}

/// What "allow for this session" would grant for `payload`: `None` where the agent suggests
/// nothing; a withheld grant (with why) where something it suggests cannot be shown.
pub fn session_grant(payload: &Value) -> Option<SessionGrant> {
    let value = payload.get(SUGGESTIONS_FIELD)?;
    let Some(list) = value.as_array() else {
        return Some(SessionGrant::withheld(
            "the agent's suggestions are not a list",
        ));
    };
    if list.is_empty() {
        return None;
    }
    let suggestions = match read_suggestions(list) {
        Ok(s) => s,
        Err(why) => return Some(SessionGrant::withheld(why)),
    };
    let items: Option<Vec<GrantItem>> = suggestions.iter().map(Suggestion::item).collect();
    Some(match items {
        Some(items) => SessionGrant::of(items),
        None => {
            SessionGrant::withheld("a suggestion grants nothing it could show (no rule, no folder)")
        }
    })
}

/// The suggestions to hand back for "allow for this session": exactly the items
/// [`session_grant`] showed for the same payload, as our own serialisation. `None` where there
/// is no grant to hand back (nothing suggested, or something that cannot be shown).
pub fn updated_permissions(payload: &Value) -> Option<Value> {
    let grant = session_grant(payload)?;
    if !grant.is_offered() {
        return None;
    }
    let list = payload.get(SUGGESTIONS_FIELD)?.as_array()?;
    let suggestions = read_suggestions(list).ok()?;
    serde_json::to_value(suggestions).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(grant: &SessionGrant) -> Vec<&str> {
        grant.items.iter().map(|i| i.text.as_str()).collect()
    }

    // Recorded from the real agent (2.1.332) for a plain `touch`: a folder added and the session
    // switched to accept-edits. Both must be read before the grant is chosen.
    #[test]
    fn a_plain_touch_says_it_switches_to_accept_edits_and_adds_the_folder() {
        let payload = json!({"tool_name": "Bash", "tool_input": {"command": "touch made-by-tool"},
            "permission_suggestions": [
                {"type": "addDirectories", "directories": ["/home/dev/proj"], "destination": "session"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]});
        let grant = session_grant(&payload).unwrap();
        assert!(grant.is_offered());
        assert_eq!(
            texts(&grant),
            [
                "add /home/dev/proj to allowed folders for this session",
                "switch to accept-edits (every later file edit accepted without asking) for this session"
            ]
        );
        assert_eq!(grant.items[1].kind, GrantKind::SetMode);
        assert_eq!(
            updated_permissions(&payload).unwrap(),
            payload["permission_suggestions"],
            "what is handed back is exactly what was shown"
        );
    }

    #[test]
    fn rules_say_their_tool_pattern_and_where_they_are_saved() {
        let payload = json!({"permission_suggestions": [{"type": "addRules", "rules": [
            {"toolName": "Bash", "ruleContent": "npm test:*"}, {"toolName": "WebFetch"}],
            "behavior": "allow", "destination": "localSettings"}]});
        let grant = session_grant(&payload).unwrap();
        assert_eq!(
            texts(&grant),
            ["allow `Bash(npm test:*)` and `WebFetch` (every call), saved in this project's local settings"]
        );
    }

    // An unknown kind, a known kind with a field we do not know, a mode or destination we do
    // not know: nothing can be handed back that was not shown, so there is no grant at all.
    #[test]
    fn anything_that_cannot_be_shown_withholds_the_whole_grant() {
        let known =
            json!({"type": "addDirectories", "directories": ["/w"], "destination": "session"});
        for unknown in [
            json!({"type": "grantEverything", "destination": "session"}),
            json!({"type": "setMode", "mode": "acceptEdits", "destination": "session", "also": "x"}),
            json!({"type": "setMode", "mode": "yolo", "destination": "session"}),
            json!({"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "cloud"}),
            json!({"type": "addRules", "rules": [], "behavior": "allow", "destination": "session"}),
            json!("setMode"),
        ] {
            let payload = json!({"permission_suggestions": [known.clone(), unknown.clone()]});
            let grant = session_grant(&payload).unwrap();
            assert!(!grant.is_offered(), "{unknown}");
            assert!(
                grant.items.is_empty() && grant.withheld.is_some(),
                "{unknown}"
            );
            assert_eq!(updated_permissions(&payload), None, "{unknown}");
        }
        let not_a_list = json!({"permission_suggestions": {"type": "setMode"}});
        assert!(!session_grant(&not_a_list).unwrap().is_offered());
        assert_eq!(session_grant(&json!({"permission_suggestions": []})), None);
        assert_eq!(session_grant(&json!({})), None);
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let words = prop_oneof![
            Just("addRules".to_string()),
            Just("setMode".to_string()),
            Just("addDirectories".to_string()),
            Just("removeRules".to_string()),
            Just("session".to_string()),
            Just("acceptEdits".to_string()),
            Just("allow".to_string()),
            Just("Bash".to_string()),
            "[a-zA-Z\\n\\u{202E}* /:]{0,12}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            words.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            let keys = prop_oneof![
                Just("type".to_string()),
                Just("rules".to_string()),
                Just("toolName".to_string()),
                Just("ruleContent".to_string()),
                Just("behavior".to_string()),
                Just("destination".to_string()),
                Just("mode".to_string()),
                Just("directories".to_string()),
                Just("other".to_string()),
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map(keys, inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A suggestion of a known shape with any text in it, or anything at all.
    fn suggestions() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = "[a-z\\n\\t\\u{202E}\\u{200B}⏎* /:.]{0,16}";
        let destination = prop_oneof![
            Just("session"),
            Just("localSettings"),
            Just("userSettings"),
            Just("cloud")
        ];
        let known = prop_oneof![
            (text, text, destination.clone()).prop_map(|(tool, content, d)| json!({"type": "addRules", "rules": [{"toolName": tool, "ruleContent": content}], "behavior": "allow", "destination": d})),
            (prop_oneof![Just("acceptEdits"), Just("plan"), Just("yolo")], destination.clone())
                .prop_map(|(mode, d)| json!({"type": "setMode", "mode": mode, "destination": d})),
            (proptest::collection::vec(text, 0..3), destination)
                .prop_map(|(dirs, d)| json!({"type": "addDirectories", "directories": dirs, "destination": d})),
        ];
        proptest::collection::vec(prop_oneof![4 => known, 1 => any_json()], 0..5)
            .prop_map(Value::Array)
    }

    proptest::proptest! {
        // Whatever an agent puts in its suggestions: a grant is handed back only where every
        // item is shown, item for item, and what is handed back reads back as the same grant.
        #[test]
        fn a_grant_is_handed_back_only_as_shown(suggestions in proptest::prop_oneof![suggestions(), any_json()]) {
            let payload = json!({ "permission_suggestions": suggestions });
            let grant = session_grant(&payload);
            let handed = updated_permissions(&payload);
            let offered = grant.as_ref().is_some_and(SessionGrant::is_offered);
            proptest::prop_assert_eq!(handed.is_some(), offered);
            if let (Some(grant), Some(handed)) = (grant, handed) {
                proptest::prop_assert_eq!(handed.as_array().map(Vec::len), Some(grant.items.len()));
                for item in &grant.items {
                    // Only our marks stand for invisible characters; none is left raw.
                    let raw = |c: char| agent_tray_domain::visible::is_odd(c) && !matches!(c, '⏎' | '␍' | '⇥');
                    proptest::prop_assert!(!item.text.chars().any(raw), "{:?}", item.text);
                }
                let again = json!({ "permission_suggestions": handed });
                proptest::prop_assert_eq!(session_grant(&again), Some(grant));
            }
        }
    }

    #[test]
    fn agent_text_in_a_grant_is_made_visible() {
        let payload = json!({"permission_suggestions": [{"type": "addRules", "rules": [
            {"toolName": "Bash", "ruleContent": "ls\ncurl x|sh"}], "behavior": "allow", "destination": "session"}]});
        let grant = session_grant(&payload).unwrap();
        assert_eq!(
            texts(&grant),
            ["allow `Bash(ls⏎curl x|sh)` for this session"]
        );
    }
}
