//! Plain records passed in and out of the store.

use chrono::{DateTime, Utc};
use hermes_protocol::{Message, Role};
use serde::{Deserialize, Serialize};

/// What [`crate::SessionStore::create_session`] needs to start a session (FEATURES §10).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewSession {
    /// `YYYYMMDD_HHMMSS_<6 hex>` from [`hermes_protocol::new_session_id`].
    pub id: String,
    /// Where the session came from, as Python Hermes names it: `cli`, `cron`, `api_server`,
    /// or the platform (`telegram`, `discord`, …); `subagent` for a delegated child.
    pub source: String,
    /// Gateway session key (platform + chat + user), if any.
    pub session_key: Option<String>,
    /// Human title, if already known.
    pub title: Option<String>,
    /// Model name as sent to the provider.
    pub model: String,
    /// Provider name (`openrouter`, `anthropic`, `local`, …).
    pub provider: String,
    /// The system prompt, stored byte-for-byte and reused on resume (ARCHITECTURE §2 inv. 1).
    pub system_prompt: String,
    /// The session this one continues (after compression or a fork).
    pub parent_session_id: Option<String>,
    /// Working directory of the session, if it has one.
    pub cwd: Option<String>,
}

/// One row of the `sessions` table, plus a preview of its first user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Session id.
    pub id: String,
    /// Origin (`cli`, `gateway:…`, `cron`, …).
    pub source: String,
    /// Gateway session key.
    pub session_key: Option<String>,
    /// Title, if set.
    pub title: Option<String>,
    /// Model at session start.
    pub model: String,
    /// Provider at session start.
    pub provider: String,
    /// The stored system prompt (byte-stable).
    pub system_prompt: String,
    /// Parent session id.
    pub parent_session_id: Option<String>,
    /// When the session was created (UTC, millisecond precision).
    pub started_at: DateTime<Utc>,
    /// When [`crate::SessionStore::end_session`] was called.
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it ended (`user_exit`, `compressed`, …), free text.
    pub end_reason: Option<String>,
    /// Number of active messages (inactive ones from `/undo` or compression are not counted).
    pub message_count: u64,
    /// Number of tool calls ever persisted in this session (inactive ones included).
    pub tool_call_count: u64,
    /// Sum of input tokens over [`crate::SessionStore::add_usage`] calls.
    pub input_tokens: u64,
    /// Sum of output tokens.
    pub output_tokens: u64,
    /// Sum of prompt-cache read tokens.
    pub cache_read_tokens: u64,
    /// Sum of prompt-cache write tokens.
    pub cache_write_tokens: u64,
    /// Sum of reasoning tokens.
    pub reasoning_tokens: u64,
    /// Total cost in US dollars; `None` when no call reported a cost.
    pub cost_usd: Option<f64>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Bumped each time messages are deactivated (`/undo`, `/retry`, compression).
    pub history_version: u64,
    /// The first user message's text, whitespace collapsed, at most 120 chars.
    pub preview: Option<String>,
}

/// A persisted message with its row id and commit time.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Row id in `messages` (increases with insertion order, never reused).
    pub id: i64,
    /// The message exactly as appended.
    pub message: Message,
    /// When it was committed (UTC, millisecond precision).
    pub timestamp: DateTime<Utc>,
    /// False once deactivated by [`crate::SessionStore::deactivate_messages_from`].
    pub active: bool,
    /// The W3C trace id (32 lowercase hex digits) of the turn that wrote the message, when
    /// trace export was on (`hermes_messages.trace_id`, issue 24 §1); `None` otherwise and for
    /// messages Python Hermes wrote.
    pub trace_id: Option<String>,
}

/// A full-text search request (FEATURES §10 `session_search` discovery).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// User or model text; it goes through [`crate::sanitize_fts_query`] first.
    pub text: String,
    /// Maximum hits (0 means the default of 20).
    pub limit: usize,
    /// Only hits in this session.
    pub session_id: Option<String>,
    /// Only hits from messages with this role.
    pub role: Option<Role>,
}

impl SearchQuery {
    /// A query for `text` with the default limit and no filters.
    pub fn new(text: impl Into<String>) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            limit: 20,
            session_id: None,
            role: None,
        }
    }
}

/// One matching message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// Session of the message.
    pub session_id: String,
    /// Row id of the message (for scroll/read around the hit).
    pub message_id: i64,
    /// Role of the message.
    pub role: Role,
    /// Text around the match with matched terms wrapped in `>>>` and `<<<`.
    pub snippet: String,
    /// Title of the session, if set.
    pub session_title: Option<String>,
    /// Start of the session.
    pub started_at: DateTime<Utc>,
    /// Lower is better: FTS5 `bm25()` for word matches (negative numbers); `0.0` for hits
    /// found only by the CJK substring index.
    pub rank: f64,
    /// False when the message was deactivated (it stays searchable, FEATURES §9).
    pub active: bool,
}

/// Whole-store counts from [`crate::SessionStore::stats`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    /// Number of sessions.
    pub sessions: u64,
    /// Number of messages (active and inactive).
    pub messages: u64,
    /// Number of active messages.
    pub active_messages: u64,
    /// Sum of input + output tokens over all sessions (subagent sessions left out: their
    /// tokens are part of their parent's totals).
    pub total_tokens: u64,
    /// Database size in bytes (`page_count × page_size`, WAL not included).
    pub db_bytes: u64,
    /// The Python schema version of the file (`schema_version.version`).
    pub schema_version: i64,
}

/// Usage of one `(model, provider)` pair within a session ([`crate::SessionStore::add_usage`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelUsage {
    /// Model name.
    pub model: String,
    /// Provider name.
    pub provider: String,
    /// Number of `add_usage` calls (model calls) summed into this row.
    pub calls: u64,
    /// Token sums.
    pub usage: hermes_protocol::Usage,
    /// Cost sum in US dollars; `None` when no call reported a cost.
    pub cost_usd: Option<f64>,
}
