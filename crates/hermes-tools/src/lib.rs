//! # hermes-tools
//!
//! Owns the [`Tool`] trait, the explicit [`Registry`] of built-in tools, toolset composition,
//! argument coercion by schema, the built-in `file`, `terminal` and `process` tools,
//! dangerous-command approval and the write deny-list. It must not talk to models or the
//! session store; the agent loop decides when tools run (ARCHITECTURE §1).

mod tool;

pub use tool::{
    Access, Approval, ApprovalRequest, Approver, Parallelism, Tool, ToolContext, ToolOutput,
};
