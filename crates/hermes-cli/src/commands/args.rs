//! Command-line arguments (FEATURES §1 CLI). Flag and subcommand names follow the Python
//! `hermes` so users can move between the two. The conversation flags ([`ChatArgs`]) belong
//! to `crate::assembly::args` and sit on `hermes` itself and on `hermes chat` only, so every
//! other subcommand's `--help` shows just its own flags (issue 20 item 7); `-p/--profile`
//! applies everywhere. Each subcommand's actions are defined in its own module
//! (`commands::mcp::McpCmd`, …; `hermes setup`'s in `crate::setup`). A Python Hermes
//! command hermes does not have is caught by [`Command::Other`] and answered in one line
//! (`commands::redirect`).

use clap::{Parser, Subcommand};

use crate::assembly::args::ChatArgs;

/// hermes — a self-improving personal AI agent in one fast binary.
#[derive(Debug, Parser)]
#[command(name = "hermes", version, about, long_about = None)]
pub struct Cli {
    /// Profile name: uses `~/.hermes/profiles/NAME`.
    #[arg(short = 'p', long, global = true)]
    pub profile: Option<String>,
    /// Options of the REPL (and of `chat`).
    #[command(flatten)]
    pub chat: ChatArgs,
    /// Subcommand (none = the interactive REPL).
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The conversation flags in force: those before the subcommand, with `chat`'s own on
    /// top for `hermes chat …`.
    pub fn conversation(&self) -> ChatArgs {
        match &self.command {
            Some(Command::Chat { args, .. }) => self.chat.overlay(args),
            _ => self.chat.clone(),
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One conversation turn (`-q`), or the REPL without `-q`.
    Chat {
        /// The question; the answer goes to stdout, progress to stderr.
        #[arg(short = 'q', long = "query")]
        query: Option<String>,
        /// An image file to attach to the question (one turn, with or without -q): sent as
        /// an image when the model takes images (`agent.image_input_mode`), else named in
        /// the message.
        #[arg(long, value_name = "PATH")]
        image: Option<std::path::PathBuf>,
        /// Conversation options (also accepted before `chat`).
        #[command(flatten)]
        args: ChatArgs,
    },
    /// Browse, search, rename, delete and prune stored sessions.
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
    /// Toolsets and tools, with availability and health; enable or disable toolsets; check
    /// and test declarative tools (default: list).
    Tools {
        /// What to do (default: list).
        #[command(subcommand)]
        action: Option<crate::commands::tools::ToolsCmd>,
    },
    /// Pick the model (interactive on a terminal), show it, set it or download the local one.
    Model {
        /// What to do (default: the picker on a terminal, else show).
        #[command(subcommand)]
        action: Option<crate::commands::model::ModelCmd>,
    },
    /// Show, get, set, unset or edit config.yaml (comments kept).
    Config {
        /// What to do (default: show).
        #[command(subcommand)]
        action: Option<crate::commands::config::ConfigCmd>,
    },
    /// Run hermes as an ACP (Agent Client Protocol) agent on stdio, for editors such as Zed.
    Acp(crate::commands::acp::AcpArgs),
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
    /// The messaging gateway: `run` in the foreground, `install`/`start`/`stop`/`restart`/
    /// `status`/`uninstall` as a systemd user service.
    Gateway {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::gateway::GatewayCmd,
    },
    /// Every component at a glance: home, model, keys, state.db, MCP servers, gateway, cron.
    Status(crate::commands::status::StatusArgs),
    /// Usage from state.db: sessions, turns, tokens, cost, tools used.
    Insights(crate::commands::insights::InsightsArgs),
    /// View and filter the internal logs in HERMES_HOME/logs/ (agent.log, errors.log).
    Logs(crate::commands::logs::LogsArgs),
    /// Send a message to a configured platform (scripts, cron jobs, CI): no model, no
    /// running gateway.
    Send(crate::commands::send::SendArgs),
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
    /// Back up HERMES_HOME to a zip file (secrets only with --include-secrets).
    Backup(crate::commands::backup::BackupArgs),
    /// Restore a `hermes backup` (or Python Hermes backup) zip into HERMES_HOME.
    Import(crate::commands::backup::ImportArgs),
    /// The size of the system prompt and tool schemas a session would send, part by part.
    PromptSize(crate::commands::prompt_size::PromptSizeArgs),
    /// Look inside: a session message by message with token counts, request sizes, tool
    /// timings, retries and errors (`debug session`); the system prompt layer by layer
    /// (`debug prompt`).
    Debug {
        /// What to do.
        #[command(subcommand)]
        action: crate::commands::debug::DebugCmd,
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
    /// A Python Hermes command hermes does not have: answered with what to use instead.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn redirected_commands_are_not_real_ones() {
        // A redirect that shadows a real subcommand would never be reached: each path's
        // last word must be unknown to the parser at that level.
        let root = Cli::command();
        for path in crate::commands::redirect::redirected_paths() {
            let mut cmd = &root;
            for w in &path[..path.len() - 1] {
                cmd = cmd.find_subcommand(w).unwrap_or_else(|| panic!("{path:?}"));
            }
            assert!(
                cmd.find_subcommand(path[path.len() - 1]).is_none(),
                "{path:?} is a real command"
            );
        }
    }

    /// Python Hermes 0.19.0's sub-commands (aliases after `|`) of the commands hermes has,
    /// from its argparse tree (`hermes_cli/subcommands/*.py`).
    const PYTHON_TREES: &[(&str, &str)] = &[
        (
            "gateway",
            "run start stop restart status install uninstall list setup migrate-legacy enroll",
        ),
        (
            "cron",
            "list create|add edit pause resume run remove|rm|delete status runs|history tick",
        ),
        (
            "sessions",
            "list export delete prune archive optimize repair stats rename browse",
        ),
        (
            "config",
            "show edit get set unset path env-path check migrate",
        ),
        (
            "skills",
            "browse search install inspect list check update audit uninstall reset \
             list-modified diff opt-out opt-in repair-official publish snapshot tap config",
        ),
        (
            "mcp",
            "serve add remove|rm list|ls test configure|config login reauth picker catalog install",
        ),
        ("tools", "list disable enable post-setup"),
        ("auth", "add list remove reset status logout spotify"),
        ("memory", "setup status off reset"),
        ("pairing", "list approve revoke clear-pending"),
    ];

    #[test]
    fn every_python_subcommand_runs_or_is_answered() {
        // Issue 20: "Every other Hermes command … either works or answers, in one line, what
        // to use instead": each name (and alias) is a real sub-command or a redirect.
        let root = Cli::command();
        let redirected = crate::commands::redirect::redirected_paths();
        let mut missing = Vec::new();
        for (parent, names) in PYTHON_TREES {
            let cmd = root
                .find_subcommand(parent)
                .unwrap_or_else(|| panic!("{parent}"));
            for spelling in names.split_whitespace().flat_map(|n| n.split('|')) {
                let real = cmd.find_subcommand(spelling).is_some();
                let answered = redirected.iter().any(|p| p == &[*parent, spelling]);
                if !real && !answered {
                    missing.push(format!("{parent} {spelling}"));
                }
            }
        }
        assert!(missing.is_empty(), "neither run nor answered: {missing:?}");
    }

    #[test]
    fn the_near_misses_offered_are_the_parsers_commands() {
        let names = crate::commands::redirect::command_names::<super::Command>();
        let root = Cli::command();
        let visible: Vec<String> = root
            .get_subcommands()
            .filter(|c| !c.is_hide_set() && c.get_name() != "help")
            .map(|c| c.get_name().to_string())
            .collect();
        assert_eq!(names, visible);
    }
}
