//! Shared documents (table `hermes_documents`, issue 21 item 4): small named JSON texts that
//! every process on one store reads and replaces, such as the DM pairing state of gateway
//! replicas on PostgreSQL. A document has a version that each replacement bumps; a
//! replacement names the version it read ([`SqliteStore::put_document`]), so two processes
//! changing one document at once never lose an update: the second one is told, re-reads and
//! applies its change again (optimistic concurrency).
//!
//! Like the claims table, the table is created with `CREATE TABLE IF NOT EXISTS` when the
//! store opens (Python Hermes does not know it and ignores it).

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::leases::now;
use crate::store::SqliteStore;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS hermes_documents (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (scope, name)
)";

/// One shared document as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The text (JSON by convention; the store does not parse it).
    pub body: String,
    /// 1 for the first write, one more for each replacement.
    pub version: i64,
}

/// Creates the documents table if it is missing (called once when the store opens).
pub(crate) fn create_table(store: &SqliteStore) -> Result<(), StoreError> {
    store.write("create_documents_table", |tx| {
        tx.execute_batch(CREATE)
            .map_err(store.sql_err("create_documents_table"))
    })
}

impl SqliteStore {
    /// The document `name` of `scope`, if it was ever written.
    ///
    /// Errors: [`StoreError::Sqlite`].
    pub fn document(&self, scope: &str, name: &str) -> Result<Option<Document>, StoreError> {
        let conn = self.lock();
        conn.query_row(
            "SELECT body, version FROM hermes_documents WHERE scope = ?1 AND name = ?2",
            params![scope, name],
            |r| {
                Ok(Document {
                    body: r.get(0)?,
                    version: r.get(1)?,
                })
            },
        )
        .optional()
        .map_err(self.sql_err("document"))
    }

    /// Writes `body` as document `name` of `scope` when it is still at version `expected`
    /// (`None`: it must not exist yet). `Ok(true)` when written (its version is then one
    /// more), `Ok(false)` when another process changed it first: read it again and retry.
    ///
    /// Errors: [`StoreError::Sqlite`] / [`StoreError::Busy`] from the write.
    pub fn put_document(
        &self,
        scope: &str,
        name: &str,
        body: &str,
        expected: Option<i64>,
    ) -> Result<bool, StoreError> {
        let n = self.write("put_document", |tx| {
            let err = self.sql_err("put_document");
            match expected {
                None => tx
                    .execute(
                        "INSERT INTO hermes_documents (scope, name, body, version, updated_at) \
                         VALUES (?1, ?2, ?3, 1, ?4) ON CONFLICT (scope, name) DO NOTHING",
                        params![scope, name, body, now()],
                    )
                    .map_err(err),
                Some(v) => tx
                    .execute(
                        "UPDATE hermes_documents SET body = ?3, version = version + 1, \
                         updated_at = ?4 WHERE scope = ?1 AND name = ?2 AND version = ?5",
                        params![scope, name, body, now(), v],
                    )
                    .map_err(err),
            }
        })?;
        Ok(n == 1)
    }
}
