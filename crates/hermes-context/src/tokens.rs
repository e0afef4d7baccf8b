//! Rough token estimates for budgeting (compression thresholds, context-window checks).
//!
//! The rule is the common "about four characters per token" heuristic (CONVENTIONS
//! §Dependencies, "a chars/4 estimate for others"): it needs no tokenizer files and errs on the
//! side of over-counting for code and non-Latin text less than a byte count would.

use hermes_protocol::{ContentPart, Message, ToolSpec};

/// Characters per token assumed by the estimate.
pub const CHARS_PER_TOKEN: u64 = 4;

/// Fixed tokens added per message for the role marker and framing that providers add around
/// every message (chat templates spend 3–5 tokens per message).
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Fixed tokens added per tool call for its id, type and name framing.
pub const TOOL_CALL_OVERHEAD_TOKENS: u64 = 8;

/// Fixed tokens counted for each image part (providers bill images separately; this is a
/// placeholder so that images are never counted as free).
pub const IMAGE_PART_TOKENS: u64 = 85;

/// Fixed tokens added per tool definition for its function framing.
pub const TOOL_SPEC_OVERHEAD_TOKENS: u64 = 8;

/// Estimates token counts from text without a tokenizer.
///
/// All results are in **tokens** (estimated); inputs are measured in Unicode scalar values
/// (`char`s), not bytes, so multi-byte text is not over-counted by its UTF-8 length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenEstimator;

impl TokenEstimator {
    /// A new estimator.
    pub fn new() -> TokenEstimator {
        TokenEstimator
    }

    /// Tokens in `text`: `ceil(chars / 4)`; the empty string is 0 tokens.
    pub fn estimate_text(&self, text: &str) -> u64 {
        let chars = text.chars().count() as u64;
        chars.div_ceil(CHARS_PER_TOKEN)
    }

    /// Tokens in one message: its text parts, [`IMAGE_PART_TOKENS`] per image, each tool
    /// call's name and argument text plus [`TOOL_CALL_OVERHEAD_TOKENS`], the tool-call id of a
    /// tool result, reasoning text, and [`MESSAGE_OVERHEAD_TOKENS`].
    pub fn estimate_message(&self, message: &Message) -> u64 {
        let mut total = MESSAGE_OVERHEAD_TOKENS;
        for part in &message.content {
            total += match part {
                ContentPart::Text { text } => self.estimate_text(text),
                ContentPart::Image { .. } => IMAGE_PART_TOKENS,
            };
        }
        for call in &message.tool_calls {
            total += TOOL_CALL_OVERHEAD_TOKENS
                + self.estimate_text(&call.name)
                + self.estimate_text(&call.arguments);
        }
        if let Some(id) = &message.tool_call_id {
            total += self.estimate_text(id);
        }
        if let Some(reasoning) = &message.reasoning {
            total += self.estimate_text(&reasoning.text);
        }
        total
    }

    /// Tokens in a list of messages: the sum of [`TokenEstimator::estimate_message`].
    pub fn estimate_messages(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|m| self.estimate_message(m)).sum()
    }

    /// Tokens in one tool definition: name, description and the JSON text of its parameter
    /// schema, plus [`TOOL_SPEC_OVERHEAD_TOKENS`].
    pub fn estimate_tool(&self, tool: &ToolSpec) -> u64 {
        let schema = tool.parameters.to_string();
        TOOL_SPEC_OVERHEAD_TOKENS
            + self.estimate_text(&tool.name)
            + self.estimate_text(&tool.description)
            + self.estimate_text(&schema)
    }

    /// Tokens of a whole request: the system prompt (counted as one message, so it carries
    /// [`MESSAGE_OVERHEAD_TOKENS`] unless empty), the messages and the tool definitions.
    pub fn estimate_request(&self, system: &str, messages: &[Message], tools: &[ToolSpec]) -> u64 {
        let system_tokens = if system.is_empty() {
            0
        } else {
            MESSAGE_OVERHEAD_TOKENS + self.estimate_text(system)
        };
        system_tokens
            + self.estimate_messages(messages)
            + tools.iter().map(|t| self.estimate_tool(t)).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    #[test]
    fn text_rounds_up_by_chars_not_bytes() {
        let e = TokenEstimator::new();
        assert_eq!(e.estimate_text(""), 0);
        assert_eq!(e.estimate_text("a"), 1);
        assert_eq!(e.estimate_text("abcd"), 1);
        assert_eq!(e.estimate_text("abcde"), 2);
        // 4 chars of 3 bytes each: one token, not three.
        assert_eq!(e.estimate_text("日本語です"), 2);
        assert_eq!(e.estimate_text("日本語"), 1);
    }

    #[test]
    fn messages_count_overhead_and_tool_arguments() {
        let e = TokenEstimator::new();
        let user = Message::user("abcdefgh");
        assert_eq!(e.estimate_message(&user), MESSAGE_OVERHEAD_TOKENS + 2);
        let mut assistant = Message::assistant("");
        assistant.tool_calls = vec![ToolCall::new("c1", "read_file", r#"{"path":"a.txt"}"#)];
        // name 9 chars -> 3, args 16 chars -> 4.
        assert_eq!(
            e.estimate_message(&assistant),
            MESSAGE_OVERHEAD_TOKENS + TOOL_CALL_OVERHEAD_TOKENS + 3 + 4
        );
        assert_eq!(
            e.estimate_messages(&[user.clone(), assistant.clone()]),
            e.estimate_message(&user) + e.estimate_message(&assistant)
        );
    }

    #[test]
    fn request_adds_system_and_tools() {
        let e = TokenEstimator::new();
        let tool = ToolSpec {
            name: "noop".into(),
            description: "does nothing".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let msgs = vec![Message::user("hi")];
        let with_all = e.estimate_request("system!!", &msgs, std::slice::from_ref(&tool));
        let expected =
            MESSAGE_OVERHEAD_TOKENS + 2 + e.estimate_messages(&msgs) + e.estimate_tool(&tool);
        assert_eq!(with_all, expected);
        assert_eq!(e.estimate_request("", &[], &[]), 0);
        assert!(e.estimate_tool(&tool) > TOOL_SPEC_OVERHEAD_TOKENS);
    }
}
