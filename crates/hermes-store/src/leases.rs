//! Session leases (table `hermes_session_leases`, issue 18 §4): one turn per session across
//! front ends and processes. A front end takes the lease of a session before it runs a turn
//! on it and gives it back after; a second holder — another front end of the same process,
//! or another process on the same `state.db` — sees the session as busy until then. A holder
//! that dies stops renewing; once its lease expires, the next acquirer takes it over.
//!
//! Each acquisition gets a fencing token, strictly increasing per session (kept across
//! releases), so a holder that was taken over can tell: its renew and release fail.
//!
//! The table is created with `CREATE TABLE IF NOT EXISTS` when the store opens (not a
//! schema migration: Python Hermes does not know the table and ignores it). Times are Unix
//! seconds (fractions kept) from the system clock of the process that writes them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::store::SqliteStore;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS hermes_session_leases (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    token INTEGER NOT NULL,
    acquired_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    expires_at REAL NOT NULL
)";

/// A held lease: who holds which session, with which fencing token, until when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    /// The session.
    pub session_id: String,
    /// The holder id (unique per front end and process, e.g. `api:<pid>:<random>`).
    pub holder: String,
    /// Fencing token: strictly greater than every earlier token of this session.
    pub token: i64,
    /// Unix seconds after which others may take the lease over.
    pub expires_at: f64,
}

/// The answer of [`SqliteStore::acquire_lease`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LeaseAttempt {
    /// The lease is now held by the caller.
    Acquired(Lease),
    /// Someone else holds it.
    Held {
        /// Their holder id.
        holder: String,
        /// Their fencing token: with the holder, what [`SqliteStore::release_lease`] needs
        /// to end exactly that lease (when its holder is known to be dead) and no later one.
        token: i64,
        /// How long until it expires unless renewed.
        expires_in: Duration,
    },
}

/// Unix seconds now (fractions kept), the clock of leases and claims.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Fences a taken-over holder off `session_id`'s history: bumps the session's history
/// version, which every write of a turn checks in its own transaction
/// ([`crate::SessionBackend::append_message_checked`] and the other checked forms), so the
/// old holder's next write fails with [`StoreError::HistoryChanged`] instead of
/// interleaving with the new holder's turn. Named leases that are not sessions
/// (`replica:…`, `leader:…`) have no history and are left alone.
fn fence_off(tx: &rusqlite::Transaction<'_>, session_id: &str) -> rusqlite::Result<()> {
    let is_session = tx
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .exists([session_id])?;
    if is_session {
        crate::messages::bump_version(tx, session_id)?;
    }
    Ok(())
}

/// Creates the lease table if it is missing (called once when the store opens).
pub(crate) fn create_table(store: &SqliteStore) -> Result<(), StoreError> {
    store.write("create_lease_table", |tx| {
        tx.execute_batch(CREATE)
            .map_err(store.sql_err("create_lease_table"))
    })
}

impl SqliteStore {
    /// Takes the lease of `session_id` for `holder` for `ttl`, unless another holder has an
    /// unexpired one. The caller's own unexpired lease is taken again with a new token. Runs
    /// in one write transaction, so two processes cannot both acquire. Taking over another
    /// holder's expired lease also fences that holder off the session's history (its later
    /// checked writes fail with [`StoreError::HistoryChanged`]).
    ///
    /// Errors: [`StoreError::Sqlite`] / [`StoreError::Busy`] from the write.
    pub fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        self.write("acquire_lease", |tx| {
            let err = self.sql_err("acquire_lease");
            let t = now();
            let row: Option<(String, i64, f64)> = tx
                .query_row(
                    "SELECT holder, token, expires_at FROM hermes_session_leases \
                     WHERE session_id = ?1",
                    params![session_id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(&err)?;
            if let Some((current, token, expires_at)) = &row
                && !current.is_empty()
                && current != holder
                && *expires_at > t
            {
                return Ok(LeaseAttempt::Held {
                    holder: current.clone(),
                    token: *token,
                    expires_in: Duration::from_secs_f64((expires_at - t).max(0.0)),
                });
            }
            let taken_over =
                matches!(&row, Some((current, _, _)) if !current.is_empty() && current != holder);
            if taken_over {
                fence_off(tx, session_id).map_err(&err)?;
            }
            let token = row.map_or(1, |(_, token, _)| token + 1);
            let expires_at = t + ttl.as_secs_f64();
            tx.execute(
                "INSERT INTO hermes_session_leases \
                 (session_id, holder, token, acquired_at, heartbeat_at, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5) \
                 ON CONFLICT(session_id) DO UPDATE SET holder = excluded.holder, \
                 token = excluded.token, acquired_at = excluded.acquired_at, \
                 heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at",
                params![session_id, holder, token, t, expires_at],
            )
            .map_err(&err)?;
            Ok(LeaseAttempt::Acquired(Lease {
                session_id: session_id.to_string(),
                holder: holder.to_string(),
                token,
                expires_at,
            }))
        })
    }

    /// Extends `lease` to `ttl` from now (the heartbeat). `Ok(false)` when it is no longer
    /// held with this token (expired and taken over, or released): the holder must stop.
    ///
    /// Errors: as [`SqliteStore::acquire_lease`].
    pub fn renew_lease(&self, lease: &mut Lease, ttl: Duration) -> Result<bool, StoreError> {
        let t = now();
        let expires_at = t + ttl.as_secs_f64();
        let changed = self.write("renew_lease", |tx| {
            tx.execute(
                "UPDATE hermes_session_leases SET heartbeat_at = ?1, expires_at = ?2 \
                 WHERE session_id = ?3 AND holder = ?4 AND token = ?5",
                params![t, expires_at, lease.session_id, lease.holder, lease.token],
            )
            .map_err(self.sql_err("renew_lease"))
        })?;
        if changed == 1 {
            lease.expires_at = expires_at;
        }
        Ok(changed == 1)
    }

    /// Gives `lease` back (the token is kept, so the next one is greater). `Ok(false)` when
    /// it was no longer held with this token.
    ///
    /// Errors: as [`SqliteStore::acquire_lease`].
    pub fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let changed = self.write("release_lease", |tx| {
            tx.execute(
                "UPDATE hermes_session_leases SET holder = '', expires_at = 0 \
                 WHERE session_id = ?1 AND holder = ?2 AND token = ?3",
                params![lease.session_id, lease.holder, lease.token],
            )
            .map_err(self.sql_err("release_lease"))
        })?;
        Ok(changed == 1)
    }
}

impl SqliteStore {
    /// Ends whatever lease `session_id` has, whoever holds it (recovery when the holder is
    /// known to be dead and waiting for the expiry is not wanted). The token is kept, so the
    /// old holder's renew and release fail. Returns whether a lease was held.
    ///
    /// Errors: as [`SqliteStore::acquire_lease`].
    pub fn break_lease(&self, session_id: &str) -> Result<bool, StoreError> {
        let changed = self.write("break_lease", |tx| {
            let err = self.sql_err("break_lease");
            let n = tx
                .execute(
                    "UPDATE hermes_session_leases SET holder = '', expires_at = 0 \
                     WHERE session_id = ?1 AND holder != ''",
                    params![session_id],
                )
                .map_err(&err)?;
            if n == 1 {
                fence_off(tx, session_id).map_err(&err)?;
            }
            Ok(n)
        })?;
        Ok(changed == 1)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn acquired(a: LeaseAttempt) -> Lease {
        match a {
            LeaseAttempt::Acquired(l) => l,
            other => panic!("not acquired: {other:?}"),
        }
    }

    /// Two handles on one file behave like two processes.
    #[test]
    fn one_holder_at_a_time_across_handles_with_increasing_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let a = SqliteStore::open(&db).unwrap();
        let b = SqliteStore::open(&db).unwrap();
        let ttl = Duration::from_secs(30);
        let la = acquired(a.acquire_lease("s1", "proc-a", ttl).unwrap());
        match b.acquire_lease("s1", "proc-b", ttl).unwrap() {
            LeaseAttempt::Held {
                holder, expires_in, ..
            } => {
                assert_eq!(holder, "proc-a");
                assert!(expires_in <= ttl && expires_in > Duration::from_secs(25));
            }
            other => panic!("{other:?}"),
        }
        // Other sessions are independent.
        acquired(b.acquire_lease("s2", "proc-b", ttl).unwrap());
        let mut la2 = la.clone();
        assert!(a.renew_lease(&mut la2, ttl).unwrap());
        assert!(a.release_lease(&la2).unwrap());
        let lb = acquired(b.acquire_lease("s1", "proc-b", ttl).unwrap());
        assert!(lb.token > la.token, "fencing token increases");
        // The old holder's token is stale now.
        let mut stale = la.clone();
        assert!(!a.renew_lease(&mut stale, ttl).unwrap());
        assert!(!a.release_lease(&stale).unwrap());
    }

    #[test]
    fn an_expired_lease_is_taken_over_and_the_old_holder_fenced_off() {
        let a = SqliteStore::open_in_memory().unwrap();
        let mut dead = acquired(
            a.acquire_lease("s1", "crashed", Duration::from_millis(20))
                .unwrap(),
        );
        std::thread::sleep(Duration::from_millis(60));
        let next = acquired(
            a.acquire_lease("s1", "alive", Duration::from_secs(30))
                .unwrap(),
        );
        assert_eq!(next.token, dead.token + 1);
        assert!(a.break_lease("s1").unwrap());
        assert!(!a.break_lease("s1").unwrap());
        assert!(!a.renew_lease(&mut dead, Duration::from_secs(30)).unwrap());
        assert!(!a.release_lease(&dead).unwrap());
    }
}
