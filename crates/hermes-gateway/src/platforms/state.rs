//! Small per-adapter state that must survive a restart (WhatsApp's last inbound time per
//! user for the 24-hour window, SMS opt-outs): a JSON object of `key → Unix seconds` in one
//! file under `HERMES_HOME/gateway/`, replaced atomically (0600) on every change, so a crash
//! leaves the old or the new file, never half of one. Without a file (tests, send-only
//! tools) the map lives in memory only.
//!
//! Several gateway replicas each keep their own file; the platform's own answer (Meta's
//! error 131047, Twilio's 21610) is the authority a replica falls back on.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A persistent `key → Unix seconds` map. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub(crate) struct StampFile {
    path: Option<PathBuf>,
    map: Arc<Mutex<BTreeMap<String, i64>>>,
}

impl StampFile {
    /// Loads `path` (a missing file is an empty map; an unreadable or damaged one is
    /// reported with `what` and read as empty, and replaced on the next change).
    pub(crate) fn load(path: Option<PathBuf>, what: &str) -> StampFile {
        let map = match &path {
            Some(p) => match std::fs::read_to_string(p) {
                Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
                    tracing::warn!(file = %p.display(), error = %e, "{what}: damaged state file; starting empty");
                    BTreeMap::new()
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
                Err(e) => {
                    tracing::warn!(file = %p.display(), error = %e, "{what}: unreadable state file; starting empty");
                    BTreeMap::new()
                }
            },
            None => BTreeMap::new(),
        };
        StampFile {
            path,
            map: Arc::new(Mutex::new(map)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, i64>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The stamp of `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Option<i64> {
        self.lock().get(key).copied()
    }

    /// Sets (`Some`) or removes (`None`) the stamp of `key` and writes the file when
    /// something changed. A write failure is returned (the map keeps the change).
    pub(crate) async fn set(&self, key: &str, value: Option<i64>) -> std::io::Result<()> {
        let body = {
            let mut map = self.lock();
            let changed = match value {
                Some(v) => map.insert(key.to_string(), v) != Some(v),
                None => map.remove(key).is_some(),
            };
            if !changed || self.path.is_none() {
                return Ok(());
            }
            serde_json::to_vec_pretty(&*map).map_err(std::io::Error::other)?
        };
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                hermes_protocol::private_fs::create_dir_all(dir)?;
            }
            hermes_protocol::private_fs::write_atomic(&path, body)
        })
        .await
        .map_err(std::io::Error::other)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stamps_survive_a_reload_and_a_damaged_file_reads_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway").join("x.json");
        let s = StampFile::load(Some(path.clone()), "test");
        assert_eq!(s.get("a"), None);
        s.set("a", Some(5)).await.unwrap();
        s.set("b", Some(7)).await.unwrap();
        s.set("b", None).await.unwrap();
        let again = StampFile::load(Some(path.clone()), "test");
        assert_eq!((again.get("a"), again.get("b")), (Some(5), None));
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(StampFile::load(Some(path), "test").get("a"), None);
        let memory = StampFile::load(None, "test");
        memory.set("a", Some(1)).await.unwrap();
        assert_eq!(memory.get("a"), Some(1));
    }
}
