//! # hermes-mcp
//!
//! Owns the MCP client side of hermes (FEATURES §11; ARCHITECTURE layer 3): the typed
//! `mcp_servers:` configuration ([`config`]), spawning and supervising servers over stdio or
//! Streamable HTTP through the official `rmcp` SDK ([`server`], [`stdio`]), provider-safe
//! tool names ([`naming`]), result and schema mapping ([`mapping`]), the per-server circuit
//! breaker ([`breaker`]) and the bridge that exposes server tools as [`hermes_tools::Tool`]s
//! ([`McpManager`], [`McpTool`]).
//! It must not talk to models, render output or touch the session store; the agent decides
//! when tools run, the CLI decides which servers to start.

pub mod breaker;
pub mod config;
mod manager;
pub mod mapping;
pub mod naming;
pub mod sampling;
pub mod server;
pub mod stdio;
mod utility;

pub use manager::{McpManager, McpTool, ServerReport, StartOptions};
