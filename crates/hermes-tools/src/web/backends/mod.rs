//! The search providers behind `web_search`, each sending its provider's documented request
//! and reading its documented response: Firecrawl (`POST /v2/search`), Tavily
//! (`POST /search`), Exa (`POST /search`) and a self-hosted SearXNG (`GET /search?format=json`).
//! Shared here: the HTTP client (timeouts, few redirects, no address policy — a SearXNG
//! instance is usually on the local network) and the mapping of error statuses to
//! [`SearchError`].

mod exa;
mod firecrawl;
mod searxng;
mod tavily;

use std::time::Duration;

use reqwest::header::RETRY_AFTER;
use serde_json::Value;

pub use exa::{EXA_BASE_URL, ExaBackend};
pub use firecrawl::{FIRECRAWL_BASE_URL, FirecrawlBackend};
pub use searxng::SearxngBackend;
pub use tavily::{TAVILY_BASE_URL, TavilyBackend};

use super::search::SearchError;

/// Whole-request timeout of one search call.
pub const SEARCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The client every backend uses: rustls with ring, 10 s connect / 30 s request timeouts,
/// at most 3 redirects.
fn http_client() -> reqwest::Client {
    super::fetch::init_tls();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(SEARCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "web_search: custom HTTP client failed; using defaults");
            reqwest::Client::new()
        })
}

/// `base` without trailing slashes.
fn trim_base(base: &str) -> String {
    base.trim().trim_end_matches('/').to_string()
}

/// Sends `req` and returns the JSON body of a 2xx answer.
///
/// # Errors
/// 401/403 → [`SearchError::Unauthorized`] (`key_hint` names the key); 402/429 →
/// [`SearchError::RateLimited`]; other non-2xx → [`SearchError::Status`] with the start of the
/// body; a body that is not JSON → [`SearchError::Malformed`]; transport failures →
/// [`SearchError::Network`].
async fn send_json(
    backend: &'static str,
    key_hint: &'static str,
    req: reqwest::RequestBuilder,
) -> Result<Value, SearchError> {
    let network = |e: reqwest::Error| {
        let mut detail = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            detail = format!("{detail}: {s}");
            src = s.source();
        }
        SearchError::Network { backend, detail }
    };
    let resp = req.send().await.map_err(network)?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = read_capped(resp).await.map_err(|e| match e {
        Capped::Network(e) => network(e),
        Capped::TooLarge => SearchError::Malformed {
            backend,
            detail: format!(
                "the answer is larger than {} MiB",
                MAX_ANSWER_BYTES / (1024 * 1024)
            ),
        },
    })?;
    match status {
        200..=299 => serde_json::from_str(&body).map_err(|e| SearchError::Malformed {
            backend,
            detail: format!("the body is not JSON: {e}"),
        }),
        401 | 403 => Err(SearchError::Unauthorized {
            backend,
            status,
            key_hint,
        }),
        402 | 429 => Err(SearchError::RateLimited {
            backend,
            status,
            retry_after,
        }),
        _ => Err(SearchError::Status {
            backend,
            status,
            detail: error_detail(&body),
        }),
    }
}

/// Largest search answer read, in bytes (5 MiB, like a page of `web_extract`): a backend or
/// a proxy that streams without end fails with [`SearchError::Malformed`] instead of growing
/// the process without bound.
pub const MAX_ANSWER_BYTES: usize = crate::web::fetch::MAX_DOWNLOAD_BYTES;

enum Capped {
    Network(reqwest::Error),
    TooLarge,
}

/// The body as text (invalid UTF-8 replaced), read chunk by chunk up to [`MAX_ANSWER_BYTES`].
async fn read_capped(mut resp: reqwest::Response) -> Result<String, Capped> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(Capped::Network)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Capped::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The message of an error body: `error`, `detail` or `message` of a JSON object (nested
/// `error.message` too), else the text; at most 300 chars, blanks collapsed.
fn error_detail(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        ["error", "detail", "message"]
            .iter()
            .find_map(|k| match v.get(*k) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Object(o)) => {
                    o.get("message").and_then(Value::as_str).map(str::to_string)
                }
                _ => None,
            })
    });
    let text = from_json.unwrap_or_else(|| body.to_string());
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.chars().take(300).collect()
}

/// The array at `path` (object keys) in `v`.
///
/// # Errors
/// [`SearchError::Malformed`] naming the missing path.
fn array_at<'a>(
    backend: &'static str,
    v: &'a Value,
    path: &[&str],
) -> Result<&'a Vec<Value>, SearchError> {
    let mut cur = v;
    for key in path {
        cur = cur.get(key).ok_or_else(|| SearchError::Malformed {
            backend,
            detail: format!("no `{}` in the response", path.join(".")),
        })?;
    }
    cur.as_array().ok_or_else(|| SearchError::Malformed {
        backend,
        detail: format!("`{}` is not an array", path.join(".")),
    })
}

/// The string field `key` of `v`, or empty.
fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_summarized() {
        assert_eq!(error_detail(r#"{"error":"Bad  key"}"#), "Bad key");
        assert_eq!(error_detail(r#"{"error":{"message":"nope"}}"#), "nope");
        assert_eq!(error_detail(r#"{"detail":"x"}"#), "x");
        assert_eq!(error_detail("<html>oops</html>"), "<html>oops</html>");
        assert_eq!(error_detail(&"y".repeat(1000)).len(), 300);
    }
}
