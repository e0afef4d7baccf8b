//! The PostgreSQL session store (issue 21; `sessiondb.provider: postgresql`): the same
//! behaviour as the SQLite store ([`crate::SessionBackend`], held to one conformance suite),
//! built on PostgreSQL's own means rather than a port of SQLite's:
//! - versioned migrations (`schema.rs`, table `hermes_schema_migrations`), applied under an
//!   advisory lock so replicas starting together migrate once;
//! - every write is one `SERIALIZABLE` transaction committed before the call returns (so
//!   each message is committed when complete, and the history-version check runs in the
//!   transaction that writes); serialization failures (`40001`), deadlocks (`40P01`), an
//!   administrator's or a crash's shutdown (`57P01`–`57P03`), a read-only server during a
//!   failover (`25006`) and lost connections are retried with jitter for the retry budget;
//! - no acknowledged write is lost or applied twice: each write records its result under a
//!   random write id in `hermes_write_log` in the same transaction, and a retry after a
//!   failure whose outcome is unknown (the connection dropped around `COMMIT`) first reads
//!   that log, returning the committed result instead of writing again;
//! - full-text search with a `tsvector` column (the language-agnostic `simple`
//!   configuration) and a GIN index, plus `pg_trgm` for CJK substrings, through the same
//!   query sanitizer as SQLite's FTS5 (`search.rs`);
//! - a `statement_timeout` on every connection.
//!
//! The API is blocking like SQLite's. The store owns a small tokio runtime (two worker
//! threads) and a `deadpool-postgres` pool; each call runs as a task on that runtime and the
//! calling thread waits for its result, so it may be called from any thread, an async
//! worker of another runtime included (it then blocks that worker, as a SQLite call does).
//!
//! Driver and pool: `tokio-postgres` + `deadpool-postgres` (CONVENTIONS): the maintained
//! async driver with typed `SqlState` codes (the retry policy needs them), and a small pool
//! with health checks on recycle; `sqlx` would bring its own macros, migrations and runtime
//! abstraction that this store does not need.

mod backend;
mod cells;
mod claims;
mod config;
mod db;
mod documents;
mod import;
mod messages;
mod misc;
mod schema;
mod search;
mod sessions;
mod tls;

pub use config::{PgOptions, masked_location};
pub use import::ImportReport;
pub use schema::PG_SCHEMA_VERSION;

use std::future::Future;
use std::sync::Arc;

use crate::error::StoreError;
use db::Db;

/// The PostgreSQL session store. Blocking, `Send + Sync`; cheap to share behind
/// [`crate::SessionStore`].
pub struct PgStore {
    db: Arc<Db>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("db", &self.db.location)
            .finish()
    }
}

impl PgStore {
    /// Connects to the database `options` names and brings it to this build's schema
    /// ([`PG_SCHEMA_VERSION`]; creating the tables and the `pg_trgm` extension in a new
    /// database, and the schema `options.schema` when given).
    ///
    /// Errors: [`StoreError::Config`] for an unusable DSN or option,
    /// [`StoreError::Unavailable`] when the server cannot be reached within the retry
    /// budget, [`StoreError::Postgres`] when a migration fails (for example a role that may
    /// not create the `pg_trgm` extension), [`StoreError::SchemaMismatch`] for a database
    /// migrated by a newer hermes.
    pub fn open(options: &PgOptions) -> Result<PgStore, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hermes-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Config {
                detail: format!("cannot start the PostgreSQL client's threads: {e}"),
            })?;
        let db = {
            let _guard = runtime.enter();
            Arc::new(Db::new(options)?)
        };
        let store = PgStore {
            db,
            runtime: Some(runtime),
        };
        store.run(|db| async move { schema::migrate(&db).await })?;
        Ok(store)
    }

    /// Runs `f(db)` as a task on the store's runtime and waits for its result on this thread.
    fn run<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Db>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return Err(self.db.gone("run"));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let fut = f(self.db.clone());
        runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().unwrap_or_else(|_| Err(self.db.gone("run")))
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Without blocking: the last handle may be dropped on an async worker thread.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
