//! The Graph API calls of the WhatsApp Cloud API adapter, with the access token as a Bearer
//! header: `POST /<version>/<phone-number-id>/messages` (text, media, read receipts),
//! `POST /<version>/<phone-number-id>/media` (upload), `GET /<version>/<media-id>` (the
//! download URL of an inbound file). Source: Meta for Developers, "WhatsApp Cloud API —
//! Messages", "Media" and "Error codes" reference pages.
//!
//! Errors are Graph's `{"error": {"message", "type", "code", "error_data": {"details"}}}`:
//! HTTP 429 and the throughput codes (4, 80007, 130429, 131056) are `RateLimited` and retried
//! here after the `Retry-After` hint (a refused call was not delivered, so a retry cannot send
//! twice); 190 and HTTP 401/403 are `Auth`; 5xx are `Transport` (not retried: Meta may
//! have accepted the message); everything else is `Rejected` with Meta's code and words.

use std::path::Path;
use std::time::Duration;

use reqwest::RequestBuilder;
use serde_json::{Value, json};

use super::PLATFORM;
use crate::error::PlatformError;
use crate::platforms::http;

/// Meta's error code for a free-form message outside the 24-hour customer service window
/// ("Re-engagement message").
pub(crate) const OUTSIDE_WINDOW: i64 = 131047;
/// Graph error codes that mean "too many calls, try later" (Meta "Error codes": 4 app rate
/// limit, 80007 WABA rate limit, 130429 throughput, 131056 pair rate limit).
const THROTTLED: [i64; 4] = [4, 80007, 130429, 131056];
/// Wait used when a throttled answer carries no `Retry-After`.
const DEFAULT_RETRY: Duration = Duration::from_secs(2);

/// A failed call: the error for the caller, and Meta's error code when it gave one.
#[derive(Debug)]
pub(crate) struct Failure {
    /// Meta's `error.code`.
    pub(crate) code: Option<i64>,
    /// The error to return.
    pub(crate) error: PlatformError,
}

impl From<PlatformError> for Failure {
    fn from(error: PlatformError) -> Failure {
        Failure { code: None, error }
    }
}

/// The Graph API client of one phone number. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Graph {
    http: reqwest::Client,
    /// `<base>/<version>`.
    root: String,
    phone_number_id: String,
    token: String,
    attempts: u32,
    retry_max: Duration,
}

/// Classifies a non-success answer (see the module docs).
pub(crate) fn classify(status: u16, retry_after: Option<&str>, body: &str) -> Failure {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let err = &parsed["error"];
    let code = err["code"].as_i64();
    let message = err["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| body.chars().take(200).collect());
    let details = err["error_data"]["details"].as_str().unwrap_or_default();
    let mut detail = match code {
        Some(c) => format!("Graph error {c} (HTTP {status}): {message}"),
        None => format!("HTTP {status}: {message}"),
    };
    if !details.is_empty() && !message.contains(details) {
        detail.push_str(&format!(" — {details}"));
    }
    let platform = PLATFORM.to_string();
    let error = if status == 429 || code.is_some_and(|c| THROTTLED.contains(&c)) {
        let wait = retry_after
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_RETRY);
        PlatformError::RateLimited {
            platform,
            retry_after: wait,
        }
    } else if code == Some(190) || status == 401 || status == 403 {
        PlatformError::Auth { platform, detail }
    } else if status >= 500 {
        PlatformError::Transport { platform, detail }
    } else {
        PlatformError::Rejected { platform, detail }
    };
    Failure { code, error }
}

impl Graph {
    /// A client for `base_url` (`https://graph.facebook.com`), `version` (`v20.0`), one phone
    /// number id and token. `attempts`: tries per call while Meta throttles (the first
    /// included); `retry_max`: the longest wait between them.
    pub(crate) fn new(
        base_url: &str,
        version: &str,
        phone_number_id: &str,
        token: &str,
        attempts: u32,
        retry_max: Duration,
    ) -> Result<Graph, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| PlatformError::transport(PLATFORM, format!("HTTP client: {e}")))?;
        Ok(Graph {
            http,
            root: format!(
                "{}/{}",
                base_url.trim_end_matches('/'),
                version.trim_matches('/')
            ),
            phone_number_id: phone_number_id.to_string(),
            token: token.to_string(),
            attempts: attempts.max(1),
            retry_max,
        })
    }

    fn phone_url(&self, what: &str) -> String {
        format!("{}/{}/{what}", self.root, self.phone_number_id)
    }

    /// A GET of `url` with the token (media downloads need it: Meta "Download media").
    pub(crate) fn authorized_get(&self, url: &str) -> RequestBuilder {
        self.http.get(url).bearer_auth(&self.token)
    }

    /// Sends the request `build` makes, again after the wait Meta asks for while it
    /// throttles, and reads the JSON answer.
    async fn call(&self, what: &str, build: impl Fn() -> RequestBuilder) -> Result<Value, Failure> {
        let mut attempt = 1;
        loop {
            let answer = http::send(PLATFORM, what, build().bearer_auth(&self.token)).await?;
            if answer.status.is_success() {
                return serde_json::from_str(&answer.body).map_err(|e| {
                    Failure::from(PlatformError::protocol(PLATFORM, format!("{what}: {e}")))
                });
            }
            let failure = classify(
                answer.status.as_u16(),
                answer.retry_after.as_deref(),
                &answer.body,
            );
            match &failure.error {
                PlatformError::RateLimited { retry_after, .. } if attempt < self.attempts => {
                    let wait = (*retry_after).min(self.retry_max);
                    tracing::warn!(
                        platform = PLATFORM,
                        call = what,
                        attempt,
                        "throttled by Meta; retrying in {} ms",
                        wait.as_millis()
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                _ => return Err(failure),
            }
        }
    }

    /// POSTs one message object (`to`, `type` and its block) and returns its `wamid`.
    async fn post_message(&self, mut message: Value) -> Result<String, Failure> {
        message["messaging_product"] = json!("whatsapp");
        message["recipient_type"] = json!("individual");
        let url = self.phone_url("messages");
        let answer = self
            .call("messages", || self.http.post(&url).json(&message))
            .await?;
        answer["messages"][0]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                Failure::from(PlatformError::protocol(
                    PLATFORM,
                    "messages: the answer has no messages[0].id",
                ))
            })
    }

    /// Sends `text` to `to` (a `wa_id`), quoting `context` when given.
    pub(crate) async fn send_text(
        &self,
        to: &str,
        text: &str,
        context: Option<&str>,
    ) -> Result<String, Failure> {
        let mut message = json!({
            "to": to,
            "type": "text",
            "text": {"body": text, "preview_url": false},
        });
        if let Some(id) = context {
            message["context"] = json!({ "message_id": id });
        }
        self.post_message(message).await
    }

    /// Uploads `path` as `mime` and returns the media id.
    pub(crate) async fn upload(&self, path: &Path, mime: &str) -> Result<String, Failure> {
        let (bytes, name) = http::read_upload(PLATFORM, path).await?;
        let url = self.phone_url("media");
        let answer = self
            .call("media", || {
                let part = reqwest::multipart::Part::bytes(bytes.clone())
                    .file_name(name.clone())
                    .mime_str(mime)
                    .unwrap_or_else(|_| reqwest::multipart::Part::bytes(bytes.clone()));
                let form = reqwest::multipart::Form::new()
                    .text("messaging_product", "whatsapp")
                    .text("type", mime.to_string())
                    .part("file", part);
                self.http.post(&url).multipart(form)
            })
            .await?;
        answer["id"].as_str().map(str::to_owned).ok_or_else(|| {
            Failure::from(PlatformError::protocol(
                PLATFORM,
                "media: the answer has no id",
            ))
        })
    }

    /// Sends uploaded media `id` as a `kind` message (`image`, `video`, `audio`,
    /// `document`); `caption` where Meta takes one, `filename` for documents.
    pub(crate) async fn send_media(
        &self,
        to: &str,
        kind: &str,
        id: &str,
        caption: Option<&str>,
        filename: Option<&str>,
    ) -> Result<String, Failure> {
        let mut block = json!({ "id": id });
        if let Some(c) = caption.filter(|_| kind != "audio") {
            block["caption"] = json!(c);
        }
        if let Some(f) = filename.filter(|_| kind == "document") {
            block["filename"] = json!(f);
        }
        let mut message = json!({ "to": to, "type": kind });
        message[kind] = block;
        self.post_message(message).await
    }

    /// Marks `wamid` read (blue ticks) and, with `typing`, shows "typing…" until the reply
    /// or 25 s (Meta "Mark messages as read" / "Typing indicators").
    pub(crate) async fn mark_read(&self, wamid: &str, typing: bool) -> Result<(), Failure> {
        let mut body = json!({
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": wamid,
        });
        if typing {
            body["typing_indicator"] = json!({ "type": "text" });
        }
        let url = self.phone_url("messages");
        self.call("messages (read)", || self.http.post(&url).json(&body))
            .await
            .map(|_| ())
    }

    /// The download URL, MIME type and size of inbound media `id` (`GET /<media-id>`).
    pub(crate) async fn media_info(
        &self,
        id: &str,
    ) -> Result<(String, Option<String>, Option<u64>), Failure> {
        let url = format!("{}/{id}", self.root);
        let answer = self.call("media info", || self.http.get(&url)).await?;
        let link = answer["url"].as_str().map(str::to_owned).ok_or_else(|| {
            Failure::from(PlatformError::protocol(PLATFORM, "media info has no url"))
        })?;
        let size = match &answer["file_size"] {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        };
        Ok((link, answer["mime_type"].as_str().map(str::to_owned), size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_errors_are_classified() {
        // Meta "Error codes": the re-engagement error as the Cloud API returns it.
        let outside = r#"{"error":{"message":"(#131047) Re-engagement message","type":"OAuthException","code":131047,"error_data":{"messaging_product":"whatsapp","details":"Message failed to send because more than 24 hours have passed since the customer last replied to this number."},"fbtrace_id":"AbC"}}"#;
        let f = classify(400, None, outside);
        assert_eq!(f.code, Some(OUTSIDE_WINDOW));
        let PlatformError::Rejected { detail, .. } = &f.error else {
            panic!("{:?}", f.error);
        };
        assert!(
            detail.contains("131047") && detail.contains("24 hours"),
            "{detail}"
        );
        let throttled = r#"{"error":{"message":"(#130429) Rate limit hit","code":130429}}"#;
        match classify(400, Some("7"), throttled).error {
            PlatformError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Duration::from_secs(7))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            classify(429, None, "").error,
            PlatformError::RateLimited { retry_after, .. } if retry_after == DEFAULT_RETRY
        ));
        let token = r#"{"error":{"message":"Invalid OAuth access token.","code":190}}"#;
        assert!(matches!(
            classify(400, None, token).error,
            PlatformError::Auth { .. }
        ));
        assert!(classify(502, None, "Bad Gateway").error.is_retryable());
    }
}
