//! The few Mattermost REST API v4 calls the adapter makes (api.mattermost.com): `GET
//! /users/me`, `POST /posts`, `PUT /posts/{id}/patch`, `POST /users/{id}/typing`, `POST
//! /files`, `GET /files/{id}/info`, `GET /files/{id}`. Every call carries the bot token as
//! `Authorization: Bearer`.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::Value;

use super::PLATFORM;
use crate::error::PlatformError;

/// Wait assumed when a 429 names none.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// A REST client of one server with the bot token.
pub(crate) struct Api {
    http: reqwest::Client,
    base: String,
    auth: String,
}

/// An HTTP error status as a [`PlatformError`]: 401/403 `Auth`, 429 `RateLimited` (the
/// `Retry-After` header, else `X-Ratelimit-Reset`, seconds), 5xx `Transport`, other
/// `Rejected` with the server's `message`.
fn status_error(
    what: &str,
    status: StatusCode,
    retry_after: Option<&str>,
    reset: Option<&str>,
    body: &str,
) -> PlatformError {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| body.chars().take(200).collect());
    match status.as_u16() {
        401 | 403 => PlatformError::Auth {
            platform: PLATFORM.into(),
            detail: format!("{what}: HTTP {status}: {message}"),
        },
        429 => {
            let secs = retry_after
                .or(reset)
                .and_then(|h| h.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0);
            PlatformError::RateLimited {
                platform: PLATFORM.into(),
                retry_after: secs
                    .map(Duration::from_secs_f64)
                    .unwrap_or(DEFAULT_RETRY_AFTER),
            }
        }
        500..=599 => {
            PlatformError::transport(PLATFORM, format!("{what}: HTTP {status}: {message}"))
        }
        _ => PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail: format!("{what}: HTTP {status}: {message}"),
        },
    }
}

impl Api {
    /// A client of `base` (`https://mm.example.com`) with `token`.
    pub(crate) fn new(base: &str, token: &str) -> Result<Api, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| PlatformError::transport(PLATFORM, format!("HTTP client: {e}")))?;
        Ok(Api {
            http,
            base: base.trim_end_matches('/').to_string(),
            auth: format!("Bearer {token}"),
        })
    }

    /// The websocket URL (`ws(s)://…/api/v4/websocket`).
    pub(crate) fn websocket_url(&self) -> String {
        let rest = self
            .base
            .strip_prefix("https://")
            .map(|r| format!("wss://{r}"))
            .or_else(|| {
                self.base
                    .strip_prefix("http://")
                    .map(|r| format!("ws://{r}"))
            })
            .unwrap_or_else(|| self.base.clone());
        format!("{rest}/api/v4/websocket")
    }

    /// A request to `/api/v4{path}` with the token.
    pub(crate) fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}/api/v4{path}", self.base))
            .header(reqwest::header::AUTHORIZATION, &self.auth)
    }

    /// Sends `req` and reads the JSON answer (`Null` for an empty one).
    pub(crate) async fn call(
        &self,
        what: &str,
        req: RequestBuilder,
    ) -> Result<Value, PlatformError> {
        let resp = req
            .send()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("{what}: {e}")))?;
        let status = resp.status();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (retry_after, reset) = (header("retry-after"), header("x-ratelimit-reset"));
        let body = resp
            .text()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("{what}: reading: {e}")))?;
        if !status.is_success() {
            return Err(status_error(
                what,
                status,
                retry_after.as_deref(),
                reset.as_deref(),
                &body,
            ));
        }
        if body.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&body).map_err(|e| {
            PlatformError::protocol(PLATFORM, format!("{what}: answer is not JSON: {e}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_error_kinds() {
        let e = status_error(
            "x",
            StatusCode::UNAUTHORIZED,
            None,
            None,
            r#"{"message":"Invalid token"}"#,
        );
        assert!(matches!(e, PlatformError::Auth { .. }) && e.to_string().contains("Invalid token"));
        let e = status_error("x", StatusCode::TOO_MANY_REQUESTS, None, Some("3"), "");
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(3))
        );
        let e = status_error("x", StatusCode::TOO_MANY_REQUESTS, Some("1"), Some("3"), "");
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(1))
        );
        assert!(status_error("x", StatusCode::BAD_GATEWAY, None, None, "").is_retryable());
        assert!(matches!(
            status_error("x", StatusCode::BAD_REQUEST, None, None, "{}"),
            PlatformError::Rejected { .. }
        ));
    }

    #[test]
    fn websocket_url_follows_the_scheme() {
        let a = Api::new("https://mm.example.com/", "t").unwrap();
        assert_eq!(a.websocket_url(), "wss://mm.example.com/api/v4/websocket");
        let a = Api::new("http://127.0.0.1:8065", "t").unwrap();
        assert_eq!(a.websocket_url(), "ws://127.0.0.1:8065/api/v4/websocket");
    }
}
