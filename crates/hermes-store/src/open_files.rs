//! The database files this process has open through a [`crate::SessionStore`], so that
//! opening one more store never reads the file through a descriptor of its own while others
//! are open.
//!
//! POSIX advisory locks belong to the process: closing *any* descriptor of a file releases
//! every lock the process holds on it, including those SQLite's open connections hold ("How
//! To Corrupt An SQLite Database File", §2.2). Without its SHARED lock on the database file,
//! another process takes itself for the last connection on the file — SQLite 3.40 (the
//! `sqlite3` shell, Python's `sqlite3` on Debian 12, hence Python Hermes) then checkpoints and
//! deletes the WAL when it closes, and the writes of this process's stores go into the
//! deleted file: lost, and invisible to other processes (session leases included).
//!
//! The header check of [`crate::SessionStore::open`] reads the file with `std::fs` before
//! SQLite touches it; [`register`] runs it only for the first store of the process on that
//! file (the file was checked when that one opened), under a lock that also covers the
//! count, so no descriptor of ours is closed while a connection of this process holds locks.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use crate::error::StoreError;

/// `(device, inode)` → number of open stores.
static OPEN: Mutex<BTreeMap<(u64, u64), usize>> = Mutex::new(BTreeMap::new());

/// One store's registration; dropping it (after the store's connection closed) lets the
/// next first opener check the file again.
#[derive(Debug)]
pub(crate) struct OpenFile {
    key: Option<(u64, u64)>,
}

fn key_of(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Registers a store about to open `path` (which must exist), running `first_check` only
/// when no other store of this process has the file open.
///
/// # Errors
/// The error of `first_check`; nothing is registered then.
pub(crate) fn register(
    path: &Path,
    first_check: impl FnOnce() -> Result<(), StoreError>,
) -> Result<OpenFile, StoreError> {
    let key = key_of(path);
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    let already = key.is_some_and(|k| open.get(&k).is_some_and(|n| *n > 0));
    if !already {
        first_check()?;
    }
    if let Some(k) = key {
        *open.entry(k).or_default() += 1;
    }
    Ok(OpenFile { key })
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        let Some(k) = self.key else { return };
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&k) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&k);
            }
        }
    }
}
