//! # hermes-tools
//!
//! Owns the [`Tool`] trait, the explicit [`Registry`] of built-in tools, toolset composition
//! ([`ToolsetSelection`]), argument coercion by schema ([`coerce_args`]), the built-in `file`
//! ([`mod@file`]) and `terminal` ([`terminal`]) toolsets, dangerous-command classification,
//! the OS sandbox of every command and the one path policy of the file tools ([`sandbox`]),
//! dangerous-command warnings ([`safety`]), the parallel planner for a batch of calls ([`plan`]) and
//! the tool-result budget ([`budget`]), the per-session `todo` list ([`todo`]) and the
//! `clarify` tool with its [`Clarifier`] trait for front ends ([`clarify`]), and the `web`
//! toolset ([`web`]: `web_extract`, `web_search` behind a configured search backend, and
//! the address policy that keeps fetches off loopback and private networks).
//! The tool contract of seed 004 §3: every call's input validated against its schema
//! ([`validate`]), tool health and fallbacks ([`health`]), and declarative HTTP tools from
//! `HERMES_HOME/tools/*.yaml` ([`declared`]).
//! It must not talk to models or the session store; the agent loop decides when tools run
//! (ARCHITECTURE §1).

pub mod budget;
pub mod clarify;
mod coerce;
pub mod declared;
pub mod file;
pub mod health;
pub mod plan;
mod registry;
pub mod safety;
pub mod sandbox;
pub mod terminal;
pub mod todo;
mod tool;
mod toolsets;
pub mod validate;
pub mod web;

pub use clarify::{Clarifier, ClarifyRequest, ClarifyTool};
pub use coerce::coerce_args;
pub use declared::{DECLARATIVE_TOOLSET, DeclaredTool};
pub use health::ToolHealth;
pub use registry::{Registry, RegistryError, ToolSet, closest_names};
pub use safety::{CommandSafety, check_write_path, classify_command};
pub use sandbox::{SandboxPolicy, SandboxSettings};
pub use terminal::ProcessRegistry;
pub use todo::{TodoItem, TodoStatus, TodoStore, TodoTool};
pub use tool::{
    Access, Approval, ApprovalRequest, Approver, FixedApprover, Parallelism, Tool, ToolContext,
    ToolOutput, ToolSource,
};
pub use toolsets::{
    DEFAULT_TOOLSET, LOCAL_TOOLSET, SMALL_LOCAL_MODEL_BYTES, TOOLSET_DEFS, ToolsetDef,
    ToolsetSelection, UnknownToolset,
};
pub use validate::{FieldProblem, SchemaValidator, ToolValidators, prepare_args};
pub use web::{WebExtractTool, WebSearchTool, WebSettings};
