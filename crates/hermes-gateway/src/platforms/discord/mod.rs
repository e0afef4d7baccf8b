//! Discord adapter (issue 7 §1): the gateway websocket (API v10) for inbound messages and a
//! small REST client for replies, edits, files and typing.
//!
//! Inbound: `MESSAGE_CREATE` dispatches become [`InboundMessage`]s — a message without
//! `guild_id` is a DM, a guild message is a `Group` message, a message in a thread carries
//! the parent channel as `chat_id` and the thread as `thread_id`; `author.id` is the user id.
//! The connection heartbeats, resumes after a drop, and reconnects with capped jittered
//! backoff; only a rejected token (HTTP 401, close code 4004) or a fatal close code ends
//! [`PlatformAdapter::run`] with an error.

mod event;
mod gateway;
mod rest;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, ChatType, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits,
    SentMessage,
};
use crate::platforms::backoff::Backoff;
use crate::platforms::media::{self, MediaPolicy};

pub use gateway::INTENTS;

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "discord";

/// Discord's REST base for API v10.
pub const DEFAULT_API_BASE_URL: &str = "https://discord.com/api/v10";

/// Discord's message limit: 2000 characters of `content`.
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// Threads remembered per run (channel id → parent); the map starts over past this size.
const CHANNEL_CACHE_MAX: usize = 4096;

/// How to reach Discord.
#[derive(Clone)]
pub struct DiscordSettings {
    /// Bot token (`DISCORD_BOT_TOKEN`), sent as `Authorization: Bot <token>`.
    pub token: String,
    /// REST base URL, [`DEFAULT_API_BASE_URL`] in production; tests point it at a fake.
    /// The websocket URL comes from `GET /gateway/bot` on this base.
    pub api_base_url: String,
    /// Directory inbound attachments are saved in (under `<dir>/discord/`).
    pub media_dir: PathBuf,
    /// Largest inbound attachment kept, in bytes.
    pub max_media_bytes: u64,
    /// First reconnect delay (doubles per failed attempt).
    pub reconnect_initial: Duration,
    /// Longest reconnect delay.
    pub reconnect_max: Duration,
}

impl DiscordSettings {
    /// Production settings for `token`, saving attachments under `media_dir` (20 MB cap,
    /// reconnect backoff 1 s doubling up to 60 s).
    pub fn new(token: impl Into<String>, media_dir: impl Into<PathBuf>) -> DiscordSettings {
        DiscordSettings {
            token: token.into(),
            api_base_url: DEFAULT_API_BASE_URL.into(),
            media_dir: media_dir.into(),
            max_media_bytes: 20 * 1024 * 1024,
            reconnect_initial: Duration::from_secs(1),
            reconnect_max: Duration::from_secs(60),
        }
    }
}

hermes_protocol::debug_redacted!(DiscordSettings {
    secret: [token],
    shown: [
        api_base_url,
        media_dir,
        max_media_bytes,
        reconnect_initial,
        reconnect_max
    ],
});

/// The Discord [`PlatformAdapter`].
pub struct DiscordAdapter {
    settings: DiscordSettings,
    rest: rest::Rest,
}

impl DiscordAdapter {
    /// An adapter for `settings`. Connects nothing yet; errors only when the HTTP client
    /// cannot be built (`Transport`).
    pub fn new(settings: DiscordSettings) -> Result<DiscordAdapter, PlatformError> {
        let rest = rest::Rest::new(&settings.api_base_url, &settings.token)?;
        Ok(DiscordAdapter { settings, rest })
    }

    /// The channel a reply goes to: the thread when there is one (Discord threads are
    /// channels), else the chat.
    fn channel_of(target: &ChatTarget) -> &str {
        target.thread_id.as_deref().unwrap_or(&target.chat_id)
    }
}

/// Turns parsed messages into finished [`InboundMessage`]s in arrival order (thread
/// resolution and attachment downloads happen here, off the heartbeat loop).
async fn process_incoming(
    rest: rest::Rest,
    policy: MediaPolicy,
    mut raw: mpsc::Receiver<event::Incoming>,
    inbound: mpsc::Sender<InboundMessage>,
    stop: CancellationToken,
) {
    let mut threads: HashMap<String, Option<String>> = HashMap::new();
    loop {
        let incoming = tokio::select! {
            _ = stop.cancelled() => return,
            _ = inbound.closed() => { stop.cancel(); return; }
            m = raw.recv() => match m { Some(m) => m, None => return },
        };
        let mut msg = incoming.message;
        if msg.source.chat_type == ChatType::Group
            && let Some(channel) = msg.source.chat_id.clone()
        {
            let parent = match threads.get(&channel) {
                Some(p) => p.clone(),
                None => match rest.channel(&channel).await {
                    Ok(info) => {
                        if threads.len() >= CHANNEL_CACHE_MAX {
                            threads.clear();
                        }
                        threads.insert(channel.clone(), info.thread_parent.clone());
                        info.thread_parent
                    }
                    Err(e) => {
                        tracing::warn!(platform = PLATFORM, %channel, error = %e, "channel lookup failed; treating it as a plain channel");
                        None
                    }
                },
            };
            if let Some(parent) = parent {
                msg.source.thread_id = Some(channel);
                msg.source.chat_id = Some(parent);
            }
        }
        for (url, file) in &incoming.files {
            media::attach(
                &mut msg,
                media::download(PLATFORM, rest.http().get(url), file, &policy).await,
            );
        }
        if inbound.send(msg).await.is_err() {
            stop.cancel();
            return;
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for DiscordAdapter {
    fn single_connection(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        PLATFORM
    }

    /// 2000 chars, Discord Markdown, edits supported.
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            markup: Markup::DiscordMarkdown,
            supports_edit: true,
        }
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let stop = cancel.child_token();
        let _stop_guard = stop.clone().drop_guard();
        let (raw_tx, raw_rx) = mpsc::channel(256);
        let policy = MediaPolicy {
            dir: self.settings.media_dir.clone(),
            max_bytes: self.settings.max_media_bytes,
        };
        tokio::spawn(process_incoming(
            self.rest.clone(),
            policy,
            raw_rx,
            inbound,
            stop.clone(),
        ));
        let mut state = gateway::GatewayState::default();
        let mut backoff =
            Backoff::new(self.settings.reconnect_initial, self.settings.reconnect_max);
        loop {
            let wait = match gateway::connect_once(
                &self.rest,
                &self.settings.token,
                &mut state,
                &raw_tx,
                &stop,
            )
            .await
            {
                Ok(gateway::Outcome::Stop) => return Ok(()),
                Ok(gateway::Outcome::Reconnect {
                    healthy,
                    wait,
                    reason,
                }) => {
                    if healthy {
                        backoff.reset();
                    }
                    tracing::warn!(platform = PLATFORM, %reason, "gateway connection ended; reconnecting");
                    wait.unwrap_or_else(|| backoff.next_delay())
                }
                Err(e @ (PlatformError::Auth { .. } | PlatformError::Rejected { .. })) => {
                    return Err(e);
                }
                Err(PlatformError::RateLimited { retry_after, .. }) => {
                    retry_after.max(backoff.next_delay())
                }
                Err(e) => {
                    tracing::warn!(platform = PLATFORM, error = %e, "gateway connection failed; retrying");
                    backoff.next_delay()
                }
            };
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// `POST /channels/{id}/messages` (into the thread when the target has one), replying
    /// to `target.reply_to` when set; mass mentions in the text never ping.
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        self.rest
            .create_message(Self::channel_of(target), target, text)
            .await
    }

    async fn edit(
        &self,
        target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        self.rest
            .edit_message(Self::channel_of(target), &message.message_id, text)
            .await
    }

    /// Multipart `POST /channels/{id}/messages` with `payload_json` and `files[0]`.
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        self.rest
            .create_file_message(Self::channel_of(target), target, path, caption)
            .await
    }

    async fn typing(&self, target: &ChatTarget) -> Result<(), PlatformError> {
        self.rest.trigger_typing(Self::channel_of(target)).await
    }
}
