//! hermes-context — what the model sees besides the conversation.
//!
//! Owns: the system prompt builder (identity from `SOUL.md`, tool guidance, project context
//! files, metadata; full and compact profiles), the prompt-injection scan, token estimates,
//! persistent memory ([`memory`]: `MEMORY.md`/`USER.md` and the `memory` tool), skills
//! ([`skills`]: the `SKILL.md` loader, the prompt index and the skill tools), and the
//! `session_search` tool over the session store, the learning loop's review texts and the
//! tool-use discipline layer ([`ReviewKind`], [`tool_use_discipline`]), the texts of
//! `delegate_task` subagents ([`subagent_layer`]), and context
//! compression planning
//! ([`compress`]: thresholds, head/middle/tail cuts, the summarizer's input; the agent makes
//! the call). Model-visible texts live in `prompts/*.md`.
//! Must not: call models, drive the turn loop, write sessions (the store is only searched and
//! read), or read the clock — the caller passes the date and stores the built prompt with the
//! session (ARCHITECTURE §2).

mod builder;
pub mod compress;
mod context_files;
mod delegation;
mod fragments;
mod injection;
mod learning;
pub mod memory;
mod review;
mod session_search;
pub mod skills;
mod soul;
mod tokens;

pub use builder::{
    BuiltPrompt, COMPACT_CONTEXT_CAP_CHARS, COMPACT_IDENTITY_MAX_CHARS, COMPACT_WINDOW_MAX_TOKENS,
    LayerKind, LayerSize, PromptBuilder, PromptInputs, PromptProfile,
};
pub use compress::{
    CompressionConfig, CompressionPlan, ContextCompressor, compression_threshold,
    compression_threshold_at,
};
pub use context_files::{
    BlockedContextFile, CONTEXT_CAP_MAX_CHARS, CONTEXT_CAP_MIN_CHARS, ContextFiles, HEAD_PERCENT,
    LoadedContextFile, MAX_POINTER_HOPS, MAX_READ_BYTES, TAIL_PERCENT, context_file_cap_chars,
    find_git_root, truncate_head_tail,
};
pub use delegation::{delegate_task_description, subagent_layer, subagent_part_of};
pub use fragments::{Fragment, render_guidance};
pub use injection::{EXCERPT_MAX_CHARS, Finding, InjectionCategory, ScanScope, scan_for_injection};
pub use learning::{
    LEARNING_TOOLSETS, LearningLayers, learning_tools, learning_tools_configured,
    learning_tools_with, skill_invocation_message,
};
pub use review::{
    DISCIPLINE_MODEL_FAMILIES, NOTHING_TO_SAVE, REVIEW_MAX_ITERATIONS, REVIEW_TOOLS, ReviewKind,
    tool_use_discipline,
};
pub use session_search::{
    BROWSE_DEFAULT, HIT_CONTEXT_MESSAGES, MESSAGE_PREVIEW_CHARS, READ_HEAD_TAIL,
    SCROLL_DEFAULT_WINDOW, SCROLL_MAX_WINDOW, SEARCH_MAX_SESSIONS, SessionSearchTool,
};
pub use soul::{SoulRead, default_soul, ensure_soul, read_soul};
pub use tokens::{
    CHARS_PER_TOKEN, IMAGE_PART_TOKENS, MESSAGE_OVERHEAD_TOKENS, TOOL_CALL_OVERHEAD_TOKENS,
    TOOL_SPEC_OVERHEAD_TOKENS, TokenEstimator,
};
