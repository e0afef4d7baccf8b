//! The frozen memory snapshot for the system prompt (FEATURES §6: the prompt shows memory as
//! it was at session start, so the prompt bytes stay stable for prompt caching).

use crate::fragments::Fragment;
use crate::injection::{ScanScope, scan_for_injection};
use crate::memory::provider::{FileMemoryProvider, MemoryProvider};
use crate::memory::store::{ENTRY_DELIMITER, MemoryStore, MemoryTarget, joined_chars, usage_text};

/// Both memory files as read once at session start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySnapshot {
    /// Entries of `MEMORY.md` that passed the scan.
    pub memory: Vec<String>,
    /// Entries of `USER.md` that passed the scan.
    pub user: Vec<String>,
    /// Limit of `MEMORY.md` in chars.
    pub memory_limit: usize,
    /// Limit of `USER.md` in chars.
    pub user_limit: usize,
    /// Why entries or files were left out (unreadable file, entry flagged by the scan).
    pub notes: Vec<String>,
}

impl MemorySnapshot {
    /// Reads both files now. Never fails: an unreadable file gives no entries and a note.
    /// Entries edited by hand into something the injection scan flags are left out of the
    /// prompt (with a note) — the tool refuses to save such text, but the file is the user's.
    pub fn load(store: &MemoryStore) -> MemorySnapshot {
        MemorySnapshot::from_provider(&FileMemoryProvider::new(store.clone()))
    }

    /// Like [`MemorySnapshot::load`], from any [`MemoryProvider`]'s entries and limits.
    pub fn from_provider(store: &dyn MemoryProvider) -> MemorySnapshot {
        let _span = tracing::info_span!("memory.load").entered();
        let mut notes = Vec::new();
        let mut read = |target: MemoryTarget| -> Vec<String> {
            match store.list(target) {
                Ok(entries) => entries
                    .into_iter()
                    .filter(|e| match scan_for_injection(e, ScanScope::Strict).first() {
                        Some(f) => {
                            notes.push(format!(
                                "{}: an entry was left out of the prompt: flagged by the injection scan ({})",
                                target.file_name(),
                                f.category
                            ));
                            false
                        }
                        None => true,
                    })
                    .collect(),
                Err(e) => {
                    notes.push(format!("{e}; memory left out of the prompt"));
                    Vec::new()
                }
            }
        };
        let memory = read(MemoryTarget::Memory);
        let user = read(MemoryTarget::User);
        MemorySnapshot {
            memory,
            user,
            memory_limit: store.limit(MemoryTarget::Memory),
            user_limit: store.limit(MemoryTarget::User),
            notes,
        }
    }

    /// The `MEMORY.md` block for [`crate::LayerKind::Memory`], or `None` when it is empty.
    pub fn memory_block(&self) -> Option<String> {
        block(Fragment::MemoryBlock, &self.memory, self.memory_limit)
    }

    /// The `USER.md` block for [`crate::LayerKind::UserProfile`], or `None` when it is empty.
    pub fn user_block(&self) -> Option<String> {
        block(Fragment::UserBlock, &self.user, self.user_limit)
    }
}

fn block(fragment: Fragment, entries: &[String], limit: usize) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let usage = usage_text(joined_chars(entries), limit);
    let joined = entries.join(ENTRY_DELIMITER);
    Some(
        fragment
            .render(&[("usage", usage.as_str()), ("entries", joined.as_str())])
            .trim()
            .to_string(),
    )
}
