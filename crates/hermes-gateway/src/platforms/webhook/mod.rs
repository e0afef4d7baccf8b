//! Generic webhook adapter: any system that can POST JSON talks to the agent.
//!
//! Inbound: `POST <path>` on a configurable address (default loopback) with
//! `X-Hermes-Timestamp: <unix seconds>` and `X-Hermes-Signature: sha256=<hex>`, the
//! HMAC-SHA256 keyed with `WEBHOOK_SECRET` of `<timestamp>.<raw body>` (see [`Signer`]). A
//! missing or wrong signature, or a timestamp outside the replay window, is answered 401 and
//! nothing is forwarded; a malformed body 400 with what is wrong; a body over the size cap
//! 413; an accepted message 202 only after it was handed to the gateway (503 when the
//! gateway is gone). A message seen before — the same `message_id`, or without one the same
//! signature — is answered 200 `{"ok":true,"duplicate":true}` and not forwarded again.
//! The listener runs behind [`crate::serve`]: `Host` must name it (421), browser requests
//! are refused (403), heads, bodies and idle connections time out, connections are capped.
//! Outbound: [`PlatformAdapter::send`] POSTs `{chat_id, thread_id, text}` to the configured
//! callback URL, signed the same way, retrying 5xx, 429 and network failures with backoff;
//! every attempt of one message carries the same `X-Hermes-Delivery` id so the receiver can
//! drop duplicates. Must not: authorize (it reports the caller's `user_id`), or format text.

mod inbound;
mod signature;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use signature::{SIGNATURE_HEADER, Signer, TIMESTAMP_HEADER};

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::backoff::Backoff;
use crate::platforms::push::{PushListener, json_error, unavailable};
use crate::serve::ServeLimits;

/// Default replay window of inbound timestamps, in seconds (either way).
pub const DEFAULT_REPLAY_WINDOW_S: u64 = 300;
/// Message ids remembered for de-duplication (oldest forgotten first).
const SEEN_CAPACITY: usize = 10_000;

const PLATFORM: &str = "webhook";
/// Header carrying one id per outbound message, the same on every retry.
pub const DELIVERY_HEADER: &str = "X-Hermes-Delivery";

/// How the webhook adapter listens and calls back. `Debug` hides the secret.
#[derive(Clone)]
pub struct WebhookSettings {
    /// Address the inbound endpoint listens on (default `127.0.0.1:8644`; port 0 picks one).
    pub bind: SocketAddr,
    /// Path of the inbound endpoint (default `/webhook`).
    pub path: String,
    /// Shared secret for the signatures both ways (`WEBHOOK_SECRET`); must not be empty.
    pub secret: String,
    /// Where replies are POSTed; `None` makes the adapter inbound-only (sends fail with
    /// `Unsupported`).
    pub callback_url: Option<String>,
    /// Largest inbound body in bytes (default 1 MiB); larger requests get 413.
    pub max_body_bytes: usize,
    /// Largest outbound text in chars the delivery layer should produce (default 20,000).
    pub max_message_len: usize,
    /// Attempts per outbound message, the first included (default 4).
    pub send_attempts: u32,
    /// First retry delay (doubles, jittered, up to `retry_max`; default 500 ms).
    pub retry_base: Duration,
    /// Longest retry delay (default 10 s).
    pub retry_max: Duration,
    /// Inbound timestamps further than this many seconds from the clock are refused
    /// (default 300).
    pub replay_window_s: u64,
    /// `Host` names served besides the bound address (`WEBHOOK_ALLOWED_HOSTS`).
    pub allowed_hosts: Vec<String>,
    /// Header/body timeouts and the connection cap of the listener (its `max_body_bytes`
    /// is replaced by [`WebhookSettings::max_body_bytes`]).
    pub limits: ServeLimits,
}

hermes_protocol::debug_redacted!(WebhookSettings {
    secret: [secret],
    shown: [
        bind,
        path,
        callback_url,
        max_body_bytes,
        max_message_len,
        send_attempts,
        retry_base,
        retry_max,
        replay_window_s,
        allowed_hosts,
        limits,
    ],
});

impl WebhookSettings {
    /// Defaults around `secret`: loopback port 8644, path `/webhook`, no callback.
    pub fn new(secret: impl Into<String>) -> WebhookSettings {
        WebhookSettings {
            bind: SocketAddr::from(([127, 0, 0, 1], 8644)),
            path: "/webhook".into(),
            secret: secret.into(),
            callback_url: None,
            max_body_bytes: 1024 * 1024,
            max_message_len: 20_000,
            send_attempts: 4,
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(10),
            replay_window_s: DEFAULT_REPLAY_WINDOW_S,
            allowed_hosts: Vec::new(),
            limits: ServeLimits::default(),
        }
    }
}

/// The webhook platform adapter. [`WebhookAdapter::bind`] opens the listening socket, so
/// address problems show at start and tests can learn the port before [`PlatformAdapter::run`].
#[derive(Debug)]
pub struct WebhookAdapter {
    settings: WebhookSettings,
    signer: Signer,
    listener: PushListener,
    http: reqwest::Client,
    sent: AtomicU64,
}

#[derive(Clone)]
struct ServerState {
    signer: Signer,
    inbound: mpsc::Sender<InboundMessage>,
    window_s: u64,
    /// De-duplication keys of accepted messages.
    seen: std::sync::Arc<std::sync::Mutex<lru::LruCache<String, ()>>>,
}

async fn receive(State(state): State<ServerState>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let signature = header(SIGNATURE_HEADER);
    let now = chrono::Utc::now().timestamp();
    if let Err(why) = state.signer.verify_timestamped(
        &body,
        header(TIMESTAMP_HEADER),
        signature,
        now,
        state.window_s,
    ) {
        tracing::warn!(platform = PLATFORM, "rejected a request: {why}");
        return json_error(StatusCode::UNAUTHORIZED, &why);
    }
    let message = match inbound::parse_body(&body) {
        Ok(m) => m,
        Err(why) => return json_error(StatusCode::BAD_REQUEST, &why),
    };
    let key = match &message.message_id {
        Some(id) => format!("id:{id}"),
        // The hex digits are accepted in either case (and the header trimmed): every
        // spelling of one signature is one request.
        None => format!(
            "sig:{}",
            signature.unwrap_or_default().trim().to_ascii_lowercase()
        ),
    };
    {
        let Ok(mut seen) = state.seen.lock() else {
            return json_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "duplicate filter poisoned",
            );
        };
        if seen.put(key.clone(), ()).is_some() {
            tracing::info!(
                platform = PLATFORM,
                "dropped a replayed or repeated message"
            );
            return (
                StatusCode::OK,
                axum::Json(serde_json::json!({ "ok": true, "duplicate": true })),
            )
                .into_response();
        }
    }
    match state.inbound.send(message).await {
        Ok(()) => (
            StatusCode::ACCEPTED,
            axum::Json(serde_json::json!({ "ok": true })),
        )
            .into_response(),
        Err(_) => {
            // Not handed over: a retry of the same message must be accepted.
            if let Ok(mut seen) = state.seen.lock() {
                seen.pop(&key);
            }
            unavailable()
        }
    }
}

impl WebhookAdapter {
    /// Checks the settings and binds the listening socket. Errors: `Auth` for an empty
    /// secret, `Rejected` for a path that does not start with `/`, `Transport` when the
    /// address cannot be bound.
    pub async fn bind(settings: WebhookSettings) -> Result<WebhookAdapter, PlatformError> {
        let signer = Signer::new(settings.secret.as_bytes())?;
        if !settings.path.starts_with('/') {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("webhook path {:?} must start with '/'", settings.path),
            });
        }
        let mut limits = settings.limits;
        limits.max_body_bytes = settings.max_body_bytes;
        let listener = PushListener::bind(
            PLATFORM,
            settings.bind,
            settings.allowed_hosts.clone(),
            limits,
        )?;
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| PlatformError::transport(PLATFORM, format!("HTTP client: {e}")))?;
        Ok(WebhookAdapter {
            settings,
            signer,
            listener,
            http,
            sent: AtomicU64::new(0),
        })
    }

    /// The address the inbound endpoint listens on (the real port when `bind` used port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// The signer for this adapter's secret (callback receivers and tests sign with it).
    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    fn delivery_id(&self) -> String {
        let n = self.sent.fetch_add(1, Ordering::Relaxed);
        format!("{:016x}-{n}", rand::random::<u64>())
    }

    async fn post_once(
        &self,
        url: &str,
        body: &[u8],
        signature: &str,
        delivery: &str,
    ) -> Result<serde_json::Value, PlatformError> {
        let response = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, signature)
            .header(DELIVERY_HEADER, delivery)
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| {
                PlatformError::transport(PLATFORM, format!("callback: {}", e.without_url()))
            })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let text = response.text().await.unwrap_or_default();
        if status.is_success() {
            return Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::Null));
        }
        let snippet: String = text.chars().take(200).collect();
        let detail = format!("callback answered HTTP {}: {snippet}", status.as_u16());
        if status.as_u16() == 429 {
            return Err(PlatformError::RateLimited {
                platform: PLATFORM.into(),
                retry_after: Duration::from_secs(retry_after.unwrap_or(1)),
            });
        }
        if status.is_server_error() {
            return Err(PlatformError::transport(PLATFORM, detail));
        }
        if status.as_u16() == 401 || status.as_u16() == 403 {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail,
            });
        }
        Err(PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail,
        })
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for WebhookAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    /// Plain text (the receiver gets the reply as written), `max_message_len` chars, no edits.
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: self.settings.max_message_len,
            length_unit: LengthUnit::Chars,
            markup: Markup::Plain,
            supports_edit: false,
        }
    }

    /// Serves the inbound endpoint until `cancel` fires or the receiver is dropped (requests
    /// in flight finish). Errors: `Unsupported` when called a second time.
    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let capacity =
            std::num::NonZeroUsize::new(SEEN_CAPACITY).unwrap_or(std::num::NonZeroUsize::MIN);
        let state = ServerState {
            signer: self.signer.clone(),
            inbound: inbound.clone(),
            window_s: self.settings.replay_window_s,
            seen: std::sync::Arc::new(std::sync::Mutex::new(lru::LruCache::new(capacity))),
        };
        let routes = Router::new()
            .route(&self.settings.path, post(receive))
            .with_state(state);
        tracing::info!(platform = PLATFORM, path = %self.settings.path, "webhook endpoint");
        self.listener
            .serve(routes, async move {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = inbound.closed() => {}
                }
            })
            .await
    }

    /// POSTs `{chat_id, thread_id, text}` to the callback URL (see the module docs for
    /// signing and retries). The message id is the callback's `message_id` answer when it
    /// gives one, else the delivery id. Errors: `Unsupported` without a callback URL,
    /// `Rejected` for a 4xx answer, `Auth` for 401/403, `Transport`/`RateLimited` when every
    /// attempt failed.
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        let Some(url) = self.settings.callback_url.as_deref() else {
            return Err(PlatformError::Unsupported {
                platform: PLATFORM.into(),
                what: "sending without a callback URL".into(),
            });
        };
        let body = serde_json::json!({
            "chat_id": target.chat_id,
            "thread_id": target.thread_id,
            "text": text,
        })
        .to_string()
        .into_bytes();
        let signature = self.signer.sign(&body);
        let delivery = self.delivery_id();
        let mut backoff = Backoff::new(self.settings.retry_base, self.settings.retry_max);
        let mut attempt = 1;
        loop {
            match self.post_once(url, &body, &signature, &delivery).await {
                Ok(answer) => {
                    let message_id = match &answer["message_id"] {
                        serde_json::Value::String(s) if !s.is_empty() => s.clone(),
                        serde_json::Value::Number(n) => n.to_string(),
                        _ => delivery,
                    };
                    return Ok(SentMessage { message_id });
                }
                Err(e) if e.is_retryable() && attempt < self.settings.send_attempts => {
                    let delay = match &e {
                        PlatformError::RateLimited { retry_after, .. } => {
                            (*retry_after).min(self.settings.retry_max)
                        }
                        _ => backoff.next_delay(),
                    };
                    tracing::warn!(
                        platform = PLATFORM,
                        attempt,
                        "callback failed, retrying in {} ms: {e}",
                        delay.as_millis()
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Webhook callbacks are one-shot; edits are not supported.
    async fn edit(
        &self,
        _target: &ChatTarget,
        _message: &SentMessage,
        _text: &str,
    ) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "editing a sent message".into(),
        })
    }

    /// The callback carries text only; files are not supported.
    async fn send_file(
        &self,
        _target: &ChatTarget,
        _path: &Path,
        _caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "sending files".into(),
        })
    }

    /// Nothing to show; always `Ok`.
    async fn typing(&self, _target: &ChatTarget) -> Result<(), PlatformError> {
        Ok(())
    }
}
