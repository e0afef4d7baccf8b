//! The provider-neutral model interface (ARCHITECTURE §3).

use std::pin::Pin;

use futures::Stream;
use hermes_protocol::{AssistantMessage, Message, ToolSpec};
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;

/// One request to a model: the full prompt as the agent wants it sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// Model name as the provider knows it.
    pub model: String,
    /// System prompt (stored session prompt, plus any ephemeral call-time text appended).
    pub system: String,
    /// Conversation history after repair (no system messages; tool pairs intact).
    pub messages: Vec<Message>,
    /// Tools offered, in stable order (prefix caching depends on it). Empty = no tools.
    pub tools: Vec<ToolSpec>,
    /// Whether the model may call tools this time. The tool list stays in the request either
    /// way, so the prompt prefix (and the provider's prompt cache) is unchanged.
    pub tool_choice: ToolChoice,
    /// Maximum output tokens, if the caller wants a cap.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Cancelled when the user interrupts; adapters stop reading and drop the connection.
    pub cancel: CancellationToken,
}

/// Whether a request lets the model call tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides (the normal case).
    #[default]
    Auto,
    /// The model must answer in text (e.g. the budget-exhausted summary, FEATURES §3).
    None,
}

/// What an adapter reports while a response streams in.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Visible answer text.
    TextDelta(String),
    /// Reasoning text.
    ReasoningDelta(String),
    /// A tool call began (its name is known; arguments still streaming).
    ToolCallStarted {
        /// Call id (may be empty until the provider sends one).
        id: String,
        /// Tool name.
        name: String,
    },
    /// The response is complete; always the last event of a successful stream.
    Completed(AssistantMessage),
}

/// A stream of events for one model call; ends after [`StreamEvent::Completed`] or an error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// A connection to one model behind one provider and api_mode.
#[async_trait::async_trait]
pub trait ModelClient: Send + Sync {
    /// Starts one streamed call. Errors before the first byte (HTTP status, connection)
    /// come back as `Err`; errors inside the stream come as an `Err` item.
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError>;

    /// Gets ready for the requests of a session that starts like `request` (its system
    /// prompt, tools and history so far, no new question), returning once ready. The
    /// embedded model prefills that text into its KV cache, so the first question prefills
    /// only itself; remote providers have nothing to prepare (the default does nothing).
    /// An error is worth a log line only: the next request meets the same cause and
    /// reports it.
    async fn warm(&self, _request: &ChatRequest) -> Result<(), LlmError> {
        Ok(())
    }

    /// Provider id for display and storage (`openrouter`, `local`, …).
    fn provider(&self) -> &str;

    /// Model name for display and storage.
    fn model(&self) -> &str;

    /// The endpoint's base URL as configured (`https://openrouter.ai/api/v1`), stored with
    /// usage as Python Hermes stores it (`billing_base_url`); empty when there is none (the
    /// embedded model). Never carries a key: provider keys travel in headers.
    fn base_url(&self) -> &str {
        ""
    }

    /// Context window in tokens, when known.
    fn context_window(&self) -> Option<u64> {
        None
    }

    /// How many other API keys this client can switch to after a key-specific failure (a
    /// credential pool of n keys has n − 1); the turn loop rotates at most that many times
    /// per turn (FEATURES §2). 0 for a single key.
    fn spare_credentials(&self) -> u32 {
        0
    }
}
