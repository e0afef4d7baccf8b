//! `model:` of `config.yaml` (and each `fallback_providers` entry): a bare model name or a
//! provider/model table.

use serde::{Deserialize, Serialize};

/// `model:` as written: either a bare model name or a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelSetting {
    /// `model: some/model-name`
    Name(String),
    /// `model: {provider: …, default: …, base_url: …}`
    Table(Box<ModelConfig>),
}

impl Default for ModelSetting {
    fn default() -> Self {
        ModelSetting::Table(Box::default())
    }
}

impl ModelSetting {
    /// The setting as a table (a bare name becomes `default`).
    pub fn to_config(&self) -> ModelConfig {
        match self {
            ModelSetting::Name(n) => ModelConfig {
                default: Some(n.clone()),
                ..ModelConfig::default()
            },
            ModelSetting::Table(t) => (**t).clone(),
        }
    }
}

/// A provider/model choice (`model:` table, and each `fallback_providers` entry). Its
/// `Debug` does not print the keys.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelConfig {
    /// Provider id or alias (`openrouter`, `openai`, `custom`, `local`, …).
    pub provider: Option<String>,
    /// Model name (the Python system calls this key `default`; `model` is accepted too).
    #[serde(alias = "model")]
    pub default: Option<String>,
    /// Base URL of an OpenAI-compatible endpoint (e.g. `http://127.0.0.1:8080/v1`).
    pub base_url: Option<String>,
    /// Context window override in tokens.
    pub context_length: Option<u64>,
    /// API key written in the config (prefer `.env`).
    pub api_key: Option<String>,
    /// More keys for the same provider: with `api_key` (or the provider's env var) and the
    /// keys of `hermes auth add` they form the credential pool (FEATURES §2).
    pub api_keys: Vec<String>,
    /// How the pool picks a key: `fill_first` (default), `round_robin` or `least_used`.
    pub credential_strategy: Option<String>,
    /// Force an api_mode (`chat_completions`, …) instead of detecting it.
    pub api_mode: Option<String>,
    /// Maximum output tokens per call.
    pub max_tokens: Option<u32>,
    /// Seconds without any data from the provider (before the response head, or between
    /// two pieces of a streamed answer) after which a model call is cut as a `timeout`
    /// error (default 60; issue 18 §6). Python Hermes calls its per-model equivalent
    /// `stale_timeout_seconds`, accepted here as an alias.
    #[serde(alias = "stale_timeout_seconds")]
    pub stream_idle_timeout: Option<f64>,
    /// Longest whole model call in seconds, connecting to the last byte (default 1800, as
    /// Python Hermes' `request_timeout_seconds` / `HERMES_API_TIMEOUT`).
    pub request_timeout_seconds: Option<f64>,
    /// Whether the model reads images (Python Hermes' `model.supports_vision`), read as
    /// Python reads capability flags: a boolean, a number (0 is false) or a string such as
    /// `"true"`, `"no"`, `"1"`; anything else counts as unset (known model families only).
    #[serde(
        deserialize_with = "capability_flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub supports_vision: Option<bool>,
}

/// Reads a capability flag leniently (see [`ModelConfig::supports_vision`]).
fn capability_flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    let value = Option::<yaml_serde::Value>::deserialize(d)?;
    Ok(match value {
        Some(yaml_serde::Value::Bool(b)) => Some(b),
        Some(yaml_serde::Value::Number(n)) => n.as_i64().map(|n| n != 0),
        Some(yaml_serde::Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    })
}

crate::debug_redacted!(ModelConfig {
    secret: [api_key, api_keys],
    shown: [
        provider,
        default,
        base_url,
        context_length,
        credential_strategy,
        api_mode,
        max_tokens,
        stream_idle_timeout,
        request_timeout_seconds,
        supports_vision,
    ],
});
