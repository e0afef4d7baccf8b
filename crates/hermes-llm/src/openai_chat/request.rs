//! Builds the Chat Completions request body from a [`ChatRequest`].
//!
//! Wire shape (platform.openai.com/docs/api-reference/chat/create): `model`, `messages` (the
//! system prompt first, then the history), `tools` (`type: function`), `stream: true`,
//! `stream_options.include_usage: true`, and `max_tokens` / `temperature` when set.
//! Assistant messages always carry a string `content` (`""` when they only call tools): the
//! llama-cpp-python server rejects `content: null` with HTTP 500 (fixture
//! `llamacpp/fc_error_500_assistant_content_null`).

use hermes_protocol::{ContentPart, Message, Role};
use serde_json::{Value, json};

use crate::client::ChatRequest;

/// The JSON body for `POST {base_url}/chat/completions`. `model` overrides the request's model
/// when the request leaves it empty.
pub fn build_body(request: &ChatRequest, default_model: &str) -> Value {
    let model = if request.model.is_empty() {
        default_model
    } else {
        request.model.as_str()
    };
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    messages.extend(request.messages.iter().map(message_to_wire));
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

/// One history message in wire form.
pub fn message_to_wire(m: &Message) -> Value {
    match m.role {
        Role::Assistant => {
            let mut v = json!({"role": "assistant", "content": m.text()});
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
            "content": m.text(),
        }),
        Role::User | Role::System => {
            let has_image = m
                .content
                .iter()
                .any(|p| matches!(p, ContentPart::Image { .. }));
            let content = if has_image {
                Value::Array(
                    m.content
                        .iter()
                        .map(|p| match p {
                            ContentPart::Text { text } => json!({"type": "text", "text": text}),
                            ContentPart::Image { url } => {
                                json!({"type": "image_url", "image_url": {"url": url}})
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
        chars += t.name.len() + t.description.chars().count() + t.parameters.to_string().len();
    }
    (chars / 4) as u64
}
