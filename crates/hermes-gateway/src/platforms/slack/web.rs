//! The Slack Web API calls the adapter needs: `apps.connections.open` (app token, Socket
//! Mode), `auth.test`, `chat.postMessage`, `chat.update`, and the external upload flow for
//! files (`files.getUploadURLExternal` → POST the bytes to the returned URL →
//! `files.completeUploadExternal`; the older `files.upload` is retired by Slack).
//! Source: Slack API docs, "Web API" method pages and "Rate limits".

use std::path::Path;
use std::time::Duration;

use reqwest::{RequestBuilder, StatusCode};
use serde_json::{Value, json};

use crate::error::PlatformError;
use crate::platform::{ChatTarget, SentMessage};

use super::PLATFORM;

/// Per-request timeout of Web API calls.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Used when a rate-limit answer carries no `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// `error` values that mean the token itself is bad.
const AUTH_ERRORS: [&str; 5] = [
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
];

/// A small typed Slack Web API client on our reqwest.
#[derive(Clone)]
pub(crate) struct Web {
    http: reqwest::Client,
    base: String,
    bot_token: String,
    app_token: String,
}

/// Body of a Web API call.
enum Body {
    None,
    Json(Value),
    Form(Vec<(&'static str, String)>),
}

fn retry_after(header: Option<&str>) -> Duration {
    header
        .and_then(|h| h.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_RETRY_AFTER)
}

/// Maps an `ok: false` answer: `ratelimited` → `RateLimited`, a bad token
/// (`invalid_auth`, `not_authed`, …) → `Auth` naming the env var, anything else →
/// `Rejected` with the method and Slack's error code.
pub(crate) fn slack_error(
    method: &str,
    error: &str,
    retry_after_header: Option<&str>,
    token_var: &str,
) -> PlatformError {
    if error == "ratelimited" || error == "rate_limited" {
        PlatformError::RateLimited {
            platform: PLATFORM.into(),
            retry_after: retry_after(retry_after_header),
        }
    } else if AUTH_ERRORS.contains(&error) {
        PlatformError::Auth {
            platform: PLATFORM.into(),
            detail: format!("{method}: {error} (check {token_var})"),
        }
    } else {
        PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail: format!("{method}: {error}"),
        }
    }
}

impl Web {
    /// A client for `base` (for example `https://slack.com/api`).
    pub(crate) fn new(base: &str, bot_token: &str, app_token: &str) -> Result<Web, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| {
                PlatformError::transport(PLATFORM, format!("building the HTTP client: {e}"))
            })?;
        Ok(Web {
            http,
            base: base.trim_end_matches('/').to_owned(),
            bot_token: bot_token.to_owned(),
            app_token: app_token.to_owned(),
        })
    }

    /// A GET with the bot token (downloads of `url_private_download` need it).
    pub(crate) fn authorized_get(&self, url: &str) -> RequestBuilder {
        self.http.get(url).bearer_auth(&self.bot_token)
    }

    async fn send(
        &self,
        what: &str,
        req: RequestBuilder,
        token_var: &str,
    ) -> Result<Value, PlatformError> {
        let crate::platforms::http::Answer {
            status,
            retry_after: header,
            body,
        } = crate::platforms::http::send(PLATFORM, what, req).await?;
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(PlatformError::RateLimited {
                platform: PLATFORM.into(),
                retry_after: retry_after(header.as_deref()),
            });
        }
        if status.is_server_error() {
            return Err(PlatformError::transport(
                PLATFORM,
                format!("{what}: HTTP {status}"),
            ));
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail: format!("{what}: HTTP {status} (check {token_var})"),
            });
        }
        let v: Value = serde_json::from_str(&body).map_err(|e| {
            PlatformError::protocol(
                PLATFORM,
                format!("{what}: HTTP {status}, answer is not JSON: {e}"),
            )
        })?;
        if v.get("ok").and_then(Value::as_bool) == Some(true) {
            return Ok(v);
        }
        let error = v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown_error");
        Err(slack_error(what, error, header.as_deref(), token_var))
    }

    async fn call(&self, method: &str, app: bool, body: Body) -> Result<Value, PlatformError> {
        let (token, var) = if app {
            (&self.app_token, "SLACK_APP_TOKEN")
        } else {
            (&self.bot_token, "SLACK_BOT_TOKEN")
        };
        let req = self
            .http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(token);
        let req = match body {
            Body::None => req,
            Body::Json(v) => req.json(&v),
            Body::Form(f) => req.form(&f),
        };
        self.send(method, req, var).await
    }

    /// `apps.connections.open` with the app token (`xapp-…`) → the Socket Mode `wss://` URL.
    pub(crate) async fn open_connection(&self) -> Result<String, PlatformError> {
        let v = self.call("apps.connections.open", true, Body::None).await?;
        v.get("url")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                PlatformError::protocol(PLATFORM, "apps.connections.open: answer has no `url`")
            })
    }

    /// `auth.test` with the bot token → the bot's own user id (its messages are ignored).
    pub(crate) async fn bot_user_id(&self) -> Result<String, PlatformError> {
        let v = self.call("auth.test", false, Body::None).await?;
        v.get("user_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PlatformError::protocol(PLATFORM, "auth.test: answer has no `user_id`"))
    }

    /// `users.info` → the user's display name (`profile.display_name`, else
    /// `profile.real_name`, else `name`); `Ok(None)` when Slack gives none. Needs the
    /// `users:read` scope (without it Slack answers `missing_scope`, a `Rejected`).
    pub(crate) async fn user_name(&self, user: &str) -> Result<Option<String>, PlatformError> {
        let v = self
            .call(
                "users.info",
                false,
                Body::Form(vec![("user", user.to_owned())]),
            )
            .await?;
        let pick = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Ok(pick("/user/profile/display_name")
            .or_else(|| pick("/user/profile/real_name"))
            .or_else(|| pick("/user/name")))
    }

    /// `chat.postMessage` into `target.chat_id`, in the thread `target.thread_id` when set.
    pub(crate) async fn post_message(
        &self,
        target: &ChatTarget,
        text: &str,
    ) -> Result<SentMessage, PlatformError> {
        let mut body = json!({"channel": target.chat_id, "text": text});
        if let Some(ts) = &target.thread_id {
            body["thread_ts"] = json!(ts);
        }
        let v = self
            .call("chat.postMessage", false, Body::Json(body))
            .await?;
        v.get("ts")
            .and_then(Value::as_str)
            .map(|ts| SentMessage {
                message_id: ts.to_owned(),
            })
            .ok_or_else(|| {
                PlatformError::protocol(PLATFORM, "chat.postMessage: answer has no `ts`")
            })
    }

    /// `chat.update` of the message with timestamp `ts`.
    pub(crate) async fn update_message(
        &self,
        target: &ChatTarget,
        ts: &str,
        text: &str,
    ) -> Result<(), PlatformError> {
        let body = json!({"channel": target.chat_id, "ts": ts, "text": text});
        self.call("chat.update", false, Body::Json(body))
            .await
            .map(|_| ())
    }

    /// The external upload flow; returns the file id (Slack returns no message timestamp
    /// for it, so a file message cannot be edited).
    pub(crate) async fn upload_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let (bytes, name) = crate::platforms::http::read_upload(PLATFORM, path).await?;
        let v = self
            .call(
                "files.getUploadURLExternal",
                false,
                Body::Form(vec![
                    ("filename", name.clone()),
                    ("length", bytes.len().to_string()),
                ]),
            )
            .await?;
        let (Some(url), Some(file_id)) = (
            v.get("upload_url").and_then(Value::as_str),
            v.get("file_id").and_then(Value::as_str),
        ) else {
            return Err(PlatformError::protocol(
                PLATFORM,
                "files.getUploadURLExternal: answer lacks `upload_url` or `file_id`",
            ));
        };
        let resp =
            self.http.post(url).body(bytes).send().await.map_err(|e| {
                PlatformError::transport(PLATFORM, format!("uploading {name}: {e}"))
            })?;
        if !resp.status().is_success() {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("uploading {name}: HTTP {}", resp.status()),
            });
        }
        let mut form = vec![
            ("files", json!([{"id": file_id, "title": name}]).to_string()),
            ("channel_id", target.chat_id.clone()),
        ];
        if let Some(ts) = &target.thread_id {
            form.push(("thread_ts", ts.clone()));
        }
        if let Some(c) = caption {
            form.push(("initial_comment", c.to_owned()));
        }
        self.call("files.completeUploadExternal", false, Body::Form(form))
            .await?;
        Ok(SentMessage {
            message_id: file_id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_map_to_kinds() {
        assert!(matches!(
            slack_error("chat.postMessage", "ratelimited", Some("7"), "SLACK_BOT_TOKEN"),
            PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(7)
        ));
        for code in AUTH_ERRORS {
            let e = slack_error("auth.test", code, None, "SLACK_BOT_TOKEN");
            assert!(
                matches!(&e, PlatformError::Auth { detail, .. } if detail.contains("SLACK_BOT_TOKEN")),
                "{code}: {e:?}"
            );
        }
        assert!(matches!(
            slack_error("chat.postMessage", "channel_not_found", None, "SLACK_BOT_TOKEN"),
            PlatformError::Rejected { detail, .. } if detail == "chat.postMessage: channel_not_found"
        ));
    }
}
