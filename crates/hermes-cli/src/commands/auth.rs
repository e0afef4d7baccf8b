//! `hermes auth {add,list,remove}`: extra API keys per provider, kept in
//! `HERMES_HOME/auth.json` (mode 0600) in Python Hermes' format, shared with it
//! (`hermes_llm::auth_file`: its lock, its entries kept). Together with the provider's own key (env var or
//! `model.api_key`) and `model.api_keys` they form the provider's credential pool (FEATURES §2):
//! a key that fails with 401/402/429 cools down and the next one is used. Keys are never
//! printed in full (`first6...last4`).

use std::io::BufRead;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use hermes_llm::credentials::{CredentialPool, PoolStrategy, load_state};
use hermes_llm::mask_secret;

use crate::assembly::app::App;
use crate::assembly::runtime::provider_id;

/// `hermes auth …`
#[derive(Debug, Subcommand)]
pub enum AuthCmd {
    /// Adds a key to a provider's pool; the key is read from stdin when `--key` is absent.
    Add {
        /// Provider id or alias (`openrouter`, `anthropic`, …).
        provider: String,
        /// A name for the key (default `key-N`).
        #[arg(long)]
        label: Option<String>,
        /// The key itself (prefer stdin: command lines end up in shell history).
        #[arg(long)]
        key: Option<String>,
        /// Pool strategy for this provider: fill_first, round_robin, least_used or random.
        /// Written to config.yaml's `credential_pool_strategies`, where Python Hermes keeps
        /// it too.
        #[arg(long)]
        strategy: Option<String>,
    },
    /// Lists the pooled keys (masked), their use counts and cooldowns.
    List {
        /// Only this provider.
        provider: Option<String>,
    },
    /// Removes a key by label.
    Remove {
        /// Provider id or alias.
        provider: String,
        /// The key's label (see `hermes auth list`).
        label: String,
    },
    /// A Python Hermes `auth` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// The pool a key goes to: a provider's id, or `custom:<name>` for a named custom provider
/// (Python Hermes keeps those keys under that name, and hermes uses them for it).
fn require_provider(name: &str) -> Result<String> {
    let trimmed = name.trim();
    if let Some(custom) = trimmed
        .strip_prefix("custom:")
        .filter(|n| !n.trim().is_empty())
    {
        return Ok(format!("custom:{}", custom.trim()));
    }
    provider_id(trimmed).with_context(|| {
        format!(
            "`{name}` is not a provider that takes API keys; use one of: openrouter, \
             openai-api, anthropic, nous, deepseek, gemini, xai, custom, custom:<name>"
        )
    })
}

/// Runs one `hermes auth` command; returns the exit code.
pub fn run(profile: Option<&str>, cmd: &AuthCmd) -> Result<i32> {
    let app = App::load(profile)?;
    let path = app.home.auth_file();
    match cmd {
        AuthCmd::Other(words) => Ok(crate::commands::redirect::answer::<AuthCmd>(
            &["auth"],
            words,
        )),
        AuthCmd::Add {
            provider,
            label,
            key,
            strategy,
        } => {
            let id = require_provider(provider)?;
            let strategy = match strategy.as_deref() {
                Some(s) => Some(PoolStrategy::parse(s).with_context(|| {
                    format!("unknown strategy `{s}`; use {}", PoolStrategy::NAMES)
                })?),
                None => None,
            };
            let key = match key {
                Some(k) => k.trim().to_string(),
                None => read_key_from_stdin()?,
            };
            if key.is_empty() {
                bail!("no key given: pass --key or write the key on stdin");
            }
            if key.chars().any(char::is_whitespace) {
                bail!("the key contains whitespace; paste only the key itself");
            }
            let (_, message) = hermes_llm::auth_file::update_with(&path, |pools| {
                let at = match pools.iter().position(|p| p.provider == id) {
                    Some(i) => i,
                    None => {
                        pools.push(CredentialPool::new(id.clone(), PoolStrategy::default()));
                        pools.len() - 1
                    }
                };
                let pool = &mut pools[at];
                if let Some(existing) = pool.credentials.iter().find(|c| c.key == key) {
                    return Ok::<_, anyhow::Error>(format!(
                        "{id}: this key is already pooled as `{}` ({})",
                        existing.label,
                        mask_secret(&key)
                    ));
                }
                let label = match label {
                    Some(l) if pool.credentials.iter().any(|c| &c.label == l) => {
                        bail!("{id} already has a key labelled `{l}`; choose another --label")
                    }
                    Some(l) => l.clone(),
                    None => (1..)
                        .map(|n| format!("key-{n}"))
                        .find(|l| !pool.credentials.iter().any(|c| &c.label == l))
                        .unwrap_or_else(|| "key".to_string()),
                };
                pool.add(label.clone(), key.clone());
                let total = pool.credentials.len();
                Ok(format!(
                    "{id}: added `{label}` ({}); {total} key(s) in {}",
                    mask_secret(&key),
                    path.display()
                ))
            })
            .with_context(|| format!("updating {}", path.display()))?;
            println!("{message}");
            if let Some(s) = strategy {
                set_pool_strategy(&app, &id, s)?;
                println!(
                    "{id}: strategy {} (credential_pool_strategies in config.yaml)",
                    s.as_str()
                );
            }
            Ok(0)
        }
        AuthCmd::List { provider } => {
            let only = match provider {
                Some(p) => Some(require_provider(p)?),
                None => None,
            };
            let pools = CredentialPool::load(&path)?;
            print!("{}", list_text(&app, &pools, only.as_deref()));
            Ok(0)
        }
        AuthCmd::Remove { provider, label } => {
            let id = require_provider(provider)?;
            hermes_llm::auth_file::update_with(&path, |pools| {
                let removed = pools
                    .iter_mut()
                    .find(|p| p.provider == id)
                    .is_some_and(|p| p.remove(label));
                if !removed {
                    bail!("{id} has no key labelled `{label}` (see `hermes auth list`)");
                }
                Ok(())
            })
            .with_context(|| format!("updating {}", path.display()))?;
            println!("{id}: removed `{label}`");
            Ok(0)
        }
    }
}

/// Writes `credential_pool_strategies.<provider>: <strategy>` into config.yaml, editing
/// only that line (the rest of the file, comments included, stays as it is).
fn set_pool_strategy(app: &App, provider: &str, strategy: PoolStrategy) -> Result<()> {
    let file = app.home.config_file();
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let value = serde_json::Value::String(strategy.as_str().to_string());
    let new = crate::config_edit::path::set_path(
        &text,
        &["credential_pool_strategies", provider],
        &value,
    )
    .with_context(|| format!("editing {}", file.display()))?;
    hermes_protocol::private_fs::write_atomic(&file, &new)
        .with_context(|| format!("writing {}", file.display()))
}

fn read_key_from_stdin() -> Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the key from stdin")?;
    Ok(line.trim().to_string())
}

/// The `hermes auth list` text: per provider its strategy, then one line per key (label,
/// masked key, uses, cooldown); keys from env/config appear by label only, when they have
/// recorded state.
fn list_text(app: &App, pools: &[CredentialPool], only: Option<&str>) -> String {
    let states = load_state(&app.home.credential_state_file());
    let now = chrono::Utc::now().timestamp().max(0) as u64;
    let mut providers: Vec<&str> = pools.iter().map(|p| p.provider.as_str()).collect();
    providers.extend(states.keys().map(String::as_str));
    providers.sort_unstable();
    providers.dedup();
    let configured = app.config.pool_strategy_names();
    let mut out = String::new();
    for id in providers
        .into_iter()
        .filter(|p| only.is_none_or(|o| o == *p))
    {
        let pool = pools.iter().find(|p| p.provider == id);
        let state = states.get(id);
        let strategy = configured
            .get(id)
            .and_then(|s| PoolStrategy::parse(s))
            .or(pool.map(|p| p.strategy))
            .unwrap_or_default()
            .as_str();
        out.push_str(&format!("{id} (strategy {strategy})\n"));
        let mut labels: Vec<(String, String)> = pool
            .map(|p| {
                p.credentials
                    .iter()
                    .map(|c| (c.label.clone(), mask_secret(&c.key)))
                    .collect()
            })
            .unwrap_or_default();
        for label in state.into_iter().flat_map(|s| s.keys()) {
            if !labels.iter().any(|(l, _)| l == label) {
                labels.push((label.clone(), "(env/config key)".to_string()));
            }
        }
        for (label, shown) in labels {
            let s = state
                .and_then(|s| s.get(&label))
                .cloned()
                .unwrap_or_default();
            let status = match s.cooldown_until {
                Some(until) if until > now => format!(
                    "cooling down {} s more ({})",
                    until - now,
                    s.cooldown_reason.as_deref().unwrap_or("error")
                ),
                _ => "ready".to_string(),
            };
            out.push_str(&format!(
                "  {label:<12} {shown:<20} uses {:<6} {status}\n",
                s.uses
            ));
        }
    }
    if out.is_empty() {
        out.push_str(
            "no pooled keys; add one with `hermes auth add <provider>` (the key is read from stdin)\n",
        );
    }
    out
}
