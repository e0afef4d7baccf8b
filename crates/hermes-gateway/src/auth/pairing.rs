//! DM pairing (FEATURES §1 Gateway): an unknown user's DM on a platform without an allowlist
//! gets a one-time code; the owner approves it with `hermes pairing approve <platform> <code>`.
//!
//! The files are Python Hermes 0.19.0's (`gateway/pairing.py`), shared with it: a user paired
//! by either program is paired in both, and a code issued by one is approved by the other.
//! They live in the directory [`PairingStore::dir_for_home`] picks the way Python does
//! (`HERMES_HOME/pairing/` when it has content, else `HERMES_HOME/platforms/pairing/`), mode
//! 0600, each replaced atomically through a temp file:
//! `<platform>-pending.json` (codes waiting for approval, stored only as salted SHA-256
//! hashes), `<platform>-approved.json` (paired users) and `_rate_limits.json` (per-user
//! request times, failed approvals and lockouts). The formats, and the one-time migration of
//! the lists and `_limits.json` that earlier hermes releases wrote, are in `pairing_files.rs`.
//! The rules are Python's: 8-character codes valid one hour, at most 3 pending per platform,
//! one request per user per 10 minutes, and after 5 wrong codes approvals (and new codes) on
//! the platform are locked for an hour.
//!
//! Every call re-reads the files, so an approval made by the CLI (either program's) is seen by
//! a running gateway at the next message.
//!
//! Locking: Python takes no lock file for these files: its `PairingStore` serializes its
//! read-modify-write cycles with a lock inside its own process (`threading.RLock`) and
//! replaces each file atomically, so there is no Python lock protocol to share. hermes holds an
//! exclusive `flock` on `.pairing.lock` in the same directory while it re-reads, changes and
//! rewrites the files, which orders hermes processes (the gateway issuing codes, `hermes
//! pairing approve`) among themselves; against a Python process both sides only rely on the
//! atomic replace: neither ever reads half a file, but an update Python makes between hermes'
//! read and write of the same file (or the other way round) is overwritten, as it is between
//! two Python processes.

use std::path::{Path, PathBuf};

use rand::Rng;
use serde_json::{Value, json};

use super::pairing_files::{self as files, Kind, Obj, RATE_LIMITS};

/// The code alphabet: upper-case letters and digits without the look-alikes 0, O, 1 and I.
pub const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// Code length in characters.
pub const CODE_LEN: usize = 8;
/// How long a code stays valid, in seconds (1 h).
pub const CODE_TTL_S: u64 = 3600;
/// Codes pending at once per platform.
pub const MAX_PENDING_PER_PLATFORM: usize = 3;
/// One code request per user per this many seconds (10 min); requests inside the window
/// get no answer.
pub const USER_RATE_LIMIT_S: u64 = 600;
/// Wrong codes (counted since the last lockout, as Python counts them) before approvals on
/// the platform are locked.
pub const MAX_FAILED_APPROVALS: u32 = 5;
/// How long that lockout lasts, in seconds (1 h).
pub const LOCKOUT_S: u64 = 3600;

/// A code waiting for approval (the code itself is not stored, only its salted hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCode {
    /// Python's id of the entry (the key in `<platform>-pending.json`).
    pub entry_id: String,
    /// What listings show instead of the code: the first 8 hex digits of its hash, as Python's
    /// `hermes pairing list` shows them (`legacy` for an entry without a hash).
    pub shown: String,
    /// Stable id of the user who asked.
    pub user_id: String,
    /// Their display name when they asked (shown to the owner only).
    pub user_name: Option<String>,
    /// Unix seconds when issued.
    pub created_at: u64,
}

/// A user allowed by pairing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovedUser {
    /// Stable user id.
    pub user_id: String,
    /// Display name at approval time (informational).
    pub user_name: Option<String>,
    /// Unix seconds of the approval.
    pub approved_at: u64,
}

/// What a code request produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRequest {
    /// A new code to send to the user.
    Issued(String),
    /// The user asked too recently; send nothing.
    RateLimited,
    /// The platform already has [`MAX_PENDING_PER_PLATFORM`] codes pending; the user is told
    /// to try later (once: the request counts toward the rate limit).
    TooManyPending,
    /// Approvals on the platform are locked after too many wrong codes; the user is told to
    /// try later (once, as for [`CodeRequest::TooManyPending`]).
    LockedOut,
}

/// A pairing operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    /// A pairing file could not be read or written.
    #[error("pairing file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A pairing file holds something that is not the expected JSON.
    #[error("pairing file {path} is damaged ({detail}); fix or delete it")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parse error.
        detail: String,
    },
    /// A platform name with characters other than `a-z`, `0-9`, `_`, `-`.
    #[error("`{0}` is not a platform name (letters, digits, `_` and `-` only)")]
    BadPlatform(String),
    /// No pending code matches (or it expired).
    #[error(
        "no pending pairing code `{code}` on {platform} (codes expire after 1 hour; see `hermes pairing list`)"
    )]
    UnknownCode {
        /// Platform.
        platform: String,
        /// The code given.
        code: String,
    },
    /// Too many wrong codes: approvals on this platform are refused for a while.
    #[error(
        "too many wrong pairing codes on {platform}; approvals are locked for {minutes} more minute(s) \
         (or delete the `_lockout:{platform}` entry of {file})"
    )]
    LockedOut {
        /// Platform.
        platform: String,
        /// Minutes left.
        minutes: u64,
        /// The rate-limit file holding the lockout.
        file: String,
    },
    /// The shared pairing document in the session store is not what it should be.
    #[error("shared pairing state: {0}")]
    Shared(String),
    /// The session store holding the shared pairing document failed.
    #[error("shared pairing state: {0}")]
    Store(#[from] hermes_store::StoreError),
}

/// Pending codes and approved users of every platform (for `hermes pairing list` and
/// `hermes gateway status`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingOverview {
    /// (platform, code) of codes still valid.
    pub pending: Vec<(String, PendingCode)>,
    /// (platform, user) of approved users.
    pub approved: Vec<(String, ApprovedUser)>,
}

/// The pairing files of one `HERMES_HOME`.
#[derive(Debug, Clone)]
pub struct PairingStore {
    dir: PathBuf,
    /// The other pairing directory of the home (Python merges its files into the active one).
    alternate: Option<PathBuf>,
    /// Gateway replicas on PostgreSQL keep the state in the store instead of the files (see
    /// [`PairingStore::in_store`]).
    shared: Option<hermes_store::SessionStore>,
}

/// The shared document holding the pairing state when it lives in the store: scope and name.
pub const PAIRING_DOCUMENT: (&str, &str) = ("pairing", "state");

/// The pairing files as one call reads and changes them: the files in the directory (under
/// the lock), or the file contents held in the store's shared document.
enum Workspace<'a> {
    Dir(&'a Path),
    Document {
        files: std::collections::BTreeMap<String, Obj>,
        changed: bool,
    },
}

impl Workspace<'_> {
    fn load(&self, name: &str, kind: Kind) -> Result<Obj, PairingError> {
        match self {
            Workspace::Dir(dir) => files::load(&dir.join(name), kind),
            Workspace::Document { files, .. } => Ok(files.get(name).cloned().unwrap_or_default()),
        }
    }

    fn save(&mut self, name: &str, obj: &Obj) -> Result<(), PairingError> {
        match self {
            Workspace::Dir(dir) => files::save(dir, &dir.join(name), obj),
            Workspace::Document { files, changed } => {
                files.insert(name.to_string(), obj.clone());
                *changed = true;
                Ok(())
            }
        }
    }

    /// Platforms with a file named `<platform><suffix>`, sorted.
    fn platforms(&self, suffix: &str) -> Result<Vec<String>, PairingError> {
        let names: Vec<String> = match self {
            Workspace::Dir(dir) => match std::fs::read_dir(dir) {
                Ok(e) => e
                    .filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(source) => {
                    return Err(PairingError::Io {
                        path: dir.to_path_buf(),
                        source,
                    });
                }
            },
            Workspace::Document { files, .. } => files.keys().cloned().collect(),
        };
        let mut out: Vec<String> = names
            .iter()
            .filter_map(|name| name.strip_suffix(suffix).map(String::from))
            .filter(|p| check_platform(p).is_ok())
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// The pairing files held in the shared document, by file name.
fn parse_document(body: &str) -> Result<std::collections::BTreeMap<String, Obj>, PairingError> {
    serde_json::from_str(body)
        .map_err(|e| PairingError::Shared(format!("the shared pairing document is not JSON: {e}")))
}

fn pending_name(platform: &str) -> String {
    format!("{platform}-pending.json")
}

fn approved_name(platform: &str) -> String {
    format!("{platform}-approved.json")
}

fn check_platform(platform: &str) -> Result<(), PairingError> {
    let ok = !platform.is_empty()
        && platform
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(PairingError::BadPlatform(platform.to_string()))
    }
}

/// A fresh random code from [`CODE_ALPHABET`].
pub fn new_code() -> String {
    let mut rng = rand::rng();
    (0..CODE_LEN)
        .map(|_| CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())] as char)
        .collect()
}

/// Current time in unix seconds.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Python's expiry rule: an entry without a numeric `created_at`, or older than
/// [`CODE_TTL_S`], is expired.
fn expired(entry: &Value, now: u64) -> bool {
    match entry
        .as_object()
        .and_then(|o| files::num(o.get("created_at")))
    {
        Some(t) => now as f64 - t > CODE_TTL_S as f64,
        None => true,
    }
}

fn secs(v: Option<&Value>) -> u64 {
    files::num(v).map(|t| t.max(0.0) as u64).unwrap_or(0)
}

fn pending_of(entry_id: &str, entry: &Value) -> PendingCode {
    PendingCode {
        entry_id: entry_id.to_string(),
        shown: entry
            .get("hash")
            .and_then(Value::as_str)
            .map(|h| h.chars().take(8).collect())
            .unwrap_or_else(|| "legacy".to_string()),
        user_id: entry
            .get("user_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        user_name: files::opt_str(entry.get("user_name")),
        created_at: secs(entry.get("created_at")),
    }
}

fn approved_of(user_id: &str, entry: &Value) -> ApprovedUser {
    ApprovedUser {
        user_id: user_id.to_string(),
        user_name: files::opt_str(entry.get("user_name")),
        approved_at: secs(entry.get("approved_at")),
    }
}

/// Whether `limits` lock approvals on `platform` at `now`.
fn locked_until(limits: &Obj, platform: &str, now: u64) -> Option<f64> {
    files::num(limits.get(&format!("_lockout:{platform}"))).filter(|&t| (now as f64) < t)
}

impl PairingStore {
    /// The store in `dir` (normally [`PairingStore::dir_for_home`]); created on first write.
    pub fn new(dir: impl Into<PathBuf>) -> PairingStore {
        PairingStore {
            dir: dir.into(),
            alternate: None,
            shared: None,
        }
    }

    /// The store of a hermes home: the directory [`PairingStore::dir_for_home`] picks, with
    /// the other one as the alternate [`PairingStore::migrate`] merges, as Python does.
    pub fn for_home(root: &Path) -> PairingStore {
        let dir = PairingStore::dir_for_home(root);
        let old = root.join("pairing");
        let alternate = if dir == old {
            root.join("platforms").join("pairing")
        } else {
            old
        };
        PairingStore {
            dir,
            alternate: Some(alternate),
            shared: None,
        }
    }

    /// The store of a hermes home whose gateway replicas share `store` (PostgreSQL): the
    /// pending codes, approved users and rate limits are one shared document in it
    /// ([`PAIRING_DOCUMENT`], the files' contents by file name), replaced by compare-and-swap
    /// so replicas and `hermes pairing` never lose each other's change. The first use
    /// copies the home's pairing files in (they are left as they are, for Python Hermes).
    pub fn in_store(root: &Path, store: hermes_store::SessionStore) -> PairingStore {
        PairingStore {
            shared: Some(store),
            ..PairingStore::for_home(root)
        }
    }

    /// The pairing state of a home on `store`: in the store when it is PostgreSQL (gateway
    /// replicas share it: [`PairingStore::in_store`]), else the home's files
    /// ([`PairingStore::for_home`], shared with Python Hermes).
    pub fn for_store(root: &Path, store: &hermes_store::SessionStore) -> PairingStore {
        if store.provider() == hermes_store::Provider::Postgresql {
            PairingStore::in_store(root, store.clone())
        } else {
            PairingStore::for_home(root)
        }
    }

    /// Where the state is, for messages: the directory, or the store's location.
    pub fn location(&self) -> String {
        match &self.shared {
            Some(store) => format!("the shared pairing document in {}", store.location()),
            None => self.dir.display().to_string(),
        }
    }

    /// Runs `change` on the pairing state: the files under the directory's lock, or the
    /// shared document, re-run from a fresh read when another process replaced it first.
    fn with<R>(
        &self,
        mut change: impl FnMut(&mut Workspace<'_>) -> Result<R, PairingError>,
    ) -> Result<R, PairingError> {
        let Some(store) = &self.shared else {
            let _lock = self.lock()?;
            return change(&mut Workspace::Dir(&self.dir));
        };
        let (scope, name) = PAIRING_DOCUMENT;
        store.update_document(scope, name, |current| {
            let files = match current {
                Some(body) => parse_document(body)?,
                None => self.files_to_import()?,
            };
            let mut ws = Workspace::Document {
                files,
                changed: current.is_none(),
            };
            let out = change(&mut ws)?;
            match ws {
                Workspace::Document {
                    files,
                    changed: true,
                } => {
                    let body = serde_json::to_string(&files)
                        .map_err(|e| PairingError::Shared(e.to_string()))?;
                    Ok((out, Some(body)))
                }
                _ => Ok((out, None)),
            }
        })
    }

    /// Runs `look` on the pairing state without changing it: the files as they are (each is
    /// replaced atomically, so a read needs no lock), or the shared document (the home's
    /// files until it is first written).
    fn read<R>(
        &self,
        look: impl FnOnce(&Workspace<'_>) -> Result<R, PairingError>,
    ) -> Result<R, PairingError> {
        let Some(store) = &self.shared else {
            return look(&Workspace::Dir(&self.dir));
        };
        let (scope, name) = PAIRING_DOCUMENT;
        let files = match store.document(scope, name)? {
            Some(doc) => parse_document(&doc.body)?,
            None => self.files_to_import()?,
        };
        look(&Workspace::Document {
            files,
            changed: false,
        })
    }

    /// The home's pairing files, by file name (what the shared document starts from).
    fn files_to_import(&self) -> Result<std::collections::BTreeMap<String, Obj>, PairingError> {
        let _lock = self.lock()?;
        let dir = Workspace::Dir(&self.dir);
        let mut out = std::collections::BTreeMap::new();
        for p in dir.platforms("-pending.json")? {
            out.insert(
                pending_name(&p),
                dir.load(&pending_name(&p), Kind::Pending)?,
            );
        }
        for p in dir.platforms("-approved.json")? {
            out.insert(
                approved_name(&p),
                dir.load(&approved_name(&p), Kind::Approved)?,
            );
        }
        out.insert(
            RATE_LIMITS.to_string(),
            dir.load(RATE_LIMITS, Kind::Limits)?,
        );
        Ok(out)
    }

    /// The pairing directory of a hermes home, chosen as Python Hermes 0.19.0 chooses it
    /// (`hermes_constants.get_hermes_dir("platforms/pairing", "pairing")`): the old
    /// `pairing/` when it exists and is not an empty directory (or cannot be inspected), else
    /// `platforms/pairing/`.
    pub fn dir_for_home(root: &Path) -> PathBuf {
        let old = root.join("pairing");
        let has_content = match std::fs::read_dir(&old) {
            Ok(mut entries) => entries.next().is_some(),
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        };
        if has_content {
            old
        } else {
            root.join("platforms").join("pairing")
        }
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The rate-limit file's path, for messages.
    pub fn rate_limits_file(&self) -> PathBuf {
        self.dir.join(RATE_LIMITS)
    }

    /// Where a lockout is recorded, for the lockout message.
    fn limits_location(&self) -> String {
        match &self.shared {
            Some(_) => format!("{RATE_LIMITS} in {}", self.location()),
            None => self.rate_limits_file().display().to_string(),
        }
    }

    /// Takes the exclusive cross-process lock on `<dir>/.pairing.lock` (creating the
    /// directory and the file) and brings files of earlier hermes releases into Python's
    /// format; the lock is released when the returned file is dropped.
    fn lock(&self) -> Result<std::fs::File, PairingError> {
        let path = self.dir.join(".pairing.lock");
        let io = |source| PairingError::Io {
            path: path.clone(),
            source,
        };
        hermes_protocol::private_fs::create_dir_all(&self.dir).map_err(io)?;
        let file = hermes_protocol::private_fs::open_append(&path).map_err(io)?;
        file.lock().map_err(io)?;
        files::migrate_dir(&self.dir)?;
        Ok(file)
    }

    /// What Python's `PairingStore()` does when it starts, under the lock: merges the other
    /// pairing directory's files in (entries already here win; [`PairingStore::for_home`]
    /// stores only) and rewrites files of earlier hermes releases in Python's format. The
    /// gateway calls it at start, `hermes pairing` before each command.
    pub fn migrate(&self) -> Result<(), PairingError> {
        if self.shared.is_some() {
            return Ok(());
        }
        let _lock = self.lock()?;
        if let Some(alt) = &self.alternate {
            files::merge_alternate(&self.dir, alt)?;
        }
        Ok(())
    }

    /// The pending entries of `platform` with the expired ones (Python's rule) dropped.
    fn cleanup_expired(
        ws: &mut Workspace<'_>,
        platform: &str,
        now: u64,
    ) -> Result<Obj, PairingError> {
        let name = pending_name(platform);
        let mut pending = ws.load(&name, Kind::Pending)?;
        let before = pending.len();
        pending.retain(|_, e| !expired(e, now));
        if pending.len() != before {
            ws.save(&name, &pending)?;
        }
        Ok(pending)
    }

    /// Records a code request of `user_id` at `now` (and drops request times older than the
    /// window).
    fn record_request(
        ws: &mut Workspace<'_>,
        limits: &mut Obj,
        platform: &str,
        user_id: &str,
        now: u64,
    ) -> Result<(), PairingError> {
        limits.retain(|k, v| {
            k.starts_with('_')
                || files::num(Some(v)).is_none_or(|t| (now as f64) - t < USER_RATE_LIMIT_S as f64)
        });
        limits.insert(format!("{platform}:{user_id}"), json!(now as f64));
        ws.save(RATE_LIMITS, limits)
    }

    /// An unknown user's DM asks for a code at unix time `now`, by Python's rules (module
    /// doc). Each request that gets through the rate limit gets a new code.
    pub fn request_code(
        &self,
        platform: &str,
        user_id: &str,
        user_name: Option<&str>,
        now: u64,
    ) -> Result<CodeRequest, PairingError> {
        check_platform(platform)?;
        let user_id = user_id.trim();
        self.with(|ws| {
            let mut pending = Self::cleanup_expired(ws, platform, now)?;
            let mut limits = ws.load(RATE_LIMITS, Kind::Limits)?;
            if files::num(limits.get(&format!("{platform}:{user_id}")))
                .is_some_and(|t| (now as f64) - t < USER_RATE_LIMIT_S as f64)
            {
                return Ok(CodeRequest::RateLimited);
            }
            if locked_until(&limits, platform, now).is_some() {
                Self::record_request(ws, &mut limits, platform, user_id, now)?;
                return Ok(CodeRequest::LockedOut);
            }
            if pending.len() >= MAX_PENDING_PER_PLATFORM {
                Self::record_request(ws, &mut limits, platform, user_id, now)?;
                return Ok(CodeRequest::TooManyPending);
            }
            let code = new_code();
            let mut entry_id = files::random_hex(8);
            while pending.contains_key(&entry_id) {
                entry_id = files::random_hex(8);
            }
            pending.insert(
                entry_id,
                files::pending_entry(&code, user_id, user_name, now as f64),
            );
            ws.save(&pending_name(platform), &pending)?;
            Self::record_request(ws, &mut limits, platform, user_id, now)?;
            Ok(CodeRequest::Issued(code))
        })
    }

    /// Whether `user_id` was approved on `platform`.
    pub fn is_approved(&self, platform: &str, user_id: &str) -> Result<bool, PairingError> {
        check_platform(platform)?;
        let name = approved_name(platform);
        self.read(|ws| Ok(ws.load(&name, Kind::Approved)?.contains_key(user_id.trim())))
    }

    /// Approves the user holding `code` (case-insensitive) on `platform`. A wrong code counts
    /// toward the lockout ([`MAX_FAILED_APPROVALS`] lock approvals for [`LOCKOUT_S`]).
    pub fn approve(
        &self,
        platform: &str,
        code: &str,
        now: u64,
    ) -> Result<ApprovedUser, PairingError> {
        check_platform(platform)?;
        let code = code.trim().to_ascii_uppercase();
        // A wrong code is recorded (the failure count) and then reported.
        let outcome = self.with(|ws| {
            let mut pending = Self::cleanup_expired(ws, platform, now)?;
            let mut limits = ws.load(RATE_LIMITS, Kind::Limits)?;
            if let Some(until) = locked_until(&limits, platform, now) {
                return Err(PairingError::LockedOut {
                    platform: platform.to_string(),
                    minutes: ((until - now as f64).max(0.0) as u64).div_ceil(60),
                    file: self.limits_location(),
                });
            }
            let found = pending
                .iter()
                .find(|(_, e)| files::entry_matches(e, &code))
                .map(|(k, _)| k.clone());
            let Some(entry_id) = found else {
                let key = format!("_failures:{platform}");
                let failed = files::num(limits.get(&key)).unwrap_or(0.0) as u32 + 1;
                if failed >= MAX_FAILED_APPROVALS {
                    limits.insert(
                        format!("_lockout:{platform}"),
                        json!((now + LOCKOUT_S) as f64),
                    );
                    limits.insert(key, json!(0));
                } else {
                    limits.insert(key, json!(failed));
                }
                ws.save(RATE_LIMITS, &limits)?;
                return Ok(None);
            };
            let entry = pending.remove(&entry_id).unwrap_or(Value::Null);
            ws.save(&pending_name(platform), &pending)?;
            let asked = pending_of(&entry_id, &entry);
            let name = approved_name(platform);
            let mut approved = ws.load(&name, Kind::Approved)?;
            let user_id = asked.user_id.trim().to_string();
            approved.insert(
                user_id.clone(),
                json!({
                    "user_name": asked.user_name.clone().unwrap_or_default(),
                    "approved_at": now as f64,
                }),
            );
            ws.save(&name, &approved)?;
            Ok(Some(ApprovedUser {
                user_id,
                user_name: asked.user_name,
                approved_at: now,
            }))
        })?;
        outcome.ok_or(PairingError::UnknownCode {
            platform: platform.to_string(),
            code,
        })
    }

    /// Removes an approved user; returns whether they were approved.
    pub fn revoke(&self, platform: &str, user_id: &str) -> Result<bool, PairingError> {
        check_platform(platform)?;
        let name = approved_name(platform);
        self.with(|ws| {
            let mut approved = ws.load(&name, Kind::Approved)?;
            if approved.remove(user_id.trim()).is_none() {
                return Ok(false);
            }
            ws.save(&name, &approved)?;
            Ok(true)
        })
    }

    /// Drops every pending code of every platform (Python's `clear-pending`); returns how
    /// many there were.
    pub fn clear_pending(&self) -> Result<usize, PairingError> {
        self.with(|ws| {
            let mut count = 0;
            for p in ws.platforms("-pending.json")? {
                let name = pending_name(&p);
                count += ws.load(&name, Kind::Pending)?.len();
                ws.save(&name, &Obj::new())?;
            }
            Ok(count)
        })
    }

    /// Pending (unexpired) codes and approved users of every platform, sorted by platform.
    pub fn overview(&self, now: u64) -> Result<PairingOverview, PairingError> {
        let read = |ws: &Workspace<'_>| {
            let mut out = PairingOverview::default();
            let mut platforms = ws.platforms("-pending.json")?;
            platforms.extend(ws.platforms("-approved.json")?);
            platforms.sort();
            platforms.dedup();
            for p in platforms {
                let pending = ws.load(&pending_name(&p), Kind::Pending)?;
                for (id, e) in pending.iter().filter(|(_, e)| !expired(e, now)) {
                    out.pending.push((p.clone(), pending_of(id, e)));
                }
                let approved = ws.load(&approved_name(&p), Kind::Approved)?;
                for (id, e) in &approved {
                    out.approved.push((p.clone(), approved_of(id, e)));
                }
            }
            Ok(out)
        };
        self.read(read)
    }
}

/// Python's per-platform allowlist variables (`_PLATFORM_ALLOWLIST_ENV` in
/// `gateway/pairing.py`): when one of these is set (non-empty), approving a pairing code also
/// adds the user to it in `HERMES_HOME/.env`, and revoking removes them, so the operator's
/// list stays the one place to look.
pub const ALLOWLIST_ENV: &[(&str, &str)] = &[
    ("telegram", "TELEGRAM_ALLOWED_USERS"),
    ("discord", "DISCORD_ALLOWED_USERS"),
    ("whatsapp", "WHATSAPP_ALLOWED_USERS"),
    ("whatsapp_cloud", "WHATSAPP_CLOUD_ALLOWED_USERS"),
    ("slack", "SLACK_ALLOWED_USERS"),
    ("signal", "SIGNAL_ALLOWED_USERS"),
    ("email", "EMAIL_ALLOWED_USERS"),
    ("sms", "SMS_ALLOWED_USERS"),
    ("mattermost", "MATTERMOST_ALLOWED_USERS"),
    ("matrix", "MATRIX_ALLOWED_USERS"),
    ("dingtalk", "DINGTALK_ALLOWED_USERS"),
    ("feishu", "FEISHU_ALLOWED_USERS"),
    ("wecom", "WECOM_ALLOWED_USERS"),
    ("wecom_callback", "WECOM_CALLBACK_ALLOWED_USERS"),
    ("weixin", "WEIXIN_ALLOWED_USERS"),
    ("bluebubbles", "BLUEBUBBLES_ALLOWED_USERS"),
    ("qqbot", "QQ_ALLOWED_USERS"),
    ("yuanbao", "YUANBAO_ALLOWED_USERS"),
];

/// The allowlist variable of `platform` ([`ALLOWLIST_ENV`]).
pub fn allowlist_env(platform: &str) -> Option<&'static str> {
    let p = platform.trim().to_ascii_lowercase();
    ALLOWLIST_ENV
        .iter()
        .find(|(name, _)| *name == p)
        .map(|(_, var)| *var)
}

fn split_ids(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Python's `_sync_allowlist_add`: the allowlist `current` with `user_id` appended, or `None`
/// when nothing changes (no allowlist configured — an open gateway stays open —, `*`, or the
/// user already listed).
pub fn allowlist_with(current: &str, user_id: &str) -> Option<String> {
    let mut ids = split_ids(current);
    if ids.is_empty() || ids.iter().any(|i| i == "*" || i == user_id) {
        return None;
    }
    ids.push(user_id.to_string());
    Some(ids.join(","))
}

/// Python's `_sync_allowlist_remove`: `Some(new list)` when `user_id` was listed (an empty
/// string means the variable is to be removed), `None` when nothing changes.
pub fn allowlist_without(current: &str, user_id: &str) -> Option<String> {
    let ids = split_ids(current);
    let rest: Vec<String> = ids.iter().filter(|i| *i != user_id).cloned().collect();
    (rest.len() != ids.len()).then(|| rest.join(","))
}

#[cfg(test)]
mod tests;
