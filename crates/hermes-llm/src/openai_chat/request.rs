//! Builds the Chat Completions request body from a [`ChatRequest`].
//!
//! Wire shape (platform.openai.com/docs/api-reference/chat/create): `model`, `messages` (the
//! system prompt first, then the history), `tools` (`type: function`), `stream: true`,
//! `stream_options.include_usage: true`, and `max_tokens` / `temperature` when set.
//! Assistant messages always carry a string `content` (`""` when they only call tools): the
//! llama-cpp-python server rejects `content: null` with HTTP 500 (fixture
//! `llamacpp/fc_error_500_assistant_content_null`).
//!
//! Endpoint-dependent options ([`ChatWireOptions`], see [`super::capabilities`]):
//! - `echo_reasoning`: an assistant message with stored reasoning text carries it as
//!   `reasoning_content`;
//! - `cache` (Claude through OpenRouter, FEATURES §5 `system_and_3`): every text content is
//!   sent as an array of `{"type": "text"}` parts (so a message has the same bytes on every
//!   turn whether or not it carries a marker), and `cache_control` goes on the last part of
//!   the system message and of each of the last 3 messages that have a non-empty part.

use hermes_protocol::{ContentPart, Message, Role};
use serde_json::{Value, json};

use super::capabilities::ChatWireOptions;
use crate::anthropic::CacheTtl;
use crate::client::ChatRequest;

/// The JSON body for `POST {base_url}/chat/completions`. `default_model` is used when the
/// request leaves its model empty; `opts` adds the endpoint's reasoning echo and cache markers.
pub fn build_body(request: &ChatRequest, default_model: &str, opts: &ChatWireOptions) -> Value {
    let model = if request.model.is_empty() {
        default_model
    } else {
        request.model.as_str()
    };
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let parts = opts.cache.is_some();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": text_content(&request.system, parts)}));
    }
    messages.extend(
        request
            .messages
            .iter()
            .map(|m| message_to_wire(m, opts.echo_reasoning, parts)),
    );
    if let Some(ttl) = opts.cache {
        apply_cache_markers(&mut messages, ttl);
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if request.tool_choice == crate::client::ToolChoice::None {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// A text content: a plain string, or (`parts`) an array with one text part (`[]` for empty
/// text, since empty text parts are rejected by Anthropic-backed endpoints).
fn text_content(text: &str, parts: bool) -> Value {
    if !parts {
        Value::String(text.to_string())
    } else if text.is_empty() {
        json!([])
    } else {
        json!([{"type": "text", "text": text}])
    }
}

/// One history message in wire form. `echo_reasoning` adds stored reasoning text as
/// `reasoning_content` to assistant messages; `parts` sends text content as part arrays
/// (module doc).
pub fn message_to_wire(m: &Message, echo_reasoning: bool, parts: bool) -> Value {
    match m.role {
        Role::Assistant => {
            let text = m.text();
            // An assistant message without text keeps `content: ""` (never `[]` or null).
            let content = if text.is_empty() {
                Value::String(String::new())
            } else {
                text_content(&text, parts)
            };
            let mut v = json!({"role": "assistant", "content": content});
            if echo_reasoning && let Some(r) = m.reasoning.as_ref().filter(|r| !r.text.is_empty()) {
                v["reasoning_content"] = Value::String(r.text.clone());
            }
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
                v["tool_calls"] = Value::Array(calls);
            }
            v
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": text_content(&m.text(), parts),
        }),
        Role::User | Role::System => {
            let has_image = m
                .content
                .iter()
                .any(|p| matches!(p, ContentPart::Image { .. }));
            let content = if has_image || parts {
                Value::Array(
                    m.content
                        .iter()
                        .filter_map(|p| match p {
                            ContentPart::Text { text } if text.is_empty() => None,
                            ContentPart::Text { text } => {
                                Some(json!({"type": "text", "text": text}))
                            }
                            ContentPart::Image { url } => {
                                Some(json!({"type": "image_url", "image_url": {"url": url}}))
                            }
                        })
                        .collect(),
                )
            } else {
                Value::String(m.text())
            };
            json!({"role": m.role.as_str(), "content": content})
        }
    }
}

/// `system_and_3`: `cache_control` on the last part of the system message and of each of the
/// last 3 other messages whose content is a non-empty part array.
pub fn apply_cache_markers(messages: &mut [Value], ttl: CacheTtl) {
    let mut placed = 0;
    let mark = |m: &mut Value| -> bool {
        match m
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|parts| parts.last_mut())
        {
            Some(part) => {
                part["cache_control"] = ttl.marker();
                true
            }
            None => false,
        }
    };
    for m in messages.iter_mut().rev() {
        if m.get("role").and_then(Value::as_str) == Some("system") {
            continue;
        }
        if placed < 3 && mark(m) {
            placed += 1;
        }
    }
    if let Some(system) = messages
        .iter_mut()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
    {
        mark(system);
    }
}

/// Rough prompt size in tokens (chars / 4 over system, messages and tool schemas), used only
/// to explain empty responses.
pub fn estimate_prompt_tokens(request: &ChatRequest) -> u64 {
    let mut chars = request.system.chars().count();
    for m in &request.messages {
        chars += m.text().chars().count();
        for c in &m.tool_calls {
            chars += c.name.len() + c.arguments.chars().count();
        }
    }
    for t in &request.tools {
        chars += t.name.len() + t.description.chars().count() + json_len(&t.parameters);
    }
    (chars / 4) as u64
}

/// Length in bytes of `value` written as compact JSON, counted without building the text.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
