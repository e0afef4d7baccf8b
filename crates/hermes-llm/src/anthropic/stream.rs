//! Decodes Anthropic Messages responses (streamed SSE events or one JSON `message`) into an
//! [`AssistantMessage`] (docs.anthropic.com "Streaming Messages"; cases C05, C11).
//!
//! Rules: content blocks are keyed by `index`; `text_delta` appends text, `thinking_delta` and
//! `signature_delta` fill a thinking block, `input_json_delta` pieces are concatenated per block
//! and parsed once at the end — an empty concatenation means `{}`, and the placeholder `input`
//! of `content_block_start` is never prepended (C05); `redacted_thinking` and unknown blocks are
//! kept verbatim for replay. `message_start` and `message_delta` carry usage (the later value
//! of each field wins); `stop_reason` comes from `message_delta`; `ping` is ignored; an `error`
//! event (e.g. `overloaded_error` inside a 200 stream) ends the stream with its class. The
//! ordered blocks are stored in the reasoning's replay state so the turn can be replayed
//! exactly (C11). A stream that ends without `message_stop` and without a `stop_reason` was cut:
//! class `timeout`.
//!
//! Usage is normalized to the OpenAI convention used everywhere in hermes: `input_tokens` is
//! the whole prompt (`input_tokens + cache_read_input_tokens + cache_creation_input_tokens`),
//! with `cache_read_tokens`/`cache_write_tokens` as the cached parts.

use std::collections::BTreeMap;

use hermes_protocol::{AssistantMessage, FinishReason, ToolCall, Usage};
use serde_json::{Map, Value, json};

use crate::client::StreamEvent;
use crate::error::{ErrorClass, LlmError, classify};
use crate::replay::{ReplayState, reasoning_with_state};
use crate::sse::{NamedEventDecoder, parse_data};

#[derive(Debug, Clone)]
enum Block {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Verbatim(Value),
}

/// Raw usage counters as Anthropic reports them.
#[derive(Debug, Clone, Copy, Default)]
struct RawUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl RawUsage {
    fn update(&mut self, u: &Value) {
        let get = |k: &str| u.get(k).and_then(Value::as_u64);
        if let Some(v) = get("input_tokens") {
            self.input = v;
        }
        if let Some(v) = get("output_tokens") {
            self.output = v;
        }
        if let Some(v) = get("cache_read_input_tokens") {
            self.cache_read = v;
        }
        if let Some(v) = get("cache_creation_input_tokens") {
            self.cache_write = v;
        }
    }

    fn normalized(&self) -> Usage {
        Usage {
            input_tokens: self.input + self.cache_read + self.cache_write,
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            reasoning_tokens: 0,
        }
    }
}

/// Incremental decoder for one Anthropic response.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    blocks: BTreeMap<u64, Block>,
    usage: RawUsage,
    stop_reason: Option<String>,
    saw_start: bool,
    saw_stop: bool,
    diagnostics: Vec<String>,
}

impl AnthropicDecoder {
    /// A fresh decoder.
    pub fn new() -> AnthropicDecoder {
        AnthropicDecoder::default()
    }

    /// Feeds one decoded event payload (its `type` decides; the SSE event name is not needed).
    pub fn push_value(&mut self, v: &Value) -> Result<Vec<StreamEvent>, LlmError> {
        let mut events = Vec::new();
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                self.saw_start = true;
                if let Some(u) = v.pointer("/message/usage") {
                    self.usage.update(u);
                }
            }
            "content_block_start" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let cb = v.get("content_block").cloned().unwrap_or(Value::Null);
                let block = match cb.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => {
                        let t = str_of(&cb, "text");
                        if !t.is_empty() {
                            events.push(StreamEvent::TextDelta(t.clone()));
                        }
                        Block::Text(t)
                    }
                    "thinking" => Block::Thinking {
                        thinking: str_of(&cb, "thinking"),
                        signature: str_of(&cb, "signature"),
                    },
                    "tool_use" => {
                        let (id, name) = (str_of(&cb, "id"), str_of(&cb, "name"));
                        events.push(StreamEvent::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Block::ToolUse {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    _ => Block::Verbatim(cb),
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                self.push_delta(index, &delta, &mut events);
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = v.get("usage") {
                    self.usage.update(u);
                }
            }
            "message_stop" => self.saw_stop = true,
            "error" => return Err(error_from_payload(v)),
            // ping, content_block_stop and future event types carry nothing we need.
            _ => {}
        }
        Ok(events)
    }

    fn push_delta(&mut self, index: u64, delta: &Value, events: &mut Vec<StreamEvent>) {
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or("");
        let block = self.blocks.entry(index).or_insert_with(|| match kind {
            "thinking_delta" | "signature_delta" => Block::Thinking {
                thinking: String::new(),
                signature: String::new(),
            },
            "input_json_delta" => Block::ToolUse {
                id: String::new(),
                name: String::new(),
                json: String::new(),
            },
            _ => Block::Text(String::new()),
        });
        match (kind, block) {
            ("text_delta", Block::Text(t)) => {
                let piece = str_of(delta, "text");
                if !piece.is_empty() {
                    t.push_str(&piece);
                    events.push(StreamEvent::TextDelta(piece));
                }
            }
            ("thinking_delta", Block::Thinking { thinking, .. }) => {
                let piece = str_of(delta, "thinking");
                if !piece.is_empty() {
                    thinking.push_str(&piece);
                    events.push(StreamEvent::ReasoningDelta(piece));
                }
            }
            ("signature_delta", Block::Thinking { signature, .. }) => {
                signature.push_str(&str_of(delta, "signature"));
            }
            ("input_json_delta", Block::ToolUse { json, .. }) => {
                json.push_str(&str_of(delta, "partial_json"));
            }
            (other, _) => self.diagnostics.push(format!(
                "ignored a `{other}` delta for content block {index}"
            )),
        }
    }

    /// Ends the response: the `Completed` message, or an error when nothing usable arrived.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if !self.saw_start && self.blocks.is_empty() {
            return Err(LlmError::new(
                ErrorClass::FormatError,
                None,
                "the provider returned HTTP 200 with no Anthropic message events",
            ));
        }
        if !self.saw_stop && self.stop_reason.is_none() {
            return Err(LlmError::new(
                ErrorClass::Timeout,
                None,
                "stream ended before message_stop and without a stop_reason; the connection was \
                 probably dropped",
            ));
        }
        let mut text = String::new();
        let mut thinking_text = String::new();
        let mut calls = Vec::new();
        let mut stored = Vec::new();
        for block in std::mem::take(&mut self.blocks).into_values() {
            match block {
                Block::Text(t) => {
                    text.push_str(&t);
                    stored.push(json!({"type": "text", "text": t}));
                }
                Block::Thinking {
                    thinking,
                    signature,
                } => {
                    if !thinking_text.is_empty() && !thinking.is_empty() {
                        thinking_text.push('\n');
                    }
                    thinking_text.push_str(&thinking);
                    stored.push(
                        json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                    );
                }
                Block::ToolUse { id, name, json } => {
                    let input = if json.trim().is_empty() {
                        Value::Object(Map::new())
                    } else {
                        serde_json::from_str::<Value>(&json).unwrap_or_else(|_| {
                            self.diagnostics.push(format!(
                                "tool call {id} ({name}) has incomplete JSON arguments"
                            ));
                            Value::Object(Map::new())
                        })
                    };
                    stored
                        .push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                    calls.push(ToolCall::new(id, name, json));
                }
                Block::Verbatim(v) => stored.push(v),
            }
        }
        let has_signed_state = stored.iter().any(|b| {
            matches!(
                b.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        });
        let state = ReplayState {
            anthropic_blocks: if has_signed_state { stored } else { Vec::new() },
            responses_items: Vec::new(),
        };
        let finish_reason = self.stop_reason.as_deref().map(map_stop_reason);
        let mut diagnostics = std::mem::take(&mut self.diagnostics);
        if finish_reason == Some(FinishReason::ContentFilter) {
            diagnostics.push("the model refused the request (stop_reason refusal)".to_string());
        }
        Ok(vec![StreamEvent::Completed(AssistantMessage {
            text,
            reasoning: reasoning_with_state(thinking_text, &state),
            tool_calls: calls,
            usage: self.usage.normalized(),
            finish_reason,
            diagnostics,
        })])
    }
}

impl NamedEventDecoder for AnthropicDecoder {
    fn push_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        match parse_data(data) {
            Ok(Some(v)) => {
                if event == "error" && v.get("type").and_then(Value::as_str) != Some("error") {
                    return Err(error_from_payload(&json!({"error": v})));
                }
                self.push_value(&v)
            }
            Ok(None) => Ok(Vec::new()),
            Err(diag) => {
                if event == "error" {
                    return Err(LlmError::new(
                        classify(Some(500), data),
                        Some(500),
                        format!("provider error event inside a 200 stream: {data}"),
                    ));
                }
                self.diagnostics.push(diag);
                Ok(Vec::new())
            }
        }
    }

    fn done(&self) -> bool {
        self.saw_stop
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        AnthropicDecoder::finish(self)
    }
}

/// Maps Anthropic's `stop_reason`: end_turn/stop_sequence/pause_turn → stop, max_tokens →
/// length, tool_use → tool_calls, refusal → content_filter, others kept verbatim.
pub fn map_stop_reason(s: &str) -> FinishReason {
    match s {
        "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// The HTTP status Anthropic uses for each `error.type` (docs "Errors").
pub fn status_for_error_type(kind: &str) -> Option<u16> {
    Some(match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// The error for an `{"type":"error","error":{"type","message"}}` payload inside a 200 stream:
/// the status implied by `error.type`, classified from it and the message.
pub fn error_from_payload(v: &Value) -> LlmError {
    let kind = v
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    let status = status_for_error_type(kind).unwrap_or(400);
    LlmError::new(
        classify(Some(status), &format!("{message} {kind}")),
        Some(status),
        format!("provider error inside a 200 stream ({kind}): {message}"),
    )
}

/// Decodes a whole non-streamed `message` body into the events a stream would have produced.
pub fn decode_message_body(body: &str) -> Result<Vec<StreamEvent>, LlmError> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        LlmError::new(
            ErrorClass::FormatError,
            None,
            format!("the provider's JSON response could not be parsed: {e}"),
        )
    })?;
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error_from_payload(&v));
    }
    let mut dec = AnthropicDecoder::new();
    let mut events = dec.push_value(&json!({"type": "message_start", "message": v}))?;
    if let Some(content) = v.get("content").and_then(Value::as_array) {
        for (i, block) in content.iter().enumerate() {
            let mut start = block.clone();
            if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                start["input"] = json!({});
            }
            events.extend(dec.push_value(
                &json!({"type": "content_block_start", "index": i, "content_block": start}),
            )?);
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let input = block.get("input").cloned().unwrap_or(json!({}));
                    let text = if input.as_object().is_some_and(Map::is_empty) {
                        String::new()
                    } else {
                        input.to_string()
                    };
                    dec.push_delta(
                        i as u64,
                        &json!({"type": "input_json_delta", "partial_json": text}),
                        &mut events,
                    );
                }
                Some("thinking") => {
                    if let Some(Block::Thinking { thinking, .. }) = dec.blocks.get(&(i as u64))
                        && !thinking.is_empty()
                    {
                        events.push(StreamEvent::ReasoningDelta(thinking.clone()));
                    }
                }
                _ => {}
            }
        }
    }
    let stop = v.get("stop_reason").cloned().unwrap_or(Value::Null);
    events
        .extend(dec.push_value(&json!({"type": "message_delta", "delta": {"stop_reason": stop}}))?);
    events.extend(dec.push_value(&json!({"type": "message_stop"}))?);
    events.extend(dec.finish()?);
    Ok(events)
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
