//! A model's context window, in tokens (FEATURES §2 "context length per model"): the config
//! override (`model.context_length`) → the provider's model metadata → a built-in table of
//! common models → [`DEFAULT_CONTEXT_LENGTH`]. The outcome of a metadata lookup (or of the
//! table when the provider had nothing) is cached in `HERMES_HOME/cache/context_lengths.json`
//! for [`CACHE_TTL`] so that only the first start of a day pays for the lookup.
//!
//! Metadata sources (one GET each, [`METADATA_TIMEOUT`], any failure just moves on):
//! - `GET {base_url}/models`: the entry whose `id` is the model (or, on a single-model
//!   server, the only entry), field `context_length` (OpenRouter, LM Studio), `max_model_len`
//!   (vLLM), `context_window` (Groq and others), `max_context_length`, or `meta.n_ctx_train`
//!   (llama.cpp server's training context);
//! - `GET {server}/props` (llama.cpp server, `server` = the base URL without a trailing
//!   `/v1`): `default_generation_settings.n_ctx`, the context the server actually runs with,
//!   which wins over `n_ctx_train`.
//!
//! Anthropic, Responses and the embedded model are not asked (their model lists carry no
//! context size); the table covers them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runtime::{ApiMode, Runtime};

/// The window assumed when nothing else is known: 128k tokens (FEATURES §2).
pub const DEFAULT_CONTEXT_LENGTH: u64 = 128_000;
/// How long a metadata answer stays in the cache file: 24 hours.
pub const CACHE_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// Timeout of each metadata request: 3 seconds.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(3);

/// Context windows of common models, matched as a substring of the lowercase model name
/// (the longest pattern wins). Sources: the providers' model pages (Anthropic "Models
/// overview", OpenAI model docs, Google Gemini models, DeepSeek "Models & Pricing", xAI
/// models, Moonshot Kimi K2, Nous Hermes 4 cards), as of 2025.
const TABLE: &[(&str, u64)] = &[
    ("claude", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-2.5", 1_048_576),
    ("gemini-2.0", 1_048_576),
    ("deepseek", 128_000),
    ("grok-4", 256_000),
    ("grok-3", 131_072),
    ("kimi-k2", 262_144),
    ("hermes-4", 131_072),
    ("hermes-3", 131_072),
    ("qwen3", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.3", 131_072),
    ("smollm2", 8_192),
];

/// Where a context length came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextSource {
    /// `model.context_length` in config.yaml.
    Config,
    /// The provider's model metadata (fresh).
    Metadata,
    /// The provider's model metadata, from the cache file.
    Cache,
    /// The built-in table.
    Table,
    /// [`DEFAULT_CONTEXT_LENGTH`].
    Default,
}

/// A context window and its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLength {
    /// Tokens.
    pub tokens: u64,
    /// Where it came from.
    pub source: ContextSource,
}

/// The built-in table's entry for a model (longest matching pattern), if any.
pub fn table_context_length(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    TABLE
        .iter()
        .filter(|(pat, _)| m.contains(pat))
        .max_by_key(|(pat, _)| pat.len())
        .map(|(_, n)| *n)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CacheEntry {
    tokens: u64,
    fetched_at: u64,
}

fn cache_key(rt: &Runtime) -> String {
    format!("{}|{}", rt.base_url.trim_end_matches('/'), rt.model)
}

fn read_cache(path: &Path) -> BTreeMap<String, CacheEntry> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn write_cache(path: &Path, key: String, tokens: u64, now: u64) {
    let mut all = read_cache(path);
    all.retain(|_, e| now.saturating_sub(e.fetched_at) < CACHE_TTL.as_secs());
    all.insert(
        key,
        CacheEntry {
            tokens,
            fetched_at: now,
        },
    );
    let result = serde_json::to_string_pretty(&all)
        .map_err(std::io::Error::other)
        .and_then(|text| hermes_protocol::private_fs::write_atomic(path, text));
    if let Err(e) = result {
        tracing::warn!(error = %e, path = %path.display(), "could not write the context-length cache");
    }
}

/// Resolves the context window of `rt` (order in the module doc). `cache_file` is
/// `HERMES_HOME/cache/context_lengths.json` (`None`: no cache); `now` is Unix seconds. Never
/// fails: an unreachable or silent provider falls through to the table and the default.
pub async fn resolve_context_length(
    rt: &Runtime,
    cache_file: Option<&Path>,
    now: u64,
) -> ContextLength {
    if let Some(tokens) = rt.context_window.filter(|t| *t > 0) {
        return ContextLength {
            tokens,
            source: ContextSource::Config,
        };
    }
    if rt.api_mode == ApiMode::ChatCompletions {
        let key = cache_key(rt);
        if let Some(path) = cache_file
            && let Some(e) = read_cache(path).get(&key)
            && now.saturating_sub(e.fetched_at) < CACHE_TTL.as_secs()
        {
            return ContextLength {
                tokens: e.tokens,
                source: ContextSource::Cache,
            };
        }
        if let Some(tokens) = fetch_metadata(rt).await {
            if let Some(path) = cache_file {
                write_cache(path, key, tokens, now);
            }
            return ContextLength {
                tokens,
                source: ContextSource::Metadata,
            };
        }
        // Remember the fallback too, so a provider without metadata is not asked every start.
        let fallback = from_table(&rt.model);
        if let Some(path) = cache_file {
            write_cache(path, key, fallback.tokens, now);
        }
        return fallback;
    }
    from_table(&rt.model)
}

/// The table's answer, else the default.
fn from_table(model: &str) -> ContextLength {
    match table_context_length(model) {
        Some(tokens) => ContextLength {
            tokens,
            source: ContextSource::Table,
        },
        None => ContextLength {
            tokens: DEFAULT_CONTEXT_LENGTH,
            source: ContextSource::Default,
        },
    }
}

async fn get_json(http: &reqwest::Client, url: String, headers: &HeaderMap) -> Option<Value> {
    let response = http.get(url).headers(headers.clone()).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let text = response.text().await.ok()?;
    serde_json::from_str(&text).ok()
}

/// Asks `/props` (llama.cpp) and `/models`; `None` when neither names a size.
async fn fetch_metadata(rt: &Runtime) -> Option<u64> {
    crate::transport::init_tls();
    let http = reqwest::Client::builder()
        .timeout(METADATA_TIMEOUT)
        .connect_timeout(METADATA_TIMEOUT)
        .build()
        .ok()?;
    let mut headers = HeaderMap::new();
    if let Some(key) = rt.api_key.as_deref().filter(|k| !k.is_empty())
        && let Ok(v) = HeaderValue::from_str(&format!("Bearer {key}"))
    {
        headers.insert(AUTHORIZATION, v);
    }
    let base = rt.base_url.trim_end_matches('/');
    let server = base.strip_suffix("/v1").unwrap_or(base);
    if let Some(props) = get_json(&http, format!("{server}/props"), &headers).await
        && let Some(n) = props
            .pointer("/default_generation_settings/n_ctx")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
    {
        return Some(n);
    }
    let models = get_json(&http, format!("{base}/models"), &headers).await?;
    models_context_length(&models, &rt.model)
}

/// The context length a `/models` answer gives for `model` (fields in the module doc).
pub fn models_context_length(models: &Value, model: &str) -> Option<u64> {
    let data = models.get("data").and_then(Value::as_array)?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    [
        "/context_length",
        "/max_model_len",
        "/context_window",
        "/max_context_length",
        "/top_provider/context_length",
        "/meta/n_ctx_train",
    ]
    .iter()
    .find_map(|p| entry.pointer(p).and_then(Value::as_u64).filter(|n| *n > 0))
}
