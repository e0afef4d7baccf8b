//! What the REST clients of the adapters share: one request sent and its answer read whole,
//! and a local file read for upload.

use std::path::Path;

#[cfg(any(
    feature = "discord",
    feature = "slack",
    feature = "whatsapp",
    feature = "sms"
))]
use reqwest::{RequestBuilder, StatusCode};

use crate::error::PlatformError;

/// A platform's HTTP answer, read whole.
#[cfg(any(
    feature = "discord",
    feature = "slack",
    feature = "whatsapp",
    feature = "sms"
))]
pub(crate) struct Answer {
    /// HTTP status.
    pub(crate) status: StatusCode,
    /// The `Retry-After` header, as sent (seconds or an HTTP date).
    pub(crate) retry_after: Option<String>,
    /// The body text.
    pub(crate) body: String,
}

#[cfg(any(
    feature = "discord",
    feature = "slack",
    feature = "whatsapp",
    feature = "sms"
))]
/// Sends `req` and reads the whole answer; network failures are `Transport` errors naming
/// `platform` and `what` (the call, e.g. `chat.postMessage`).
pub(crate) async fn send(
    platform: &str,
    what: &str,
    req: RequestBuilder,
) -> Result<Answer, PlatformError> {
    let resp = req
        .send()
        .await
        .map_err(|e| PlatformError::transport(platform, format!("{what}: {e}")))?;
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = resp.text().await.map_err(|e| {
        PlatformError::transport(platform, format!("{what}: reading the answer: {e}"))
    })?;
    Ok(Answer {
        status,
        retry_after,
        body,
    })
}

/// Reads a file to upload: its bytes and the file name to send (`file` when the path has
/// none). An unreadable file is `Rejected` (retrying cannot help).
#[cfg_attr(
    not(any(
        feature = "discord",
        feature = "slack",
        feature = "telegram",
        feature = "matrix",
        feature = "whatsapp"
    )),
    allow(dead_code)
)]
pub(crate) async fn read_upload(
    platform: &str,
    path: &Path,
) -> Result<(Vec<u8>, String), PlatformError> {
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| PlatformError::Rejected {
            platform: platform.into(),
            detail: format!("reading {}: {e}", path.display()),
        })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    Ok((bytes, name))
}
