//! The pool, and the retry discipline of every PostgreSQL call: [`write_tx!`] runs a body in
//! one `SERIALIZABLE` transaction with its result in the write log, [`read!`] runs a read;
//! both retry what may succeed on another attempt (see the module doc of `postgres`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use rand::Rng;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::error::SqlState;

use super::config::PgOptions;
use crate::error::StoreError;

/// Write-log entries older than this are deleted (a retry never runs that late: the retry
/// budget is far shorter).
const WRITE_LOG_KEEP: Duration = Duration::from_secs(3600);

/// The write log is pruned after this many writes of one process.
const PRUNE_EVERY: u64 = 500;

/// The pool and what every call needs.
pub(crate) struct Db {
    pool: Pool,
    /// The schema of hermes' tables, when not the default (validated).
    pub(crate) schema: Option<String>,
    /// Server and database, without user or password (safe to log and show).
    pub(crate) location: String,
    retry_budget_ms: AtomicU64,
    writes: AtomicU64,
}

impl Db {
    /// The pool for `options` (no connection is opened yet). Must run inside the store's
    /// runtime (the pool's timeouts use it).
    pub(crate) fn new(options: &PgOptions) -> Result<Db, StoreError> {
        let config = options.driver_config()?;
        // The connector is used only when the DSN says `sslmode=require` (the driver is told
        // `sslmode=disable` otherwise, and trusts nothing then).
        let required = config.get_ssl_mode() == tokio_postgres::config::SslMode::Require;
        let tls = super::tls::connector(required, options.tls_root().as_deref())?;
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(options.connect_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|e| StoreError::Config {
                detail: format!("cannot build the connection pool: {e}"),
            })?;
        Ok(Db {
            pool,
            schema: options.schema.clone(),
            location: options.location(),
            retry_budget_ms: AtomicU64::new(millis(options.retry_budget)),
            writes: AtomicU64::new(0),
        })
    }

    pub(crate) fn set_retry_budget(&self, budget: Duration) {
        self.retry_budget_ms
            .store(millis(budget), Ordering::Relaxed);
    }

    fn retry_budget(&self) -> Duration {
        Duration::from_millis(self.retry_budget_ms.load(Ordering::Relaxed))
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(source) => StoreError::Postgres {
                op: "connect",
                db: self.location.clone(),
                source,
            },
            other => StoreError::Unavailable {
                op: "connect",
                db: self.location.clone(),
                waited: Duration::ZERO,
                detail: format!("no connection from the pool: {other}"),
            },
        })
    }

    /// Another pooled connection if one can be had without waiting (an idle one, or a new
    /// one while the pool has room), for a read that splits its work over two connections;
    /// `None` when the pool is busy or the connection fails (the read then goes on alone).
    pub(crate) async fn spare_client(&self) -> Option<deadpool_postgres::Client> {
        let mut timeouts = self.pool.timeouts();
        timeouts.wait = Some(Duration::ZERO);
        self.pool.timeout_get(&timeouts).await.ok()
    }

    /// The error of a call made after the store's runtime stopped.
    pub(crate) fn gone(&self, op: &'static str) -> StoreError {
        StoreError::Unavailable {
            op,
            db: self.location.clone(),
            waited: Duration::ZERO,
            detail: "the store's client threads have stopped".into(),
        }
    }

    /// Counts a committed write; every [`PRUNE_EVERY`] writes, deletes old write-log rows.
    pub(crate) async fn after_write(&self, client: &deadpool_postgres::Client) {
        let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(PRUNE_EVERY) {
            let cutoff = now() - WRITE_LOG_KEEP.as_secs_f64();
            if let Err(e) = client
                .execute("DELETE FROM hermes_write_log WHERE at < $1", &[&cutoff])
                .await
            {
                tracing::debug!(db = %self.location, error = %e, "write log not pruned");
            }
        }
    }
}

/// Unix seconds now (fractions kept), as stored.
pub(crate) fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A fresh random write id (128 bits, hex).
pub(crate) fn new_write_id() -> String {
    format!("{:032x}", rand::rng().random::<u128>())
}

/// The result a write with `write_id` committed, if it did.
pub(crate) async fn logged<T: DeserializeOwned>(
    client: &deadpool_postgres::Client,
    write_id: &str,
) -> Result<Option<T>, StoreError> {
    let row = client
        .query_opt(
            "SELECT result FROM hermes_write_log WHERE write_id = $1",
            &[&write_id],
        )
        .await?;
    match row {
        None => Ok(None),
        Some(row) => {
            let text: String = row.try_get(0)?;
            serde_json::from_str(&text)
                .map(Some)
                .map_err(|source| StoreError::Json {
                    what: "write log result",
                    source,
                })
        }
    }
}

/// Records the result of the write `write_id` in its own transaction.
pub(crate) async fn log_result<T: Serialize>(
    tx: &deadpool_postgres::Transaction<'_>,
    write_id: &str,
    value: &T,
) -> Result<(), StoreError> {
    let text = serde_json::to_string(value).map_err(|source| StoreError::Json {
        what: "write log result",
        source,
    })?;
    tx.execute(
        "INSERT INTO hermes_write_log (write_id, result, at) VALUES ($1, $2, $3)",
        &[&write_id, &text, &now()],
    )
    .await?;
    Ok(())
}

/// Lets `?` work on driver calls inside store bodies; the `op` and `db` are filled in by
/// [`Retry::failed`] before the error leaves the store.
impl From<tokio_postgres::Error> for StoreError {
    fn from(source: tokio_postgres::Error) -> StoreError {
        StoreError::Postgres {
            op: "query",
            db: String::new(),
            source,
        }
    }
}

/// What a failed attempt means.
enum Class {
    /// Retry; `connection` when the connection was lost (a write's outcome is unknown).
    Retry {
        connection: bool,
    },
    Fatal,
}

/// The SQLSTATEs retried: serialization failure, deadlock, statement cancelled (the
/// statement timeout while waiting for a lock), shutdowns, read-only during a failover.
fn retried_state(state: &SqlState) -> Option<bool> {
    let transient = [
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::QUERY_CANCELED,
    ];
    let connection = [
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::READ_ONLY_SQL_TRANSACTION,
        SqlState::TOO_MANY_CONNECTIONS,
    ];
    if transient.contains(state) {
        Some(false)
    } else if connection.contains(state) || state.code().starts_with("08") {
        Some(true)
    } else {
        None
    }
}

fn classify(e: &StoreError) -> Class {
    match e {
        StoreError::Unavailable { .. } => Class::Retry { connection: true },
        StoreError::Postgres { source, .. } => match source.code() {
            Some(state) => match retried_state(state) {
                Some(connection) => Class::Retry { connection },
                None => Class::Fatal,
            },
            // A certificate the server cannot prove, or a server without TLS: the same
            // on every attempt (its I/O source must not make it look like a lost link).
            None if is_tls_failure(source) => Class::Fatal,
            None if source.is_closed() || has_io_source(source) => {
                Class::Retry { connection: true }
            }
            None => Class::Fatal,
        },
        _ => Class::Fatal,
    }
}

/// Whether the driver failed in the TLS handshake (`Kind::Tls`, whose text it starts with).
fn is_tls_failure(e: &tokio_postgres::Error) -> bool {
    e.to_string().starts_with("error performing TLS handshake")
}

fn has_io_source(e: &tokio_postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    // Errors the driver raises for a dropped connection without an I/O source.
    let text = e.to_string();
    text.contains("connection closed") || text.contains("unexpected EOF")
}

/// The retry state of one call.
pub(crate) struct Retry<'a> {
    db: &'a Db,
    op: &'static str,
    start: Instant,
    attempts: u32,
    ambiguous: bool,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(db: &'a Db, op: &'static str) -> Retry<'a> {
        Retry {
            db,
            op,
            start: Instant::now(),
            attempts: 0,
            ambiguous: false,
        }
    }

    /// True once an attempt lost its connection: its write may have committed.
    pub(crate) fn ambiguous(&self) -> bool {
        self.ambiguous
    }

    /// Called after a successful attempt (logs a success after retries).
    pub(crate) fn succeeded(&self) {
        if self.attempts > 0 {
            tracing::info!(op = self.op, db = %self.db.location, attempts = self.attempts + 1, waited = ?self.start.elapsed(), "succeeded after retrying");
        }
    }

    /// Handles a failed attempt: `None` after sleeping when it should be retried, else the
    /// error to return (with the operation and database filled in).
    pub(crate) async fn failed(&mut self, e: StoreError) -> Option<StoreError> {
        match classify(&e) {
            Class::Fatal => Some(self.rewrap(e)),
            Class::Retry { connection } => {
                self.attempts += 1;
                self.ambiguous |= connection;
                let waited = self.start.elapsed();
                let detail = describe(&e);
                if waited >= self.db.retry_budget() {
                    tracing::warn!(op = self.op, db = %self.db.location, attempts = self.attempts, ?waited, %detail, "giving up");
                    return Some(StoreError::Unavailable {
                        op: self.op,
                        db: self.db.location.clone(),
                        waited,
                        detail,
                    });
                }
                tracing::debug!(op = self.op, db = %self.db.location, attempts = self.attempts, %detail, "retrying");
                tokio::time::sleep(jitter(self.attempts)).await;
                None
            }
        }
    }

    fn rewrap(&self, e: StoreError) -> StoreError {
        match e {
            StoreError::Postgres { source, .. } => StoreError::Postgres {
                op: self.op,
                db: self.db.location.clone(),
                source,
            },
            StoreError::Unavailable { waited, detail, .. } => StoreError::Unavailable {
                op: self.op,
                db: self.db.location.clone(),
                waited,
                detail,
            },
            other => other,
        }
    }
}

fn describe(e: &StoreError) -> String {
    match e {
        StoreError::Postgres { source, .. } => match source.code() {
            Some(state) => format!("SQLSTATE {}: {source}", state.code()),
            None => format!("connection lost: {source}"),
        },
        StoreError::Unavailable { detail, .. } => detail.clone(),
        other => other.to_string(),
    }
}

/// 10–60 ms at first, growing to 200–800 ms, randomized so replicas do not retry in step.
fn jitter(attempts: u32) -> Duration {
    let (lo, hi) = match attempts {
        0..=3 => (10, 60),
        4..=10 => (50, 250),
        _ => (200, 800),
    };
    Duration::from_millis(rand::rng().random_range(lo..=hi))
}

/// Pins a body's error type to [`StoreError`] (for the macros below).
pub(crate) fn typed<T, F>(f: F) -> F
where
    F: std::future::Future<Output = Result<T, StoreError>>,
{
    f
}

/// Runs `$body` (async code using `$tx`, ending in `Ok(value)`) in one `SERIALIZABLE`
/// transaction, records `value` in the write log, commits, and retries as [`Retry`] says.
/// After a lost connection the next attempt first looks the write up in the log.
macro_rules! write_tx {
    ($db:expr, $op:expr, |$tx:ident| $body:block) => {{
        let db: &$crate::postgres::db::Db = $db;
        let write_id = $crate::postgres::db::new_write_id();
        let mut retry = $crate::postgres::db::Retry::new(db, $op);
        loop {
            let ambiguous = retry.ambiguous();
            let attempt = $crate::postgres::db::typed(async {
                let mut client = db.client().await?;
                if ambiguous {
                    if let Some(v) = $crate::postgres::db::logged(&client, &write_id).await? {
                        return Ok(v);
                    }
                }
                let $tx = client
                    .build_transaction()
                    .isolation_level(tokio_postgres::IsolationLevel::Serializable)
                    .start()
                    .await?;
                let value = $crate::postgres::db::typed(async { $body }).await?;
                $crate::postgres::db::log_result(&$tx, &write_id, &value).await?;
                $tx.commit().await?;
                db.after_write(&client).await;
                Ok(value)
            })
            .await;
            match attempt {
                Ok(v) => {
                    retry.succeeded();
                    break Ok(v);
                }
                Err(e) => {
                    if let Some(e) = retry.failed(e).await {
                        break Err(e);
                    }
                }
            }
        }
    }};
}
pub(crate) use write_tx;

/// Runs `$body` (async code using the pooled connection `$client: &mut Client`, ending
/// in `Ok(value)`)
/// and retries it as [`Retry`] says (reads are safe to repeat).
macro_rules! read {
    ($db:expr, $op:expr, |$client:ident| $body:block) => {{
        let db: &$crate::postgres::db::Db = $db;
        let mut retry = $crate::postgres::db::Retry::new(db, $op);
        loop {
            let attempt = $crate::postgres::db::typed(async {
                let mut pooled = db.client().await?;
                let $client: &mut deadpool_postgres::Client = &mut pooled;
                $crate::postgres::db::typed(async { $body }).await
            })
            .await;
            match attempt {
                Ok(v) => {
                    retry.succeeded();
                    break Ok(v);
                }
                Err(e) => {
                    if let Some(e) = retry.failed(e).await {
                        break Err(e);
                    }
                }
            }
        }
    }};
}
pub(crate) use read;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_are_retried_by_class() {
        // Transient: retried on the same connection's terms (the write did not commit).
        for code in ["40001", "40P01", "57014"] {
            assert_eq!(
                retried_state(&SqlState::from_code(code)),
                Some(false),
                "{code}"
            );
        }
        // The connection is gone or unusable (a write's outcome is unknown).
        for code in [
            "57P01", "57P02", "57P03", "25006", "53300", "08006", "08003",
        ] {
            assert_eq!(
                retried_state(&SqlState::from_code(code)),
                Some(true),
                "{code}"
            );
        }
        // The caller's mistake or the data's: never retried.
        for code in ["23505", "42P01", "22P02", "42501"] {
            assert_eq!(retried_state(&SqlState::from_code(code)), None, "{code}");
        }
    }
}
