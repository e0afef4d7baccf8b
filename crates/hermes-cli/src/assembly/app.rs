//! Start-up shared by every subcommand: `HERMES_HOME`, `.env`, `config.yaml`, the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use hermes_protocol::HermesHome;
use hermes_protocol::config::{Config, parse_env_file};
use hermes_store::SessionStore;

/// Loaded settings of one invocation.
pub struct App {
    /// The hermes home (profile applied).
    pub home: HermesHome,
    /// `config.yaml` (defaults where absent).
    pub config: Config,
    /// Non-fatal findings in `config.yaml` (unknown keys).
    pub config_warnings: Vec<String>,
    /// `.env` merged under the process environment (the process wins), never logged.
    pub env: BTreeMap<String, String>,
}

impl App {
    /// Resolves the home for `profile`, reads `.env` and `config.yaml`. A broken config is
    /// an error naming line and column.
    pub fn load(profile: Option<&str>) -> Result<App> {
        let home = HermesHome::resolve(profile).context(
            "cannot find a home directory; set HERMES_HOME to the folder hermes should use",
        )?;
        let mut env = match std::fs::read_to_string(home.env_file()) {
            Ok(text) => parse_env_file(&text),
            Err(_) => BTreeMap::new(),
        };
        for (k, v) in std::env::vars() {
            env.insert(k, v);
        }
        let loaded = Config::load(&home.config_file())?;
        let mut config_warnings = loaded.warnings;
        let (base, ttl_warnings) = hermes_llm::ClientOptions::from_config(&loaded.config);
        config_warnings.extend(ttl_warnings);
        let (_, pool_warnings) = base.with_pool(&loaded.config.model.to_config(), None, None);
        config_warnings.extend(pool_warnings);
        Ok(App {
            home,
            config: loaded.config,
            config_warnings,
            env,
        })
    }

    /// Client options for a provider chosen by `section` (the `model:` section or a
    /// `fallback_providers` entry): `prompt_caching.cache_ttl`, the section's `api_keys` and
    /// `credential_strategy`, and this home's `auth.json` and credential state file. Unusable
    /// values were reported among the config warnings and fall back to the defaults.
    pub fn client_options(
        &self,
        section: &hermes_protocol::config::ModelConfig,
    ) -> hermes_llm::ClientOptions {
        hermes_llm::ClientOptions::from_config(&self.config)
            .0
            .with_pool(
                section,
                Some(self.home.auth_file()),
                Some(self.home.credential_state_file()),
            )
            .0
    }

    /// Opens (creating if needed) `state.db`.
    pub fn open_store(&self) -> Result<Arc<SessionStore>> {
        let path = self.home.state_db();
        let store = SessionStore::open(&path)
            .with_context(|| format!("opening session store {}", path.display()))?;
        Ok(Arc::new(store))
    }

    /// Prints config warnings to stderr (once per invocation).
    pub fn warn_config(&self) {
        for w in &self.config_warnings {
            eprintln!("warning: {}: {w}", self.home.config_file().display());
        }
    }
}
