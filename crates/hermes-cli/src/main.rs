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
//! - `render/`: drawing on the terminal (Markdown, skins, tool lines, status line, output);
//! - `masking`: the secrets masked on every line written to the terminal.

// `render` first: it defines the `outln!` macro every later module uses.
#[macro_use]
mod render;

mod assembly;
mod commands;
mod config_edit;
mod logfile;
mod masking;
mod repl;
mod setup;
mod trace_export;
mod views;

use std::process::ExitCode;

use crate::commands::args::{Cli, Command};

fn main() -> ExitCode {
    // The sandbox launcher (`hermes __sandbox-exec …`) runs before anything else.
    if let Some(code) = assembly::sandbox::launcher_if_requested() {
        return code;
    }
    let cli = match <Cli as clap::Parser>::try_parse_from(argv_with_alias()) {
        Ok(cli) => cli,
        Err(e) => {
            let argv: Vec<String> = std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let root = <Cli as clap::CommandFactory>::command();
            if let Some(line) = commands::python_flags::answer(&e, &argv, &root) {
                errln!("{line}");
                return ExitCode::from(2);
            }
            e.exit()
        }
    };
    if let Some(Command::Version) = cli.command {
        println!("hermes {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    init_logging(&cli);
    if let Some(Command::Gateway {
        action: commands::gateway::GatewayCmd::Run,
        ..
    }) = &cli.command
    {
        // Before the runtime's threads exist (issue 7 "Memory").
        commands::gateway::process_memory::cap_malloc_arenas();
    }
    hermes_telemetry::process::mark_start();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(commands::run(cli)) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            errln!("error: {}", hermes_llm::redact_secrets(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    };
    trace_export::shutdown();
    code
}

/// The command line, with `acp` put in front when the binary runs as `hermes-acp` (Python
/// Hermes' console script for the ACP server; `ln -s hermes hermes-acp` gives the same name).
fn argv_with_alias() -> Vec<std::ffi::OsString> {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let called = argv
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n == "hermes-acp");
    if called {
        argv.insert(1, "acp".into());
    }
    argv
}

/// Sets up `tracing`: every record goes to `HERMES_HOME/logs/` ([`logfile`]); only commands
/// that are not a conversation or a report (the gateway, `cron`, …) also log to stderr, with
/// ANSI colours only when stderr is a terminal. The REPL and `chat` never draw a log line.
/// `HERMES_LOG` (an `EnvFilter`) overrides the level; the default is `info` for the files
/// and `warn` (`info` with `-v`) for stderr. Both mask every secret of the home (issue 18
/// item 2: `.env`, `auth.json`, config keys, MCP headers/env, OAuth tokens).
fn init_logging(cli: &Cli) {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};

    let env = |default: &str| {
        EnvFilter::try_from_env("HERMES_LOG").unwrap_or_else(|_| EnvFilter::new(default))
    };
    // Conversations, and the reports that say in their own lines what is wrong (doctor,
    // status, `mcp test`), draw no log line on the terminal (the user pass of issue 20: doctor showed
    // each MCP problem three times, twice as raw records).
    let conversation = matches!(
        cli.command,
        None | Some(
            Command::Chat { .. }
                | Command::Doctor { .. }
                | Command::Status(_)
                | Command::Debug { .. }
                | Command::Mcp { .. }
                | Command::Acp(_)
        )
    );
    let verbose = cli.conversation().verbose;
    let home = hermes_protocol::HermesHome::resolve(cli.profile.as_deref());
    let redactor = std::sync::Arc::new(
        home.as_ref()
            .map(hermes_protocol::SecretRedactor::load)
            .unwrap_or_default(),
    );
    let files = home.and_then(|h| {
        let dir = h.logs_dir();
        hermes_protocol::private_fs::create_dir_all(&dir).ok()?;
        let open = |name: &str| {
            logfile::LogFile::open(&dir.join(name), logfile::MAX_BYTES, redactor.clone())
        };
        let agent = open(logfile::AGENT_LOG);
        let errors = open(logfile::ERRORS_LOG);
        Some((agent.ok()?, errors.ok()?))
    });
    // Each filtered layer is added to the registry on its own: two per-layer-filtered layers
    // joined with `and_then` lose the records only the less strict filter lets through
    // (tracing-subscriber 0.3: agent.log got no INFO line).
    let (agent_file, errors_file) = files.unzip();
    let agent_layer = agent_file.map(|agent| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(agent)
            .log_internal_errors(false)
            .with_filter(env("info"))
    });
    let errors_layer = errors_file.map(|errors| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(errors)
            .log_internal_errors(false)
            .with_filter(LevelFilter::WARN)
    });
    // Traces over OTLP when an endpoint is set (issue 24 §1; `trace_export`). config.yaml's
    // `observability:` section is read only when a variable leaves something open.
    let section = std::cell::OnceCell::new();
    let observability = || {
        section
            .get_or_init(|| {
                let home = hermes_protocol::HermesHome::resolve(cli.profile.as_deref())?;
                let loaded = hermes_protocol::config::Config::load(&home.config_file()).ok()?;
                loaded.config.observability
            })
            .clone()
    };
    let otlp_config = || {
        let otlp = observability().and_then(|o| o.get("otlp").cloned());
        let text = |k: &str| otlp.as_ref()?.get(k)?.as_str().map(str::to_string);
        trace_export::OtlpSettings {
            endpoint: text("endpoint"),
            protocol: text("protocol"),
        }
    };
    let (otlp_target, otlp_warning) = trace_export::target(|k| std::env::var(k).ok(), otlp_config);
    if let Some(warning) = otlp_warning {
        // The subscriber is not up yet: this line goes to stderr once.
        eprintln!("warning: {warning}");
    }
    let otel_layer = otlp_target.and_then(|t| trace_export::layer(&t));
    masking::set_redactor(redactor.clone());
    if otel_layer.is_some() {
        match observability().and_then(|o| o.get("capture_content").map(|v| v.as_bool())) {
            // Span text goes through the same masking as the terminal and the logs.
            Some(Some(true)) => hermes_telemetry::trace::enable_content_capture(masking::mask),
            None | Some(Some(false)) => {}
            Some(None) => eprintln!(
                "warning: observability.capture_content must be true or false; not capturing"
            ),
        }
    }
    let stderr_layer = (!conversation).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(|| render::output::MaskedStderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
            // A closed stderr (the terminal went away) must not turn a log line into a panic:
            // tracing-subscriber reports its own write failures with `eprintln!`, which panics.
            .log_internal_errors(false)
            .with_filter(env(if verbose { "info" } else { "warn" }))
    });
    let _ = tracing_subscriber::registry()
        .with(otel_layer)
        .with(agent_layer)
        .with(errors_layer)
        .with(stderr_layer)
        .try_init();
}
