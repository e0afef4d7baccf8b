//! The submission queue ([`Op`]) and the observer stream ([`AgentEvent`]) between a front end
//! and the agent core (CONVENTIONS pattern 1; ARCHITECTURE §3 for the `--json` shape).

use serde::{Deserialize, Serialize};

use crate::message::Usage;

impl Op {
    /// [`Op::UserInput`] with `text` and no images.
    pub fn user(text: impl Into<String>) -> Op {
        Op::UserInput {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// What a front end asks of a running agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// Run one turn with this user input ([`Op::user`] for text alone).
    UserInput {
        /// The user's text.
        text: String,
        /// Image files attached to it: sent to the model as images when it takes them
        /// (`agent.image_input_mode`), else named in the text by the front end.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<std::path::PathBuf>,
    },
    /// Cancel the running turn (Ctrl-C, `/stop`): the model request and running tools stop,
    /// and every tool call already made gets a result.
    Interrupt,
    /// Start a new session (`/new`, `/reset`): a fresh session id and system prompt.
    NewSession,
    /// Switch to another stored session (`/resume <id|title>`): its stored prompt and history.
    Resume {
        /// Session id, title or unique id prefix.
        session: String,
    },
    /// Remove the last `count` user turns (and everything after them) from the active
    /// history (`/undo [N]`); they stay in the store, marked inactive.
    Undo {
        /// How many user turns to remove (≥ 1).
        count: u32,
    },
    /// Remove the last user turn and run it again (`/retry`).
    Retry,
    /// Compress the context now (`/compress [focus]`, FEATURES §9): summarize the middle of
    /// the history, keeping the first messages and the recent tail.
    Compress {
        /// Topic the summary should keep in most detail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        focus: Option<String>,
    },
    /// Stop the agent task after the current turn.
    Shutdown,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model gave a final answer.
    Completed,
    /// The iteration budget ran out; the final text is the summary (or a fallback notice).
    BudgetExhausted,
    /// The user interrupted the turn.
    Interrupted,
    /// The turn failed (provider error after retries, storage failure); `final_text` says why.
    Failed,
}

impl TurnOutcome {
    /// The snake_case name, as serialized (`completed`, `budget_exhausted`, `interrupted`,
    /// `failed`).
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnOutcome::Completed => "completed",
            TurnOutcome::BudgetExhausted => "budget_exhausted",
            TurnOutcome::Interrupted => "interrupted",
            TurnOutcome::Failed => "failed",
        }
    }
}

/// One observable step of a turn, sent to every sink (terminal, `--json`, gateway, API SSE).
///
/// Serialized as `{"type": "<snake_case variant>", …fields}`; new fields may be added,
/// none renamed (ARCHITECTURE §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A turn began in this session.
    TurnStarted {
        /// Session id (`YYYYMMDD_HHMMSS_<6 hex>`).
        session_id: String,
    },
    /// A piece of visible answer text.
    TextDelta {
        /// The text piece.
        text: String,
    },
    /// A piece of reasoning text.
    ReasoningDelta {
        /// The text piece.
        text: String,
    },
    /// A tool call started.
    ToolStarted {
        /// Call id.
        call_id: String,
        /// Tool name.
        name: String,
        /// A short one-line preview of the arguments (≤ 80 chars).
        args_preview: String,
        /// The call's whole argument text (JSON, as the model sent it), for in-process
        /// front ends that show more than the preview (ACP: the files a call touches, the
        /// diff of an edit). Not serialized: the `--json` stream keeps its shape.
        #[serde(skip)]
        arguments: String,
    },
    /// Progress reported by a running tool.
    ToolProgress {
        /// Call id.
        call_id: String,
        /// Progress text.
        message: String,
    },
    /// A tool call finished.
    ToolFinished {
        /// Call id.
        call_id: String,
        /// False when the result is an error.
        ok: bool,
        /// A short preview of the result (≤ 120 chars).
        preview: String,
        /// Wall time of the call in milliseconds.
        duration_ms: u64,
    },
    /// The model request is being sent again after its stream failed partway (connection
    /// dropped, stream cut off, provider error mid-answer) and this call had already sent
    /// `text_delta` or `reasoning_delta` events: every such delta since the last
    /// `tool_started` (or since `turn_started`) belongs to the failed attempt and must be
    /// discarded, because the retried attempt streams its answer again from the start.
    ///
    /// Only sent when something was already shown; a failure before the first delta is
    /// retried silently apart from its `status` line. The stored history never holds the
    /// failed attempt's text (only a completed reply is stored).
    StreamRestarted {
        /// Number of the attempt that starts now (2 for the first retry), counted per
        /// model call.
        attempt: u32,
        /// Why the previous attempt failed (the provider error, one line).
        reason: String,
    },
    /// A status line: retries, compression, fallbacks, diagnostics.
    Status {
        /// Human-readable text.
        message: String,
    },
    /// The turn ended.
    TurnFinished {
        /// How it ended.
        outcome: TurnOutcome,
        /// The final answer text (or the reason for failure).
        final_text: String,
        /// Tokens used by all model calls of this turn.
        usage: Usage,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_with_snake_case_type_tag() {
        let e = AgentEvent::ToolFinished {
            call_id: "c".into(),
            ok: true,
            preview: "p".into(),
            duration_ms: 3,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "tool_finished");
        assert_eq!(v["duration_ms"], 3);
        let t = AgentEvent::TurnFinished {
            outcome: TurnOutcome::BudgetExhausted,
            final_text: String::new(),
            usage: Usage::default(),
        };
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["outcome"], "budget_exhausted");
        assert_eq!(v["usage"]["cache_read_tokens"], 0);
    }

    #[test]
    fn stream_restarted_serializes_with_attempt_and_reason() {
        let e = AgentEvent::StreamRestarted {
            attempt: 2,
            reason: "stream ended early".into(),
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "stream_restarted", "attempt": 2, "reason": "stream ended early"})
        );
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }
}
