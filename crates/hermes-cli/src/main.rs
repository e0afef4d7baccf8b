//! The `hermes` binary: parses flags, sets up logging and the async runtime, and hands off
//! to [`commands::run`]. Everything here is wiring; the agent lives in `hermes-agent`.
//!
//! The crate is laid out by concern, each top-level module depending only on those listed
//! after it (no import cycle; `hermes-testkit`'s layering test checks it):
//! - `commands/`: one module per subcommand, the `hermes` argument parser and the dispatch;
//! - `repl/`: the interactive REPL (input, completion, slash commands, terminal questions);
//! - `setup/`: the setup wizard (`hermes setup`, first run);
//! - `assembly/`: config → runtime → client → tools → MCP → prompt → agent, for every entry
//!   point (REPL, `chat -q`, cron, the gateway);
//! - `views/`: text views of `HERMES_HOME` shared by subcommands and slash commands;
//! - `config_edit/`: comment-preserving edits of `config.yaml`;
//! - `render/`: drawing on the terminal (Markdown, skins, tool lines, status line, output).

// `render` first: it defines the `outln!` macro every later module uses.
#[macro_use]
mod render;

mod assembly;
mod commands;
mod config_edit;
mod repl;
mod setup;
mod views;

use std::process::ExitCode;

use clap::Parser;

use crate::commands::args::{Cli, Command};

fn main() -> ExitCode {
    // The sandbox launcher (`hermes __sandbox-exec …`) runs before anything else.
    if let Some(code) = assembly::sandbox::launcher_if_requested() {
        return code;
    }
    let cli = Cli::parse();
    if let Some(Command::Version) = cli.command {
        println!("hermes {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    init_logging(cli.chat.verbose, cli.chat.profile.as_deref());
    if let Some(Command::Gateway {
        action: commands::gateway::GatewayCmd::Run,
        ..
    }) = &cli.command
    {
        // Before the runtime's threads exist (issue 7 "Memory").
        commands::gateway::process_memory::cap_malloc_arenas();
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
    match runtime.block_on(commands::run(cli)) {
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
