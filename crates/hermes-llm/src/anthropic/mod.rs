//! Anthropic Messages adapter (FEATURES §2): `POST {base}/v1/messages` with `stream: true`,
//! decoded by [`stream::AnthropicDecoder`]; the body is built by [`request::build_body`]
//! (system block, tool_use/tool_result pairing, thinking replay, `system_and_3` caching).
//! Also serves Anthropic-compatible endpoints whose base URL ends in `/anthropic`.

pub mod request;
pub mod stream;

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::client::{ChatRequest, EventStream, ModelClient};
use crate::error::{ErrorClass, LlmError};
use crate::sse::decode_named_sse;
pub use request::{BodyOptions, CacheTtl, build_body, default_max_tokens};
pub use stream::{AnthropicDecoder, decode_message_body};

/// The `anthropic-version` header value sent with every request (docs "Versions").
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Settings for one Anthropic Messages endpoint.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Base URL: `https://api.anthropic.com`, a compatible `…/anthropic` URL, or a URL ending
    /// in `/v1` (then `/messages` is appended instead of `/v1/messages`).
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key: sent as `x-api-key`, or as `Authorization: Bearer` for OAuth tokens
    /// (`sk-ant-oat…`).
    pub api_key: Option<String>,
    /// Provider id for display/storage (`anthropic`, `custom`, …).
    pub provider_id: String,
    /// Context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Connect and read timeout.
    pub timeout: Duration,
    /// Body options (default `max_tokens`, prompt caching, thinking budget).
    pub body: BodyOptions,
    /// Extra headers (e.g. `anthropic-beta`).
    pub extra_headers: Vec<(String, String)>,
}

impl AnthropicConfig {
    /// Defaults: provider `anthropic`, 120 s timeout, `system_and_3` caching with the 5 m TTL,
    /// no thinking, `max_tokens` from [`default_max_tokens`].
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> AnthropicConfig {
        AnthropicConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            provider_id: "anthropic".to_string(),
            context_window: None,
            timeout: Duration::from_secs(120),
            body: BodyOptions {
                default_max_tokens: 0,
                cache: Some(CacheTtl::FiveMinutes),
                thinking_budget: None,
            },
            extra_headers: Vec::new(),
        }
    }
}

/// The messages endpoint for a base URL (see [`AnthropicConfig::base_url`]).
pub fn messages_endpoint(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// A [`ModelClient`] for one Anthropic Messages endpoint.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    config: AnthropicConfig,
    endpoint: String,
    headers: HeaderMap,
    http: reqwest::Client,
}

impl AnthropicClient {
    /// Builds the client. Errors (class `format_error`) when the key or a header is not a valid
    /// HTTP header value, or the HTTP client cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<AnthropicClient, LlmError> {
        crate::openai_chat::init_tls();
        let bad = |what: &str| {
            LlmError::new(
                ErrorClass::FormatError,
                None,
                format!("invalid client configuration: {what}"),
            )
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            let (name, value) = if key.starts_with("sk-ant-oat") {
                (AUTHORIZATION, format!("Bearer {key}"))
            } else {
                (HeaderName::from_static("x-api-key"), key.to_string())
            };
            let mut v = HeaderValue::from_str(&value)
                .map_err(|_| bad("the API key contains characters not allowed in a header"))?;
            v.set_sensitive(true);
            headers.insert(name, v);
        }
        for (k, v) in &config.extra_headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| bad(&format!("header name {k:?}")))?;
            let value =
                HeaderValue::from_str(v).map_err(|_| bad(&format!("value of header {k:?}")))?;
            headers.insert(name, value);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .read_timeout(config.timeout)
            .build()
            .map_err(|e| bad(&format!("HTTP client: {e}")))?;
        let endpoint = messages_endpoint(&config.base_url);
        Ok(AnthropicClient {
            config,
            endpoint,
            headers,
            http,
        })
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The settings this client was built with.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }
}

#[async_trait::async_trait]
impl ModelClient for AnthropicClient {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let body = build_body(request, &self.config.model, &self.config.body);
        let cancel = request.cancel.clone();
        let send = self
            .http
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .json(&body)
            .send();
        let response = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(crate::transport::interrupted()),
            r = send => r.map_err(|e| LlmError::from_transport(&e))?,
        };
        match crate::transport::split_response(response, &cancel).await? {
            crate::transport::Body::Json(text) => {
                let events = decode_message_body(&text)?;
                Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
            }
            crate::transport::Body::Stream(response) => {
                let bytes = response
                    .bytes_stream()
                    .map(|r| r.map_err(|e| LlmError::from_transport(&e)));
                Ok(decode_named_sse(bytes, AnthropicDecoder::new(), cancel))
            }
        }
    }

    fn provider(&self) -> &str {
        &self.config.provider_id
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn context_window(&self) -> Option<u64> {
        self.config.context_window
    }
}
