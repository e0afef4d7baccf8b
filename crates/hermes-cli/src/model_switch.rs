//! Switching provider and model: `/model` in the REPL (the following turns of this session)
//! and `hermes model set` (written to config.yaml). Both check the choice by runtime
//! resolution (ARCHITECTURE §5) before anything changes: an unknown provider or a missing key
//! is an error that says what to do, and the session or the config stays as it was
//! (FEATURES §1 CLI `model`, `/model`; issue 3 item 4).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hermes_llm::runtime::{CanonicalProvider, canonical_provider};
use hermes_llm::{ModelClient, ResolveInputs, Runtime};
use hermes_protocol::config::ModelConfig;

use crate::app::App;

/// The provider names `/model` and `hermes model set` accept, for error messages.
const KNOWN_PROVIDERS: &str = "openrouter, openai, anthropic, nous, deepseek, gemini, xai, \
     custom, local, or a server alias (llamacpp, ollama, vllm, lmstudio)";

/// A requested switch: a model, and a provider when it changes too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// Provider id or alias; `None` keeps the current provider.
    pub provider: Option<String>,
    /// Model name as the provider knows it.
    pub model: String,
}

/// Parses the words after `/model` (or `hermes model set`): `MODEL`, `PROVIDER MODEL`, or
/// `PROVIDER:MODEL` when the part before the colon is a provider name (model names such as
/// `llama3:8b` keep their colon). Errors: no words, more than two, or an unknown provider in
/// the two-word form.
pub fn parse_choice(words: &str) -> Result<ModelChoice> {
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
        _ => bail!("usage: /model MODEL, /model PROVIDER MODEL or /model PROVIDER:MODEL"),
    }
}

fn known_provider(name: &str) -> Result<CanonicalProvider> {
    canonical_provider(name)
        .with_context(|| format!("unknown provider `{name}`; known providers: {KNOWN_PROVIDERS}"))
}

/// The provider id a name resolves to (`claude` → `anthropic`; server aliases → `custom`).
fn provider_id(name: &str) -> Option<String> {
    Some(match canonical_provider(name)? {
        CanonicalProvider::Hosted(id) => id.to_string(),
        CanonicalProvider::Custom { .. } => "custom".to_string(),
        CanonicalProvider::Local => "local".to_string(),
    })
}

/// The `model:` section to resolve `provider` with: config.yaml's when it is about the same
/// provider, else only its provider-neutral keys (`max_tokens`), so that a key or base URL
/// meant for one provider is never sent to another.
fn section_for(app: &App, provider: &str) -> ModelConfig {
    let section = app.config.model.to_config();
    let same = section
        .provider
        .as_deref()
        .and_then(provider_id)
        .is_some_and(|p| Some(p) == provider_id(provider));
    if same {
        section
    } else {
        ModelConfig {
            max_tokens: section.max_tokens,
            ..ModelConfig::default()
        }
    }
}

/// Resolves `choice` against the session's `current` runtime: without a provider the current
/// one (and its base URL) is kept; with one, that provider's settings and keys are looked up
/// as at startup (config.yaml when it names the same provider, `.env`, environment).
pub fn resolve_choice(app: &App, current: &Runtime, choice: &ModelChoice) -> Result<Runtime> {
    let inputs = match &choice.provider {
        None => ResolveInputs {
            provider: Some(current.provider.clone()),
            model: Some(choice.model.clone()),
            base_url: (!current.base_url.is_empty()).then(|| current.base_url.clone()),
            config: section_for(app, &current.provider),
            env: app.env.clone(),
            local_model_available: crate::session::local_model_path(app),
        },
        Some(p) => {
            known_provider(p)?;
            ResolveInputs {
                provider: Some(p.clone()),
                model: Some(choice.model.clone()),
                base_url: None,
                config: section_for(app, p),
                env: app.env.clone(),
                local_model_available: crate::session::local_model_path(app),
            }
        }
    };
    Ok(hermes_llm::resolve(&inputs)?)
}

/// What the REPL needs to switch models: the settings it started with and the runtime in use.
pub struct ModelSwitcher {
    app: App,
    /// The runtime the session uses now.
    pub current: Runtime,
}

impl ModelSwitcher {
    /// A switcher starting from `current`, with a copy of `app`'s settings.
    pub fn new(app: &App, current: Runtime) -> ModelSwitcher {
        ModelSwitcher {
            app: App {
                home: app.home.clone(),
                config: app.config.clone(),
                config_warnings: Vec::new(),
                env: app.env.clone(),
            },
            current,
        }
    }

    /// `/model` without words: the model in use.
    pub fn describe(&self) -> String {
        let rt = &self.current;
        let mut s = format!(
            "model {} on {} ({})",
            rt.model,
            rt.provider,
            rt.api_mode.as_str()
        );
        if !rt.base_url.is_empty() {
            s.push_str(&format!(" at {}", rt.base_url));
        }
        s
    }

    /// `/model WORDS`: resolves and connects the new model; on success it becomes current and
    /// the client is returned for [`hermes_agent::AgentHandle::set_client`].
    pub async fn switch(&mut self, words: &str) -> Result<Arc<dyn ModelClient>> {
        let choice = parse_choice(words)?;
        let mut rt = resolve_choice(&self.app, &self.current, &choice)?;
        crate::session::resolve_context_window(&self.app, &mut rt).await;
        let client = crate::session::build_client(&self.app, &rt)?;
        self.current = rt;
        Ok(client)
    }
}

/// `hermes model set [PROVIDER] MODEL [--base-url URL]`: checks the choice by resolution,
/// then writes `model:` in config.yaml (`provider`, `default`, `base_url`). When the provider
/// changes, the keys that belonged to the old one (`base_url`, `api_mode`, `api_key`,
/// `api_keys`, `credential_strategy`) are removed and named. Comments in config.yaml are not
/// kept. Returns the lines to print.
pub fn set_default(app: &App, words: &str, base_url: Option<&str>) -> Result<Vec<String>> {
    let choice = parse_choice(words)?;
    let section = app.config.model.to_config();
    let provider = choice.provider.clone().or_else(|| section.provider.clone());
    let provider_changes = match (&choice.provider, &section.provider) {
        (Some(new), Some(old)) => provider_id(new) != provider_id(old),
        (Some(_), None) => true,
        (None, _) => false,
    };
    let mut check = match &provider {
        Some(p) => section_for(app, p),
        None => section.clone(),
    };
    if let Some(u) = base_url {
        check.base_url = Some(u.to_string());
    }
    let inputs = ResolveInputs {
        provider: provider.clone(),
        model: Some(choice.model.clone()),
        base_url: base_url.map(str::to_string),
        config: check,
        env: app.env.clone(),
        local_model_available: crate::session::local_model_path(app),
    };
    let rt = hermes_llm::resolve(&inputs)?;

    let path = app.home.config_file();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut doc: serde_json::Value = if text.trim().is_empty() {
        serde_json::json!({})
    } else {
        yaml_serde::from_str(&text).with_context(|| format!("reading {}", path.display()))?
    };
    let root = doc
        .as_object_mut()
        .with_context(|| format!("{} is not a mapping", path.display()))?;
    let model = root.entry("model").or_insert_with(|| serde_json::json!({}));
    if !model.is_object() {
        // A bare `model: name` becomes a table.
        *model = serde_json::json!({});
    }
    let table = model
        .as_object_mut()
        .context("`model` in config.yaml is not a mapping")?;
    let mut lines = Vec::new();
    if provider_changes {
        for key in [
            "base_url",
            "api_mode",
            "api_key",
            "api_keys",
            "credential_strategy",
        ] {
            if table.remove(key).is_some() {
                lines.push(format!(
                    "removed model.{key} (it belonged to the previous provider)"
                ));
            }
        }
    }
    table.remove("model");
    if let Some(p) = &choice.provider {
        table.insert("provider".into(), serde_json::json!(p));
    }
    table.insert("default".into(), serde_json::json!(choice.model));
    if let Some(u) = base_url {
        table.insert("base_url".into(), serde_json::json!(u));
    }
    let out = yaml_serde::to_string(&doc)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, out).with_context(|| format!("writing {}", path.display()))?;
    lines.push(format!(
        "default model set to {} on {} ({}) in {}",
        rt.model,
        rt.provider,
        rt.api_mode.as_str(),
        path.display()
    ));
    Ok(lines)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn app(config: &str, env: &[(&str, &str)]) -> (App, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let home = hermes_protocol::HermesHome::new(dir.path().to_path_buf());
        std::fs::write(home.config_file(), config).unwrap();
        let loaded = hermes_protocol::config::Config::load(&home.config_file()).unwrap();
        let app = App {
            home,
            config: loaded.config,
            config_warnings: Vec::new(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        (app, dir)
    }

    fn current(app: &App) -> Runtime {
        hermes_llm::resolve(&ResolveInputs {
            config: app.config.model.to_config(),
            env: app.env.clone(),
            ..ResolveInputs::default()
        })
        .unwrap()
    }

    const CUSTOM: &str =
        "model:\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n  default: first\n";

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
        assert!(parse_choice("").is_err());
        assert!(parse_choice("a b c").is_err());
    }

    #[test]
    fn a_model_alone_keeps_the_provider_and_its_base_url() {
        let (app, _d) = app(CUSTOM, &[]);
        let cur = current(&app);
        let rt = resolve_choice(&app, &cur, &parse_choice("second").unwrap()).unwrap();
        assert_eq!(rt.provider, "custom");
        assert_eq!(rt.model, "second");
        assert_eq!(rt.base_url, "http://127.0.0.1:9/v1");
    }

    #[test]
    fn a_new_provider_needs_its_own_key_and_never_gets_the_old_one() {
        let config = format!("{CUSTOM}  api_key: sk-custom-secret\n");
        let (app, _d) = app(&config, &[]);
        let cur = current(&app);
        let e = resolve_choice(&app, &cur, &parse_choice("openrouter x/y").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("OPENROUTER_API_KEY"), "{e}");

        let (app, _d) = app_with_key(&config);
        let cur = current(&app);
        let rt = resolve_choice(
            &app,
            &cur,
            &parse_choice("anthropic:claude-sonnet-4").unwrap(),
        )
        .unwrap();
        assert_eq!(rt.provider, "anthropic");
        assert_eq!(rt.api_key.as_deref(), Some("sk-ant-from-env"));
        assert_eq!(rt.api_mode.as_str(), "anthropic_messages");
    }

    fn app_with_key(config: &str) -> (App, tempfile::TempDir) {
        app(config, &[("ANTHROPIC_API_KEY", "sk-ant-from-env")])
    }

    #[test]
    fn set_default_persists_and_drops_the_old_providers_keys() {
        let config = format!("{CUSTOM}  api_key: sk-custom-secret\nagent:\n  max_turns: 7\n");
        let (app, _d) = app_with_key(&config);
        let lines = set_default(&app, "anthropic claude-sonnet-4", None).unwrap();
        assert!(lines.iter().any(|l| l.contains("removed model.api_key")));
        assert!(lines.iter().any(|l| l.contains("removed model.base_url")));
        let written = std::fs::read_to_string(app.home.config_file()).unwrap();
        let loaded = hermes_protocol::config::Config::parse(&written, &app.home.config_file())
            .unwrap()
            .config;
        let m = loaded.model.to_config();
        assert_eq!(m.provider.as_deref(), Some("anthropic"));
        assert_eq!(m.default.as_deref(), Some("claude-sonnet-4"));
        assert_eq!(m.base_url, None);
        assert_eq!(m.api_key, None);
        assert_eq!(loaded.agent.max_turns, 7, "other sections are kept");
        assert!(!written.contains("sk-custom-secret"));
    }

    #[test]
    fn set_default_refuses_an_unknown_provider_and_leaves_the_file() {
        let (app, _d) = app(CUSTOM, &[]);
        let e = set_default(&app, "nosuch model", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown provider `nosuch`"), "{e}");
        assert_eq!(
            std::fs::read_to_string(app.home.config_file()).unwrap(),
            CUSTOM
        );
    }
}
