//! The adapter's persisted state (one JSON file under `HERMES_HOME/gateway/`, mode 0600):
//! the `/sync` token, the device id of a password login, the thread roots the bot answered
//! in (so follow-ups there need no mention after a restart) and the rooms already told that
//! end-to-end encryption is not supported (told once, ever).

use std::collections::VecDeque;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::PLATFORM;

/// Thread roots remembered (oldest forgotten first).
const MAX_THREADS: usize = 500;

/// What the state file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SyncState {
    /// `next_batch` of the last sync whose messages were all handed to the gateway.
    pub(crate) since: Option<String>,
    /// Device id of the password login.
    pub(crate) device_id: Option<String>,
    /// Thread roots the bot answered in, newest last.
    pub(crate) threads: VecDeque<String>,
    /// Rooms told about encryption.
    pub(crate) encryption_noticed: Vec<String>,
}

impl SyncState {
    /// Reads `path`; a missing file is the empty state, an unreadable one too (with a warning:
    /// the next start then skips the history it cannot tell apart, see the sync loop).
    pub(crate) fn load(path: &Path) -> SyncState {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!(platform = PLATFORM, file = %path.display(), "ignoring an unreadable state file: {e}");
                SyncState::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => SyncState::default(),
            Err(e) => {
                tracing::warn!(platform = PLATFORM, file = %path.display(), "cannot read the state file: {e}");
                SyncState::default()
            }
        }
    }

    /// Writes the state atomically (blocking; small file). Failures are logged.
    pub(crate) fn save(&self, path: &Path) {
        let result = (|| {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
            hermes_protocol::private_fs::write_atomic(path, text)
        })();
        if let Err(e) = result {
            tracing::warn!(platform = PLATFORM, file = %path.display(), "could not save the sync state: {e}");
        }
    }

    /// Remembers that the bot answered in the thread rooted at `root`.
    pub(crate) fn add_thread(&mut self, root: &str) -> bool {
        if self.threads.iter().any(|t| t == root) {
            return false;
        }
        self.threads.push_back(root.to_string());
        while self.threads.len() > MAX_THREADS {
            self.threads.pop_front();
        }
        true
    }

    /// Whether the bot answered in the thread rooted at `root`.
    pub(crate) fn has_thread(&self, root: &str) -> bool {
        self.threads.iter().any(|t| t == root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_bounds_threads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway").join("matrix_state.json");
        assert_eq!(SyncState::load(&path), SyncState::default());
        let mut s = SyncState {
            since: Some("s72_1".into()),
            ..Default::default()
        };
        for i in 0..(MAX_THREADS + 5) {
            s.add_thread(&format!("$t{i}"));
        }
        assert!(!s.add_thread("$t10"), "already known");
        assert!(!s.has_thread("$t0"), "the oldest is forgotten");
        s.save(&path);
        assert_eq!(SyncState::load(&path), s);
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(SyncState::load(&path), SyncState::default());
    }
}
