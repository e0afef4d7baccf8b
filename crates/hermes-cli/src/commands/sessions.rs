//! `hermes sessions {list,show,search,export,rename,delete,prune,stats}` (names and
//! arguments as Python Hermes 0.19.0's).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Subcommand, ValueEnum};
use hermes_protocol::Role;
use hermes_store::{Format as StoreFormat, SearchQuery};

use crate::assembly::app::App;
use crate::views::sessions::{
    recent_sessions, recent_sessions_text, session_line, sessions_table, turn_traces_text,
};

/// `hermes sessions …`
#[derive(Debug, Subcommand)]
pub enum SessionsCmd {
    /// Recent sessions, newest first: id, start, source, messages, title.
    #[command(visible_alias = "ls")]
    List {
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Only sessions from this source (cli, cron, api_server, telegram, …).
        #[arg(long)]
        source: Option<String>,
    },
    /// The messages of one session; with --traces, its turns and their trace ids.
    Show {
        /// Session id, title or unique id prefix.
        session: String,
        /// List the turns instead (one line per user message: time, first words, the trace
        /// id its messages were stored with when trace export was on), to look them up in
        /// the trace backend.
        #[arg(long)]
        traces: bool,
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
    /// Set or change a session's title.
    Rename {
        /// Session id, title or unique id prefix.
        session: String,
        /// The new title (several words are joined).
        #[arg(required = true)]
        title: Vec<String>,
    },
    /// Delete a session with its messages.
    #[command(visible_alias = "rm")]
    Delete {
        /// Session id, title or unique id prefix.
        session: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Delete sessions older than an age (default 90 days), optionally of one source.
    Prune {
        /// Age: days as a bare number (`30`), or `12h`, `2d`, `1w`.
        #[arg(long, value_name = "AGE")]
        older_than: Option<String>,
        /// Only sessions from this source.
        #[arg(long)]
        source: Option<String>,
        /// List what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Counts of the session store: sessions, messages, tokens, size.
    Stats,
    /// A Python Hermes `sessions` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Asks `question [y/N]` on the terminal; without a terminal the answer is no, with a hint.
fn confirm(question: &str) -> Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        errln!("{question} Not confirmed: pass --yes to do it without a terminal.");
        return Ok(false);
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let yes = matches!(line.trim().to_lowercase().as_str(), "y" | "yes");
    if !yes {
        errln!("cancelled");
    }
    Ok(yes)
}

/// Parses an age as Python Hermes does: a bare number of days, or a number with `m`, `h`,
/// `d` or `w`.
pub(crate) fn parse_age(text: &str) -> Result<chrono::Duration> {
    let t = text.trim().to_lowercase();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t.as_str(), "d"),
    };
    let n: i64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("`{text}` is not an age (use 30, 12h, 2d or 1w)"))?;
    Ok(match unit {
        "m" | "min" | "mins" => chrono::Duration::minutes(n),
        "h" | "hour" | "hours" => chrono::Duration::hours(n),
        "d" | "day" | "days" => chrono::Duration::days(n),
        "w" | "week" | "weeks" => chrono::Duration::weeks(n),
        _ => anyhow::bail!("`{text}` is not an age (use 30, 12h, 2d or 1w)"),
    })
}

/// `hermes sessions prune`: lists the sessions older than the age (of one source), then
/// deletes them once confirmed.
fn prune(
    store: &hermes_store::SessionStore,
    older_than: Option<&str>,
    source: Option<&str>,
    dry_run: bool,
    yes: bool,
) -> Result<i32> {
    let age = parse_age(older_than.unwrap_or("90"))?;
    let cutoff = chrono::Utc::now() - age;
    let all = recent_sessions(store, usize::MAX, source)?;
    let doomed: Vec<_> = all.into_iter().filter(|s| s.started_at < cutoff).collect();
    if doomed.is_empty() {
        outln!("no sessions to prune");
        return Ok(0);
    }
    outln!(
        "{} session(s) started before {}:",
        doomed.len(),
        cutoff.format("%Y-%m-%d %H:%M UTC")
    );
    outln!("{}", sessions_table(&doomed, false));
    if dry_run {
        outln!("dry run: nothing deleted");
        return Ok(0);
    }
    if !yes && !confirm(&format!("Delete these {} session(s)?", doomed.len()))? {
        return Ok(1);
    }
    let mut deleted = 0;
    for s in &doomed {
        if store.delete_session(&s.id)? {
            deleted += 1;
        }
    }
    outln!("pruned {deleted} session(s)");
    Ok(0)
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
        SessionsCmd::List { limit, source } => {
            outln!(
                "{}",
                recent_sessions_text(&store, *limit, source.as_deref())?
            );
            Ok(0)
        }
        SessionsCmd::Rename { session, title } => {
            let Some(record) = store.find_session(session)? else {
                errln!("error: no session matches `{session}`");
                return Ok(1);
            };
            let title = title.join(" ");
            let title = title.trim();
            if title.is_empty() {
                errln!("error: the title is empty");
                return Ok(2);
            }
            match store.set_title(&record.id, title) {
                Ok(()) => {
                    outln!("renamed {} to \"{title}\"", record.id);
                    Ok(0)
                }
                Err(hermes_store::StoreError::TitleTaken { .. }) => {
                    errln!("error: another session is already titled \"{title}\"");
                    Ok(1)
                }
                Err(e) => Err(e.into()),
            }
        }
        SessionsCmd::Delete { session, yes } => {
            let Some(record) = store.find_session(session)? else {
                errln!("error: no session matches `{session}`");
                return Ok(1);
            };
            outln!("{}", session_line(&record));
            if !yes && !confirm(&format!("Delete session {} and its messages?", record.id))? {
                return Ok(1);
            }
            if store.delete_session(&record.id)? {
                outln!("deleted session {}", record.id);
                Ok(0)
            } else {
                errln!("error: session {} is already gone", record.id);
                Ok(1)
            }
        }
        SessionsCmd::Prune {
            older_than,
            source,
            dry_run,
            yes,
        } => prune(
            &store,
            older_than.as_deref(),
            source.as_deref(),
            *dry_run,
            *yes,
        ),
        SessionsCmd::Stats => {
            let stats = store.stats()?;
            outln!("database:        {}", app.home.state_db().display());
            outln!("sessions:        {}", stats.sessions);
            outln!(
                "messages:        {} ({} active)",
                stats.messages,
                stats.active_messages
            );
            outln!("tokens:          {}", stats.total_tokens);
            outln!("size:            {:.1} MB", stats.db_bytes as f64 / 1e6);
            outln!("schema version:  {}", stats.schema_version);
            Ok(0)
        }
        SessionsCmd::Other(words) => Ok(crate::commands::redirect::answer::<SessionsCmd>(
            &["sessions"],
            words,
        )),
        SessionsCmd::Show { session, traces } => {
            let Some(record) = store.find_session(session)? else {
                errln!("error: no session matches `{session}`");
                return Ok(1);
            };
            outln!("{}", session_line(&record));
            outln!(
                "model: {} ({})",
                shown(&record.model),
                shown(&record.provider)
            );
            if let Some(parent) = store.subagent_parent(&record.id)? {
                outln!("subagent of: {parent}");
            }
            for child in store.child_sessions(&record.id)? {
                outln!("subagent: {}", session_line(&child));
            }
            if *traces {
                outln!("{}", turn_traces_text(&store.load_messages(&record.id)?));
                return Ok(0);
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
                    outln!("{}", shown(&text));
                }
                for call in &msg.tool_calls {
                    outln!("→ {}({})", shown(&call.name), shown(&call.arguments));
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
                    shown(&h.session_title.unwrap_or_default()),
                    h.role.as_str(),
                    shown(&h.snippet.replace('\n', " "))
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
                errln!("error: no session matches `{session}`");
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
                    errln!("exported {} to {}", record.id, path.display());
                }
                None => print!("{text}"),
            }
            Ok(0)
        }
    }
}

/// Stored text as the terminal may show it: written by models, tools and chat users, so its
/// control characters (escape sequences, carriage returns) appear in caret notation instead
/// of acting on the terminal; line breaks and tabs kept as such.
fn shown(text: &str) -> String {
    crate::render::style::visible_controls(text, "")
}
