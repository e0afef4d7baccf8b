//! Provider replay state carried inside a stored message (FEATURES §2: "thinking blocks replayed
//! with their signatures in original order"; OpenAI Responses reasoning items carried across
//! turns; case C11).
//!
//! Some providers need parts of an assistant turn echoed back exactly as they produced them:
//! Anthropic needs the ordered content blocks (signed `thinking`, `redacted_thinking`, `text`,
//! `tool_use`) of the turn, and the Responses API needs its `reasoning` items (id,
//! `encrypted_content`, summary). The protocol's [`Reasoning`] has one opaque `signature`
//! field "that some providers need echoed back"; this module owns its encoding: the prefix
//! [`REPLAY_PREFIX`] followed by a JSON object. A signature without the prefix is a plain
//! provider signature and is left alone. Nothing outside hermes-llm reads the payload.

use hermes_protocol::Reasoning;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Marks a [`Reasoning::signature`] that holds a [`ReplayState`] (version 1).
pub const REPLAY_PREFIX: &str = "hermes-replay-v1:";

/// What an adapter needs to replay one assistant turn to the provider that produced it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayState {
    /// Anthropic: the turn's content blocks in the order received, exactly as the API sent
    /// them (thinking with signature, redacted_thinking, text, tool_use with parsed input).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anthropic_blocks: Vec<Value>,
    /// OpenAI Responses: the turn's `reasoning` output items (`id`, `summary`,
    /// `encrypted_content`), in output order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responses_items: Vec<Value>,
}

impl ReplayState {
    /// True when nothing needs replaying.
    pub fn is_empty(&self) -> bool {
        self.anthropic_blocks.is_empty() && self.responses_items.is_empty()
    }

    /// The signature text: [`REPLAY_PREFIX`] + compact JSON.
    pub fn encode(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string());
        format!("{REPLAY_PREFIX}{json}")
    }

    /// Decodes a signature written by [`ReplayState::encode`]; `None` for any other text
    /// (a plain signature, or a corrupted payload, which is then simply not replayed).
    pub fn decode(signature: &str) -> Option<ReplayState> {
        let json = signature.strip_prefix(REPLAY_PREFIX)?;
        serde_json::from_str(json).ok()
    }

    /// The state stored with a message's reasoning, if any.
    pub fn from_reasoning(reasoning: Option<&Reasoning>) -> Option<ReplayState> {
        reasoning
            .and_then(|r| r.signature.as_deref())
            .and_then(ReplayState::decode)
    }
}

/// Builds the [`Reasoning`] to store: the visible reasoning text plus the encoded state.
/// `None` when there is neither text nor state.
pub fn reasoning_with_state(text: String, state: &ReplayState) -> Option<Reasoning> {
    if text.is_empty() && state.is_empty() {
        return None;
    }
    Some(Reasoning {
        text,
        signature: (!state.is_empty()).then(|| state.encode()),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_plain_signatures() {
        let s = ReplayState {
            anthropic_blocks: vec![serde_json::json!({"type": "thinking", "signature": "A"})],
            responses_items: Vec::new(),
        };
        let enc = s.encode();
        assert!(enc.starts_with(REPLAY_PREFIX));
        assert_eq!(ReplayState::decode(&enc).unwrap(), s);
        assert_eq!(ReplayState::decode("EqQBCkgIARABGAIiQ"), None);
        assert_eq!(ReplayState::decode("hermes-replay-v1:{broken"), None);
        assert!(reasoning_with_state(String::new(), &ReplayState::default()).is_none());
    }
}
