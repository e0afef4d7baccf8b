//! The memory provider interface (seed 000 §11.2: a provider answers `retrieve(query, limit)`
//! and `store(memory)`; issue 27 item 1) and the built-in provider over the memory files.
//!
//! The `memory` tool ([`crate::memory::MemoryTool`]), the prompt builder's memory layers
//! ([`crate::LearningLayers`]) and the session-end review talk to a [`MemoryProvider`], never
//! to the files directly. `memory.provider` in config.yaml chooses it
//! ([`configured_memory_provider`]); the only one hermes implements is
//! [`FileMemoryProvider`] (`builtin`: `MEMORY.md` / `USER.md`, the format Python Hermes reads
//! and writes). An external provider of Python Hermes (honcho, mem0, …) falls back to it with
//! a warning naming the provider.

use std::collections::BTreeSet;
use std::sync::Arc;

use hermes_protocol::HermesHome;
use hermes_protocol::config::{BUILTIN_MEMORY_PROVIDER, MemoryConfig};

use crate::memory::gate;
use crate::memory::snapshot::MemorySnapshot;
use crate::memory::store::{MemoryError, MemoryOp, MemoryOutcome, MemoryStore, MemoryTarget};

/// One memory to store (seed 000 §11.2 `store(memory)`): which file and the entry text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryEntry {
    /// `memory` (agent notes) or `user` (user profile).
    pub target: MemoryTarget,
    /// The entry text (trimmed before use).
    pub content: String,
}

/// One result of [`MemoryProvider::retrieve`].
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievedMemory {
    /// Where the entry lives.
    pub target: MemoryTarget,
    /// The entry text.
    pub content: String,
    /// Relevance to the query, 0.0–1.0 (higher is better; the scale is the provider's).
    pub score: f64,
}

/// A memory backend: what the `memory` tool and the prompt builder need. Methods block (file
/// or database I/O): call them from `spawn_blocking` or a worker thread on async paths.
pub trait MemoryProvider: std::fmt::Debug + Send + Sync {
    /// The provider's name as `memory.provider` spells it (`builtin`).
    fn name(&self) -> &str;

    /// The char limit of `target`.
    fn limit(&self, target: MemoryTarget) -> usize;

    /// The entries of `target` now, in order.
    ///
    /// # Errors
    /// [`MemoryError::Io`] when they cannot be read.
    fn list(&self, target: MemoryTarget) -> Result<Vec<String>, MemoryError>;

    /// Applies the `memory` tool's add / replace / remove operations to `target`,
    /// all-or-nothing, through the provider's write gate (seed 004 §5.2).
    ///
    /// # Errors
    /// Any [`MemoryError`]; nothing is changed then.
    fn apply(&self, target: MemoryTarget, ops: &[MemoryOp]) -> Result<MemoryOutcome, MemoryError>;

    /// The entries most relevant to `query`, best first, at most `limit` (seed 000 §11.2).
    ///
    /// # Errors
    /// [`MemoryError::Io`] when the entries cannot be read.
    fn retrieve(&self, query: &str, limit: usize) -> Result<Vec<RetrievedMemory>, MemoryError>;

    /// Both targets as read now, for the frozen prompt snapshot (FEATURES §6). Never fails:
    /// unreadable parts become notes.
    fn snapshot(&self) -> MemorySnapshot;

    /// Stores one entry (seed 000 §11.2): an add through [`MemoryProvider::apply`].
    ///
    /// # Errors
    /// As [`MemoryProvider::apply`].
    fn store(&self, entry: &MemoryEntry) -> Result<MemoryOutcome, MemoryError> {
        self.apply(
            entry.target,
            &[MemoryOp::Add {
                content: entry.content.clone(),
            }],
        )
    }
}

/// The built-in provider (`builtin`): `memories/MEMORY.md` and `memories/USER.md` through
/// [`MemoryStore`], with every tool write gated ([`MemoryStore::apply_gated`]). Retrieval
/// scores an entry by the share of the query's content words it contains
/// ([`crate::memory::gate::content_words`]), ties in file order, `memory` before `user`.
#[derive(Debug, Clone)]
pub struct FileMemoryProvider {
    store: MemoryStore,
}

impl FileMemoryProvider {
    /// The provider over `store`.
    pub fn new(store: MemoryStore) -> FileMemoryProvider {
        FileMemoryProvider { store }
    }

    /// The store underneath (paths, ungated mutation for `hermes memory edit`-style tools).
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }
}

impl MemoryProvider for FileMemoryProvider {
    fn name(&self) -> &str {
        BUILTIN_MEMORY_PROVIDER
    }

    fn limit(&self, target: MemoryTarget) -> usize {
        self.store.limit(target)
    }

    fn list(&self, target: MemoryTarget) -> Result<Vec<String>, MemoryError> {
        self.store.read(target)
    }

    fn apply(&self, target: MemoryTarget, ops: &[MemoryOp]) -> Result<MemoryOutcome, MemoryError> {
        self.store.apply_gated(target, ops)
    }

    fn retrieve(&self, query: &str, limit: usize) -> Result<Vec<RetrievedMemory>, MemoryError> {
        let wanted: BTreeSet<String> = gate::content_words(query).into_iter().collect();
        if wanted.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut hits = Vec::new();
        for target in [MemoryTarget::Memory, MemoryTarget::User] {
            for content in self.store.read(target)? {
                let have: BTreeSet<String> = gate::content_words(&content).into_iter().collect();
                let score = wanted.intersection(&have).count() as f64 / wanted.len() as f64;
                if score > 0.0 {
                    hits.push(RetrievedMemory {
                        target,
                        content,
                        score,
                    });
                }
            }
        }
        // Stable: equal scores keep file order.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
        Ok(hits)
    }

    fn snapshot(&self) -> MemorySnapshot {
        MemorySnapshot::load(&self.store)
    }
}

/// The provider `memory:` chooses for `home`: [`FileMemoryProvider`] with the configured
/// char limits. `memory.provider` naming an external provider hermes does not implement
/// gives the same provider (the files keep working); the caller reports
/// [`MemoryConfig::provider_warning`] — [`crate::learning_tools_configured`] logs it once per
/// session set-up, and the config loader lists it among the config warnings.
pub fn configured_memory_provider(
    home: &HermesHome,
    config: &MemoryConfig,
) -> Arc<dyn MemoryProvider> {
    Arc::new(FileMemoryProvider::new(MemoryStore::from_config(
        home, config,
    )))
}
