//! Session rows on PostgreSQL (the contract of `store.rs`, `subagents.rs`,
//! `model_choice.rs` and `gateway.rs` for SQLite).

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::db::{Db, read, write_tx};
use crate::error::StoreError;
use crate::store::{from_ts, make_preview, to_ts};
use crate::subagents::SUBAGENT_SOURCE;
use crate::types::{NewSession, SessionRecord};

/// The columns [`session_from_row`] reads (as SQLite's `SESSION_COLUMNS`).
pub(crate) const SESSION_COLUMNS: &str = "s.id, s.source, s.session_key, s.title, \
     COALESCE(s.model, ''), COALESCE(s.billing_provider, ''), COALESCE(s.system_prompt, ''), \
     s.parent_session_id, s.started_at, s.ended_at, s.end_reason, \
     COALESCE(s.message_count, 0), COALESCE(s.tool_call_count, 0), COALESCE(s.input_tokens, 0), \
     COALESCE(s.output_tokens, 0), COALESCE(s.cache_read_tokens, 0), \
     COALESCE(s.cache_write_tokens, 0), COALESCE(s.reasoning_tokens, 0), \
     COALESCE(s.actual_cost_usd, s.estimated_cost_usd), s.cwd, \
     COALESCE(h.history_version, 0) + COALESCE(s.rewind_count, 0), \
     (SELECT m.content FROM messages m WHERE m.session_id = s.id AND m.role = 'user' \
      ORDER BY m.id LIMIT 1)";

/// The `FROM` of [`SESSION_COLUMNS`].
pub(crate) const SESSION_FROM: &str =
    "sessions s LEFT JOIN hermes_sessions h ON h.session_id = s.id";

/// Sessions that are conversations of their own (not subagents, not Python's delegate
/// children).
const NOT_A_CHILD: &str = "s.source <> 'subagent' AND \
     hermes_json_object(s.model_config) ->> '_delegate_from' IS NULL";

/// The newest first.
const NEWEST: &str = "ORDER BY s.started_at DESC, s.hermes_seq DESC";

fn count(row: &Row, idx: usize) -> Result<u64, tokio_postgres::Error> {
    Ok(row.try_get::<_, i64>(idx)?.max(0) as u64)
}

pub(crate) fn session_from_row(row: &Row) -> Result<SessionRecord, tokio_postgres::Error> {
    let preview: Option<String> = row.try_get(21)?;
    Ok(SessionRecord {
        id: row.try_get(0)?,
        source: row.try_get(1)?,
        session_key: row.try_get(2)?,
        title: row.try_get(3)?,
        model: row.try_get(4)?,
        provider: row.try_get(5)?,
        system_prompt: row.try_get(6)?,
        parent_session_id: row.try_get(7)?,
        started_at: from_ts(row.try_get(8)?),
        ended_at: row.try_get::<_, Option<f64>>(9)?.map(from_ts),
        end_reason: row.try_get(10)?,
        message_count: count(row, 11)?,
        tool_call_count: count(row, 12)?,
        input_tokens: count(row, 13)?,
        output_tokens: count(row, 14)?,
        cache_read_tokens: count(row, 15)?,
        cache_write_tokens: count(row, 16)?,
        reasoning_tokens: count(row, 17)?,
        cost_usd: row.try_get(18)?,
        cwd: row.try_get(19)?,
        history_version: count(row, 20)?,
        preview: preview.and_then(|p| make_preview(&p)),
    })
}

/// The newest session matching `filter` (SQL over `s`, with `$1` = `value`).
async fn query_session(
    c: &impl GenericClient,
    filter: &str,
    value: &(dyn ToSql + Sync),
) -> Result<Option<SessionRecord>, StoreError> {
    let sql =
        format!("SELECT {SESSION_COLUMNS} FROM {SESSION_FROM} WHERE {filter} {NEWEST} LIMIT 1");
    let st = c.prepare_cached(&sql).await?;
    match c.query_opt(&st, &[value]).await? {
        Some(row) => Ok(Some(session_from_row(&row)?)),
        None => Ok(None),
    }
}

async fn query_sessions(
    c: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<SessionRecord>, StoreError> {
    let rows = c.query(sql, params).await?;
    rows.iter()
        .map(|r| session_from_row(r).map_err(StoreError::from))
        .collect()
}

/// The session that has `title`, if any.
async fn title_owner(c: &impl GenericClient, title: &str) -> Result<Option<String>, StoreError> {
    Ok(
        c.query_opt("SELECT id FROM sessions WHERE title = $1", &[&title])
            .await?
            .map(|r| r.try_get(0))
            .transpose()?,
    )
}

async fn title_free(
    c: &impl GenericClient,
    title: Option<&str>,
    id: &str,
) -> Result<(), StoreError> {
    let Some(title) = title else {
        return Ok(());
    };
    match title_owner(c, title).await? {
        Some(other) if other != id => Err(StoreError::TitleTaken {
            title: title.to_string(),
            other,
        }),
        _ => Ok(()),
    }
}

pub(crate) fn found(changed: u64, id: &str) -> Result<(), StoreError> {
    if changed == 0 {
        Err(StoreError::SessionNotFound { id: id.to_string() })
    } else {
        Ok(())
    }
}

/// Adds one to the history version of `session_id`.
pub(crate) async fn bump_version(
    c: &impl GenericClient,
    session_id: &str,
) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO hermes_sessions (session_id, history_version) VALUES ($1, 1) \
         ON CONFLICT (session_id) DO UPDATE \
         SET history_version = hermes_sessions.history_version + 1",
        &[&session_id],
    )
    .await?;
    Ok(())
}

/// Deletes the sessions `ids` with everything that belongs to them.
async fn delete_ids(c: &impl GenericClient, ids: &[String]) -> Result<usize, StoreError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let ids = ids.to_vec();
    for sql in [
        "DELETE FROM hermes_messages WHERE message_id IN \
         (SELECT id FROM messages WHERE session_id = ANY($1))",
        "DELETE FROM messages WHERE session_id = ANY($1)",
        "DELETE FROM session_model_usage WHERE session_id = ANY($1)",
        "DELETE FROM hermes_sessions WHERE session_id = ANY($1)",
        "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ANY($1)",
    ] {
        c.execute(sql, &[&ids]).await?;
    }
    let n = c
        .execute("DELETE FROM sessions WHERE id = ANY($1)", &[&ids])
        .await?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

impl Db {
    pub(crate) async fn create_session(&self, new: &NewSession) -> Result<(), StoreError> {
        let now = to_ts(Utc::now());
        let model_config = match (&new.parent_session_id, new.source == SUBAGENT_SOURCE) {
            (Some(parent), true) => {
                Some(serde_json::json!({ "_delegate_from": parent }).to_string())
            }
            _ => None,
        };
        write_tx!(self, "create_session", |tx| {
            title_free(&tx, new.title.as_deref(), &new.id).await?;
            tx.execute(
                "INSERT INTO sessions (id, source, session_key, title, model, billing_provider, \
                 system_prompt, parent_session_id, started_at, cwd, model_config, \
                 message_count, tool_call_count) \
                 VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''), $7, $8, $9, $10, $11, 0, 0) \
                 ON CONFLICT (id) DO NOTHING",
                &[
                    &new.id,
                    &new.source,
                    &new.session_key,
                    &new.title,
                    &new.model,
                    &new.provider,
                    &new.system_prompt,
                    &new.parent_session_id,
                    &now,
                    &new.cwd,
                    &model_config,
                ],
            )
            .await?;
            if let (Some(key), false) = (&new.session_key, new.source == SUBAGENT_SOURCE) {
                move_routes(&tx, key, &new.id, now).await?;
            }
            Ok(())
        })
    }

    pub(crate) async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        read!(self, "get_session", |c| {
            query_session(c, "s.id = $1", &id).await
        })
    }

    pub(crate) async fn find_session(
        &self,
        key: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        read!(self, "find_session", |c| {
            if let Some(s) = query_session(c, "s.id = $1", &key).await? {
                return Ok(Some(s));
            }
            let by_title = format!("s.title = $1 AND s.source <> '{SUBAGENT_SOURCE}'");
            if let Some(s) = query_session(c, &by_title, &key).await? {
                return Ok(Some(s));
            }
            if key.is_empty() {
                return Ok(None);
            }
            let rows = c
                .query(
                    "SELECT id FROM sessions WHERE left(id, length($1)) = $1 LIMIT 2",
                    &[&key],
                )
                .await?;
            match rows.as_slice() {
                [only] => {
                    let id: String = only.try_get(0)?;
                    query_session(c, "s.id = $1", &id).await
                }
                _ => Ok(None),
            }
        })
    }

    pub(crate) async fn latest_session(
        &self,
        source: Option<&str>,
    ) -> Result<Option<SessionRecord>, StoreError> {
        read!(self, "latest_session", |c| {
            let filter =
                format!("($1::text IS NULL AND {NOT_A_CHILD} OR s.source = $1) AND s.archived = 0");
            query_session(c, &filter, &source).await
        })
    }

    pub(crate) async fn list_sessions(
        &self,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        read!(self, "list_sessions", |c| {
            let sql = format!(
                "SELECT {SESSION_COLUMNS} FROM {SESSION_FROM} WHERE {NOT_A_CHILD} \
                 AND s.archived = 0 {NEWEST} LIMIT $1 OFFSET $2"
            );
            query_sessions(c, &sql, &[&limit, &offset]).await
        })
    }

    pub(crate) async fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        write_tx!(self, "set_title", |tx| {
            title_free(&tx, Some(title), id).await?;
            let n = tx
                .execute(
                    "UPDATE sessions SET title = $2 WHERE id = $1",
                    &[&id, &title],
                )
                .await?;
            found(n, id)
        })
    }

    /// The PostgreSQL form of [`crate::SqliteStore::record_gateway_peer`]: the same columns,
    /// the same rule (a peer without a session key changes nothing).
    pub(crate) async fn record_gateway_peer(
        &self,
        id: &str,
        peer: &crate::GatewayPeer,
    ) -> Result<bool, StoreError> {
        if id.is_empty() || peer.session_key.is_empty() {
            return Ok(false);
        }
        write_tx!(self, "record_gateway_peer", |tx| {
            let n = tx
                .execute(
                    "UPDATE sessions SET session_key = $2, source = $3, user_id = $4, \
                     chat_id = $5, chat_type = $6, thread_id = $7, \
                     display_name = COALESCE($8, display_name), \
                     origin_json = COALESCE($9, origin_json) WHERE id = $1",
                    &[
                        &id,
                        &peer.session_key,
                        &peer.source,
                        &peer.user_id,
                        &peer.chat_id,
                        &peer.chat_type,
                        &peer.thread_id,
                        &peer.display_name,
                        &peer.origin_json,
                    ],
                )
                .await?;
            Ok(n > 0)
        })
    }

    /// The PostgreSQL form of [`crate::SqliteStore::gateway_peer`].
    pub(crate) async fn gateway_peer(
        &self,
        id: &str,
    ) -> Result<Option<crate::GatewayPeer>, StoreError> {
        read!(self, "gateway_peer", |c| {
            let row = c
                .query_opt(
                    "SELECT session_key, source, user_id, chat_id, chat_type, thread_id, \
                     display_name, origin_json FROM sessions \
                     WHERE id = $1 AND COALESCE(session_key, '') <> ''",
                    &[&id],
                )
                .await?;
            row.map(|r| -> Result<crate::GatewayPeer, StoreError> {
                Ok(crate::GatewayPeer {
                    session_key: r.try_get(0)?,
                    source: r.try_get::<_, Option<String>>(1)?.unwrap_or_default(),
                    user_id: r.try_get(2)?,
                    chat_id: r.try_get(3)?,
                    chat_type: r.try_get(4)?,
                    thread_id: r.try_get(5)?,
                    display_name: r.try_get(6)?,
                    origin_json: r.try_get(7)?,
                })
            })
            .transpose()
        })
    }

    pub(crate) async fn set_title_numbered(
        &self,
        id: &str,
        title: &str,
    ) -> Result<String, StoreError> {
        write_tx!(self, "set_title_numbered", |tx| {
            let mut candidate = title.to_string();
            let mut n = 1u32;
            while title_owner(&tx, &candidate)
                .await?
                .is_some_and(|other| other != id)
            {
                n += 1;
                candidate = format!("{title} #{n}");
            }
            let changed = tx
                .execute(
                    "UPDATE sessions SET title = $2 WHERE id = $1",
                    &[&id, &candidate],
                )
                .await?;
            found(changed, id)?;
            Ok(candidate)
        })
    }

    pub(crate) async fn end_session(&self, id: &str, reason: &str) -> Result<(), StoreError> {
        let now = to_ts(Utc::now());
        write_tx!(self, "end_session", |tx| {
            let n = tx
                .execute(
                    "UPDATE sessions SET ended_at = $2, end_reason = $3 WHERE id = $1",
                    &[&id, &now, &reason],
                )
                .await?;
            found(n, id)?;
            bump_version(&tx, id).await?;
            Ok(())
        })
    }

    pub(crate) async fn set_archived(&self, id: &str, archived: bool) -> Result<(), StoreError> {
        write_tx!(self, "set_archived", |tx| {
            let n = tx
                .execute(
                    "UPDATE sessions SET archived = $2 WHERE id = $1",
                    &[&id, &i64::from(archived)],
                )
                .await?;
            found(n, id)?;
            Ok(())
        })
    }

    pub(crate) async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        write_tx!(self, "delete_session", |tx| {
            Ok(delete_ids(&tx, &[id.to_string()]).await? > 0)
        })
    }

    pub(crate) async fn prune_sessions(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let cutoff = to_ts(cutoff);
        write_tx!(self, "prune_sessions", |tx| {
            let ids: Vec<String> = tx
                .query(
                    "SELECT id FROM sessions WHERE started_at < $1 AND archived = 0",
                    &[&cutoff],
                )
                .await?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            delete_ids(&tx, &ids).await
        })
    }

    pub(crate) async fn latest_session_for_key(
        &self,
        key: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        read!(self, "latest_session_for_key", |c| {
            query_session(c, "s.session_key = $1", &key).await
        })
    }

    pub(crate) async fn count_session_keys(&self) -> Result<u64, StoreError> {
        read!(self, "count_session_keys", |c| {
            let n: i64 = c
                .query_one(
                    "SELECT COUNT(DISTINCT session_key) FROM sessions \
                     WHERE session_key IS NOT NULL",
                    &[],
                )
                .await?
                .try_get(0)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    pub(crate) async fn last_activity(
        &self,
        session_id: &str,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        read!(self, "last_activity", |c| {
            let t: Option<f64> = c
                .query_one(
                    "SELECT MAX(timestamp) FROM messages WHERE session_id = $1 AND active = 1",
                    &[&session_id],
                )
                .await?
                .try_get(0)?;
            Ok(t.map(from_ts))
        })
    }

    pub(crate) async fn set_system_prompt(&self, id: &str, prompt: &str) -> Result<(), StoreError> {
        write_tx!(self, "set_system_prompt", |tx| {
            let n = tx
                .execute(
                    "UPDATE sessions SET system_prompt = $2 WHERE id = $1",
                    &[&id, &prompt],
                )
                .await?;
            found(n, id)
        })
    }

    pub(crate) async fn child_sessions(
        &self,
        parent_id: &str,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        read!(self, "child_sessions", |c| {
            let sql = format!(
                "SELECT {SESSION_COLUMNS} FROM {SESSION_FROM} WHERE s.parent_session_id = $1 \
                 AND s.source = '{SUBAGENT_SOURCE}' ORDER BY s.started_at, s.hermes_seq"
            );
            query_sessions(c, &sql, &[&parent_id]).await
        })
    }

    pub(crate) async fn subagent_parent(&self, id: &str) -> Result<Option<String>, StoreError> {
        read!(self, "subagent_parent", |c| {
            let row = c
                .query_opt(
                    &format!(
                        "SELECT parent_session_id FROM sessions WHERE id = $1 \
                         AND source = '{SUBAGENT_SOURCE}'"
                    ),
                    &[&id],
                )
                .await?;
            Ok(match row {
                Some(r) => r.try_get::<_, Option<String>>(0)?,
                None => None,
            })
        })
    }

    pub(crate) async fn set_model_choice(
        &self,
        id: &str,
        model: &str,
        provider: &str,
        choice: Option<&str>,
    ) -> Result<(), StoreError> {
        write_tx!(self, "set_model_choice", |tx| {
            let n = tx
                .execute(
                    "UPDATE sessions SET model = $2, billing_provider = $3 WHERE id = $1",
                    &[&id, &model, &provider],
                )
                .await?;
            found(n, id)?;
            tx.execute(
                "INSERT INTO hermes_sessions (session_id, model_choice) VALUES ($1, $2) \
                 ON CONFLICT (session_id) DO UPDATE SET model_choice = excluded.model_choice",
                &[&id, &choice],
            )
            .await?;
            Ok(())
        })
    }

    pub(crate) async fn model_choice(&self, id: &str) -> Result<Option<String>, StoreError> {
        read!(self, "model_choice", |c| {
            let row = c
                .query_opt(
                    "SELECT model_choice FROM hermes_sessions WHERE session_id = $1",
                    &[&id],
                )
                .await?;
            Ok(match row {
                Some(r) => r.try_get::<_, Option<String>>(0)?,
                None => None,
            })
        })
    }

    pub(crate) async fn route_session(&self, key: &str) -> Result<Option<String>, StoreError> {
        let newest = self.latest_session_for_key(key).await?;
        let entry: Option<(String, f64)> = read!(self, "route_session", |c| {
            let row = c
                .query_opt(
                    "SELECT hermes_json_object(g.entry_json) ->> 'session_id', g.updated_at \
                     FROM gateway_routing g JOIN sessions s \
                     ON s.id = hermes_json_object(g.entry_json) ->> 'session_id' \
                     WHERE g.session_key = $1 ORDER BY g.updated_at DESC LIMIT 1",
                    &[&key],
                )
                .await?;
            Ok(match row {
                Some(r) => Some((r.try_get(0)?, r.try_get(1)?)),
                None => None,
            })
        })?;
        Ok(match (entry, newest) {
            (Some((id, updated)), Some(n)) if to_ts(n.started_at) <= updated + 0.001 => Some(id),
            (Some((id, _)), None) => Some(id),
            (_, Some(n)) => Some(n.id),
            (None, None) => None,
        })
    }
}

/// Points every routing entry of `key` at `session_id` (as SQLite's `gateway::move_routes`).
async fn move_routes(
    c: &impl GenericClient,
    key: &str,
    session_id: &str,
    now: f64,
) -> Result<u64, StoreError> {
    let iso = DateTime::from_timestamp_millis((now * 1000.0) as i64)
        .unwrap_or_default()
        .naive_utc()
        .format("%Y-%m-%dT%H:%M:%S%.6f")
        .to_string();
    Ok(c.execute(
        "UPDATE gateway_routing SET entry_json = (hermes_json_object(entry_json) \
         || jsonb_build_object('session_id', $2::text, 'updated_at', $3::text))::text, \
         updated_at = $4 \
         WHERE session_key = $1 AND hermes_json_object(entry_json) IS NOT NULL",
        &[&key, &session_id, &iso, &now],
    )
    .await?)
}
