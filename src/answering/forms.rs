//! An MCP server's form (elicitation), as Claude Code's `Elicitation` hook hands it over: each
//! field of its schema becomes a question the request lists whole, and the user's answers
//! become the form's `content`, typed as the schema says.
//!
//! Why questions: a form is a few named fields, each a choice among values or words of one's
//! own, and every way of answering a question here (the CLI's `answer`, the window's form, the
//! alert) already checks an answer against what was shown. What cannot be answered exactly as
//! asked is not offered, and the terminal shows the form: a number field (typed text could not
//! be checked before it is sent), a nested object, a schema of another shape, a `url` mode.

use serde_json::{json, Map, Value};

use super::{digest, AskCall, AskDetail, Question, QuestionAnswer, QuestionOption};
use agent_tray_domain::question::{MAX_OPTIONS, MAX_QUESTIONS};

/// The tool a form is listed under.
pub const FORM_TOOL: &str = "MCP form";

/// The labels a yes/no field offers, and the values they send.
const YES: &str = "yes";
const NO: &str = "no";

/// What a field takes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FieldKind {
    /// Words of one's own (a string without values to choose from).
    Text,
    /// One of the schema's values.
    OneOf(Vec<String>),
    /// Any of the schema's values (an array of them).
    AnyOf(Vec<String>),
    Boolean,
}

/// One field of the form, in the schema's order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    name: String,
    title: Option<String>,
    description: Option<String>,
    kind: FieldKind,
}

/// The values of a string field's `enum`, or of its `oneOf: [{const, title}]`: `Ok(None)`
/// where it lists none (free text), `Err` where it lists something other than strings.
fn values_of(schema: &Value) -> Result<Option<Vec<String>>, ()> {
    let listed = |list: &Value, pick: fn(&Value) -> Option<&str>| {
        list.as_array()
            .ok_or(())?
            .iter()
            .map(|v| pick(v).map(str::to_string).ok_or(()))
            .collect::<Result<Vec<String>, ()>>()
            .map(Some)
    };
    if let Some(list) = schema.get("enum") {
        return listed(list, Value::as_str);
    }
    if let Some(list) = schema.get("oneOf").or_else(|| schema.get("anyOf")) {
        return listed(list, |v| v.get("const").and_then(Value::as_str));
    }
    Ok(None)
}

/// The fields of `requested_schema`, or `None` where one cannot be answered exactly.
fn fields_of(schema: &Value) -> Option<Vec<Field>> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let properties = schema.get("properties")?.as_object()?;
    if properties.is_empty() || properties.len() > MAX_QUESTIONS {
        return None;
    }
    let mut fields = Vec::with_capacity(properties.len());
    for (name, property) in properties {
        let text = |key: &str| {
            property
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
                .map(str::to_string)
        };
        let kind = match property.get("type").and_then(Value::as_str)? {
            "string" => match values_of(property).ok()? {
                Some(values) => FieldKind::OneOf(values),
                None => FieldKind::Text,
            },
            "boolean" => FieldKind::Boolean,
            "array" => FieldKind::AnyOf(values_of(property.get("items")?).ok()??),
            _ => return None, // numbers, objects: the terminal's form checks those
        };
        if let FieldKind::OneOf(values) | FieldKind::AnyOf(values) = &kind {
            let distinct = values
                .iter()
                .enumerate()
                .all(|(at, v)| !v.trim().is_empty() && !values[..at].contains(v));
            if values.is_empty() || values.len() > MAX_OPTIONS || !distinct {
                return None;
            }
        }
        fields.push(Field {
            name: name.clone(),
            title: text("title"),
            description: text("description"),
            kind,
        });
    }
    Some(fields)
}

fn question_of(field: &Field) -> Question {
    let labels: Vec<String> = match &field.kind {
        FieldKind::Text => Vec::new(),
        FieldKind::OneOf(values) | FieldKind::AnyOf(values) => values.clone(),
        FieldKind::Boolean => vec![YES.to_string(), NO.to_string()],
    };
    let title = field.title.clone().unwrap_or_else(|| field.name.clone());
    Question {
        question: match &field.description {
            Some(description) => format!("{title}: {description}"),
            None => title.clone(),
        },
        header: Some(field.name.clone()),
        options: labels
            .into_iter()
            .map(|label| QuestionOption {
                label,
                description: None,
            })
            .collect(),
        multi_select: matches!(field.kind, FieldKind::AnyOf(_)),
        allows_other: field.kind == FieldKind::Text,
    }
}

/// The request for an `Elicitation` payload (`mcp_server_name`, `message`, `mode`,
/// `requested_schema`): the server's message is its description, each field a question.
/// `None` where the form cannot be answered exactly from here (see the module's comment).
pub fn form_call_from_payload(payload: &Value) -> Option<AskCall> {
    if payload
        .get("mode")
        .and_then(Value::as_str)
        .unwrap_or("form")
        != "form"
    {
        return None;
    }
    let schema = payload.get("requested_schema")?;
    let fields = fields_of(schema)?;
    let server = payload.get("mcp_server_name").and_then(Value::as_str)?;
    let message = payload
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = json!({"mcp_server_name": server, "message": message, "requested_schema": schema})
        .to_string();
    if input.len() > super::MAX_INPUT_BYTES {
        return None;
    }
    let tool = format!("{FORM_TOOL} of {server}");
    let input_digest = digest(&tool, &input);
    Some(AskCall {
        call_id: input_digest.clone(),
        input_digest,
        suggests_for_session: false,
        detail: AskDetail {
            tool,
            description: Some(message.to_string()).filter(|m| !m.trim().is_empty()),
            cwd: payload
                .get("cwd")
                .and_then(Value::as_str)
                .map(str::to_string),
            input,
            questions: Some(fields.iter().map(question_of).collect()),
            ..AskDetail::default()
        },
    })
}

/// The form's `content` for the user's answers, each typed as its field: text, the value
/// chosen, the values chosen, `true`/`false`. `None` when the answers do not fit the form
/// (they were checked against the same questions, so only a changed payload gets here).
pub fn form_content(payload: &Value, answers: &[QuestionAnswer]) -> Option<Value> {
    let fields = fields_of(payload.get("requested_schema")?)?;
    if fields.len() != answers.len() {
        return None;
    }
    let mut content = Map::new();
    for (field, answer) in fields.iter().zip(answers) {
        let value = match &field.kind {
            FieldKind::Text => Value::String(answer.text.clone()?),
            FieldKind::OneOf(_) => Value::String(answer.choices.first()?.clone()),
            FieldKind::AnyOf(_) => json!(answer.choices),
            FieldKind::Boolean => Value::Bool(match answer.choices.first()?.as_str() {
                YES => true,
                NO => false,
                _ => return None,
            }),
        };
        content.insert(field.name.clone(), value);
    }
    Some(Value::Object(content))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use agent_tray_domain::question::check_answers;

    /// What Claude Code 2.1.332 handed its `Elicitation` hook for a test MCP server's form.
    fn payload() -> Value {
        json!({"session_id": "s1", "cwd": "/home/dev/proj", "hook_event_name": "Elicitation",
            "mcp_server_name": "form", "message": "Name the new cache", "mode": "form",
            "requested_schema": {"type": "object", "properties": {
                "name": {"type": "string", "title": "Name", "description": "what to call it"},
                "size": {"type": "string", "title": "Size", "enum": ["small", "large"]}},
                "required": ["name"]}})
    }

    fn answer(choices: &[&str], text: Option<&str>) -> QuestionAnswer {
        QuestionAnswer {
            choices: choices.iter().map(|c| (*c).to_string()).collect(),
            text: text.map(str::to_string),
        }
    }

    #[test]
    fn each_field_is_a_question_in_the_schema_s_order() {
        let call = form_call_from_payload(&payload()).unwrap();
        assert_eq!(call.detail.tool, "MCP form of form");
        assert_eq!(
            call.detail.description.as_deref(),
            Some("Name the new cache")
        );
        assert_eq!(call.detail.cwd.as_deref(), Some("/home/dev/proj"));
        let q = call.detail.questions.unwrap();
        assert_eq!(q[0].question, "Name: what to call it");
        assert_eq!(q[0].header.as_deref(), Some("name"));
        assert!(q[0].options.is_empty() && q[0].allows_other && !q[0].multi_select);
        assert_eq!(q[1].question, "Size");
        let labels: Vec<_> = q[1].options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(labels, ["small", "large"]);
        assert!(!q[1].allows_other);
        // The same form is the same request; another message is another.
        assert_eq!(
            form_call_from_payload(&payload()).unwrap().call_id,
            call.call_id
        );
        let mut other = payload();
        other["message"] = json!("Name another cache");
        assert_ne!(
            form_call_from_payload(&other).unwrap().call_id,
            call.call_id
        );
    }

    #[test]
    fn answers_become_the_content_typed_as_each_field() {
        let mut p = payload();
        p["requested_schema"]["properties"]["urgent"] =
            json!({"type": "boolean", "title": "Urgent"});
        p["requested_schema"]["properties"]["tags"] =
            json!({"type": "array", "items": {"type": "string", "enum": ["hot", "cold", "warm"]}});
        let questions = form_call_from_payload(&p)
            .unwrap()
            .detail
            .questions
            .unwrap();
        let answers = [
            answer(&[], Some("hot-cache")),
            answer(&["large"], None),
            answer(&["no"], None),
            answer(&["hot", "warm"], None),
        ];
        check_answers(&questions, &answers).unwrap();
        assert_eq!(
            form_content(&p, &answers).unwrap(),
            json!({"name": "hot-cache", "size": "large", "urgent": false, "tags": ["hot", "warm"]})
        );
        // The checks a question makes hold for a form: a value not offered, two for one, words
        // where the field takes a value, a field left out.
        assert!(check_answers(
            &questions,
            &[
                answer(&[], Some("x")),
                answer(&["huge"], None),
                answer(&["yes"], None),
                answer(&["hot"], None)
            ]
        )
        .is_err());
        assert!(check_answers(
            &questions,
            &[
                answer(&[], Some("x")),
                answer(&["small", "large"], None),
                answer(&["yes"], None),
                answer(&["hot"], None)
            ]
        )
        .is_err());
        assert!(check_answers(
            &questions,
            &[
                answer(&[], Some("x")),
                answer(&[], Some("medium")),
                answer(&["yes"], None),
                answer(&["hot"], None)
            ]
        )
        .is_err());
        assert!(check_answers(&questions, &answers[..3]).is_err());
    }

    // The hook's output for each way of answering a form: the content, a decline, a cancel.
    #[test]
    fn a_form_is_accepted_with_its_content_declined_or_cancelled() {
        use crate::answering::{hook_output, HookDecision, ReplyShape};
        let out = |d: &HookDecision| {
            hook_output(ReplyShape::ElicitationAction, d, &payload())
                .map(|t| serde_json::from_str::<Value>(&t).unwrap())
        };
        let answers = vec![answer(&[], Some("hot-cache")), answer(&["small"], None)];
        assert_eq!(
            out(&HookDecision::Answers { answers }),
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                "content": {"name": "hot-cache", "size": "small"}}})
            )
        );
        assert_eq!(
            out(&HookDecision::Deny { message: None }),
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}})
            )
        );
        assert_eq!(
            out(&HookDecision::Dismiss),
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "cancel"}})
            )
        );
        // Nothing a form does not take; answers that do not fit it print nothing.
        assert_eq!(out(&HookDecision::Allow), None);
        assert_eq!(
            out(&HookDecision::None {
                reason: "gone".into()
            }),
            None
        );
        assert_eq!(
            out(&HookDecision::Answers {
                answers: vec![answer(&[], Some("x"))]
            }),
            None
        );
        // Elsewhere a dismissal is the agent's decline.
        assert_eq!(
            hook_output(ReplyShape::ReplyWords, &HookDecision::Dismiss, &Value::Null).as_deref(),
            Some(r#"{"reply":"reject"}"#)
        );
    }

    #[test]
    fn a_form_that_cannot_be_answered_exactly_is_left_to_the_terminal() {
        let with = |name: &str, property: Value| {
            let mut p = payload();
            p["requested_schema"]["properties"][name] = property;
            p
        };
        for p in [
            with("count", json!({"type": "integer"})),
            with("ratio", json!({"type": "number"})),
            with("nested", json!({"type": "object", "properties": {}})),
            with("size", json!({"type": "string", "enum": ["a", "a"]})),
            with("size", json!({"type": "string", "enum": []})),
            with("size", json!({"type": "string", "enum": [1, 2]})),
            json!({"mcp_server_name": "form", "mode": "url", "url": "https://example.com", "requested_schema": payload()["requested_schema"]}),
            json!({"mcp_server_name": "form", "requested_schema": {"type": "object", "properties": {}}}),
            json!({"mcp_server_name": "form"}),
        ] {
            assert!(form_call_from_payload(&p).is_none(), "offered: {p}");
        }
    }
}
