//! Start-up shared by every subcommand: `HERMES_HOME`, `.env`, `config.yaml`, the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use hermes_protocol::HermesHome;
use hermes_protocol::config::Config;
use hermes_store::{SessionStore, StoreChoice};

/// Loaded settings of one invocation.
pub struct App {
    /// The hermes home (profile applied).
    pub home: HermesHome,
    /// `config.yaml` (defaults where absent).
    pub config: Config,
    /// Non-fatal findings in `config.yaml` (unknown keys).
    pub config_warnings: Vec<String>,
    /// Other start-up lines for the terminal, each complete: skipped `.env` statements
    /// (with the file and line) and the one-line summary of Python Hermes settings hermes
    /// does not use (each of those is logged by name).
    pub startup_notes: Vec<String>,
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
        let mut startup_notes = Vec::new();
        // `.env` as python-dotenv reads it; `${NAME}` falls back to the process environment.
        let env_path = home.env_file();
        let mut env =
            match hermes_protocol::dotenv::read_dotenv(&env_path, &|name| std::env::var(name).ok())
            {
                Ok(parsed) => {
                    for w in &parsed.warnings {
                        tracing::warn!(file = %env_path.display(), line = w.line, "{w}");
                        startup_notes.push(format!("warning: {}: {w}", env_path.display()));
                    }
                    parsed.to_map()
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
                Err(e) => {
                    tracing::warn!(file = %env_path.display(), error = %e, "cannot read .env");
                    startup_notes.push(format!("warning: cannot read {}: {e}", env_path.display()));
                    BTreeMap::new()
                }
            };
        for (k, v) in std::env::vars() {
            env.insert(k, v);
        }
        let loaded = Config::load(&home.config_file())?;
        for line in loaded.ignored_python.lines() {
            tracing::warn!(file = %home.config_file().display(), "not used by hermes: {line}");
        }
        if let Some(summary) = loaded.ignored_python.summary() {
            startup_notes.push(format!("note: {summary}"));
        }
        let mut config_warnings = loaded.warnings;
        let (base, ttl_warnings) = hermes_llm::ClientOptions::from_config(&loaded.config);
        config_warnings.extend(ttl_warnings);
        let (_, pool_warnings) = base.with_pool(&loaded.config.model.to_config(), None, None);
        config_warnings.extend(pool_warnings);
        if let Err(w) = loaded.config.compression.threshold_ratio() {
            config_warnings.push(w);
        }
        Ok(App {
            home,
            config: loaded.config,
            config_warnings,
            startup_notes,
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

    /// The session store `sessiondb:` chooses: this home's `state.db` (default), or the
    /// PostgreSQL database of `HERMES_SESSIONDB_DSN` / `sessiondb.postgresql.dsn`.
    pub fn store_choice(&self) -> Result<StoreChoice> {
        Ok(StoreChoice::from_config(
            self.config.sessiondb.as_ref(),
            &self.home.state_db(),
            self.env
                .get(hermes_protocol::config::SESSIONDB_DSN_ENV)
                .cloned(),
        )?)
    }

    /// Opens (creating if needed) the session store [`App::store_choice`] names.
    pub fn open_store(&self) -> Result<Arc<SessionStore>> {
        let choice = self.store_choice()?;
        let store = choice
            .open()
            .with_context(|| format!("opening session store {}", choice.describe()))?;
        Ok(Arc::new(store))
    }

    /// Prints config warnings to stderr (once per invocation).
    pub fn warn_config(&self) {
        for w in &self.config_warnings {
            eprintln!("warning: {}: {w}", self.home.config_file().display());
        }
        for note in &self.startup_notes {
            eprintln!("{note}");
        }
    }
}
