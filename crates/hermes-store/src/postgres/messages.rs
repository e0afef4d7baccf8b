//! Messages, usage, compaction and the version-checked writes on PostgreSQL (the contract of
//! `messages.rs`, `compaction.rs` and `versioned.rs` for SQLite). Each call is one
//! `SERIALIZABLE` transaction; a version check runs in the transaction that writes.

use deadpool_postgres::GenericClient;
use hermes_protocol::{FinishReason, Message};

use super::db::{Db, read, write_tx};
use super::sessions::bump_version;
use crate::error::StoreError;
use crate::messages::{Encoded, RawRow, decode_row};
use crate::types::{ModelUsage, StoredMessage};

/// A message's usage as the store receives it (owned, for the store's runtime).
pub(crate) struct OwnedUsage {
    pub(crate) model: String,
    pub(crate) provider: String,
    pub(crate) base_url: String,
    pub(crate) usage: hermes_protocol::Usage,
    pub(crate) cost_usd: Option<f64>,
}

fn t(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Inserts one message row (and its `hermes_messages` row when it has one); returns its id.
pub(crate) async fn insert_row(
    c: &impl GenericClient,
    session_id: &str,
    message: &Message,
    enc: &Encoded,
    now: f64,
    token_count: Option<i64>,
) -> Result<i64, StoreError> {
    let st = c
        .prepare_cached(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, \
             tool_name, timestamp, token_count, finish_reason, reasoning, observed, active, \
             compacted) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, 1, 0) RETURNING id",
        )
        .await?;
    let finish = message.finish_reason.as_ref().map(FinishReason::as_str);
    let row = c
        .query_one(
            &st,
            &[
                &session_id,
                &message.role.as_str(),
                &enc.content,
                &message.tool_call_id,
                &enc.tool_calls,
                &message.tool_name,
                &now,
                &token_count,
                &finish,
                &enc.reasoning,
            ],
        )
        .await?;
    let id: i64 = row.try_get(0)?;
    if enc.parts.is_some() || enc.signature.is_some() || enc.trace_id.is_some() {
        let st = c
            .prepare_cached(
                "INSERT INTO hermes_messages (message_id, content_parts, reasoning_signature, \
                 trace_id) VALUES ($1, $2, $3, $4) ON CONFLICT (message_id) DO UPDATE SET \
                 content_parts = excluded.content_parts, \
                 reasoning_signature = excluded.reasoning_signature, \
                 trace_id = excluded.trace_id",
            )
            .await?;
        c.execute(&st, &[&id, &enc.parts, &enc.signature, &enc.trace_id])
            .await?;
    }
    Ok(id)
}

/// Appends one message and updates the session counters.
async fn append_in(
    c: &impl GenericClient,
    session_id: &str,
    message: &Message,
    enc: &Encoded,
    now: f64,
    token_count: Option<i64>,
) -> Result<i64, StoreError> {
    let calls = i64::try_from(message.tool_calls.len()).unwrap_or(i64::MAX);
    let st = c
        .prepare_cached(
            "UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, \
             tool_call_count = COALESCE(tool_call_count, 0) + $2 WHERE id = $1",
        )
        .await?;
    if c.execute(&st, &[&session_id, &calls]).await? == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    insert_row(c, session_id, message, enc, now, token_count).await
}

/// The history version of `session_id`, or [`StoreError::HistoryChanged`] when it is not
/// `expected`.
async fn check(c: &impl GenericClient, session_id: &str, expected: u64) -> Result<u64, StoreError> {
    let st = c
        .prepare_cached(
            "SELECT COALESCE(h.history_version, 0) + COALESCE(s.rewind_count, 0) \
             FROM sessions s LEFT JOIN hermes_sessions h ON h.session_id = s.id WHERE s.id = $1",
        )
        .await?;
    let Some(row) = c.query_opt(&st, &[&session_id]).await? else {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    };
    let found = u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0);
    if found != expected {
        return Err(StoreError::HistoryChanged {
            id: session_id.to_string(),
            expected,
            found,
        });
    }
    Ok(found)
}

async fn deactivate_in(
    c: &impl GenericClient,
    session_id: &str,
    message_id: i64,
) -> Result<usize, StoreError> {
    let changed = c
        .execute(
            "UPDATE messages SET active = 0 WHERE session_id = $1 AND id >= $2 AND active = 1",
            &[&session_id, &message_id],
        )
        .await?;
    let delta = i64::try_from(changed).unwrap_or(i64::MAX);
    let n = c
        .execute(
            "UPDATE sessions SET message_count = GREATEST(COALESCE(message_count, 0) - $2, 0) \
             WHERE id = $1",
            &[&session_id, &delta],
        )
        .await?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    if changed > 0 {
        bump_version(c, session_id).await?;
    }
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

async fn replace_in(
    c: &impl GenericClient,
    session_id: &str,
    from_id: Option<i64>,
    replacement: &[(Message, Encoded)],
    now: f64,
) -> Result<Vec<i64>, StoreError> {
    let changed = match from_id {
        Some(id) => {
            c.execute(
                "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = $1 \
                 AND id >= $2 AND active = 1",
                &[&session_id, &id],
            )
            .await?
        }
        None => 0,
    };
    let delta = i64::try_from(replacement.len()).unwrap_or(i64::MAX)
        - i64::try_from(changed).unwrap_or(i64::MAX);
    let n = c
        .execute(
            "UPDATE sessions SET message_count = GREATEST(COALESCE(message_count, 0) + $2, 0) \
             WHERE id = $1",
            &[&session_id, &delta],
        )
        .await?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    bump_version(c, session_id).await?;
    let mut ids = Vec::with_capacity(replacement.len());
    for (m, enc) in replacement {
        ids.push(insert_row(c, session_id, m, enc, now, None).await?);
    }
    Ok(ids)
}

async fn add_usage_in(
    c: &impl GenericClient,
    session_id: &str,
    u: &OwnedUsage,
) -> Result<(), StoreError> {
    let usage = &u.usage;
    let vals = [
        t(usage.input_tokens),
        t(usage.output_tokens),
        t(usage.cache_read_tokens),
        t(usage.cache_write_tokens),
        t(usage.reasoning_tokens),
    ];
    let st = c
        .prepare_cached(
            "UPDATE sessions SET input_tokens = COALESCE(input_tokens, 0) + $2, \
             output_tokens = COALESCE(output_tokens, 0) + $3, \
             cache_read_tokens = COALESCE(cache_read_tokens, 0) + $4, \
             cache_write_tokens = COALESCE(cache_write_tokens, 0) + $5, \
             reasoning_tokens = COALESCE(reasoning_tokens, 0) + $6, \
             estimated_cost_usd = CASE WHEN $7::float8 IS NULL THEN estimated_cost_usd \
             ELSE COALESCE(estimated_cost_usd, 0) + $7::float8 END, \
             cost_status = CASE WHEN $7::float8 IS NULL THEN cost_status ELSE 'estimated' END, \
             api_call_count = COALESCE(api_call_count, 0) + 1, \
             model = COALESCE(model, NULLIF($8, '')), \
             billing_provider = COALESCE(billing_provider, NULLIF($9, '')), \
             billing_base_url = COALESCE(billing_base_url, NULLIF($10, '')) WHERE id = $1",
        )
        .await?;
    let n = c
        .execute(
            &st,
            &[
                &session_id,
                &vals[0],
                &vals[1],
                &vals[2],
                &vals[3],
                &vals[4],
                &u.cost_usd,
                &u.model,
                &u.provider,
                &u.base_url,
            ],
        )
        .await?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            id: session_id.to_string(),
        });
    }
    let now = super::db::now();
    let st = c
        .prepare_cached(
            "INSERT INTO session_model_usage AS u (session_id, model, billing_provider, \
             billing_base_url, billing_mode, task, api_call_count, input_tokens, output_tokens, \
             cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd, \
             actual_cost_usd, cost_status, first_seen, last_seen) \
             VALUES ($1, $2, $3, $11, '', '', 1, $4, $5, $6, $7, $8, COALESCE($9::float8, 0), 0, \
             CASE WHEN $9::float8 IS NULL THEN NULL ELSE 'estimated' END, $10, $10) \
             ON CONFLICT (session_id, model, billing_provider, billing_base_url, billing_mode, task) \
             DO UPDATE SET api_call_count = u.api_call_count + 1, \
             input_tokens = u.input_tokens + excluded.input_tokens, \
             output_tokens = u.output_tokens + excluded.output_tokens, \
             cache_read_tokens = u.cache_read_tokens + excluded.cache_read_tokens, \
             cache_write_tokens = u.cache_write_tokens + excluded.cache_write_tokens, \
             reasoning_tokens = u.reasoning_tokens + excluded.reasoning_tokens, \
             estimated_cost_usd = u.estimated_cost_usd + excluded.estimated_cost_usd, \
             cost_status = COALESCE(excluded.cost_status, u.cost_status), \
             last_seen = excluded.last_seen",
        )
        .await?;
    c.execute(
        &st,
        &[
            &session_id,
            &u.model,
            &u.provider,
            &vals[0],
            &vals[1],
            &vals[2],
            &vals[3],
            &vals[4],
            &u.cost_usd,
            &now,
            &u.base_url,
        ],
    )
    .await?;
    Ok(())
}

impl Db {
    pub(crate) async fn append_message(
        &self,
        session_id: &str,
        message: &Message,
        enc: &Encoded,
        token_count: Option<i64>,
        expected_version: Option<u64>,
    ) -> Result<i64, StoreError> {
        let now = crate::store::to_ts(chrono::Utc::now());
        let op = if expected_version.is_some() {
            "append_message_checked"
        } else {
            "append_message"
        };
        write_tx!(self, op, |tx| {
            if let Some(v) = expected_version {
                check(&tx, session_id, v).await?;
            }
            append_in(&tx, session_id, message, enc, now, token_count).await
        })
    }

    pub(crate) async fn append_message_with_usage_checked(
        &self,
        session_id: &str,
        message: &Message,
        enc: &Encoded,
        usage: &OwnedUsage,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        let now = crate::store::to_ts(chrono::Utc::now());
        write_tx!(self, "append_message_with_usage_checked", |tx| {
            check(&tx, session_id, expected_version).await?;
            let id = append_in(&tx, session_id, message, enc, now, None).await?;
            add_usage_in(&tx, session_id, usage).await?;
            Ok(id)
        })
    }

    pub(crate) async fn load_messages(
        &self,
        session_id: &str,
        active_only: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let mut out = Vec::new();
        for row in self.load_rows(session_id, active_only).await? {
            if let Some(m) = row? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The rows of a session, each decoded ([`decode_row`]): a row that cannot be is its
    /// error, not the whole load's.
    pub(crate) async fn load_rows(
        &self,
        session_id: &str,
        active_only: bool,
    ) -> Result<Vec<Result<Option<StoredMessage>, StoreError>>, StoreError> {
        let op = if active_only {
            "load_messages"
        } else {
            "load_all_messages"
        };
        let sql = format!(
            "SELECT m.id, m.role, m.content, h.content_parts, m.tool_calls, m.tool_call_id, \
             m.tool_name, m.reasoning, m.reasoning_content, h.reasoning_signature, \
             m.finish_reason, m.timestamp, m.active, h.trace_id FROM messages m \
             LEFT JOIN hermes_messages h ON h.message_id = m.id \
             WHERE m.session_id = $1 {} ORDER BY m.id",
            if active_only { "AND m.active = 1" } else { "" }
        );
        let rows = read!(self, op, |c| {
            let st = c.prepare_cached(&sql).await?;
            Ok(c.query(&st, &[&session_id]).await?)
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let raw = RawRow {
                id: r.try_get(0)?,
                role: r.try_get(1)?,
                content: r.try_get(2)?,
                parts: r.try_get(3)?,
                tool_calls: r.try_get(4)?,
                tool_call_id: r.try_get(5)?,
                tool_name: r.try_get(6)?,
                reasoning: r.try_get(7)?,
                reasoning_content: r.try_get(8)?,
                signature: r.try_get(9)?,
                finish_reason: r.try_get(10)?,
                timestamp: r.try_get::<_, Option<f64>>(11)?.unwrap_or_default(),
                active: r.try_get::<_, Option<i64>>(12)?.unwrap_or(1) != 0,
                trace_id: r.try_get(13)?,
            };
            out.push(decode_row(&self.location, raw));
        }
        Ok(out)
    }

    pub(crate) async fn deactivate_messages(
        &self,
        session_id: &str,
        message_id: i64,
        expected_version: Option<u64>,
    ) -> Result<(usize, u64), StoreError> {
        let op = if expected_version.is_some() {
            "deactivate_messages_checked"
        } else {
            "deactivate_messages_from"
        };
        write_tx!(self, op, |tx| {
            let v = match expected_version {
                Some(v) => check(&tx, session_id, v).await?,
                None => 0,
            };
            let changed = deactivate_in(&tx, session_id, message_id).await?;
            Ok((changed, v + u64::from(changed > 0)))
        })
    }

    pub(crate) async fn replace_active(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[(Message, Encoded)],
        expected_version: Option<u64>,
    ) -> Result<(Vec<i64>, u64), StoreError> {
        let now = crate::store::to_ts(chrono::Utc::now());
        let op = if expected_version.is_some() {
            "replace_active_checked"
        } else {
            "replace_active_from"
        };
        write_tx!(self, op, |tx| {
            let v = match expected_version {
                Some(v) => check(&tx, session_id, v).await?,
                None => 0,
            };
            let ids = replace_in(&tx, session_id, from_id, replacement, now).await?;
            Ok((ids, v + 1))
        })
    }

    pub(crate) async fn add_usage(
        &self,
        session_id: &str,
        usage: &OwnedUsage,
    ) -> Result<(), StoreError> {
        write_tx!(self, "add_usage", |tx| {
            add_usage_in(&tx, session_id, usage).await
        })
    }

    pub(crate) async fn usage_by_model(
        &self,
        session_id: &str,
    ) -> Result<Vec<ModelUsage>, StoreError> {
        let rows = read!(self, "usage_by_model", |c| {
            Ok(c.query(
                "SELECT model, billing_provider, sum(api_call_count)::bigint, \
                 sum(input_tokens)::bigint, sum(output_tokens)::bigint, \
                 sum(cache_read_tokens)::bigint, sum(cache_write_tokens)::bigint, \
                 sum(reasoning_tokens)::bigint, CASE WHEN count(cost_status) = 0 \
                 AND COALESCE(sum(estimated_cost_usd), 0) = 0 \
                 AND COALESCE(sum(actual_cost_usd), 0) = 0 THEN NULL \
                 ELSE COALESCE(sum(GREATEST(estimated_cost_usd, actual_cost_usd)), 0) END \
                 FROM session_model_usage WHERE session_id = $1 \
                 GROUP BY model, billing_provider \
                 ORDER BY model COLLATE \"C\", billing_provider COLLATE \"C\"",
                &[&session_id],
            )
            .await?)
        })?;
        rows.iter()
            .map(|r| {
                let u = |i: usize| -> Result<u64, StoreError> {
                    Ok(r.try_get::<_, Option<i64>>(i)?.unwrap_or(0).max(0) as u64)
                };
                Ok(ModelUsage {
                    model: r.try_get(0)?,
                    provider: r.try_get(1)?,
                    calls: u(2)?,
                    usage: hermes_protocol::Usage {
                        input_tokens: u(3)?,
                        output_tokens: u(4)?,
                        cache_read_tokens: u(5)?,
                        cache_write_tokens: u(6)?,
                        reasoning_tokens: u(7)?,
                    },
                    cost_usd: r.try_get(8)?,
                })
            })
            .collect()
    }
}
