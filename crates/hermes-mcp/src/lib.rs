//! # hermes-mcp
//!
//! Owns the MCP client side of hermes (FEATURES §11; ARCHITECTURE layer 3): the typed
//! `mcp_servers:` configuration ([`config`]), spawning and supervising servers over stdio or
//! Streamable HTTP through the official `rmcp` SDK ([`server`], [`stdio`]), provider-safe
//! tool names ([`naming`]), result and schema mapping ([`mapping`]), the per-server circuit
//! breaker ([`breaker`]), background reconnects with backoff ([`reconnect`]), the answers to
//! server requests — roots, sampling through a front-end [`sampling::Sampler`], elicitation
//! through a front-end [`elicitation::Elicitor`] — OAuth for Streamable HTTP servers
//! ([`oauth`]: token files, login approval) and the bridge that exposes server tools as [`hermes_tools::Tool`]s
//! ([`McpManager`], [`McpTool`]).
//! It must not talk to models, ask the user, render output or touch the session store (the
//! front end supplies the sampler and the elicitor); the agent decides
//! when tools run, the CLI decides which servers to start.

pub mod breaker;
pub mod config;
pub mod elicitation;
mod handler;
mod manager;
pub mod mapping;
pub mod naming;
pub mod oauth;
mod oauth_loopback;
pub mod reconnect;
pub mod sampling;
pub mod server;
pub mod stdio;
mod trace_context;
mod utility;

pub use manager::{McpManager, McpTool, ServerReport, StartOptions};
