//! # hermes-gateway
//!
//! Owns the messaging gateway (FEATURES §1 Gateway): the [`PlatformAdapter`] trait every
//! platform implements (Telegram, Discord, Slack, webhook, IRC, email, Matrix, WhatsApp, SMS,
//! Signal, Mattermost, Home Assistant;
//! each a cargo feature, on by default), the OpenAI-compatible HTTP API server, session keys
//! and the persisted
//! key→session routing, authorization (allowlists, DM pairing), per-session turn concurrency
//! (`display.busy_input_mode`), reply delivery (chunking, platform formatting, streaming
//! edits), lifecycle hooks, and unprompted messages to chats or home channels ([`Outbox`], used
//! for the results of scheduled jobs).
//!
//! Must not: run the agent loop itself (it drives `hermes-agent`), resolve which model to use
//! (the front end passes an agent factory), or contain provider-specific code.

#[cfg(feature = "api-server")]
pub mod api;
pub mod auth;
pub mod config;
pub mod delivery;
mod error;
mod factory;
pub mod idle;
pub mod keys;
#[cfg(feature = "push")]
pub mod observe;
pub use hermes_agent::lease;
pub mod outbox;
mod platform;
pub mod platforms;
pub mod replica;
pub mod routing;
pub mod runner;
#[cfg(feature = "push")]
pub mod serve;
pub mod status;
#[cfg(feature = "testing")]
pub mod testing;

pub use delivery::{
    DeliveryOptions, DeliveryReport, MediaPolicy, StreamingReply, ToolProgressMode, extract_media,
    render_chunks, save_inbound,
};
pub use error::PlatformError;
pub use factory::{AgentFactory, AgentSpec};
pub use idle::{Activity, BusyGuard, MemoryRelease};
pub use keys::{KeyOptions, session_key};
pub use outbox::{Outbox, OutboxError};
pub use platform::{
    Attachment, AttachmentKind, ChatTarget, ChatType, InboundMessage, LengthUnit, Markup,
    MessageSource, PlatformAdapter, PlatformLimits, SentMessage,
};
#[cfg(feature = "discord")]
pub use platforms::discord::{DiscordAdapter, DiscordSettings};
#[cfg(feature = "email")]
pub use platforms::email::{EmailAdapter, EmailSettings};
#[cfg(feature = "homeassistant")]
pub use platforms::homeassistant::{HomeAssistantAdapter, HomeAssistantSettings};
#[cfg(feature = "irc")]
pub use platforms::irc::{IrcAdapter, IrcSettings};
#[cfg(feature = "matrix")]
pub use platforms::matrix::{MatrixAdapter, MatrixSettings};
#[cfg(feature = "mattermost")]
pub use platforms::mattermost::{MattermostAdapter, MattermostSettings};
#[cfg(feature = "signal")]
pub use platforms::signal::{SignalAdapter, SignalSettings};
#[cfg(feature = "slack")]
pub use platforms::slack::{SlackAdapter, SlackSettings};
#[cfg(feature = "sms")]
pub use platforms::sms::{SmsAdapter, SmsSettings};
#[cfg(feature = "whatsapp")]
pub use platforms::whatsapp::{WhatsAppAdapter, WhatsAppSettings};
pub use runner::{Gateway, GatewayError};
