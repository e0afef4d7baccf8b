//! Webhook mode (`TELEGRAM_WEBHOOK_URL`, Bot API `setWebhook`): Telegram POSTs each
//! `Update` to a public HTTPS URL instead of the bot asking for it with getUpdates. Unlike
//! long polling it needs no single connection, so every gateway replica serves it behind a
//! load balancer (issue 21 item 4) and the store's inbound claims run a message once.
//!
//! At start: getMe (a bad token ends `run` with `Auth`), then `setWebhook` with the URL and
//! the secret token (every replica registers the same values, which Telegram accepts as
//! "already set"); transport failures are retried with backoff. Each POST must carry
//! `X-Telegram-Bot-Api-Secret-Token` equal to `TELEGRAM_WEBHOOK_SECRET` (compared in constant
//! time; 401 otherwise) — the secret is required, as in Python Hermes (GHSA-3vpc-7q5r-276h),
//! since without it anyone who can reach the port could inject updates. An update is
//! answered 200 only after it was converted (media downloaded) and handed to the gateway, so
//! Telegram redelivers what a crash lost; a body that is not an `Update` gets 400, and 503
//! while the gateway shuts down (Telegram retries later). Stopping does not delete the
//! webhook: the other replicas keep receiving. Source: <https://core.telegram.org/bots/api#setwebhook>.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use subtle::ConstantTimeEq;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::TelegramAdapter;
use super::api::PLATFORM;
use super::poll::Step;
use super::types::Update;
use crate::error::PlatformError;
use crate::platform::InboundMessage;
use crate::platforms::backoff::{Backoff, sleep_or_cancel};
use crate::platforms::push::{PushListener, json_error, unavailable, url_host, url_path};
use crate::serve::ServeLimits;

/// Header Telegram puts the webhook's secret token in.
pub const SECRET_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";
/// Default local port of the webhook listener (`TELEGRAM_WEBHOOK_PORT`, as in Python Hermes).
pub const DEFAULT_WEBHOOK_PORT: u16 = 8443;
/// Path served when `TELEGRAM_WEBHOOK_URL` has none (as in Python Hermes).
pub const DEFAULT_WEBHOOK_PATH: &str = "/telegram";

/// How the bot receives updates in webhook mode. `Debug` hides the secret.
#[derive(Clone)]
pub struct TelegramWebhook {
    /// The public HTTPS URL registered with `setWebhook` (`TELEGRAM_WEBHOOK_URL`); its path
    /// is the route served (default [`DEFAULT_WEBHOOK_PATH`]) and its host a `Host` name the
    /// listener answers.
    pub url: String,
    /// Local listen address (`0.0.0.0:<TELEGRAM_WEBHOOK_PORT>` by default, as Python).
    pub bind: SocketAddr,
    /// `TELEGRAM_WEBHOOK_SECRET`: 1–256 characters of `A-Z a-z 0-9 _ -` (the Bot API's rule).
    pub secret: String,
    /// Listener limits (body cap 1 MiB by default: an update is a few KiB).
    pub limits: ServeLimits,
}

hermes_protocol::debug_redacted!(TelegramWebhook {
    secret: [secret],
    shown: [url, bind, limits],
});

impl TelegramWebhook {
    /// Webhook mode for `url` with `secret`, listening on `0.0.0.0:8443`.
    pub fn new(url: impl Into<String>, secret: impl Into<String>) -> TelegramWebhook {
        TelegramWebhook {
            url: url.into(),
            bind: SocketAddr::from(([0, 0, 0, 0], DEFAULT_WEBHOOK_PORT)),
            secret: secret.into(),
            limits: ServeLimits {
                max_body_bytes: 1024 * 1024,
                ..ServeLimits::default()
            },
        }
    }

    /// The route served: the URL's path.
    pub fn path(&self) -> String {
        url_path(&self.url, DEFAULT_WEBHOOK_PATH)
    }

    /// Checks the URL and the secret and binds the listener. Errors: `Auth` for a missing
    /// or malformed secret, `Rejected` for a URL without a host, `Transport` when the address
    /// cannot be bound.
    pub(crate) fn bind(&self) -> Result<PushListener, PlatformError> {
        let secret = self.secret.as_str();
        if secret.is_empty() {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail: "TELEGRAM_WEBHOOK_SECRET is required when TELEGRAM_WEBHOOK_URL is set \
                         (without it anyone who reaches the port can post forged updates); \
                         generate one with `openssl rand -hex 32`"
                    .into(),
            });
        }
        if secret.len() > 256
            || !secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail:
                    "TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z, a-z, 0-9, _ and - \
                         (Telegram refuses others)"
                        .into(),
            });
        }
        let Some(host) = url_host(&self.url) else {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!(
                    "TELEGRAM_WEBHOOK_URL {:?} has no host (expected https://host/path)",
                    self.url
                ),
            });
        };
        PushListener::bind(PLATFORM, self.bind, vec![host], self.limits)
    }
}

/// One received update and where to say whether it reached the gateway.
type Handoff = (Update, oneshot::Sender<bool>);

#[derive(Clone)]
struct HookState {
    secret: Arc<str>,
    handoff: mpsc::Sender<Handoff>,
}

async fn receive(State(state): State<HookState>, headers: HeaderMap, body: Bytes) -> Response {
    let given = headers
        .get(SECRET_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !bool::from(given.ct_eq(state.secret.as_bytes())) {
        tracing::warn!(
            platform = PLATFORM,
            "refused a webhook request without the right secret token"
        );
        return json_error(
            StatusCode::UNAUTHORIZED,
            &format!("missing or wrong {SECRET_HEADER}"),
        );
    }
    let update: Update = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(platform = PLATFORM, "a webhook body is not an Update: {e}");
            return json_error(
                StatusCode::BAD_REQUEST,
                &format!("body is not a Telegram Update: {e}"),
            );
        }
    };
    let (done, handed) = oneshot::channel();
    if state.handoff.send((update, done)).await.is_err() {
        return unavailable();
    }
    match handed.await {
        Ok(true) => (
            StatusCode::OK,
            axum::Json(serde_json::json!({ "ok": true })),
        )
            .into_response(),
        _ => unavailable(),
    }
}

impl TelegramAdapter {
    /// `setWebhook` until it succeeds (transport errors and flood control retried with
    /// backoff); `Ok(false)` when cancelled meanwhile. Errors: `Auth`, or `Rejected` when
    /// Telegram refuses the URL (not HTTPS, unresolvable host, bad port).
    async fn register_webhook(
        &self,
        hook: &TelegramWebhook,
        cancel: &CancellationToken,
        backoff: &mut Backoff,
    ) -> Result<bool, PlatformError> {
        let body = serde_json::json!({
            "url": hook.url,
            "secret_token": hook.secret,
            "allowed_updates": ["message", "channel_post"],
            "drop_pending_updates": false,
        });
        loop {
            let result = tokio::select! {
                r = self.api.call::<bool>("setWebhook", &body, None) => r,
                _ = cancel.cancelled() => return Ok(false),
            };
            match result {
                Ok(_) => return Ok(true),
                Err(e @ (PlatformError::Auth { .. } | PlatformError::Rejected { .. })) => {
                    return Err(e);
                }
                Err(e) => {
                    let delay = self.delay_after(&e, backoff);
                    tracing::warn!(
                        platform = PLATFORM,
                        "setWebhook failed, retrying in {} ms: {e}",
                        delay.as_millis()
                    );
                    if !sleep_or_cancel(delay, cancel).await {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// The body of [`crate::PlatformAdapter::run`] in webhook mode (see the module docs).
    pub(crate) async fn serve_webhook(
        &self,
        hook: &TelegramWebhook,
        listener: &PushListener,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let mut backoff = Backoff::new(self.settings.reconnect_base, self.settings.reconnect_max);
        let Some(me) = self.identify(&cancel, &mut backoff).await? else {
            return Ok(());
        };
        backoff.reset();
        if !self.register_webhook(hook, &cancel, &mut backoff).await? {
            return Ok(());
        }
        tracing::info!(platform = PLATFORM, bot_id = me.id, path = %hook.path(), "webhook registered");
        let stop = cancel.child_token();
        let (handoff, mut updates) = mpsc::channel::<Handoff>(64);
        let routes = Router::new()
            .route(&hook.path(), post(receive))
            .with_state(HookState {
                secret: hook.secret.as_str().into(),
                handoff,
            });
        let server = async {
            let served = listener.serve(routes, stop.clone().cancelled_owned()).await;
            stop.cancel();
            served
        };
        let forward = async {
            loop {
                let (update, done) = tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = inbound.closed() => break,
                    next = updates.recv() => match next {
                        Some(next) => next,
                        None => break,
                    },
                };
                let step = self.forward(&update, me.id, &inbound, &stop).await;
                let _ = done.send(matches!(step, Step::Continue));
                if matches!(step, Step::Stop) {
                    break;
                }
            }
            stop.cancel();
            // Updates queued but not forwarded are answered 503 (Telegram redelivers them).
            drop(updates);
        };
        let (served, ()) = tokio::join!(server, forward);
        served
    }
}
