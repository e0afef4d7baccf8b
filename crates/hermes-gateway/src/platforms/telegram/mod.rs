//! Telegram adapter: the Bot API over long polling, or in webhook mode ([`webhook`]) when
//! [`TelegramSettings::webhook`] is set (<https://core.telegram.org/bots/api>).
//!
//! Owns the Bot API client, the getUpdates loop with at-least-once offset handling, inbound
//! media downloads (size-capped, saved under the configured media directory) and sending:
//! MarkdownV2 text with a plain-text fallback when Telegram cannot parse the markup, edits,
//! photos/documents, typing. Must not: authorize users (it reports stable `from.id`s),
//! split or format replies (chunks arrive ready from the delivery layer), or pick sessions.

mod api;
mod inbound;
mod poll;
mod types;
pub mod webhook;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::push::PushListener;
use api::{BotApi, PLATFORM, is_markup_rejection, is_not_modified};
pub use webhook::TelegramWebhook;

/// The Bot API's public endpoint.
pub const DEFAULT_API_BASE_URL: &str = "https://api.telegram.org";
/// Largest file a bot may download through getFile (Bot API limit: 20 MB).
pub const DEFAULT_MAX_MEDIA_BYTES: u64 = 20 * 1024 * 1024;
/// Largest text message: 4096 UTF-16 code units after entity parsing (Bot API sendMessage).
pub const MAX_MESSAGE_UTF16: usize = 4096;
/// Largest caption: 1024 UTF-16 code units (Bot API sendPhoto/sendDocument).
pub const MAX_CAPTION_UTF16: usize = 1024;

/// How to reach and run one Telegram bot. `Debug` hides the token.
#[derive(Clone)]
pub struct TelegramSettings {
    /// Bot token from @BotFather (`TELEGRAM_BOT_TOKEN`).
    pub token: String,
    /// Bot API base URL without the `/bot<token>` part; tests point it at a loopback fake.
    pub api_base_url: String,
    /// Directory inbound photos, documents and voice notes are saved in (under `HERMES_HOME`).
    pub media_dir: PathBuf,
    /// Inbound files over this many bytes are not downloaded (the text says so instead).
    pub max_media_bytes: u64,
    /// Long-polling wait per getUpdates call (sent as `timeout` in whole seconds).
    pub poll_timeout: Duration,
    /// File holding the next getUpdates offset, saved after every forwarded update; `None`
    /// keeps it in memory only (a restart then relies on the Bot API's own acknowledgment).
    pub offset_file: Option<PathBuf>,
    /// First reconnect delay after a transport error (doubles up to `reconnect_max`, jittered).
    pub reconnect_base: Duration,
    /// Longest reconnect delay.
    pub reconnect_max: Duration,
    /// Sends that hit flood control (429) wait `retry_after` and try again, up to 3 times,
    /// when the wait is at most this long; longer waits return `RateLimited` to the caller.
    pub max_rate_limit_wait: Duration,
    /// Webhook mode (`TELEGRAM_WEBHOOK_URL`): Telegram pushes updates to a listener instead
    /// of long polling; every replica can serve it. `None` polls (one replica at a time).
    pub webhook: Option<TelegramWebhook>,
}

hermes_protocol::debug_redacted!(TelegramSettings {
    secret: [token],
    shown: [
        api_base_url,
        media_dir,
        max_media_bytes,
        poll_timeout,
        offset_file,
        reconnect_base,
        reconnect_max,
        max_rate_limit_wait,
        webhook,
    ],
});

impl TelegramSettings {
    /// Settings for `token` saving media in `media_dir`, everything else at its default
    /// (public API, 20 MB cap, 30 s long polls, no offset file, 1 s → 60 s reconnects).
    pub fn new(token: impl Into<String>, media_dir: impl Into<PathBuf>) -> TelegramSettings {
        TelegramSettings {
            token: token.into(),
            api_base_url: DEFAULT_API_BASE_URL.into(),
            media_dir: media_dir.into(),
            max_media_bytes: DEFAULT_MAX_MEDIA_BYTES,
            poll_timeout: Duration::from_secs(30),
            offset_file: None,
            reconnect_base: Duration::from_secs(1),
            reconnect_max: Duration::from_secs(60),
            max_rate_limit_wait: Duration::from_secs(60),
            webhook: None,
        }
    }
}

/// What happened to one text send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendReport {
    /// The message Telegram created.
    pub message: SentMessage,
    /// True when Telegram rejected the MarkdownV2 ("can't parse entities") and the chunk went
    /// out again as plain text with the escapes removed.
    pub fell_back_to_plain: bool,
}

/// The Telegram platform adapter.
#[derive(Debug)]
pub struct TelegramAdapter {
    api: BotApi,
    settings: TelegramSettings,
    plain_fallbacks: AtomicU64,
    /// The webhook listener, bound when the adapter is built (webhook mode only).
    push: Option<PushListener>,
}

impl TelegramAdapter {
    /// An adapter for `settings`; in webhook mode its listener is bound here. Errors: `Auth`
    /// when the token is empty or not a single line (it becomes part of the URL) or the
    /// webhook secret is missing or malformed, `Rejected` for a webhook URL without a host,
    /// `Transport` when the HTTP client cannot be built or the webhook address bound. No
    /// request is made until [`PlatformAdapter::run`].
    pub fn new(settings: TelegramSettings) -> Result<TelegramAdapter, PlatformError> {
        let token = settings.token.trim();
        if token.is_empty() || token.contains(['/', '\n', ' ', '?', '#']) {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail: "TELEGRAM_BOT_TOKEN is empty or malformed".into(),
            });
        }
        let api = BotApi::new(&settings.api_base_url, token)?;
        let push = settings
            .webhook
            .as_ref()
            .map(TelegramWebhook::bind)
            .transpose()?;
        Ok(TelegramAdapter {
            api,
            settings,
            plain_fallbacks: AtomicU64::new(0),
            push,
        })
    }

    /// The webhook listener's address (webhook mode only; the real port when bound to 0).
    pub fn webhook_addr(&self) -> Option<std::net::SocketAddr> {
        self.push.as_ref().map(PushListener::local_addr)
    }

    /// How many text sends or edits fell back to plain text since start (for status).
    pub fn plain_fallbacks(&self) -> u64 {
        self.plain_fallbacks.load(Ordering::Relaxed)
    }

    /// Sends one MarkdownV2 chunk; when Telegram cannot parse its markup, sends it again as
    /// plain text (escapes removed) and says so in the report (logged as a warning too).
    pub async fn send_reporting(
        &self,
        target: &ChatTarget,
        text: &str,
    ) -> Result<SendReport, PlatformError> {
        let mut body = target_body(target)?;
        body["text"] = serde_json::json!(text);
        body["parse_mode"] = serde_json::json!("MarkdownV2");
        match self
            .call_retrying::<types::SentMessage>("sendMessage", &body)
            .await
        {
            Ok(sent) => Ok(SendReport {
                message: sent_message(&sent),
                fell_back_to_plain: false,
            }),
            Err(e) if is_markup_rejection(&e) => {
                self.note_fallback(&e);
                body["text"] = serde_json::json!(unescape_markdown_v2(text));
                if let Some(map) = body.as_object_mut() {
                    map.remove("parse_mode");
                }
                let sent = self
                    .call_retrying::<types::SentMessage>("sendMessage", &body)
                    .await?;
                Ok(SendReport {
                    message: sent_message(&sent),
                    fell_back_to_plain: true,
                })
            }
            Err(e) => Err(e),
        }
    }

    fn note_fallback(&self, err: &PlatformError) {
        self.plain_fallbacks.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            platform = "telegram",
            "MarkdownV2 rejected, sending as plain text: {err}"
        );
    }

    /// Calls `method`, waiting out flood control (429) up to 3 times when Telegram's
    /// `retry_after` is within `max_rate_limit_wait`.
    async fn call_retrying<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        body: &serde_json::Value,
    ) -> Result<T, PlatformError> {
        let mut attempt = 0;
        loop {
            match self.api.call(method, body, None).await {
                Err(PlatformError::RateLimited { retry_after, .. })
                    if attempt < 3 && retry_after <= self.settings.max_rate_limit_wait =>
                {
                    attempt += 1;
                    tracing::info!(
                        platform = "telegram",
                        "{method}: flood control, waiting {} s",
                        retry_after.as_secs()
                    );
                    tokio::time::sleep(retry_after).await;
                }
                other => return other,
            }
        }
    }

    async fn upload(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let (bytes, file_name) = crate::platforms::http::read_upload(PLATFORM, path).await?;
        let (method, field) = if is_photo(path) {
            ("sendPhoto", "photo")
        } else {
            ("sendDocument", "document")
        };
        let mut plain = false;
        let mut attempt = 0;
        loop {
            let mut form = reqwest::multipart::Form::new().text("chat_id", target.chat_id.clone());
            if let Some(thread) = &target.thread_id {
                form = form.text("message_thread_id", thread.clone());
            }
            if let Some(reply) = &target.reply_to {
                let params = serde_json::json!({
                    "message_id": parse_id("reply_to", reply)?,
                    "allow_sending_without_reply": true,
                });
                form = form.text("reply_parameters", params.to_string());
            }
            if let Some(caption) = caption {
                if plain {
                    form = form.text("caption", unescape_markdown_v2(caption));
                } else {
                    form = form
                        .text("caption", caption.to_string())
                        .text("parse_mode", "MarkdownV2");
                }
            }
            form = form.part(
                field,
                reqwest::multipart::Part::bytes(bytes.clone()).file_name(file_name.clone()),
            );
            match self
                .api
                .call_multipart::<types::SentMessage>(method, form)
                .await
            {
                Ok(sent) => return Ok(sent_message(&sent)),
                Err(e) if !plain && is_markup_rejection(&e) => {
                    self.note_fallback(&e);
                    plain = true;
                }
                Err(PlatformError::RateLimited { retry_after, .. })
                    if attempt < 3 && retry_after <= self.settings.max_rate_limit_wait =>
                {
                    attempt += 1;
                    tokio::time::sleep(retry_after).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Removes MarkdownV2 escapes (`\.` → `.`, `\\` → `\`) so a chunk Telegram refused to parse
/// reads naturally as plain text. Other markup characters stay as they are.
pub fn unescape_markdown_v2(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(next) => out.push(next),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn is_photo(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    matches!(ext.as_str(), "jpg" | "jpeg" | "png" | "webp")
}

fn parse_id(what: &str, value: &str) -> Result<i64, PlatformError> {
    value.trim().parse().map_err(|_| PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("{what} {value:?} is not a Telegram id (a whole number)"),
    })
}

/// `chat_id`, `message_thread_id` and `reply_parameters` for a target.
fn target_body(target: &ChatTarget) -> Result<serde_json::Value, PlatformError> {
    let mut body = serde_json::json!({ "chat_id": parse_id("chat_id", &target.chat_id)? });
    if let Some(thread) = &target.thread_id {
        body["message_thread_id"] = serde_json::json!(parse_id("thread_id", thread)?);
    }
    if let Some(reply) = &target.reply_to {
        body["reply_parameters"] = serde_json::json!({
            "message_id": parse_id("reply_to", reply)?,
            "allow_sending_without_reply": true,
        });
    }
    Ok(body)
}

fn sent_message(sent: &types::SentMessage) -> SentMessage {
    SentMessage {
        message_id: sent.message_id.to_string(),
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for TelegramAdapter {
    /// Long polling allows one getUpdates caller per bot; webhook mode serves on every
    /// replica.
    fn single_connection(&self) -> bool {
        self.push.is_none()
    }

    fn name(&self) -> &str {
        PLATFORM
    }

    /// 4096 UTF-16 code units, MarkdownV2, edits supported (Bot API sendMessage /
    /// editMessageText).
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_UTF16,
            length_unit: LengthUnit::Utf16,
            markup: Markup::TelegramMarkdownV2,
            supports_edit: true,
        }
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        match (&self.settings.webhook, &self.push) {
            (Some(hook), Some(listener)) => {
                self.serve_webhook(hook, listener, inbound, cancel).await
            }
            _ => self.poll(inbound, cancel).await,
        }
    }

    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        Ok(self.send_reporting(target, text).await?.message)
    }

    /// editMessageText with MarkdownV2 (plain-text fallback as in sends); "message is not
    /// modified" counts as success.
    async fn edit(
        &self,
        target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        let mut body = serde_json::json!({
            "chat_id": parse_id("chat_id", &target.chat_id)?,
            "message_id": parse_id("message_id", &message.message_id)?,
            "text": text,
            "parse_mode": "MarkdownV2",
        });
        let result = match self
            .call_retrying::<serde_json::Value>("editMessageText", &body)
            .await
        {
            Err(e) if is_markup_rejection(&e) => {
                self.note_fallback(&e);
                body["text"] = serde_json::json!(unescape_markdown_v2(text));
                if let Some(map) = body.as_object_mut() {
                    map.remove("parse_mode");
                }
                self.call_retrying::<serde_json::Value>("editMessageText", &body)
                    .await
            }
            other => other,
        };
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_not_modified(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// sendPhoto for `.jpg/.jpeg/.png/.webp`, sendDocument otherwise (multipart upload); the
    /// caption is MarkdownV2 (≤ 1024 UTF-16 units) with the same plain-text fallback.
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        self.upload(target, path, caption).await
    }

    /// sendChatAction `typing` (shown for about 5 s or until the next message).
    async fn typing(&self, target: &ChatTarget) -> Result<(), PlatformError> {
        let mut body = serde_json::json!({
            "chat_id": parse_id("chat_id", &target.chat_id)?,
            "action": "typing",
        });
        if let Some(thread) = &target.thread_id {
            body["message_thread_id"] = serde_json::json!(parse_id("thread_id", thread)?);
        }
        self.api
            .call::<bool>("sendChatAction", &body, None)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescaping_removes_markdown_v2_escapes_only() {
        assert_eq!(
            unescape_markdown_v2(r"step\-1\. done \\ *bold*"),
            r"step-1. done \ *bold*"
        );
        assert_eq!(unescape_markdown_v2("trailing\\"), "trailing\\");
    }

    #[test]
    fn empty_or_malformed_token_is_an_auth_error() {
        for token in ["", "  ", "12:ab/cd", "12 34"] {
            let err = TelegramAdapter::new(TelegramSettings::new(token, "/tmp/m"));
            assert!(matches!(err, Err(PlatformError::Auth { .. })), "{token:?}");
        }
    }

    #[test]
    fn target_body_rejects_non_numeric_ids_with_the_field_name() {
        let target = ChatTarget {
            chat_id: "abc".into(),
            thread_id: None,
            reply_to: None,
        };
        let err = target_body(&target)
            .map(|_| ())
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("chat_id")));
    }
}
