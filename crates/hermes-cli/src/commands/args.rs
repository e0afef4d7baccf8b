//! Command-line arguments (FEATURES §1 CLI). Flag and subcommand names follow the Python
//! `hermes` so users can move between the two. The conversation flags ([`ChatArgs`]) belong
//! to `crate::assembly::args`; each subcommand's actions are defined in its own module
//! (`commands::mcp::McpCmd`, …; `hermes setup`'s in `crate::setup`).

use clap::{Parser, Subcommand};

use crate::assembly::args::ChatArgs;

/// hermes — a self-improving personal AI agent in one fast binary.
#[derive(Debug, Parser)]
#[command(name = "hermes", version, about, long_about = None)]
pub struct Cli {
    /// Options shared by chat and the REPL.
    #[command(flatten)]
    pub chat: ChatArgs,
    /// Subcommand (none = the interactive REPL).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One conversation turn (`-q`), or the REPL without `-q`.
    Chat {
        /// The question; the answer goes to stdout, progress to stderr.
        #[arg(short = 'q', long = "query")]
        query: Option<String>,
    },
    /// Browse and search stored sessions.
    Sessions {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::sessions::SessionsCmd,
    },
    /// The session store: migrate a SQLite state.db to PostgreSQL, show which store is used.
    Sessiondb {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::sessiondb::SessionDbCmd,
    },
    /// Show or edit persistent memory (MEMORY.md, USER.md).
    Memory {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::memory::MemoryCmd,
    },
    /// List, show, install or remove skills.
    Skills {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::skills::SkillsCmd,
    },
    /// Toolsets and tools, with availability (default: list).
    Tools {
        /// What to do (default: list).
        #[command(subcommand)]
        action: Option<crate::commands::tools::ToolsCmd>,
    },
    /// Show the model in use, or download the default local model.
    Model {
        /// What to do (default: show).
        #[command(subcommand)]
        action: Option<crate::commands::model::ModelCmd>,
    },
    /// Show or check config.yaml.
    Config {
        /// What to do (default: show).
        #[command(subcommand)]
        action: Option<crate::commands::config::ConfigCmd>,
    },
    /// Manage MCP servers in config.yaml (`mcp_servers:`).
    Mcp {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::mcp::McpCmd,
    },
    /// Extra API keys per provider (a credential pool): add, list, remove.
    Auth {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::auth::AuthCmd,
    },
    /// Scheduled jobs: list, create, edit, pause, resume, run, remove, runs, status, tick.
    Cron {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::cron::CronCmd,
    },
    /// The messaging gateway: `run` serves every configured platform, `status` shows them.
    Gateway {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::gateway::GatewayCmd,
    },
    /// View and filter the internal logs in HERMES_HOME/logs/ (agent.log, errors.log).
    Logs(crate::commands::logs::LogsArgs),
    /// DM pairing codes of the gateway: list, approve, revoke.
    Pairing {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::pairing::PairingCmd,
    },
    /// First-run wizard: provider (or the offline local model), API key into
    /// HERMES_HOME/.env, model, toolsets, an optional MCP server; `--non-interactive` takes
    /// the answers from flags (`--provider`, `--model`, `--base-url`, `-t` and the ones below).
    Setup(crate::setup::SetupArgs),
    /// Check config, model resolution, local model, state.db, MCP servers and skills;
    /// exits 1 when something is broken.
    Doctor {
        /// Also make the safe repairs: create missing folders, set .env and auth.json to
        /// mode 0600, rebuild the search index, seed a missing SOUL.md.
        #[arg(long)]
        fix: bool,
    },
    /// Print a shell completion script: `hermes completion bash > ~/.local/share/bash-completion/completions/hermes`.
    Completion {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the hermes(1) man page generated from these flags (`hermes man | man -l -`).
    Man,
    /// Print the version.
    Version,
}
