//! # hermes-llm
//!
//! Owns everything provider-specific: runtime resolution (which provider, model, key and
//! api_mode), the [`ModelClient`] trait and its adapters (`openai_chat`, `local`), SSE
//! decoding, and error classification. Everything above sees one normalized
//! [`hermes_protocol::AssistantMessage`] and one typed [`LlmError`]; no `if provider == …`
//! exists outside this crate (ARCHITECTURE §1). It must not persist anything or run tools.

mod client;
mod error;

pub use client::{ChatRequest, EventStream, ModelClient, StreamEvent};
pub use error::{ErrorClass, LlmError};
