//! Conversation messages, tool calls and usage (ARCHITECTURE §3).

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The system prompt (built once per session, ARCHITECTURE §2 invariant 1).
    System,
    /// The human, a platform user, or a scheduled job's prompt.
    User,
    /// The model.
    Assistant,
    /// The result of one tool call, paired by `tool_call_id`.
    Tool,
}

impl Role {
    /// The lowercase wire/storage name (`system`, `user`, `assistant`, `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses the lowercase name written by [`Role::as_str`].
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain UTF-8 text.
    Text {
        /// The text.
        text: String,
    },
    /// An image given by URL (`https:` or a `data:` URL with base64 bytes).
    Image {
        /// The image URL.
        url: String,
    },
}

/// A tool call requested by the model.
///
/// `arguments` is the model's argument text verbatim, except that empty or
/// whitespace-only text is stored as `{}` (case C04). Schema coercion applies to the
/// executed copy and is never written back (ARCHITECTURE §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id (may be composite, e.g. `call_7|fc_7`, case C14).
    pub id: String,
    /// Tool name as the model wrote it.
    pub name: String,
    /// JSON argument text as the model wrote it (`{}` when it sent nothing).
    pub arguments: String,
}

impl ToolCall {
    /// Builds a call, normalizing empty/whitespace-only argument text to `{}` (case C04).
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        let arguments: String = arguments.into();
        let arguments = if arguments.trim().is_empty() {
            "{}".to_string()
        } else {
            arguments
        };
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The outcome of running one tool call, before it becomes a [`Role::Tool`] message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// Text shown to the model.
    pub content: String,
    /// True when the tool failed or refused; the text says why.
    pub is_error: bool,
}

/// Reasoning ("thinking") produced by the model alongside its answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning text (may be a summary where the provider only gives one).
    pub text: String,
    /// Opaque signature or encrypted payload that some providers need echoed back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the answer.
    Stop,
    /// Output token limit reached; the message may be cut (case C03).
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// The provider filtered or refused the output.
    ContentFilter,
    /// Any other provider value, kept verbatim.
    Other(String),
}

impl FinishReason {
    /// Maps an OpenAI-style `finish_reason` string.
    pub fn from_wire(s: &str) -> FinishReason {
        match s {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "content_filter" | "refusal" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }

    /// The snake_case name used in storage and `--json` output.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(s) => s,
        }
    }
}

/// Token counts of one model call or a sum of calls. All values are tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens billed at the normal rate (including cached ones where the provider folds them in).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Reasoning tokens (a subset of output tokens on most providers).
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Adds another call's counts to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }

    /// True when every count is zero (the provider sent no usage).
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// A tool as offered to the model: name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name (`[A-Za-z0-9_-]`, ≤ 64 chars).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema (draft 2020-12 subset) of the argument object.
    pub parameters: serde_json::Value,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Content parts (usually one text part; empty for a tool-call-only assistant message).
    #[serde(default)]
    pub content: Vec<ContentPart>,
    /// Tool calls requested by an assistant message, in the model's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`]: the id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For [`Role::Tool`]: the name of the tool that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Reasoning produced with an assistant message, kept for replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Why an assistant message ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
}

impl Message {
    fn with_text(role: Role, text: impl Into<String>) -> Message {
        let text: String = text.into();
        Message {
            role,
            content: if text.is_empty() {
                Vec::new()
            } else {
                vec![ContentPart::Text { text }]
            },
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            reasoning: None,
            finish_reason: None,
        }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Message {
        Message::with_text(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Message {
        Message::with_text(Role::User, text)
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message::with_text(Role::Assistant, text)
    }

    /// A tool result message answering `call_id` from tool `name`.
    pub fn tool(
        call_id: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Message {
        let mut m = Message::with_text(Role::Tool, text);
        m.tool_call_id = Some(call_id.into());
        m.tool_name = Some(name.into());
        m
    }

    /// The concatenated text of all text parts.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }
}

/// The normalized result of one model call, whatever the provider (ARCHITECTURE §1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Visible answer text (provider markup such as stray `<tool_call>` tags removed).
    pub text: String,
    /// Reasoning text and signature, if any.
    pub reasoning: Option<Reasoning>,
    /// Tool calls in index order.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage of this call (zero when the provider sent none).
    pub usage: Usage,
    /// Why generation stopped (`None` when the stream ended without saying).
    pub finish_reason: Option<FinishReason>,
    /// Diagnostics for the user about this response (e.g. tool-call markup in text, case C13).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<String>,
}

impl AssistantMessage {
    /// Converts to a stored/replayed [`Message`].
    pub fn to_message(&self) -> Message {
        let mut m = Message::assistant(self.text.clone());
        m.tool_calls = self.tool_calls.clone();
        m.reasoning = self.reasoning.clone();
        m.finish_reason = self.finish_reason.clone();
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_arguments_become_empty_object() {
        assert_eq!(ToolCall::new("a", "t", "").arguments, "{}");
        assert_eq!(ToolCall::new("a", "t", "  \n").arguments, "{}");
        assert_eq!(ToolCall::new("a", "t", "{\"x\":1}").arguments, "{\"x\":1}");
    }

    #[test]
    fn message_roundtrips_through_json() {
        let mut m = Message::assistant("hi");
        m.tool_calls
            .push(ToolCall::new("c1", "read_file", "{\"path\":\"a\"}"));
        m.finish_reason = Some(FinishReason::ToolCalls);
        let s = serde_json::to_string(&m).unwrap();
        let back: Message = serde_json::from_str(&s).unwrap();
        assert_eq!(back, m);
    }
}
