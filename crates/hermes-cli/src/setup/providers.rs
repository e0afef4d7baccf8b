//! What the wizard offers: the providers hermes resolves (FEATURES §2; the ids, key variables,
//! base URLs and default models come from `hermes_llm::resolve`, so they cannot drift from
//! what a session will use); the models a provider lists come from
//! `crate::assembly::model_switch::list_models`.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use hermes_llm::{ApiMode, ResolveError, ResolveInputs};
use hermes_protocol::config::ModelConfig;

/// Hosted providers offered by the wizard, in the order shown (after `local`).
pub const HOSTED: &[&str] = &[
    "openrouter",
    "openai-api",
    "anthropic",
    "nous",
    "deepseek",
    "gemini",
    "xai",
];

/// The settings of one hosted provider, as resolution sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosted {
    /// Canonical id (`openrouter`).
    pub id: String,
    /// The environment variable its key is read from (`OPENROUTER_API_KEY`).
    pub env_var: String,
    /// Base URL with the version path.
    pub base_url: String,
    /// The model used when none is configured.
    pub default_model: String,
    /// Its wire protocol.
    pub api_mode: ApiMode,
}

/// Looks up `provider` (an id or alias of a hosted provider) through runtime resolution:
/// without a key resolution names the key variable; with a placeholder key it gives the base
/// URL and default model. Errors for providers that are not hosted (`custom`, `local`) or
/// unknown.
pub fn hosted(provider: &str) -> Result<Hosted> {
    let mut inputs = ResolveInputs {
        provider: Some(provider.to_string()),
        config: ModelConfig::default(),
        ..ResolveInputs::default()
    };
    let env_var = match hermes_llm::resolve(&inputs) {
        // The first variable when the provider reads several ("A or B").
        Err(ResolveError::MissingApiKey { env_var, .. }) => {
            env_var.split(" or ").next().unwrap_or_default().to_string()
        }
        Err(e) => return Err(anyhow!("{e}")),
        Ok(_) => {
            return Err(anyhow!(
                "`{provider}` is not a hosted provider with an API key"
            ));
        }
    };
    inputs.env = BTreeMap::from([(env_var.clone(), "placeholder".to_string())]);
    let rt = hermes_llm::resolve(&inputs).map_err(|e| anyhow!("{e}"))?;
    Ok(Hosted {
        id: rt.provider,
        env_var,
        base_url: rt.base_url,
        default_model: rt.model,
        api_mode: rt.api_mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosted_providers_come_from_resolution() {
        let or = hosted("openrouter").unwrap();
        assert_eq!(or.env_var, "OPENROUTER_API_KEY");
        assert!(or.base_url.starts_with("https://openrouter.ai/"));
        assert!(!or.default_model.is_empty());
        let claude = hosted("claude").unwrap();
        assert_eq!(claude.id, "anthropic");
        assert_eq!(claude.api_mode, ApiMode::AnthropicMessages);
        for id in HOSTED {
            assert_eq!(hosted(id).unwrap().id, *id);
        }
        assert!(hosted("custom").is_err());
        assert!(
            hosted("nope")
                .unwrap_err()
                .to_string()
                .contains("unknown provider")
        );
    }
}
