//! Session rows and token totals (`hermes sessions list`, `/sessions`, `/usage`, the summary
//! line after `chat -q`).

use anyhow::Result;
use hermes_store::{SessionRecord, SessionStore};

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

/// `/usage` and the summary after `chat -q`: token totals of a session as stored.
pub fn usage_text(store: &SessionStore, session_id: &str) -> String {
    match store.get_session(session_id) {
        Ok(Some(s)) => format!(
            "session {}: {} input, {} output, {} cache read, {} cache write, {} reasoning tokens; {} messages; cost {}",
            s.id,
            s.input_tokens,
            s.output_tokens,
            s.cache_read_tokens,
            s.cache_write_tokens,
            s.reasoning_tokens,
            s.message_count,
            hermes_llm::pricing::format_cost(s.cost_usd)
        ),
        Ok(None) => format!("session {session_id}: no usage recorded yet"),
        Err(e) => format!("could not read usage: {e}"),
    }
}
