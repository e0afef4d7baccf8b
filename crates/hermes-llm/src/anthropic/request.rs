//! Builds the Anthropic Messages request body (docs.anthropic.com, "Messages" and "Prompt
//! caching"; FEATURES §2 and §5).
//!
//! Shape: `model`, `max_tokens` (always sent; required by the API), `system` as one text block,
//! `messages` alternating user/assistant, `tools` (`name`, `description`, `input_schema`),
//! `stream: true`, optional `temperature`, `tool_choice {type: none}` and `thinking`.
//! History rules:
//! - tool results become `tool_result` blocks in a user message; consecutive results (and a
//!   user text that follows them) share one user message, results first;
//! - an assistant turn that carries stored Anthropic blocks ([`ReplayState`]) whose `tool_use`
//!   ids match its tool calls is replayed block for block in the original order, signatures
//!   included (case C11); otherwise it is rebuilt from its text and tool calls (reasoning from
//!   another provider is not sent: it has no Anthropic signature);
//! - a `tool_use` input is the stored argument text parsed as a JSON object; empty, invalid or
//!   non-object text becomes `{}` (case C05 `replay_arguments`);
//! - pairing is enforced: every `tool_use` gets a `tool_result` in the next user message (a
//!   placeholder when none was recorded) and results without a matching `tool_use` become
//!   plain text, so the request is always valid;
//! - empty text blocks are never sent (the API rejects them).
//!
//! Prompt caching `system_and_3` (FEATURES §5): when enabled, `cache_control` goes on the system
//! block and on the last cacheable block (not thinking) of each of the last 3 messages, with
//! `ttl: "1h"` when asked for. Markers are added after the body is built, so the bytes of every
//! message apart from its marker are the same on every turn.

use hermes_protocol::{ContentPart, Message, Role};
use serde_json::{Map, Value, json};

use crate::client::{ChatRequest, ToolChoice};
use crate::replay::ReplayState;

const EMPTY_MESSAGE: &str = include_str!("prompts/empty_message.md");
const MISSING_TOOL_RESULT: &str = include_str!("prompts/missing_tool_result.md");

/// Prompt-cache lifetime for `cache_control` markers (`prompt_caching.cache_ttl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    /// `{"type": "ephemeral"}`: 5 minutes (the API default).
    #[default]
    FiveMinutes,
    /// `{"type": "ephemeral", "ttl": "1h"}`.
    OneHour,
}

impl CacheTtl {
    /// Parses `5m` / `1h` (case-insensitive); anything else is `None`.
    pub fn parse(s: &str) -> Option<CacheTtl> {
        match s.trim().to_ascii_lowercase().as_str() {
            "5m" => Some(CacheTtl::FiveMinutes),
            "1h" => Some(CacheTtl::OneHour),
            _ => None,
        }
    }

    /// The `cache_control` object.
    pub fn marker(self) -> Value {
        match self {
            CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
            CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
        }
    }
}

/// Options of the body builder that come from configuration, not from the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BodyOptions {
    /// `max_tokens` when the request sets none (tokens).
    pub default_max_tokens: u32,
    /// `system_and_3` prompt caching with this TTL; `None` = no markers.
    pub cache: Option<CacheTtl>,
    /// Extended thinking budget in tokens (`thinking: {type: enabled, budget_tokens}`);
    /// `max_tokens` is raised above it when needed (the API requires budget < max_tokens).
    pub thinking_budget: Option<u32>,
}

/// The default output cap for a Claude model, in tokens: 4096 for Claude 3 (Haiku/Opus/Sonnet
/// 3.0), 8192 for 3.5, 16384 for newer models (all accept at least that much).
pub fn default_max_tokens(model: &str) -> u32 {
    let m = model.to_ascii_lowercase();
    if m.contains("claude-3-5") || m.contains("claude-3.5") {
        8192
    } else if m.contains("claude-3-") || m.contains("claude-3.") {
        4096
    } else {
        16384
    }
}

/// The JSON body for `POST {base}/v1/messages`. `default_model` is used when the request
/// leaves `model` empty.
pub fn build_body(request: &ChatRequest, default_model: &str, opts: &BodyOptions) -> Value {
    let model = if request.model.is_empty() {
        default_model
    } else {
        request.model.as_str()
    };
    let mut max_tokens = request
        .max_tokens
        .unwrap_or(if opts.default_max_tokens > 0 {
            opts.default_max_tokens
        } else {
            default_max_tokens(model)
        });
    let mut messages = build_messages(&request.messages);
    if let Some(ttl) = opts.cache {
        apply_cache_markers(&mut messages, ttl);
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
    });
    if !request.system.is_empty() {
        let mut block = json!({"type": "text", "text": request.system});
        if let Some(ttl) = opts.cache {
            block["cache_control"] = ttl.marker();
        }
        body["system"] = json!([block]);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body["tools"] = Value::Array(tools);
        if request.tool_choice == ToolChoice::None {
            body["tool_choice"] = json!({"type": "none"});
        }
    }
    if let Some(budget) = opts.thinking_budget.filter(|b| *b > 0) {
        if max_tokens <= budget {
            max_tokens = budget.saturating_add(4096);
        }
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    } else if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body["max_tokens"] = json!(max_tokens);
    body
}

/// Converts the history into alternating Anthropic messages (rules in the module doc).
pub fn build_messages(history: &[Message]) -> Vec<Value> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    // tool_use ids of the previous assistant message still waiting for a result.
    let mut open_calls: Vec<String> = Vec::new();
    for m in history {
        match m.role {
            Role::Assistant => {
                close_open_calls(&mut out, &mut open_calls);
                let blocks = assistant_blocks(m);
                open_calls = blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                    .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_string))
                    .collect();
                push_blocks(&mut out, "assistant", blocks);
            }
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let text = m.text();
                let block = if let Some(pos) = open_calls.iter().position(|c| *c == id) {
                    open_calls.remove(pos);
                    json!({"type": "tool_result", "tool_use_id": id, "content": non_empty(&text)})
                } else {
                    let name = m.tool_name.clone().unwrap_or_default();
                    json!({"type": "text", "text": format!("[{name} {id}] {}", non_empty(&text))})
                };
                push_blocks(&mut out, "user", vec![block]);
            }
            Role::User | Role::System => {
                close_open_calls(&mut out, &mut open_calls);
                let mut blocks = user_blocks(m);
                if blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": EMPTY_MESSAGE.trim()}));
                }
                push_blocks(&mut out, "user", blocks);
            }
        }
    }
    close_open_calls(&mut out, &mut open_calls);
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn non_empty(text: &str) -> String {
    if text.is_empty() {
        EMPTY_MESSAGE.trim().to_string()
    } else {
        text.to_string()
    }
}

/// Appends placeholder results for tool_use blocks that got none, so pairing stays valid.
fn close_open_calls(out: &mut Vec<(String, Vec<Value>)>, open: &mut Vec<String>) {
    if open.is_empty() {
        return;
    }
    let blocks = open
        .drain(..)
        .map(|id| {
            json!({"type": "tool_result", "tool_use_id": id,
                "content": MISSING_TOOL_RESULT.trim(), "is_error": true})
        })
        .collect();
    push_blocks(out, "user", blocks);
}

/// Appends blocks to the last message when it has the same role (keeping tool results before
/// other user content), else starts a new message.
fn push_blocks(out: &mut Vec<(String, Vec<Value>)>, role: &str, blocks: Vec<Value>) {
    match out.last_mut() {
        Some((r, content)) if r == role => {
            for b in blocks {
                if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                    let at = content
                        .iter()
                        .position(|c| c.get("type").and_then(Value::as_str) != Some("tool_result"))
                        .unwrap_or(content.len());
                    content.insert(at, b);
                } else {
                    content.push(b);
                }
            }
        }
        _ => out.push((role.to_string(), blocks)),
    }
}

fn user_blocks(m: &Message) -> Vec<Value> {
    m.content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } if text.is_empty() => None,
            ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentPart::Image { url } => Some(image_block(url)),
        })
        .collect()
}

/// An image block: `data:<media>;base64,<data>` URLs become a base64 source, others a URL
/// source.
fn image_block(url: &str) -> Value {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((meta, data)) = rest.split_once(',')
        && let Some(media) = meta.strip_suffix(";base64")
    {
        return json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}});
    }
    json!({"type": "image", "source": {"type": "url", "url": url}})
}

/// The stored tool-call arguments as a JSON object (`{}` when empty, invalid or not an object).
pub fn arguments_to_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    }
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    if let Some(state) = ReplayState::from_reasoning(m.reasoning.as_ref())
        && !state.anthropic_blocks.is_empty()
    {
        let stored_ids: Vec<&str> = state
            .anthropic_blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .filter_map(|b| b.get("id").and_then(Value::as_str))
            .collect();
        let call_ids: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
        if stored_ids == call_ids {
            return state.anthropic_blocks.clone();
        }
    }
    let mut blocks = Vec::new();
    let text = m.text();
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for c in &m.tool_calls {
        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name,
            "input": arguments_to_input(&c.arguments)}));
    }
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": EMPTY_MESSAGE.trim()}));
    }
    blocks
}

/// Puts `cache_control` on the last cacheable block of each of the last 3 messages (thinking
/// and redacted_thinking blocks cannot carry one).
pub fn apply_cache_markers(messages: &mut [Value], ttl: CacheTtl) {
    let mut placed = 0;
    for msg in messages.iter_mut().rev() {
        if placed == 3 {
            break;
        }
        let Some(content) = msg.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        if let Some(block) = content.iter_mut().rev().find(|b| {
            !matches!(
                b.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        }) {
            block["cache_control"] = ttl.marker();
            placed += 1;
        }
    }
}
