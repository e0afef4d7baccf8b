//! Repairs for `hermes doctor` (issue 9 item 2): checking that the word index
//! (`messages_fts`) holds exactly one row per message, and rebuilding both search indexes
//! from `messages` when it does not (an index left behind by an interrupted bulk edit or a
//! hand-edited file). Rebuilding only rewrites derived data: no message changes.

use crate::error::StoreError;
use crate::schema::REBUILD_SEARCH;
use crate::store::SqliteStore;
use crate::types::StoreStats;

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

impl SqliteStore {
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

/// What [`SqliteStore::schema_check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaReport {
    /// The file's Python schema version (`schema_version.version`; `None` when the row is
    /// missing).
    pub found: Option<i64>,
    /// The version this build writes ([`crate::SCHEMA_VERSION`]).
    pub supported: i64,
    /// `PRAGMA user_version` (hermes' layout mark, [`crate::HERMES_LAYOUT`]).
    pub hermes_layout: i64,
    /// `table.column` names hermes reads or writes that the file lacks (empty when usable).
    pub missing: Vec<String>,
}

impl SchemaReport {
    /// True when the file is at the version this build writes and has every column.
    pub fn is_current(&self) -> bool {
        self.found == Some(self.supported) && self.missing.is_empty()
    }
}

impl SqliteStore {
    /// Counts over the whole store.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let conn = self.lock();
        let err = self.sql_err("stats");
        let one = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0));
        let n = |v: i64| v.max(0) as u64;
        Ok(StoreStats {
            sessions: n(one("SELECT count(*) FROM sessions").map_err(&err)?),
            messages: n(one("SELECT count(*) FROM messages").map_err(&err)?),
            active_messages: n(one("SELECT count(*) FROM messages WHERE active = 1").map_err(&err)?),
            total_tokens: n(one(&format!(
                "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM sessions \
                     WHERE source != '{}'",
                crate::SUBAGENT_SOURCE
            ))
            .map_err(&err)?),
            db_bytes: n(one(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            )
            .map_err(&err)?),
            schema_version: crate::migrate::python_version(&conn)
                .map_err(&err)?
                .unwrap_or_default(),
        })
    }

    /// Compares the open file's schema with the one this build uses (for `hermes doctor`):
    /// its Python schema version and the columns hermes needs. Read-only.
    pub fn schema_check(&self) -> Result<SchemaReport, StoreError> {
        let conn = self.lock();
        let err = self.sql_err("schema_check");
        Ok(SchemaReport {
            found: crate::migrate::python_version(&conn).map_err(&err)?,
            supported: crate::SCHEMA_VERSION,
            hermes_layout: conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(&err)?,
            missing: crate::migrate::missing_columns(&conn, true).map_err(&err)?,
        })
    }

    /// Proves that a message can be stored, without storing one (for `hermes doctor`): in a
    /// `BEGIN IMMEDIATE` transaction (waiting for the lock like every write) it inserts a
    /// session, a message (which runs the search triggers) and the session counters, and
    /// then rolls everything back.
    ///
    /// Errors: whatever that write would meet ([`StoreError::Sqlite`] naming the failing
    /// step, [`StoreError::Busy`], a read-only file, a full disk).
    pub fn write_probe(&self) -> Result<(), StoreError> {
        let probe = crate::NewSession {
            id: format!("hermes-write-probe-{}", std::process::id()),
            source: "cli".into(),
            model: "probe".into(),
            provider: "probe".into(),
            ..crate::NewSession::default()
        };
        let message = hermes_protocol::Message::user("hermes write probe");
        let enc = crate::messages::encode(&message)?;
        let result = self.write("write_probe", |tx| {
            tx.execute(
                "INSERT INTO sessions (id, source, model, billing_provider, started_at, \
                 message_count, tool_call_count) VALUES (?1, ?2, ?3, ?4, 0, 0, 0)",
                rusqlite::params![probe.id, probe.source, probe.model, probe.provider],
            )?;
            crate::messages::append_in(tx, &probe.id, &message, &enc, 0.0, None, 0)?;
            // Rolled back by returning an error: nothing of the probe is committed.
            Err::<(), _>(StoreError::SessionNotFound {
                id: PROBE_ROLLED_BACK.to_string(),
            })
        });
        match result {
            Err(StoreError::SessionNotFound { id }) if id == PROBE_ROLLED_BACK => Ok(()),
            Err(e) => Err(e),
            Ok(()) => Ok(()),
        }
    }
}

/// Marker of the probe's deliberate rollback.
const PROBE_ROLLED_BACK: &str = "\u{0}write-probe-rolled-back";
