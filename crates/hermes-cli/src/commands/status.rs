//! `hermes status` (Python Hermes' `hermes status`): every component at a glance.

use anyhow::Result;
use clap::Args;

use crate::assembly::args::ChatArgs;

/// Flags of `hermes status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Also check what needs a connection (the provider's model list, MCP servers).
    #[arg(long)]
    pub deep: bool,
}

/// Runs `hermes status`; returns the exit code.
pub async fn run(_profile: Option<&str>, _chat: &ChatArgs, _args: &StatusArgs) -> Result<i32> {
    Ok(0)
}
