//! # hermes-gateway
//!
//! Owns the messaging gateway (FEATURES §1 Gateway): the [`PlatformAdapter`] trait every
//! platform implements (Telegram, Discord, Slack, webhook; each a cargo feature, on by
//! default), the OpenAI-compatible HTTP API server, session keys and the persisted
//! key→session routing, authorization (allowlists, DM pairing), per-session turn concurrency
//! (`display.busy_input_mode`), reply delivery (chunking, platform formatting, streaming
//! edits) and lifecycle hooks.
//!
//! Must not: run the agent loop itself (it drives `hermes-agent`), resolve which model to use
//! (the front end passes an agent factory), or contain provider-specific code.

#[cfg(feature = "api-server")]
pub mod api;
pub mod delivery;
mod error;
mod factory;
mod platform;
pub mod platforms;

pub use delivery::render_chunks;
pub use error::PlatformError;
pub use factory::{AgentFactory, AgentSpec};
pub use platform::{
    Attachment, AttachmentKind, ChatTarget, ChatType, InboundMessage, LengthUnit, Markup,
    MessageSource, PlatformAdapter, PlatformLimits, SentMessage,
};
#[cfg(feature = "discord")]
pub use platforms::discord::{DiscordAdapter, DiscordSettings};
#[cfg(feature = "slack")]
pub use platforms::slack::{SlackAdapter, SlackSettings};
