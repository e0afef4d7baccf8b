//! Claims and the listing of named leases on PostgreSQL (the contract of `claims.rs` and
//! [`crate::SessionBackend::leases`] for SQLite). Every write is one `SERIALIZABLE`
//! transaction, so of two replicas claiming or adopting one key at once exactly one wins.

use tokio_postgres::Row;

use super::db::{Db, now, read, write_tx};
use crate::claims::{ClaimRecord, like_escape};
use crate::error::StoreError;
use crate::leases::Lease;

const COLUMNS: &str = "scope, key, holder, claimed_at, done_at, payload";

fn record(r: &Row) -> Result<ClaimRecord, StoreError> {
    Ok(ClaimRecord {
        scope: r.try_get(0)?,
        key: r.try_get(1)?,
        holder: r.try_get(2)?,
        claimed_at: r.try_get(3)?,
        done_at: r.try_get(4)?,
        payload: r.try_get(5)?,
    })
}

impl Db {
    pub(crate) async fn claim(
        &self,
        scope: &str,
        key: &str,
        holder: &str,
        payload: Option<&str>,
    ) -> Result<bool, StoreError> {
        write_tx!(self, "claim", |tx| {
            let n = tx
                .execute(
                    "INSERT INTO hermes_claims (scope, key, holder, claimed_at, payload) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, key) DO NOTHING",
                    &[&scope, &key, &holder, &now(), &payload],
                )
                .await?;
            Ok(n == 1)
        })
    }

    pub(crate) async fn finish_claim(&self, scope: &str, key: &str) -> Result<bool, StoreError> {
        write_tx!(self, "finish_claim", |tx| {
            let n = tx
                .execute(
                    "UPDATE hermes_claims SET done_at = $3, payload = NULL \
                     WHERE scope = $1 AND key = $2 AND done_at IS NULL",
                    &[&scope, &key, &now()],
                )
                .await?;
            Ok(n == 1)
        })
    }

    pub(crate) async fn release_claim(
        &self,
        scope: &str,
        key: &str,
        holder: &str,
    ) -> Result<bool, StoreError> {
        write_tx!(self, "release_claim", |tx| {
            let n = tx
                .execute(
                    "DELETE FROM hermes_claims \
                     WHERE scope = $1 AND key = $2 AND holder = $3 AND done_at IS NULL",
                    &[&scope, &key, &holder],
                )
                .await?;
            Ok(n == 1)
        })
    }

    pub(crate) async fn open_claims(
        &self,
        scope: &str,
        limit: usize,
    ) -> Result<Vec<ClaimRecord>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read!(self, "open_claims", |c| {
            let rows = c
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM hermes_claims WHERE scope = $1 \
                         AND done_at IS NULL ORDER BY claimed_at, key LIMIT $2"
                    ),
                    &[&scope, &limit],
                )
                .await?;
            rows.iter().map(record).collect()
        })
    }

    pub(crate) async fn get_claim(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<ClaimRecord>, StoreError> {
        read!(self, "get_claim", |c| {
            let row = c
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM hermes_claims WHERE scope = $1 AND key = $2"),
                    &[&scope, &key],
                )
                .await?;
            row.as_ref().map(record).transpose()
        })
    }

    pub(crate) async fn adopt_claim(
        &self,
        scope: &str,
        key: &str,
        from: &str,
        to: &str,
    ) -> Result<bool, StoreError> {
        write_tx!(self, "adopt_claim", |tx| {
            let n = tx
                .execute(
                    "UPDATE hermes_claims SET holder = $4 \
                     WHERE scope = $1 AND key = $2 AND holder = $3 AND done_at IS NULL",
                    &[&scope, &key, &from, &to],
                )
                .await?;
            Ok(n == 1)
        })
    }

    pub(crate) async fn prune_claims(&self, before: f64) -> Result<usize, StoreError> {
        write_tx!(self, "prune_claims", |tx| {
            let n = tx
                .execute(
                    "DELETE FROM hermes_claims WHERE done_at IS NOT NULL AND claimed_at < $1",
                    &[&before],
                )
                .await?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    pub(crate) async fn leases(&self, prefix: &str) -> Result<Vec<Lease>, StoreError> {
        let pattern = format!("{}%", like_escape(prefix));
        read!(self, "leases", |c| {
            let rows = c
                .query(
                    "SELECT session_id, holder, token, expires_at FROM hermes_session_leases \
                     WHERE holder <> '' AND session_id LIKE $1 ESCAPE '\\' ORDER BY session_id",
                    &[&pattern],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(Lease {
                        session_id: r.try_get(0)?,
                        holder: r.try_get(1)?,
                        token: r.try_get(2)?,
                        expires_at: r.try_get(3)?,
                    })
                })
                .collect()
        })
    }
}
