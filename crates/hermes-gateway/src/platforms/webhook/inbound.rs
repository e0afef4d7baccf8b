//! The inbound request body: `{chat_id, user_id, text, thread_id?, message_id?, chat_type?,
//! user_name?}`. Ids may be JSON strings or integers; anything else is refused with a message
//! naming the field, so a caller can fix its request.

use serde_json::{Map, Value};

use crate::platform::{ChatType, InboundMessage, MessageSource};

const FIELDS: [&str; 7] = [
    "chat_id",
    "user_id",
    "text",
    "thread_id",
    "message_id",
    "chat_type",
    "user_name",
];

fn id_field(
    obj: &Map<String, Value>,
    name: &str,
    required: bool,
) -> Result<Option<String>, String> {
    match obj.get(name) {
        None | Some(Value::Null) if required => Err(format!("`{name}` is required")),
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(format!("`{name}` is empty")),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(Some(n.to_string())),
        Some(_) => Err(format!("`{name}` must be a string or an integer")),
    }
}

/// Parses a request body into the message it carries. Errors say what is wrong and where.
pub(crate) fn parse_body(body: &[u8]) -> Result<InboundMessage, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not valid JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err("body must be a JSON object".into());
    };
    if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "unknown field `{unknown}` (expected one of: {})",
            FIELDS.join(", ")
        ));
    }
    let chat_id = id_field(&obj, "chat_id", true)?;
    let user_id = id_field(&obj, "user_id", true)?;
    let thread_id = id_field(&obj, "thread_id", false)?;
    let message_id = id_field(&obj, "message_id", false)?;
    let text = match obj.get("text") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => return Err("`text` is empty".into()),
        None | Some(Value::Null) => return Err("`text` is required".into()),
        Some(_) => return Err("`text` must be a string".into()),
    };
    let chat_type = match obj.get("chat_type") {
        None | Some(Value::Null) => ChatType::Dm,
        Some(Value::String(s)) => match s.as_str() {
            "dm" => ChatType::Dm,
            "group" => ChatType::Group,
            "channel" => ChatType::Channel,
            other => {
                return Err(format!(
                    "`chat_type` must be dm, group or channel, not {other:?}"
                ));
            }
        },
        Some(_) => return Err("`chat_type` must be a string".into()),
    };
    let user_name = match obj.get("user_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("`user_name` must be a string".into()),
    };
    Ok(InboundMessage {
        source: MessageSource {
            platform: "webhook".into(),
            chat_type,
            chat_id,
            thread_id,
            user_id,
            user_name,
        },
        message_id,
        text,
        reply_to: None,
        reply_to_text: None,
        attachments: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> String {
        match parse_body(body.as_bytes()) {
            Ok(m) => panic!("accepted {body}: {m:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn minimal_body_is_a_dm_with_string_ids() {
        let m = parse_body(br#"{"chat_id": 12, "user_id": "u-7", "text": "hi"}"#).unwrap();
        assert_eq!(m.source.platform, "webhook");
        assert_eq!(m.source.chat_type, ChatType::Dm);
        assert_eq!(m.source.chat_id.as_deref(), Some("12"));
        assert_eq!(m.source.user_id.as_deref(), Some("u-7"));
        assert_eq!(m.source.thread_id, None);
        assert_eq!(m.text, "hi");
    }

    #[test]
    fn errors_name_the_field() {
        assert!(err("[1]").contains("JSON object"));
        assert!(err("{").contains("not valid JSON"));
        assert!(err(r#"{"user_id":1,"text":"x"}"#).contains("`chat_id` is required"));
        assert!(err(r#"{"chat_id":{},"user_id":1,"text":"x"}"#).contains("`chat_id` must be"));
        assert!(err(r#"{"chat_id":1.5,"user_id":1,"text":"x"}"#).contains("`chat_id` must be"));
        assert!(err(r#"{"chat_id":1,"user_id":"  ","text":"x"}"#).contains("`user_id` is empty"));
        assert!(err(r#"{"chat_id":1,"user_id":1}"#).contains("`text` is required"));
        assert!(err(r#"{"chat_id":1,"user_id":1,"text":7}"#).contains("`text` must be a string"));
        assert!(
            err(r#"{"chat_id":1,"user_id":1,"text":"x","chat_type":"room"}"#).contains("chat_type")
        );
        assert!(
            err(r#"{"chat_id":1,"user_id":1,"text":"x","sender":"a"}"#)
                .contains("unknown field `sender`")
        );
    }
}
