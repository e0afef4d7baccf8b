//! Cron run history, session leases, and the health checks on PostgreSQL (the contract of
//! `cron_runs.rs`, `leases.rs` and `maintenance.rs` for SQLite).

use std::time::Duration;

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::db::{Db, now, read, write_tx};
use super::schema::{PG_SCHEMA_VERSION, version};
use crate::cron_runs::CronRun;
use crate::error::StoreError;
use crate::leases::{Lease, LeaseAttempt};
use crate::maintenance::{SchemaReport, SearchIndexReport};
use crate::store::{from_ts, to_ts};
use crate::types::StoreStats;

const CRON_COLUMNS: &str = "run_id, job_id, job_name, due_at, started_at, duration_ms, status, \
                            error, output_path, deliveries, session_id";

/// Fences a taken-over holder off `session_id`'s history (the contract of `leases.rs`): the
/// session's history version is bumped, which every checked write tests in its transaction.
async fn fence_off(tx: &impl GenericClient, session_id: &str) -> Result<(), StoreError> {
    let is_session = tx
        .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&session_id])
        .await?
        .is_some();
    if is_session {
        super::sessions::bump_version(tx, session_id).await?;
    }
    Ok(())
}

fn run_from_row(r: &Row) -> Result<CronRun, StoreError> {
    let deliveries: String = r.try_get(9)?;
    let duration: i64 = r.try_get(5)?;
    Ok(CronRun {
        run_id: r.try_get(0)?,
        job_id: r.try_get(1)?,
        job_name: r.try_get(2)?,
        due_at: r.try_get::<_, Option<f64>>(3)?.map(from_ts),
        started_at: from_ts(r.try_get(4)?),
        duration_ms: u64::try_from(duration).unwrap_or(0),
        status: r.try_get(6)?,
        error: r.try_get(7)?,
        output_path: r.try_get(8)?,
        deliveries: serde_json::from_str(&deliveries).unwrap_or_default(),
        session_id: r.try_get(10)?,
    })
}

/// Columns every message needs (`messages`), checked by `schema_check`.
const REQUIRED: &[(&str, &[&str])] = &[
    (
        "sessions",
        &["id", "source", "session_key", "started_at", "hermes_seq"],
    ),
    ("messages", &["id", "session_id", "role", "search_tsv"]),
    ("hermes_sessions", &["session_id", "history_version"]),
    (
        "hermes_messages",
        &[
            "message_id",
            "content_parts",
            "reasoning_signature",
            "trace_id",
        ],
    ),
    ("hermes_write_log", &["write_id", "result"]),
];

impl Db {
    pub(crate) async fn record_cron_runs(&self, runs: &[CronRun]) -> Result<usize, StoreError> {
        write_tx!(self, "record_cron_runs", |tx| {
            let st = tx
                .prepare_cached(&format!(
                    "INSERT INTO hermes_cron_runs ({CRON_COLUMNS}) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                     ON CONFLICT (run_id) DO NOTHING"
                ))
                .await?;
            let mut added = 0usize;
            for run in runs {
                let deliveries =
                    serde_json::to_string(&run.deliveries).unwrap_or_else(|_| "[]".into());
                let due = run.due_at.map(to_ts);
                let started = to_ts(run.started_at);
                let duration = i64::try_from(run.duration_ms).unwrap_or(i64::MAX);
                let n = tx
                    .execute(
                        &st,
                        &[
                            &run.run_id,
                            &run.job_id,
                            &run.job_name,
                            &due,
                            &started,
                            &duration,
                            &run.status,
                            &run.error,
                            &run.output_path,
                            &deliveries,
                            &run.session_id,
                        ],
                    )
                    .await?;
                added += usize::try_from(n).unwrap_or(0);
            }
            Ok(added)
        })
    }

    pub(crate) async fn cron_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<CronRun>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read!(self, "cron_runs", |c| {
            let rows = c
                .query(
                    &format!(
                        "SELECT {CRON_COLUMNS} FROM hermes_cron_runs \
                         WHERE ($1::text IS NULL OR job_id = $1) \
                         ORDER BY started_at DESC, hermes_seq DESC LIMIT $2"
                    ),
                    &[&job_id, &limit],
                )
                .await?;
            rows.iter().map(run_from_row).collect()
        })
    }

    pub(crate) async fn latest_cron_runs(&self) -> Result<Vec<CronRun>, StoreError> {
        read!(self, "latest_cron_runs", |c| {
            let rows = c
                .query(
                    &format!(
                        "SELECT {CRON_COLUMNS} FROM (SELECT DISTINCT ON (job_id) * \
                         FROM hermes_cron_runs ORDER BY job_id, started_at DESC, \
                         hermes_seq DESC) c ORDER BY started_at DESC"
                    ),
                    &[],
                )
                .await?;
            rows.iter().map(run_from_row).collect()
        })
    }

    pub(crate) async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        write_tx!(self, "acquire_lease", |tx| {
            let t = now();
            let row = tx
                .query_opt(
                    "SELECT holder, token, expires_at FROM hermes_session_leases \
                     WHERE session_id = $1 FOR UPDATE",
                    &[&session_id],
                )
                .await?;
            let current: Option<(String, i64, f64)> = match row {
                Some(r) => Some((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)),
                None => None,
            };
            if let Some((other, token, expires_at)) = &current
                && !other.is_empty()
                && other != holder
                && *expires_at > t
            {
                return Ok(LeaseAttempt::Held {
                    holder: other.clone(),
                    token: *token,
                    expires_in: Duration::from_secs_f64((expires_at - t).max(0.0)),
                });
            }
            if matches!(&current, Some((other, _, _)) if !other.is_empty() && other != holder) {
                fence_off(&tx, session_id).await?;
            }
            let token = current.map_or(1, |(_, token, _)| token + 1);
            let expires_at = t + ttl.as_secs_f64();
            tx.execute(
                "INSERT INTO hermes_session_leases \
                 (session_id, holder, token, acquired_at, heartbeat_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $4, $5) \
                 ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, \
                 token = excluded.token, acquired_at = excluded.acquired_at, \
                 heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at",
                &[&session_id, &holder, &token, &t, &expires_at],
            )
            .await?;
            Ok(LeaseAttempt::Acquired(Lease {
                session_id: session_id.to_string(),
                holder: holder.to_string(),
                token,
                expires_at,
            }))
        })
    }

    /// Renews `lease` to `ttl` from now; the new expiry when it was still held.
    pub(crate) async fn renew_lease(
        &self,
        lease: &Lease,
        ttl: Duration,
    ) -> Result<Option<f64>, StoreError> {
        let t = now();
        let expires_at = t + ttl.as_secs_f64();
        write_tx!(self, "renew_lease", |tx| {
            let n = tx
                .execute(
                    "UPDATE hermes_session_leases SET heartbeat_at = $1, expires_at = $2 \
                     WHERE session_id = $3 AND holder = $4 AND token = $5",
                    &[
                        &t,
                        &expires_at,
                        &lease.session_id,
                        &lease.holder,
                        &lease.token,
                    ],
                )
                .await?;
            Ok((n == 1).then_some(expires_at))
        })
    }

    pub(crate) async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        write_tx!(self, "release_lease", |tx| {
            let n = tx
                .execute(
                    "UPDATE hermes_session_leases SET holder = '', expires_at = 0 \
                     WHERE session_id = $1 AND holder = $2 AND token = $3",
                    &[&lease.session_id, &lease.holder, &lease.token],
                )
                .await?;
            Ok(n == 1)
        })
    }

    pub(crate) async fn break_lease(&self, session_id: &str) -> Result<bool, StoreError> {
        write_tx!(self, "break_lease", |tx| {
            let n = tx
                .execute(
                    "UPDATE hermes_session_leases SET holder = '', expires_at = 0 \
                     WHERE session_id = $1 AND holder <> ''",
                    &[&session_id],
                )
                .await?;
            if n == 1 {
                fence_off(&tx, session_id).await?;
            }
            Ok(n == 1)
        })
    }

    pub(crate) async fn stats(&self) -> Result<StoreStats, StoreError> {
        read!(self, "stats", |c| {
            let row = c
                .query_one(
                    "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM messages), \
                     (SELECT count(*) FROM messages WHERE active = 1), \
                     (SELECT COALESCE(sum(input_tokens + output_tokens), 0)::bigint \
                      FROM sessions WHERE source <> 'subagent'), \
                     (SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint \
                      FROM pg_class c WHERE c.relkind = 'r' \
                      AND c.relnamespace = current_schema()::text::regnamespace \
                      AND (c.relname IN ('sessions', 'messages', 'session_model_usage', \
                      'gateway_routing') OR c.relname LIKE 'hermes\\_%'))",
                    &[],
                )
                .await?;
            let n = |i: usize| -> Result<u64, StoreError> {
                Ok(row.try_get::<_, i64>(i)?.max(0) as u64)
            };
            Ok(StoreStats {
                sessions: n(0)?,
                messages: n(1)?,
                active_messages: n(2)?,
                total_tokens: n(3)?,
                db_bytes: n(4)?,
                schema_version: version(c).await?,
            })
        })
    }

    pub(crate) async fn schema_version(&self) -> Result<i64, StoreError> {
        read!(self, "schema_version", |c| { version(c).await })
    }

    pub(crate) async fn schema_check(&self) -> Result<SchemaReport, StoreError> {
        read!(self, "schema_check", |c| {
            let mut missing = Vec::new();
            for (table, columns) in REQUIRED {
                let rows = c
                    .query(
                        "SELECT column_name::text FROM information_schema.columns \
                         WHERE table_schema = current_schema() AND table_name = $1",
                        &[table],
                    )
                    .await?;
                let have: Vec<String> = rows
                    .iter()
                    .map(|r| r.try_get(0))
                    .collect::<Result<_, _>>()?;
                for column in *columns {
                    if !have.iter().any(|h| h == column) {
                        missing.push(format!("{table}.{column}"));
                    }
                }
            }
            Ok(SchemaReport {
                found: Some(version(c).await?),
                supported: PG_SCHEMA_VERSION,
                hermes_layout: 0,
                missing,
            })
        })
    }

    pub(crate) async fn integrity_check(&self) -> Result<String, StoreError> {
        read!(self, "integrity_check", |c| {
            // What PostgreSQL can lose that SQLite's integrity check would find: rows whose
            // session is gone (the foreign keys prevent it; a restore without them may not).
            let orphans: i64 = c
                .query_one(
                    "SELECT count(*) FROM messages m WHERE NOT EXISTS \
                     (SELECT 1 FROM sessions s WHERE s.id = m.session_id)",
                    &[],
                )
                .await?
                .try_get(0)?;
            Ok(if orphans == 0 {
                "ok".to_string()
            } else {
                format!("{orphans} messages belong to no session")
            })
        })
    }

    pub(crate) async fn search_index_check(&self) -> Result<SearchIndexReport, StoreError> {
        read!(self, "search_index_check", |c| {
            // The word index is a generated column: a row without it was written around the
            // schema (a bulk load with the column dropped).
            let missing: i64 = c
                .query_one(
                    "SELECT count(*) FROM messages WHERE search_tsv IS NULL",
                    &[],
                )
                .await?
                .try_get(0)?;
            Ok(SearchIndexReport {
                missing: missing.max(0) as u64,
                orphaned: 0,
            })
        })
    }

    pub(crate) async fn rebuild_search_index(&self) -> Result<u64, StoreError> {
        read!(self, "rebuild_search_index", |c| {
            c.batch_execute(
                "REINDEX INDEX idx_messages_search; REINDEX INDEX idx_messages_trigram",
            )
            .await?;
            let n: i64 = c
                .query_one("SELECT count(*) FROM messages", &[])
                .await?
                .try_get(0)?;
            Ok(n.max(0) as u64)
        })
    }

    pub(crate) async fn write_probe(&self) -> Result<(), StoreError> {
        let id = format!("hermes-write-probe-{}", std::process::id());
        read!(self, "write_probe", |c| {
            let tx = c.transaction().await?;
            tx.execute(
                "INSERT INTO sessions (id, source, model, billing_provider, started_at, \
                 message_count, tool_call_count) VALUES ($1, 'cli', 'probe', 'probe', 0, 0, 0)",
                &[&id],
            )
            .await?;
            tx.execute(
                "INSERT INTO messages (session_id, role, content, timestamp) \
                 VALUES ($1, 'user', 'hermes write probe', 0)",
                &[&id],
            )
            .await?;
            tx.rollback().await?;
            Ok(())
        })
    }
}
