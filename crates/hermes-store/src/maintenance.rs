//! Repairs for `hermes doctor` (issue 9 item 2): checking that the word index
//! (`messages_fts`) holds exactly one row per message, and rebuilding both search indexes
//! from `messages` when it does not (an index left behind by an interrupted bulk edit or a
//! hand-edited file). Rebuilding only rewrites derived data: no message changes.

use crate::error::StoreError;
use crate::schema::REBUILD_SEARCH;
use crate::store::SessionStore;

/// How the word index compares with `messages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SearchIndexReport {
    /// Messages that have no row in the word index (search cannot find them).
    pub missing: u64,
    /// Index rows whose message no longer exists (search returns dead hits).
    pub orphaned: u64,
}

impl SearchIndexReport {
    /// True when every message is indexed exactly once and nothing else is.
    pub fn in_sync(&self) -> bool {
        self.missing == 0 && self.orphaned == 0
    }
}

impl SessionStore {
    /// Compares the word index with `messages` (two counting queries; read-only).
    pub fn search_index_check(&self) -> Result<SearchIndexReport, StoreError> {
        let conn = self.lock();
        let err = self.sql_err("search_index_check");
        let count = |sql: &str| {
            conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n.max(0) as u64)
        };
        Ok(SearchIndexReport {
            missing: count(
                "SELECT count(*) FROM messages WHERE id NOT IN (SELECT rowid FROM messages_fts)",
            )
            .map_err(&err)?,
            orphaned: count(
                "SELECT count(*) FROM messages_fts WHERE rowid NOT IN (SELECT id FROM messages)",
            )
            .map_err(&err)?,
        })
    }

    /// Empties and refills both search indexes from `messages` in one write transaction
    /// (all or nothing, waiting for the lock like every write); returns the number of
    /// messages indexed.
    pub fn rebuild_search_index(&self) -> Result<u64, StoreError> {
        self.write("rebuild_search_index", |tx| {
            let err = self.sql_err("rebuild_search_index");
            tx.execute_batch(REBUILD_SEARCH).map_err(&err)?;
            let n = tx
                .query_row("SELECT count(*) FROM messages_fts", [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(&err)?;
            Ok(n.max(0) as u64)
        })
    }
}
