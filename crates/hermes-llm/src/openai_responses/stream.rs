//! Decodes OpenAI Responses streams (`response.*` SSE events) and whole response bodies into an
//! [`AssistantMessage`].
//!
//! Items are keyed by `output_index` (item ids are not stable on every server: GitHub Copilot
//! rotates them between events). `response.output_text.delta` appends text,
//! `response.reasoning_summary_text.delta` (and `response.reasoning_text.delta`) append
//! reasoning, `response.function_call_arguments.delta` appends arguments;
//! `response.output_item.done` replaces the accumulated item with the final one. Terminal
//! events: `response.completed` and `response.incomplete` (usage, status; `incomplete_details.
//! reason = max_output_tokens` → length), `response.failed` and `error` (classified from the
//! error's own code/message, e.g. `insufficient_quota` → billing). Reasoning items are kept in
//! the replay state with their `encrypted_content` so the next request can carry them.

use std::collections::BTreeMap;

use hermes_protocol::{AssistantMessage, FinishReason, ToolCall, Usage};
use serde_json::{Value, json};

use crate::client::StreamEvent;
use crate::error::{ErrorClass, LlmError};
use crate::replay::{ReplayState, reasoning_with_state};
use crate::sse::{NamedEventDecoder, parse_data};

#[derive(Debug, Default)]
struct Item {
    value: Value,
    text: String,
    reasoning: String,
    arguments: String,
    announced: bool,
}

/// Incremental decoder for one Responses stream.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    items: BTreeMap<u64, Item>,
    usage: Usage,
    finish: Option<FinishReason>,
    done: bool,
    saw_event: bool,
    diagnostics: Vec<String>,
}

impl ResponsesDecoder {
    /// A fresh decoder.
    pub fn new() -> ResponsesDecoder {
        ResponsesDecoder::default()
    }

    /// Feeds one event payload (its `type` decides).
    pub fn push_value(&mut self, v: &Value) -> Result<Vec<StreamEvent>, LlmError> {
        self.saw_event = true;
        let mut events = Vec::new();
        let idx = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let delta = || {
            v.get("delta")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "response.output_item.added" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                let entry = self.items.entry(idx).or_default();
                entry.value = item;
                self.announce(idx, &mut events);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let d = delta();
                if !d.is_empty() {
                    self.items.entry(idx).or_default().text.push_str(&d);
                    events.push(StreamEvent::TextDelta(d));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let d = delta();
                if !d.is_empty() {
                    self.items.entry(idx).or_default().reasoning.push_str(&d);
                    events.push(StreamEvent::ReasoningDelta(d));
                }
            }
            "response.reasoning_summary_part.added" => {
                let item = self.items.entry(idx).or_default();
                if !item.reasoning.is_empty() {
                    item.reasoning.push_str("\n\n");
                }
            }
            "response.function_call_arguments.delta" => {
                self.items
                    .entry(idx)
                    .or_default()
                    .arguments
                    .push_str(&delta());
            }
            "response.output_item.done" => {
                if let Some(item) = v.get("item") {
                    self.items.entry(idx).or_default().value = item.clone();
                    self.announce(idx, &mut events);
                }
            }
            "response.completed" | "response.incomplete" => {
                self.done = true;
                let resp = v.get("response").cloned().unwrap_or(Value::Null);
                if let Some(u) = resp.get("usage") {
                    self.usage = map_usage(u);
                }
                let reason = resp
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str);
                self.finish = Some(match reason {
                    Some("max_output_tokens") => FinishReason::Length,
                    Some("content_filter") => FinishReason::ContentFilter,
                    Some(other) => FinishReason::Other(other.to_string()),
                    None => FinishReason::Stop,
                });
            }
            "response.failed" => {
                let err = v.pointer("/response/error").cloned().unwrap_or(Value::Null);
                return Err(error_from(&err));
            }
            "error" => {
                let err = v.get("error").cloned().unwrap_or_else(|| v.clone());
                return Err(error_from(&err));
            }
            _ => {}
        }
        Ok(events)
    }

    fn announce(&mut self, idx: u64, events: &mut Vec<StreamEvent>) {
        let Some(item) = self.items.get_mut(&idx) else {
            return;
        };
        if item.announced || item.value.get("type").and_then(Value::as_str) != Some("function_call")
        {
            return;
        }
        item.announced = true;
        events.push(StreamEvent::ToolCallStarted {
            id: str_of(&item.value, "call_id"),
            name: str_of(&item.value, "name"),
        });
    }

    /// Ends the response: `Completed`, or an error when no terminal event arrived.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if !self.saw_event {
            return Err(LlmError::new(
                ErrorClass::FormatError,
                None,
                "the provider returned HTTP 200 with no Responses events",
            ));
        }
        if !self.done {
            return Err(LlmError::new(
                ErrorClass::Timeout,
                None,
                "stream ended before response.completed; the connection was probably dropped",
            ));
        }
        let mut text = String::new();
        let mut reasoning = String::new();
        let mut calls = Vec::new();
        let mut state = ReplayState::default();
        for item in std::mem::take(&mut self.items).into_values() {
            match item.value.get("type").and_then(Value::as_str).unwrap_or("") {
                "message" => {
                    let done_text: String = item
                        .value
                        .get("content")
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .filter_map(|p| {
                                    p.get("text")
                                        .or_else(|| p.get("refusal"))
                                        .and_then(Value::as_str)
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    text.push_str(if done_text.is_empty() {
                        &item.text
                    } else {
                        &done_text
                    });
                }
                "reasoning" => {
                    let summary: Vec<&str> = item
                        .value
                        .get("summary")
                        .and_then(Value::as_array)
                        .map(|s| {
                            s.iter()
                                .filter_map(|p| p.get("text").and_then(Value::as_str))
                                .collect()
                        })
                        .unwrap_or_default();
                    let r = if summary.is_empty() {
                        item.reasoning.clone()
                    } else {
                        summary.join("\n\n")
                    };
                    if !reasoning.is_empty() && !r.is_empty() {
                        reasoning.push_str("\n\n");
                    }
                    reasoning.push_str(&r);
                    let mut keep = json!({"type": "reasoning",
                        "summary": item.value.get("summary").cloned().unwrap_or(json!([]))});
                    if let Some(id) = item.value.get("id").filter(|v| v.is_string()) {
                        keep["id"] = id.clone();
                    }
                    if let Some(enc) = item
                        .value
                        .get("encrypted_content")
                        .filter(|v| v.is_string())
                    {
                        keep["encrypted_content"] = enc.clone();
                        state.responses_items.push(keep);
                    }
                }
                "function_call" => {
                    let args = match item.value.get("arguments").and_then(Value::as_str) {
                        Some(a) if !a.is_empty() => a.to_string(),
                        _ => item.arguments.clone(),
                    };
                    calls.push(ToolCall::new(
                        str_of(&item.value, "call_id"),
                        str_of(&item.value, "name"),
                        args,
                    ));
                }
                other => self
                    .diagnostics
                    .push(format!("ignored a Responses output item of type `{other}`")),
            }
        }
        let mut finish = self.finish.clone();
        if !calls.is_empty() && finish == Some(FinishReason::Stop) {
            finish = Some(FinishReason::ToolCalls);
        }
        Ok(vec![StreamEvent::Completed(AssistantMessage {
            text,
            reasoning: reasoning_with_state(reasoning, &state),
            tool_calls: calls,
            usage: self.usage,
            finish_reason: finish,
            diagnostics: std::mem::take(&mut self.diagnostics),
        })])
    }
}

impl NamedEventDecoder for ResponsesDecoder {
    fn push_event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        match parse_data(data) {
            Ok(Some(v)) => self.push_value(&v),
            Ok(None) => Ok(Vec::new()),
            Err(diag) => {
                self.diagnostics.push(diag);
                Ok(Vec::new())
            }
        }
    }

    fn done(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        ResponsesDecoder::finish(self)
    }
}

/// Maps Responses usage: input_tokens, output_tokens, input_tokens_details.cached_tokens,
/// output_tokens_details.reasoning_tokens.
pub fn map_usage(u: &Value) -> Usage {
    let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("/input_tokens"),
        output_tokens: n("/output_tokens"),
        cache_read_tokens: n("/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
    }
}

fn error_from(err: &Value) -> LlmError {
    LlmError::from_in_stream(&json!({"error": err})).unwrap_or_else(|| {
        LlmError::new(
            ErrorClass::Unknown,
            None,
            "the response failed without an error object",
        )
    })
}

/// Decodes a whole non-streamed response body.
pub fn decode_response_body(body: &str) -> Result<Vec<StreamEvent>, LlmError> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        LlmError::new(
            ErrorClass::FormatError,
            None,
            format!("the provider's JSON response could not be parsed: {e}"),
        )
    })?;
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return Err(error_from(&v["error"]));
    }
    let mut dec = ResponsesDecoder::new();
    let mut events = Vec::new();
    if let Some(output) = v.get("output").and_then(Value::as_array) {
        for (i, item) in output.iter().enumerate() {
            events.extend(dec.push_value(
                &json!({"type": "response.output_item.done", "output_index": i, "item": item}),
            )?);
        }
    }
    let kind = if v.get("status").and_then(Value::as_str) == Some("incomplete") {
        "response.incomplete"
    } else {
        "response.completed"
    };
    dec.push_value(&json!({"type": kind, "response": v}))?;
    let done = dec.finish()?;
    for e in &done {
        if let StreamEvent::Completed(m) = e
            && !m.text.is_empty()
        {
            events.push(StreamEvent::TextDelta(m.text.clone()));
        }
    }
    events.extend(done);
    Ok(events)
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
