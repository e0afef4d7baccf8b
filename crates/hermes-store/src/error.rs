//! The store's typed errors.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong in [`crate::SessionStore`].
///
/// Each variant names the operation (`op`, e.g. `"append_message"`) and the database file
/// (`db`, `":memory:"` for an in-memory store) so a log line says what failed and where.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The parent directory of the database file could not be created.
    #[error("cannot create directory {path} for the session store: {source}")]
    CreateDir {
        /// The directory that could not be created.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// SQLite refused to open the database file.
    #[error("cannot open session store {db}: {source}")]
    Open {
        /// The database file.
        db: String,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// A SQLite statement failed.
    #[error("session store {db}: {op} failed: {source}")]
    Sqlite {
        /// The store operation that failed (the public method name).
        op: &'static str,
        /// The database file.
        db: String,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// Another connection held the write lock for longer than the retry budget
    /// ([`crate::WRITE_RETRY_BUDGET`], case C21). Nothing was written; the call may be retried.
    #[error(
        "session store {db}: {op} gave up after {waited:?}: the database stayed locked by another \
         process (nothing was written; try again later)"
    )]
    Busy {
        /// The store operation that could not get the lock.
        op: &'static str,
        /// The database file.
        db: String,
        /// How long the store kept retrying.
        waited: Duration,
    },
    /// Applying a schema migration failed.
    #[error("session store {db}: migration to schema version {version} failed: {source}")]
    Migration {
        /// The schema version the failed step would have produced.
        version: i64,
        /// The database file.
        db: String,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// The file is not a session store hermes can use: not SQLite, cut short, or an SQLite
    /// database of another program. Nothing in it was changed.
    #[error("{db} is not a usable Hermes session database: {detail} (the file was not changed)")]
    NotASessionStore {
        /// The database file.
        db: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The file has Python Hermes' layout at a schema version whose tables lack columns
    /// hermes reads or writes. Nothing in it was changed.
    #[error(
        "session store {db} has schema version {found} (Python Hermes' `schema_version` table); \
         this hermes uses version {supported} and needs columns it lacks: {}. Nothing was \
         changed. Open it once with Python Hermes 0.19.0 (`hermes sessions list`) to bring it \
         to version {supported}, or upgrade hermes if the file is newer",
        missing.join(", ")
    )]
    SchemaMismatch {
        /// The database file.
        db: String,
        /// `schema_version.version` found in the file (`None`: no row).
        found: String,
        /// [`crate::SCHEMA_VERSION`].
        supported: i64,
        /// The missing `table.column` names.
        missing: Vec<String>,
    },
    /// The copy made before migrating a file of hermes' earlier schema could not be written;
    /// the file was not migrated.
    #[error("session store {db}: cannot write the backup {backup} before migrating: {source}")]
    Backup {
        /// The database file.
        db: String,
        /// The backup file that could not be written.
        backup: String,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// Another session already has this title (titles are unique in the shared schema, as
    /// in Python Hermes).
    #[error("the title `{title}` is already used by session `{other}`")]
    TitleTaken {
        /// The title.
        title: String,
        /// The session that has it.
        other: String,
    },
    /// No session has the given id.
    #[error("session `{id}` not found")]
    SessionNotFound {
        /// The id that was looked up.
        id: String,
    },
    /// A version-checked write found the session's history changed since the writer loaded
    /// it (`/undo`, `/new`, compression in another agent or process); nothing was written.
    /// The writer should reload the session (issue 7 item 4).
    #[error(
        "session `{id}`: the history changed elsewhere (version {found}, this agent had {expected}); \
         nothing was written — reload the session"
    )]
    HistoryChanged {
        /// The session id.
        id: String,
        /// The `history_version` the writer had loaded.
        expected: u64,
        /// The version found in the store.
        found: u64,
    },
    /// A stored value could not be decoded (e.g. invalid JSON in `tool_calls`).
    #[error("session store {db}: corrupt {what} in message {message_id}: {detail}")]
    Corrupt {
        /// The database file.
        db: String,
        /// Which column (`tool_calls`, `reasoning`, `content_json`, `role`).
        what: &'static str,
        /// The message row id.
        message_id: i64,
        /// The decoder's error text.
        detail: String,
    },
    /// The `sessiondb:` settings are unusable (`config.yaml` or `HERMES_SESSIONDB_DSN`);
    /// the message names the key. The DSN itself is never part of it (it may hold a
    /// password).
    #[error("{detail}")]
    Config {
        /// What is wrong, starting with the key (`sessiondb.postgresql.dsn: …`).
        detail: String,
    },
    /// A PostgreSQL statement failed (not a connection loss or serialization conflict,
    /// which are retried).
    #[error("session store {db}: {op} failed: {}", pg_detail(source))]
    Postgres {
        /// The store operation that failed (the public method name).
        op: &'static str,
        /// The server and database (no user, no password).
        db: String,
        /// The driver's error.
        source: tokio_postgres::Error,
    },
    /// The PostgreSQL server could not be reached, or kept failing over or aborting the
    /// transaction (serialization conflicts, deadlocks), for the whole retry budget. Nothing
    /// was written; the call may be retried.
    #[error(
        "session store {db}: {op} gave up after {waited:?}: {detail} (nothing was written; try \
         again later)"
    )]
    Unavailable {
        /// The store operation.
        op: &'static str,
        /// The server and database (no user, no password).
        db: String,
        /// How long the store kept retrying.
        waited: Duration,
        /// The last failure.
        detail: String,
    },
    /// `hermes sessiondb migrate` cannot go on: the target is not empty (and `--merge` was
    /// not given), a value cannot be copied, or what was copied does not read back the same.
    /// Sessions committed before stay, and the next run resumes.
    #[error("sessiondb migrate: {detail}")]
    Import {
        /// What went wrong, naming the table, column and row.
        detail: String,
    },
    /// Encoding a value to JSON failed (export or message columns).
    #[error("cannot encode {what} as JSON: {source}")]
    Json {
        /// What was being encoded.
        what: &'static str,
        /// The serde error.
        source: serde_json::Error,
    },
}

impl StoreError {
    /// True for [`StoreError::Busy`] and [`StoreError::Unavailable`]: the write may succeed
    /// if retried later.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            StoreError::Busy { .. } | StoreError::Unavailable { .. }
        )
    }
}

/// The server's message (with its detail and SQLSTATE) for a database error, else the
/// driver's text.
fn pg_detail(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut out = format!("{} (SQLSTATE {})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                out.push_str(": ");
                out.push_str(detail);
            }
            out
        }
        // The driver's own text names only the kind (`error performing TLS handshake`);
        // the reason (`invalid peer certificate: UnknownIssuer`) is in its sources.
        None => {
            let mut out = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                let text = s.to_string();
                if !out.contains(&text) {
                    out.push_str(": ");
                    out.push_str(&text);
                }
                source = s.source();
            }
            out
        }
    }
}
