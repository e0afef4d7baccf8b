//! # hermes-llm
//!
//! Owns everything provider-specific: runtime resolution (which provider, model, key and
//! api_mode), the [`ModelClient`] trait and its adapters (`openai_chat`, `anthropic`,
//! `openai_responses`, `local`), SSE
//! decoding, and error classification. Everything above sees one normalized
//! [`hermes_protocol::AssistantMessage`] and one typed [`LlmError`]; no `if provider == …`
//! exists outside this crate (ARCHITECTURE §1). It must not persist anything or run tools.

pub mod anthropic;
pub mod auth_file;
mod client;
pub mod context_length;
pub mod credentials;
pub mod error;
pub mod fallback;
pub mod hermes_format;
pub mod model_choice;
pub mod openai_chat;
pub mod openai_responses;
pub mod pooled;
pub mod pricing;
pub mod python_providers;
pub mod reachability;
mod redact;
pub mod replay;
pub mod retry;
pub mod runtime;
pub mod sse;
pub mod timeouts;
mod transport;
pub mod vision;

pub use anthropic::{AnthropicClient, AnthropicConfig};
pub use client::{ChatRequest, EventStream, ModelClient, StreamEvent, ToolChoice};
pub use error::{ErrorClass, LlmError, classify};
pub use model_choice::{ChoiceContext, ChoiceError, ModelChoice, parse_choice, resolve_choice};
pub use openai_chat::{OpenAiChatClient, OpenAiChatConfig};
pub use openai_responses::{ResponsesClient, ResponsesConfig};
pub use redact::{mask_secret, redact_secrets};
pub use retry::backoff_delay;
pub use runtime::{
    ApiMode, ClientOptions, DEFAULT_LOCAL_MODEL_FILE, ResolveError, ResolveInputs, Runtime,
    build_client, build_client_with, credential_pool, resolve,
};
pub use timeouts::Timeouts;
pub use transport::init_tls;

#[cfg(feature = "local")]
pub mod local;
