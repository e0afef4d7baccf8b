//! # hermes-protocol
//!
//! Owns the plain data every layer shares: [`Message`] and its parts, [`ToolCall`],
//! [`ToolSpec`], [`Usage`], [`FinishReason`], [`AssistantMessage`], the [`AgentEvent`]
//! observer stream and the [`Op`] submission queue, session ids, the `HERMES_HOME`
//! layout ([`HermesHome`]), the `config.yaml` types ([`config`]) and the known-secret
//! redactor ([`SecretRedactor`], [`secrets`]).
//! It must not do I/O beyond reading config files, and never depends on another hermes crate
//! (ARCHITECTURE §1: the protocol layer is at the bottom).

pub mod config;
pub mod dotenv;
mod events;
mod home;
mod ids;
mod message;
pub mod owner;
pub mod private_fs;
mod redact;
pub mod secrets;
pub mod target;
pub mod yaml;

pub use events::{AgentEvent, Op, TurnOutcome};
pub use home::HermesHome;
pub use ids::{SessionId, new_session_id};
pub use message::{
    AssistantMessage, ContentPart, FinishReason, Message, Reasoning, Role, ToolCall, ToolResult,
    ToolSpec, Usage,
};
pub use secrets::{RedactingWriter, SecretRedactor, StreamRedactor};
pub use target::ChatAddress;
