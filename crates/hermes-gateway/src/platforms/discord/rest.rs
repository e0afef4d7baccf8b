//! The few Discord REST calls the adapter needs (API v10, `Authorization: Bot <token>`):
//! `GET /gateway/bot`, `GET /channels/{id}`, `POST /channels/{id}/messages` (JSON or
//! multipart with a file), `PATCH /channels/{id}/messages/{id}`, `POST /channels/{id}/typing`.
//! Source: Discord developer docs, "Gateway" and "Channel"/"Message" resources.

use std::path::Path;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use crate::error::PlatformError;
use crate::platform::{ChatTarget, SentMessage};

use super::PLATFORM;

/// Per-request timeout of REST calls.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Used when a 429 carries no readable `retry_after`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A small typed Discord REST client on our reqwest.
#[derive(Clone)]
pub(crate) struct Rest {
    http: reqwest::Client,
    base: String,
    auth: String,
}

/// What `GET /channels/{id}` tells us: a thread's parent channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChannelInfo {
    /// `Some(parent)` when the channel is a thread (types 10, 11, 12).
    pub(crate) thread_parent: Option<String>,
}

/// Maps a non-success HTTP answer to a [`PlatformError`]: 401 → `Auth` (no retry loop),
/// 429 → `RateLimited` with the body's `retry_after` (seconds, fractional) or the
/// `Retry-After` header, 5xx → `Transport`, any other → `Rejected` with Discord's message.
pub(crate) fn status_error(
    what: &str,
    status: StatusCode,
    retry_after_header: Option<&str>,
    body: &str,
) -> PlatformError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| body.chars().take(200).collect());
    match status.as_u16() {
        401 => PlatformError::Auth {
            platform: PLATFORM.into(),
            detail: format!("{what}: HTTP 401: {message} (check DISCORD_BOT_TOKEN)"),
        },
        429 => {
            let secs = parsed
                .as_ref()
                .and_then(|v| v.get("retry_after"))
                .and_then(Value::as_f64)
                .or_else(|| retry_after_header.and_then(|h| h.trim().parse::<f64>().ok()));
            let retry_after = secs
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64)
                .unwrap_or(DEFAULT_RETRY_AFTER);
            PlatformError::RateLimited {
                platform: PLATFORM.into(),
                retry_after,
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

impl Rest {
    /// A client for `base` (for example `https://discord.com/api/v10`) with the bot token.
    pub(crate) fn new(base: &str, token: &str) -> Result<Rest, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!(
                "DiscordBot (https://example.invalid/hermes, ",
                env!("CARGO_PKG_VERSION"),
                ")"
            ))
            .build()
            .map_err(|e| {
                PlatformError::transport(PLATFORM, format!("building the HTTP client: {e}"))
            })?;
        Ok(Rest {
            http,
            base: base.trim_end_matches('/').to_owned(),
            auth: format!("Bot {token}"),
        })
    }

    /// The plain HTTP client (attachment downloads from Discord's CDN need no token).
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .header(reqwest::header::AUTHORIZATION, &self.auth)
    }

    /// Sends `req`; `Ok(None)` for an empty (204) answer, `Ok(Some(json))` otherwise.
    async fn call(&self, what: &str, req: RequestBuilder) -> Result<Option<Value>, PlatformError> {
        let crate::platforms::http::Answer {
            status,
            retry_after,
            body,
        } = crate::platforms::http::send(PLATFORM, what, req).await?;
        if !status.is_success() {
            return Err(status_error(what, status, retry_after.as_deref(), &body));
        }
        if body.trim().is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&body).map(Some).map_err(|e| {
            PlatformError::protocol(PLATFORM, format!("{what}: answer is not JSON: {e}"))
        })
    }

    /// `GET /gateway/bot` → the websocket URL to connect to.
    pub(crate) async fn gateway_url(&self) -> Result<String, PlatformError> {
        let v = self
            .call(
                "GET /gateway/bot",
                self.request(Method::GET, "/gateway/bot"),
            )
            .await?;
        v.as_ref()
            .and_then(|v| v.get("url"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                PlatformError::protocol(PLATFORM, "GET /gateway/bot: answer has no `url`")
            })
    }

    /// `GET /channels/{id}`: whether the channel is a thread, and of which parent.
    pub(crate) async fn channel(&self, id: &str) -> Result<ChannelInfo, PlatformError> {
        let v = self
            .call(
                "GET /channels/{id}",
                self.request(Method::GET, &format!("/channels/{id}")),
            )
            .await?
            .unwrap_or(Value::Null);
        let kind = v.get("type").and_then(Value::as_u64);
        let thread_parent = match kind {
            Some(10..=12) => v
                .get("parent_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        };
        Ok(ChannelInfo { thread_parent })
    }

    /// The body of a new message: content, no mass mentions from model text, and a
    /// `message_reference` when the target replies to a message.
    fn message_body(target: &ChatTarget, text: &str) -> Value {
        let mut body = json!({
            "content": text,
            "allowed_mentions": { "parse": [] },
        });
        if let Some(reply_to) = &target.reply_to {
            body["message_reference"] = json!({
                "message_id": reply_to,
                "fail_if_not_exists": false,
            });
        }
        body
    }

    fn sent(what: &str, v: Option<Value>) -> Result<SentMessage, PlatformError> {
        v.as_ref()
            .and_then(|v| v.get("id"))
            .and_then(Value::as_str)
            .map(|id| SentMessage {
                message_id: id.to_owned(),
            })
            .ok_or_else(|| {
                PlatformError::protocol(PLATFORM, format!("{what}: answer has no message `id`"))
            })
    }

    /// `POST /channels/{channel}/messages` with JSON content.
    pub(crate) async fn create_message(
        &self,
        channel: &str,
        target: &ChatTarget,
        text: &str,
    ) -> Result<SentMessage, PlatformError> {
        let what = "POST /channels/{id}/messages";
        let req = self
            .request(Method::POST, &format!("/channels/{channel}/messages"))
            .json(&Self::message_body(target, text));
        Self::sent(what, self.call(what, req).await?)
    }

    /// `PATCH /channels/{channel}/messages/{message}` with new content.
    pub(crate) async fn edit_message(
        &self,
        channel: &str,
        message: &str,
        text: &str,
    ) -> Result<(), PlatformError> {
        let req = self
            .request(
                Method::PATCH,
                &format!("/channels/{channel}/messages/{message}"),
            )
            .json(&json!({ "content": text }));
        self.call("PATCH /channels/{id}/messages/{id}", req)
            .await
            .map(|_| ())
    }

    /// `POST /channels/{channel}/messages` as multipart: `payload_json` plus `files[0]`.
    pub(crate) async fn create_file_message(
        &self,
        channel: &str,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let what = "POST /channels/{id}/messages (file)";
        let (bytes, name) = crate::platforms::http::read_upload(PLATFORM, path).await?;
        let mut payload = Self::message_body(target, caption.unwrap_or(""));
        payload["attachments"] = json!([{ "id": 0, "filename": name }]);
        let form = reqwest::multipart::Form::new()
            .text("payload_json", payload.to_string())
            .part(
                "files[0]",
                reqwest::multipart::Part::bytes(bytes).file_name(name),
            );
        let req = self
            .request(Method::POST, &format!("/channels/{channel}/messages"))
            .multipart(form);
        Self::sent(what, self.call(what, req).await?)
    }

    /// `POST /channels/{channel}/typing` (the indicator lasts about 10 s).
    pub(crate) async fn trigger_typing(&self, channel: &str) -> Result<(), PlatformError> {
        let req = self.request(Method::POST, &format!("/channels/{channel}/typing"));
        self.call("POST /channels/{id}/typing", req)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_reads_fractional_seconds_from_the_body() {
        let e = status_error(
            "x",
            StatusCode::TOO_MANY_REQUESTS,
            Some("9"),
            r#"{"message":"You are being rate limited.","retry_after":0.25,"global":false}"#,
        );
        match e {
            PlatformError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Duration::from_millis(250));
            }
            other => panic!("expected RateLimited, got {other:?}"),
        }
    }

    #[test]
    fn rate_limit_falls_back_to_the_header() {
        let e = status_error("x", StatusCode::TOO_MANY_REQUESTS, Some("2"), "not json");
        assert!(matches!(
            e,
            PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(2)
        ));
    }

    #[test]
    fn statuses_map_to_error_kinds() {
        assert!(matches!(
            status_error(
                "x",
                StatusCode::UNAUTHORIZED,
                None,
                r#"{"message":"401: Unauthorized"}"#
            ),
            PlatformError::Auth { .. }
        ));
        assert!(matches!(
            status_error("x", StatusCode::FORBIDDEN, None, r#"{"message":"Missing Access"}"#),
            PlatformError::Rejected { detail, .. } if detail.contains("Missing Access")
        ));
        assert!(matches!(
            status_error("x", StatusCode::BAD_GATEWAY, None, ""),
            PlatformError::Transport { .. }
        ));
    }
}
