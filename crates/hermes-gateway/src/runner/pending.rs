//! Queued messages that outlive a shutdown (issue 7: nothing acknowledged is lost). Messages
//! still waiting in a session queue (busy mode `queue`, interrupt leftovers, unused steer
//! input) when the gateway stops are written to `HERMES_HOME/gateway/pending.json` (a JSON
//! array of [`InboundMessage`], 0600, replaced atomically through a temp file and a rename);
//! the next [`crate::Gateway::run`] takes the file and serves them first, in order, through
//! the normal path (authorization, commands, session queue).

use std::io::Write;
use std::path::{Path, PathBuf};

use hermes_protocol::HermesHome;

use crate::platform::InboundMessage;

/// `HERMES_HOME/gateway/pending.json`.
pub fn pending_path(home: &HermesHome) -> PathBuf {
    home.root().join("gateway").join("pending.json")
}

/// Adds `messages` after any already saved (a second stop before a start keeps both).
/// Errors are I/O or JSON failures naming the file.
pub(crate) fn save(home: &HermesHome, messages: &[InboundMessage]) -> Result<(), String> {
    let path = pending_path(home);
    let mut all = load(&path)?;
    all.extend(messages.iter().cloned());
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if let Some(dir) = path.parent() {
        hermes_protocol::private_fs::create_dir_all(dir).map_err(|e| err(&e))?;
    }
    let text = serde_json::to_string_pretty(&all).map_err(|e| err(&e))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).map_err(|e| err(&e))?;
    file.write_all(text.as_bytes()).map_err(|e| err(&e))?;
    file.sync_all().map_err(|e| err(&e))?;
    drop(file);
    std::fs::rename(&tmp, &path).map_err(|e| err(&e))
}

/// Reads the saved messages (empty when there is no file).
fn load(path: &Path) -> Result<Vec<InboundMessage>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a JSON array of messages: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Takes the saved messages: reads them and removes the file. A file that cannot be read
/// or parsed is left in place (and reported) so nothing is lost.
pub(crate) fn take(home: &HermesHome) -> Result<Vec<InboundMessage>, String> {
    let path = pending_path(home);
    let messages = load(&path)?;
    if !messages.is_empty() || path.exists() {
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(messages)
}

impl super::Inner {
    /// Moves the jobs waiting in `state` (messages, and commands as the message that asked
    /// for them; steer input no turn took was queued by the worker) into
    /// [`super::Inner::leftover`], to be saved when the gateway stops.
    pub(crate) fn keep_queued(&self, state: &mut super::SessionState) {
        let mut leftover = super::lock(&self.leftover);
        for job in state.queue.drain(..) {
            match job {
                super::Job::Message(m) | super::Job::Command(_, m) => {
                    // Its claim goes with it (released once it is saved, not marked done).
                    if let Some(key) = crate::replica::inbound_key(&m) {
                        state.claims.retain(|k| k != &key);
                    }
                    leftover.push(m);
                }
            }
        }
    }
}
