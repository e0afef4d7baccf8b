//! Shared documents on PostgreSQL (table `hermes_documents`, schema version 3): the same
//! versioned compare-and-replace as the SQLite store's (`crate::documents`).

use super::db::{Db, now, read, write_tx};
use crate::documents::Document;
use crate::error::StoreError;

impl Db {
    pub(crate) async fn document(
        &self,
        scope: &str,
        name: &str,
    ) -> Result<Option<Document>, StoreError> {
        read!(self, "document", |c| {
            let row = c
                .query_opt(
                    "SELECT body, version FROM hermes_documents WHERE scope = $1 AND name = $2",
                    &[&scope, &name],
                )
                .await?;
            Ok(row.map(|r| Document {
                body: r.get(0),
                version: r.get(1),
            }))
        })
    }

    pub(crate) async fn put_document(
        &self,
        scope: &str,
        name: &str,
        body: &str,
        expected: Option<i64>,
    ) -> Result<bool, StoreError> {
        write_tx!(self, "put_document", |tx| {
            let n = match expected {
                None => {
                    tx.execute(
                        "INSERT INTO hermes_documents (scope, name, body, version, updated_at) \
                         VALUES ($1, $2, $3, 1, $4) ON CONFLICT (scope, name) DO NOTHING",
                        &[&scope, &name, &body, &now()],
                    )
                    .await?
                }
                Some(v) => {
                    tx.execute(
                        "UPDATE hermes_documents SET body = $3, version = version + 1, \
                         updated_at = $4 WHERE scope = $1 AND name = $2 AND version = $5",
                        &[&scope, &name, &body, &now(), &v],
                    )
                    .await?
                }
            };
            Ok(n == 1)
        })
    }
}
