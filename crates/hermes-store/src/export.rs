//! Session export (FEATURES §10: Markdown and JSON) and whole-store statistics.

use std::fmt::Write as _;

use hermes_protocol::{ContentPart, Role};
use serde::Serialize;

use crate::error::StoreError;
use crate::handle::SessionStore;
use crate::types::{SessionRecord, StoredMessage};

/// Export format for [`SessionStore::export_session`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A readable transcript: title, metadata, then one `## role` section per message.
    Markdown,
    /// `{"session": SessionRecord, "messages": [{"id", "timestamp", "active", "trace_id",
    /// "message"}]}`, pretty-printed (`trace_id` only on messages stored with one).
    Json,
}

#[derive(Serialize)]
struct JsonMessage<'a> {
    id: i64,
    timestamp: String,
    active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
    message: &'a hermes_protocol::Message,
}

#[derive(Serialize)]
struct JsonExport<'a> {
    session: &'a SessionRecord,
    messages: Vec<JsonMessage<'a>>,
}

impl SessionStore {
    /// Renders a session (all messages, inactive ones marked) as Markdown or JSON.
    ///
    /// Errors: [`StoreError::SessionNotFound`] for an unknown id.
    pub fn export_session(&self, id: &str, format: Format) -> Result<String, StoreError> {
        let session = self
            .get_session(id)?
            .ok_or_else(|| StoreError::SessionNotFound { id: id.to_string() })?;
        let messages = self.load_all_messages(id)?;
        match format {
            Format::Json => {
                let export = JsonExport {
                    session: &session,
                    messages: messages
                        .iter()
                        .map(|m| JsonMessage {
                            id: m.id,
                            timestamp: m.timestamp.to_rfc3339(),
                            active: m.active,
                            trace_id: m.trace_id.as_deref(),
                            message: &m.message,
                        })
                        .collect(),
                };
                serde_json::to_string_pretty(&export).map_err(|source| StoreError::Json {
                    what: "session export",
                    source,
                })
            }
            Format::Markdown => Ok(markdown(&session, &messages)),
        }
    }
}

fn markdown(session: &SessionRecord, messages: &[StoredMessage]) -> String {
    let mut out = String::new();
    let title = session.title.as_deref().unwrap_or(&session.id);
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "- session: `{}`", session.id);
    let _ = writeln!(out, "- source: {}", session.source);
    let _ = writeln!(out, "- model: {} ({})", session.model, session.provider);
    let _ = writeln!(out, "- started: {}", session.started_at.to_rfc3339());
    if let Some(ended) = session.ended_at {
        let reason = session.end_reason.as_deref().unwrap_or("");
        let _ = writeln!(out, "- ended: {} {reason}", ended.to_rfc3339());
    }
    let mut last_trace: Option<&str> = None;
    for stored in messages {
        let m = &stored.message;
        let inactive = if stored.active { "" } else { " (inactive)" };
        let heading = match (m.role, &m.tool_name) {
            (Role::Tool, Some(name)) => format!("tool `{name}`"),
            (role, _) => role.as_str().to_string(),
        };
        let _ = writeln!(out, "\n## {heading}{inactive}\n");
        // The trace id (issue 24) under the first message of each traced turn: the
        // messages after it with the same id belong to the same trace.
        if let Some(trace) = stored.trace_id.as_deref()
            && last_trace != Some(trace)
        {
            let _ = writeln!(out, "*trace `{trace}`*\n");
        }
        last_trace = stored.trace_id.as_deref();
        if let Some(reasoning) = &m.reasoning {
            for line in reasoning.text.lines() {
                let _ = writeln!(out, "> {line}");
            }
            out.push('\n');
        }
        for part in &m.content {
            match part {
                ContentPart::Text { text } => {
                    let _ = writeln!(out, "{text}");
                }
                ContentPart::Image { url } => {
                    let shown = if url.starts_with("data:") {
                        "(inline image)"
                    } else {
                        url
                    };
                    let _ = writeln!(out, "![image]({shown})");
                }
            }
        }
        for call in &m.tool_calls {
            let _ = writeln!(
                out,
                "\n`{}` ({})\n```json\n{}\n```",
                call.name, call.id, call.arguments
            );
        }
    }
    out
}
