//! DM pairing (FEATURES §1 Gateway): an unknown user's DM on a platform without an allowlist
//! gets a one-time code; the owner approves it with `hermes pairing approve <platform> <code>`.
//!
//! Files under `HERMES_HOME/pairing/` (mode 0600, replaced atomically through a temp file):
//! `<platform>-pending.json` (codes waiting for approval), `<platform>-approved.json`
//! (paired users) and `_limits.json` (per-user request times and failed-approval counters).
//! Every call re-reads the files, so an approval made by the CLI is seen by a running gateway
//! at the next message. Every change (code request, approval, revocation) holds an exclusive
//! lock on `.pairing.lock` in the same directory while it re-reads, changes and atomically
//! rewrites the files, because the gateway and `hermes pairing approve` are different
//! processes (issue 7; the same pattern as the memory files of `hermes-context`).
//!
//! Python Hermes 0.19.0 (`gateway/pairing.py`) keeps files of the same names in the directory
//! [`PairingStore::dir_for_home`] picks the way Python does. Python takes no lock file for them
//! (only a lock inside its own process, and an atomic replace per file), so there is no Python
//! lock protocol to share: hermes' `.pairing.lock` orders hermes processes, and both programs
//! replace each file atomically, so neither ever reads half a file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use rand::Rng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

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
/// Wrong codes in a row before approvals on the platform are locked.
pub const MAX_FAILED_APPROVALS: u32 = 5;
/// How long that lockout lasts, in seconds (1 h).
pub const LOCKOUT_S: u64 = 3600;

/// A code waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCode {
    /// The 8-character code.
    pub code: String,
    /// Stable id of the user who asked.
    pub user_id: String,
    /// Their display name when they asked (shown to the owner only).
    pub user_name: Option<String>,
    /// Unix seconds when issued.
    pub created_at: u64,
}

/// A user allowed by pairing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovedUser {
    /// Stable user id.
    pub user_id: String,
    /// Display name at approval time (informational).
    pub user_name: Option<String>,
    /// Unix seconds of the approval.
    pub approved_at: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Limits {
    /// `platform:user_id` → unix seconds of the last code issued.
    #[serde(default)]
    last_request: BTreeMap<String, u64>,
    /// platform → wrong approvals in a row.
    #[serde(default)]
    failed: BTreeMap<String, u32>,
    /// platform → unix seconds until which approvals are refused.
    #[serde(default)]
    locked_until: BTreeMap<String, u64>,
}

/// What a code request produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRequest {
    /// A code to send to the user (new, or the one still pending for them).
    Issued(String),
    /// The user asked too recently; send nothing.
    RateLimited,
    /// The platform already has [`MAX_PENDING_PER_PLATFORM`] codes pending; send nothing.
    TooManyPending,
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
        "too many wrong pairing codes on {platform}; approvals are locked for {minutes} more minute(s)"
    )]
    LockedOut {
        /// Platform.
        platform: String,
        /// Minutes left.
        minutes: u64,
    },
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

impl PairingStore {
    /// The store in `dir` (normally `HERMES_HOME/pairing`); created on first write.
    pub fn new(dir: impl Into<PathBuf>) -> PairingStore {
        PairingStore { dir: dir.into() }
    }

    /// The pairing directory of a hermes home, chosen as Python Hermes 0.19.0 chooses it
    /// (`hermes_constants.get_hermes_dir("platforms/pairing", "pairing")`): the old
    /// `pairing/` when it exists and is not an empty directory, else `platforms/pairing/`
    /// when that exists, else `pairing/` (hermes' default, which Python then also uses once it
    /// has files).
    pub fn dir_for_home(root: &Path) -> PathBuf {
        let old = root.join("pairing");
        let new = root.join("platforms").join("pairing");
        let has_content = |p: &Path| match std::fs::read_dir(p) {
            Ok(mut entries) => entries.next().is_some(),
            Err(e) => e.kind() != std::io::ErrorKind::NotFound && p.exists(),
        };
        if has_content(&old) || !new.exists() {
            old
        } else {
            new
        }
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn pending_path(&self, platform: &str) -> PathBuf {
        self.dir.join(format!("{platform}-pending.json"))
    }

    fn approved_path(&self, platform: &str) -> PathBuf {
        self.dir.join(format!("{platform}-approved.json"))
    }

    fn limits_path(&self) -> PathBuf {
        self.dir.join("_limits.json")
    }

    fn read<T: DeserializeOwned + Default>(&self, path: &Path) -> Result<T, PairingError> {
        match std::fs::read_to_string(path) {
            Ok(text) if text.trim().is_empty() => Ok(T::default()),
            Ok(text) => serde_json::from_str(&text).map_err(|e| PairingError::Corrupt {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
            Err(source) => Err(PairingError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Takes the exclusive cross-process lock on `<dir>/.pairing.lock` (creating the
    /// directory and the file); released when the returned file is dropped.
    fn lock(&self) -> Result<std::fs::File, PairingError> {
        let path = self.dir.join(".pairing.lock");
        let io = |source| PairingError::Io {
            path: path.clone(),
            source,
        };
        hermes_protocol::private_fs::create_dir_all(&self.dir).map_err(io)?;
        let file = hermes_protocol::private_fs::open_append(&path).map_err(io)?;
        file.lock().map_err(io)?;
        Ok(file)
    }

    /// Writes `value` as JSON to `path` through a 0600 temp file and a rename.
    fn write<T: Serialize>(&self, path: &Path, value: &T) -> Result<(), PairingError> {
        let io = |source| PairingError::Io {
            path: path.to_path_buf(),
            source,
        };
        hermes_protocol::private_fs::create_dir_all(&self.dir).map_err(io)?;
        let text = serde_json::to_string_pretty(value).map_err(|e| PairingError::Corrupt {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(io)
    }

    fn live_pending(&self, platform: &str, now: u64) -> Result<Vec<PendingCode>, PairingError> {
        let mut pending: Vec<PendingCode> = self.read(&self.pending_path(platform))?;
        pending.retain(|p| now < p.created_at.saturating_add(CODE_TTL_S));
        Ok(pending)
    }

    /// An unknown user's DM asks for a code at unix time `now`. A user with a pending code
    /// gets the same code again unless rate-limited.
    pub fn request_code(
        &self,
        platform: &str,
        user_id: &str,
        user_name: Option<&str>,
        now: u64,
    ) -> Result<CodeRequest, PairingError> {
        check_platform(platform)?;
        let _lock = self.lock()?;
        let mut limits: Limits = self.read(&self.limits_path())?;
        let slot = format!("{platform}:{user_id}");
        if let Some(&last) = limits.last_request.get(&slot)
            && now < last.saturating_add(USER_RATE_LIMIT_S)
        {
            return Ok(CodeRequest::RateLimited);
        }
        let mut pending = self.live_pending(platform, now)?;
        let code = if let Some(existing) = pending.iter().find(|p| p.user_id == user_id) {
            existing.code.clone()
        } else {
            if pending.len() >= MAX_PENDING_PER_PLATFORM {
                return Ok(CodeRequest::TooManyPending);
            }
            let mut code = new_code();
            while pending.iter().any(|p| p.code == code) {
                code = new_code();
            }
            pending.push(PendingCode {
                code: code.clone(),
                user_id: user_id.to_string(),
                user_name: user_name.map(String::from),
                created_at: now,
            });
            self.write(&self.pending_path(platform), &pending)?;
            code
        };
        limits.last_request.insert(slot, now);
        limits
            .last_request
            .retain(|_, t| now < t.saturating_add(USER_RATE_LIMIT_S));
        self.write(&self.limits_path(), &limits)?;
        Ok(CodeRequest::Issued(code))
    }

    /// Whether `user_id` was approved on `platform`.
    pub fn is_approved(&self, platform: &str, user_id: &str) -> Result<bool, PairingError> {
        check_platform(platform)?;
        let approved: Vec<ApprovedUser> = self.read(&self.approved_path(platform))?;
        Ok(approved.iter().any(|a| a.user_id == user_id))
    }

    /// Approves the user holding `code` (case-insensitive) on `platform`. A wrong code counts
    /// toward the lockout ([`MAX_FAILED_APPROVALS`] in a row lock approvals for
    /// [`LOCKOUT_S`]).
    pub fn approve(
        &self,
        platform: &str,
        code: &str,
        now: u64,
    ) -> Result<ApprovedUser, PairingError> {
        check_platform(platform)?;
        let _lock = self.lock()?;
        let mut limits: Limits = self.read(&self.limits_path())?;
        if let Some(&until) = limits.locked_until.get(platform)
            && now < until
        {
            return Err(PairingError::LockedOut {
                platform: platform.to_string(),
                minutes: (until - now).div_ceil(60),
            });
        }
        let code = code.trim().to_ascii_uppercase();
        let mut pending = self.live_pending(platform, now)?;
        let Some(pos) = pending.iter().position(|p| p.code == code) else {
            let failed = limits.failed.entry(platform.to_string()).or_insert(0);
            *failed += 1;
            if *failed >= MAX_FAILED_APPROVALS {
                limits.failed.remove(platform);
                limits
                    .locked_until
                    .insert(platform.to_string(), now + LOCKOUT_S);
            }
            self.write(&self.limits_path(), &limits)?;
            return Err(PairingError::UnknownCode {
                platform: platform.to_string(),
                code,
            });
        };
        let entry = pending.remove(pos);
        let mut approved: Vec<ApprovedUser> = self.read(&self.approved_path(platform))?;
        approved.retain(|a| a.user_id != entry.user_id);
        let user = ApprovedUser {
            user_id: entry.user_id,
            user_name: entry.user_name,
            approved_at: now,
        };
        approved.push(user.clone());
        self.write(&self.approved_path(platform), &approved)?;
        self.write(&self.pending_path(platform), &pending)?;
        limits.failed.remove(platform);
        limits.locked_until.remove(platform);
        self.write(&self.limits_path(), &limits)?;
        Ok(user)
    }

    /// Removes an approved user; returns whether they were approved.
    pub fn revoke(&self, platform: &str, user_id: &str) -> Result<bool, PairingError> {
        check_platform(platform)?;
        let _lock = self.lock()?;
        let mut approved: Vec<ApprovedUser> = self.read(&self.approved_path(platform))?;
        let before = approved.len();
        approved.retain(|a| a.user_id != user_id);
        if approved.len() == before {
            return Ok(false);
        }
        self.write(&self.approved_path(platform), &approved)?;
        Ok(true)
    }

    /// Pending (unexpired) codes and approved users of every platform, sorted by platform.
    pub fn overview(&self, now: u64) -> Result<PairingOverview, PairingError> {
        let mut out = PairingOverview::default();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(source) => {
                return Err(PairingError::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut platforms: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|name| {
                name.strip_suffix("-pending.json")
                    .or_else(|| name.strip_suffix("-approved.json"))
                    .map(String::from)
            })
            .filter(|p| check_platform(p).is_ok())
            .collect();
        platforms.sort();
        platforms.dedup();
        for p in platforms {
            for code in self.live_pending(&p, now)? {
                out.pending.push((p.clone(), code));
            }
            let approved: Vec<ApprovedUser> = self.read(&self.approved_path(&p))?;
            for user in approved {
                out.approved.push((p.clone(), user));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pairing_directory_is_chosen_as_python_chooses_it() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path();
        // Nothing yet: hermes' default `pairing/`.
        assert_eq!(PairingStore::dir_for_home(root), root.join("pairing"));
        // Python's new layout in use and an empty old stub: the new layout.
        std::fs::create_dir_all(root.join("pairing")).unwrap();
        std::fs::create_dir_all(root.join("platforms/pairing")).unwrap();
        std::fs::write(root.join("platforms/pairing/telegram-approved.json"), "{}").unwrap();
        assert_eq!(
            PairingStore::dir_for_home(root),
            root.join("platforms/pairing")
        );
        // An old directory with files wins, as in Python.
        std::fs::write(root.join("pairing/telegram-pending.json"), "{}").unwrap();
        assert_eq!(PairingStore::dir_for_home(root), root.join("pairing"));
    }

    use super::*;

    fn store() -> (tempfile::TempDir, PairingStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = PairingStore::new(dir.path().join("pairing"));
        (dir, store)
    }

    fn issued(r: CodeRequest) -> String {
        match r {
            CodeRequest::Issued(c) => c,
            other => panic!("expected a code, got {other:?}"),
        }
    }

    #[test]
    fn codes_use_the_alphabet_without_look_alikes() {
        for _ in 0..200 {
            let c = new_code();
            assert_eq!(c.len(), CODE_LEN);
            assert!(!c.contains(['0', 'O', '1', 'I']), "{c}");
            assert!(c.bytes().all(|b| CODE_ALPHABET.contains(&b)));
        }
    }

    #[test]
    fn approve_moves_the_user_to_approved_and_revoke_removes_them() {
        let (_d, s) = store();
        let code = issued(s.request_code("telegram", "42", Some("bob"), 1000).unwrap());
        assert!(!s.is_approved("telegram", "42").unwrap());
        let user = s.approve("telegram", &code.to_lowercase(), 1010).unwrap();
        assert_eq!(user.user_id, "42");
        assert!(s.is_approved("telegram", "42").unwrap());
        assert!(!s.is_approved("discord", "42").unwrap());
        assert!(s.overview(1010).unwrap().pending.is_empty());
        assert!(s.revoke("telegram", "42").unwrap());
        assert!(!s.is_approved("telegram", "42").unwrap());
        assert!(!s.revoke("telegram", "42").unwrap());
    }

    #[test]
    fn codes_expire_after_an_hour() {
        let (_d, s) = store();
        let code = issued(s.request_code("slack", "U1", None, 0).unwrap());
        assert!(matches!(
            s.approve("slack", &code, CODE_TTL_S),
            Err(PairingError::UnknownCode { .. })
        ));
    }

    #[test]
    fn at_most_three_pending_per_platform_and_users_are_rate_limited() {
        let (_d, s) = store();
        for u in ["a", "b", "c"] {
            issued(s.request_code("telegram", u, None, 100).unwrap());
        }
        assert_eq!(
            s.request_code("telegram", "d", None, 100).unwrap(),
            CodeRequest::TooManyPending
        );
        assert_eq!(
            s.request_code("telegram", "a", None, 200).unwrap(),
            CodeRequest::RateLimited
        );
        // Other platforms have their own limit.
        issued(s.request_code("discord", "d", None, 100).unwrap());
        // After the window the same user gets the same pending code back.
        let again = s
            .request_code("telegram", "a", None, 100 + USER_RATE_LIMIT_S)
            .unwrap();
        let overview = s.overview(100 + USER_RATE_LIMIT_S).unwrap();
        let first = &overview
            .pending
            .iter()
            .find(|(p, c)| p == "telegram" && c.user_id == "a")
            .unwrap()
            .1
            .code;
        assert_eq!(again, CodeRequest::Issued(first.clone()));
    }

    #[test]
    fn repeated_wrong_codes_lock_approvals() {
        let (_d, s) = store();
        let code = issued(s.request_code("telegram", "42", None, 0).unwrap());
        for _ in 0..MAX_FAILED_APPROVALS {
            assert!(matches!(
                s.approve("telegram", "ZZZZZZZZ", 10),
                Err(PairingError::UnknownCode { .. })
            ));
        }
        assert!(matches!(
            s.approve("telegram", &code, 20),
            Err(PairingError::LockedOut { .. })
        ));
        // The lockout ends (the code itself is still within its hour here).
        s.approve("telegram", &code, 10 + LOCKOUT_S - 1)
            .unwrap_err();
        let (_d2, s2) = store();
        let code2 = issued(s2.request_code("telegram", "7", None, 0).unwrap());
        assert!(s2.approve("telegram", &code2, 5).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, s) = store();
        issued(s.request_code("telegram", "42", None, 0).unwrap());
        for name in ["telegram-pending.json", "_limits.json"] {
            let mode = std::fs::metadata(s.dir().join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }

    #[test]
    fn bad_platform_names_and_damaged_files_are_errors() {
        let (_d, s) = store();
        assert!(matches!(
            s.request_code("../x", "1", None, 0),
            Err(PairingError::BadPlatform(_))
        ));
        std::fs::create_dir_all(s.dir()).unwrap();
        std::fs::write(s.dir().join("telegram-approved.json"), "{nope").unwrap();
        let e = s.is_approved("telegram", "1").unwrap_err();
        assert!(e.to_string().contains("telegram-approved.json"), "{e}");
    }
}
