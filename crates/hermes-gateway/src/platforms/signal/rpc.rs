//! signal-cli's HTTP daemon (`signal-cli -a ACCOUNT daemon --http HOST:PORT`), as its
//! `signal-cli-jsonrpc(5)` manual page documents it: `POST /api/v1/rpc` takes JSON-RPC 2.0
//! requests, `GET /api/v1/events` streams received messages as server-sent events and
//! `GET /api/v1/check` answers 200 while the daemon runs. The same daemon Python Hermes
//! speaks to.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::PLATFORM;
use crate::error::PlatformError;

/// signal-cli's JSON-RPC error code for a `RateLimitException` (signal-cli 0.14.3+).
const RATE_LIMIT_CODE: i64 = -5;
/// signal-cli's JSON-RPC error code for a network failure talking to Signal's servers.
const IO_ERROR_CODE: i64 = -3;
/// Wait assumed when a rate limit names none.
const DEFAULT_RATE_LIMIT_WAIT: Duration = Duration::from_secs(30);

/// A client of one daemon for one account.
pub(crate) struct Rpc {
    http: reqwest::Client,
    base: String,
    account: String,
    next_id: AtomicU64,
}

impl Rpc {
    /// A client of the daemon at `base` (`http://127.0.0.1:8080`) for `account`.
    pub(crate) fn new(base: &str, account: &str) -> Result<Rpc, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| PlatformError::transport(PLATFORM, format!("HTTP client: {e}")))?;
        Ok(Rpc {
            http,
            base: base.trim_end_matches('/').to_string(),
            account: account.to_string(),
            next_id: AtomicU64::new(1),
        })
    }

    /// `GET /api/v1/check`: `Ok` when the daemon answers 200.
    pub(crate) async fn check(&self) -> Result<(), PlatformError> {
        let resp = self
            .http
            .get(format!("{}/api/v1/check", self.base))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("/api/v1/check: {e}")))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(PlatformError::transport(
                PLATFORM,
                format!("/api/v1/check answered HTTP {}", resp.status()),
            ))
        }
    }

    /// The server-sent event stream of this account's received messages.
    pub(crate) async fn events(&self) -> Result<reqwest::Response, PlatformError> {
        let resp = self
            .http
            .get(format!("{}/api/v1/events", self.base))
            .query(&[("account", self.account.as_str())])
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("/api/v1/events: {e}")))?;
        let status = resp.status();
        if status.is_success() {
            Ok(resp)
        } else {
            let body = resp.text().await.unwrap_or_default();
            let detail = format!("/api/v1/events answered HTTP {status}: {}", clip(&body));
            if status.is_client_error() && status != reqwest::StatusCode::TOO_MANY_REQUESTS {
                Err(PlatformError::Rejected {
                    platform: PLATFORM.into(),
                    detail,
                })
            } else {
                Err(PlatformError::transport(PLATFORM, detail))
            }
        }
    }

    /// Calls `method` with `params` (the account is added) and returns its `result`.
    ///
    /// Errors: `Transport` for network failures, HTTP 5xx and signal-cli's I/O error (-3);
    /// `RateLimited` for its rate-limit error (-5, or a message saying `[429]` / `Retry
    /// after N seconds`), waiting what it names; `Rejected` for other JSON-RPC errors;
    /// `Protocol` for an answer that is not JSON-RPC.
    pub(crate) async fn call(
        &self,
        method: &str,
        mut params: Value,
    ) -> Result<Value, PlatformError> {
        if let Some(map) = params.as_object_mut() {
            map.insert("account".into(), json!(self.account));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id});
        let resp = self
            .http
            .post(format!("{}/api/v1/rpc", self.base))
            .timeout(Duration::from_secs(120))
            .json(&body)
            .send()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("{method}: {e}")))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("{method}: reading: {e}")))?;
        if status.is_server_error() {
            return Err(PlatformError::transport(
                PLATFORM,
                format!("{method}: HTTP {status}: {}", clip(&text)),
            ));
        }
        let answer: Value = serde_json::from_str(&text).map_err(|_| {
            PlatformError::protocol(
                PLATFORM,
                format!("{method}: HTTP {status}, not JSON-RPC: {}", clip(&text)),
            )
        })?;
        if let Some(err) = answer.get("error") {
            return Err(rpc_error(method, err));
        }
        if !status.is_success() {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("{method}: HTTP {status}"),
            });
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// A JSON-RPC `error` object as a [`PlatformError`].
fn rpc_error(method: &str, err: &Value) -> PlatformError {
    let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    let lower = message.to_ascii_lowercase();
    if code == RATE_LIMIT_CODE
        || message.contains("[429]")
        || lower.contains("ratelimit")
        || lower.contains("retry after")
    {
        let from_results = err
            .pointer("/data/response/results")
            .map(retry_after_of_results)
            .unwrap_or(None);
        let wait = from_results
            .or_else(|| retry_after_in_text(message))
            .unwrap_or(DEFAULT_RATE_LIMIT_WAIT);
        return PlatformError::RateLimited {
            platform: PLATFORM.into(),
            retry_after: wait,
        };
    }
    let detail = format!("{method}: {message} (code {code})");
    if code == IO_ERROR_CODE {
        PlatformError::transport(PLATFORM, detail)
    } else {
        PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail,
        }
    }
}

/// The longest `retryAfterSeconds` of a send's per-recipient `results`.
pub(crate) fn retry_after_of_results(results: &Value) -> Option<Duration> {
    results
        .as_array()?
        .iter()
        .filter_map(|r| r.get("retryAfterSeconds").and_then(Value::as_f64))
        .filter(|s| s.is_finite() && *s >= 0.0)
        .fold(None, |acc: Option<f64>, s| {
            Some(acc.map_or(s, |a| a.max(s)))
        })
        .map(Duration::from_secs_f64)
}

/// `Retry after N seconds` in an error message.
fn retry_after_in_text(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let rest = &lower[lower.find("retry after ")? + "retry after ".len()..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// At most 200 characters of a body for a log line.
fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_read_the_wait_from_results_or_the_message() {
        let e = rpc_error(
            "send",
            &json!({"code": -5, "message": "Rate limit", "data": {"response": {"results": [
                {"type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 12},
                {"type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 40}
            ]}}}),
        );
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(40))
        );
        let e = rpc_error(
            "send",
            &json!({"code": -1, "message": "AttachmentInvalidException: RetryLaterException: Retry after 7 seconds"}),
        );
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(7))
        );
        let e = rpc_error("send", &json!({"code": -5, "message": "limited"}));
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == DEFAULT_RATE_LIMIT_WAIT)
        );
    }

    #[test]
    fn io_errors_are_retryable_and_user_errors_are_not() {
        assert!(rpc_error("send", &json!({"code": -3, "message": "timeout"})).is_retryable());
        let e = rpc_error("send", &json!({"code": -1, "message": "Invalid group id"}));
        assert!(matches!(e, PlatformError::Rejected { .. }));
        assert!(e.to_string().contains("Invalid group id"));
    }
}
