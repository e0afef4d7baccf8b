//! Credential pools (FEATURES §2): several API keys per provider, a selection strategy
//! (`fill_first`, `round_robin`, `least_used`), and cooldowns after failures — 5 min after a
//! 401, 1 h after a 429 or 402 unless the provider said when it resets (`Retry-After`). The
//! state (use counts, cooldown ends as Unix seconds) is plain serde data: the keys added with
//! `hermes auth add` live in `HERMES_HOME/auth.json`, in Python Hermes' format and shared with
//! it ([`crate::auth_file`]; [`CredentialPool::save`] / [`CredentialPool::load`]); the use counts and cooldowns of every pooled key, whatever its
//! origin, live without secrets in `HERMES_HOME/cache/credential_state.json`, by provider and
//! key label ([`save_state`] / [`load_state`]). Clock values are passed in (Unix seconds) so
//! behaviour is testable without waiting.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorClass, LlmError};
use crate::redact::mask_secret;

/// Cooldown after an authentication failure (HTTP 401): 5 minutes.
pub const AUTH_COOLDOWN: Duration = Duration::from_secs(5 * 60);
/// Cooldown after a rate limit (429) or billing failure (402) with no reset time: 1 hour.
pub const LIMIT_COOLDOWN: Duration = Duration::from_secs(60 * 60);

/// How the next key is chosen among those not cooling down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolStrategy {
    /// Always the first available key in order (the default).
    #[default]
    FillFirst,
    /// Take turns: the available key after the one used last.
    RoundRobin,
    /// The available key with the fewest uses.
    LeastUsed,
    /// Any available key, chosen uniformly at random (Python Hermes' `random`).
    Random,
}

impl PoolStrategy {
    /// The name of the strategy (`fill_first`, …), as [`PoolStrategy::parse`] reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolStrategy::FillFirst => "fill_first",
            PoolStrategy::RoundRobin => "round_robin",
            PoolStrategy::LeastUsed => "least_used",
            PoolStrategy::Random => "random",
        }
    }

    /// Parses `fill_first` / `round_robin` / `least_used` / `random` (Python Hermes'
    /// `SUPPORTED_POOL_STRATEGIES`; case and surrounding blanks ignored, as Python does).
    pub fn parse(s: &str) -> Option<PoolStrategy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fill_first" => Some(PoolStrategy::FillFirst),
            "round_robin" => Some(PoolStrategy::RoundRobin),
            "least_used" => Some(PoolStrategy::LeastUsed),
            "random" => Some(PoolStrategy::Random),
            _ => None,
        }
    }

    /// The accepted names, for messages.
    pub const NAMES: &'static str = "fill_first, round_robin, least_used or random";
}

/// One key and its bookkeeping.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// The id of its `auth.json` entry (six hex digits, Python's), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A short label for `hermes auth list` (e.g. `key-2`, `work`).
    pub label: String,
    /// The secret; never printed by `Debug`.
    pub key: String,
    /// Requests made with it.
    #[serde(default)]
    pub uses: u64,
    /// Unix seconds until which it is not used, if cooling down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_until: Option<u64>,
    /// Why it is cooling down (error class name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_reason: Option<String>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("label", &self.label)
            .field("key", &mask_secret(&self.key))
            .field("uses", &self.uses)
            .field("cooldown_until", &self.cooldown_until)
            .finish()
    }
}

/// The keys of one provider.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialPool {
    /// Canonical provider id.
    pub provider: String,
    /// Selection strategy.
    #[serde(default)]
    pub strategy: PoolStrategy,
    /// Keys in the user's order.
    pub credentials: Vec<Credential>,
    /// Index of the key handed out last.
    #[serde(default)]
    pub last: Option<usize>,
}

impl CredentialPool {
    /// An empty pool for `provider`.
    pub fn new(provider: impl Into<String>, strategy: PoolStrategy) -> CredentialPool {
        CredentialPool {
            provider: provider.into(),
            strategy,
            credentials: Vec::new(),
            last: None,
        }
    }

    /// Adds a key (ignored when the same key is already present); returns its index.
    pub fn add(&mut self, label: impl Into<String>, key: impl Into<String>) -> usize {
        let key = key.into();
        if let Some(i) = self.credentials.iter().position(|c| c.key == key) {
            return i;
        }
        self.credentials.push(Credential {
            id: None,
            label: label.into(),
            key,
            uses: 0,
            cooldown_until: None,
            cooldown_reason: None,
        });
        self.credentials.len() - 1
    }

    /// Removes the key with this label; true when one was removed.
    pub fn remove(&mut self, label: &str) -> bool {
        let before = self.credentials.len();
        self.credentials.retain(|c| c.label != label);
        self.last = None;
        before != self.credentials.len()
    }

    fn available(&self, now: u64) -> impl Iterator<Item = usize> + '_ {
        self.credentials
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.cooldown_until.is_none_or(|t| t <= now))
            .map(|(i, _)| i)
    }

    /// Picks the next key by the strategy among keys not cooling down at `now` (Unix seconds),
    /// counts the use and returns `(index, key)`. `None` when every key is cooling down.
    pub fn acquire(&mut self, now: u64) -> Option<(usize, String)> {
        let avail: Vec<usize> = self.available(now).collect();
        let pick = match self.strategy {
            PoolStrategy::FillFirst => avail.first().copied(),
            PoolStrategy::RoundRobin => {
                let after = self.last.map_or(0, |l| l + 1);
                avail
                    .iter()
                    .copied()
                    .find(|i| *i >= after)
                    .or_else(|| avail.first().copied())
            }
            PoolStrategy::LeastUsed => avail
                .iter()
                .copied()
                .min_by_key(|i| self.credentials[*i].uses),
            PoolStrategy::Random => {
                use rand::seq::IndexedRandom;
                avail.choose(&mut rand::rng()).copied()
            }
        }?;
        let c = &mut self.credentials[pick];
        c.uses += 1;
        c.cooldown_until = None;
        c.cooldown_reason = None;
        self.last = Some(pick);
        Some((pick, c.key.clone()))
    }

    /// Like [`CredentialPool::acquire`], but when every key is cooling down it hands out the
    /// one whose cooldown ends first (a real call is a better judge than a stale cooldown; the
    /// user may have replaced the key). `None` only for an empty pool.
    pub fn acquire_or_soonest(&mut self, now: u64) -> Option<(usize, String)> {
        if let Some(picked) = self.acquire(now) {
            return Some(picked);
        }
        let pick = self
            .credentials
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| c.cooldown_until.unwrap_or(0))
            .map(|(i, _)| i)?;
        let c = &mut self.credentials[pick];
        c.uses += 1;
        self.last = Some(pick);
        Some((pick, c.key.clone()))
    }

    /// The bookkeeping of every key, by label (no secrets).
    pub fn state(&self) -> BTreeMap<String, KeyState> {
        self.credentials
            .iter()
            .map(|c| {
                (
                    c.label.clone(),
                    KeyState {
                        uses: c.uses,
                        cooldown_until: c.cooldown_until,
                        cooldown_reason: c.cooldown_reason.clone(),
                    },
                )
            })
            .collect()
    }

    /// Applies saved bookkeeping to the keys with the same labels (others are untouched).
    pub fn apply_state(&mut self, state: &BTreeMap<String, KeyState>) {
        for c in &mut self.credentials {
            if let Some(s) = state.get(&c.label) {
                c.uses = s.uses;
                c.cooldown_until = s.cooldown_until;
                c.cooldown_reason = s.cooldown_reason.clone();
            }
        }
    }

    /// Records a failure of key `index` at `now`: 401 (auth) → 5 min, rate_limit/billing → the
    /// provider's `retry_after` if it gave one, else 1 h. Other errors do not cool a key down.
    /// Returns the cooldown applied.
    pub fn report_failure(&mut self, index: usize, err: &LlmError, now: u64) -> Option<Duration> {
        let cooldown = match err.class {
            ErrorClass::Auth if err.status != Some(403) => AUTH_COOLDOWN,
            ErrorClass::RateLimit | ErrorClass::Billing => {
                err.retry_after.unwrap_or(LIMIT_COOLDOWN)
            }
            _ => return None,
        };
        let c = self.credentials.get_mut(index)?;
        c.cooldown_until = Some(now + cooldown.as_secs().max(1));
        c.cooldown_reason = Some(err.class.as_str().to_string());
        Some(cooldown)
    }

    /// Loads the API-key pools of `auth.json` (Python Hermes' format; see
    /// [`crate::auth_file::load`]); a missing file is an empty list; a file that is not of
    /// that shape is an `InvalidData` error naming the path (the file is left as it is).
    pub fn load(path: &Path) -> std::io::Result<Vec<CredentialPool>> {
        crate::auth_file::load(path)
    }

    /// Makes `pools` the API-key pools of `auth.json`, under the shared lock, keeping every
    /// other entry and key of the file ([`crate::auth_file::update`]).
    pub fn save(path: &Path, pools: &[CredentialPool]) -> std::io::Result<()> {
        crate::auth_file::update(path, |p| *p = pools.to_vec()).map(|_| ())
    }
}

/// Writes `text` to `path` atomically (temp file + rename), mode 0600 on Unix.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    // Created 0600 (folders 0700) before any byte is written: no window where the key is
    // readable by others.
    hermes_protocol::private_fs::write_atomic(path, text)
}

/// The bookkeeping of one pooled key, persisted without the secret.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KeyState {
    /// Requests made with the key.
    #[serde(default)]
    pub uses: u64,
    /// Unix seconds until which the key is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_until: Option<u64>,
    /// Error class that started the cooldown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_reason: Option<String>,
}

/// The state file: provider id → key label → [`KeyState`].
pub type PoolStates = BTreeMap<String, BTreeMap<String, KeyState>>;

/// Loads the state file; a missing or unreadable file is empty state (it is only a cache of
/// cooldowns: losing it costs at most one failed call per key).
pub fn load_state(path: &Path) -> PoolStates {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Replaces the entry of `pool.provider` in the state file with the pool's current state.
pub fn save_state(path: &Path, pool: &CredentialPool) -> std::io::Result<()> {
    let mut all = load_state(path);
    all.insert(pool.provider.clone(), pool.state());
    let text = serde_json::to_string_pretty(&all).map_err(std::io::Error::other)?;
    write_private(path, &text)
}
