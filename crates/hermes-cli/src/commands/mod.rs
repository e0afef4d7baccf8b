//! The `hermes` subcommands: the argument parser ([`args`]), one module per subcommand, and
//! [`run`], which dispatches a parsed command line. Commands build on `assembly` (agents),
//! `repl`, `setup`, `views`, `config_edit` and `render`; nothing below imports from here.

pub mod acp;
pub mod args;
pub mod auth;
pub mod backup;
pub mod chat;
pub mod config;
pub mod cron;
pub mod debug;
pub mod declared_tools;
pub mod doctor;
pub mod gateway;
pub mod insights;
pub mod logs;
pub mod mcp;
pub mod memory;
pub mod model;
pub mod pairing;
pub mod prompt_size;
pub mod python_flags;
pub mod redirect;
pub mod send;
pub mod sessiondb;
pub mod sessions;
pub mod shell;
pub mod skills;
pub mod status;
pub mod tools;

use anyhow::Result;

use crate::commands::args::{Cli, Command};

/// Runs the parsed command line; returns the process exit code.
pub async fn run(cli: Cli) -> Result<i32> {
    let profile = cli.profile.clone();
    let profile = profile.as_deref();
    let chat = cli.conversation();
    match &cli.command {
        Some(Command::Sessions { action }) => sessions::run(profile, action),
        Some(Command::Sessiondb { action }) => sessiondb::run(profile, action),
        Some(Command::Config { action }) => config::run(profile, action.as_ref()),
        Some(Command::Model { action }) => model::run(profile, &chat, action.as_ref()).await,
        Some(Command::Acp(args)) => {
            crate::repl::terminate::exit_cleanly_on_signals();
            acp::run(profile, &chat, args).await
        }
        Some(Command::Mcp { action }) => {
            crate::repl::terminate::exit_cleanly_on_signals();
            mcp::run(profile, action).await
        }
        Some(Command::Memory { action }) => memory::run(profile, action),
        Some(Command::Skills { action }) => skills::run(profile, action),
        Some(Command::Tools { action }) => tools::run(profile, &chat, action.as_ref()).await,
        Some(Command::Auth { action }) => auth::run(profile, action),
        Some(Command::Cron { action }) => cron::run(profile, &chat, action).await,
        Some(Command::Gateway { action }) => gateway::run(profile, &chat, action).await,
        Some(Command::Pairing { action }) => pairing::run(profile, action),
        Some(Command::Send(args)) => send::run(profile, args).await,
        Some(Command::Logs(args)) => logs::run(profile, args),
        Some(Command::Status(args)) => {
            crate::repl::terminate::exit_cleanly_on_signals();
            status::run(profile, &chat, args).await
        }
        Some(Command::Insights(args)) => insights::run(profile, args),
        Some(Command::Backup(args)) => backup::backup(profile, args),
        Some(Command::Import(args)) => backup::import(profile, args),
        Some(Command::PromptSize(args)) => prompt_size::run(profile, &chat, args),
        Some(Command::Debug { action }) => debug::run(profile, &chat, action),
        Some(Command::Doctor { fix }) => {
            crate::repl::terminate::exit_cleanly_on_signals();
            doctor::run(profile, &chat, *fix).await
        }
        Some(Command::Setup(args)) => {
            let chat = args.over(&chat);
            crate::setup::run(profile, &chat, args).await
        }
        Some(Command::Completion { shell }) => shell::completion(*shell),
        Some(Command::Man) => shell::man(),
        Some(Command::Version) => Ok(0),
        Some(Command::Other(words)) => Ok(redirect::answer::<Command>(&[], words)),
        Some(Command::Chat {
            query,
            image: image @ Some(_),
            ..
        }) => {
            chat::one_shot(
                profile,
                &chat,
                query.as_deref().unwrap_or(""),
                image.as_deref(),
            )
            .await
        }
        Some(Command::Chat { query: Some(q), .. }) => chat::one_shot(profile, &chat, q, None).await,
        Some(Command::Chat { query: None, .. }) | None => chat::interactive(profile, &chat).await,
    }
}
