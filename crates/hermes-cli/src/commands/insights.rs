//! `hermes insights [--days N] [--source S]` (Python Hermes' `hermes insights`): usage of
//! the sessions of the last days from `state.db` (`crate::views::insights`).

use anyhow::Result;
use clap::Args;

use crate::assembly::app::App;

/// Flags of `hermes insights`.
#[derive(Debug, Clone, Args)]
pub struct InsightsArgs {
    /// How many days back (sessions started since then).
    #[arg(long, default_value_t = 30)]
    pub days: u32,
    /// Only sessions of this source (cli, cron, api_server, telegram, …).
    #[arg(long)]
    pub source: Option<String>,
}

/// Runs `hermes insights`; returns the exit code.
pub fn run(profile: Option<&str>, args: &InsightsArgs) -> Result<i32> {
    let app = App::load(profile)?;
    let store = app.open_store()?;
    let report = crate::views::insights::gather(&store, args.days, args.source.as_deref())?;
    outln!("{}", report.text());
    Ok(0)
}
