//! `HERMES_HOME/auth.json` in the format of Python Hermes 0.19.0 (`hermes_cli/auth.py`,
//! `agent/credential_pool.py`), shared by both programs:
//!
//! ```json
//! {"version": 1, "providers": {…}, "credential_pool": {"openrouter": [
//!   {"id": "853a02", "label": "work", "auth_type": "api_key", "priority": 0,
//!    "source": "manual", "access_token": "sk-…", …}]}, "updated_at": "…"}
//! ```
//!
//! hermes uses the API-key entries of `credential_pool` (`auth_type` `api_key`, a non-empty
//! `access_token`) as the keys of its [`CredentialPool`]s. Everything else in the file (OAuth
//! entries, `providers`, `active_provider`, `suppressed_sources`, unknown keys of an entry) is
//! written back as read. What only hermes keeps, the pool strategy per provider, lives in a file
//! of its own, `auth.hermes.json` beside `auth.json` ([`HERMES_SIDE_FILE`]); use counts and
//! cooldowns are in the state file (see [`crate::credentials`]).
//!
//! Writes take the lock Python takes, an exclusive `flock(2)` on `auth.lock` beside the file
//! (Python's `fcntl.flock` on `auth.json` with the suffix `.lock`), re-read the file under it,
//! and replace it atomically (a unique temp file, mode 0600, renamed over it). A file that is
//! not JSON of this shape is an `InvalidData` error naming the file and the entry; it is never
//! rewritten. A file in hermes' earlier format (a JSON list of pools) is converted on first
//! read, keeping every key.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::credentials::{Credential, CredentialPool, PoolStrategy};

/// The file beside `auth.json` with what only hermes keeps: `{"strategies": {provider: name}}`.
pub const HERMES_SIDE_FILE: &str = "auth.hermes.json";

/// `version` Python writes (`AUTH_STORE_VERSION`).
const AUTH_STORE_VERSION: u64 = 1;

fn invalid(path: &Path, what: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "{}: {what}; fix or move the file — it was not changed",
            path.display()
        ),
    )
}

/// The lock file of `auth.json` at `path` (`auth.lock`).
pub fn lock_path(path: &Path) -> PathBuf {
    path.with_extension("lock")
}

fn side_path(path: &Path) -> PathBuf {
    path.with_file_name(HERMES_SIDE_FILE)
}

/// Holds the exclusive `flock` on the lock file until dropped.
struct Locked(#[allow(dead_code)] File);

fn lock(path: &Path) -> std::io::Result<Locked> {
    if let Some(dir) = path.parent() {
        hermes_protocol::private_fs::create_dir_all(dir)?;
    }
    // Private like every file of the home (0600 when created, tightened when loose).
    let file = hermes_protocol::private_fs::open_append(&lock_path(path))?;
    // std's `File::lock` is `flock(LOCK_EX)` on Linux: the same lock as Python's.
    file.lock()?;
    Ok(Locked(file))
}

/// A parsed `auth.json`: the whole document, and whether it was hermes' old list format.
struct Document {
    root: Map<String, Value>,
    legacy: bool,
    /// Strategies carried by an old-format file (they move to [`HERMES_SIDE_FILE`]).
    strategies: BTreeMap<String, PoolStrategy>,
}

fn read_document(path: &Path) -> std::io::Result<Document> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let text = text.trim_start_matches('\u{feff}');
    if text.trim().is_empty() {
        let mut root = Map::new();
        root.insert("version".into(), json!(AUTH_STORE_VERSION));
        root.insert("providers".into(), json!({}));
        return Ok(Document {
            root,
            legacy: false,
            strategies: BTreeMap::new(),
        });
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| invalid(path, format!("not valid JSON ({e})")))?;
    match value {
        Value::Object(root) => {
            check_shape(path, &root)?;
            Ok(Document {
                root,
                legacy: false,
                strategies: BTreeMap::new(),
            })
        }
        Value::Array(_) => {
            let pools: Vec<CredentialPool> = serde_json::from_value(value).map_err(|e| {
                invalid(
                    path,
                    format!("neither Python Hermes' format nor a list of credential pools ({e})"),
                )
            })?;
            let mut root = Map::new();
            root.insert("version".into(), json!(AUTH_STORE_VERSION));
            root.insert("providers".into(), json!({}));
            let strategies = pools
                .iter()
                .map(|p| (p.provider.clone(), p.strategy))
                .collect();
            let mut doc = Document {
                root,
                legacy: true,
                strategies,
            };
            set_pools(&mut doc.root, &pools);
            Ok(doc)
        }
        other => Err(invalid(
            path,
            format!("expected a JSON object, found {}", kind(&other)),
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn check_shape(path: &Path, root: &Map<String, Value>) -> std::io::Result<()> {
    if let Some(p) = root.get("providers")
        && !p.is_object()
    {
        return Err(invalid(
            path,
            format!("`providers` is {}, not an object", kind(p)),
        ));
    }
    let Some(pool) = root.get("credential_pool") else {
        return Ok(());
    };
    let Some(pool) = pool.as_object() else {
        return Err(invalid(
            path,
            format!("`credential_pool` is {}, not an object", kind(pool)),
        ));
    };
    for (provider, entries) in pool {
        let Some(entries) = entries.as_array() else {
            return Err(invalid(
                path,
                format!(
                    "`credential_pool.{provider}` is {}, not a list",
                    kind(entries)
                ),
            ));
        };
        for (i, e) in entries.iter().enumerate() {
            if !e.is_object() {
                return Err(invalid(
                    path,
                    format!(
                        "`credential_pool.{provider}` entry #{} is {}, not an object",
                        i + 1,
                        kind(e)
                    ),
                ));
            }
            if let Some(t) = e.get("access_token")
                && !(t.is_string() || t.is_null())
            {
                return Err(invalid(
                    path,
                    format!(
                        "`credential_pool.{provider}` entry #{}: `access_token` is {}",
                        i + 1,
                        kind(t)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a pool entry is an API key hermes can send (`auth_type` absent or `api_key`, a
/// non-empty `access_token`).
fn is_api_key(entry: &Map<String, Value>) -> bool {
    let auth_type = entry
        .get("auth_type")
        .and_then(Value::as_str)
        .unwrap_or("api_key");
    let token = entry
        .get("access_token")
        .and_then(Value::as_str)
        .unwrap_or("");
    matches!(auth_type, "api_key" | "api-key") && !token.trim().is_empty()
}

fn pools_of(
    root: &Map<String, Value>,
    strategies: &BTreeMap<String, PoolStrategy>,
) -> Vec<CredentialPool> {
    let mut out = Vec::new();
    let Some(pool) = root.get("credential_pool").and_then(Value::as_object) else {
        return out;
    };
    for (provider, entries) in pool {
        let mut p = CredentialPool::new(
            provider.clone(),
            strategies.get(provider).copied().unwrap_or_default(),
        );
        let mut keyed: Vec<&Map<String, Value>> = entries
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .filter(|e| is_api_key(e))
            .collect();
        // Python orders a pool by `priority` (stable for equal values).
        keyed.sort_by_key(|e| e.get("priority").and_then(Value::as_i64).unwrap_or(0));
        for e in keyed {
            let key = e
                .get("access_token")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string();
            let id = e.get("id").and_then(Value::as_str).map(str::to_string);
            let label = e
                .get("label")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| id.clone())
                .unwrap_or_else(|| format!("key-{}", p.credentials.len() + 1));
            if p.credentials.iter().any(|c| c.key == key) {
                continue;
            }
            p.credentials.push(Credential {
                id,
                label,
                key,
                uses: 0,
                cooldown_until: None,
                cooldown_reason: None,
            });
        }
        if !p.credentials.is_empty() {
            out.push(p);
        }
    }
    out
}

fn new_entry_id() -> String {
    format!("{:06x}", rand::random::<u32>() & 0xff_ffff)
}

/// Rewrites `credential_pool` so its API-key entries are exactly `pools`: an entry whose `id`
/// is kept keeps every other key it had; new keys get Python's fields; entries hermes does not
/// use (OAuth, …) stay, after the API keys.
fn set_pools(root: &mut Map<String, Value>, pools: &[CredentialPool]) {
    let mut old: Map<String, Value> = match root.remove("credential_pool") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut new_pool = Map::new();
    let mut providers: Vec<String> = old.keys().cloned().collect();
    for p in pools {
        if !providers.contains(&p.provider) {
            providers.push(p.provider.clone());
        }
    }
    for provider in providers {
        let before: Vec<Map<String, Value>> = match old.remove(&provider) {
            Some(Value::Array(list)) => list
                .into_iter()
                .filter_map(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let (keyed, others): (Vec<_>, Vec<_>) = before.into_iter().partition(is_api_key);
        let mut list = Vec::new();
        let creds = pools
            .iter()
            .filter(|p| p.provider == provider)
            .flat_map(|p| p.credentials.iter());
        for (priority, c) in creds.enumerate() {
            let existing = keyed.iter().find(|e| {
                let same_id =
                    c.id.is_some() && e.get("id").and_then(Value::as_str) == c.id.as_deref();
                same_id || e.get("access_token").and_then(Value::as_str) == Some(c.key.as_str())
            });
            let mut entry = match existing {
                Some(e) => e.clone(),
                None => {
                    let mut e = Map::new();
                    e.insert(
                        "id".into(),
                        json!(c.id.clone().unwrap_or_else(new_entry_id)),
                    );
                    e.insert("auth_type".into(), json!("api_key"));
                    e.insert("source".into(), json!("manual"));
                    // Python Hermes resolves most providers' URL from the entry itself
                    // (stop 31's switch pass: a deepseek key added here had none).
                    if let Some(url) = crate::runtime::hosted_base_url(&provider) {
                        e.insert("base_url".into(), json!(url));
                    }
                    for k in [
                        "last_status",
                        "last_status_at",
                        "last_error_code",
                        "last_error_reason",
                        "last_error_message",
                        "last_error_reset_at",
                    ] {
                        e.insert(k.into(), Value::Null);
                    }
                    e.insert("request_count".into(), json!(0));
                    e
                }
            };
            entry.insert("label".into(), json!(c.label));
            entry.insert("access_token".into(), json!(c.key));
            entry.insert("priority".into(), json!(priority));
            list.push(Value::Object(entry));
        }
        list.extend(others.into_iter().map(Value::Object));
        new_pool.insert(provider, Value::Array(list));
    }
    root.insert("credential_pool".into(), Value::Object(new_pool));
}

fn read_strategies(path: &Path) -> BTreeMap<String, PoolStrategy> {
    let side = side_path(path);
    let Ok(text) = std::fs::read_to_string(&side) else {
        return BTreeMap::new();
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => v
            .get("strategies")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), PoolStrategy::parse(v.as_str()?)?)))
                    .collect()
            })
            .unwrap_or_default(),
        Err(e) => {
            tracing::warn!(file = %side.display(), error = %e, "unreadable; pool strategies are fill_first");
            BTreeMap::new()
        }
    }
}

/// Writes `text` to `path` atomically: a temp file of a unique name in the same directory,
/// mode 0600 on Unix, synced, renamed over `path`.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".auth.json.tmp")
        .tempfile_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn write_document(
    path: &Path,
    root: &mut Map<String, Value>,
    pools: &[CredentialPool],
) -> std::io::Result<()> {
    set_pools(root, pools);
    root.insert("version".into(), json!(AUTH_STORE_VERSION));
    root.entry("providers").or_insert_with(|| json!({}));
    root.insert(
        "updated_at".into(),
        json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false)),
    );
    let text = serde_json::to_string_pretty(root).map_err(std::io::Error::other)? + "\n";
    write_private(path, &text)?;
    let strategies: Map<String, Value> = pools
        .iter()
        .filter(|p| p.strategy != PoolStrategy::FillFirst)
        .map(|p| (p.provider.clone(), json!(p.strategy.as_str())))
        .collect();
    let side = side_path(path);
    if strategies.is_empty() && !side.exists() {
        return Ok(());
    }
    let text = serde_json::to_string_pretty(&json!({"strategies": strategies}))
        .map_err(std::io::Error::other)?;
    write_private(&side, &text)
}

/// The API-key pools of `auth.json` at `path`, by provider, with the strategies of
/// [`HERMES_SIDE_FILE`]. A missing file is no pools. A file in hermes' old list format is
/// converted to Python's format (under the lock) before it is returned.
///
/// # Errors
/// `InvalidData` naming the file (and the provider and entry) when it is not JSON of Python's
/// shape; I/O errors of reading, locking or converting.
pub fn load(path: &Path) -> std::io::Result<Vec<CredentialPool>> {
    let doc = read_document(path)?;
    if doc.legacy {
        return update(path, |_| ());
    }
    Ok(pools_of(&doc.root, &read_strategies(path)))
}

/// Checks that `auth.json` at `path` can be read (for `hermes doctor`); returns the number of
/// API keys hermes uses from it. Never writes.
///
/// # Errors
/// As [`load`], without converting an old-format file.
pub fn check(path: &Path) -> std::io::Result<usize> {
    let doc = read_document(path)?;
    Ok(pools_of(&doc.root, &BTreeMap::new())
        .iter()
        .map(|p| p.credentials.len())
        .sum())
}

/// Read-modify-write of the pools under the lock: reads the file, hands its pools to `f`,
/// writes the result back keeping every entry and key hermes does not use. Returns the pools
/// written.
///
/// # Errors
/// As [`load`]; a file that cannot be parsed is left untouched and `f` is not called.
pub fn update(
    path: &Path,
    f: impl FnOnce(&mut Vec<CredentialPool>),
) -> std::io::Result<Vec<CredentialPool>> {
    update_with(path, |pools| {
        f(pools);
        Ok::<(), std::io::Error>(())
    })
    .map(|(pools, ())| pools)
}

/// [`update`] with a fallible `f` whose error aborts the write; returns the pools written and
/// `f`'s value.
///
/// # Errors
/// `f`'s error (nothing is written), or as [`update`].
pub fn update_with<T, E>(
    path: &Path,
    f: impl FnOnce(&mut Vec<CredentialPool>) -> Result<T, E>,
) -> Result<(Vec<CredentialPool>, T), E>
where
    E: From<std::io::Error>,
{
    let _lock = lock(path)?;
    let mut doc = read_document(path)?;
    let mut strategies = read_strategies(path);
    strategies.extend(std::mem::take(&mut doc.strategies));
    let mut pools = pools_of(&doc.root, &strategies);
    let out = f(&mut pools)?;
    pools.retain(|p| !p.credentials.is_empty() || p.strategy != PoolStrategy::FillFirst);
    write_document(path, &mut doc.root, &pools)?;
    Ok((pools, out))
}
