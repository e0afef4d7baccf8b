//! The Events API over HTTP (`SLACK_SIGNING_SECRET`): Slack POSTs each event to the app's
//! Request URL instead of sending it over a Socket Mode connection. It needs no single
//! connection, so every gateway replica serves it behind a load balancer (issue 21 item 4);
//! a message delivered to two replicas (Slack retries an event not answered within 3 s) runs
//! once through the store's inbound claims.
//!
//! Every request is verified before it is read: `X-Slack-Request-Timestamp` within 5 minutes
//! of the clock and `X-Slack-Signature: v0=<hex>`, the HMAC-SHA256 keyed with the signing
//! secret of `v0:<timestamp>:<raw body>` (compared in constant time); anything else is
//! answered 401 and dropped. `url_verification` is answered with its `challenge`;
//! `event_callback` events become messages like Socket Mode's, answered 200 once handed to
//! the gateway (503 while it shuts down, so Slack delivers again). Other payload types get
//! 200 and are ignored. Source: Slack API docs, "Verifying requests from Slack" and "The
//! Events API".

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hmac::{KeyInit, Mac};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::event::parse_event;
use super::{PLATFORM, Raw};
use crate::error::PlatformError;
use crate::platforms::push::{PushListener, json_error, unavailable};
use crate::serve::ServeLimits;

/// Header with the request's Unix time in seconds.
pub const TIMESTAMP_HEADER: &str = "X-Slack-Request-Timestamp";
/// Header with `v0=<hex HMAC-SHA256>`.
pub const SIGNATURE_HEADER: &str = "X-Slack-Signature";
/// Requests further than this from the clock are refused (Slack's guidance: 5 minutes).
pub const REPLAY_WINDOW_S: i64 = 300;
/// Default path of the Request URL (Bolt's).
pub const DEFAULT_EVENTS_PATH: &str = "/slack/events";
/// Default local port (Bolt's).
pub const DEFAULT_EVENTS_PORT: u16 = 3000;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// How the Events API endpoint listens. `Debug` hides the signing secret.
#[derive(Clone)]
pub struct SlackEvents {
    /// The app's signing secret (`SLACK_SIGNING_SECRET`, Basic Information page).
    pub signing_secret: String,
    /// Listen address (`SLACK_EVENTS_HOST`/`SLACK_EVENTS_PORT`; default `127.0.0.1:3000`,
    /// for a reverse proxy or load balancer in front).
    pub bind: SocketAddr,
    /// Path of the Request URL (`SLACK_EVENTS_PATH`, default `/slack/events`).
    pub path: String,
    /// `Host` names served besides the bound address (`SLACK_EVENTS_ALLOWED_HOSTS`: the
    /// public name in the Request URL when the proxy passes it on).
    pub allowed_hosts: Vec<String>,
    /// Listener limits (body cap 1 MiB by default).
    pub limits: ServeLimits,
}

hermes_protocol::debug_redacted!(SlackEvents {
    secret: [signing_secret],
    shown: [bind, path, allowed_hosts, limits],
});

impl SlackEvents {
    /// The endpoint for `signing_secret` at its defaults.
    pub fn new(signing_secret: impl Into<String>) -> SlackEvents {
        SlackEvents {
            signing_secret: signing_secret.into(),
            bind: SocketAddr::from(([127, 0, 0, 1], DEFAULT_EVENTS_PORT)),
            path: DEFAULT_EVENTS_PATH.into(),
            allowed_hosts: Vec::new(),
            limits: ServeLimits {
                max_body_bytes: 1024 * 1024,
                ..ServeLimits::default()
            },
        }
    }

    /// Checks the settings and binds the listener. Errors: `Auth` for an empty secret,
    /// `Rejected` for a path not starting with `/`, `Transport` when the address cannot be
    /// bound.
    pub(crate) fn bind(&self) -> Result<PushListener, PlatformError> {
        if self.signing_secret.trim().is_empty() {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail: "SLACK_SIGNING_SECRET is empty".into(),
            });
        }
        if !self.path.starts_with('/') {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("SLACK_EVENTS_PATH {:?} must start with '/'", self.path),
            });
        }
        PushListener::bind(PLATFORM, self.bind, self.allowed_hosts.clone(), self.limits)
    }
}

/// The `X-Slack-Signature` value of `body` sent at `timestamp` with `secret`: `v0=` and 64
/// lowercase hex digits.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mac = mac_of(secret, timestamp, body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

fn mac_of(secret: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    mac
}

/// Checks a request's timestamp and signature at `now` (Unix seconds). Errors say what is
/// wrong, for the log and the 401 answer.
pub(crate) fn verify(
    secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<(), String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let timestamp: i64 = header(TIMESTAMP_HEADER)
        .ok_or(format!("missing {TIMESTAMP_HEADER}"))?
        .trim()
        .parse()
        .map_err(|_| format!("{TIMESTAMP_HEADER} is not a Unix time"))?;
    if (now - timestamp).abs() > REPLAY_WINDOW_S {
        return Err(format!(
            "{TIMESTAMP_HEADER} is more than {REPLAY_WINDOW_S} s from the clock"
        ));
    }
    let given = header(SIGNATURE_HEADER).ok_or(format!("missing {SIGNATURE_HEADER}"))?;
    let digits = given
        .trim()
        .strip_prefix("v0=")
        .ok_or(format!("{SIGNATURE_HEADER} does not start with v0="))?;
    let bytes = hex::decode(digits).map_err(|_| format!("{SIGNATURE_HEADER} is not hex"))?;
    mac_of(secret, timestamp, body)
        .verify_slice(&bytes)
        .map_err(|_| format!("{SIGNATURE_HEADER} does not match the body"))
}

#[derive(Clone)]
struct EventsState {
    secret: Arc<str>,
    bot_user_id: Arc<str>,
    raw: mpsc::Sender<Raw>,
}

async fn receive(State(state): State<EventsState>, headers: HeaderMap, body: Bytes) -> Response {
    let now = chrono::Utc::now().timestamp();
    if let Err(why) = verify(&state.secret, &headers, &body, now) {
        tracing::warn!(platform = PLATFORM, "refused an Events API request: {why}");
        return json_error(StatusCode::UNAUTHORIZED, &why);
    }
    let payload: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &format!("body is not valid JSON: {e}"),
            );
        }
    };
    let ok = || {
        (
            StatusCode::OK,
            axum::Json(serde_json::json!({ "ok": true })),
        )
            .into_response()
    };
    match payload.get("type").and_then(Value::as_str) {
        Some("url_verification") => {
            let challenge = payload.get("challenge").cloned().unwrap_or(Value::Null);
            (
                StatusCode::OK,
                axum::Json(serde_json::json!({ "challenge": challenge })),
            )
                .into_response()
        }
        Some("event_callback") => {
            let Some(incoming) = payload
                .get("event")
                .and_then(|e| parse_event(e, Some(&state.bot_user_id)))
            else {
                return ok();
            };
            let (done, handed) = oneshot::channel();
            if state.raw.send((incoming, Some(done))).await.is_err() {
                return unavailable();
            }
            match handed.await {
                Ok(true) => ok(),
                _ => unavailable(),
            }
        }
        _ => ok(),
    }
}

/// Serves the Events API endpoint on `listener` until `stop` fires, passing parsed messages
/// to `raw` (the adapter's message pipeline).
pub(crate) async fn serve(
    events: &SlackEvents,
    listener: &PushListener,
    bot_user_id: &str,
    raw: mpsc::Sender<Raw>,
    stop: CancellationToken,
) -> Result<(), PlatformError> {
    let routes = Router::new()
        .route(&events.path, post(receive))
        .with_state(EventsState {
            secret: events.signing_secret.as_str().into(),
            bot_user_id: bot_user_id.into(),
            raw,
        });
    tracing::info!(platform = PLATFORM, path = %events.path, "serving the Events API");
    listener.serve(routes, stop.cancelled_owned()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(ts: &str, sig: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(TIMESTAMP_HEADER, ts.parse().unwrap());
        h.insert(SIGNATURE_HEADER, sig.parse().unwrap());
        h
    }

    #[test]
    fn slack_documented_example_verifies() {
        // The worked example of Slack's "Verifying requests from Slack" page.
        let secret = "8f742231b10e8888abcd99yyyzzz85a5";
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(sign(secret, 1531420618, body), expected);
        let h = headers("1531420618", expected);
        assert_eq!(verify(secret, &h, body, 1531420618 + 10), Ok(()));
    }

    #[test]
    fn wrong_signature_old_timestamp_and_missing_headers_are_refused() {
        let secret = "s3cret";
        let body = br#"{"type":"event_callback"}"#;
        let now = 1_700_000_000;
        let good = sign(secret, now, body);
        assert!(verify(secret, &headers(&now.to_string(), &good), body, now).is_ok());
        let tampered = br#"{"type":"event_callback","x":1}"#;
        assert!(
            verify(secret, &headers(&now.to_string(), &good), tampered, now)
                .unwrap_err()
                .contains("does not match")
        );
        assert!(
            verify("other", &headers(&now.to_string(), &good), body, now).is_err(),
            "another secret"
        );
        let old = sign(secret, now - 301, body);
        assert!(
            verify(secret, &headers(&(now - 301).to_string(), &old), body, now)
                .unwrap_err()
                .contains("300 s")
        );
        assert!(
            verify(secret, &HeaderMap::new(), body, now)
                .unwrap_err()
                .contains("missing")
        );
        assert!(
            verify(secret, &headers(&now.to_string(), "sha256=00"), body, now)
                .unwrap_err()
                .contains("v0=")
        );
    }
}
