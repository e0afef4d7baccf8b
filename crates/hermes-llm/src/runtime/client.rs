//! Building the [`ModelClient`] for a resolved [`Runtime`]: the adapter its api_mode names,
//! its credential pool (`auth.json` and the environment) and the options that come from
//! `config.yaml` and `HERMES_HOME` ([`ClientOptions`]).

use std::path::PathBuf;
use std::sync::Arc;

use hermes_protocol::config::{Config, ModelConfig};

use crate::anthropic::{AnthropicClient, AnthropicConfig, CacheTtl};
use crate::client::ModelClient;
use crate::credentials::{CredentialPool, PoolStrategy, load_state};
use crate::error::{ErrorClass, LlmError};
use crate::openai_chat::{ChatWireOptions, OpenAiChatClient, OpenAiChatConfig};
use crate::openai_responses::{ResponsesClient, ResponsesConfig};
use crate::pooled::PooledClient;
use crate::redact::mask_secret;
use crate::timeouts::Timeouts;

use super::{ApiMode, Runtime};

/// Options of [`build_client_with`] that come from `config.yaml` and `HERMES_HOME` rather
/// than from the resolved runtime.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ClientOptions {
    /// Lifetime of prompt-cache markers (`prompt_caching.cache_ttl`, default 5 m), for the
    /// Anthropic adapter and Claude models through OpenRouter.
    pub cache_ttl: CacheTtl,
    /// More keys for the runtime's provider (`model.api_keys`), labelled `config-1`, … .
    pub extra_keys: Vec<String>,
    /// Pool strategy (`model.credential_strategy`); `None`: the provider's entry of
    /// [`ClientOptions::pool_strategies`], else the `auth.json` pool's, else `fill_first`.
    pub strategy: Option<PoolStrategy>,
    /// `credential_pool_strategies:` of `config.yaml`, by provider id (Python Hermes' place
    /// for a pool's strategy).
    pub pool_strategies: std::collections::BTreeMap<String, PoolStrategy>,
    /// `HERMES_HOME/auth.json` (keys added with `hermes auth add`), if any.
    pub auth_file: Option<PathBuf>,
    /// `HERMES_HOME/cache/credential_state.json` (uses and cooldowns), if persisted.
    pub state_file: Option<PathBuf>,
    /// Time limits of each model call (`model.stream_idle_timeout`,
    /// `model.request_timeout_seconds`; [`Timeouts::from_section`]).
    pub timeouts: Timeouts,
    /// `observability.otlp.propagate_to_providers`: model requests carry the W3C trace
    /// context of their span.
    pub trace_context: bool,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("cache_ttl", &self.cache_ttl)
            .field(
                "extra_keys",
                &self
                    .extra_keys
                    .iter()
                    .map(|k| mask_secret(k))
                    .collect::<Vec<_>>(),
            )
            .field("strategy", &self.strategy)
            .field("pool_strategies", &self.pool_strategies)
            .field("auth_file", &self.auth_file)
            .field("state_file", &self.state_file)
            .field("timeouts", &self.timeouts)
            .field("trace_context", &self.trace_context)
            .finish()
    }
}

impl ClientOptions {
    /// Reads the options from `config.yaml` (prompt caching, the `model:` section's time
    /// limits). An unusable value falls back to the default and is reported in the returned
    /// warnings (e.g. ``prompt_caching.cache_ttl `2h` …``).
    pub fn from_config(config: &Config) -> (ClientOptions, Vec<String>) {
        let mut opts = ClientOptions::default();
        let (timeouts, mut warnings) = Timeouts::from_section(&config.model.to_config());
        opts.timeouts = timeouts;
        if let Some(raw) = config.prompt_caching.cache_ttl.as_deref() {
            match CacheTtl::parse(raw) {
                Some(ttl) => opts.cache_ttl = ttl,
                None => warnings.push(format!(
                    "prompt_caching.cache_ttl `{raw}` is not `5m` or `1h`; using 5m"
                )),
            }
        }
        for (provider, raw) in config.pool_strategy_names() {
            match PoolStrategy::parse(&raw) {
                Some(s) => {
                    opts.pool_strategies.insert(provider, s);
                }
                None => warnings.push(format!(
                    "credential_pool_strategies.{provider} `{raw}` is not {}; using fill_first",
                    PoolStrategy::NAMES
                )),
            }
        }
        match config
            .observability
            .as_ref()
            .and_then(|o| o.get("otlp"))
            .and_then(|o| o.get("propagate_to_providers"))
        {
            None => {}
            Some(v) if v.as_bool().is_some() => opts.trace_context = v.as_bool() == Some(true),
            Some(other) => warnings.push(format!(
                "observability.otlp.propagate_to_providers must be true or false, not {other:?}; \
                 not sending trace context to providers"
            )),
        }
        (opts, warnings)
    }

    /// Adds the credential-pool sources of one `model:`-style section (`api_keys`,
    /// `credential_strategy`) and of a hermes home (`auth.json`, the state file). An unknown
    /// strategy is reported in the returned warnings and ignored.
    pub fn with_pool(
        mut self,
        section: &ModelConfig,
        auth_file: Option<PathBuf>,
        state_file: Option<PathBuf>,
    ) -> (ClientOptions, Vec<String>) {
        let mut warnings = Vec::new();
        self.extra_keys = section
            .api_keys
            .iter()
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect();
        if let Some(raw) = section.credential_strategy.as_deref() {
            match PoolStrategy::parse(raw) {
                Some(s) => self.strategy = Some(s),
                None => warnings.push(format!(
                    "model.credential_strategy `{raw}` is not {}; using fill_first",
                    PoolStrategy::NAMES
                )),
            }
        }
        self.auth_file = auth_file;
        self.state_file = state_file;
        (self, warnings)
    }
}

/// The credential pool of a runtime: its own key first (label `primary`), then
/// [`ClientOptions::extra_keys`] (`config-N`), then the `auth.json` keys of the same provider
/// (their own labels); a key already present is not added twice. Saved uses and cooldowns are
/// applied by label. Errors (class `format_error`) when `auth.json` cannot be read or parsed.
pub fn credential_pool(rt: &Runtime, opts: &ClientOptions) -> Result<CredentialPool, LlmError> {
    let stored = match &opts.auth_file {
        Some(path) => CredentialPool::load(path)
            .map_err(|e| LlmError::new(ErrorClass::FormatError, None, e.to_string()))?
            .into_iter()
            .find(|p| p.provider == rt.provider),
        None => None,
    };
    let strategy = opts
        .strategy
        .or_else(|| opts.pool_strategies.get(&rt.provider).copied())
        .or(stored.as_ref().map(|p| p.strategy))
        .unwrap_or_default();
    let mut pool = CredentialPool::new(rt.provider.clone(), strategy);
    if let Some(key) = rt.api_key.as_deref().filter(|k| !k.is_empty()) {
        pool.add("primary", key);
    }
    for (i, key) in opts.extra_keys.iter().enumerate() {
        pool.add(format!("config-{}", i + 1), key.clone());
    }
    for c in stored.iter().flat_map(|p| p.credentials.iter()) {
        pool.add(c.label.clone(), c.key.clone());
    }
    if let Some(path) = &opts.state_file
        && let Some(state) = load_state(path).get(&rt.provider)
    {
        pool.apply_state(state);
    }
    Ok(pool)
}

/// [`build_client_with`] with the default [`ClientOptions`].
pub fn build_client(rt: &Runtime) -> Result<Arc<dyn ModelClient>, LlmError> {
    build_client_with(rt, &ClientOptions::default())
}

/// Builds the client for a resolved runtime: Chat Completions (OpenRouter gets its attribution
/// headers; the wire options — reasoning echo, cache markers for Claude models through
/// OpenRouter — are detected from provider, base URL and model), Anthropic Messages (prompt
/// caching `system_and_3`) and Responses. When the runtime's key, `model.api_keys` and
/// `auth.json` give the provider two or more keys, the result is a [`PooledClient`] over
/// [`credential_pool`]. The local model is constructed by the `local` module; asking for it
/// here is a `format_error`.
pub fn build_client_with(
    rt: &Runtime,
    opts: &ClientOptions,
) -> Result<Arc<dyn ModelClient>, LlmError> {
    if rt.api_mode == ApiMode::Local || rt.api_key.is_none() {
        return build_single(rt, opts);
    }
    let pool = credential_pool(rt, opts)?;
    if pool.credentials.len() < 2 {
        return build_single(rt, opts);
    }
    let clients = pool
        .credentials
        .iter()
        .map(|c| {
            let mut one = rt.clone();
            one.api_key = Some(c.key.clone());
            build_single(&one, opts)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(PooledClient::new(
        clients,
        pool,
        opts.state_file.clone(),
    )?))
}

/// One client for the runtime's single key.
fn build_single(rt: &Runtime, opts: &ClientOptions) -> Result<Arc<dyn ModelClient>, LlmError> {
    match rt.api_mode {
        ApiMode::ChatCompletions => {
            let mut cfg = OpenAiChatConfig::new(rt.base_url.clone(), rt.model.clone());
            cfg.api_key = rt.api_key.clone();
            cfg.provider_id = rt.provider.clone();
            cfg.context_window = rt.context_window;
            cfg.timeouts = opts.timeouts;
            cfg.trace_context = opts.trace_context;
            cfg.wire =
                ChatWireOptions::detect(&rt.provider, &rt.base_url, &rt.model, opts.cache_ttl);
            if rt.provider == "openrouter" {
                cfg.extra_headers = vec![
                    (
                        "HTTP-Referer".to_string(),
                        "https://github.com/NousResearch/hermes-agent".to_string(),
                    ),
                    ("X-Title".to_string(), "hermes".to_string()),
                ];
            }
            Ok(Arc::new(OpenAiChatClient::new(cfg)?))
        }
        ApiMode::AnthropicMessages => {
            let mut cfg = AnthropicConfig::new(rt.base_url.clone(), rt.model.clone());
            cfg.api_key = rt.api_key.clone();
            cfg.provider_id = rt.provider.clone();
            cfg.context_window = rt.context_window;
            cfg.timeouts = opts.timeouts;
            cfg.trace_context = opts.trace_context;
            cfg.body.cache = Some(opts.cache_ttl);
            Ok(Arc::new(AnthropicClient::new(cfg)?))
        }
        ApiMode::OpenAiResponses => {
            let mut cfg = ResponsesConfig::new(rt.base_url.clone(), rt.model.clone());
            cfg.api_key = rt.api_key.clone();
            cfg.provider_id = rt.provider.clone();
            cfg.context_window = rt.context_window;
            cfg.timeouts = opts.timeouts;
            cfg.trace_context = opts.trace_context;
            Ok(Arc::new(ResponsesClient::new(cfg)?))
        }
        ApiMode::Local => Err(LlmError::new(
            ErrorClass::FormatError,
            None,
            "the local model client is constructed by hermes_llm::local (build with the `local` feature)",
        )),
    }
}
