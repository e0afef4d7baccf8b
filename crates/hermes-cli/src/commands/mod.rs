//! The `hermes` subcommands: the argument parser ([`args`]), one module per subcommand, and
//! [`run`], which dispatches a parsed command line. Commands build on `assembly` (agents),
//! `repl`, `setup`, `views`, `config_edit` and `render`; nothing below imports from here.

pub mod args;
pub mod auth;
pub mod chat;
pub mod config;
pub mod cron;
pub mod doctor;
pub mod gateway;
pub mod logs;
pub mod mcp;
pub mod memory;
pub mod model;
pub mod pairing;
pub mod sessiondb;
pub mod sessions;
pub mod shell;
pub mod skills;
pub mod tools;

use anyhow::Result;

use crate::commands::args::{Cli, Command};

/// Runs the parsed command line; returns the process exit code.
pub async fn run(cli: Cli) -> Result<i32> {
    let profile = cli.chat.profile.clone();
    let profile = profile.as_deref();
    match &cli.command {
        Some(Command::Sessions { action }) => sessions::run(profile, action),
        Some(Command::Sessiondb { action }) => sessiondb::run(profile, action),
        Some(Command::Config { action }) => config::run(profile, action.as_ref()),
        Some(Command::Model { action }) => model::run(profile, &cli.chat, action.as_ref()).await,
        Some(Command::Mcp { action }) => mcp::run(profile, action).await,
        Some(Command::Memory { action }) => memory::run(profile, action),
        Some(Command::Skills { action }) => skills::run(profile, action),
        Some(Command::Tools { action }) => tools::run(profile, &cli.chat, action.as_ref()),
        Some(Command::Auth { action }) => auth::run(profile, action),
        Some(Command::Cron { action }) => cron::run(profile, &cli.chat, action).await,
        Some(Command::Gateway { action }) => gateway::run(profile, &cli.chat, action).await,
        Some(Command::Pairing { action }) => pairing::run(profile, action),
        Some(Command::Logs(args)) => logs::run(profile, args),
        Some(Command::Doctor { fix }) => doctor::run(profile, &cli.chat, *fix).await,
        Some(Command::Setup(args)) => crate::setup::run(profile, &cli.chat, args).await,
        Some(Command::Completion { shell }) => shell::completion(*shell),
        Some(Command::Man) => shell::man(),
        Some(Command::Version) => Ok(0),
        Some(Command::Chat { query: Some(q) }) => chat::one_shot(profile, &cli.chat, q).await,
        Some(Command::Chat { query: None }) | None => chat::interactive(profile, &cli.chat).await,
    }
}
