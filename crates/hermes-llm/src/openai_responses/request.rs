//! Builds the OpenAI Responses request body (platform.openai.com/docs/api-reference/responses).
//!
//! Shape: `model`, `instructions` (the system prompt), `input` (items), `tools`
//! (`{type: function, name, description, parameters}`), `stream: true`, `store: false`,
//! `include: ["reasoning.encrypted_content"]` (so reasoning can be carried across turns without
//! server-side storage), `max_output_tokens`, `temperature`, `tool_choice: "none"`.
//! History → items: user text → `{role: user, content: [{type: input_text}]}` (images as
//! `input_image`); an assistant turn → its stored `reasoning` items first (replay state, with
//! `encrypted_content`), then `{type: message, role: assistant, content: [{type: output_text}]}`
//! when it has text, then one `{type: function_call, call_id, name, arguments}` per call; a tool
//! result → `{type: function_call_output, call_id, output}`. A composite id `call_x|fc_y`
//! (case C14) sends `call_x` as the call id.

use hermes_protocol::{ContentPart, Message, Role};
use serde_json::{Value, json};

use crate::client::{ChatRequest, ToolChoice};
use crate::replay::ReplayState;

/// The call id the API knows for a stored tool-call id (the part before `|`).
pub fn wire_call_id(id: &str) -> &str {
    id.split('|').next().unwrap_or(id)
}

/// The JSON body for `POST {base_url}/responses`.
pub fn build_body(request: &ChatRequest, default_model: &str) -> Value {
    let model = if request.model.is_empty() {
        default_model
    } else {
        request.model.as_str()
    };
    let mut body = json!({
        "model": model,
        "input": build_input(&request.messages),
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    if !request.system.is_empty() {
        body["instructions"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        body["tools"] = Value::Array(tools);
        if request.tool_choice == ToolChoice::None {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(max) = request.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// Converts the history into Responses input items (rules in the module doc).
pub fn build_input(history: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for m in history {
        match m.role {
            Role::User | Role::System => {
                let content: Vec<Value> = m
                    .content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
                        ContentPart::Image { url } => {
                            json!({"type": "input_image", "image_url": url})
                        }
                    })
                    .collect();
                let role = if m.role == Role::System {
                    "developer"
                } else {
                    "user"
                };
                items.push(json!({"role": role, "content": content}));
            }
            Role::Assistant => {
                if let Some(state) = ReplayState::from_reasoning(m.reasoning.as_ref()) {
                    items.extend(state.responses_items);
                }
                let text = m.text();
                if !text.is_empty() {
                    items.push(json!({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}));
                }
                for c in &m.tool_calls {
                    items.push(
                        json!({"type": "function_call", "call_id": wire_call_id(&c.id),
                        "name": c.name, "arguments": c.arguments}),
                    );
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                items.push(
                    json!({"type": "function_call_output", "call_id": wire_call_id(id),
                    "output": m.text()}),
                );
            }
        }
    }
    items
}
