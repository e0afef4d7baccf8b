//! Slack adapter (issue 7 §1): Socket Mode for inbound events (no public endpoint needed),
//! or the Events API over HTTP ([`events`]) when [`SlackSettings::events`] is set (every
//! replica receives), and the Web API with the bot token for replies, edits and files.
//!
//! Inbound: `message` and `app_mention` events become [`InboundMessage`]s — `channel_type`
//! `im` is a DM, `mpim` a group, `channel`/`group` a channel; `thread_ts` is the thread id,
//! `user` the stable user id, `ts` the message id. A mention in a channel arrives as both a
//! `message` and an `app_mention` event; the second copy is dropped (same channel and `ts`).
//! Display names come from `users.info` (cached; needs the `users:read` scope, optional).
//! The connection reconnects with capped jittered backoff; a rejected token ends
//! [`PlatformAdapter::run`] with `Auth`.

mod event;
pub mod events;
mod socket;
mod web;

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::backoff::Backoff;
use crate::platforms::media::{self, MediaPolicy};
use crate::platforms::push::PushListener;
pub use events::SlackEvents;

/// A parsed event on its way to [`process_incoming`], with where to say whether it reached
/// the gateway (the Events API answers Slack only then; Socket Mode acknowledged already).
pub(crate) type Raw = (event::Incoming, Option<tokio::sync::oneshot::Sender<bool>>);

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "slack";

/// Slack's Web API base.
pub const DEFAULT_API_BASE_URL: &str = "https://slack.com/api";

/// Largest chunk we send, in chars. Slack truncates `text` past 40,000 characters
/// (chat.postMessage docs); 1,000 are kept in reserve because Slack counts the text after
/// its own entity escaping (`&` → `&amp;`, `<` → `&lt;`), which lengthens it.
pub const MAX_MESSAGE_CHARS: usize = 39_000;

/// Message keys (`channel`/`ts`) remembered to drop duplicate deliveries.
const SEEN_MAX: usize = 1024;
/// Display names remembered (user id → name); the map starts over past this size.
const NAMES_MAX: usize = 4096;

/// Display names from `users.info`, cached (also a user Slack does not know); lookups stop
/// for good once the token lacks the `users:read` scope, since names are only for prompts
/// and logs.
struct Names {
    cache: std::collections::HashMap<String, Option<String>>,
    enabled: bool,
}

impl Names {
    async fn lookup(&mut self, web: &web::Web, user: &str) -> Option<String> {
        if let Some(name) = self.cache.get(user) {
            return name.clone();
        }
        if !self.enabled {
            return None;
        }
        match web.user_name(user).await {
            Ok(name) => {
                if self.cache.len() >= NAMES_MAX {
                    self.cache.clear();
                }
                self.cache.insert(user.to_owned(), name.clone());
                name
            }
            Err(PlatformError::Rejected { detail, .. }) => {
                if detail.ends_with("missing_scope") || detail.ends_with("not_allowed_token_type") {
                    tracing::info!(platform = PLATFORM, %detail, "no display names from users.info");
                    self.enabled = false;
                } else {
                    self.cache.insert(user.to_owned(), None);
                }
                None
            }
            Err(e) => {
                tracing::debug!(platform = PLATFORM, error = %e, "users.info failed");
                None
            }
        }
    }
}

/// How to reach Slack.
#[derive(Clone)]
pub struct SlackSettings {
    /// Bot token (`SLACK_BOT_TOKEN`, `xoxb-…`) for the Web API.
    pub bot_token: String,
    /// App-level token (`SLACK_APP_TOKEN`, `xapp-…`) for Socket Mode; unused (may be
    /// empty) with [`SlackSettings::events`].
    pub app_token: String,
    /// Web API base URL, [`DEFAULT_API_BASE_URL`] in production; tests point it at a fake.
    /// The websocket URL comes from `apps.connections.open` on this base.
    pub api_base_url: String,
    /// Directory inbound files are saved in (under `<dir>/slack/`).
    pub media_dir: PathBuf,
    /// Largest inbound file kept, in bytes.
    pub max_media_bytes: u64,
    /// First reconnect delay (doubles per failed attempt).
    pub reconnect_initial: Duration,
    /// Longest reconnect delay.
    pub reconnect_max: Duration,
    /// Idle time before a websocket ping; twice this without any frame means the
    /// connection is dead.
    pub ping_interval: Duration,
    /// The Events API over HTTP instead of Socket Mode (`SLACK_SIGNING_SECRET`).
    pub events: Option<SlackEvents>,
}

impl SlackSettings {
    /// Production settings (20 MB file cap, backoff 1 s doubling up to 60 s, ping after
    /// 30 s of silence).
    pub fn new(
        bot_token: impl Into<String>,
        app_token: impl Into<String>,
        media_dir: impl Into<PathBuf>,
    ) -> SlackSettings {
        SlackSettings {
            bot_token: bot_token.into(),
            app_token: app_token.into(),
            api_base_url: DEFAULT_API_BASE_URL.into(),
            media_dir: media_dir.into(),
            max_media_bytes: 20 * 1024 * 1024,
            reconnect_initial: Duration::from_secs(1),
            reconnect_max: Duration::from_secs(60),
            ping_interval: Duration::from_secs(30),
            events: None,
        }
    }
}

hermes_protocol::debug_redacted!(SlackSettings {
    secret: [bot_token, app_token],
    shown: [
        api_base_url,
        media_dir,
        max_media_bytes,
        reconnect_initial,
        reconnect_max,
        ping_interval,
        events,
    ],
});

/// The Slack [`PlatformAdapter`].
pub struct SlackAdapter {
    settings: SlackSettings,
    web: web::Web,
    /// The Events API listener, bound when the adapter is built (Events API mode only).
    push: Option<PushListener>,
}

impl SlackAdapter {
    /// An adapter for `settings`; with the Events API its listener is bound here. Connects
    /// nothing yet. Errors: `Transport` when the HTTP client cannot be built or the events
    /// address bound, `Auth`/`Rejected` for bad Events API settings
    /// ([`SlackEvents`]).
    pub fn new(settings: SlackSettings) -> Result<SlackAdapter, PlatformError> {
        let web = web::Web::new(
            &settings.api_base_url,
            &settings.bot_token,
            &settings.app_token,
        )?;
        let push = settings
            .events
            .as_ref()
            .map(SlackEvents::bind)
            .transpose()?;
        Ok(SlackAdapter {
            settings,
            web,
            push,
        })
    }

    /// The Events API listener's address (Events API mode only).
    pub fn events_addr(&self) -> Option<std::net::SocketAddr> {
        self.push.as_ref().map(PushListener::local_addr)
    }
}

/// Finishes parsed messages in arrival order: drops duplicates, downloads files.
async fn process_incoming(
    web: web::Web,
    policy: MediaPolicy,
    mut raw: mpsc::Receiver<Raw>,
    inbound: mpsc::Sender<InboundMessage>,
    stop: CancellationToken,
) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut order: VecDeque<String> = VecDeque::new();
    let mut names = Names {
        cache: std::collections::HashMap::new(),
        enabled: true,
    };
    loop {
        let (incoming, handed) = tokio::select! {
            _ = stop.cancelled() => return,
            _ = inbound.closed() => { stop.cancel(); return; }
            m = raw.recv() => match m { Some(m) => m, None => return },
        };
        let mut msg = incoming.message;
        let key = format!(
            "{}/{}",
            msg.source.chat_id.as_deref().unwrap_or_default(),
            msg.message_id.as_deref().unwrap_or_default()
        );
        if !seen.insert(key.clone()) {
            if let Some(handed) = handed {
                let _ = handed.send(true);
            }
            continue;
        }
        order.push_back(key);
        if order.len() > SEEN_MAX
            && let Some(old) = order.pop_front()
        {
            seen.remove(&old);
        }
        if msg.source.user_name.is_none()
            && let Some(user) = msg.source.user_id.clone()
        {
            msg.source.user_name = names.lookup(&web, &user).await;
        }
        for (url, file) in &incoming.files {
            media::attach(
                &mut msg,
                media::download(PLATFORM, web.authorized_get(url), file, &policy).await,
            );
        }
        if inbound.send(msg).await.is_err() {
            stop.cancel();
            return;
        }
        if let Some(handed) = handed {
            let _ = handed.send(true);
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for SlackAdapter {
    /// Socket Mode: one connection per app at a time (held by one replica); the Events API
    /// serves on every replica.
    fn single_connection(&self) -> bool {
        self.push.is_none()
    }

    fn name(&self) -> &str {
        PLATFORM
    }

    /// [`MAX_MESSAGE_CHARS`] chars, Slack mrkdwn, edits supported.
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            markup: Markup::SlackMrkdwn,
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
        let mut backoff =
            Backoff::new(self.settings.reconnect_initial, self.settings.reconnect_max);
        let bot_user_id = loop {
            let wait = match self.web.bot_user_id().await {
                Ok(id) => break id,
                Err(e @ (PlatformError::Auth { .. } | PlatformError::Rejected { .. })) => {
                    return Err(e);
                }
                Err(PlatformError::RateLimited { retry_after, .. }) => retry_after,
                Err(e) => {
                    tracing::warn!(platform = PLATFORM, error = %e, "auth.test failed; retrying");
                    backoff.next_delay()
                }
            };
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        };
        let (raw_tx, raw_rx) = mpsc::channel(256);
        let policy = MediaPolicy {
            dir: self.settings.media_dir.clone(),
            max_bytes: self.settings.max_media_bytes,
        };
        tokio::spawn(process_incoming(
            self.web.clone(),
            policy,
            raw_rx,
            inbound,
            stop.clone(),
        ));
        if let (Some(events), Some(listener)) = (&self.settings.events, &self.push) {
            return events::serve(events, listener, &bot_user_id, raw_tx, stop.clone()).await;
        }
        loop {
            let wait = match socket::connect_once(
                &self.web,
                &bot_user_id,
                &raw_tx,
                &stop,
                self.settings.ping_interval,
            )
            .await
            {
                Ok(socket::Outcome::Stop) => return Ok(()),
                Ok(socket::Outcome::Reconnect { healthy, reason }) => {
                    if healthy {
                        backoff.reset();
                    }
                    tracing::warn!(platform = PLATFORM, %reason, "Socket Mode connection ended; reconnecting");
                    backoff.next_delay()
                }
                Err(e @ (PlatformError::Auth { .. } | PlatformError::Rejected { .. })) => {
                    return Err(e);
                }
                Err(PlatformError::RateLimited { retry_after, .. }) => {
                    retry_after.max(backoff.next_delay())
                }
                Err(e) => {
                    tracing::warn!(platform = PLATFORM, error = %e, "Socket Mode connection failed; retrying");
                    backoff.next_delay()
                }
            };
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// `chat.postMessage`, into `target.thread_id` (a `thread_ts`) when set. Slack has no
    /// quoted replies, so `target.reply_to` is not used.
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        self.web.post_message(target, text).await
    }

    /// `chat.update`; `message.message_id` is the message's `ts`.
    async fn edit(
        &self,
        target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        self.web
            .update_message(target, &message.message_id, text)
            .await
    }

    /// External upload (`files.getUploadURLExternal`, POST of the bytes,
    /// `files.completeUploadExternal`); the returned id is the file id.
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        self.web.upload_file(target, path, caption).await
    }

    /// Slack has no typing indicator for bots: `Ok` without a call.
    async fn typing(&self, _target: &ChatTarget) -> Result<(), PlatformError> {
        Ok(())
    }
}
