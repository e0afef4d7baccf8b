//! Messages: append (one committed transaction per message, ARCHITECTURE §2 invariant 3),
//! load, deactivate (`/undo`, `/retry`, compression) and usage accounting.

use chrono::Utc;
use hermes_protocol::{ContentPart, FinishReason, Message, Reasoning, Role, ToolCall, Usage};
use rusqlite::{Connection, Row};
use serde_json::{Value, json};

use crate::error::StoreError;
use crate::store::{SqliteStore, from_ts, to_ts};
use crate::types::{ModelUsage, StoredMessage};

const MESSAGE_COLUMNS: &str = "m.id, m.role, m.content, h.content_parts, m.tool_calls, \
     m.tool_call_id, m.tool_name, m.reasoning, m.reasoning_content, h.reasoning_signature, \
     m.finish_reason, m.timestamp, m.active, h.trace_id";

/// Python's marker for a `content` cell holding JSON (a list of parts) instead of text
/// (`SessionDB._CONTENT_JSON_PREFIX` in `hermes_state.py`).
const CONTENT_JSON_PREFIX: &str = "\u{0}json:";

/// How an image part reads in `messages.content` (what Python shows and searches); the image
/// itself is kept in `hermes_messages.content_parts`.
const IMAGE_PLACEHOLDER: &str = "[image]";

/// The columns a message is stored as: Python's `messages` columns, plus the `hermes_messages`
/// row when the content, the reasoning signature or the trace id does not fit them.
pub(crate) struct Encoded {
    /// `messages.content`: the text (`NULL` when there is none).
    pub(crate) content: Option<String>,
    /// `messages.tool_calls`: OpenAI-shaped JSON, as Python's agent stores it.
    pub(crate) tool_calls: Option<String>,
    /// `messages.reasoning`: the reasoning text.
    pub(crate) reasoning: Option<String>,
    /// `hermes_messages.content_parts`: the exact parts when `content` is not all of them.
    pub(crate) parts: Option<String>,
    /// `hermes_messages.reasoning_signature`.
    pub(crate) signature: Option<String>,
    /// `hermes_messages.trace_id`: the trace id of the turn that wrote the message (not part
    /// of [`Message`]: set by the traced writes after [`encode`]).
    pub(crate) trace_id: Option<String>,
}

impl Encoded {
    /// The same columns with `trace_id` as the message's trace id.
    pub(crate) fn traced(mut self, trace_id: Option<&str>) -> Encoded {
        self.trace_id = trace_id.map(str::to_string);
        self
    }
}

fn json_err(what: &'static str) -> impl Fn(serde_json::Error) -> StoreError {
    move |source| StoreError::Json { what, source }
}

/// Maps a message to Python's columns (see [`Encoded`]). The content of one non-empty text
/// part is `content` itself; any other content is written to `content` as its text (text
/// parts joined by newlines, each image as `[image]`, as Python's agent stores images) and
/// kept exactly in `hermes_messages`.
pub(crate) fn encode(message: &Message) -> Result<Encoded, StoreError> {
    let (content, parts) = match message.content.as_slice() {
        [] => (None, None),
        [ContentPart::Text { text }] if !text.is_empty() => (Some(text.clone()), None),
        parts => {
            let shown: Vec<&str> = parts
                .iter()
                .map(|p| match p {
                    ContentPart::Text { text } => text.as_str(),
                    ContentPart::Image { .. } => IMAGE_PLACEHOLDER,
                })
                .collect();
            let exact = serde_json::to_string(parts).map_err(json_err("message content"))?;
            (Some(shown.join("\n")), Some(exact))
        }
    };
    let tool_calls = if message.tool_calls.is_empty() {
        None
    } else {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })
            })
            .collect();
        Some(serde_json::to_string(&calls).map_err(json_err("tool calls"))?)
    };
    Ok(Encoded {
        content,
        tool_calls,
        reasoning: message.reasoning.as_ref().map(|r| r.text.clone()),
        parts,
        signature: message.reasoning.as_ref().and_then(|r| r.signature.clone()),
        trace_id: None,
    })
}

/// [`encode`] of each of `messages`, with `trace_ids[i]` as the trace id of `messages[i]`
/// (none past the end of `trace_ids`).
pub(crate) fn encode_traced(
    messages: &[Message],
    trace_ids: &[Option<String>],
) -> Result<Vec<Encoded>, StoreError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| Ok(encode(m)?.traced(trace_ids.get(i).and_then(|t| t.as_deref()))))
        .collect()
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

/// A message row before its columns are decoded.
pub(crate) struct RawRow {
    pub(crate) id: i64,
    pub(crate) role: String,
    pub(crate) content: Option<String>,
    pub(crate) parts: Option<String>,
    pub(crate) tool_calls: Option<String>,
    pub(crate) tool_call_id: Option<String>,
    pub(crate) tool_name: Option<String>,
    pub(crate) reasoning: Option<String>,
    pub(crate) reasoning_content: Option<String>,
    pub(crate) signature: Option<String>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) timestamp: f64,
    pub(crate) active: bool,
    pub(crate) trace_id: Option<String>,
}

fn raw_from_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: row.get(0)?,
        role: row.get(1)?,
        content: row.get(2)?,
        parts: row.get(3)?,
        tool_calls: row.get(4)?,
        tool_call_id: row.get(5)?,
        tool_name: row.get(6)?,
        reasoning: row.get(7)?,
        reasoning_content: row.get(8)?,
        signature: row.get(9)?,
        finish_reason: row.get(10)?,
        timestamp: row.get::<_, Option<f64>>(11)?.unwrap_or_default(),
        active: row.get::<_, Option<i64>>(12)?.unwrap_or(1) != 0,
        trace_id: row.get(13)?,
    })
}

/// One content part as Python (OpenAI) writes it: `{"type": "text", "text"}`,
/// `{"type": "image_url", "image_url": {"url"}}` (or the URL as a string), `input_image`;
/// a bare string is text. Other parts (audio, files) are kept as their JSON text.
fn python_part(v: &Value) -> ContentPart {
    let url = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(o)) => o.get("url").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    match v {
        Value::String(s) => ContentPart::Text { text: s.clone() },
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("text" | "input_text" | "output_text") => ContentPart::Text {
                text: o
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            },
            Some("image_url" | "input_image") => match url(o.get("image_url")) {
                Some(url) => ContentPart::Image { url },
                None => ContentPart::Text {
                    text: v.to_string(),
                },
            },
            _ => ContentPart::Text {
                text: v.to_string(),
            },
        },
        other => ContentPart::Text {
            text: other.to_string(),
        },
    }
}

/// The content of a row: the exact parts hermes kept, else Python's `content` cell (text, or
/// `\0json:` and a list of parts).
fn decode_content(raw: &RawRow) -> Result<Vec<ContentPart>, (&'static str, String)> {
    if let Some(parts) = &raw.parts {
        return serde_json::from_str(parts).map_err(|e| ("content_parts", e.to_string()));
    }
    let Some(content) = raw.content.as_deref() else {
        return Ok(Vec::new());
    };
    if let Some(json) = content.strip_prefix(CONTENT_JSON_PREFIX) {
        let value: Value = serde_json::from_str(json).map_err(|e| ("content", e.to_string()))?;
        return Ok(match &value {
            Value::Array(items) => items.iter().map(python_part).collect(),
            one => vec![python_part(one)],
        });
    }
    if content.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![ContentPart::Text {
        text: content.to_string(),
    }])
}

/// Tool calls as Python's agent stores them (`[{"id", "type", "function": {"name",
/// "arguments"}}]`, sometimes also `call_id`), or the flat `[{"name", "arguments"}]` of its
/// older writers; arguments that are JSON values rather than text are kept as their JSON text.
fn decode_tool_calls(json: &str) -> Result<Vec<ToolCall>, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let items = match value {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        one => vec![one],
    };
    items
        .iter()
        .map(|item| {
            let Value::Object(o) = item else {
                return Err(format!("a tool call is not an object: {item}"));
            };
            let function = o.get("function").and_then(Value::as_object).unwrap_or(o);
            let text = |v: Option<&Value>| match v {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            let id = match o.get("id").or_else(|| o.get("call_id")) {
                Some(Value::String(s)) => s.clone(),
                _ => text(o.get("call_id")),
            };
            Ok(ToolCall::new(
                id,
                text(function.get("name")),
                text(function.get("arguments")),
            ))
        })
        .collect()
}

/// Inserts one message row (no session counters), and its `hermes_messages` row when it has
/// one, and returns its id. `id` is given only when migrating (the old row id is kept).
pub(crate) fn insert_row(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    message: &Message,
    enc: &Encoded,
    now: f64,
    token_count: Option<i64>,
) -> Result<i64, StoreError> {
    insert_row_with_id(
        tx,
        None,
        session_id,
        message.role.as_str(),
        message,
        enc,
        now,
        token_count,
        true,
    )
}

/// [`insert_row`] with an explicit row id, role text and active flag (the legacy migration).
#[allow(clippy::too_many_arguments)]
pub(crate) fn insert_row_with_id(
    tx: &rusqlite::Transaction<'_>,
    id: Option<i64>,
    session_id: &str,
    role: &str,
    message: &Message,
    enc: &Encoded,
    timestamp: f64,
    token_count: Option<i64>,
    active: bool,
) -> Result<i64, StoreError> {
    tx.prepare_cached(
        "INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_calls, \
         tool_name, timestamp, token_count, finish_reason, reasoning, observed, active, \
         compacted) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, ?12, 0)",
    )?
    .execute(rusqlite::params![
        id,
        session_id,
        role,
        enc.content,
        message.tool_call_id,
        enc.tool_calls,
        message.tool_name,
        timestamp,
        token_count,
        message.finish_reason.as_ref().map(FinishReason::as_str),
        enc.reasoning,
        i64::from(active),
    ])?;
    let row = tx.last_insert_rowid();
    if enc.parts.is_some() || enc.signature.is_some() || enc.trace_id.is_some() {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO hermes_messages (message_id, content_parts, \
             reasoning_signature, trace_id) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(rusqlite::params![
            row,
            enc.parts,
            enc.signature,
            enc.trace_id
        ])?;
    }
    Ok(row)
}

/// Appends one message row and updates the session counters (the body of
/// [`SqliteStore::append_message`], shared with the version-checked append).
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
            "UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, \
             tool_call_count = COALESCE(tool_call_count, 0) + ?2 WHERE id = ?1",
        )?
        .execute(rusqlite::params![session_id, calls])?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    insert_row(tx, session_id, message, enc, now, token_count)
}

/// Adds one to the hermes history version of `session_id` (creating its `hermes_sessions`
/// row at 1 when it has none).
pub(crate) fn bump_version(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO hermes_sessions (session_id, history_version) VALUES (?1, 1) \
         ON CONFLICT (session_id) DO UPDATE SET history_version = history_version + 1",
    )?
    .execute([session_id])?;
    Ok(())
}

/// Marks `message_id` and later messages inactive, fixes `message_count` and bumps
/// `history_version` when anything changed (the body of
/// [`SqliteStore::deactivate_messages_from`]). Returns how many messages changed.
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
        "UPDATE sessions SET message_count = max(COALESCE(message_count, 0) - ?2, 0) \
         WHERE id = ?1",
        rusqlite::params![session_id, i64::try_from(changed).unwrap_or(i64::MAX)],
    )?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    if changed > 0 {
        bump_version(tx, session_id)?;
    }
    Ok(changed)
}

/// One model call's token usage and cost, as [`SqliteStore::add_usage`] records it; also
/// recorded in the same commit as the reply it produced by
/// [`SqliteStore::append_message_with_usage_checked`].
#[derive(Debug, Clone, Copy)]
pub struct UsageRecord<'a> {
    /// Model name the call went to.
    pub model: &'a str,
    /// Provider name the call went to.
    pub provider: &'a str,
    /// The endpoint's base URL (`billing_base_url`; empty when there is none).
    pub base_url: &'a str,
    /// Tokens of the call.
    pub usage: &'a Usage,
    /// Cost in US dollars, when the price is known.
    pub cost_usd: Option<f64>,
}

impl<'a> UsageRecord<'a> {
    /// A record without an endpoint base URL (set [`UsageRecord::base_url`] when known).
    pub fn new(
        model: &'a str,
        provider: &'a str,
        usage: &'a Usage,
        cost_usd: Option<f64>,
    ) -> UsageRecord<'a> {
        UsageRecord {
            model,
            provider,
            base_url: "",
            usage,
            cost_usd,
        }
    }
}

/// Adds `record` to the session totals and to its per-model row (the body of
/// [`SqliteStore::add_usage`], shared with the append that records usage with its reply).
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
            "UPDATE sessions SET input_tokens = COALESCE(input_tokens, 0) + ?2, \
             output_tokens = COALESCE(output_tokens, 0) + ?3, \
             cache_read_tokens = COALESCE(cache_read_tokens, 0) + ?4, \
             cache_write_tokens = COALESCE(cache_write_tokens, 0) + ?5, \
             reasoning_tokens = COALESCE(reasoning_tokens, 0) + ?6, \
             estimated_cost_usd = CASE WHEN ?7 IS NULL THEN estimated_cost_usd \
             ELSE COALESCE(estimated_cost_usd, 0) + ?7 END, \
             cost_status = CASE WHEN ?7 IS NULL THEN cost_status ELSE 'estimated' END, \
             api_call_count = COALESCE(api_call_count, 0) + 1, \
             model = COALESCE(model, NULLIF(?8, '')), \
             billing_provider = COALESCE(billing_provider, NULLIF(?9, '')), \
             billing_base_url = COALESCE(billing_base_url, NULLIF(?10, '')) WHERE id = ?1",
        )?
        .execute(rusqlite::params![
            session_id,
            vals[0],
            vals[1],
            vals[2],
            vals[3],
            vals[4],
            cost_usd,
            record.model,
            record.provider,
            record.base_url
        ])?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    let now = to_ts(Utc::now());
    // Python's per-model table (schema v20/v22): one row per route and task; hermes' main
    // loop is task ''. A call without a known cost adds 0 and leaves `cost_status` alone, so
    // a row no call priced reads back as "no cost" (`usage_by_model`).
    tx.prepare_cached(
        "INSERT INTO session_model_usage (session_id, model, billing_provider, \
         billing_base_url, billing_mode, task, api_call_count, input_tokens, output_tokens, \
         cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd, \
         actual_cost_usd, cost_status, first_seen, last_seen) \
         VALUES (?1, ?2, ?3, ?11, '', '', 1, ?4, ?5, ?6, ?7, ?8, COALESCE(?9, 0), 0, \
         CASE WHEN ?9 IS NULL THEN NULL ELSE 'estimated' END, ?10, ?10) \
         ON CONFLICT (session_id, model, billing_provider, billing_base_url, billing_mode, task) \
         DO UPDATE SET api_call_count = api_call_count + 1, \
         input_tokens = input_tokens + excluded.input_tokens, \
         output_tokens = output_tokens + excluded.output_tokens, \
         cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, \
         cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, \
         reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens, \
         estimated_cost_usd = estimated_cost_usd + excluded.estimated_cost_usd, \
         cost_status = COALESCE(excluded.cost_status, cost_status), \
         last_seen = excluded.last_seen",
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
        cost_usd,
        now,
        record.base_url
    ])?;
    Ok(())
}

impl SqliteStore {
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

    /// All messages of a session in insertion order, each decoded or the error that says
    /// why it cannot be ([`crate::SessionBackend::load_all_messages_tolerant`]).
    pub fn load_all_messages_tolerant(
        &self,
        session_id: &str,
    ) -> Result<Vec<Result<StoredMessage, StoreError>>, StoreError> {
        Ok(self
            .load_rows("load_all_messages", session_id, false)?
            .into_iter()
            .filter_map(Result::transpose)
            .collect())
    }

    fn load(
        &self,
        op: &'static str,
        session_id: &str,
        active_only: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let mut out = Vec::new();
        for row in self.load_rows(op, session_id, active_only)? {
            if let Some(m) = row? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The rows of a session, each decoded ([`decode_row`]).
    fn load_rows(
        &self,
        op: &'static str,
        session_id: &str,
        active_only: bool,
    ) -> Result<Vec<Result<Option<StoredMessage>, StoreError>>, StoreError> {
        let raws = {
            let conn = self.lock();
            load_raw(&conn, session_id, active_only).map_err(self.sql_err(op))?
        };
        Ok(raws
            .into_iter()
            .map(|raw| decode_row(self.db(), raw))
            .collect())
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
    pub fn add_usage(&self, session_id: &str, record: &UsageRecord<'_>) -> Result<(), StoreError> {
        self.write("add_usage", |tx| add_usage_in(tx, session_id, record))
    }

    /// Per-model usage rows of a session, ordered by model then provider.
    pub fn usage_by_model(&self, session_id: &str) -> Result<Vec<ModelUsage>, StoreError> {
        let conn = self.lock();
        conn.prepare(
            "SELECT model, billing_provider, sum(api_call_count), sum(input_tokens), \
             sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens), \
             sum(reasoning_tokens), CASE WHEN count(cost_status) = 0 \
             AND total(estimated_cost_usd) = 0 AND total(actual_cost_usd) = 0 THEN NULL \
             ELSE total(max(estimated_cost_usd, actual_cost_usd)) END \
             FROM session_model_usage WHERE session_id = ?1 \
             GROUP BY model, billing_provider ORDER BY model, billing_provider",
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
        "SELECT {MESSAGE_COLUMNS} FROM messages m \
         LEFT JOIN hermes_messages h ON h.message_id = m.id \
         WHERE m.session_id = ?1 {} ORDER BY m.id",
        if active_only { "AND m.active = 1" } else { "" }
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map([session_id], raw_from_row)?;
    rows.collect()
}

/// Decodes a row into a message; `None` (logged) for a role hermes has no message for
/// (Python may store others), so the rest of the session still loads.
pub(crate) fn decode_row(db: &str, raw: RawRow) -> Result<Option<StoredMessage>, StoreError> {
    let corrupt = |(what, detail): (&'static str, String)| StoreError::Corrupt {
        db: db.to_string(),
        what,
        message_id: raw.id,
        detail,
    };
    let Some(role) = Role::parse(&raw.role) else {
        tracing::warn!(db, message_id = raw.id, role = %raw.role, "skipping a message with a role hermes does not know");
        return Ok(None);
    };
    let content = decode_content(&raw).map_err(corrupt)?;
    let tool_calls = match &raw.tool_calls {
        Some(json) if !json.is_empty() => {
            decode_tool_calls(json).map_err(|e| corrupt(("tool_calls", e)))?
        }
        _ => Vec::new(),
    };
    let text = raw
        .reasoning
        .clone()
        .or_else(|| raw.reasoning_content.clone());
    let reasoning = match (text, raw.signature.clone()) {
        (None, None) => None,
        (text, signature) => Some(Reasoning {
            text: text.unwrap_or_default(),
            signature,
        }),
    };
    Ok(Some(StoredMessage {
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
        trace_id: raw.trace_id,
    }))
}
