//! What the email adapter remembers across restarts, in one JSON file
//! (`HERMES_HOME/gateway/email_state.json`, mode 0600, replaced atomically): the IMAP cursor
//! (`UIDVALIDITY` and the highest UID handed to the gateway, so a restart neither replays nor
//! skips a message) and the threads (subject and `References` chain per thread, and which
//! `Message-ID` belongs to which thread, so replies stay threaded after a restart).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// Threads kept (the least recently used are forgotten first).
const MAX_THREADS: usize = 2000;
/// `Message-ID` → thread entries kept.
const MAX_IDS: usize = 10_000;
/// Ids kept in one thread's `References` chain (the root and the latest ones).
const MAX_REFERENCES: usize = 20;

/// One conversation: the sender's address, its subject and the ids to thread a reply with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadContext {
    /// The correspondent's address (bare, lower case).
    pub address: String,
    /// The subject without `Re:` prefixes.
    pub subject: String,
    /// `Message-ID` (without angle brackets) of the latest message in the thread, ours or
    /// theirs: what a reply's `In-Reply-To` names.
    pub last_message_id: Option<String>,
    /// The `References` chain (oldest first; the root is kept when it is cut).
    pub references: Vec<String>,
    /// Last use, for forgetting old threads.
    pub seq: u64,
}

impl ThreadContext {
    /// Adds `id` as the latest message of the thread.
    pub fn push(&mut self, id: &str) {
        if id.is_empty() {
            return;
        }
        if !self.references.iter().any(|r| r == id) {
            self.references.push(id.to_string());
        }
        if self.references.len() > MAX_REFERENCES {
            let cut = self.references.len() - MAX_REFERENCES;
            self.references.drain(1..=cut);
        }
        self.last_message_id = Some(id.to_string());
    }
}

/// The persisted state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MailState {
    /// `UIDVALIDITY` of INBOX that [`MailState::last_uid`] belongs to; `None` before the
    /// first connection.
    pub uid_validity: Option<u32>,
    /// Highest UID handed to the gateway (or skipped as not for us).
    pub last_uid: u32,
    /// Threads by thread id.
    pub threads: BTreeMap<String, ThreadContext>,
    /// `Message-ID` (without brackets) → (thread id, last use).
    pub ids: BTreeMap<String, (String, u64)>,
    /// Use counter for [`ThreadContext::seq`] and the id entries.
    pub seq: u64,
}

/// The thread id for `key` (the correspondent and the `Message-ID` of the thread's first
/// message): `t` and 16 hex digits of its SHA-256 (short, and free of the `:` and `@` of raw
/// ids, since it is part of the session key).
pub fn thread_id(key: &str) -> String {
    let digest = sha2::Sha256::digest(key.as_bytes());
    format!("t{}", &hex::encode(digest)[..16])
}

impl MailState {
    /// Reads the state; a missing file is a fresh state, an unreadable one too (with a
    /// warning: the cursor then starts at the mailbox's end, so nothing old is answered).
    pub fn load(path: &Path) -> MailState {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(platform = "email", file = %path.display(), error = %e, "ignoring an unreadable email state file");
                MailState::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => MailState::default(),
            Err(e) => {
                tracing::warn!(platform = "email", file = %path.display(), error = %e, "cannot read the email state file");
                MailState::default()
            }
        }
    }

    /// The thread a message from `from` belongs to: the thread of the first of its
    /// `In-Reply-To` and `References` (newest first) that we know as a thread with `from`,
    /// else a new thread rooted at the oldest of `references`, else at `in_reply_to`, else at
    /// the message's own id. Threads are per correspondent: someone else naming the ids of a
    /// thread with Alice gets a thread of their own, never Alice's.
    pub fn resolve_thread(
        &self,
        from: &str,
        own_id: &str,
        in_reply_to: &[String],
        references: &[String],
    ) -> String {
        let known = in_reply_to
            .iter()
            .chain(references.iter().rev())
            .filter_map(|id| self.ids.get(id).map(|(t, _)| t))
            .find(|t| self.threads.get(*t).is_some_and(|c| c.address == from));
        if let Some(t) = known {
            return t.clone();
        }
        let root = references
            .first()
            .or(in_reply_to.first())
            .map(String::as_str)
            .unwrap_or(own_id);
        thread_id(&format!("{from}\n{root}"))
    }

    /// Records that message `id` (ours or theirs) belongs to `thread` with `address` and
    /// `subject`, as the thread's latest message.
    pub fn record(&mut self, thread: &str, address: &str, subject: &str, id: &str) {
        self.seq += 1;
        let seq = self.seq;
        let ctx = self.threads.entry(thread.to_string()).or_default();
        ctx.address = address.to_string();
        if !subject.is_empty() || ctx.subject.is_empty() {
            ctx.subject = subject.to_string();
        }
        ctx.push(id);
        ctx.seq = seq;
        if !id.is_empty() {
            self.ids.insert(id.to_string(), (thread.to_string(), seq));
        }
        self.prune();
    }

    fn prune(&mut self) {
        if self.threads.len() > MAX_THREADS {
            let mut by_age: Vec<(u64, String)> = self
                .threads
                .iter()
                .map(|(k, v)| (v.seq, k.clone()))
                .collect();
            by_age.sort();
            for (_, k) in by_age.into_iter().take(self.threads.len() - MAX_THREADS) {
                self.threads.remove(&k);
            }
        }
        if self.ids.len() > MAX_IDS {
            let mut by_age: Vec<(u64, String)> =
                self.ids.iter().map(|(k, v)| (v.1, k.clone())).collect();
            by_age.sort();
            for (_, k) in by_age.into_iter().take(self.ids.len() - MAX_IDS) {
                self.ids.remove(&k);
            }
        }
    }
}

/// The state file and its in-memory copy.
#[derive(Debug)]
pub(crate) struct StateFile {
    path: Option<PathBuf>,
    state: std::sync::Mutex<MailState>,
}

impl StateFile {
    /// The state kept at `path` (`None`: in memory only).
    pub(crate) fn open(path: Option<PathBuf>) -> StateFile {
        let state = path.as_deref().map(MailState::load).unwrap_or_default();
        StateFile {
            path,
            state: std::sync::Mutex::new(state),
        }
    }

    /// Runs `f` on the state.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut MailState) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Writes the state to its file (atomically, off the async threads). A failure is a
    /// warning: the next save tries again.
    pub(crate) async fn save(&self) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let text = match serde_json::to_vec(&self.with(|s| s.clone())) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(platform = "email", error = %e, "cannot encode the email state");
                return;
            }
        };
        let shown = path.clone();
        let result = tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                hermes_protocol::private_fs::create_dir_all(dir)?;
            }
            hermes_protocol::private_fs::write_atomic(&path, text)
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r);
        if let Err(e) = result {
            tracing::warn!(platform = "email", file = %shown.display(), error = %e, "could not save the email state");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_joins_the_thread_of_any_id_it_names_and_new_mail_starts_one() {
        let mut s = MailState::default();
        let t1 = s.resolve_thread("alice@x", "a@x", &[], &[]);
        assert_eq!(t1, thread_id("alice@x\na@x"));
        s.record(&t1, "alice@x", "Plans", "a@x");
        s.record(&t1, "alice@x", "", "ours-1@h");
        // A client that keeps only In-Reply-To (our reply's id) stays in the thread.
        assert_eq!(
            s.resolve_thread("alice@x", "b@x", &["ours-1@h".into()], &[]),
            t1
        );
        // One that keeps References does too, even when we never saw the newest id.
        assert_eq!(
            s.resolve_thread("alice@x", "c@x", &["unknown@y".into()], &["a@x".into()]),
            t1
        );
        // Someone else naming the thread's ids gets a thread of their own.
        let other = s.resolve_thread("mallory@y", "e@y", &["ours-1@h".into()], &[]);
        assert_ne!(other, t1);
        // Unknown ids: rooted at the oldest reference.
        assert_eq!(
            s.resolve_thread(
                "alice@x",
                "d@x",
                &["q@y".into()],
                &["p@y".into(), "q@y".into()]
            ),
            thread_id("alice@x\np@y")
        );
        let ctx = &s.threads[&t1];
        assert_eq!(ctx.subject, "Plans", "an empty subject keeps the thread's");
        assert_eq!(ctx.last_message_id.as_deref(), Some("ours-1@h"));
        assert_eq!(ctx.references, vec!["a@x", "ours-1@h"]);
        assert!(!t1.contains(':') && t1.len() == 17);
    }

    #[test]
    fn references_keep_the_root_when_cut_and_old_threads_are_forgotten() {
        let mut ctx = ThreadContext::default();
        for i in 0..30 {
            ctx.push(&format!("m{i}"));
        }
        assert_eq!(ctx.references.len(), MAX_REFERENCES);
        assert_eq!(ctx.references[0], "m0");
        assert_eq!(ctx.references.last().map(String::as_str), Some("m29"));
        let mut s = MailState::default();
        for i in 0..(MAX_THREADS + 5) {
            s.record(&format!("t{i}"), "a@x", "s", &format!("id{i}"));
        }
        assert_eq!(s.threads.len(), MAX_THREADS);
        assert!(!s.threads.contains_key("t0") && s.threads.contains_key("t2004"));
    }

    #[tokio::test]
    async fn the_state_survives_a_restart_and_a_broken_file_is_a_fresh_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway").join("email_state.json");
        let f = StateFile::open(Some(path.clone()));
        f.with(|s| {
            s.uid_validity = Some(7);
            s.last_uid = 42;
            s.record("t1", "a@x", "Hi", "m1");
        });
        f.save().await;
        let again = StateFile::open(Some(path.clone()));
        assert_eq!(again.with(|s| (s.uid_validity, s.last_uid)), (Some(7), 42));
        assert_eq!(again.with(|s| s.ids["m1"].0.clone()), "t1");
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(MailState::load(&path), MailState::default());
    }
}
