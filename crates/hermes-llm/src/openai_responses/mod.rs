//! OpenAI Responses adapter (FEATURES §2; GPT-5-class models on api.openai.com):
//! `POST {base_url}/responses` with `stream: true`, decoded by [`stream::ResponsesDecoder`];
//! the body is built by [`request::build_body`] (reasoning items carried across turns).

pub mod request;
pub mod stream;

use reqwest::header::AUTHORIZATION;

use crate::client::{ChatRequest, EventStream, ModelClient};
use crate::error::LlmError;
use crate::sse::decode_named_sse;
use crate::timeouts::Timeouts;
use crate::transport::{Body, Endpoint};
pub use request::build_body;
pub use stream::{ResponsesDecoder, decode_response_body};

/// Settings for one Responses endpoint.
#[derive(Debug, Clone)]
pub struct ResponsesConfig {
    /// Base URL including the version path (`https://api.openai.com/v1`).
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key (sent as `Authorization: Bearer`).
    pub api_key: Option<String>,
    /// Provider id for display/storage.
    pub provider_id: String,
    /// Context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Connect, silence and total limits of each call ([`Timeouts`]).
    pub timeouts: Timeouts,
    /// Send the W3C trace context (`traceparent`) of the model-call span with each request
    /// (`observability.otlp.propagate_to_providers`; off by default: a provider learns
    /// nothing it does not need).
    pub trace_context: bool,
}

impl ResponsesConfig {
    /// Defaults: provider `openai-api`, default timeouts.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> ResponsesConfig {
        ResponsesConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            provider_id: "openai-api".to_string(),
            context_window: None,
            timeouts: Timeouts::default(),
            trace_context: false,
        }
    }
}

/// A [`ModelClient`] for one Responses endpoint.
#[derive(Debug, Clone)]
pub struct ResponsesClient {
    config: ResponsesConfig,
    endpoint: Endpoint,
}

impl ResponsesClient {
    /// Builds the client. Errors (class `format_error`) when the key is not a valid HTTP header
    /// value, or the HTTP client cannot be built.
    pub fn new(config: ResponsesConfig) -> Result<ResponsesClient, LlmError> {
        let credential = config
            .api_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(|k| (AUTHORIZATION, format!("Bearer {k}")));
        let endpoint = Endpoint::new(
            format!("{}/responses", config.base_url.trim_end_matches('/')),
            credential,
            &[],
            config.timeouts,
            config.trace_context,
        )?;
        Ok(ResponsesClient { config, endpoint })
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint.url
    }

    /// The settings this client was built with.
    pub fn config(&self) -> &ResponsesConfig {
        &self.config
    }
}

#[async_trait::async_trait]
impl ModelClient for ResponsesClient {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let body = build_body(request, &self.config.model);
        let cancel = request.cancel.clone();
        match self.endpoint.post(&body, &cancel).await? {
            Body::Json(text) => {
                let events = decode_response_body(&text)?;
                Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
            }
            Body::Stream(response) => Ok(decode_named_sse(
                self.endpoint.byte_stream(response),
                ResponsesDecoder::new(),
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
