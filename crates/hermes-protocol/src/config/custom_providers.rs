//! Named OpenAI-compatible endpoints, in Python Hermes' two formats, selected with
//! `model.provider: custom:<name>` (or the bare name):
//!
//! ```yaml
//! providers:                 # the current form (a mapping)
//!   my-server:
//!     base_url: http://127.0.0.1:8080/v1   # or `api:` / `url:`
//!     key_env: MY_SERVER_KEY               # variable holding the key; else `api_key:`
//!     api_mode: chat_completions           # or `transport:`
//!     default_model: qwen3
//! custom_providers:          # the older form (a list)
//!   - name: Work Proxy
//!     base_url: https://proxy.example/v1
//!     api_key: sk-…
//!     key_env: PROXY_KEY
//!     api_mode: anthropic_messages
//!     model: claude-sonnet-4
//! ```
//!
//! Matching follows `_get_named_custom_provider` in Python Hermes'
//! `hermes_cli/runtime_provider.py`: names compare trimmed, lower case, spaces as `-`, with or
//! without the `custom:` prefix; `providers:` entries (by key, then by their `name`) come
//! before `custom_providers:` entries (by `name`, then `provider_key`); a `providers:` entry
//! with `enabled: false` or without a URL is skipped.

use yaml_serde::Value;

use super::Config;

/// One named endpoint. Its `Debug` does not print `api_key`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CustomProvider {
    /// The entry's name as written.
    pub name: String,
    /// Base URL including the version path.
    pub base_url: String,
    /// Key written in the entry (`api_key:`).
    pub api_key: Option<String>,
    /// Name of the environment variable holding the key (`key_env:`); it wins over
    /// `api_key` when set and non-empty.
    pub key_env: Option<String>,
    /// `api_mode:` (or `transport:`): `chat_completions`, `codex_responses`,
    /// `anthropic_messages` or `bedrock_converse`, as written (lower case).
    pub api_mode: Option<String>,
    /// The entry's model (`model:` in the list form, `default_model:` in the mapping form).
    pub model: Option<String>,
}

crate::debug_redacted!(CustomProvider {
    secret: [api_key],
    shown: [name, base_url, key_env, api_mode, model],
});

/// `value.strip().lower().replace(" ", "-")` of Python Hermes.
pub fn normalize_name(name: &str) -> String {
    name.trim().to_lowercase().replace(' ', "-")
}

fn text(entry: &Value, key: &str) -> Option<String> {
    entry
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn api_mode(entry: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| text(entry, k)).and_then(|m| {
        let m = m.to_lowercase();
        matches!(
            m.as_str(),
            "chat_completions" | "codex_responses" | "anthropic_messages" | "bedrock_converse"
        )
        .then_some(m)
    })
}

impl Config {
    /// The `providers:` or `custom_providers:` entry `requested` names (see the module
    /// doc), or `None`.
    pub fn find_custom_provider(&self, requested: &str) -> Option<CustomProvider> {
        let wanted = normalize_name(requested);
        if wanted.is_empty() {
            return None;
        }
        let matches = |name: &str| {
            let n = normalize_name(name);
            wanted == name || wanted == n || wanted == format!("custom:{n}")
        };
        if let Some(map) = self.providers.as_ref().and_then(Value::as_mapping) {
            for (key, entry) in map {
                let Some(key) = key.as_str() else { continue };
                if !entry.is_mapping()
                    || entry.get("enabled").and_then(Value::as_bool) == Some(false)
                {
                    continue;
                }
                let display = text(entry, "name");
                if !(matches(key) || display.as_deref().is_some_and(matches)) {
                    continue;
                }
                let Some(base_url) = ["api", "url", "base_url"]
                    .iter()
                    .find_map(|k| text(entry, k))
                else {
                    continue;
                };
                return Some(CustomProvider {
                    name: display.unwrap_or_else(|| key.to_string()),
                    base_url,
                    api_key: text(entry, "api_key"),
                    key_env: text(entry, "key_env"),
                    api_mode: api_mode(entry, &["api_mode", "transport"]),
                    model: text(entry, "default_model"),
                });
            }
        }
        let list = self
            .custom_providers
            .as_ref()
            .and_then(Value::as_sequence)?;
        list.iter().find_map(|entry| {
            let name = entry.get("name").and_then(Value::as_str)?;
            let base_url = entry.get("base_url").and_then(Value::as_str)?;
            let key = text(entry, "provider_key");
            let n = normalize_name(name);
            let hit = wanted == n
                || wanted == format!("custom:{n}")
                || key.as_deref().is_some_and(|k| {
                    let k = normalize_name(k);
                    wanted == k || wanted == format!("custom:{k}")
                });
            hit.then(|| CustomProvider {
                name: name.trim().to_string(),
                base_url: base_url.trim().to_string(),
                api_key: text(entry, "api_key"),
                key_env: text(entry, "key_env"),
                api_mode: api_mode(entry, &["api_mode"]),
                model: text(entry, "model"),
            })
        })
    }

    /// `custom:<name>` for every usable entry of `providers:` and `custom_providers:`, for
    /// messages that list what can be chosen.
    pub fn custom_provider_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(map) = self.providers.as_ref().and_then(Value::as_mapping) {
            out.extend(
                map.keys()
                    .filter_map(Value::as_str)
                    .map(|k| format!("custom:{}", normalize_name(k))),
            );
        }
        if let Some(list) = self.custom_providers.as_ref().and_then(Value::as_sequence) {
            out.extend(
                list.iter()
                    .filter_map(|e| e.get("name").and_then(Value::as_str))
                    .map(|n| format!("custom:{}", normalize_name(n))),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text, Path::new("c.yaml")).unwrap().config
    }

    #[test]
    fn both_forms_are_found_by_name_with_or_without_the_prefix() {
        let c = config(
            "providers:\n  my-server:\n    api: http://127.0.0.1:8080/v1\n    key_env: MY_KEY\n    transport: anthropic_messages\n    default_model: qwen3\n  off:\n    base_url: http://x/v1\n    enabled: false\n\
             custom_providers:\n  - name: Work Proxy\n    base_url: https://proxy.example/v1\n    api_key: sk-secret\n    api_mode: codex_responses\n    model: m1\n",
        );
        let p = c.find_custom_provider("custom:my-server").unwrap();
        assert_eq!(p.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(p.key_env.as_deref(), Some("MY_KEY"));
        assert_eq!(p.api_mode.as_deref(), Some("anthropic_messages"));
        assert_eq!(p.model.as_deref(), Some("qwen3"));
        let w = c.find_custom_provider("custom:work-proxy").unwrap();
        assert_eq!(w.name, "Work Proxy");
        assert_eq!(w.api_key.as_deref(), Some("sk-secret"));
        assert_eq!(w.api_mode.as_deref(), Some("codex_responses"));
        assert_eq!(
            c.find_custom_provider("Work Proxy")
                .unwrap()
                .model
                .as_deref(),
            Some("m1")
        );
        assert!(c.find_custom_provider("custom:off").is_none());
        assert!(c.find_custom_provider("custom:nothing").is_none());
        assert!(!format!("{w:?}").contains("sk-secret"));
        assert_eq!(
            c.custom_provider_names(),
            vec!["custom:my-server", "custom:off", "custom:work-proxy"]
        );
    }
}
