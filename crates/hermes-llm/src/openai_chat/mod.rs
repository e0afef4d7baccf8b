//! OpenAI-compatible Chat Completions adapter (FEATURES §2): OpenAI, OpenRouter, Nous Portal,
//! DeepSeek, Gemini's OpenAI endpoint, vLLM, llama.cpp server, Ollama, LM Studio — anything
//! that serves `POST {base_url}/chat/completions`.
//!
//! The request always asks for SSE streaming; a server that answers with
//! `content-type: application/json` anyway is decoded as a whole body. Non-2xx statuses become
//! [`LlmError::from_http`].

mod assemble;
pub mod capabilities;
mod request;
mod stream;
mod wire;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

pub use assemble::{ChatAssembler, PromptHint, decode_completion_body, map_usage};
pub use capabilities::ChatWireOptions;
pub use request::{apply_cache_markers, build_body, estimate_prompt_tokens, message_to_wire};
pub use stream::decode_sse;
pub use wire::body_bytes;

use crate::anthropic::CacheTtl;
use crate::client::{ChatRequest, EventStream, ModelClient};
use crate::error::{ErrorClass, LlmError};
use crate::redact::mask_secret;
use crate::timeouts::Timeouts;
use crate::transport::{Body, Endpoint};

/// Settings of one Chat Completions endpoint.
#[derive(Clone)]
pub struct OpenAiChatConfig {
    /// Base URL including the version path, e.g. `https://openrouter.ai/api/v1`; the adapter
    /// appends `/chat/completions`.
    pub base_url: String,
    /// Bearer key sent as `Authorization: Bearer …`; `None` for local servers.
    pub api_key: Option<String>,
    /// Model name used when a request leaves `ChatRequest.model` empty.
    pub model: String,
    /// Provider id reported by [`ModelClient::provider`] (`openrouter`, `custom`, …).
    pub provider_id: String,
    /// Extra request headers (e.g. OpenRouter's `HTTP-Referer`, `X-Title`).
    pub extra_headers: Vec<(String, String)>,
    /// Context window in tokens, when known (reported, and used to explain empty responses).
    pub context_window: Option<u64>,
    /// Connect, silence and total limits of each call ([`Timeouts`]).
    pub timeouts: Timeouts,
    /// Send the W3C trace context (`traceparent`) of the model-call span with each request
    /// (`observability.otlp.propagate_to_providers`; off by default: a provider learns
    /// nothing it does not need).
    pub trace_context: bool,
    /// Reasoning echo and prompt-cache markers for this endpoint and model
    /// ([`capabilities`]); detected by [`OpenAiChatConfig::new`].
    pub wire: ChatWireOptions,
}

impl OpenAiChatConfig {
    /// A config with no key, no extra headers, provider id `custom`, the default [`Timeouts`] and the
    /// wire options detected from the base URL and model ([`ChatWireOptions::detect`], 5 m
    /// cache TTL).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiChatConfig {
        let base_url = base_url.into();
        let model = model.into();
        OpenAiChatConfig {
            wire: ChatWireOptions::detect("custom", &base_url, &model, CacheTtl::FiveMinutes),
            base_url,
            api_key: None,
            model,
            provider_id: "custom".to_string(),
            extra_headers: Vec::new(),
            context_window: None,
            timeouts: Timeouts::default(),
            trace_context: false,
        }
    }
}

impl std::fmt::Debug for OpenAiChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_deref().map(mask_secret))
            .field("model", &self.model)
            .field("provider_id", &self.provider_id)
            .field(
                "extra_headers",
                &self
                    .extra_headers
                    .iter()
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>(),
            )
            .field("context_window", &self.context_window)
            .field("timeouts", &self.timeouts)
            .field("wire", &self.wire)
            .finish()
    }
}

/// A [`ModelClient`] for one Chat Completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiChatClient {
    config: OpenAiChatConfig,
    endpoint: Endpoint,
}

impl OpenAiChatClient {
    /// Builds the client (installs the TLS provider, [`crate::init_tls`]). Errors (class `format_error`) when a header name
    /// or value, or the key, is not a valid HTTP header, or the HTTP client cannot be built.
    pub fn new(config: OpenAiChatConfig) -> Result<OpenAiChatClient, LlmError> {
        let credential = config
            .api_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(|k| (AUTHORIZATION, format!("Bearer {k}")));
        let endpoint = Endpoint::new(
            format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            credential,
            &config.extra_headers,
            config.timeouts,
            config.trace_context,
        )?;
        Ok(OpenAiChatClient { config, endpoint })
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint.url
    }

    /// `GET {base_url}/models`: the ids in `data[].id`, in server order. Errors as for a chat
    /// call (HTTP status → [`LlmError::from_http`], transport → timeout class, a body that is
    /// not a model list → format_error).
    pub async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
        let mut headers = self.endpoint.headers.clone();
        headers.remove(CONTENT_TYPE);
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let response = self
            .endpoint
            .http
            .get(url)
            .headers(headers)
            .send()
            .await
            .map_err(|e| LlmError::from_transport(&e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response
            .text()
            .await
            .map_err(|e| LlmError::from_transport(&e))?;
        if !status.is_success() {
            return Err(LlmError::from_http(status.as_u16(), &headers, &text));
        }
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            LlmError::new(
                ErrorClass::FormatError,
                None,
                format!("model list is not JSON: {e}"),
            )
        })?;
        let Some(data) = value.get("data").and_then(|d| d.as_array()) else {
            return Err(LlmError::new(
                ErrorClass::FormatError,
                None,
                "model list has no `data` array",
            ));
        };
        Ok(data
            .iter()
            .filter_map(|m| m.get("id").and_then(|i| i.as_str()).map(str::to_string))
            .collect())
    }

    /// The settings this client was built with.
    pub fn config(&self) -> &OpenAiChatConfig {
        &self.config
    }
}

#[async_trait::async_trait]
impl ModelClient for OpenAiChatClient {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let body = body_bytes(request, &self.config.model, &self.config.wire).map_err(|e| {
            LlmError::new(
                ErrorClass::FormatError,
                None,
                format!("could not write the request body as JSON: {e}"),
            )
        })?;
        let hint = PromptHint {
            estimated_prompt_tokens: estimate_prompt_tokens(request),
            context_window: self.config.context_window,
        };
        let cancel = request.cancel.clone();
        match self.endpoint.post_bytes(body, &cancel).await? {
            Body::Json(text) => {
                let events = decode_completion_body(&text, hint)?;
                Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
            }
            Body::Stream(response) => Ok(decode_sse(
                self.endpoint.byte_stream(response),
                hint,
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
