//! The platform adapter trait and the message shapes it speaks (FEATURES §1 Gateway).
//!
//! An adapter turns one messaging platform into a stream of [`InboundMessage`]s and carries
//! already-formatted reply chunks back. It knows the platform's wire protocol and nothing
//! else: authorization, session routing, chunking and the agent live in the gateway core.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;

/// The kind of conversation a message came from; part of the session key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatType {
    /// A one-to-one conversation with the bot.
    Dm,
    /// A group chat (Telegram group/supergroup, Discord guild text channel).
    Group,
    /// A broadcast-style channel (Slack channel, Telegram channel).
    Channel,
}

impl ChatType {
    /// The word used in session keys (`dm`, `group`, `channel`).
    pub fn as_str(self) -> &'static str {
        match self {
            ChatType::Dm => "dm",
            ChatType::Group => "group",
            ChatType::Channel => "channel",
        }
    }
}

/// Where a message came from and who sent it.
///
/// `user_id` is the platform's stable, authenticated identifier of the sender and the only
/// identity authorization may use; `user_name` is a display name the sender controls and is
/// for logs and prompts only (case C36).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MessageSource {
    /// Platform name as in config and session keys (`telegram`, `discord`, `slack`, `webhook`).
    pub platform: String,
    /// The kind of chat.
    pub chat_type: ChatType,
    /// The chat's id (`None` only where the platform gives none).
    pub chat_id: Option<String>,
    /// Thread / topic id inside the chat, if the message is in one.
    pub thread_id: Option<String>,
    /// Stable sender id (Telegram `from.id`, Discord `author.id`, Slack `user`).
    pub user_id: Option<String>,
    /// Sender's display name; never used for authorization.
    pub user_name: Option<String>,
}

/// What kind of file an attachment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// A picture.
    Image,
    /// A voice message or audio file.
    Audio,
    /// A video.
    Video,
    /// Any other file.
    Document,
}

/// A file that came with an inbound message, already saved under `HERMES_HOME` by the adapter
/// (size-capped; adapters skip files over the cap and say so in [`InboundMessage::text`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// What it is.
    pub kind: AttachmentKind,
    /// Where it was saved.
    pub path: PathBuf,
    /// The file name the sender gave, if any.
    pub file_name: Option<String>,
    /// MIME type, if the platform said.
    pub mime_type: Option<String>,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// One message from a platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundMessage {
    /// Where it came from.
    pub source: MessageSource,
    /// The platform's id of this message (used for replies and reactions).
    pub message_id: Option<String>,
    /// The text (caption for media); may be empty when only attachments came.
    pub text: String,
    /// Id of the message this one replies to.
    pub reply_to: Option<String>,
    /// Text of the message replied to, when the platform includes it.
    pub reply_to_text: Option<String>,
    /// Saved attachments.
    pub attachments: Vec<Attachment>,
}

/// Where a reply goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatTarget {
    /// Chat id.
    pub chat_id: String,
    /// Thread / topic id, if replies go into one.
    pub thread_id: Option<String>,
    /// Message to reply to (quoted) where the platform supports it.
    pub reply_to: Option<String>,
}

impl ChatTarget {
    /// The target that answers `msg` in its own chat and thread; `None` if it has no chat id.
    pub fn reply_to(msg: &InboundMessage) -> Option<ChatTarget> {
        Some(ChatTarget {
            chat_id: msg.source.chat_id.clone()?,
            thread_id: msg.source.thread_id.clone(),
            reply_to: msg.message_id.clone(),
        })
    }
}

/// A message the adapter sent; its id allows later edits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentMessage {
    /// The platform's message id.
    pub message_id: String,
}

/// How a platform measures message length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    /// UTF-16 code units (Telegram).
    Utf16,
    /// Unicode scalar values (Discord, Slack).
    Chars,
}

/// The markup a platform renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Markup {
    /// No markup; text goes out as written.
    Plain,
    /// Telegram MarkdownV2 (every reserved character escaped outside entities).
    TelegramMarkdownV2,
    /// Discord's Markdown (close to CommonMark).
    DiscordMarkdown,
    /// Slack `mrkdwn`.
    SlackMrkdwn,
}

/// What the delivery layer must respect when sending to a platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformLimits {
    /// Largest message, in [`PlatformLimits::length_unit`]s, after formatting
    /// (Telegram 4096 UTF-16 units, Discord 2000 chars, Slack 40000 chars).
    pub max_message_len: usize,
    /// How [`PlatformLimits::max_message_len`] is counted.
    pub length_unit: LengthUnit,
    /// Markup the platform renders.
    pub markup: Markup,
    /// Whether sent messages can be edited (streaming by edits needs it).
    pub supports_edit: bool,
}

/// One messaging platform (FEATURES §1 Gateway). Implementations are cheap to share
/// (`Arc<dyn PlatformAdapter>`); every method may be called concurrently.
#[async_trait::async_trait]
pub trait PlatformAdapter: Send + Sync {
    /// Platform name as used in config, session keys and logs (`telegram`, …).
    fn name(&self) -> &str;

    /// Length limit, markup and edit support.
    fn limits(&self) -> PlatformLimits;

    /// Connects and forwards every inbound message to `inbound` until `cancel` fires or the
    /// receiver is dropped; reconnects with backoff on transport errors by itself. Returns
    /// `Err` only for errors that retrying cannot fix (bad token).
    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError>;

    /// Sends one already-formatted chunk (within [`PlatformLimits::max_message_len`]).
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError>;

    /// Replaces the text of a message this adapter sent (streaming by edits).
    async fn edit(
        &self,
        target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError>;

    /// Sends a file with an optional caption (already formatted).
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError>;

    /// Shows "typing…" in the chat for a few seconds; platforms without it return `Ok`.
    async fn typing(&self, target: &ChatTarget) -> Result<(), PlatformError>;

    /// True when the platform allows one inbound connection per bot (Telegram long
    /// polling, Discord's gateway, Slack Socket Mode): gateway replicas on one PostgreSQL
    /// store then run [`PlatformAdapter::run`] on one replica at a time, under a leader
    /// lease ([`crate::replica`]). Sending works from every replica.
    fn single_connection(&self) -> bool {
        false
    }
}
