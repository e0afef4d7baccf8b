//! The OpenAI Chat Completions wire shapes the server reads and writes
//! (platform API doc: <https://platform.openai.com/docs/api-reference/chat>).
//!
//! Only what the server needs is modelled; unknown request fields are ignored, as OpenAI
//! does for fields it does not know.

use hermes_protocol::{ContentPart, Message, Role, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::error::ApiFailure;

/// The one model this server offers (`GET /v1/models`; echoed in every response).
pub const SERVED_MODEL: &str = "hermes-agent";

/// `POST /v1/chat/completions` body.
#[derive(Debug, Deserialize)]
pub(crate) struct CompletionRequest {
    /// The conversation; the last entry must be a user message.
    pub messages: Vec<WireMessage>,
    /// Ignored: the server always answers as [`SERVED_MODEL`].
    #[serde(default)]
    #[allow(dead_code)]
    pub model: Option<String>,
    /// Server-sent events instead of one JSON body.
    #[serde(default)]
    pub stream: bool,
    /// `{"include_usage": true}` adds a usage chunk before `[DONE]`.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Client-side tools: ignored (hermes runs its own tools on the server).
    #[serde(default)]
    pub tools: Option<Value>,
}

/// `stream_options` of a request.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    /// Whether a final chunk with `usage` (and empty `choices`) is sent.
    #[serde(default)]
    pub include_usage: bool,
}

/// One entry of `messages`.
#[derive(Debug, Deserialize)]
pub(crate) struct WireMessage {
    /// `system`, `developer`, `user` or `assistant`.
    pub role: String,
    /// A string, `null`, or an array of content parts.
    #[serde(default)]
    pub content: Value,
    /// Present on assistant messages that called client-side tools (not accepted).
    #[serde(default)]
    pub tool_calls: Option<Value>,
}

/// A request's conversation, sorted for the agent.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Conversation {
    /// System/developer texts joined by blank lines: the call-time (ephemeral) prompt.
    pub ephemeral: Option<String>,
    /// Earlier user/assistant messages (stateless mode replays them as history).
    pub history: Vec<Message>,
    /// The text of the last user message: the new turn's input.
    pub input: String,
}

impl Conversation {
    /// Sorts `messages` into ephemeral prompt, history and the new input.
    ///
    /// Errors (400, naming the entry as `messages[i]`): an empty list, a role other than
    /// system/developer/user/assistant, an assistant entry with `tool_calls`, content that is
    /// neither text nor text/image parts, a last entry that is not a user message with text,
    /// or images in that last message (the turn input is text).
    pub(crate) fn from_messages(messages: &[WireMessage]) -> Result<Conversation, ApiFailure> {
        let Some(last_index) = messages.len().checked_sub(1) else {
            return Err(ApiFailure::bad_request(
                "`messages` is empty: send at least one user message",
            ));
        };
        let mut system_texts = Vec::new();
        let mut history = Vec::new();
        let mut input = None;
        for (i, m) in messages.iter().enumerate() {
            let at = format!("messages[{i}]");
            let parts = content_parts(&m.content, &at)?;
            match m.role.as_str() {
                "system" | "developer" => {
                    let text = join_text(&parts);
                    if !text.trim().is_empty() {
                        system_texts.push(text);
                    }
                }
                "user" if i == last_index => {
                    if parts.iter().any(|p| !matches!(p, ContentPart::Text { .. })) {
                        return Err(ApiFailure::bad_request(format!(
                            "{at}: only text is accepted in the last user message"
                        )));
                    }
                    let text = join_text(&parts);
                    if text.trim().is_empty() {
                        return Err(ApiFailure::bad_request(format!(
                            "{at}: the last user message has no text"
                        )));
                    }
                    input = Some(text);
                }
                "user" | "assistant" => {
                    if m.tool_calls.as_ref().is_some_and(|v| !v.is_null()) {
                        return Err(ApiFailure::bad_request(format!(
                            "{at}: assistant `tool_calls` are not accepted; hermes runs its \
                             own tools on the server"
                        )));
                    }
                    let role = if m.role == "user" {
                        Role::User
                    } else {
                        Role::Assistant
                    };
                    let mut msg = Message::user("");
                    msg.role = role;
                    msg.content = parts;
                    history.push(msg);
                }
                other => {
                    return Err(ApiFailure::bad_request(format!(
                        "{at}: role `{other}` is not accepted (use system, developer, user or \
                         assistant; hermes runs tools on the server)"
                    )));
                }
            }
        }
        let input = input.ok_or_else(|| {
            ApiFailure::bad_request(format!(
                "messages[{last_index}]: the last message must be the user's (role `user`)"
            ))
        })?;
        Ok(Conversation {
            ephemeral: (!system_texts.is_empty()).then(|| system_texts.join("\n\n")),
            history,
            input,
        })
    }
}

fn join_text(parts: &[ContentPart]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            ContentPart::Image { .. } => None,
        })
        .collect();
    texts.join("\n")
}

/// Reads OpenAI message content: a string, `null`, or `[{"type":"text","text"}|
/// {"type":"image_url","image_url":{"url"}}]`.
fn content_parts(content: &Value, at: &str) -> Result<Vec<ContentPart>, ApiFailure> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![ContentPart::Text { text: s.clone() }]),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(j, item)| {
                let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" => item
                        .get("text")
                        .and_then(Value::as_str)
                        .map(|t| ContentPart::Text {
                            text: t.to_string(),
                        })
                        .ok_or_else(|| {
                            ApiFailure::bad_request(format!(
                                "{at}.content[{j}]: a text part needs a string `text`"
                            ))
                        }),
                    "image_url" => item
                        .pointer("/image_url/url")
                        .and_then(Value::as_str)
                        .map(|u| ContentPart::Image { url: u.to_string() })
                        .ok_or_else(|| {
                            ApiFailure::bad_request(format!(
                                "{at}.content[{j}]: an image part needs `image_url.url`"
                            ))
                        }),
                    other => Err(ApiFailure::bad_request(format!(
                        "{at}.content[{j}]: part type `{other}` is not supported (text, \
                         image_url)"
                    ))),
                }
            })
            .collect(),
        _ => Err(ApiFailure::bad_request(format!(
            "{at}.content must be a string or an array of content parts"
        ))),
    }
}

/// OpenAI `usage` object from a turn's token counts (`prompt_tokens` includes cache reads
/// as OpenAI counts them; `cached_tokens` repeats the cache-read part).
pub(crate) fn usage_json(u: &Usage) -> Value {
    let prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
    })
}

/// The non-streaming answer (`object: chat.completion`).
pub(crate) fn completion_json(
    id: &str,
    created: i64,
    text: &str,
    finish_reason: &str,
    usage: &Usage,
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": SERVED_MODEL,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish_reason,
            "logprobs": null,
        }],
        "usage": usage_json(usage),
    })
}

/// What one streamed chunk carries.
pub(crate) enum ChunkBody<'a> {
    /// The first chunk: `delta: {"role":"assistant","content":""}`.
    Role,
    /// A piece of answer text.
    Content(&'a str),
    /// The last choice chunk: empty delta and a finish reason.
    Finish(&'a str),
    /// `choices: []` and the turn's usage (`stream_options.include_usage`).
    Usage(&'a Usage),
}

/// One `chat.completion.chunk` object.
pub(crate) fn chunk_json(id: &str, created: i64, body: ChunkBody<'_>) -> Value {
    let choice = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}]);
    let (choices, usage) = match body {
        ChunkBody::Role => (
            choice(json!({"role": "assistant", "content": ""}), Value::Null),
            Value::Null,
        ),
        ChunkBody::Content(t) => (choice(json!({"content": t}), Value::Null), Value::Null),
        ChunkBody::Finish(r) => (choice(json!({}), json!(r)), Value::Null),
        ChunkBody::Usage(u) => (json!([]), usage_json(u)),
    };
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": SERVED_MODEL,
        "choices": choices,
        "usage": usage,
    })
}

/// `GET /v1/models` body.
pub(crate) fn models_json(created: i64) -> Value {
    json!({
        "object": "list",
        "data": [{"id": SERVED_MODEL, "object": "model", "created": created, "owned_by": "hermes"}],
    })
}

/// One session row of `GET /api/sessions`.
#[derive(Debug, Serialize)]
pub(crate) struct SessionSummary {
    pub id: String,
    pub source: String,
    pub title: Option<String>,
    pub model: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub message_count: u64,
    pub preview: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(v: Value) -> Vec<WireMessage> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn system_goes_ephemeral_and_earlier_turns_become_history() {
        let c = Conversation::from_messages(&msgs(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        ])))
        .unwrap();
        assert_eq!(
            c.ephemeral.as_deref(),
            Some("Be brief.\n\nAnswer in French.")
        );
        assert_eq!(c.history.len(), 2);
        assert_eq!(c.history[0].role, Role::User);
        assert_eq!(c.history[1].text(), "hello");
        assert_eq!(c.input, "and now?");
    }

    #[test]
    fn bad_conversations_say_which_entry() {
        let cases = [
            (json!([]), "empty"),
            (
                json!([{"role": "assistant", "content": "x"}]),
                "messages[0]",
            ),
            (
                json!([{"role": "tool", "content": "x"}, {"role": "user", "content": "q"}]),
                "messages[0]: role `tool`",
            ),
            (
                json!([{"role": "user", "content": 5}]),
                "messages[0].content",
            ),
            (json!([{"role": "user", "content": "  "}]), "no text"),
            (
                json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}]),
                "only text",
            ),
            (
                json!([{"role": "assistant", "content": null, "tool_calls": [{"id": "c"}]},
                       {"role": "user", "content": "q"}]),
                "tool_calls",
            ),
        ];
        for (input, needle) in cases {
            let e = Conversation::from_messages(&msgs(input.clone())).unwrap_err();
            assert!(e.message.contains(needle), "{input}: {}", e.message);
            assert_eq!(e.status.as_u16(), 400);
        }
    }

    #[test]
    fn chunks_follow_the_openai_shape() {
        let c = chunk_json("chatcmpl-1", 7, ChunkBody::Content("Hi"));
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["choices"][0]["delta"]["content"], "Hi");
        assert!(c["choices"][0]["finish_reason"].is_null());
        let u = Usage {
            input_tokens: 10,
            output_tokens: 3,
            cache_read_tokens: 2,
            ..Usage::default()
        };
        let c = chunk_json("chatcmpl-1", 7, ChunkBody::Usage(&u));
        assert_eq!(c["choices"], json!([]));
        assert_eq!(c["usage"]["prompt_tokens"], 12);
        assert_eq!(c["usage"]["total_tokens"], 15);
    }
}
