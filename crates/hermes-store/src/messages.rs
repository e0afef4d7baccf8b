//! Messages: append (one committed transaction per message, ARCHITECTURE §2 invariant 3),
//! load, deactivate (`/undo`, `/retry`, compression) and usage accounting.

use chrono::Utc;
use hermes_protocol::{ContentPart, FinishReason, Message, Reasoning, Role, ToolCall, Usage};
use rusqlite::{Connection, Row};

use crate::error::StoreError;
use crate::store::{SessionStore, from_ts, to_ts};
use crate::types::{ModelUsage, StoredMessage};

const MESSAGE_COLUMNS: &str = "id, role, content, content_json, tool_calls, tool_call_id, \
     tool_name, reasoning, finish_reason, timestamp, active";

/// The columns a message is stored as.
pub(crate) struct Encoded {
    content: String,
    content_json: Option<String>,
    tool_calls: Option<String>,
    reasoning: Option<String>,
}

pub(crate) fn encode(message: &Message) -> Result<Encoded, StoreError> {
    let only_one_text = matches!(message.content.as_slice(), [] | [ContentPart::Text { .. }]);
    let content_json = if only_one_text {
        None
    } else {
        Some(
            serde_json::to_string(&message.content).map_err(|source| StoreError::Json {
                what: "message content",
                source,
            })?,
        )
    };
    let tool_calls = if message.tool_calls.is_empty() {
        None
    } else {
        Some(
            serde_json::to_string(&message.tool_calls).map_err(|source| StoreError::Json {
                what: "tool calls",
                source,
            })?,
        )
    };
    let reasoning = message
        .reasoning
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|source| StoreError::Json {
            what: "reasoning",
            source,
        })?;
    Ok(Encoded {
        content: message.text(),
        content_json,
        tool_calls,
        reasoning,
    })
}

/// Exact inverse of [`FinishReason::as_str`] (`from_wire` would fold provider aliases).
fn finish_reason_from_str(s: &str) -> FinishReason {
    match s {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// A message row before JSON columns are decoded.
struct RawRow {
    id: i64,
    role: String,
    content: String,
    content_json: Option<String>,
    tool_calls: Option<String>,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    reasoning: Option<String>,
    finish_reason: Option<String>,
    timestamp: f64,
    active: bool,
}

fn raw_from_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: row.get(0)?,
        role: row.get(1)?,
        content: row.get(2)?,
        content_json: row.get(3)?,
        tool_calls: row.get(4)?,
        tool_call_id: row.get(5)?,
        tool_name: row.get(6)?,
        reasoning: row.get(7)?,
        finish_reason: row.get(8)?,
        timestamp: row.get(9)?,
        active: row.get::<_, i64>(10)? != 0,
    })
}

/// Inserts one message row (no session counters) and returns its id.
pub(crate) fn insert_row(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    message: &Message,
    enc: &Encoded,
    now: f64,
    token_count: Option<i64>,
) -> Result<i64, StoreError> {
    tx.prepare_cached(
        "INSERT INTO messages (session_id, role, content, content_json, tool_calls, \
         tool_call_id, tool_name, reasoning, finish_reason, timestamp, token_count) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(rusqlite::params![
        session_id,
        message.role.as_str(),
        enc.content,
        enc.content_json,
        enc.tool_calls,
        message.tool_call_id,
        message.tool_name,
        enc.reasoning,
        message.finish_reason.as_ref().map(FinishReason::as_str),
        now,
        token_count
    ])?;
    Ok(tx.last_insert_rowid())
}

/// Appends one message row and updates the session counters (the body of
/// [`SessionStore::append_message`], shared with the version-checked append).
pub(crate) fn append_in(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    message: &Message,
    enc: &Encoded,
    now: f64,
    token_count: Option<i64>,
    calls: i64,
) -> Result<i64, StoreError> {
    let n = tx
        .prepare_cached(
            "UPDATE sessions SET message_count = message_count + 1, \
             tool_call_count = tool_call_count + ?2 WHERE id = ?1",
        )?
        .execute(rusqlite::params![session_id, calls])?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    insert_row(tx, session_id, message, enc, now, token_count)
}

/// Marks `message_id` and later messages inactive, fixes `message_count` and bumps
/// `history_version` when anything changed (the body of
/// [`SessionStore::deactivate_messages_from`]). Returns how many messages changed.
pub(crate) fn deactivate_in(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    message_id: i64,
) -> Result<usize, StoreError> {
    let changed = tx.execute(
        "UPDATE messages SET active = 0 WHERE session_id = ?1 AND id >= ?2 AND active = 1",
        rusqlite::params![session_id, message_id],
    )?;
    let n = tx.execute(
        "UPDATE sessions SET message_count = max(message_count - ?2, 0), \
         history_version = history_version + (?2 > 0) WHERE id = ?1",
        rusqlite::params![session_id, i64::try_from(changed).unwrap_or(i64::MAX)],
    )?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    Ok(changed)
}

/// One model call's token usage and cost, as [`SessionStore::add_usage`] records it; also
/// recorded in the same commit as the reply it produced by
/// [`SessionStore::append_message_with_usage_checked`].
#[derive(Debug, Clone, Copy)]
pub struct UsageRecord<'a> {
    /// Model name the call went to.
    pub model: &'a str,
    /// Provider name the call went to.
    pub provider: &'a str,
    /// Tokens of the call.
    pub usage: &'a Usage,
    /// Cost in US dollars, when the price is known.
    pub cost_usd: Option<f64>,
}

/// Adds `record` to the session totals and to its per-model row (the body of
/// [`SessionStore::add_usage`], shared with the append that records usage with its reply).
pub(crate) fn add_usage_in(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    record: &UsageRecord<'_>,
) -> Result<(), StoreError> {
    let t = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let usage = record.usage;
    let vals = [
        t(usage.input_tokens),
        t(usage.output_tokens),
        t(usage.cache_read_tokens),
        t(usage.cache_write_tokens),
        t(usage.reasoning_tokens),
    ];
    let cost_usd = record.cost_usd;
    let n = tx
        .prepare_cached(
            "UPDATE sessions SET input_tokens = input_tokens + ?2, \
             output_tokens = output_tokens + ?3, cache_read_tokens = cache_read_tokens + ?4, \
             cache_write_tokens = cache_write_tokens + ?5, \
             reasoning_tokens = reasoning_tokens + ?6, \
             cost_usd = CASE WHEN ?7 IS NULL THEN cost_usd ELSE coalesce(cost_usd, 0) + ?7 END \
             WHERE id = ?1",
        )?
        .execute(rusqlite::params![
            session_id, vals[0], vals[1], vals[2], vals[3], vals[4], cost_usd
        ])?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    tx.prepare_cached(
        "INSERT INTO session_usage (session_id, model, provider, calls, input_tokens, \
         output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd) \
         VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (session_id, model, provider) DO UPDATE SET calls = calls + 1, \
         input_tokens = input_tokens + excluded.input_tokens, \
         output_tokens = output_tokens + excluded.output_tokens, \
         cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, \
         cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, \
         reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens, \
         cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN cost_usd \
         ELSE coalesce(cost_usd, 0) + excluded.cost_usd END",
    )?
    .execute(rusqlite::params![
        session_id,
        record.model,
        record.provider,
        vals[0],
        vals[1],
        vals[2],
        vals[3],
        vals[4],
        cost_usd
    ])?;
    Ok(())
}

impl SessionStore {
    /// Appends `message` to session `session_id` in its own committed transaction and
    /// returns the new row id. Updates the session's `message_count` and `tool_call_count`.
    /// `token_count` is the message's size in tokens if the caller knows it.
    ///
    /// Errors: [`StoreError::SessionNotFound`] when the session does not exist,
    /// [`StoreError::Busy`] when the lock stayed taken for the whole retry budget.
    pub fn append_message(
        &self,
        session_id: &str,
        message: &Message,
        token_count: Option<u64>,
    ) -> Result<i64, StoreError> {
        let enc = encode(message)?;
        let now = to_ts(Utc::now());
        let token_count = token_count.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
        let calls = i64::try_from(message.tool_calls.len()).unwrap_or(i64::MAX);
        self.write("append_message", |tx| {
            append_in(tx, session_id, message, &enc, now, token_count, calls)
        })
    }

    /// The active messages of a session in insertion order (what a resume replays).
    pub fn load_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.load("load_messages", session_id, true)
    }

    /// All messages of a session in insertion order, including deactivated ones.
    pub fn load_all_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.load("load_all_messages", session_id, false)
    }

    fn load(
        &self,
        op: &'static str,
        session_id: &str,
        active_only: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let raws = {
            let conn = self.lock();
            load_raw(&conn, session_id, active_only).map_err(self.sql_err(op))?
        };
        raws.into_iter().map(|r| self.decode(r)).collect()
    }

    fn decode(&self, raw: RawRow) -> Result<StoredMessage, StoreError> {
        let corrupt = |what: &'static str, detail: String| StoreError::Corrupt {
            db: self.db().to_string(),
            what,
            message_id: raw.id,
            detail,
        };
        let role = Role::parse(&raw.role)
            .ok_or_else(|| corrupt("role", format!("unknown role `{}`", raw.role)))?;
        let content = match &raw.content_json {
            Some(json) => serde_json::from_str::<Vec<ContentPart>>(json)
                .map_err(|e| corrupt("content_json", e.to_string()))?,
            None if raw.content.is_empty() => Vec::new(),
            None => vec![ContentPart::Text {
                text: raw.content.clone(),
            }],
        };
        let tool_calls = match &raw.tool_calls {
            Some(json) => serde_json::from_str::<Vec<ToolCall>>(json)
                .map_err(|e| corrupt("tool_calls", e.to_string()))?,
            None => Vec::new(),
        };
        let reasoning = raw
            .reasoning
            .as_deref()
            .map(serde_json::from_str::<Reasoning>)
            .transpose()
            .map_err(|e| corrupt("reasoning", e.to_string()))?;
        Ok(StoredMessage {
            id: raw.id,
            message: Message {
                role,
                content,
                tool_calls,
                tool_call_id: raw.tool_call_id,
                tool_name: raw.tool_name,
                reasoning,
                finish_reason: raw.finish_reason.as_deref().map(finish_reason_from_str),
            },
            timestamp: from_ts(raw.timestamp),
            active: raw.active,
        })
    }

    /// Marks message `message_id` and every later message of the session inactive (for
    /// `/undo`, `/retry` and compression), decreases `message_count` accordingly and bumps
    /// `history_version`. Inactive messages stay in the store and stay searchable.
    /// Returns how many messages changed (0 when all were inactive already).
    ///
    /// Errors: [`StoreError::SessionNotFound`] for an unknown session.
    pub fn deactivate_messages_from(
        &self,
        session_id: &str,
        message_id: i64,
    ) -> Result<usize, StoreError> {
        self.write("deactivate_messages_from", |tx| {
            deactivate_in(tx, session_id, message_id)
        })
    }

    /// Adds one model call's usage (tokens) and cost (US dollars, if known) to the session
    /// totals and to the per-model row `(session_id, model, provider)`.
    ///
    /// Errors: [`StoreError::SessionNotFound`] for an unknown session.
    pub fn add_usage(
        &self,
        session_id: &str,
        model: &str,
        provider: &str,
        usage: &Usage,
        cost_usd: Option<f64>,
    ) -> Result<(), StoreError> {
        let record = UsageRecord {
            model,
            provider,
            usage,
            cost_usd,
        };
        self.write("add_usage", |tx| add_usage_in(tx, session_id, &record))
    }

    /// Per-model usage rows of a session, ordered by model then provider.
    pub fn usage_by_model(&self, session_id: &str) -> Result<Vec<ModelUsage>, StoreError> {
        let conn = self.lock();
        conn.prepare(
            "SELECT model, provider, calls, input_tokens, output_tokens, cache_read_tokens, \
             cache_write_tokens, reasoning_tokens, cost_usd FROM session_usage \
             WHERE session_id = ?1 ORDER BY model, provider",
        )
        .and_then(|mut st| {
            st.query_map([session_id], |r| {
                let u =
                    |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)?.max(0) as u64) };
                Ok(ModelUsage {
                    model: r.get(0)?,
                    provider: r.get(1)?,
                    calls: u(2)?,
                    usage: Usage {
                        input_tokens: u(3)?,
                        output_tokens: u(4)?,
                        cache_read_tokens: u(5)?,
                        cache_write_tokens: u(6)?,
                        reasoning_tokens: u(7)?,
                    },
                    cost_usd: r.get(8)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(self.sql_err("usage_by_model"))
    }
}

fn load_raw(
    conn: &Connection,
    session_id: &str,
    active_only: bool,
) -> rusqlite::Result<Vec<RawRow>> {
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 {} ORDER BY id",
        if active_only { "AND active = 1" } else { "" }
    );
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map([session_id], raw_from_row)?;
    rows.collect()
}
