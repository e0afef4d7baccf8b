//! The persistent prompt-prefix cache of the embedded model (issue 19; ARCHITECTURE §2
//! invariant 1: a session's system prompt and tool list are byte-stable, so the KV state of
//! that prefix can be computed once and reused by later sessions, processes and days).
//!
//! One entry is two files in the cache folder (`HERMES_HOME/cache/prompt/`):
//! - `<id>.state`: llama.cpp's sequence state file (`llama_state_seq_save_file`: magic,
//!   version, the tokens it covers, the KV cells of sequence 0);
//! - `<id>.json`: [`EntryMeta`] — the [`CacheKey`] it was made under, the same tokens, the
//!   state file's size and SHA-256. The meta file is the commit point: it is renamed into
//!   place after the state file, and an entry whose state file does not match its meta
//!   byte for byte is never loaded.
//!
//! `<id>` is derived from the key and the tokens, so two processes computing the same prefix
//! write the same entry; the folder's lock file (`.lock`, `flock`) lets only one of them
//! write at a time. Every file is written to a temporary name and renamed, so no reader sees half a
//! file. The folder is bounded by a byte budget with least-recently-used eviction (use is the
//! meta file's modification time, refreshed on every load).

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// `local.prompt_cache_max_mb` when unset: room for about seven saved prefixes of the
/// default first request at f16 (≈ 23 KB of KV per token for SmolLM2-135M, measured in
/// `bench/run`'s `local` rows).
pub const DEFAULT_PROMPT_CACHE_MAX_MB: u64 = 256;

/// Engine identity written into every key: the llama.cpp binding and its vendored
/// llama.cpp. A state file is opaque memory of one engine build; a test keeps this equal to
/// the versions in `Cargo.lock`.
pub const ENGINE_VERSION: &str = "llama-cpp-2 0.1.160 / llama-cpp-sys-2 0.1.161";

/// Version of the meta file layout ([`EntryMeta`]).
const META_FORMAT: u32 = 1;

/// Temporary files older than this are left-overs of a crashed writer.
const STALE_TMP_SECS: u64 = 600;

/// Where the cache lives and how large it may grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCacheConfig {
    /// The cache folder (`HERMES_HOME/cache/prompt/`); created on first write.
    pub dir: PathBuf,
    /// Byte budget of all entries' state files together; `0` turns the cache off.
    pub max_bytes: u64,
}

impl PromptCacheConfig {
    /// The cache under `cache_dir` (`HERMES_HOME/cache/`) with a budget in MiB
    /// (`local.prompt_cache_max_mb`, [`DEFAULT_PROMPT_CACHE_MAX_MB`] when `None`).
    pub fn under(cache_dir: &Path, max_mb: Option<u64>) -> PromptCacheConfig {
        PromptCacheConfig {
            dir: cache_dir.join("prompt"),
            max_bytes: max_mb
                .unwrap_or(DEFAULT_PROMPT_CACHE_MAX_MB)
                .saturating_mul(1024 * 1024),
        }
    }
}

/// What makes a saved state unusable: a state is loaded only under an equal key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    /// Size of the GGUF file in bytes.
    pub model_size: u64,
    /// SHA-256 of the GGUF file (hex).
    pub model_sha256: String,
    /// Context window the state was computed in.
    pub n_ctx: u32,
    /// KV cache element type (`f16`, `q8_0`).
    pub kv_type: String,
    /// [`ENGINE_VERSION`] of the writer.
    pub engine: String,
}

/// The meta file of one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryMeta {
    /// Layout version of this file.
    pub format: u32,
    /// The key the state was computed under.
    pub key: CacheKey,
    /// The prompt tokens the state covers (positions `0..tokens.len()`).
    pub tokens: Vec<i32>,
    /// Size of the state file in bytes.
    pub state_bytes: u64,
    /// SHA-256 of the state file (hex).
    pub state_sha256: String,
}

/// One usable entry as the index holds it.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) meta: EntryMeta,
}

/// An entry's files.
fn meta_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}
fn state_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.state"))
}
/// The folder's writer lock (never removed).
fn lock_path(dir: &Path) -> PathBuf {
    dir.join(".lock")
}

/// The entry id for `key` and `tokens`: 32 hex digits of their SHA-256.
pub(crate) fn entry_id(key: &CacheKey, tokens: &[i32]) -> String {
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(key).unwrap_or_default());
    for t in tokens {
        h.update(t.to_le_bytes());
    }
    hex::encode(h.finalize())[..32].to_string()
}

/// SHA-256 (hex) and length of a file's bytes.
fn file_digest(path: &Path) -> std::io::Result<(String, u64)> {
    let mut file = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        len += n as u64;
        h.update(&buf[..n]);
    }
    Ok((hex::encode(h.finalize()), len))
}

/// A unique temporary name beside `target` (hidden, so scans skip it).
fn tmp_path(dir: &Path, target: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.join(format!(".{target}.{}.{n}.tmp", std::process::id()))
}

/// Writes `bytes` to `path` atomically (temporary file, fsync, rename).
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = tmp_path(dir, &name);
    let result = (|| {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates the cache folder (mode 0700) and its parents.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// The model's identity for [`CacheKey`]: its size and SHA-256. The hash is remembered in
/// `models.json` in the cache folder per path, size and modification time, so a start does
/// not re-read the whole file.
///
/// Errors: the model file cannot be read.
pub fn model_digest(dir: &Path, model: &Path) -> std::io::Result<(u64, String)> {
    #[derive(Serialize, Deserialize, Default)]
    struct Memo {
        models: std::collections::BTreeMap<String, MemoEntry>,
    }
    #[derive(Serialize, Deserialize, Clone, PartialEq)]
    struct MemoEntry {
        size: u64,
        modified_ns: u128,
        sha256: String,
    }
    let md = fs::metadata(model)?;
    let modified_ns = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = fs::canonicalize(model)
        .unwrap_or_else(|_| model.to_path_buf())
        .display()
        .to_string();
    let memo_path = dir.join("models.json");
    let mut memo: Memo = fs::read(&memo_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if let Some(e) = memo.models.get(&name)
        && e.size == md.len()
        && e.modified_ns == modified_ns
        && e.sha256.len() == 64
    {
        return Ok((e.size, e.sha256.clone()));
    }
    let (sha256, size) = file_digest(model)?;
    memo.models.insert(
        name,
        MemoEntry {
            size,
            modified_ns,
            sha256: sha256.clone(),
        },
    );
    if create_private_dir(dir).is_ok()
        && let Ok(bytes) = serde_json::to_vec_pretty(&memo)
        && let Err(e) = write_atomic(dir, &memo_path, &bytes)
    {
        tracing::debug!(error = %e, "prompt cache: cannot remember the model hash");
    }
    Ok((size, sha256))
}

/// Why an entry on disk is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// The meta file is not JSON of the expected shape (or of another format version).
    BadMeta(String),
    /// The state file is missing.
    MissingState,
    /// The state file's size or hash differs from the meta file's (truncated, corrupted,
    /// replaced).
    StateMismatch,
    /// A state file without a meta file (a writer died between the two renames), or a
    /// temporary file left by a crashed writer.
    Orphan,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::BadMeta(e) => write!(f, "unreadable meta file ({e})"),
            Broken::MissingState => f.write_str("state file missing"),
            Broken::StateMismatch => f.write_str("state file does not match its meta file"),
            Broken::Orphan => f.write_str("left-over file"),
        }
    }
}

/// What `hermes doctor` says about the cache folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheReport {
    /// Usable entries (any key).
    pub entries: usize,
    /// Bytes of all files in the folder.
    pub total_bytes: u64,
    /// Broken entries and left-overs: the path of the file to blame and why.
    pub broken: Vec<(PathBuf, Broken)>,
}

fn read_meta(path: &Path) -> Result<EntryMeta, Broken> {
    let bytes = fs::read(path).map_err(|e| Broken::BadMeta(e.to_string()))?;
    let meta: EntryMeta =
        serde_json::from_slice(&bytes).map_err(|e| Broken::BadMeta(e.to_string()))?;
    if meta.format != META_FORMAT {
        return Err(Broken::BadMeta(format!("format {}", meta.format)));
    }
    Ok(meta)
}

/// Checks an entry's state file against its meta file (size, then SHA-256).
fn verify_state(dir: &Path, id: &str, meta: &EntryMeta) -> Result<(), Broken> {
    let path = state_path(dir, id);
    let md = fs::metadata(&path).map_err(|_| Broken::MissingState)?;
    if md.len() != meta.state_bytes {
        return Err(Broken::StateMismatch);
    }
    match file_digest(&path) {
        Ok((sha, len)) if len == meta.state_bytes && sha == meta.state_sha256 => Ok(()),
        _ => Err(Broken::StateMismatch),
    }
}

/// Whether the process that was writing temp file `name` ([`tmp_path`]:
/// `.<target>.<pid>.<n>.tmp`) no longer runs on this machine (killed mid-write).
fn tmp_writer_gone(name: &str) -> bool {
    let mut parts = name.trim_end_matches(".tmp").rsplit('.');
    let (Some(_n), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    pid.bytes().all(|b| b.is_ascii_digit())
        && hermes_protocol::owner::owner_is_gone(&format!("pid{pid}"))
}

fn age_secs(path: &Path) -> u64 {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Scans the cache folder, checking every entry's state file (reads them all; for
/// `hermes doctor`, not the hot path). A missing folder is an empty report.
pub fn scan(dir: &Path) -> CacheReport {
    let mut report = CacheReport::default();
    let Ok(read) = fs::read_dir(dir) else {
        return report;
    };
    let mut metas = std::collections::BTreeSet::new();
    let mut states = Vec::new();
    for entry in read.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        report.total_bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
        if name.ends_with(".tmp") {
            if age_secs(&path) >= STALE_TMP_SECS || tmp_writer_gone(&name) {
                report.broken.push((path, Broken::Orphan));
            }
        } else if let Some(id) = name.strip_suffix(".state") {
            states.push((id.to_string(), path));
        } else if let Some(id) = name.strip_suffix(".json") {
            if name == "models.json" {
                continue;
            }
            metas.insert(id.to_string());
            match read_meta(&path).and_then(|meta| verify_state(dir, id, &meta)) {
                Ok(()) => report.entries += 1,
                Err(why) => report.broken.push((path, why)),
            }
        }
    }
    for (id, path) in states {
        if !metas.contains(&id) && age_secs(&path) >= STALE_TMP_SECS {
            report.broken.push((path, Broken::Orphan));
        }
    }
    report.broken.sort_by(|a, b| a.0.cmp(&b.0));
    report
}

/// Removes what [`scan`] reports broken (both files of a broken entry). Returns how many
/// reported problems were cleared.
///
/// Errors: a file that cannot be removed.
pub fn clear_broken(dir: &Path) -> std::io::Result<usize> {
    let report = scan(dir);
    for (path, why) in &report.broken {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match (why, name.strip_suffix(".json")) {
            (Broken::Orphan, _) | (_, None) => remove_if_present(path)?,
            (_, Some(id)) => remove_entry(dir, id)?,
        }
    }
    Ok(report.broken.len())
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes an entry: the meta file first (so nobody loads it any more), then the state.
fn remove_entry(dir: &Path, id: &str) -> std::io::Result<()> {
    remove_if_present(&meta_path(dir, id))?;
    remove_if_present(&state_path(dir, id))
}

/// The entries of one key, read from the folder's meta files (state files are checked
/// only when an entry is about to be loaded).
pub(crate) fn entries(dir: &Path, key: &CacheKey) -> Vec<Entry> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in read.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if name.starts_with('.') || name == "models.json" {
            continue;
        }
        match read_meta(&e.path()) {
            Ok(meta) if meta.key == *key && entry_id(key, &meta.tokens) == id => out.push(Entry {
                id: id.to_string(),
                meta,
            }),
            Ok(_) => {}
            Err(why) => tracing::debug!(entry = id, %why, "prompt cache: entry skipped"),
        }
    }
    out
}

/// Length of the common leading run of `a` and `b`.
pub(crate) fn common_prefix(a: &[i32], b: &[i32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The entry sharing the longest leading run with `tokens` (ties: the longer entry, whose
/// divergence tells where the stable part ends) and that run's length.
pub(crate) fn best_match<'e>(entries: &'e [Entry], tokens: &[i32]) -> Option<(&'e Entry, usize)> {
    entries
        .iter()
        .map(|e| (e, common_prefix(&e.meta.tokens, tokens)))
        .filter(|(_, n)| *n > 0)
        .max_by_key(|(e, n)| (*n, e.meta.tokens.len()))
}

/// Checks an entry before it is loaded. A broken one is removed (if no writer holds its
/// lock) so the next save can replace it.
pub(crate) fn verify_for_load(dir: &Path, entry: &Entry) -> bool {
    match verify_state(dir, &entry.id, &entry.meta) {
        Ok(()) => {
            // Used now: refresh its place in the LRU order.
            if let Ok(f) = File::options().append(true).open(meta_path(dir, &entry.id)) {
                let _ = f.set_modified(SystemTime::now());
            }
            true
        }
        Err(why) => {
            tracing::warn!(entry = %entry.id, %why, "prompt cache: entry ignored");
            if let Some(_lock) = try_lock(dir) {
                let _ = remove_entry(dir, &entry.id);
            }
            false
        }
    }
}

/// The state file of an entry (for llama.cpp to load).
pub(crate) fn entry_state_path(dir: &Path, entry: &Entry) -> PathBuf {
    state_path(dir, &entry.id)
}

/// The folder's exclusive writer lock (`flock` on `.lock`, released when dropped). Writes,
/// removals and eviction take it without waiting; `None` when another process holds it (that
/// process is writing, so this one leaves the folder alone for now).
pub(crate) struct FolderLock {
    _file: File,
}

fn try_lock(dir: &Path) -> Option<FolderLock> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = File::options()
        .mode(0o600)
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(dir))
        .ok()?;
    file.try_lock().ok()?;
    Some(FolderLock { _file: file })
}

/// Writes an entry: `write_state` makes llama.cpp write the state file at the given path;
/// this then hashes it, renames it into place and commits the meta file. Another process
/// writing the same entry at the same moment makes this a no-op.
///
/// Errors: I/O failures and `write_state`'s; on error nothing is left behind.
pub(crate) fn save(
    dir: &Path,
    key: &CacheKey,
    tokens: &[i32],
    write_state: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<bool, String> {
    create_private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let id = entry_id(key, tokens);
    let Some(_lock) = try_lock(dir) else {
        return Ok(false);
    };
    if let Ok(meta) = read_meta(&meta_path(dir, &id))
        && meta.key == *key
        && verify_state(dir, &id, &meta).is_ok()
    {
        return Ok(false);
    }
    let tmp = tmp_path(dir, &format!("{id}.state"));
    let result = (|| {
        write_state(&tmp)?;
        // HERMES_HOME's files are private to their user (issue 18 item 2).
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| e.to_string())?;
        let (sha, len) = file_digest(&tmp).map_err(|e| e.to_string())?;
        let meta = EntryMeta {
            format: META_FORMAT,
            key: key.clone(),
            tokens: tokens.to_vec(),
            state_bytes: len,
            state_sha256: sha,
        };
        // The old meta goes first: between the two renames no reader may pair the new
        // state file with an old meta file.
        remove_if_present(&meta_path(dir, &id)).map_err(|e| e.to_string())?;
        fs::rename(&tmp, state_path(dir, &id)).map_err(|e| e.to_string())?;
        let bytes = serde_json::to_vec(&meta).map_err(|e| e.to_string())?;
        write_atomic(dir, &meta_path(dir, &id), &bytes).map_err(|e| e.to_string())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map(|()| true)
}

/// Evicts least-recently-used entries until the state files of all entries fit in
/// `max_bytes`; `keep` (the entry just written) goes last, only when it alone is larger than
/// the whole budget, so the budget is never exceeded. Returns the ids removed.
pub(crate) fn evict(dir: &Path, max_bytes: u64, keep: &str) -> Vec<String> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let Some(_lock) = try_lock(dir) else {
        return Vec::new();
    };
    let mut all: Vec<(SystemTime, String, u64)> = Vec::new();
    for e in read.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".state") else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let size = e.metadata().map(|m| m.len()).unwrap_or(0);
        let used = fs::metadata(meta_path(dir, id))
            .and_then(|m| m.modified())
            .unwrap_or(UNIX_EPOCH);
        all.push((used, id.to_string(), size));
    }
    let mut total: u64 = all.iter().map(|(_, _, s)| *s).sum();
    // Oldest first, and `keep` after every other entry whatever its time.
    all.sort_by_key(|e| (e.1 == keep, e.0));
    let mut removed = Vec::new();
    for (_, id, size) in all {
        if total <= max_bytes {
            break;
        }
        if remove_entry(dir, &id).is_ok() {
            total = total.saturating_sub(size);
            removed.push(id);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CacheKey {
        CacheKey {
            model_size: 1,
            model_sha256: "00".repeat(32),
            n_ctx: 2048,
            kv_type: "f16".into(),
            engine: ENGINE_VERSION.into(),
        }
    }

    fn fake_state(bytes: &'static [u8]) -> impl FnOnce(&Path) -> Result<(), String> {
        move |p: &Path| fs::write(p, bytes).map_err(|e| e.to_string())
    }

    #[test]
    fn engine_version_matches_the_lock_file() {
        let lock = include_str!("../../../../Cargo.lock");
        for (name, version) in ENGINE_VERSION
            .split(" / ")
            .filter_map(|part| part.split_once(' '))
        {
            let wanted = format!("name = \"{name}\"\nversion = \"{version}\"");
            assert!(lock.contains(&wanted), "Cargo.lock has no {name} {version}");
        }
    }

    #[test]
    fn saved_entries_are_found_by_key_and_longest_prefix() {
        let dir = tempfile::tempdir().unwrap();
        assert!(save(dir.path(), &key(), &[1, 2, 3], fake_state(b"abc")).unwrap());
        assert!(save(dir.path(), &key(), &[1, 2, 9, 9], fake_state(b"abcd")).unwrap());
        let found = entries(dir.path(), &key());
        assert_eq!(found.len(), 2);
        let (best, n) = best_match(&found, &[1, 2, 3, 4]).unwrap();
        assert_eq!((best.meta.tokens.as_slice(), n), (&[1, 2, 3][..], 3));
        let mut other = key();
        other.n_ctx = 4096;
        assert!(entries(dir.path(), &other).is_empty());
        assert!(verify_for_load(dir.path(), best));
        assert_eq!(
            scan(dir.path()),
            CacheReport {
                entries: 2,
                total_bytes: scan(dir.path()).total_bytes,
                broken: vec![]
            }
        );
    }

    #[test]
    fn a_changed_state_file_is_never_loaded_and_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), &key(), &[5, 6], fake_state(b"state")).unwrap();
        let entry = entries(dir.path(), &key()).remove(0);
        fs::write(entry_state_path(dir.path(), &entry), b"stat").unwrap();
        assert_eq!(scan(dir.path()).broken.len(), 1);
        assert!(!verify_for_load(dir.path(), &entry));
        assert!(
            entries(dir.path(), &key()).is_empty(),
            "removed after the failed check"
        );

        save(dir.path(), &key(), &[5, 6], fake_state(b"state")).unwrap();
        fs::write(dir.path().join(format!("{}.json", entry.id)), b"{").unwrap();
        assert!(entries(dir.path(), &key()).is_empty());
        assert_eq!(clear_broken(dir.path()).unwrap(), 1);
        assert_eq!(scan(dir.path()).broken, vec![]);
    }

    #[test]
    fn a_failed_write_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = save(dir.path(), &key(), &[1], |_| Err("disk full".to_string()));
        assert_eq!(err, Err("disk full".to_string()));
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".lock"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn a_temp_file_of_a_killed_writer_is_left_over_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mine = std::process::id();
        fs::write(dir.path().join(format!(".e1.state.{dead}.0.tmp")), b"half").unwrap();
        fs::write(dir.path().join(format!(".e2.state.{mine}.0.tmp")), b"busy").unwrap();
        let broken: Vec<String> = scan(dir.path())
            .broken
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(broken, vec![format!(".e1.state.{dead}.0.tmp")]);
        assert_eq!(clear_broken(dir.path()).unwrap(), 1);
        assert!(dir.path().join(format!(".e2.state.{mine}.0.tmp")).exists());
    }

    #[test]
    fn eviction_drops_the_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        for (i, t) in [[1], [2], [3]].iter().enumerate() {
            save(dir.path(), &key(), t, fake_state(b"0123456789")).unwrap();
            let id = entry_id(&key(), t);
            let f = File::options()
                .append(true)
                .open(meta_path(dir.path(), &id))
                .unwrap();
            f.set_modified(UNIX_EPOCH + std::time::Duration::from_secs(1000 + i as u64))
                .unwrap();
        }
        // Entry [1] used last.
        let first = entries(dir.path(), &key())
            .into_iter()
            .find(|e| e.meta.tokens == [1])
            .unwrap();
        assert!(verify_for_load(dir.path(), &first));
        let keep = entry_id(&key(), &[3]);
        let removed = evict(dir.path(), 20, &keep);
        assert_eq!(removed, vec![entry_id(&key(), &[2])]);
        let left: Vec<Vec<i32>> = entries(dir.path(), &key())
            .into_iter()
            .map(|e| e.meta.tokens)
            .collect();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&vec![1]) && left.contains(&vec![3]));
        // A budget smaller than the entry just written: nothing is kept over it.
        let removed = evict(dir.path(), 5, &keep);
        assert_eq!(removed, vec![entry_id(&key(), &[1]), keep.clone()]);
        assert!(entries(dir.path(), &key()).is_empty());
    }

    #[test]
    fn the_model_hash_is_remembered_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        fs::write(&model, b"model one").unwrap();
        let (size, sha) = model_digest(&dir.path().join("c"), &model).unwrap();
        assert_eq!(size, 9);
        assert_eq!(model_digest(&dir.path().join("c"), &model).unwrap().1, sha);
        fs::write(&model, b"model two!").unwrap();
        let f = File::options().append(true).open(&model).unwrap();
        f.set_modified(SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        let (size2, sha2) = model_digest(&dir.path().join("c"), &model).unwrap();
        assert_eq!(size2, 10);
        assert_ne!(sha2, sha);
    }
}
