//! Choosing another provider or model while a session runs (`/model` in the REPL and in gateway
//! chats, `hermes model set`): parsing the words the user typed ([`parse_choice`]) and resolving
//! them against the runtime in use ([`resolve_choice`]) by the same runtime resolution as at
//! startup (ARCHITECTURE §5). Nothing is changed here; a front end applies the resolved
//! [`Runtime`] only when resolution succeeded (FEATURES §1 CLI `model`, `/model`; issue 3
//! item 4; issue 7 item 6).

use std::collections::BTreeMap;
use std::path::PathBuf;

use hermes_protocol::config::ModelConfig;
use serde::{Deserialize, Serialize};

use crate::runtime::{CanonicalProvider, ResolveError, ResolveInputs, Runtime, canonical_provider};
pub use crate::runtime::{provider_id, section_for};

/// The provider names a choice accepts, for error messages.
pub const KNOWN_PROVIDERS: &str = "openrouter, openai-api (openai), anthropic, nous, deepseek, gemini, xai, \
     custom, local, or a server alias (llamacpp, ollama, vllm, lmstudio)";

/// A requested switch: a model, and a provider when it changes too. Serialized as
/// `{"provider": "anthropic", "model": "claude-sonnet-4"}` (`provider` omitted when `None`)
/// where a front end persists a chat's choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChoice {
    /// Provider id or alias as typed; `None` keeps the current provider (and its base URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Model name as the provider knows it.
    pub model: String,
}

/// Why a choice was refused. Every message says what was wrong and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    /// No words, or more than two.
    #[error("usage: /model MODEL, /model PROVIDER MODEL or /model PROVIDER:MODEL")]
    Usage,
    /// The provider word names no known provider.
    #[error("unknown provider `{0}`; known providers: {KNOWN_PROVIDERS}")]
    UnknownProvider(String),
    /// A provider was named without a model (`/model anthropic`, `/model anthropic:`): taken
    /// as a model name it would fail at every following call.
    #[error("`{0}` is a provider; say which model too: /model {0} MODEL")]
    MissingModel(String),
    /// The model word cannot be a model name: it starts or ends with `:`, has no letter or
    /// digit, holds control characters or is longer than [`MAX_MODEL_CHARS`] chars.
    #[error("`{0}` is not a model name")]
    BadModel(String),
    /// Runtime resolution refused the choice (a missing key, a missing base URL, …).
    #[error(transparent)]
    Resolve(#[from] ResolveError),
}

/// Parses the words after `/model` (or `hermes model set`): `MODEL`, `PROVIDER MODEL`, or
/// `PROVIDER:MODEL` when the part before the colon is a provider name (model names such as
/// `llama3:8b` keep their colon).
///
/// Errors: [`ChoiceError::Usage`] for no words or more than two,
/// [`ChoiceError::UnknownProvider`] for an unknown provider in the two-word form,
/// [`ChoiceError::MissingModel`] for a provider without a model (`anthropic`, `anthropic:`),
/// [`ChoiceError::BadModel`] for a word that cannot be a model name (`:`, `-`, `x:`).
pub fn parse_choice(words: &str) -> Result<ModelChoice, ChoiceError> {
    let choice = parse_words(words)?;
    check_model(&choice)?;
    Ok(choice)
}

/// Longest model name accepted, in chars.
pub const MAX_MODEL_CHARS: usize = 200;

/// Refuses a choice whose model is a provider name alone or not a model name at all
/// ([`ChoiceError::MissingModel`], [`ChoiceError::BadModel`]).
fn check_model(choice: &ModelChoice) -> Result<(), ChoiceError> {
    let m = choice.model.as_str();
    if choice.provider.is_none() && canonical_provider(m).is_some() {
        return Err(ChoiceError::MissingModel(m.to_string()));
    }
    if let Some(p) = m
        .strip_suffix(':')
        .filter(|p| canonical_provider(p).is_some())
    {
        return Err(ChoiceError::MissingModel(p.to_string()));
    }
    let shown = || ChoiceError::BadModel(m.chars().take(60).collect());
    if m.starts_with(':')
        || m.ends_with(':')
        || !m.chars().any(char::is_alphanumeric)
        || m.chars().any(char::is_control)
        || m.chars().count() > MAX_MODEL_CHARS
    {
        return Err(shown());
    }
    Ok(())
}

fn parse_words(words: &str) -> Result<ModelChoice, ChoiceError> {
    let parts: Vec<&str> = words.split_whitespace().collect();
    match parts.as_slice() {
        [one] => match one.split_once(':') {
            Some((p, m)) if !m.is_empty() && canonical_provider(p).is_some() => Ok(ModelChoice {
                provider: Some(p.to_string()),
                model: m.to_string(),
            }),
            _ => Ok(ModelChoice {
                provider: None,
                model: one.to_string(),
            }),
        },
        [p, m] => {
            known_provider(p)?;
            Ok(ModelChoice {
                provider: Some(p.to_string()),
                model: m.to_string(),
            })
        }
        _ => Err(ChoiceError::Usage),
    }
}

fn known_provider(name: &str) -> Result<CanonicalProvider, ChoiceError> {
    canonical_provider(name).ok_or_else(|| ChoiceError::UnknownProvider(name.to_string()))
}

/// What [`resolve_choice`] resolves against besides the choice: config.yaml's `model:`
/// section, the environment (process env merged with `.env`) and the installed local model.
#[derive(Debug, Clone, Default)]
pub struct ChoiceContext {
    /// `config.yaml` `model:` section.
    pub configured: ModelConfig,
    /// Environment (provider keys).
    pub env: BTreeMap<String, String>,
    /// Path of the installed embedded model, if any.
    pub local_model_available: Option<PathBuf>,
}

/// Resolves `choice` against the session's `current` runtime: without a provider the current
/// one (and its base URL) is kept; with one, that provider's settings and keys are looked up
/// as at startup (config.yaml when it names the same provider, `.env`, environment).
///
/// Errors: [`ChoiceError::UnknownProvider`], or [`ChoiceError::Resolve`] naming the missing
/// key or base URL.
pub fn resolve_choice(
    ctx: &ChoiceContext,
    current: &Runtime,
    choice: &ModelChoice,
) -> Result<Runtime, ChoiceError> {
    let inputs = match &choice.provider {
        None => ResolveInputs {
            provider: Some(current.provider.clone()),
            model: Some(choice.model.clone()),
            base_url: (!current.base_url.is_empty()).then(|| current.base_url.clone()),
            config: section_for(&ctx.configured, &current.provider),
            env: ctx.env.clone(),
            local_model_available: ctx.local_model_available.clone(),
            file: None,
            pool_keys: BTreeMap::new(),
        },
        Some(p) => {
            known_provider(p)?;
            ResolveInputs {
                provider: Some(p.clone()),
                model: Some(choice.model.clone()),
                base_url: None,
                config: section_for(&ctx.configured, p),
                env: ctx.env.clone(),
                local_model_available: ctx.local_model_available.clone(),
                file: None,
                pool_keys: BTreeMap::new(),
            }
        }
    };
    Ok(crate::runtime::resolve(&inputs)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn custom() -> ChoiceContext {
        ChoiceContext {
            configured: ModelConfig {
                provider: Some("custom".into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                default: Some("first".into()),
                api_key: Some("sk-custom-secret".into()),
                ..ModelConfig::default()
            },
            ..ChoiceContext::default()
        }
    }

    fn current(ctx: &ChoiceContext) -> Runtime {
        crate::runtime::resolve(&ResolveInputs {
            config: ctx.configured.clone(),
            env: ctx.env.clone(),
            ..ResolveInputs::default()
        })
        .unwrap()
    }

    #[test]
    fn choices_parse_with_and_without_a_provider() {
        let c = parse_choice("gpt-4o").unwrap();
        assert_eq!((c.provider, c.model.as_str()), (None, "gpt-4o"));
        let c = parse_choice("anthropic claude-sonnet-4").unwrap();
        assert_eq!(c.provider.as_deref(), Some("anthropic"));
        let c = parse_choice("claude:claude-opus-4").unwrap();
        assert_eq!(
            (c.provider.as_deref(), c.model.as_str()),
            (Some("claude"), "claude-opus-4")
        );
        // A colon that is not after a provider name is part of the model name.
        let c = parse_choice("llama3:8b").unwrap();
        assert_eq!((c.provider, c.model.as_str()), (None, "llama3:8b"));
        let e = parse_choice("frobnicate some-model")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("unknown provider `frobnicate`"), "{e}");
        assert_eq!(parse_choice(""), Err(ChoiceError::Usage));
        assert_eq!(parse_choice("a b c"), Err(ChoiceError::Usage));
    }

    #[test]
    fn a_provider_alone_or_a_malformed_model_is_refused() {
        for words in ["anthropic", "claude", "local", "openrouter:", "ollama:"] {
            let e = parse_choice(words).unwrap_err();
            assert!(matches!(e, ChoiceError::MissingModel(_)), "{words}: {e}");
            assert!(e.to_string().contains("say which model too"), "{e}");
        }
        let long = "m".repeat(MAX_MODEL_CHARS + 1);
        for words in [
            ":",
            "::",
            "-",
            "llama3:",
            ":8b",
            "anthropic :x",
            "a\u{1b}[31m",
            long.as_str(),
        ] {
            let e = parse_choice(words).unwrap_err();
            assert!(matches!(e, ChoiceError::BadModel(_)), "{words}: {e}");
        }
        // Ordinary names still pass, colons and slashes included.
        for words in [
            "llama3:8b",
            "openai/gpt-4o",
            "anthropic claude-sonnet-4",
            "ollama qwen2.5:7b",
        ] {
            assert!(parse_choice(words).is_ok(), "{words}");
        }
    }

    #[test]
    fn a_choice_serializes_without_an_absent_provider() {
        let c = parse_choice("gpt-4o").unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"model":"gpt-4o"}"#);
        let c = parse_choice("ollama llama3:8b").unwrap();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(text, r#"{"provider":"ollama","model":"llama3:8b"}"#);
        assert_eq!(serde_json::from_str::<ModelChoice>(&text).unwrap(), c);
    }

    #[test]
    fn a_model_alone_keeps_the_provider_and_its_base_url() {
        let ctx = custom();
        let rt = resolve_choice(&ctx, &current(&ctx), &parse_choice("second").unwrap()).unwrap();
        assert_eq!(rt.provider, "custom");
        assert_eq!(rt.model, "second");
        assert_eq!(rt.base_url, "http://127.0.0.1:9/v1");
    }

    #[test]
    fn a_new_provider_needs_its_own_key_and_never_gets_the_old_one() {
        let mut ctx = custom();
        let cur = current(&ctx);
        let e = resolve_choice(&ctx, &cur, &parse_choice("openrouter x/y").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("OPENROUTER_API_KEY"), "{e}");

        ctx.env
            .insert("ANTHROPIC_API_KEY".into(), "sk-ant-from-env".into());
        let rt =
            resolve_choice(&ctx, &cur, &parse_choice("claude:claude-sonnet-4").unwrap()).unwrap();
        assert_eq!(rt.provider, "anthropic");
        assert_eq!(rt.api_key.as_deref(), Some("sk-ant-from-env"));
        assert_eq!(rt.api_mode.as_str(), "anthropic_messages");
    }

    #[test]
    fn section_for_keeps_only_neutral_keys_for_another_provider() {
        let ctx = custom();
        assert_eq!(section_for(&ctx.configured, "llamacpp"), ctx.configured);
        let other = section_for(&ctx.configured, "openai");
        assert_eq!(other.api_key, None);
        assert_eq!(other.base_url, None);
    }
}
