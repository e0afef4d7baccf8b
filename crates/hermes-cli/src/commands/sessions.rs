//! `hermes sessions {list,show,search,export}`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Subcommand, ValueEnum};
use hermes_protocol::Role;
use hermes_store::{Format as StoreFormat, SearchQuery};

use crate::assembly::app::App;
use crate::views::sessions::{recent_sessions_text, session_line};

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

/// Runs a sessions subcommand; returns the exit code.
pub fn run(profile: Option<&str>, action: &SessionsCmd) -> Result<i32> {
    let app = App::load(profile)?;
    let store = app.open_store()?;
    match action {
        SessionsCmd::List { limit } => {
            outln!("{}", recent_sessions_text(&store, *limit)?);
            Ok(0)
        }
        SessionsCmd::Show { session } => {
            let Some(record) = store.find_session(session)? else {
                eprintln!("error: no session matches `{session}`");
                return Ok(1);
            };
            outln!("{}", session_line(&record));
            outln!("model: {} ({})", record.model, record.provider);
            if let Some(parent) = store.subagent_parent(&record.id)? {
                outln!("subagent of: {parent}");
            }
            for child in store.child_sessions(&record.id)? {
                outln!("subagent: {}", session_line(&child));
            }
            for m in store.load_messages(&record.id)? {
                let msg = &m.message;
                let who = match msg.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                    Role::Tool => "tool",
                    Role::System => "system",
                };
                outln!("\n[{}] {who}", m.timestamp.format("%H:%M:%S"));
                let text = msg.text();
                if !text.is_empty() {
                    outln!("{text}");
                }
                for call in &msg.tool_calls {
                    outln!("→ {}({})", call.name, call.arguments);
                }
            }
            Ok(0)
        }
        SessionsCmd::Search { query, limit } => {
            let text = query.join(" ");
            let mut q = SearchQuery::new(text);
            q.limit = *limit;
            let hits = store.search(&q)?;
            if hits.is_empty() {
                outln!("no matches");
            }
            for h in hits {
                let subagent = store
                    .subagent_parent(&h.session_id)?
                    .map(|p| format!(" (subagent of {p})"))
                    .unwrap_or_default();
                outln!(
                    "{}{subagent}  {}  [{}] {}",
                    h.session_id,
                    h.session_title.unwrap_or_default(),
                    h.role.as_str(),
                    h.snippet.replace('\n', " ")
                );
            }
            Ok(0)
        }
        SessionsCmd::Export {
            session,
            format,
            output,
        } => {
            let Some(record) = store.find_session(session)? else {
                eprintln!("error: no session matches `{session}`");
                return Ok(1);
            };
            let fmt = match format {
                ExportFormat::Markdown => StoreFormat::Markdown,
                ExportFormat::Json => StoreFormat::Json,
            };
            let text = store.export_session(&record.id, fmt)?;
            match output {
                Some(path) => {
                    // A transcript: owner-only, wherever it is written.
                    hermes_protocol::private_fs::write(path, text)
                        .with_context(|| format!("writing {}", path.display()))?;
                    eprintln!("exported {} to {}", record.id, path.display());
                }
                None => print!("{text}"),
            }
            Ok(0)
        }
    }
}
