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
    /// The process environment with `HERMES_HOME/.env` applied over it: a variable set in
    /// both takes the file's value, as Python Hermes loads `.env` with `override=True`
    /// (`hermes_cli/env_loader.py`: the user's `.env` beats stale shell exports). Never
    /// logged.
    pub env: BTreeMap<String, String>,
    /// The profile (`-p NAME`), when one was given.
    pub profile: Option<String>,
}

/// Name endings of credential variables (Python's `_CREDENTIAL_SUFFIXES`).
const CREDENTIAL_SUFFIXES: [&str; 4] = ["_API_KEY", "_TOKEN", "_SECRET", "_KEY"];

/// Python's `_sanitize_loaded_credentials`: a credential variable holding non-ASCII
/// characters (look-alike glyphs pasted from a PDF or web page) has them removed, with one
/// line naming the variable (never its value), since keys are sent as HTTP headers.
fn strip_non_ascii_credentials(env: &mut BTreeMap<String, String>, notes: &mut Vec<String>) {
    for (k, v) in env.iter_mut() {
        if v.is_ascii() || !CREDENTIAL_SUFFIXES.iter().any(|s| k.ends_with(s)) {
            continue;
        }
        let cleaned: String = v.chars().filter(char::is_ascii).collect();
        let n = v.chars().count() - cleaned.chars().count();
        notes.push(format!(
            "warning: {k} contained {n} non-ASCII character{} — stripped so the key can be \
             sent as an HTTP header",
            if n == 1 { "" } else { "s" }
        ));
        *v = cleaned;
    }
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
        let file_env =
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
        // The file wins over the shell (Python's `load_dotenv(…, override=True)`); a bare
        // `KEY` line (no `=`) sets nothing, so the shell's value stays.
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        env.extend(file_env);
        strip_non_ascii_credentials(&mut env, &mut startup_notes);
        let loaded = Config::load(&home.config_file())?;
        // Each key by name in the log file; the terminal gets the one summary line of
        // `startup_notes` (a warning here would reach the terminal too for the commands that
        // log to stderr, such as the gateway: the same keys twice).
        for line in loaded.ignored_python.lines() {
            tracing::info!(file = %home.config_file().display(), "not used by hermes: {line}");
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
            profile: profile.map(str::to_string),
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

    /// Prints config warnings to stderr (once per invocation); an unknown key gets the
    /// nearest known one (issue 20 item 10: `toolset` → `toolsets`).
    pub fn warn_config(&self) {
        for w in &self.config_warnings {
            errln!(
                "warning: {}: {w}{}",
                self.home.config_file().display(),
                near_miss_hint(w)
            );
        }
        for note in &self.startup_notes {
            errln!("{note}");
        }
    }
}

/// For a warning ``unknown key `a.b` (ignored)``: ``; did you mean `a.c`?`` when a known key
/// of the same section is close, else nothing.
pub fn near_miss_hint(warning: &str) -> String {
    let Some(key) = warning
        .strip_prefix("unknown key `")
        .and_then(|r| r.split_once('`'))
        .map(|(k, _)| k)
    else {
        return String::new();
    };
    match nearest_known_key(key) {
        Some(k) => format!("; did you mean `{k}`?"),
        None => String::new(),
    }
}

/// The known key nearest to the unknown dotted `key`, among the keys of the same section
/// (`Config`'s own fields with their defaults).
pub fn nearest_known_key(key: &str) -> Option<String> {
    let tree = serde_json::to_value(yaml_serde::to_value(Config::default()).ok()?).ok()?;
    let parts: Vec<&str> = key.split('.').collect();
    let (leaf, parents) = parts.split_last()?;
    let mut node = &tree;
    for p in parents {
        node = node.get(p)?;
    }
    let known = node.as_object()?;
    known
        .keys()
        .filter(|k| k.as_str() != *leaf)
        .map(|k| (strsim::jaro_winkler(leaf, k), k))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| {
            let mut full: Vec<&str> = parents.to_vec();
            full.push(k);
            full.join(".")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_get_the_nearest_known_one() {
        assert_eq!(
            super::nearest_known_key("toolset").as_deref(),
            Some("toolsets")
        );
        assert_eq!(
            super::nearest_known_key("agent.max_turn").as_deref(),
            Some("agent.max_turns")
        );
        assert_eq!(super::nearest_known_key("zzzz"), None);
        assert_eq!(
            super::near_miss_hint("unknown key `toolset` (ignored)"),
            "; did you mean `toolsets`?"
        );
    }

    #[test]
    fn non_ascii_is_stripped_from_credential_variables_only() {
        let mut env: BTreeMap<String, String> = [
            ("OPENROUTER_API_KEY", "sk-or-\u{028b}1\u{200b}"),
            ("SLACK_BOT_TOKEN", "xoxb-ok"),
            ("GREETING", "grüß dich"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut notes = Vec::new();
        strip_non_ascii_credentials(&mut env, &mut notes);
        assert_eq!(env["OPENROUTER_API_KEY"], "sk-or-1");
        assert_eq!(env["SLACK_BOT_TOKEN"], "xoxb-ok");
        assert_eq!(env["GREETING"], "grüß dich");
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("OPENROUTER_API_KEY contained 2 non-ASCII characters"));
        assert!(!notes[0].contains("sk-or"), "never the value: {}", notes[0]);
    }
}
