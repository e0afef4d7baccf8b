//! A small typed client for the Telegram Bot API methods the adapter uses
//! (<https://core.telegram.org/bots/api#making-requests>): JSON POSTs to
//! `<base>/bot<token>/<method>`, multipart uploads, and file downloads from
//! `<base>/file/bot<token>/<path>`.
//!
//! Error mapping (Bot API `error_code`, else the HTTP status): 401/404 → `Auth` (the token is
//! wrong; 404 is what the API answers for a malformed token), 429 → `RateLimited` with
//! `parameters.retry_after`, 400/403 → `Rejected` (bad markup, unknown chat, bot blocked),
//! 409 (another poller) and 5xx → `Transport`, network failures → `Transport`, an answer that
//! is not the Bot API's JSON envelope → `Protocol`. URLs contain the token, so no error text
//! produced here includes a URL.

use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio::io::AsyncWriteExt;

use super::types::ApiResponse;
use crate::error::PlatformError;

/// Platform name used in errors.
pub(crate) const PLATFORM: &str = "telegram";

/// Timeout of ordinary calls (sendMessage, getFile, …).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Timeout of uploads and downloads.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

/// The Bot API endpoint of one bot.
#[derive(Debug, Clone)]
pub(crate) struct BotApi {
    base: String,
    token: String,
    http: reqwest::Client,
}

/// Why a download did not produce a file.
#[derive(Debug)]
pub(crate) enum DownloadError {
    /// The file is larger than the cap (bytes seen so far or announced).
    TooLarge(u64),
    /// Network, HTTP or disk failure.
    Failed(String),
}

/// Maps a failed Bot API answer to a [`PlatformError`] (rules in the module docs).
pub(crate) fn classify(
    method: &str,
    code: u16,
    description: &str,
    retry_after: Option<u64>,
    migrate_to: Option<i64>,
) -> PlatformError {
    let platform = PLATFORM.to_string();
    let mut detail = format!("{method}: {code} {description}");
    if let Some(id) = migrate_to {
        detail.push_str(&format!(" (the group is now supergroup {id})"));
    }
    match code {
        401 | 404 => PlatformError::Auth { platform, detail },
        429 => PlatformError::RateLimited {
            platform,
            retry_after: Duration::from_secs(retry_after.unwrap_or(1).max(1)),
        },
        409 | 500..=599 => PlatformError::Transport { platform, detail },
        _ => PlatformError::Rejected { platform, detail },
    }
}

/// True for the 400 Telegram answers when MarkdownV2 in a text does not parse.
pub(crate) fn is_markup_rejection(err: &PlatformError) -> bool {
    match err {
        PlatformError::Rejected { detail, .. } => {
            detail.to_ascii_lowercase().contains("can't parse entities")
        }
        _ => false,
    }
}

/// True for the 400 Telegram answers when an edit would not change the message.
pub(crate) fn is_not_modified(err: &PlatformError) -> bool {
    match err {
        PlatformError::Rejected { detail, .. } => detail.contains("message is not modified"),
        _ => false,
    }
}

impl BotApi {
    /// A client for `base` (e.g. `https://api.telegram.org`, or a loopback fake in tests).
    pub(crate) fn new(base: &str, token: &str) -> Result<BotApi, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| {
                PlatformError::transport(PLATFORM, format!("HTTP client: {}", e.without_url()))
            })?;
        Ok(BotApi {
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            http,
        })
    }

    fn method_url(&self, method: &str) -> String {
        format!("{}/bot{}/{}", self.base, self.token, method)
    }

    /// Calls `method` with a JSON body; `timeout` bounds the whole request.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        body: &serde_json::Value,
        timeout: Option<Duration>,
    ) -> Result<T, PlatformError> {
        let request = self
            .http
            .post(self.method_url(method))
            .timeout(timeout.unwrap_or(CALL_TIMEOUT))
            .json(body);
        self.finish(method, request).await
    }

    /// Calls `method` with a multipart form (uploads).
    pub(crate) async fn call_multipart<T: DeserializeOwned>(
        &self,
        method: &str,
        form: reqwest::multipart::Form,
    ) -> Result<T, PlatformError> {
        let request = self
            .http
            .post(self.method_url(method))
            .timeout(TRANSFER_TIMEOUT)
            .multipart(form);
        self.finish(method, request).await
    }

    async fn finish<T: DeserializeOwned>(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, PlatformError> {
        let response = request.send().await.map_err(|e| {
            PlatformError::transport(PLATFORM, format!("{method}: {}", e.without_url()))
        })?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| {
            PlatformError::transport(
                PLATFORM,
                format!("{method}: reading the answer: {}", e.without_url()),
            )
        })?;
        let parsed: ApiResponse<T> = match serde_json::from_str(&text) {
            Ok(parsed) => parsed,
            Err(e) => {
                if status >= 500 || status == 429 {
                    return Err(classify(method, status, "(no Bot API answer)", None, None));
                }
                return Err(PlatformError::protocol(
                    PLATFORM,
                    format!("{method}: HTTP {status}, not a Bot API answer: {e}"),
                ));
            }
        };
        if parsed.ok {
            return parsed.result.ok_or_else(|| {
                PlatformError::protocol(PLATFORM, format!("{method}: ok without result"))
            });
        }
        let code = parsed.error_code.unwrap_or(status);
        let description = parsed.description.unwrap_or_default();
        let params = parsed.parameters;
        Err(classify(
            method,
            code,
            &description,
            params.as_ref().and_then(|p| p.retry_after),
            params.as_ref().and_then(|p| p.migrate_to_chat_id),
        ))
    }

    /// Downloads `file_path` (from getFile) into `dest`, stopping and deleting the partial
    /// file as soon as more than `max_bytes` bytes arrive. Returns the size in bytes.
    pub(crate) async fn download(
        &self,
        file_path: &str,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<u64, DownloadError> {
        let url = format!("{}/file/bot{}/{}", self.base, self.token, file_path);
        let mut response = self
            .http
            .get(url)
            .timeout(TRANSFER_TIMEOUT)
            .send()
            .await
            .map_err(|e| DownloadError::Failed(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(DownloadError::Failed(format!(
                "HTTP {}",
                response.status().as_u16()
            )));
        }
        if let Some(len) = response.content_length()
            && len > max_bytes
        {
            return Err(DownloadError::TooLarge(len));
        }
        let partial = dest.with_extension("part");
        let result = async {
            let mut file = tokio::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(hermes_protocol::private_fs::PRIVATE_FILE_MODE)
                .open(&partial)
                .await
                .map_err(|e| DownloadError::Failed(format!("creating the file: {e}")))?;
            let mut written: u64 = 0;
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| DownloadError::Failed(e.without_url().to_string()))?
            {
                written += chunk.len() as u64;
                if written > max_bytes {
                    return Err(DownloadError::TooLarge(written));
                }
                file.write_all(&chunk)
                    .await
                    .map_err(|e| DownloadError::Failed(format!("writing the file: {e}")))?;
            }
            file.flush()
                .await
                .map_err(|e| DownloadError::Failed(format!("writing the file: {e}")))?;
            Ok(written)
        }
        .await;
        match result {
            Ok(size) => {
                tokio::fs::rename(&partial, dest)
                    .await
                    .map_err(|e| DownloadError::Failed(format!("saving the file: {e}")))?;
                Ok(size)
            }
            Err(e) => {
                let _ = tokio::fs::remove_file(&partial).await;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_map_to_error_kinds() {
        assert!(matches!(
            classify("getMe", 401, "Unauthorized", None, None),
            PlatformError::Auth { .. }
        ));
        assert!(matches!(
            classify("getMe", 404, "Not Found", None, None),
            PlatformError::Auth { .. }
        ));
        match classify("sendMessage", 429, "Too Many Requests", Some(7), None) {
            PlatformError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Duration::from_secs(7))
            }
            other => panic!("{other:?}"),
        }
        let e = classify(
            "sendMessage",
            400,
            "Bad Request: can't parse entities: Character '.' is reserved",
            None,
            None,
        );
        assert!(is_markup_rejection(&e));
        assert!(matches!(
            classify(
                "sendMessage",
                403,
                "Forbidden: bot was blocked by the user",
                None,
                None
            ),
            PlatformError::Rejected { .. }
        ));
        assert!(classify("getUpdates", 502, "Bad Gateway", None, None).is_retryable());
        assert!(classify("getUpdates", 409, "Conflict", None, None).is_retryable());
        let migrated = classify("sendMessage", 400, "Bad Request", None, Some(-100123));
        assert!(migrated.to_string().contains("-100123"), "{migrated}");
    }
}
