//! Claims (table `hermes_claims`, issue 21 item 4): "the first process to claim this key does
//! the work", shared by every process on one store. Two uses:
//! - inbound de-duplication: a gateway replica claims `(inbound, <platform>:<chat>:<message
//!   id>)` before it queues a message, with the message itself as the payload; a second
//!   delivery of the same message — to this replica after a restart, or to another replica —
//!   finds the claim and is dropped. The claim is marked done when the message's turn ended;
//!   an open claim whose holder died (its replica lease expired) is adopted by a live replica,
//!   which runs the message from the payload, so an acknowledged message is not lost with
//!   the process that acknowledged it;
//! - cron: a scheduler claims `(cron, <job id>@<due time>)` before it runs a due time, so a
//!   due time fires once across replicas whatever their `jobs.json` says.
//!
//! Like the lease table, the table is created with `CREATE TABLE IF NOT EXISTS` when the
//! store opens (Python Hermes does not know it and ignores it). Times are Unix seconds
//! (fractions kept) from the system clock of the process that writes them.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::leases::{Lease, now};
use crate::store::SqliteStore;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS hermes_claims (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    holder TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    done_at REAL,
    payload TEXT,
    PRIMARY KEY (scope, key)
);
CREATE INDEX IF NOT EXISTS hermes_claims_open ON hermes_claims (scope, done_at, claimed_at)";

/// One claim as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// What kind of work (`inbound`, `cron`).
    pub scope: String,
    /// The work's key within the scope (a platform message id, a job's due time).
    pub key: String,
    /// Who claimed it (a replica id).
    pub holder: String,
    /// Unix seconds of the claim.
    pub claimed_at: f64,
    /// Unix seconds when the work was marked done; `None` while it is open.
    pub done_at: Option<f64>,
    /// What the holder needs to redo the work (an inbound message as JSON), if anything.
    pub payload: Option<String>,
}

/// Creates the claims table if it is missing (called once when the store opens).
pub(crate) fn create_table(store: &SqliteStore) -> Result<(), StoreError> {
    store.write("create_claims_table", |tx| {
        tx.execute_batch(CREATE)
            .map_err(store.sql_err("create_claims_table"))
    })
}

/// Columns of [`ClaimRecord`], in its order.
const COLUMNS: &str = "scope, key, holder, claimed_at, done_at, payload";

fn record(r: &rusqlite::Row<'_>) -> rusqlite::Result<ClaimRecord> {
    Ok(ClaimRecord {
        scope: r.get(0)?,
        key: r.get(1)?,
        holder: r.get(2)?,
        claimed_at: r.get(3)?,
        done_at: r.get(4)?,
        payload: r.get(5)?,
    })
}

/// `s` with `LIKE`'s wildcards (and the escape character) escaped by `\`.
pub(crate) fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl SqliteStore {
    /// Claims `(scope, key)` for `holder`, storing `payload`. `Ok(true)` when this call made
    /// the claim, `Ok(false)` when it existed already (whoever made it, done or not). One
    /// write transaction, so of two processes claiming at once exactly one gets `true`.
    ///
    /// Errors: [`StoreError::Sqlite`] / [`StoreError::Busy`] from the write.
    pub fn claim(
        &self,
        scope: &str,
        key: &str,
        holder: &str,
        payload: Option<&str>,
    ) -> Result<bool, StoreError> {
        let n = self.write("claim", |tx| {
            tx.execute(
                "INSERT INTO hermes_claims (scope, key, holder, claimed_at, payload) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (scope, key) DO NOTHING",
                params![scope, key, holder, now(), payload],
            )
            .map_err(self.sql_err("claim"))
        })?;
        Ok(n == 1)
    }

    /// Marks `(scope, key)` done (its payload is dropped). `Ok(false)` when there is no such
    /// open claim.
    ///
    /// Errors: as [`SqliteStore::claim`].
    pub fn finish_claim(&self, scope: &str, key: &str) -> Result<bool, StoreError> {
        let n = self.write("finish_claim", |tx| {
            tx.execute(
                "UPDATE hermes_claims SET done_at = ?3, payload = NULL \
                 WHERE scope = ?1 AND key = ?2 AND done_at IS NULL",
                params![scope, key, now()],
            )
            .map_err(self.sql_err("finish_claim"))
        })?;
        Ok(n == 1)
    }

    /// Withdraws `holder`'s open claim of `(scope, key)` (the work was not taken on, so a
    /// retry of it must be accepted). `Ok(false)` when there is no such claim.
    ///
    /// Errors: as [`SqliteStore::claim`].
    pub fn release_claim(&self, scope: &str, key: &str, holder: &str) -> Result<bool, StoreError> {
        let n = self.write("release_claim", |tx| {
            tx.execute(
                "DELETE FROM hermes_claims \
                 WHERE scope = ?1 AND key = ?2 AND holder = ?3 AND done_at IS NULL",
                params![scope, key, holder],
            )
            .map_err(self.sql_err("release_claim"))
        })?;
        Ok(n == 1)
    }

    /// The open claims of `scope`, oldest first, at most `limit`.
    ///
    /// Errors: [`StoreError::Sqlite`].
    pub fn open_claims(&self, scope: &str, limit: usize) -> Result<Vec<ClaimRecord>, StoreError> {
        let conn = self.lock();
        let err = self.sql_err("open_claims");
        let mut st = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM hermes_claims \
                 WHERE scope = ?1 AND done_at IS NULL ORDER BY claimed_at, key LIMIT ?2"
            ))
            .map_err(&err)?;
        let rows = st
            .query_map(
                params![scope, i64::try_from(limit).unwrap_or(i64::MAX)],
                record,
            )
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(&err)?;
        Ok(rows)
    }

    /// Hands `from`'s open claim of `(scope, key)` to `to` (a dead holder's work taken over).
    /// `Ok(true)` for exactly one of several processes adopting at once.
    ///
    /// Errors: as [`SqliteStore::claim`].
    pub fn adopt_claim(
        &self,
        scope: &str,
        key: &str,
        from: &str,
        to: &str,
    ) -> Result<bool, StoreError> {
        let n = self.write("adopt_claim", |tx| {
            tx.execute(
                "UPDATE hermes_claims SET holder = ?4 \
                 WHERE scope = ?1 AND key = ?2 AND holder = ?3 AND done_at IS NULL",
                params![scope, key, from, to],
            )
            .map_err(self.sql_err("adopt_claim"))
        })?;
        Ok(n == 1)
    }

    /// Deletes the done claims made before `before` (Unix seconds); returns how many.
    ///
    /// Errors: as [`SqliteStore::claim`].
    pub fn prune_claims(&self, before: f64) -> Result<usize, StoreError> {
        self.write("prune_claims", |tx| {
            tx.execute(
                "DELETE FROM hermes_claims WHERE done_at IS NOT NULL AND claimed_at < ?1",
                params![before],
            )
            .map_err(self.sql_err("prune_claims"))
        })
    }

    /// The claim of `(scope, key)`, if any.
    ///
    /// Errors: [`StoreError::Sqlite`].
    pub fn get_claim(&self, scope: &str, key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        let conn = self.lock();
        conn.query_row(
            &format!("SELECT {COLUMNS} FROM hermes_claims WHERE scope = ?1 AND key = ?2"),
            params![scope, key],
            record,
        )
        .optional()
        .map_err(self.sql_err("get_claim"))
    }

    /// The held leases whose name starts with `prefix` (`""`: all), by name: session leases
    /// and the named leases of replicas (`replica:<id>`) and of single-connection platforms
    /// (`leader:<platform>`). Expired ones are included (their holder may still renew);
    /// released ones are not.
    ///
    /// Errors: [`StoreError::Sqlite`].
    pub fn leases(&self, prefix: &str) -> Result<Vec<Lease>, StoreError> {
        let conn = self.lock();
        let err = self.sql_err("leases");
        let pattern = format!("{}%", like_escape(prefix));
        let mut st = conn
            .prepare_cached(
                "SELECT session_id, holder, token, expires_at FROM hermes_session_leases \
                 WHERE holder <> '' AND session_id LIKE ?1 ESCAPE '\\' ORDER BY session_id",
            )
            .map_err(&err)?;
        let rows = st
            .query_map(params![pattern], |r| {
                Ok(Lease {
                    session_id: r.get(0)?,
                    holder: r.get(1)?,
                    token: r.get(2)?,
                    expires_at: r.get(3)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(&err)?;
        Ok(rows)
    }
}
