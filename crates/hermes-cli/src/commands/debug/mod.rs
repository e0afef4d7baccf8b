//! `hermes debug session <id> [--show-tokens]` and `hermes debug prompt [--session ID]`
//! (issue 24 item 4 "Debugging"): what a session stored, message by message, with the
//! request sizes of its model calls, tool timings, retries and errors and usage per model
//! ([`session`]); and the system prompt's layers with the bytes and estimated tokens of
//! each, next to the tool schemas' share ([`prompt`]). Plain aligned tables on stdout;
//! `--json` gives the same numbers as one JSON object. Nothing is changed (building the prompt
//! seeds a missing `SOUL.md`, as every session does), and no log line reaches the terminal
//! (`main` treats `debug` as a report).

mod prompt;
mod session;
mod table;

use anyhow::Result;
use clap::Subcommand;

use crate::assembly::args::ChatArgs;

/// `hermes debug …`
#[derive(Debug, Subcommand)]
pub enum DebugCmd {
    /// Each stored message of a session (role, time, tool calls and results, a redacted
    /// preview), the request size of each model call, tool timings, retries and errors
    /// from the logs, and usage per model.
    Session {
        /// Session id, title or unique id prefix.
        session: String,
        /// Add each message's estimated token count.
        #[arg(long)]
        show_tokens: bool,
        /// One JSON object instead of the tables.
        #[arg(long)]
        json: bool,
    },
    /// The system prompt's layers (identity, tool guidance, memory, skills index, context
    /// files, metadata, …) with bytes and estimated tokens, and the tool schemas' share.
    Prompt {
        /// Measure this session's stored system prompt instead of a new session's
        /// (id, title or unique id prefix).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// One JSON object instead of the tables.
        #[arg(long)]
        json: bool,
    },
    /// A Python Hermes `debug` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs a debug subcommand; returns the exit code.
pub fn run(profile: Option<&str>, chat: &ChatArgs, action: &DebugCmd) -> Result<i32> {
    match action {
        DebugCmd::Session {
            session,
            show_tokens,
            json,
        } => session::run(profile, session, *show_tokens, *json),
        DebugCmd::Prompt { session, json } => prompt::run(profile, chat, session.as_deref(), *json),
        DebugCmd::Other(words) => Ok(crate::commands::redirect::answer::<DebugCmd>(
            &["debug"],
            words,
        )),
    }
}
