//! Mattermost adapter (issue 22): the REST API v4 ([`api`]) and the websocket event stream
//! ([`ws`]) of a self-hosted or cloud server, over our reqwest and tokio-tungstenite.
//!
//! Settings use Python Hermes' names ([`MattermostSettings::from_env`]): `MATTERMOST_URL`,
//! `MATTERMOST_TOKEN` (a bot account's or a personal access token),
//! `MATTERMOST_ALLOWED_USERS` / `MATTERMOST_ALLOW_ALL_USERS` (user ids; read by the gateway),
//! `MATTERMOST_REPLY_MODE` (`thread` or `off`, default `off`), `MATTERMOST_REQUIRE_MENTION`
//! (true), `MATTERMOST_FREE_RESPONSE_CHANNELS`, `MATTERMOST_ALLOWED_CHANNELS`,
//! `MATTERMOST_HOME_CHANNEL`.
//!
//! Chats are channel ids (DMs are channels of type `D`); threads are root post ids. Replies
//! are Markdown (Mattermost renders it), cut at 4000 characters as Python Hermes does (the
//! server's own limit is 16383); streamed answers are edited in place
//! (`PUT /posts/{id}/patch`). Each post carries a `pending_post_id`, which the server uses
//! to drop a repeated create, so a retry after a rate limit never posts twice.

mod api;
mod inbound;
mod ws;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::backoff::{Backoff, sleep_or_cancel};
use crate::platforms::media::{self, MediaPolicy, RemoteFile};

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "mattermost";
/// Chunk size in chars (Python Hermes' `MAX_POST_LENGTH`; the server allows 16383).
pub const MAX_POST_CHARS: usize = 4000;
/// Posts remembered for de-duplication.
const SEEN_MAX: usize = 2048;

/// Where replies go relative to the message answered (`MATTERMOST_REPLY_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// Top-level channel posts are answered in a thread under them.
    Thread,
    /// Answers go to the channel (or the thread the message was in).
    Off,
}

/// How to reach the server and which posts to read. `Debug` hides the token.
#[derive(Clone)]
pub struct MattermostSettings {
    /// Server base URL (`MATTERMOST_URL`, e.g. `https://mm.example.com`).
    pub url: String,
    /// The websocket URL when it is not `ws(s)://<url host>/api/v4/websocket` (a proxy
    /// that serves it elsewhere, a test double); `None`: derived from `url`.
    pub websocket_url: Option<String>,
    /// Bot or personal access token (`MATTERMOST_TOKEN`).
    pub token: String,
    /// Reply mode (`MATTERMOST_REPLY_MODE`, default `off`).
    pub reply_mode: ReplyMode,
    /// Outside DMs, read only posts that mention the bot (`MATTERMOST_REQUIRE_MENTION`,
    /// default true).
    pub require_mention: bool,
    /// Channels needing no mention (`MATTERMOST_FREE_RESPONSE_CHANNELS`).
    pub free_response_channels: Vec<String>,
    /// When not empty, the only channels read besides DMs (`MATTERMOST_ALLOWED_CHANNELS`).
    pub allowed_channels: Vec<String>,
    /// Directory inbound files are saved in (under `HERMES_HOME`).
    pub media_dir: PathBuf,
    /// Largest inbound file, in bytes (100 MiB).
    pub max_media_bytes: u64,
    /// First reconnect delay (2 s, doubling, jittered).
    pub reconnect_initial: Duration,
    /// Longest reconnect delay (60 s).
    pub reconnect_max: Duration,
    /// A websocket silent this long is pinged; twice as long, reconnected (30 s).
    pub ping_interval: Duration,
    /// A 429 waits what the server names and the call is made again (up to 3 tries) when
    /// the wait is at most this long (60 s).
    pub max_rate_limit_wait: Duration,
}

hermes_protocol::debug_redacted!(MattermostSettings {
    secret: [token],
    shown: [
        url,
        websocket_url,
        reply_mode,
        require_mention,
        free_response_channels,
        allowed_channels,
        media_dir,
        max_media_bytes,
        reconnect_initial,
        reconnect_max,
        ping_interval,
        max_rate_limit_wait,
    ],
});

fn bad(var: &str, detail: impl std::fmt::Display) -> PlatformError {
    PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("{var}: {detail}"),
    }
}

fn list(v: Option<String>) -> Vec<String> {
    v.map(|v| {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    })
    .unwrap_or_default()
}

impl MattermostSettings {
    /// Settings for `url` and `token`, everything else at its default.
    pub fn new(
        url: impl Into<String>,
        token: impl Into<String>,
        media_dir: impl Into<PathBuf>,
    ) -> MattermostSettings {
        MattermostSettings {
            url: url.into().trim_end_matches('/').to_string(),
            websocket_url: None,
            token: token.into(),
            reply_mode: ReplyMode::Off,
            require_mention: true,
            free_response_channels: Vec::new(),
            allowed_channels: Vec::new(),
            media_dir: media_dir.into(),
            max_media_bytes: 100 * 1024 * 1024,
            reconnect_initial: Duration::from_secs(2),
            reconnect_max: Duration::from_secs(60),
            ping_interval: Duration::from_secs(30),
            max_rate_limit_wait: Duration::from_secs(60),
        }
    }

    /// Reads the settings from the environment merged over `.env` (names in the module
    /// docs). `Ok(None)` when `MATTERMOST_TOKEN` is unset. Errors name the variable: the
    /// token without `MATTERMOST_URL`, a URL that is not `http(s)://`, a reply mode other
    /// than `thread`/`off`, a flag that is not true/false.
    pub fn from_env(
        env: &BTreeMap<String, String>,
        media_dir: &Path,
    ) -> Result<Option<MattermostSettings>, PlatformError> {
        let get = |k: &str| {
            env.get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let Some(token) = get("MATTERMOST_TOKEN") else {
            return Ok(None);
        };
        let Some(url) = get("MATTERMOST_URL") else {
            return Err(bad(
                "MATTERMOST_URL",
                "MATTERMOST_TOKEN is set but the server URL is not (e.g. https://mm.example.com)",
            ));
        };
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.contains(char::is_whitespace)
        {
            return Err(bad(
                "MATTERMOST_URL",
                format!("`{url}` is not an http(s):// URL"),
            ));
        }
        let mut s = MattermostSettings::new(url, token, media_dir);
        s.reply_mode = match get("MATTERMOST_REPLY_MODE")
            .map(|m| m.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("off") => ReplyMode::Off,
            Some("thread") => ReplyMode::Thread,
            Some(other) => {
                return Err(bad(
                    "MATTERMOST_REPLY_MODE",
                    format!("`{other}` is not one of: thread, off"),
                ));
            }
        };
        s.require_mention = match get("MATTERMOST_REQUIRE_MENTION")
            .map(|v| v.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("1" | "true" | "yes" | "on") => true,
            Some("0" | "false" | "no" | "off") => false,
            Some(other) => {
                return Err(bad(
                    "MATTERMOST_REQUIRE_MENTION",
                    format!("`{other}` is not true/false"),
                ));
            }
        };
        s.free_response_channels = list(get("MATTERMOST_FREE_RESPONSE_CHANNELS"));
        s.allowed_channels = list(get("MATTERMOST_ALLOWED_CHANNELS"));
        Ok(Some(s))
    }
}

/// The bot's identity (`GET /users/me`).
#[derive(Debug, Clone)]
pub(crate) struct Me {
    pub(crate) id: String,
    pub(crate) username: String,
}

/// The Mattermost [`PlatformAdapter`].
pub struct MattermostAdapter {
    settings: MattermostSettings,
    api: api::Api,
    me: tokio::sync::Mutex<Option<Me>>,
    seen: Mutex<(HashSet<String>, VecDeque<String>)>,
    connected: AtomicBool,
    pending: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MattermostAdapter {
    /// An adapter for `settings`. Errors: `Transport` when the HTTP client cannot be built.
    /// No request is made until a call needs one.
    pub fn new(settings: MattermostSettings) -> Result<MattermostAdapter, PlatformError> {
        let api = api::Api::new(&settings.url, &settings.token)?;
        Ok(MattermostAdapter {
            settings,
            api,
            me: tokio::sync::Mutex::new(None),
            seen: Mutex::new((HashSet::new(), VecDeque::new())),
            connected: AtomicBool::new(false),
            pending: AtomicU64::new(0),
        })
    }

    /// True while the websocket is connected (after `hello`).
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }

    /// The bot's identity, fetched once. `Auth` when the token is refused.
    pub(crate) async fn me(&self) -> Result<Me, PlatformError> {
        let mut slot = self.me.lock().await;
        if let Some(me) = slot.as_ref() {
            return Ok(me.clone());
        }
        let v = self
            .api
            .call("GET /users/me", self.api.request(Method::GET, "/users/me"))
            .await?;
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let (Some(id), username) = (field("id"), field("username").unwrap_or_default()) else {
            return Err(PlatformError::protocol(PLATFORM, "GET /users/me: no id"));
        };
        tracing::info!(platform = PLATFORM, user = %username, "logged in");
        let me = Me { id, username };
        *slot = Some(me.clone());
        Ok(me)
    }

    /// Downloads the post's files and hands it on, once per post id; `false` when the
    /// gateway stopped listening.
    pub(crate) async fn deliver(
        &self,
        incoming: inbound::Incoming,
        inbound: &mpsc::Sender<InboundMessage>,
    ) -> bool {
        let mut msg = incoming.msg;
        let id = msg.message_id.clone().unwrap_or_default();
        {
            let mut seen = lock(&self.seen);
            if !seen.0.insert(id.clone()) {
                tracing::debug!(platform = PLATFORM, "a post seen before skipped");
                return true;
            }
            seen.1.push_back(id.clone());
            if seen.1.len() > SEEN_MAX
                && let Some(old) = seen.1.pop_front()
            {
                seen.0.remove(&old);
            }
        }
        let policy = MediaPolicy {
            dir: self.settings.media_dir.clone(),
            max_bytes: self.settings.max_media_bytes,
        };
        for (i, file_id) in incoming.files.iter().enumerate() {
            let info = self
                .api
                .call(
                    "GET /files/{id}/info",
                    self.api
                        .request(Method::GET, &format!("/files/{file_id}/info")),
                )
                .await
                .unwrap_or(Value::Null);
            let file = RemoteFile {
                unique: format!("{id}-{i}"),
                file_name: info
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("file_{file_id}")),
                mime_type: info
                    .get("mime_type")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                declared_size: info.get("size").and_then(Value::as_u64),
            };
            let req = self.api.request(Method::GET, &format!("/files/{file_id}"));
            media::attach(
                &mut msg,
                media::download(PLATFORM, req, &file, &policy).await,
            );
        }
        tracing::info!(
            platform = PLATFORM,
            chat_type = msg.source.chat_type.as_str(),
            chars = msg.text.chars().count(),
            files = msg.attachments.len(),
            "message received"
        );
        inbound.send(msg).await.is_ok()
    }

    /// `POST /posts`, retried after a 429 whose wait is short enough; every try carries
    /// the same `pending_post_id`, so the server keeps one post.
    async fn create_post(&self, mut body: Value) -> Result<SentMessage, PlatformError> {
        let me = self.me().await?;
        let n = self.pending.fetch_add(1, Ordering::Relaxed);
        let millis = chrono::Utc::now().timestamp_millis();
        body["pending_post_id"] = json!(format!("{}:{}", me.id, millis * 1000 + (n % 1000) as i64));
        let mut attempt = 0;
        loop {
            attempt += 1;
            let req = self.api.request(Method::POST, "/posts").json(&body);
            match self.api.call("POST /posts", req).await {
                Ok(v) => {
                    let id = v
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| PlatformError::protocol(PLATFORM, "POST /posts: no id"))?;
                    tracing::info!(
                        platform = PLATFORM,
                        chars = body["message"]
                            .as_str()
                            .map(|m| m.chars().count())
                            .unwrap_or(0),
                        "message sent"
                    );
                    return Ok(SentMessage {
                        message_id: id.to_string(),
                    });
                }
                Err(PlatformError::RateLimited { retry_after, .. })
                    if attempt < 3 && retry_after <= self.settings.max_rate_limit_wait =>
                {
                    tracing::warn!(
                        platform = PLATFORM,
                        wait_ms = retry_after.as_millis() as u64,
                        "rate limited; posting again after the wait"
                    );
                    tokio::time::sleep(retry_after).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn post_body(target: &ChatTarget, text: &str) -> Value {
        let mut body = json!({"channel_id": target.chat_id, "message": text});
        if let Some(root) = &target.thread_id {
            body["root_id"] = json!(root);
        }
        body
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for MattermostAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_POST_CHARS,
            length_unit: LengthUnit::Chars,
            // Mattermost renders CommonMark-style Markdown, as Discord does.
            markup: Markup::DiscordMarkdown,
            supports_edit: true,
        }
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let mut backoff =
            Backoff::new(self.settings.reconnect_initial, self.settings.reconnect_max);
        let mut resume = ws::Resume::default();
        let result = loop {
            if cancel.is_cancelled() || inbound.is_closed() {
                break Ok(());
            }
            let outcome = match self.me().await {
                Ok(me) => self.connect_once(&me, &inbound, &cancel, &mut resume).await,
                Err(e) => Err(e),
            };
            self.connected.store(false, Ordering::SeqCst);
            let reason = match outcome {
                Ok(ws::Outcome::Stop) => break Ok(()),
                Err(e @ PlatformError::Auth { .. }) => {
                    tracing::error!(platform = PLATFORM, error = %e, "the server refused the token; check MATTERMOST_TOKEN");
                    break Err(e);
                }
                Err(e) => e.to_string(),
                Ok(ws::Outcome::Reconnect { healthy, reason }) => {
                    if healthy {
                        backoff.reset();
                    }
                    reason
                }
            };
            let delay = backoff.next_delay();
            tracing::warn!(platform = PLATFORM, reason = %reason, retry_in_ms = delay.as_millis() as u64, "websocket lost; reconnecting");
            if !sleep_or_cancel(delay, &cancel).await {
                break Ok(());
            }
        };
        self.connected.store(false, Ordering::SeqCst);
        result
    }

    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        self.create_post(Self::post_body(target, text)).await
    }

    async fn edit(
        &self,
        _target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        let req = self
            .api
            .request(Method::PUT, &format!("/posts/{}/patch", message.message_id))
            .json(&json!({"message": text}));
        self.api
            .call("PUT /posts/{id}/patch", req)
            .await
            .map(|_| ())
    }

    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let (bytes, name) = crate::platforms::http::read_upload(PLATFORM, path).await?;
        let form = reqwest::multipart::Form::new()
            .text("channel_id", target.chat_id.clone())
            .part(
                "files",
                reqwest::multipart::Part::bytes(bytes).file_name(name),
            );
        let req = self.api.request(Method::POST, "/files").multipart(form);
        let v = self.api.call("POST /files", req).await?;
        let id = v
            .pointer("/file_infos/0/id")
            .and_then(Value::as_str)
            .ok_or_else(|| PlatformError::protocol(PLATFORM, "POST /files: no file_infos[0].id"))?
            .to_string();
        let mut body = Self::post_body(target, caption.unwrap_or_default());
        body["file_ids"] = json!([id]);
        self.create_post(body).await
    }

    async fn typing(&self, target: &ChatTarget) -> Result<(), PlatformError> {
        let me = self.me().await?;
        let mut body = json!({"channel_id": target.chat_id});
        if let Some(root) = &target.thread_id {
            body["parent_id"] = json!(root);
        }
        let req = self
            .api
            .request(Method::POST, &format!("/users/{}/typing", me.id))
            .json(&body);
        self.api
            .call("POST /users/{id}/typing", req)
            .await
            .map(|_| ())
    }

    /// Every websocket of the bot gets every event: two replicas would each answer.
    fn single_connection(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<MattermostSettings>, PlatformError> {
        let env = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        MattermostSettings::from_env(&env, Path::new("/m"))
    }

    #[test]
    fn defaults_are_pythons_and_the_token_is_hidden() {
        assert!(read(&[]).unwrap().is_none());
        let s = read(&[
            ("MATTERMOST_URL", "https://mm.example/"),
            ("MATTERMOST_TOKEN", "SECRET-tok"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.url, "https://mm.example");
        assert_eq!(s.reply_mode, ReplyMode::Off);
        assert!(s.require_mention);
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("SECRET") && shown.contains("token: <redacted>"),
            "{shown}"
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = read(&[("MATTERMOST_TOKEN", "t")]).unwrap_err();
        assert!(e.to_string().contains("MATTERMOST_URL"), "{e}");
        let base = [("MATTERMOST_URL", "https://mm"), ("MATTERMOST_TOKEN", "t")];
        let with = |extra: (&str, &str)| {
            let mut v = base.to_vec();
            v.push(extra);
            read(&v).unwrap_err().to_string()
        };
        assert!(with(("MATTERMOST_REPLY_MODE", "nested")).contains("MATTERMOST_REPLY_MODE"));
        assert!(
            with(("MATTERMOST_REQUIRE_MENTION", "maybe")).contains("MATTERMOST_REQUIRE_MENTION")
        );
        let s = read(&[
            ("MATTERMOST_URL", "https://mm"),
            ("MATTERMOST_TOKEN", "t"),
            ("MATTERMOST_REPLY_MODE", "Thread"),
            ("MATTERMOST_REQUIRE_MENTION", "false"),
            ("MATTERMOST_ALLOWED_CHANNELS", "c1, c2"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.reply_mode, ReplyMode::Thread);
        assert!(!s.require_mention);
        assert_eq!(s.allowed_channels, vec!["c1", "c2"]);
    }
}
