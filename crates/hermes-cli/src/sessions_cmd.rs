//! `hermes sessions {list,show,search,export}`.

use anyhow::{Context, Result};
use hermes_protocol::Role;
use hermes_store::{Format as StoreFormat, SearchQuery, SessionRecord, SessionStore};

use crate::app::App;
use crate::args::{ExportFormat, SessionsCmd};

/// One line describing a session for lists.
pub fn session_line(s: &SessionRecord) -> String {
    let title = s
        .title
        .clone()
        .or_else(|| s.preview.clone())
        .unwrap_or_else(|| "(untitled)".to_string());
    let title: String = title.chars().take(60).collect();
    format!(
        "{}  {}  {:>4} msgs  {}",
        s.id,
        s.started_at.format("%Y-%m-%d %H:%M"),
        s.message_count,
        title.replace('\n', " ")
    )
}

/// The newest `limit` sessions as text lines.
pub fn recent_sessions_text(store: &SessionStore, limit: usize) -> Result<String> {
    let sessions = store.list_sessions(limit, 0)?;
    if sessions.is_empty() {
        return Ok("no sessions yet".to_string());
    }
    Ok(sessions
        .iter()
        .map(session_line)
        .collect::<Vec<_>>()
        .join("\n"))
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
