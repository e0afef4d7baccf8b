//! Message text on the model-call span, only with content capture on
//! (`observability.capture_content`, [`hermes_telemetry::trace::enable_content_capture`]):
//! OpenTelemetry's `gen_ai.system_instructions`, `gen_ai.input.messages` and
//! `gen_ai.output.messages`, each redacted and at most
//! [`hermes_telemetry::trace::MAX_CONTENT_BYTES`]. With capture off nothing is built.

use hermes_llm::ChatRequest;
use hermes_protocol::AssistantMessage;
use hermes_telemetry::trace::{MAX_CONTENT_BYTES, captured, capturing_content};
use serde_json::{Value, json};

/// The request's system prompt and messages (role and text of each; the newest that fit).
pub(crate) fn record_request(span: &tracing::Span, request: &ChatRequest) {
    if !capturing_content() {
        return;
    }
    if let Some(text) = captured(&request.system) {
        span.record("gen_ai.system_instructions", text);
    }
    // The newest messages that fit: a cut JSON array would not parse. Each text is
    // redacted first (markers change its length), and the newest message alone, when too
    // long, keeps the start of its text that fits.
    let mut kept: Vec<Value> = Vec::new();
    let mut bytes = 2;
    for m in request.messages.iter().rev() {
        let text = captured(&m.text()).unwrap_or_default();
        let mut item = json!({"role": m.role.as_str(), "content": text});
        let mut len = item.to_string().len() + 1;
        if bytes + len > MAX_CONTENT_BYTES {
            if !kept.is_empty() {
                break;
            }
            let mut text = text;
            while bytes + len > MAX_CONTENT_BYTES && !text.is_empty() {
                let mut end = text
                    .len()
                    .saturating_sub(bytes + len - MAX_CONTENT_BYTES + 3);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                item = json!({"role": m.role.as_str(), "content": format!("{text}…")});
                len = item.to_string().len() + 1;
            }
        }
        bytes += len;
        kept.push(item);
    }
    kept.reverse();
    // Every text in it is redacted and the whole fits: recorded as it is.
    span.record("gen_ai.input.messages", Value::Array(kept).to_string());
}

/// The reply: its text and tool calls (names and arguments).
pub(crate) fn record_reply(span: &tracing::Span, reply: &AssistantMessage) {
    if !capturing_content() {
        return;
    }
    let calls: Vec<Value> = reply
        .tool_calls
        .iter()
        .map(|c| json!({"name": c.name, "arguments": c.arguments}))
        .collect();
    let output = json!([{"role": "assistant", "content": reply.text, "tool_calls": calls}]);
    if let Some(text) = captured(&output.to_string()) {
        span.record("gen_ai.output.messages", text);
    }
}
