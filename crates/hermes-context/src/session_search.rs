//! The `session_search` tool (FEATURES §10): discovery, scroll, read and browse over the
//! session store. Search goes through `hermes-store` (FTS5 words plus the trigram index for
//! CJK); hits of one conversation lineage (a session and the sessions continued from it) are
//! reported once, under the best-ranked hit. A `delegate_task` subagent's session belongs to
//! its parent's lineage and is marked `subagent_of` where it is shown; browse lists
//! conversations only.

use std::collections::HashSet;
use std::sync::Arc;

use hermes_protocol::ToolSpec;
use hermes_store::{SearchQuery, SessionStore, StoredMessage};
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::fragments::Fragment;

/// Sessions returned by one discovery search.
pub const SEARCH_MAX_SESSIONS: usize = 5;
/// Messages shown on each side of a hit in discovery results.
pub const HIT_CONTEXT_MESSAGES: usize = 2;
/// Default and maximum `window` for scroll.
pub const SCROLL_DEFAULT_WINDOW: usize = 5;
/// Largest scroll window.
pub const SCROLL_MAX_WINDOW: usize = 20;
/// Messages shown from each end by `read` when a session is longer than twice this.
pub const READ_HEAD_TAIL: usize = 15;
/// Chars of one message shown in results; longer ones are cut with "…".
pub const MESSAGE_PREVIEW_CHARS: usize = 600;
/// Sessions listed by browse by default.
pub const BROWSE_DEFAULT: usize = 10;
/// Parent links followed to find a lineage's root.
const MAX_LINEAGE_HOPS: usize = 16;

/// `session_search` over a shared [`SessionStore`]. Toolset `session_search`.
#[derive(Clone)]
pub struct SessionSearchTool {
    store: Arc<SessionStore>,
}

impl std::fmt::Debug for SessionSearchTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSearchTool")
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn render_message(m: &StoredMessage) -> Value {
    let mut text = m.message.text();
    if text.is_empty() && !m.message.tool_calls.is_empty() {
        let names: Vec<&str> = m
            .message
            .tool_calls
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        text = format!("[called {}]", names.join(", "));
    }
    json!({
        "id": m.id,
        "role": m.message.role.as_str(),
        "time": m.timestamp.format("%Y-%m-%d %H:%M").to_string(),
        "text": cut(&text, MESSAGE_PREVIEW_CHARS),
    })
}

impl SessionSearchTool {
    /// A tool over `store`.
    pub fn new(store: Arc<SessionStore>) -> SessionSearchTool {
        SessionSearchTool { store }
    }

    fn lineage_root(&self, id: &str) -> String {
        let mut current = id.to_string();
        for _ in 0..MAX_LINEAGE_HOPS {
            match self.store.get_session(&current) {
                Ok(Some(s)) => match s.parent_session_id {
                    Some(p) => current = p,
                    None => break,
                },
                _ => break,
            }
        }
        current
    }

    /// Adds `"subagent_of": <parent id>` to `result` when `session_id` is the transcript of
    /// a `delegate_task` subagent, so the model does not take it for a conversation with
    /// the user.
    fn mark_subagent(&self, session_id: &str, result: &mut Value) {
        if let (Ok(Some(parent)), Some(obj)) = (
            self.store.subagent_parent(session_id),
            result.as_object_mut(),
        ) {
            obj.insert("subagent_of".to_string(), Value::String(parent));
        }
    }

    fn around(
        &self,
        session_id: &str,
        message_id: i64,
        window: usize,
    ) -> Result<Vec<Value>, String> {
        let all = self
            .store
            .load_all_messages(session_id)
            .map_err(|e| e.to_string())?;
        let Some(pos) = all.iter().position(|m| m.id == message_id) else {
            return Err(format!(
                "message {message_id} is not in session {session_id}"
            ));
        };
        let start = pos.saturating_sub(window);
        let end = (pos + window + 1).min(all.len());
        Ok(all[start..end].iter().map(render_message).collect())
    }

    /// Discovery: the best sessions for `query` (at most `limit`, one per lineage).
    ///
    /// # Errors
    /// Database failures, as text.
    pub fn search(&self, query: &str, limit: usize) -> Result<Value, String> {
        let mut q = SearchQuery::new(query);
        q.limit = 50;
        let hits = self.store.search(&q).map_err(|e| e.to_string())?;
        let mut seen = HashSet::new();
        let mut results = Vec::new();
        for hit in hits {
            if results.len() >= limit {
                break;
            }
            if !seen.insert(self.lineage_root(&hit.session_id)) {
                continue;
            }
            let context = self
                .around(&hit.session_id, hit.message_id, HIT_CONTEXT_MESSAGES)
                .unwrap_or_default();
            let mut result = json!({
                "session_id": hit.session_id,
                "title": hit.session_title,
                "date": hit.started_at.format("%Y-%m-%d").to_string(),
                "message_id": hit.message_id,
                "snippet": hit.snippet,
                "messages": context,
            });
            self.mark_subagent(&hit.session_id, &mut result);
            results.push(result);
        }
        Ok(json!({"query": query, "count": results.len(), "results": results}))
    }

    /// Scroll: `window` messages on each side of `message_id` (capped at
    /// [`SCROLL_MAX_WINDOW`]), inactive (compressed) messages included.
    ///
    /// # Errors
    /// Unknown message or database failures, as text.
    pub fn scroll(
        &self,
        session_id: &str,
        message_id: i64,
        window: usize,
    ) -> Result<Value, String> {
        let msgs = self.around(session_id, message_id, window.min(SCROLL_MAX_WINDOW))?;
        Ok(json!({"session_id": session_id, "messages": msgs}))
    }

    /// Read: a whole session, or its first and last [`READ_HEAD_TAIL`] messages when longer.
    ///
    /// # Errors
    /// Unknown session or database failures, as text.
    pub fn read(&self, session_id: &str) -> Result<Value, String> {
        let session = self
            .store
            .find_session(session_id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no session {session_id:?}"))?;
        let all = self
            .store
            .load_all_messages(&session.id)
            .map_err(|e| e.to_string())?;
        let (shown, omitted): (Vec<Value>, usize) = if all.len() > 2 * READ_HEAD_TAIL {
            let head = all[..READ_HEAD_TAIL].iter();
            let tail = all[all.len() - READ_HEAD_TAIL..].iter();
            (
                head.chain(tail).map(render_message).collect(),
                all.len() - 2 * READ_HEAD_TAIL,
            )
        } else {
            (all.iter().map(render_message).collect(), 0)
        };
        let mut result = json!({
            "session_id": session.id,
            "title": session.title,
            "date": session.started_at.format("%Y-%m-%d").to_string(),
            "message_count": all.len(),
            "omitted_middle_messages": omitted,
            "messages": shown,
        });
        self.mark_subagent(&session.id, &mut result);
        Ok(result)
    }

    /// Browse: the `limit` most recent sessions with title, date and preview.
    ///
    /// # Errors
    /// Database failures, as text.
    pub fn browse(&self, limit: usize) -> Result<Value, String> {
        let sessions = self
            .store
            .list_sessions(limit, 0)
            .map_err(|e| e.to_string())?;
        let rows: Vec<Value> = sessions
            .iter()
            .map(|s| {
                json!({
                    "session_id": s.id,
                    "title": s.title,
                    "date": s.started_at.format("%Y-%m-%d").to_string(),
                    "messages": s.message_count,
                    "preview": s.preview.as_deref().map(|p| cut(p, 200)),
                })
            })
            .collect();
        Ok(json!({"count": rows.len(), "sessions": rows}))
    }

    /// Runs the call described by `args` (blocking).
    ///
    /// # Errors
    /// Text for the model.
    pub fn run(&self, args: &Value) -> Result<Value, String> {
        let s = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .filter(|v| !v.trim().is_empty())
        };
        let n = |k: &str| args.get(k).and_then(Value::as_u64).map(|v| v as usize);
        match s("mode").unwrap_or("search") {
            "search" => {
                let q = s("query").ok_or("`query` is required for search")?;
                self.search(q, n("limit").unwrap_or(SEARCH_MAX_SESSIONS).clamp(1, 20))
            }
            "scroll" => {
                let id = s("session_id").ok_or("`session_id` is required for scroll")?;
                let mid = args
                    .get("message_id")
                    .and_then(Value::as_i64)
                    .ok_or("`message_id` is required for scroll")?;
                self.scroll(id, mid, n("window").unwrap_or(SCROLL_DEFAULT_WINDOW))
            }
            "read" => self.read(s("session_id").ok_or("`session_id` is required for read")?),
            "browse" => self.browse(n("limit").unwrap_or(BROWSE_DEFAULT).clamp(1, 50)),
            other => Err(format!(
                "unknown mode `{other}`; use search, scroll, read or browse"
            )),
        }
    }
}

#[async_trait::async_trait]
impl Tool for SessionSearchTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "session_search".to_string(),
            description: Fragment::ToolSessionSearch.raw().trim().to_string(),
            parameters: json!({"type": "object", "properties": {
                "mode": {"type": "string", "enum": ["search", "scroll", "read", "browse"], "description": "Default search."},
                "query": {"type": "string", "description": "Words or a \"quoted phrase\" to find (search)."},
                "session_id": {"type": "string", "description": "Session id (scroll, read)."},
                "message_id": {"type": "integer", "description": "Message id from a search result (scroll)."},
                "window": {"type": "integer", "minimum": 1, "description": "Messages on each side (scroll, default 5)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Sessions to return (search default 5, browse default 10)."}
            }}),
        }
    }
    fn toolset(&self) -> &'static str {
        "session_search"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let me = self.clone();
        match tokio::task::spawn_blocking(move || me.run(&args)).await {
            Ok(Ok(v)) => ToolOutput::ok(v.to_string()),
            Ok(Err(e)) => ToolOutput::error(e),
            Err(e) => ToolOutput::error(format!("session_search did not finish: {e}")),
        }
    }
}
