//! Persistent memory (FEATURES §6): the two `§`-separated files under `memories/`, their
//! lock-protected mutation ([`MemoryStore`]), the frozen snapshot shown in the system prompt
//! ([`MemorySnapshot`]), the `memory` tool ([`MemoryTool`]), the provider interface the tool
//! and the prompt builder use ([`MemoryProvider`], with the files as [`FileMemoryProvider`])
//! and the write gate of seed 004 §5.2 ([`gate`]).

pub mod gate;
mod provider;
mod snapshot;
mod store;
mod tool;

pub use provider::{
    FileMemoryProvider, MemoryEntry, MemoryProvider, RetrievedMemory, configured_memory_provider,
};
pub use snapshot::MemorySnapshot;
pub use store::{
    ENTRY_DELIMITER, GateAction, MEMORY_CHAR_LIMIT, MemoryError, MemoryOp, MemoryOutcome,
    MemoryStore, MemoryTarget, USER_CHAR_LIMIT, joined_chars, parse_entries, usage_text,
    validate_memory_text,
};
pub use tool::MemoryTool;
