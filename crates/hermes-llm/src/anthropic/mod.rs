//! Anthropic Messages adapter (FEATURES §2): `POST {base}/v1/messages` with `stream: true`,
//! decoded by [`stream::AnthropicDecoder`]; the body is built by [`request::build_body`]
//! (system block, tool_use/tool_result pairing, thinking replay, `system_and_3` caching).
//! Also serves Anthropic-compatible endpoints whose base URL ends in `/anthropic`.

pub mod request;
pub mod stream;

use reqwest::header::{AUTHORIZATION, HeaderName};

use crate::client::{ChatRequest, EventStream, ModelClient};
use crate::error::LlmError;
use crate::sse::decode_named_sse;
use crate::timeouts::Timeouts;
use crate::transport::{Body, Endpoint};
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
    /// Connect, silence and total limits of each call ([`Timeouts`]).
    pub timeouts: Timeouts,
    /// Send the W3C trace context (`traceparent`) of the model-call span with each request
    /// (`observability.otlp.propagate_to_providers`; off by default: a provider learns
    /// nothing it does not need).
    pub trace_context: bool,
    /// Body options (default `max_tokens`, prompt caching, thinking budget).
    pub body: BodyOptions,
    /// Extra headers (e.g. `anthropic-beta`).
    pub extra_headers: Vec<(String, String)>,
}

impl AnthropicConfig {
    /// Defaults: provider `anthropic`, default timeouts, `system_and_3` caching with the 5 m TTL,
    /// no thinking, `max_tokens` from [`default_max_tokens`].
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> AnthropicConfig {
        AnthropicConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            provider_id: "anthropic".to_string(),
            context_window: None,
            timeouts: Timeouts::default(),
            trace_context: false,
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
    endpoint: Endpoint,
}

impl AnthropicClient {
    /// Builds the client. Errors (class `format_error`) when the key or a header is not a valid
    /// HTTP header value, or the HTTP client cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<AnthropicClient, LlmError> {
        let credential = config
            .api_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(|key| {
                if key.starts_with("sk-ant-oat") {
                    (AUTHORIZATION, format!("Bearer {key}"))
                } else {
                    (HeaderName::from_static("x-api-key"), key.to_string())
                }
            });
        let mut extra = vec![(
            "anthropic-version".to_string(),
            ANTHROPIC_VERSION.to_string(),
        )];
        extra.extend(config.extra_headers.iter().cloned());
        let endpoint = Endpoint::new(
            messages_endpoint(&config.base_url),
            credential,
            &extra,
            config.timeouts,
            config.trace_context,
        )?;
        Ok(AnthropicClient { config, endpoint })
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint.url
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
        match self.endpoint.post(&body, &cancel).await? {
            Body::Json(text) => {
                let events = decode_message_body(&text)?;
                Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
            }
            Body::Stream(response) => Ok(decode_named_sse(
                self.endpoint.byte_stream(response),
                AnthropicDecoder::new(),
                cancel,
            )),
        }
    }

    fn provider(&self) -> &str {
        &self.config.provider_id
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn base_url(&self) -> &str {
        &self.config.base_url
    }

    fn context_window(&self) -> Option<u64> {
        self.config.context_window
    }
}
