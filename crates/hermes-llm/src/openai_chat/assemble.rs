//! Assembles Chat Completions chunks (streamed `delta`s or one non-streamed `message`) into an
//! [`AssistantMessage`] (FEATURES §2 decoder rules; cases C01, C03, C04, C08, C13).
//!
//! Rules: text and `reasoning_content`/`reasoning` deltas are concatenated; `refusal` deltas
//! are treated as visible text (so the user sees why) and add a diagnostic; tool calls are keyed
//! by `index`, their `id` and `name` are set once (servers such as llama-cpp-python repeat them
//! in every delta; they are never concatenated) and `arguments` pieces are concatenated
//! verbatim; the last non-null `finish_reason` seen on any chunk wins (sticky, C01); chunks
//! with `choices: []`/`null` carry usage only, but are first checked for `error` /
//! `error_type` / `error_message` (C08); only choice index 0 is used (n > 1 is ignored).
//! Hermes `<tool_call>` markup in text is stripped and reported, never executed (C13).

use hermes_protocol::{AssistantMessage, FinishReason, Reasoning, ToolCall, Usage};
use serde_json::Value;

use crate::client::StreamEvent;
use crate::error::{ErrorClass, LlmError};
use crate::hermes_format::{SERVER_PARSER_DIAGNOSTIC, TagFilter};

/// What the decoder knows about the request, used to explain an empty response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptHint {
    /// Rough prompt size in tokens (chars / 4).
    pub estimated_prompt_tokens: u64,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
}

impl PromptHint {
    /// True when the prompt estimate is at least 75 % of a known context window.
    fn near_window(&self) -> bool {
        match self.context_window {
            Some(w) if w > 0 => {
                self.estimated_prompt_tokens.saturating_mul(4) >= w.saturating_mul(3)
            }
            _ => false,
        }
    }
}

#[derive(Debug, Clone)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// Incremental decoder state for one Chat Completions response.
#[derive(Debug, Default)]
pub struct ChatAssembler {
    text: String,
    reasoning: String,
    filter: TagFilter,
    calls: Vec<PartialCall>,
    finish: Option<FinishReason>,
    usage: Usage,
    saw_chunk: bool,
    saw_done: bool,
    refused: bool,
    diagnostics: Vec<String>,
    hint: PromptHint,
}

impl ChatAssembler {
    /// A fresh assembler; `hint` only shapes the error for an empty response.
    pub fn new(hint: PromptHint) -> ChatAssembler {
        ChatAssembler {
            hint,
            ..ChatAssembler::default()
        }
    }

    /// True once `data: [DONE]` was seen.
    pub fn saw_done(&self) -> bool {
        self.saw_done
    }

    /// Feeds the `data` of one SSE event. `[DONE]` marks the end; empty data is ignored; data
    /// that is not JSON is skipped with a diagnostic. Returns the events to emit now, or the
    /// provider error carried inside the stream.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.saw_done = true;
            return Ok(Vec::new());
        }
        match serde_json::from_str::<Value>(data) {
            Ok(v) => self.push_value(&v),
            Err(e) => {
                let preview: String = data.chars().take(80).collect();
                self.diagnostics.push(format!(
                    "skipped an SSE event whose data is not JSON ({e}): {preview}"
                ));
                Ok(Vec::new())
            }
        }
    }

    /// Feeds one decoded chunk (`chat.completion.chunk`) or a whole `chat.completion` body.
    pub fn push_value(&mut self, v: &Value) -> Result<Vec<StreamEvent>, LlmError> {
        if let Some(err) = LlmError::from_in_stream(v) {
            return Err(err);
        }
        if !v.is_object() {
            self.diagnostics
                .push("skipped a stream chunk that is not a JSON object".to_string());
            return Ok(Vec::new());
        }
        self.saw_chunk = true;
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = map_usage(u);
        }
        let mut events = Vec::new();
        let Some(choices) = v.get("choices").and_then(|c| c.as_array()) else {
            return Ok(events);
        };
        for choice in choices {
            let index = choice.get("index").and_then(|i| i.as_u64()).unwrap_or(0);
            if index != 0 {
                continue;
            }
            if let Some(fr) = choice
                .get("finish_reason")
                .and_then(|f| f.as_str())
                .filter(|f| !f.is_empty())
            {
                self.finish = Some(FinishReason::from_wire(fr));
            }
            let Some(delta) = choice
                .get("delta")
                .filter(|d| d.is_object())
                .or_else(|| choice.get("message").filter(|d| d.is_object()))
            else {
                continue;
            };
            self.push_delta(delta, &mut events);
        }
        Ok(events)
    }

    fn push_delta(&mut self, delta: &Value, events: &mut Vec<StreamEvent>) {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(r) = delta.get(key).and_then(|r| r.as_str()) {
                if !r.is_empty() {
                    self.reasoning.push_str(r);
                    events.push(StreamEvent::ReasoningDelta(r.to_string()));
                }
                break;
            }
        }
        let content = match delta.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
                .collect(),
            _ => String::new(),
        };
        self.push_text(&content, events);
        if let Some(r) = delta
            .get("refusal")
            .and_then(|r| r.as_str())
            .filter(|r| !r.is_empty())
        {
            self.refused = true;
            self.push_text(r, events);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(|c| c.as_array()) {
            for entry in calls {
                self.push_tool_delta(entry, events);
            }
        }
    }

    fn push_text(&mut self, piece: &str, events: &mut Vec<StreamEvent>) {
        if piece.is_empty() {
            return;
        }
        let visible = self.filter.push(piece);
        if !visible.is_empty() {
            self.text.push_str(&visible);
            events.push(StreamEvent::TextDelta(visible));
        }
    }

    fn push_tool_delta(&mut self, entry: &Value, events: &mut Vec<StreamEvent>) {
        let id = entry.get("id").and_then(|i| i.as_str()).unwrap_or("");
        let function = entry.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("");
        let slot = match entry.get("index").and_then(|i| i.as_u64()) {
            Some(index) => match self.calls.iter().rposition(|c| c.index == index) {
                Some(pos)
                    if id.is_empty()
                        || self.calls[pos].id.is_empty()
                        || self.calls[pos].id == id =>
                {
                    pos
                }
                _ => self.new_slot(index),
            },
            None => {
                if let Some(pos) = (!id.is_empty())
                    .then(|| self.calls.iter().position(|c| c.id == id))
                    .flatten()
                {
                    pos
                } else if id.is_empty() && name.is_empty() && !self.calls.is_empty() {
                    self.calls.len() - 1
                } else {
                    let next = self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0);
                    self.new_slot(next)
                }
            }
        };
        let call = &mut self.calls[slot];
        if call.id.is_empty() && !id.is_empty() {
            call.id = id.to_string();
        }
        if call.name.is_empty() && !name.is_empty() {
            call.name = name.to_string();
        }
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => call.arguments.push_str(s),
            Some(v @ Value::Object(_)) if call.arguments.is_empty() => {
                call.arguments = v.to_string();
            }
            _ => {}
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            events.push(StreamEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    fn new_slot(&mut self, index: u64) -> usize {
        self.calls.push(PartialCall {
            index,
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
            announced: false,
        });
        self.calls.len() - 1
    }

    /// Ends the response: flushes held-back text and returns the last events (a final
    /// `TextDelta` if any, then `Completed`).
    ///
    /// Errors (never a silent empty answer):
    /// - no JSON chunk at all (empty 200 body, or only `[DONE]`, case C08 variant B; the
    ///   llama-cpp-python server does this on context overflow and on unsupported streaming
    ///   tool choice): class `context_overflow` when the prompt estimate is ≥ 75 % of a known
    ///   context window, else `format_error` (not retried unchanged; fallback), no status;
    /// - chunks but no text, reasoning, tool call or finish_reason: `format_error`;
    /// - no `finish_reason` and no `[DONE]`: the connection ended early → `timeout`.
    pub fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        let mut events = Vec::new();
        let tail = self.filter.finish();
        if !tail.is_empty() {
            self.text.push_str(&tail);
            events.push(StreamEvent::TextDelta(tail));
        }
        let has_content =
            !self.text.is_empty() || !self.reasoning.is_empty() || !self.calls.is_empty();
        if !self.saw_chunk {
            return Err(self.empty_error());
        }
        if !has_content && self.finish.is_none() && !self.filter.saw_markup() {
            return Err(LlmError::new(
                ErrorClass::FormatError,
                None,
                "the provider's stream contained chunks but no text, tool call or finish_reason",
            ));
        }
        if self.finish.is_none() && !self.saw_done {
            return Err(LlmError::new(
                ErrorClass::Timeout,
                None,
                "stream ended before the response was complete (no finish_reason and no [DONE]); \
                 the connection was probably dropped",
            ));
        }
        let mut diagnostics = std::mem::take(&mut self.diagnostics);
        if self.filter.saw_markup() {
            diagnostics.push(SERVER_PARSER_DIAGNOSTIC.to_string());
        }
        if self.refused {
            diagnostics.push(
                "the model refused the request (refusal text shown as the answer)".to_string(),
            );
        }
        let ids = unique_call_ids(self.calls.iter().map(|c| c.id.as_str()));
        let tool_calls = self
            .calls
            .iter()
            .zip(ids)
            .map(|(c, id)| ToolCall::new(id, c.name.clone(), c.arguments.clone()))
            .collect();
        let message = AssistantMessage {
            text: std::mem::take(&mut self.text),
            reasoning: (!self.reasoning.is_empty()).then(|| Reasoning {
                text: std::mem::take(&mut self.reasoning),
                signature: None,
            }),
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish.clone(),
            diagnostics,
        };
        events.push(StreamEvent::Completed(message));
        Ok(events)
    }

    fn empty_error(&self) -> LlmError {
        let what = if self.saw_done {
            "the provider returned HTTP 200 with an empty stream (only [DONE], no chunks)"
        } else {
            "the provider returned HTTP 200 with an empty body (no chunks, no [DONE])"
        };
        if self.hint.near_window() {
            LlmError::new(
                ErrorClass::ContextOverflow,
                None,
                format!(
                    "{what}; the prompt (~{} tokens) is near the context window ({} tokens), so \
                     it most likely did not fit",
                    self.hint.estimated_prompt_tokens,
                    self.hint.context_window.unwrap_or(0)
                ),
            )
        } else {
            LlmError::new(
                ErrorClass::FormatError,
                None,
                format!(
                    "{what}; the server failed after sending headers (local servers do this when \
                     the prompt exceeds the context window or a streamed tool choice is \
                     unsupported); check the server log"
                ),
            )
        }
    }
}

/// Maps an OpenAI `usage` object: prompt_tokens → input, completion_tokens → output,
/// prompt_tokens_details.cached_tokens (or DeepSeek prompt_cache_hit_tokens) → cache_read,
/// completion_tokens_details.reasoning_tokens → reasoning.
pub fn map_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(|x| x.as_u64()).unwrap_or(0);
    let cached = u
        .get("prompt_tokens_details")
        .and_then(|d| d.get("cached_tokens"))
        .or_else(|| u.get("prompt_cache_hit_tokens"));
    Usage {
        input_tokens: n(u.get("prompt_tokens")),
        output_tokens: n(u.get("completion_tokens")),
        cache_read_tokens: n(cached),
        cache_write_tokens: 0,
        reasoning_tokens: n(u
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens"))),
    }
}

/// Decodes a whole non-streamed `chat.completion` JSON body into the events a stream would have
/// produced (ending with `Completed`). An error object in the body becomes an [`LlmError`].
pub fn decode_completion_body(body: &str, hint: PromptHint) -> Result<Vec<StreamEvent>, LlmError> {
    let mut asm = ChatAssembler::new(hint);
    if body.trim().is_empty() {
        return asm.finish();
    }
    let value: Value = serde_json::from_str(body).map_err(|e| {
        LlmError::new(
            ErrorClass::FormatError,
            None,
            format!("the provider's JSON response could not be parsed: {e}"),
        )
    })?;
    let mut events = asm.push_value(&value)?;
    events.extend(asm.finish()?);
    Ok(events)
}

/// The ids of one answer's tool calls, each unique: a missing id becomes `call_N` (N its
/// position), and an id already used in the answer gets a `_K` suffix, since every call's
/// result must name its own call (a model that repeats an id would otherwise make the next
/// request invalid and two calls indistinguishable to a front end).
fn unique_call_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<String> {
    let ids: Vec<&str> = ids.collect();
    let mut taken: std::collections::HashSet<String> = ids
        .iter()
        .filter(|i| !i.is_empty())
        .map(|i| i.to_string())
        .collect();
    let mut seen = std::collections::HashSet::new();
    ids.iter()
        .enumerate()
        .map(|(n, id)| {
            if !id.is_empty() && seen.insert(*id) {
                return id.to_string();
            }
            let base = if id.is_empty() {
                format!("call_{n}")
            } else {
                id.to_string()
            };
            let mut fresh = base.clone();
            let mut k = 1;
            while taken.contains(&fresh) {
                fresh = format!("{base}_{k}");
                k += 1;
            }
            taken.insert(fresh.clone());
            fresh
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unique_call_ids;

    #[test]
    fn call_ids_are_made_unique() {
        let ids = unique_call_ids(["dup", "dup", "", "call_2", "dup"].into_iter());
        assert_eq!(ids, vec!["dup", "dup_1", "call_2_1", "call_2", "dup_2"]);
        assert_eq!(unique_call_ids(["a", "b"].into_iter()), vec!["a", "b"]);
        assert_eq!(
            unique_call_ids(["", ""].into_iter()),
            vec!["call_0", "call_1"]
        );
    }
}
