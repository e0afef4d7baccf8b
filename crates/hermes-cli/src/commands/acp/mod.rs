//! `hermes acp` (issue 25 item 1): hermes as an Agent Client Protocol agent over stdio, for
//! editors (Zed, JetBrains, Neovim plugins) and other ACP clients. Built on the protocol's
//! Rust SDK (`agent-client-protocol`, protocol version 1); the client starts `hermes acp`
//! as a child process and speaks newline-delimited JSON-RPC on its stdin and stdout
//! ([`transport`]), so nothing else may write to stdout: logs go to `HERMES_HOME/logs/`.
//!
//! - `initialize`: protocol 1, `loadSession`, embedded context in prompts (no images or
//!   audio);
//! - `session/new`, `session/load` (a stored hermes session, its history replayed as
//!   updates), `session/list` (the stored editor sessions, [`list`]), `session/prompt` ([`prompt`]), `session/cancel` (the turn stops as Ctrl-C
//!   stops it: every tool call keeps a result);
//! - updates ([`updates`]): answer and thought chunks, tool calls with kind, locations and
//!   diffs, the `todo` plan;
//! - permissions, the client's `fs/*` and `terminal/*` ([`tools`], [`terminal`]); session modes `default`,
//!   `accept_edits`, `dont_ask` ([`session::Mode`]); the `model` config option.
//!
//! Sessions use the CLI's config, memory, skills, MCP servers and store; their source is
//! `acp` and their toolsets `platform_toolsets.acp` when set.

mod list;
mod prompt;
pub mod server;
mod session;
mod terminal;
mod tools;
pub mod transport;
mod updates;

use std::sync::Arc;

use anyhow::Result;

use crate::assembly::AgentKit;
use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// The flags of `hermes acp` (Python Hermes' names).
#[derive(Debug, Clone, clap::Args)]
pub struct AcpArgs {
    /// Check that the model resolves and the tools load, print one line and exit (0 when
    /// ready).
    #[arg(long)]
    pub check: bool,
    /// Accepted for Python Hermes' command line (hooks run as configured either way).
    #[arg(long)]
    pub accept_hooks: bool,
    /// Accepted for Python Hermes' command line.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Runs `hermes acp`; returns the exit code.
pub async fn run(profile: Option<&str>, chat: &ChatArgs, args: &AcpArgs) -> Result<i32> {
    let app = App::load(profile)?;
    let kit = AgentKit::prepare_acp(&app, chat).await?;
    if args.check {
        println!(
            "hermes acp: ready (model {} on {}, {} tools)",
            kit.runtime.model,
            kit.runtime.provider,
            kit.tools.len()
        );
        return Ok(0);
    }
    let server = Arc::new(server::Server::new(app, kit));
    let lines = transport::stdio();
    let result = server
        .clone()
        .serve(agent_client_protocol::Lines::new(
            lines.outgoing,
            lines.incoming,
        ))
        .await;
    server.shutdown().await;
    drop(server);
    // Every queued line reaches stdout before the process exits.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), lines.writer).await;
    match result {
        Ok(()) => Ok(0),
        Err(e) => {
            tracing::warn!(error = %e, "acp: the connection ended with an error");
            Ok(1)
        }
    }
}
