//! The pairing files in Python Hermes 0.19.0's format (`gateway/pairing.py`), and the one-time
//! migration of the shapes earlier hermes releases wrote.
//!
//! - `<platform>-pending.json`: an object keyed by an entry id (16 hex digits) whose values
//!   are `{"hash", "salt", "user_id", "user_name", "created_at"}`: the code itself is never
//!   stored, only `sha256(salt ‖ code)` in hex with a random 16-byte salt (hex too);
//!   `created_at` is unix seconds as a float.
//! - `<platform>-approved.json`: an object keyed by user id whose values are
//!   `{"user_name", "approved_at"}`.
//! - `_rate_limits.json`: one object for every platform: `"<platform>:<user_id>"` → unix time
//!   of the user's last code request, `"_failures:<platform>"` → wrong approvals since the last
//!   lockout, `"_lockout:<platform>"` → unix time until which approvals are refused.
//!
//! Earlier hermes releases wrote lists (`[{"code", "user_id", …}]`, `[{"user_id", …}]`) and
//! `_limits.json`; [`migrate_dir`] rewrites them once in the format above (a pending code kept
//! in plain text is hashed with a fresh salt, so it stays approvable by both programs), keeping
//! each old file beside it as `<name>.bak-hermes-list` for going back to such a release. Every
//! key either program does not know is kept as it is.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::pairing::PairingError;

/// A JSON object as read from a pairing file.
pub(crate) type Obj = Map<String, Value>;

/// What kind of pairing file a path is (legacy shapes differ per kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Pending,
    Approved,
    Limits,
}

/// The name of the shared rate-limit file.
pub(crate) const RATE_LIMITS: &str = "_rate_limits.json";
/// The name of the file earlier hermes releases kept their limits in.
pub(crate) const LEGACY_LIMITS: &str = "_limits.json";

fn corrupt(path: &Path, detail: impl Into<String>) -> PairingError {
    PairingError::Corrupt {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PairingError + '_ {
    move |source| PairingError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads one pairing file as Python's object shape: missing or empty is `{}`; a list written
/// by an earlier hermes release is converted (in memory; [`migrate_dir`] rewrites the file).
/// Anything else is [`PairingError::Corrupt`] naming the file.
pub(crate) fn load(path: &Path, kind: Kind) -> Result<Obj, PairingError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Obj::new()),
        Err(e) => return Err(io(path)(e)),
    };
    if text.trim().is_empty() {
        return Ok(Obj::new());
    }
    match serde_json::from_str::<Value>(&text).map_err(|e| corrupt(path, e.to_string()))? {
        Value::Object(map) => Ok(map),
        Value::Array(items) => match kind {
            Kind::Pending => Ok(legacy_pending(&items)),
            Kind::Approved => Ok(legacy_approved(&items)),
            Kind::Limits => Err(corrupt(path, "expected a JSON object, found a list")),
        },
        other => Err(corrupt(
            path,
            format!("expected a JSON object, found `{other}`"),
        )),
    }
}

/// Whether the file at `path` holds a legacy list (so it needs rewriting).
fn is_legacy_list(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|v| v.is_array())
}

/// Writes `obj` to `path` as Python does (`json.dumps(…, indent=2, ensure_ascii=False)`),
/// through a 0600 temp file and a rename.
pub(crate) fn save(dir: &Path, path: &Path, obj: &Obj) -> Result<(), PairingError> {
    hermes_protocol::private_fs::create_dir_all(dir).map_err(io(dir))?;
    let text = serde_json::to_string_pretty(obj).map_err(|e| corrupt(path, e.to_string()))?;
    hermes_protocol::private_fs::write_atomic(path, text).map_err(io(path))
}

/// `sha256(salt ‖ code)` in lower-case hex, as Python's `PairingStore._hash_code`.
pub(crate) fn hash_code(code: &str, salt: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(code.as_bytes());
    hex::encode(h.finalize())
}

/// `n` random bytes in hex (entry ids: 8 bytes; salts: 16 bytes).
pub(crate) fn random_hex(n: usize) -> String {
    use rand::RngCore;
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// A pending entry for `code` in Python's shape (the code hashed with a fresh salt).
pub(crate) fn pending_entry(code: &str, user_id: &str, user_name: Option<&str>, at: f64) -> Value {
    let salt = random_hex(16);
    let salt_bytes = hex::decode(&salt).unwrap_or_default();
    json!({
        "hash": hash_code(code, &salt_bytes),
        "salt": salt,
        "user_id": user_id,
        "user_name": user_name.unwrap_or(""),
        "created_at": at,
    })
}

/// Whether `entry` (a pending entry) was issued for `code`: its salted hash matches, compared
/// in constant time (Python's `secrets.compare_digest`). Entries without a salt and hash never
/// match.
pub(crate) fn entry_matches(entry: &Value, code: &str) -> bool {
    use subtle::ConstantTimeEq;
    let (Some(salt), Some(hash)) = (
        entry.get("salt").and_then(Value::as_str),
        entry.get("hash").and_then(Value::as_str),
    ) else {
        return false;
    };
    let Ok(salt) = hex::decode(salt) else {
        return false;
    };
    let candidate = hash_code(code, &salt);
    candidate.as_bytes().ct_eq(hash.as_bytes()).into()
}

/// A number field (`created_at`, a rate-limit time) as f64.
pub(crate) fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// A string field that may be missing, `null` or empty (`user_name`): `None` for the last two.
pub(crate) fn opt_str(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Hermes' old pending list `[{"code", "user_id", "user_name", "created_at"}]` as Python's
/// object: each plain-text code is hashed with a fresh salt under a new entry id.
fn legacy_pending(items: &[Value]) -> Obj {
    let mut out = Obj::new();
    for item in items {
        let (Some(code), Some(user)) = (
            item.get("code").and_then(Value::as_str),
            item.get("user_id").and_then(Value::as_str),
        ) else {
            continue;
        };
        let at = num(item.get("created_at")).unwrap_or(0.0);
        let name = opt_str(item.get("user_name"));
        out.insert(
            random_hex(8),
            pending_entry(code, user, name.as_deref(), at),
        );
    }
    out
}

/// Hermes' old approved list `[{"user_id", "user_name", "approved_at"}]` as Python's object.
fn legacy_approved(items: &[Value]) -> Obj {
    let mut out = Obj::new();
    for item in items {
        let Some(user) = item.get("user_id").and_then(Value::as_str) else {
            continue;
        };
        out.insert(
            user.to_string(),
            json!({
                "user_name": opt_str(item.get("user_name")).unwrap_or_default(),
                "approved_at": num(item.get("approved_at")).unwrap_or(0.0),
            }),
        );
    }
    out
}

/// Hermes' old `_limits.json` (`{"last_request": {"p:u": t}, "failed": {p: n},
/// "locked_until": {p: t}}`) merged into Python's rate-limit object; keys already there win.
fn merge_legacy_limits(old: &Obj, into: &mut Obj) {
    let section = |name: &str| old.get(name).and_then(Value::as_object).cloned();
    let mut add = |key: String, v: &Value| {
        if let Some(n) = v.as_f64() {
            into.entry(key).or_insert(json!(n));
        }
    };
    for (k, v) in section("last_request").unwrap_or_default() {
        add(k, &v);
    }
    for (p, v) in section("failed").unwrap_or_default() {
        add(format!("_failures:{p}"), &v);
    }
    for (p, v) in section("locked_until").unwrap_or_default() {
        add(format!("_lockout:{p}"), &v);
    }
}

/// Rewrites, in `dir`, every pairing file still in an earlier hermes release's shape (lists,
/// `_limits.json`) in Python's format. Call it under the pairing lock. Returns the files it
/// rewrote.
pub(crate) fn migrate_dir(dir: &Path) -> Result<Vec<PathBuf>, PairingError> {
    let mut done = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(io(dir)(e)),
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = if name.ends_with("-pending.json") {
            Kind::Pending
        } else if name.ends_with("-approved.json") {
            Kind::Approved
        } else {
            continue;
        };
        let path = entry.path();
        if is_legacy_list(&path) {
            let obj = load(&path, kind)?;
            let backup = backup_path(&path);
            std::fs::copy(&path, &backup).map_err(io(&backup))?;
            save(dir, &path, &obj)?;
            done.push(path);
        }
    }
    let legacy = dir.join(LEGACY_LIMITS);
    if legacy.exists() {
        let old = load(&legacy, Kind::Limits)?;
        let target = dir.join(RATE_LIMITS);
        let mut limits = load(&target, Kind::Limits)?;
        merge_legacy_limits(&old, &mut limits);
        save(dir, &target, &limits)?;
        let backup = backup_path(&legacy);
        std::fs::rename(&legacy, &backup).map_err(io(&legacy))?;
        done.push(legacy);
    }
    Ok(done)
}

/// Where [`migrate_dir`] keeps a file as an earlier hermes release wrote it (a name neither
/// program reads as a pairing file), for going back to that release.
pub(crate) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(LEGACY_SUFFIX);
    path.with_file_name(name)
}

/// The suffix of those copies.
pub(crate) const LEGACY_SUFFIX: &str = ".bak-hermes-list";

/// Python's `_merge_pairing_dir`: the `*.json` objects of `alternate` (the pairing directory
/// not in use) are merged into the same-named files of `active`, entries already in `active`
/// winning, so users paired under either layout stay paired. Files that are not JSON objects
/// are skipped, as Python skips them; `alternate` is left as it is.
pub(crate) fn merge_alternate(active: &Path, alternate: &Path) -> Result<(), PairingError> {
    let same = match (active.canonicalize(), alternate.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let Ok(entries) = std::fs::read_dir(alternate) else {
        return Ok(());
    };
    if same {
        return Ok(());
    }
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let src = entry.path();
        if !name.ends_with(".json") || !src.is_file() {
            continue;
        }
        let Some(theirs) = std::fs::read_to_string(&src)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v.as_object().cloned())
            .filter(|m| !m.is_empty())
        else {
            continue;
        };
        let dest = active.join(&name);
        let ours = load(
            &dest,
            if name == RATE_LIMITS || name == LEGACY_LIMITS {
                Kind::Limits
            } else if name.ends_with("-pending.json") {
                Kind::Pending
            } else {
                Kind::Approved
            },
        )?;
        let mut merged = theirs;
        for (k, v) in &ours {
            merged.insert(k.clone(), v.clone());
        }
        if merged != ours {
            save(active, &dest, &merged)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_pythons_sha256_of_salt_then_code() {
        // hashlib.sha256(bytes.fromhex("00ff") + b"ABCD2345").hexdigest()
        assert_eq!(
            hash_code("ABCD2345", &[0x00, 0xff]),
            "b639dd55103199d788b9554aaa3a4f0dcf3d68f5ca285407fe0c4c1b9e6b16ad"
        );
        let e = pending_entry("ABCD2345", "42", Some("bob"), 10.0);
        assert!(entry_matches(&e, "ABCD2345"));
        assert!(!entry_matches(&e, "ABCD2346"));
        assert_eq!(e["user_name"], "bob");
        assert_eq!(e["salt"].as_str().unwrap().len(), 32);
    }
}
