//! Is the resolved provider reachable? One short `GET` of its models endpoint, sent the way
//! that API expects (Bearer key for the OpenAI-style APIs; `x-api-key` and
//! `anthropic-version` for Anthropic, whose list lives at `/v1/models`), for `hermes doctor`
//! (FEATURES §1: "doctor … checks … model reachability").

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use crate::redact::redact_secrets;
use crate::runtime::{ApiMode, Runtime};

/// How long `hermes doctor` waits for the models endpoint (connecting and the whole answer).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What one probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reachability {
    /// The endpoint answered 2xx.
    Reachable {
        /// The URL that was asked.
        url: String,
        /// HTTP status.
        status: u16,
    },
    /// The endpoint answered 401 or 403: the server is there but refuses the key.
    KeyRejected {
        /// The URL that was asked.
        url: String,
        /// HTTP status.
        status: u16,
    },
    /// The server answered with another status (many local servers have no `/models`): it is
    /// reachable, the listing just did not work.
    OtherStatus {
        /// The URL that was asked.
        url: String,
        /// HTTP status.
        status: u16,
    },
    /// No answer: connection refused, DNS failure, TLS failure or timeout.
    Unreachable {
        /// The URL that was asked.
        url: String,
        /// What went wrong (secrets redacted).
        reason: String,
    },
    /// Nothing to probe (the embedded model runs in-process).
    NotApplicable,
}

/// The models URL of `rt`: `{base_url}/models`; for Anthropic `{base}/v1/models` unless the
/// base URL already ends in `/v1`. `None` for the embedded model.
pub fn models_url(rt: &Runtime) -> Option<String> {
    let base = rt.base_url.trim_end_matches('/');
    match rt.api_mode {
        ApiMode::Local => None,
        ApiMode::AnthropicMessages if !base.ends_with("/v1") => Some(format!("{base}/v1/models")),
        _ => Some(format!("{base}/models")),
    }
}

fn headers(rt: &Runtime) -> HeaderMap {
    let mut h = HeaderMap::new();
    let Some(key) = rt.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return h;
    };
    if rt.api_mode == ApiMode::AnthropicMessages {
        if let Ok(mut v) = HeaderValue::from_str(key) {
            v.set_sensitive(true);
            h.insert(HeaderName::from_static("x-api-key"), v);
        }
        h.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static("2023-06-01"),
        );
    } else if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {key}")) {
        v.set_sensitive(true);
        h.insert(AUTHORIZATION, v);
    }
    h
}

/// Sends one `GET` to the models endpoint of `rt`, giving up after `timeout`.
pub async fn probe(rt: &Runtime, timeout: Duration) -> Reachability {
    let Some(url) = models_url(rt) else {
        return Reachability::NotApplicable;
    };
    crate::transport::init_tls();
    let http = match reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            return Reachability::Unreachable {
                url,
                reason: format!("HTTP client: {e}"),
            };
        }
    };
    match http.get(&url).headers(headers(rt)).send().await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            match status {
                200..=299 => Reachability::Reachable { url, status },
                401 | 403 => Reachability::KeyRejected { url, status },
                _ => Reachability::OtherStatus { url, status },
            }
        }
        Err(e) => {
            let what = if e.is_timeout() {
                format!("no answer within {} s", timeout.as_secs_f64())
            } else if e.is_connect() {
                "connection failed".to_string()
            } else {
                "request failed".to_string()
            };
            let mut detail = String::new();
            let mut source: Option<&dyn std::error::Error> = Some(&e);
            while let Some(s) = source {
                detail = s.to_string();
                source = s.source();
            }
            Reachability::Unreachable {
                url,
                reason: redact_secrets(&format!("{what} ({detail})")),
            }
        }
    }
}
