//! Provider names as they are written and compared (`openai` is Python Hermes'
//! `openai-api`; `claude` is `anthropic`), and which parts of the configuration belong to
//! which provider: the `model:` section ([`section_for`]) and `auth.json`'s pools
//! ([`pool_keys`]).

use std::collections::BTreeMap;

use hermes_protocol::config::ModelConfig;

use super::{CanonicalProvider, canonical_provider};

/// The name to write into `config.yaml` or `cron/jobs.json` for a provider the user typed: a
/// hosted provider's id as Python Hermes spells it (`openai` → `openai-api`, `claude` →
/// `anthropic`), so that both programs accept the file; anything else as typed (server
/// aliases such as `ollama` and `custom:<name>` keep their meaning).
pub fn stored_provider_name(name: &str) -> String {
    match canonical_provider(name) {
        Some(CanonicalProvider::Hosted(id)) => id.to_string(),
        _ => name.trim().to_string(),
    }
}

/// The provider id a name resolves to (`claude` → `anthropic`; server aliases → `custom`;
/// `local`), `None` for an unknown name.
pub fn provider_id(name: &str) -> Option<String> {
    Some(match canonical_provider(name)? {
        CanonicalProvider::Hosted(id) => id.to_string(),
        CanonicalProvider::Custom { .. } => "custom".to_string(),
        CanonicalProvider::Local => "local".to_string(),
    })
}

/// The `model:` section to resolve `provider` with: `configured` (config.yaml's) when it is
/// about the same provider, else only its provider-neutral keys (`max_tokens`), so that a key
/// or base URL meant for one provider is never sent to another.
pub fn section_for(configured: &ModelConfig, provider: &str) -> ModelConfig {
    let same = configured
        .provider
        .as_deref()
        .and_then(provider_id)
        .is_some_and(|p| Some(p) == provider_id(provider));
    if same {
        configured.clone()
    } else {
        ModelConfig {
            max_tokens: configured.max_tokens,
            ..ModelConfig::default()
        }
    }
}

/// The first key of each provider's pool in `auth.json` at `path` ([`ResolveInputs::pool_keys`]);
/// empty when the file is missing or unreadable (the client reports a broken file when it
/// builds the pool).
pub fn pool_keys(path: &std::path::Path) -> BTreeMap<String, String> {
    crate::credentials::CredentialPool::load(path)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| {
            let key = p.credentials.first()?.key.clone();
            Some((p.provider.to_ascii_lowercase(), key))
        })
        .collect()
}
