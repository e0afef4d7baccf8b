//! Server-initiated elicitation (`elicitation/create`, MCP 2025-11-25 "Client Features →
//! Elicitation"): a server asks the user for a few values described by a flat JSON schema
//! (strings, numbers, integers, booleans, enums). The front end answers through an
//! [`Elicitor`]: the REPL asks the user; headless front ends (cron, the gateway, `chat -q`
//! without a terminal) use [`DeclineAll`]. This module also owns the schema helpers a front
//! end needs to ask and check the answer ([`fields`], [`parse_value`], [`defaults_of`]).

use serde_json::{Map, Value};

/// One question from a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The configured name of the server asking.
    pub server: String,
    /// The server's explanation of what it needs, shown to the user as is.
    pub message: String,
    /// Form mode: the `requestedSchema` (an object schema with primitive properties).
    /// `Null` in URL mode.
    pub schema: Value,
    /// URL mode: the address the user should open; `None` in form mode.
    pub url: Option<String>,
}

/// The user's answer (`action` of the MCP `ElicitResult`).
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// Accepted with these values (property name → value); empty in URL mode.
    Accept(Map<String, Value>),
    /// The user said no; the server may go on without the values.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// Answers elicitation requests for a session; provided by the front end.
#[async_trait::async_trait]
pub trait Elicitor: Send + Sync {
    /// Asks the user `request` and returns the answer. Implementations must never hang
    /// forever without a user: answer [`ElicitationAnswer::Decline`] when nobody can be asked.
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer;
}

/// The headless answer: every request is declined without asking anyone.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeclineAll;

#[async_trait::async_trait]
impl Elicitor for DeclineAll {
    async fn elicit(&self, _request: ElicitationRequest) -> ElicitationAnswer {
        ElicitationAnswer::Decline
    }
}

/// The JSON type of one form field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// `type: string` without `enum`.
    Text,
    /// `type: integer`.
    Integer,
    /// `type: number`.
    Number,
    /// `type: boolean`.
    Boolean,
    /// A string with `enum` (or `oneOf` of `const`s): one of these values.
    Choice(Vec<String>),
}

/// One property of a form schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Property name (the key of the answer).
    pub name: String,
    /// `title`, else the name.
    pub label: String,
    /// `description` (empty when none).
    pub description: String,
    /// Its type.
    pub kind: FieldKind,
    /// Listed in `required`.
    pub required: bool,
    /// `default`, when the schema gives one.
    pub default: Option<Value>,
}

fn choices(prop: &Value) -> Option<Vec<String>> {
    if let Some(list) = prop.get("enum").and_then(Value::as_array) {
        return Some(
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        );
    }
    // SEP-1330 titled enums: `oneOf: [{const, title}]`.
    let list = prop.get("oneOf").and_then(Value::as_array)?;
    Some(
        list.iter()
            .filter_map(|v| v.get("const").and_then(Value::as_str).map(str::to_string))
            .collect(),
    )
}

/// The fields of a form `schema` (`{type: object, properties, required}`): required ones
/// first, each group by name (the listing order does not survive the SDK's typed schema).
/// Properties of unsupported types are read as text.
pub fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out: Vec<Field> = props
        .iter()
        .map(|(name, prop)| {
            let kind = match (choices(prop), prop.get("type").and_then(Value::as_str)) {
                (Some(c), _) if !c.is_empty() => FieldKind::Choice(c),
                (_, Some("integer")) => FieldKind::Integer,
                (_, Some("number")) => FieldKind::Number,
                (_, Some("boolean")) => FieldKind::Boolean,
                _ => FieldKind::Text,
            };
            Field {
                name: name.clone(),
                label: prop
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_string(),
                description: prop
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind,
                required: required.contains(&name.as_str()),
                default: prop.get("default").cloned(),
            }
        })
        .collect();
    out.sort_by(|a, b| b.required.cmp(&a.required).then(a.name.cmp(&b.name)));
    out
}

/// Every field's `default` (SEP-1034), as an answer map; fields without one are left out.
pub fn defaults_of(schema: &Value) -> Map<String, Value> {
    fields(schema)
        .into_iter()
        .filter_map(|f| f.default.map(|d| (f.name, d)))
        .collect()
}

/// Reads the user's typed `text` as a value of `field`.
///
/// Booleans take `y`/`yes`/`true`/`1` and `n`/`no`/`false`/`0`; a choice takes the value or
/// its 1-based number in the list.
///
/// # Errors
/// A sentence for the user saying what was expected (e.g. "expected a whole number").
pub fn parse_value(field: &Field, text: &str) -> Result<Value, String> {
    let t = text.trim();
    match &field.kind {
        FieldKind::Text => Ok(Value::String(t.to_string())),
        FieldKind::Integer => t
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("`{t}` is not a whole number")),
        FieldKind::Number => t
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("`{t}` is not a number")),
        FieldKind::Boolean => match t.to_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(Value::Bool(true)),
            "n" | "no" | "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("`{t}`: answer yes or no")),
        },
        FieldKind::Choice(options) => {
            if let Some(o) = options.iter().find(|o| o.as_str() == t) {
                return Ok(Value::String(o.clone()));
            }
            t.parse::<usize>()
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| options.get(i))
                .map(|o| Value::String(o.clone()))
                .ok_or_else(|| format!("`{t}` is not one of: {}", options.join(", ")))
        }
    }
}

/// Turns the SDK's request params (as JSON) into an [`ElicitationRequest`] of `server`.
pub(crate) fn request_from_params(server: &str, params: &Value) -> ElicitationRequest {
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let url = params
        .get("url")
        .and_then(Value::as_str)
        .map(str::to_string);
    ElicitationRequest {
        server: server.to_string(),
        message,
        schema: if url.is_some() {
            Value::Null
        } else {
            params
                .get("requestedSchema")
                .cloned()
                .unwrap_or(Value::Null)
        },
        url,
    }
}

/// The `ElicitResult` JSON of an answer.
pub(crate) fn result_json(answer: &ElicitationAnswer) -> Value {
    match answer {
        ElicitationAnswer::Accept(content) => {
            serde_json::json!({"action": "accept", "content": content})
        }
        ElicitationAnswer::Decline => serde_json::json!({"action": "decline"}),
        ElicitationAnswer::Cancel => serde_json::json!({"action": "cancel"}),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Your name", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number"},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }, "required": ["name"]})
    }

    #[test]
    fn fields_keep_order_types_and_required() {
        let f = fields(&schema());
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["name", "age", "score", "status", "verified"]);
        assert_eq!(f[0].label, "Your name");
        assert!(f[0].required && !f[1].required);
        assert_eq!(f[1].kind, FieldKind::Integer);
        assert_eq!(f[2].kind, FieldKind::Number);
        assert_eq!(f[4].kind, FieldKind::Boolean);
        assert_eq!(
            f[3].kind,
            FieldKind::Choice(vec!["active".into(), "inactive".into()])
        );
    }

    #[test]
    fn defaults_follow_sep1034() {
        let d = defaults_of(&schema());
        assert_eq!(
            Value::Object(d),
            json!({"name": "John Doe", "age": 30, "status": "active", "verified": true})
        );
    }

    #[test]
    fn typed_answers_are_parsed_or_explained() {
        let f = fields(&schema());
        assert_eq!(parse_value(&f[1], " 42 ").unwrap(), json!(42));
        assert!(
            parse_value(&f[1], "4.5")
                .unwrap_err()
                .contains("whole number")
        );
        assert_eq!(parse_value(&f[2], "95.5").unwrap(), json!(95.5));
        assert_eq!(parse_value(&f[3], "2").unwrap(), json!("inactive"));
        assert_eq!(parse_value(&f[3], "active").unwrap(), json!("active"));
        assert!(parse_value(&f[3], "3").unwrap_err().contains("one of"));
        assert_eq!(parse_value(&f[4], "no").unwrap(), json!(false));
        assert!(parse_value(&f[4], "maybe").is_err());
    }

    #[test]
    fn url_mode_requests_have_no_schema() {
        let r = request_from_params(
            "s",
            &json!({"mode": "url", "message": "log in", "url": "https://x.example/a"}),
        );
        assert_eq!(r.url.as_deref(), Some("https://x.example/a"));
        assert_eq!(r.schema, Value::Null);
        assert_eq!(
            result_json(&ElicitationAnswer::Decline),
            json!({"action": "decline"})
        );
    }
}
