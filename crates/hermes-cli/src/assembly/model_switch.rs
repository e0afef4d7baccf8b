//! Switching provider and model: `/model` in the REPL (the following turns of this session)
//! and `hermes model set` (written to config.yaml). Both check the choice by runtime
//! resolution (ARCHITECTURE §5) before anything changes: an unknown provider or a missing key
//! is an error that says what to do, and the session or the config stays as it was
//! (FEATURES §1 CLI `model`, `/model`; issue 3 item 4).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use hermes_llm::model_choice::{ChoiceContext, provider_id, section_for};
use hermes_llm::{ApiMode, ModelChoice, ModelClient, ResolveInputs, Runtime};

use crate::assembly::app::App;

/// Parses the words after `/model` or `hermes model set` ([`hermes_llm::parse_choice`]).
pub fn parse_choice(words: &str) -> Result<ModelChoice> {
    Ok(hermes_llm::parse_choice(words)?)
}

/// What a choice is resolved with: config.yaml's `model:` section, the environment and the
/// installed local model of `app`.
pub fn choice_context(app: &App) -> ChoiceContext {
    ChoiceContext {
        configured: app.config.model.to_config(),
        env: app.env.clone(),
        local_model_available: crate::assembly::runtime::local_model_path(app),
    }
}

/// Resolves `choice` against the session's `current` runtime ([`hermes_llm::resolve_choice`]):
/// without a provider the current one (and its base URL) is kept; with one, that provider's
/// settings and keys are looked up as at startup.
pub fn resolve_choice(app: &App, current: &Runtime, choice: &ModelChoice) -> Result<Runtime> {
    Ok(hermes_llm::resolve_choice(
        &choice_context(app),
        current,
        choice,
    )?)
}

/// How long a provider's model list (`GET {base_url}/models`) is waited for: the setup
/// wizard's picker, `/model`, `hermes model set` and model-name completion.
pub const MODEL_LIST_WAIT: Duration = Duration::from_secs(10);

/// Whether a provider speaking `api_mode` lists its models on the OpenAI-compatible
/// `/models` route.
pub fn lists_models(api_mode: ApiMode) -> bool {
    matches!(
        api_mode,
        ApiMode::ChatCompletions | ApiMode::OpenAiResponses
    )
}

/// The model ids `GET {base_url}/models` lists (OpenAI-compatible servers: `data[].id`), or
/// why not. Waits at most `wait`.
///
/// # Errors
/// The request failed, was refused or was not answered in time.
pub async fn list_models(
    base_url: &str,
    api_key: Option<&str>,
    wait: Duration,
) -> Result<Vec<String>> {
    let mut config = hermes_llm::OpenAiChatConfig::new(base_url, "");
    config.api_key = api_key.map(str::to_string);
    config.timeouts = hermes_llm::Timeouts::all(wait);
    let client = hermes_llm::OpenAiChatClient::new(config).map_err(|e| anyhow::anyhow!("{e}"))?;
    match tokio::time::timeout(wait, client.list_models()).await {
        Ok(Ok(models)) => Ok(models),
        Ok(Err(e)) => Err(anyhow::anyhow!("{e}")),
        Err(_) => Err(anyhow::anyhow!("no answer within {} s", wait.as_secs())),
    }
}

/// How long `/model` and `hermes model set` wait for the model list before going on.
const CHECK_WAIT: Duration = Duration::from_secs(5);

/// A note when runtime `rt`'s model is not among those its provider lists (issue 20: `/model`
/// and `hermes model set` took any name), with up to three similar names; or when the list
/// could not be had. `None` when the model is listed, the provider lists none (Anthropic,
/// the embedded model) or lists nothing. Like Python Hermes for custom endpoints, the model
/// is still used as typed: a server may serve models it does not list.
pub async fn listing_note(rt: &Runtime) -> Option<String> {
    if !lists_models(rt.api_mode) || rt.base_url.is_empty() {
        return None;
    }
    let models = match list_models(&rt.base_url, rt.api_key.as_deref(), CHECK_WAIT).await {
        Ok(models) => models,
        Err(e) => {
            return Some(format!(
                "note: could not check `{}` against {}/models ({e}); it is used as typed",
                rt.model,
                rt.base_url.trim_end_matches('/')
            ));
        }
    };
    unlisted_note(&rt.model, &rt.base_url, &models)
}

/// The note of [`listing_note`] for a provider at `base_url` listing `models`.
fn unlisted_note(model: &str, base_url: &str, models: &[String]) -> Option<String> {
    if models.is_empty() || models.iter().any(|m| m == model) {
        return None;
    }
    let mut near: Vec<(f64, &String)> = models
        .iter()
        .map(|m| (strsim::jaro_winkler(model, m), m))
        .filter(|(score, _)| *score > 0.75)
        .collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0));
    let similar = if near.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = near.iter().take(3).map(|(_, m)| format!("`{m}`")).collect();
        format!("; similar: {}", names.join(", "))
    };
    Some(format!(
        "note: `{model}` is not among the {} models {}/models lists{similar}; it is used as typed",
        models.len(),
        base_url.trim_end_matches('/')
    ))
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
                startup_notes: Vec::new(),
                env: app.env.clone(),
                profile: app.profile.clone(),
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
    /// Also the [`listing_note`] of the new model, when there is one.
    pub async fn switch(&mut self, words: &str) -> Result<(Arc<dyn ModelClient>, Option<String>)> {
        let choice = parse_choice(words)?;
        let (client, rt) = self.connect(&choice).await?;
        let note = listing_note(&rt).await;
        self.current = rt;
        Ok((client, note))
    }

    /// Resolves `choice` against the current runtime and connects it, changing nothing: the
    /// client and its runtime. The gateway's factory uses it for a chat's `/model` choice.
    pub async fn connect(&self, choice: &ModelChoice) -> Result<(Arc<dyn ModelClient>, Runtime)> {
        let mut rt = resolve_choice(&self.app, &self.current, choice)?;
        crate::assembly::runtime::resolve_context_window(&self.app, &mut rt).await;
        let client = crate::assembly::runtime::build_client(&self.app, &rt)?;
        Ok((client, rt))
    }
}

/// The `model:` keys that belong to one provider and go when `hermes model set` changes it.
const PREVIOUS_PROVIDER_KEYS: [&str; 5] = [
    "base_url",
    "api_mode",
    "api_key",
    "api_keys",
    "credential_strategy",
];

/// The runtime `hermes model set WORDS [--base-url URL]` writes, resolved as a session
/// resolves it from config.yaml after the change, without writing anything.
///
/// # Errors
/// An unknown provider, a missing key or a malformed choice (what to do is in the message).
pub fn resolve_default(app: &App, words: &str, base_url: Option<&str>) -> Result<Runtime> {
    let choice = parse_choice(words)?;
    let section = app.config.model.to_config();
    let provider = choice.provider.clone().or_else(|| section.provider.clone());
    let mut check = match &provider {
        Some(p) => section_for(&section, p),
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
        local_model_available: crate::assembly::runtime::local_model_path(app),
        file: Some(app.config.clone()),
        pool_keys: hermes_llm::runtime::pool_keys(&app.home.auth_file()),
    };
    Ok(hermes_llm::resolve(&inputs)?)
}

/// `hermes model set [PROVIDER] MODEL [--base-url URL]`: checks the choice by resolution,
/// then writes `model:` in config.yaml (`provider`, `default`, `base_url`). When the provider
/// changes, the keys that belonged to the old one (`base_url`, `api_mode`, `api_key`,
/// `api_keys`, `credential_strategy`) are removed and named. Only the lines of those keys
/// change (comments and layout kept, [`crate::config_edit::keys`]); a `model:` section this
/// cannot edit line by line makes it rewrite the file without comments, and say so. Returns
/// the lines to print.
pub fn set_default(app: &App, words: &str, base_url: Option<&str>) -> Result<Vec<String>> {
    let rt = resolve_default(app, words, base_url)?;
    let choice = parse_choice(words)?;
    let section = app.config.model.to_config();
    let provider_changes = match (&choice.provider, &section.provider) {
        (Some(new), Some(old)) => provider_id(new) != provider_id(old),
        (Some(_), None) => true,
        (None, _) => false,
    };
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
        for key in PREVIOUS_PROVIDER_KEYS {
            if table.remove(key).is_some() {
                lines.push(format!(
                    "removed model.{key} (it belonged to the previous provider)"
                ));
            }
        }
    }
    table.remove("model");
    let stored = choice
        .provider
        .as_deref()
        .map(hermes_llm::runtime::stored_provider_name);
    if let Some(p) = &stored {
        table.insert("provider".into(), serde_json::json!(p));
    }
    table.insert("default".into(), serde_json::json!(choice.model));
    if let Some(u) = base_url {
        table.insert("base_url".into(), serde_json::json!(u));
    }
    // Only the changed keys' lines when the file allows it (comments and layout kept); else
    // the whole file is rewritten from the parsed settings.
    let mut set: Vec<(&str, &str)> = Vec::new();
    if let Some(p) = &stored {
        set.push(("provider", p));
    }
    set.push(("default", &choice.model));
    if let Some(u) = base_url {
        set.push(("base_url", u));
    }
    let mut remove = vec!["model"];
    if provider_changes {
        remove.extend(PREVIOUS_PROVIDER_KEYS);
    }
    let out = match crate::config_edit::keys::edit_section(&text, "model", &set, &remove) {
        Ok(edited) => edited,
        Err(e) => {
            lines.push(format!(
                "{e}; config.yaml was rewritten without its comments"
            ));
            yaml_serde::to_string(&doc)?
        }
    };
    hermes_protocol::private_fs::write_atomic(&path, out)
        .with_context(|| format!("writing {}", path.display()))?;
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
            startup_notes: Vec::new(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            profile: None,
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
    fn a_choice_resolves_with_the_apps_config_and_env() {
        let (app, _d) = app_with_key(CUSTOM);
        let cur = current(&app);
        let rt = resolve_choice(&app, &cur, &parse_choice("second").unwrap()).unwrap();
        assert_eq!(
            (rt.provider.as_str(), rt.model.as_str()),
            ("custom", "second")
        );
        assert_eq!(rt.base_url, "http://127.0.0.1:9/v1");
        let rt = resolve_choice(&app, &cur, &parse_choice("claude x").unwrap()).unwrap();
        assert_eq!(rt.api_key.as_deref(), Some("sk-ant-from-env"));
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

    /// A provider is written under the id Python Hermes accepts (`claude` → `anthropic`,
    /// `openai` → `openai-api`: Python 0.19.0 refuses a bare `openai`).
    #[test]
    fn set_default_writes_the_python_hermes_provider_id() {
        let (app, _d) = app(CUSTOM, &[("OPENAI_API_KEY", "sk-openai-from-env-0001")]);
        set_default(&app, "openai gpt-4.1", None).unwrap();
        let written = std::fs::read_to_string(app.home.config_file()).unwrap();
        assert!(written.contains("provider: openai-api"), "{written}");
        let (app, _d) = app_with_key(CUSTOM);
        set_default(&app, "claude claude-sonnet-4", None).unwrap();
        let written = std::fs::read_to_string(app.home.config_file()).unwrap();
        assert!(written.contains("provider: anthropic"), "{written}");
    }

    /// `hermes model set` changes only the lines of the keys it writes or removes: comments,
    /// blank lines and the other sections stay byte for byte.
    #[test]
    fn set_default_keeps_comments_and_layout() {
        let config = format!(
            "# my settings\nmodel:\n  provider: custom   # the box under the desk\n  base_url: {}\n  default: first\n\n# short loops\nagent:\n  max_turns: 7  # enough\n",
            "http://127.0.0.1:9/v1"
        );
        let (app, _d) = app_with_key(&config);
        let lines = set_default(&app, "anthropic claude-sonnet-4", None).unwrap();
        assert!(
            lines.iter().any(|l| l.contains("removed model.base_url")),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.contains("without its comments")),
            "{lines:?}"
        );
        assert_eq!(
            std::fs::read_to_string(app.home.config_file()).unwrap(),
            "# my settings\nmodel:\n  provider: anthropic   # the box under the desk\n  default: claude-sonnet-4\n\n# short loops\nagent:\n  max_turns: 7  # enough\n"
        );
    }

    #[test]
    fn an_unlisted_model_gets_a_note_with_the_similar_names() {
        let models: Vec<String> = ["gpt-4.1", "gpt-4.1-mini", "o3", "claude-sonnet-4"]
            .iter()
            .map(|m| m.to_string())
            .collect();
        let base = "http://127.0.0.1:9/v1/";
        assert_eq!(unlisted_note("gpt-4.1", base, &models), None);
        assert_eq!(unlisted_note("anything", base, &[]), None, "lists nothing");
        let note = unlisted_note("gpt-4.l", base, &models).unwrap();
        assert!(
            note.contains("not among the 4 models http://127.0.0.1:9/v1/models lists"),
            "{note}"
        );
        assert!(note.contains("similar: `gpt-4.1`"), "{note}");
        assert!(!note.contains("claude"), "{note}");
        let note = unlisted_note("zzzz", base, &models).unwrap();
        assert!(!note.contains("similar"), "{note}");
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
