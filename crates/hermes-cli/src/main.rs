//! The `hermes` binary: parses flags, loads HERMES_HOME, and hands off to the REPL, one-shot
//! chat or a subcommand. Everything here is wiring; the agent lives in `hermes-agent`.

#[macro_use]
mod output;

mod app;
mod approver;
mod args;
mod auth_cmd;
mod chat;
mod clarify_prompt;
mod complete;
mod config_cmd;
mod config_edit;
mod config_edit_keys;
mod cron_cmd;
mod delegation;
mod display;
mod doctor_cmd;
mod doctor_fix;
mod gateway_cmd;
mod gateway_cron;
#[cfg(test)]
mod gateway_cron_e2e;
mod hangup;
mod input;
mod mcp_cmd;
mod mcp_elicit;
mod mcp_login;
mod mcp_sampler;
mod mcp_scan;
mod memory_cmd;
mod model_cmd;
mod model_switch;
mod pairing_cmd;
mod process_memory;
mod prompt;
mod render;
mod repl;
mod session;
mod sessions_cmd;
mod setup;
mod shell_cmd;
mod skills_cmd;
mod skills_git;
mod skin;
mod slash;
mod terminate;
mod tools_cmd;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use clap::Parser;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Version) = cli.command {
        println!("hermes {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    init_logging(cli.chat.verbose, cli.chat.profile.as_deref());
    if let Some(Command::Gateway {
        action: gateway_cmd::GatewayCmd::Run,
        ..
    }) = &cli.command
    {
        // Before the runtime's threads exist (issue 7 "Memory").
        process_memory::cap_malloc_arenas();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: {}", hermes_llm::redact_secrets(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr through a writer that masks every secret of the home (issue 18 item 2:
/// `.env`, `auth.json`, config keys, MCP headers/env, OAuth tokens).
fn init_logging(verbose: bool, profile: Option<&str>) {
    let redactor = std::sync::Arc::new(
        hermes_protocol::HermesHome::resolve(profile)
            .map(|home| hermes_protocol::SecretRedactor::load(&home))
            .unwrap_or_default(),
    );
    let default = if verbose { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("HERMES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || {
            hermes_protocol::RedactingWriter::new(redactor.clone(), std::io::stderr())
        })
        .with_target(false)
        // A closed stderr (the terminal went away) must not turn a log line into a panic:
        // tracing-subscriber reports its own write failures with `eprintln!`, which panics.
        .log_internal_errors(false)
        .try_init();
}

async fn run(cli: Cli) -> Result<i32> {
    let profile = cli.chat.profile.clone();
    let profile = profile.as_deref();
    match &cli.command {
        Some(Command::Sessions { action }) => sessions_cmd::run(profile, action),
        Some(Command::Config { action }) => config_cmd::run(profile, action.as_ref()),
        Some(Command::Model { action }) => {
            model_cmd::run(profile, &cli.chat, action.as_ref()).await
        }
        Some(Command::Mcp { action }) => mcp_cmd::run(profile, action).await,
        Some(Command::Memory { action }) => memory_cmd::run(profile, action),
        Some(Command::Skills { action }) => skills_cmd::run(profile, action),
        Some(Command::Tools { action }) => tools_cmd::run(profile, &cli.chat, action.as_ref()),
        Some(Command::Auth { action }) => auth_cmd::run(profile, action),
        Some(Command::Cron { action }) => cron_cmd::run(profile, &cli.chat, action).await,
        Some(Command::Gateway { action }) => gateway_cmd::run(profile, &cli.chat, action).await,
        Some(Command::Pairing { action }) => pairing_cmd::run(profile, action),
        Some(Command::Doctor { fix }) => doctor_cmd::run(profile, &cli.chat, *fix).await,
        Some(Command::Setup(args)) => setup::run(profile, &cli.chat, args).await,
        Some(Command::Completion { shell }) => shell_cmd::completion(*shell),
        Some(Command::Man) => shell_cmd::man(),
        Some(Command::Version) => Ok(0),
        Some(Command::Chat { query: Some(q) }) => {
            let app = app::App::load(profile)?;
            app.warn_config();
            terminate::exit_cleanly_on_signals();
            chat::run(&app, &cli.chat, q)
                .await
                .map_err(setup::with_setup_hint)
        }
        Some(Command::Chat { query: None }) | None => {
            use std::io::IsTerminal;
            if !std::io::stdin().is_terminal() {
                let setup_first = if setup::nothing_configured(profile, &cli.chat) {
                    "; nothing is configured yet either: `hermes setup --non-interactive \
                     --provider …` configures hermes without questions"
                } else {
                    ""
                };
                anyhow::bail!(
                    "the interactive REPL needs a terminal on stdin; for scripts use \
                     `hermes chat -q \"…\"` (add --json for machine-readable events){setup_first}"
                );
            }
            let app = app::App::load(profile)?;
            app.warn_config();
            let Some(app) = setup::offer_if_unconfigured(app, profile, &cli.chat).await? else {
                return Ok(1);
            };
            terminate::exit_cleanly_on_signals();
            let (approver, questions) = approver::ReplApprover::new();
            let (elicitor, elicitations) = mcp_elicit::ReplElicitor::new();
            let (clarifier, clarifications) = clarify_prompt::ReplClarifier::new();
            let (agent, info) = session::build_agent(
                &app,
                &cli.chat,
                Arc::new(approver),
                Some(Arc::new(elicitor)),
                Some(Arc::new(clarifier)),
            )
            .await?;
            let handle = hermes_agent::AgentHandle::spawn(agent);
            let questions = repl::Questions {
                approvals: questions,
                elicitations,
                clarifications,
            };
            repl::run(handle, questions, info, cli.chat.quiet, cli.chat.verbose).await
        }
    }
}
