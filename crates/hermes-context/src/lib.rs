//! hermes-context — what the model sees besides the conversation.
//!
//! Owns: the system prompt builder (identity from `SOUL.md`, tool guidance, project context
//! files, metadata; full and compact profiles), the prompt-injection scan, and token
//! estimates. Model-visible texts live in `prompts/*.md`. Later: memory, skills, compression.
//! Must not: call models, run tools, touch the session store, or read the clock — the caller
//! passes the date and stores the built prompt with the session (ARCHITECTURE §2).

mod builder;
mod context_files;
mod fragments;
mod injection;
mod soul;
mod tokens;

pub use builder::{
    BuiltPrompt, COMPACT_CONTEXT_CAP_CHARS, COMPACT_IDENTITY_MAX_CHARS, COMPACT_WINDOW_MAX_TOKENS,
    LayerKind, PromptBuilder, PromptInputs, PromptProfile,
};
pub use context_files::{
    BlockedContextFile, CONTEXT_CAP_MAX_CHARS, CONTEXT_CAP_MIN_CHARS, ContextFiles, HEAD_PERCENT,
    LoadedContextFile, MAX_POINTER_HOPS, MAX_READ_BYTES, TAIL_PERCENT, context_file_cap_chars,
    find_git_root, truncate_head_tail,
};
pub use fragments::{Fragment, render_guidance};
pub use injection::{EXCERPT_MAX_CHARS, Finding, InjectionCategory, ScanScope, scan_for_injection};
pub use soul::{SoulRead, default_soul, ensure_soul, read_soul};
pub use tokens::{
    CHARS_PER_TOKEN, IMAGE_PART_TOKENS, MESSAGE_OVERHEAD_TOKENS, TOOL_CALL_OVERHEAD_TOKENS,
    TOOL_SPEC_OVERHEAD_TOKENS, TokenEstimator,
};
