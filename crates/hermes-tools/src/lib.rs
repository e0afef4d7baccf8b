//! # hermes-tools
//!
//! Owns the [`Tool`] trait, the explicit [`Registry`] of built-in tools, toolset composition
//! ([`ToolsetSelection`]), argument coercion by schema ([`coerce_args`]), the built-in `file`
//! ([`mod@file`]) and `terminal` ([`terminal`]) toolsets, dangerous-command classification,
//! the write deny-list ([`safety`]), the parallel planner for a batch of calls ([`plan`]) and
//! the tool-result budget ([`budget`]) and the per-session `todo` list ([`todo`]).
//! It must not talk to models or the session store; the agent loop decides when tools run
//! (ARCHITECTURE §1).

pub mod budget;
mod coerce;
pub mod file;
pub mod plan;
mod registry;
pub mod safety;
pub mod terminal;
pub mod todo;
mod tool;
mod toolsets;

pub use coerce::coerce_args;
pub use registry::{Registry, RegistryError, ToolSet, closest_names};
pub use safety::{CommandSafety, check_write_path, classify_command};
pub use terminal::ProcessRegistry;
pub use todo::{TodoItem, TodoStatus, TodoStore, TodoTool};
pub use tool::{
    Access, Approval, ApprovalRequest, Approver, FixedApprover, Parallelism, Tool, ToolContext,
    ToolOutput, ToolSource,
};
pub use toolsets::{DEFAULT_TOOLSET, TOOLSET_DEFS, ToolsetDef, ToolsetSelection, UnknownToolset};
