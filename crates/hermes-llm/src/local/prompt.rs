//! Turning a [`ChatRequest`](crate::ChatRequest) into chat turns for the embedded model
//! (FEATURES §14): the system text with a Hermes `<tools>` block, assistant tool calls
//! written back as `<tool_call>` text, and tool results as `<tool_response>` blocks in a
//! `tool` turn (the Hermes function-calling format). The model's own chat template renders
//! the turns (see [`super::LocalModel`]); [`render_chatml`] is the fallback for GGUF files
//! without one.

use hermes_protocol::{ContentPart, Message, Role, ToolSpec};

/// The tool-use instructions shown to the model; `{tools}` is replaced by one JSON line
/// per tool.
pub const TOOLS_PROMPT: &str = include_str!("tools_prompt.md");

/// One rendered turn: a role name (`system`, `user`, `assistant`, `tool`) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTurn {
    /// Role name as the chat template expects it.
    pub role: String,
    /// Turn text, already including any tool markup.
    pub content: String,
}

impl ChatTurn {
    fn new(role: &str, content: String) -> ChatTurn {
        ChatTurn {
            role: role.to_string(),
            content,
        }
    }
}

/// The `<tools>` instruction block for `tools` (empty string when there are none). Each
/// tool is one line `{"type":"function","function":{"name","description","parameters"}}`
/// in the given order, so the prompt stays byte-stable across calls. Schemas are shortened
/// for a small local model ([`short_description`], [`short_schema`]).
pub fn tools_block(tools: &[ToolSpec]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = tools
        .iter()
        .map(|t| {
            format!(
                "{{\"type\": \"function\", \"function\": {{\"name\": {}, \"description\": {}, \"parameters\": {}}}}}",
                json_string(&t.name),
                json_string(&short_description(&t.description)),
                short_schema(&t.parameters)
            )
        })
        .collect();
    TOOLS_PROMPT
        .replace("{tools}", &lines.join("\n"))
        .replace("{example}", &example_call(&tools[0]))
}

/// Longest description kept for a tool or an argument, in chars.
const SHORT_DESCRIPTION_CHARS: usize = 160;

/// The first sentence of a description (up to the first `. ` or line break), capped at
/// [`SHORT_DESCRIPTION_CHARS`] chars. Hosted models get the whole text; the embedded model
/// pays for every token of it on a small CPU and rarely uses the rest.
pub fn short_description(text: &str) -> String {
    let text = text.trim();
    let mut end = text.len();
    if let Some(i) = text.find(['\n', '\r']) {
        end = end.min(i);
    }
    if let Some(i) = text.find(". ") {
        end = end.min(i + 1);
    }
    let first = text[..end].trim();
    if first.chars().count() <= SHORT_DESCRIPTION_CHARS {
        return first.to_string();
    }
    let mut cut: String = first.chars().take(SHORT_DESCRIPTION_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// A JSON Schema with every `description` shortened by [`short_description`] and the
/// annotations a model does not need to call the tool (`examples`, `title`, `$schema`)
/// removed; types, enums, required lists and defaults stay.
pub fn short_schema(schema: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "examples" | "title" | "$schema"))
                .map(|(k, v)| match (k.as_str(), v) {
                    ("description", Value::String(s)) => {
                        (k.clone(), Value::String(short_description(s)))
                    }
                    // Property names are data, not annotations: keep every one.
                    ("properties", Value::Object(props)) => (
                        k.clone(),
                        Value::Object(
                            props
                                .iter()
                                .map(|(name, p)| (name.clone(), short_schema(p)))
                                .collect(),
                        ),
                    ),
                    _ => (k.clone(), short_schema(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(short_schema).collect()),
        other => other.clone(),
    }
}

/// An example call of `tool` for the instructions: its name and its required (else
/// first) argument names with placeholder string values.
fn example_call(tool: &ToolSpec) -> String {
    let props: Vec<String> = tool
        .parameters
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let required: Vec<String> = tool
        .parameters
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let names = if required.is_empty() {
        props.into_iter().take(1).collect()
    } else {
        required
    };
    let args: Vec<String> = names
        .iter()
        .map(|n| format!("{}: \"...\"", json_string(n)))
        .collect();
    format!(
        "{{\"name\": {}, \"arguments\": {{{}}}}}",
        json_string(&tool.name),
        args.join(", ")
    )
}

/// Builds the turn list: one system turn (the tools block, the system text, then any system
/// messages found in history; omitted when all are empty so the template's default system
/// line applies), then the history. Consecutive tool results share one `tool` turn.
///
/// The tools block goes first, as in the Hermes function-calling format: it is the largest
/// part and the most stable one, and what varies between sessions (memory, the date at the
/// end of the system text) must come after it for the persistent prefix cache to reuse it.
pub fn build_turns(system: &str, messages: &[Message], tools: &[ToolSpec]) -> Vec<ChatTurn> {
    let mut system_parts: Vec<String> = Vec::new();
    let block = tools_block(tools);
    if !block.is_empty() {
        system_parts.push(block.trim_end().to_string());
    }
    if !system.trim().is_empty() {
        system_parts.push(system.trim_end().to_string());
    }
    for m in messages.iter().filter(|m| m.role == Role::System) {
        let text = m.text();
        if !text.trim().is_empty() {
            system_parts.push(text.trim_end().to_string());
        }
    }

    let mut turns = Vec::new();
    if !system_parts.is_empty() {
        turns.push(ChatTurn::new("system", system_parts.join("\n\n")));
    }
    for m in messages {
        match m.role {
            Role::System => {}
            Role::User => turns.push(ChatTurn::new("user", content_text(m))),
            Role::Assistant => turns.push(ChatTurn::new("assistant", assistant_text(m))),
            Role::Tool => {
                let block = tool_response(m);
                match turns.last_mut() {
                    Some(last) if last.role == "tool" => {
                        last.content.push('\n');
                        last.content.push_str(&block);
                    }
                    _ => turns.push(ChatTurn::new("tool", block)),
                }
            }
        }
    }
    turns
}

/// Renders turns in ChatML (`<|im_start|>role\ncontent<|im_end|>\n`), ending with an open
/// assistant turn when `add_assistant` is set. Used when the GGUF has no chat template or
/// llama.cpp does not recognise it.
pub fn render_chatml(turns: &[ChatTurn], add_assistant: bool) -> String {
    let mut out = String::new();
    for t in turns {
        out.push_str("<|im_start|>");
        out.push_str(&t.role);
        out.push('\n');
        out.push_str(&t.content);
        out.push_str("<|im_end|>\n");
    }
    if add_assistant {
        out.push_str("<|im_start|>assistant\n");
    }
    out
}

/// Text of a user message; images become a short placeholder (the embedded model reads
/// text only).
fn content_text(m: &Message) -> String {
    let mut out = String::new();
    for part in &m.content {
        match part {
            ContentPart::Text { text } => out.push_str(text),
            ContentPart::Image { .. } => out.push_str("[image omitted]"),
        }
    }
    out
}

/// Assistant text followed by its tool calls as `<tool_call>` blocks.
fn assistant_text(m: &Message) -> String {
    let mut out = m.text();
    for call in &m.tool_calls {
        let args: serde_json::Value = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
        let body = format!(
            "{{\"name\": {}, \"arguments\": {}}}",
            json_string(&call.name),
            args
        );
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("<tool_call>\n");
        out.push_str(&body);
        out.push_str("\n</tool_call>");
    }
    out
}

/// One tool result as a `<tool_response>` block holding `{"name", "content"}`.
fn tool_response(m: &Message) -> String {
    let name = m.tool_name.clone().unwrap_or_default();
    format!(
        "<tool_response>\n{{\"name\": {}, \"content\": {}}}\n</tool_response>",
        json_string(&name),
        json_string(&m.text())
    )
}

/// `s` as a JSON string literal (quotes and escapes included).
fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}
