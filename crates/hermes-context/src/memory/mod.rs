//! Persistent memory (FEATURES §6): the two `§`-separated files under `memories/`, their
//! lock-protected mutation ([`MemoryStore`]), the frozen snapshot shown in the system prompt
//! ([`MemorySnapshot`]) and the `memory` tool ([`MemoryTool`]).

mod snapshot;
mod store;
mod tool;

pub use snapshot::MemorySnapshot;
pub use store::{
    ENTRY_DELIMITER, MEMORY_CHAR_LIMIT, MemoryError, MemoryOp, MemoryOutcome, MemoryStore,
    MemoryTarget, USER_CHAR_LIMIT, joined_chars, parse_entries, usage_text, validate_memory_text,
};
pub use tool::MemoryTool;
