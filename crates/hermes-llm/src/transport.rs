//! HTTP plumbing shared by the adapters: one [`Endpoint`] per client (URL, default headers,
//! timeouts), a cancellable POST whose response becomes a classified [`LlmError`] (error
//! status; body read, `Retry-After` honoured), a whole JSON body, or a byte stream to decode.
//!
//! Time limits ([`Timeouts`]): connecting is bounded by `connect`; the wait for the response
//! head and every gap between two body pieces by `stream_idle` (a provider that stalls
//! mid-stream is cut, the stream ends with a `timeout`-class error); the whole call by
//! `total` (reqwest's request timeout, which covers the body too).

use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::{ErrorClass, LlmError};
use crate::timeouts::Timeouts;

/// Installs the `ring` rustls crypto provider as the process default, once. Safe to call any
/// number of times from any thread (a provider already installed, by us or anyone, is kept).
/// reqwest is built with `rustls-no-provider`, so a client cannot be built before this runs.
pub fn init_tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err means another thread installed one first; that provider is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// A successful response, either whole JSON text or a body to stream.
pub(crate) enum Body {
    /// `application/json` 200 body (non-streamed answer).
    Json(String),
    /// Any other 200 body (SSE).
    Stream(reqwest::Response),
}

/// Where one client POSTs its requests, with the headers every request carries.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// Full URL requests are POSTed to.
    pub(crate) url: String,
    /// JSON content type, SSE accept, the credential and any extra headers.
    pub(crate) headers: HeaderMap,
    /// The connection pool (rustls with ring, see [`crate::init_tls`]).
    pub(crate) http: reqwest::Client,
    /// The limits every call through this endpoint runs under.
    pub(crate) timeouts: Timeouts,
    /// Whether each request carries the current span's `traceparent`/`tracestate`.
    pub(crate) trace_context: bool,
}

/// A `format_error` for a client that cannot be built as configured.
pub(crate) fn config_error(what: &str) -> LlmError {
    LlmError::new(
        ErrorClass::FormatError,
        None,
        format!("invalid client configuration: {what}"),
    )
}

impl Endpoint {
    /// Builds an endpoint: `credential` is a header name and its value (e.g. `Authorization:
    /// Bearer …`, marked sensitive), `extra` are more headers; `timeouts` bound the calls
    /// (see the module docs); `trace_context` adds the W3C trace headers of the span each
    /// request is sent in (none when trace export is off). Errors (`format_error`) name the
    /// header that is not valid.
    pub(crate) fn new(
        url: String,
        credential: Option<(HeaderName, String)>,
        extra: &[(String, String)],
        timeouts: Timeouts,
        trace_context: bool,
    ) -> Result<Endpoint, LlmError> {
        init_tls();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some((name, value)) = credential {
            let mut v = HeaderValue::from_str(&value).map_err(|_| {
                config_error("the API key contains characters not allowed in a header")
            })?;
            v.set_sensitive(true);
            headers.insert(name, v);
        }
        for (k, v) in extra {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| config_error(&format!("header name {k:?}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| config_error(&format!("value of header {k:?}")))?;
            headers.insert(name, value);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .timeout(timeouts.total)
            .build()
            .map_err(|e| config_error(&format!("HTTP client: {e}")))?;
        Ok(Endpoint {
            url,
            headers,
            http,
            timeouts,
            trace_context,
        })
    }

    /// POSTs `body` and splits the response (see [`split_response`]); stops at once with an
    /// "interrupted" error when `cancel` fires before the provider answers.
    pub(crate) async fn post(
        &self,
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<Body, LlmError> {
        let bytes =
            serde_json::to_vec(body).map_err(|e| config_error(&format!("request body: {e}")))?;
        self.post_bytes(bytes, cancel).await
    }

    /// [`Endpoint::post`] with a body already serialized to JSON bytes (the endpoint's
    /// headers carry the JSON content type).
    pub(crate) async fn post_bytes(
        &self,
        body: Vec<u8>,
        cancel: &CancellationToken,
    ) -> Result<Body, LlmError> {
        let mut headers = self.headers.clone();
        if self.trace_context {
            for (k, v) in hermes_telemetry::trace::current_trace_headers() {
                if let (Ok(k), Ok(v)) = (
                    HeaderName::from_bytes(k.as_bytes()),
                    HeaderValue::from_str(&v),
                ) {
                    headers.insert(k, v);
                }
            }
        }
        let send = self.http.post(&self.url).headers(headers).body(body).send();
        finish(send, self.timeouts, cancel).await
    }

    /// The body of a streamed response as bytes, cut after `stream_idle` without data (see
    /// [`idle_cut`]); transport failures become `timeout`-class errors.
    pub(crate) fn byte_stream(
        &self,
        response: reqwest::Response,
    ) -> impl Stream<Item = Result<Bytes, LlmError>> + Send + 'static {
        let body = response
            .bytes_stream()
            .map(|r| r.map_err(|e| LlmError::from_transport(&e)));
        idle_cut(body, self.timeouts)
    }
}

/// Waits for the response head of `send` (at most `stream_idle`, or until the interrupt)
/// and splits the response.
async fn finish(
    send: impl std::future::Future<Output = reqwest::Result<reqwest::Response>>,
    timeouts: Timeouts,
    cancel: &CancellationToken,
) -> Result<Body, LlmError> {
    let response = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(interrupted()),
        r = tokio::time::timeout(timeouts.stream_idle, send) => match r {
            Ok(r) => r.map_err(|e| LlmError::from_transport(&e))?,
            Err(_) => return Err(idle_error(timeouts.stream_idle, "before answering")),
        },
    };
    split_response(response, cancel).await
}

/// How the message of a provider-silence error starts ([`idle_error`]); the retry status line
/// ([`crate::retry_status`]) tells such a cut from a network failure by it.
pub(crate) const IDLE_MESSAGE_PREFIX: &str = "the provider sent no data for";

/// The `timeout`-class error of a provider silent for `idle`.
fn idle_error(idle: Duration, when: &str) -> LlmError {
    LlmError::new(
        ErrorClass::Timeout,
        None,
        format!(
            "{IDLE_MESSAGE_PREFIX} {} s {when} (model.stream_idle_timeout); the call was cut",
            idle.as_secs_f64()
        ),
    )
}

/// Ends `body` with a `timeout`-class error when no item arrives for `timeouts.stream_idle`
/// (a provider that stalls mid-stream), instead of waiting until the total limit. Nothing is
/// yielded after that error.
pub(crate) fn idle_cut<S>(
    body: S,
    timeouts: Timeouts,
) -> impl Stream<Item = Result<Bytes, LlmError>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, LlmError>> + Send + 'static,
{
    let idle = timeouts.stream_idle;
    futures::stream::unfold(Some(Box::pin(body)), move |state| async move {
        let mut body = state?;
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(item)) => Some((item, Some(body))),
            Ok(None) => None,
            Err(_) => Some((Err(idle_error(idle, "in the middle of its answer")), None)),
        }
    })
}

/// Splits a response: non-2xx → `Err` from [`LlmError::from_http`]; JSON → [`Body::Json`];
/// otherwise [`Body::Stream`]. Reading the body stops when `cancel` fires.
pub(crate) async fn split_response(
    response: reqwest::Response,
    cancel: &CancellationToken,
) -> Result<Body, LlmError> {
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.to_ascii_lowercase().contains("json"));
    if status.is_success() && !is_json {
        return Ok(Body::Stream(response));
    }
    let headers = response.headers().clone();
    let text = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(interrupted()),
        t = response.text() => t.map_err(|e| LlmError::from_transport(&e))?,
    };
    if !status.is_success() {
        return Err(LlmError::from_http(status.as_u16(), &headers, &text));
    }
    Ok(Body::Json(text))
}

/// The error returned when the user interrupts before the provider answered.
pub(crate) fn interrupted() -> LlmError {
    LlmError::new(
        ErrorClass::Unknown,
        None,
        "the request was interrupted before the provider answered",
    )
}
