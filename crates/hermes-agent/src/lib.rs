//! # hermes-agent
//!
//! Owns the turn (ARCHITECTURE §2): the iteration loop, tool dispatch, conversation repair,
//! retry of failed model calls, persistence of every completed message, the learning loop's
//! background reviews ([`Review`]), `delegate_task` subagents ([`DelegateTool`]), the
//! [`AgentHandle`] queue pair (`submit(Op)` /
//! `next_event()`) that every front end uses, and the slash-command registry ([`commands`])
//! the REPL and the gateway parse with.
//! It orchestrates; it must not render output, assemble prompt text, parse provider wire
//! formats or open SQLite itself — those belong to the crates it calls.

mod agent;
mod batch;
pub mod commands;
mod compression;
mod delegate;
mod dispatch;
mod handle;
mod hooks;
pub mod images;
pub mod lease;
mod repair;
mod review;
mod span_content;
mod steer;
mod switch;
mod turn;

pub use agent::{
    Agent, AgentDeps, AgentError, AgentOptions, STORE_FAILED_PREFIX, SystemPromptSource,
};
pub use compression::{CompressTrigger, CompressionReport, DEFAULT_CONTEXT_WINDOW};
pub use delegate::{
    DELEGATE_TASK, DELEGATION_TOOLSET, DelegateTool, DelegationSettings, MAX_TASKS,
    SUBAGENT_BLOCKED_TOOLS, SUBAGENT_BLOCKED_TOOLSETS, allowed_for_subagent, child_tools,
};
pub use dispatch::{args_preview, call_preview, result_preview};
pub use handle::{AgentHandle, Interrupter};
pub use hooks::{
    DEFAULT_HOOK_TIMEOUT_S, FiredHooks, HOOK_EVENTS, HookEvent, HookLoadError, HookOutcome,
    HookSpec, Hooks, event_matches,
};
pub use repair::{
    MISSING_RESULT_TEXT, RepairReport, needs_no_repair, repair_history, validate_tool_pairs,
};
pub use review::{LearningOptions, Review, ReviewReport};
pub use steer::SteerQueue;
pub use switch::PRIMARY_COOLDOWN;
pub use turn::HISTORY_CHANGED_TEXT;
