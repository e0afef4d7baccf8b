//! The connection, write discipline (ARCHITECTURE §2 invariant 4) and session rows.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rand::Rng;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, Transaction, TransactionBehavior};

use crate::error::StoreError;
use crate::schema::{MIGRATIONS, SCHEMA_VERSION};
use crate::subagents::SUBAGENT_SOURCE;
use crate::types::{NewSession, SessionRecord};

/// Default total time a write keeps retrying while another connection holds the lock (case C21: it
/// must outlast multi-second maintenance locks; 30 s).
pub const WRITE_RETRY_BUDGET: Duration = Duration::from_secs(30);

/// SQLite's own wait per attempt (`PRAGMA busy_timeout`), 1 s.
const BUSY_TIMEOUT: Duration = Duration::from_secs(1);

/// A passive WAL checkpoint runs after this many committed writes (FEATURES §10).
const CHECKPOINT_EVERY: u64 = 50;

/// Preview length of the first user message in [`SessionRecord::preview`], in chars.
const PREVIEW_CHARS: usize = 120;

pub(crate) const SESSION_COLUMNS: &str = "s.id, s.source, s.session_key, s.title, s.model, \
     s.provider, s.system_prompt, s.parent_session_id, s.started_at, s.ended_at, s.end_reason, \
     s.message_count, s.tool_call_count, s.input_tokens, s.output_tokens, s.cache_read_tokens, \
     s.cache_write_tokens, s.reasoning_tokens, s.cost_usd, s.cwd, s.history_version, \
     (SELECT m.content FROM messages m WHERE m.session_id = s.id AND m.role = 'user' \
      ORDER BY m.id LIMIT 1)";

/// The SQLite session store (`HERMES_HOME/state.db`).
///
/// Blocking and `Send + Sync`: one connection behind a mutex; async code calls it through
/// `spawn_blocking`. The CLI, the gateway and cron may each open their own handle to the same
/// file: every write runs in `BEGIN IMMEDIATE` and is retried with jitter for up to
/// [`WRITE_RETRY_BUDGET`] while another process holds the lock. Dropping the store runs a
/// truncating WAL checkpoint.
pub struct SessionStore {
    conn: Mutex<Connection>,
    db: String,
    writes: AtomicU64,
    retry_budget: Duration,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("db", &self.db)
            .finish()
    }
}

impl SessionStore {
    /// Opens (creating it and its parent directories if needed) the database at `path`, turns
    /// on WAL, `synchronous=NORMAL`, foreign keys and a busy timeout, and applies pending
    /// migrations.
    ///
    /// Errors: [`StoreError::CreateDir`], [`StoreError::Open`], [`StoreError::Migration`],
    /// [`StoreError::SchemaTooNew`], [`StoreError::Busy`].
    pub fn open(path: impl AsRef<Path>) -> Result<SessionStore, StoreError> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let db = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            db: db.clone(),
            source,
        })?;
        SessionStore::init(conn, db)
    }

    /// An in-memory store (tests, `--no-persist` runs). Same schema, no file.
    pub fn open_in_memory() -> Result<SessionStore, StoreError> {
        let db = ":memory:".to_string();
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
            db: db.clone(),
            source,
        })?;
        SessionStore::init(conn, db)
    }

    fn init(conn: Connection, db: String) -> Result<SessionStore, StoreError> {
        let open_err = |source| StoreError::Open {
            db: db.clone(),
            source,
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // journal_mode answers with a row; in-memory databases answer "memory".
        let _mode: String =
            retry_busy(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)))
                .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        let store = SessionStore {
            conn: Mutex::new(conn),
            db,
            writes: AtomicU64::new(0),
            retry_budget: WRITE_RETRY_BUDGET,
        };
        store.migrate()?;
        crate::leases::create_table(&store)?;
        Ok(store)
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let start = Instant::now();
        loop {
            match migrate_once(&mut conn) {
                Ok(()) => return Ok(()),
                Err(MigrateError::TooNew(found)) => {
                    return Err(StoreError::SchemaTooNew {
                        db: self.db.clone(),
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
                Err(MigrateError::Sql(version, e)) => {
                    if is_busy(&e) && start.elapsed() < WRITE_RETRY_BUDGET {
                        std::thread::sleep(jitter(start.elapsed()));
                        continue;
                    }
                    if is_busy(&e) {
                        return Err(StoreError::Busy {
                            op: "migrate",
                            db: self.db.clone(),
                            waited: start.elapsed(),
                        });
                    }
                    return Err(StoreError::Migration {
                        version,
                        db: self.db.clone(),
                        source: e,
                    });
                }
            }
        }
    }

    /// Replaces the write retry budget (default [`WRITE_RETRY_BUDGET`]). A short budget suits
    /// interactive callers that prefer an early [`StoreError::Busy`] over waiting; the
    /// store stays usable after a `Busy` error.
    pub fn with_retry_budget(mut self, budget: Duration) -> SessionStore {
        self.retry_budget = budget;
        self
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable (an open transaction
        // is rolled back when its guard drops), so poisoning is ignored.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Frees the connection's page cache and other memory SQLite can give back
    /// (`sqlite3_db_release_memory`); the next query reads its pages from the file again.
    /// The gateway calls this when idle (issue 7 "Memory"). Nothing stored changes.
    ///
    /// Errors: [`StoreError::Sqlite`] when SQLite refuses (for example while a statement of
    /// this connection is still running).
    pub fn release_memory(&self) -> Result<(), StoreError> {
        self.lock()
            .release_memory()
            .map_err(self.sql_err("release_memory"))
    }

    pub(crate) fn db(&self) -> &str {
        &self.db
    }

    pub(crate) fn sql_err(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            op,
            db: self.db.clone(),
            source,
        }
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction and commits, retrying the whole
    /// transaction with jittered backoff while the database is busy or locked, for up to
    /// [`WRITE_RETRY_BUDGET`]. `f` may run more than once, so it must not have side effects
    /// outside the transaction. Every [`CHECKPOINT_EVERY`] commits a passive checkpoint runs.
    pub(crate) fn write<T>(
        &self,
        op: &'static str,
        f: impl Fn(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let start = Instant::now();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            match run_immediate(&mut conn, &f) {
                Ok(value) => {
                    if attempts > 1 {
                        tracing::info!(op, db = %self.db, attempts, waited = ?start.elapsed(), "write succeeded after waiting for the lock");
                    }
                    let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_multiple_of(CHECKPOINT_EVERY) {
                        checkpoint(&conn, "PASSIVE", &self.db);
                    }
                    return Ok(value);
                }
                Err(TxError::Sql(e)) if is_busy(&e) => {
                    let waited = start.elapsed();
                    if waited >= self.retry_budget {
                        tracing::warn!(op, db = %self.db, attempts, ?waited, "giving up: database stayed locked");
                        return Err(StoreError::Busy {
                            op,
                            db: self.db.clone(),
                            waited,
                        });
                    }
                    tracing::debug!(op, db = %self.db, attempts, "database locked; retrying");
                    std::thread::sleep(jitter(waited));
                }
                Err(TxError::Sql(source)) => {
                    return Err(StoreError::Sqlite {
                        op,
                        db: self.db.clone(),
                        source,
                    });
                }
                Err(TxError::Store(e)) => return Err(e),
            }
        }
    }

    /// Creates a session row; does nothing if a session with `new.id` exists already
    /// (`INSERT OR IGNORE`, case C21). `started_at` is now.
    pub fn create_session(&self, new: &NewSession) -> Result<(), StoreError> {
        let now = to_ts(Utc::now());
        self.write("create_session", |tx| {
            tx.execute(
                "INSERT OR IGNORE INTO sessions (id, source, session_key, title, model, provider, \
                 system_prompt, parent_session_id, started_at, cwd) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                rusqlite::params![
                    new.id,
                    new.source,
                    new.session_key,
                    new.title,
                    new.model,
                    new.provider,
                    new.system_prompt,
                    new.parent_session_id,
                    now,
                    new.cwd
                ],
            )?;
            Ok(())
        })
    }

    /// The session with exactly this id.
    pub fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let conn = self.lock();
        query_session(&conn, "s.id = ?1", id).map_err(self.sql_err("get_session"))
    }

    /// Resolves what a user typed after `--resume`/`/resume`: an exact id, else the newest
    /// session with exactly this title (subagent sessions are found by id only), else the one session whose id starts with `key`
    /// (`None` when no session or several sessions match the prefix).
    pub fn find_session(&self, key: &str) -> Result<Option<SessionRecord>, StoreError> {
        let conn = self.lock();
        let err = self.sql_err("find_session");
        if let Some(s) = query_session(&conn, "s.id = ?1", key).map_err(&err)? {
            return Ok(Some(s));
        }
        let by_title = format!("s.title = ?1 AND s.source != '{SUBAGENT_SOURCE}'");
        if let Some(s) = query_session(&conn, &by_title, key).map_err(&err)? {
            return Ok(Some(s));
        }
        if key.is_empty() {
            return Ok(None);
        }
        let ids: Vec<String> = conn
            .prepare("SELECT id FROM sessions WHERE substr(id, 1, length(?1)) = ?1 LIMIT 2")
            .and_then(|mut st| {
                st.query_map([key], |r| r.get(0))?
                    .collect::<Result<Vec<String>, _>>()
            })
            .map_err(&err)?;
        match ids.as_slice() {
            [only] => query_session(&conn, "s.id = ?1", only).map_err(&err),
            _ => Ok(None),
        }
    }

    /// The most recently started session, optionally only from `source` (e.g. `cli`).
    /// Subagent sessions ([`crate::SUBAGENT_SOURCE`]) are never "the latest" unless asked
    /// for by that source: `hermes -c` continues the conversation, not a child of it.
    pub fn latest_session(
        &self,
        source: Option<&str>,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE \
             (?1 IS NULL AND s.source != '{SUBAGENT_SOURCE}' OR s.source = ?1) \
             ORDER BY s.started_at DESC, s.rowid DESC LIMIT 1"
        );
        conn.query_row(&sql, [source], session_from_row)
            .optional()
            .map_err(self.sql_err("latest_session"))
    }

    /// Sessions newest first, `limit` rows after skipping `offset`, each with its message
    /// count and first-user-message preview. Subagent sessions ([`crate::SUBAGENT_SOURCE`])
    /// are left out: they belong to their parent ([`SessionStore::child_sessions`]).
    pub fn list_sessions(
        &self,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.source != '{SUBAGENT_SOURCE}' \
             ORDER BY s.started_at DESC, s.rowid DESC LIMIT ?1 OFFSET ?2"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        conn.prepare(&sql)
            .and_then(|mut st| {
                st.query_map([limit, offset], session_from_row)?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(self.sql_err("list_sessions"))
    }

    /// Sets the title. Errors with [`StoreError::SessionNotFound`] for an unknown id.
    pub fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        self.update_session(
            "set_title",
            id,
            "UPDATE sessions SET title = ?2 WHERE id = ?1",
            title,
        )
    }

    /// Records the end time (now) and a free-text reason, and bumps `history_version` so an
    /// agent elsewhere still working on the session cannot append to it unawares
    /// ([`SessionStore::append_message_checked`]). Errors with
    /// [`StoreError::SessionNotFound`] for an unknown id.
    pub fn end_session(&self, id: &str, reason: &str) -> Result<(), StoreError> {
        let now = to_ts(Utc::now());
        self.write("end_session", |tx| {
            let n = tx.execute(
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3, \
                 history_version = history_version + 1 WHERE id = ?1",
                rusqlite::params![id, now, reason],
            )?;
            found(n, id)
        })
    }

    /// Deletes a session with its messages (and their search entries) and usage rows.
    /// Returns false when no such session existed.
    pub fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        self.write("delete_session", |tx| {
            tx.execute("DELETE FROM messages WHERE session_id = ?1", [id])?;
            tx.execute("DELETE FROM session_usage WHERE session_id = ?1", [id])?;
            Ok(tx.execute("DELETE FROM sessions WHERE id = ?1", [id])? > 0)
        })
    }

    /// Deletes every session started before `cutoff` (with messages, search entries and
    /// usage rows), for `hermes sessions prune --older-than 90d` (FEATURES §10). Returns how
    /// many sessions were deleted.
    pub fn prune_sessions(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let cutoff = to_ts(cutoff);
        self.write("prune_sessions", |tx| {
            let old = "SELECT id FROM sessions WHERE started_at < ?1";
            tx.execute(
                &format!("DELETE FROM messages WHERE session_id IN ({old})"),
                [cutoff],
            )?;
            tx.execute(
                &format!("DELETE FROM session_usage WHERE session_id IN ({old})"),
                [cutoff],
            )?;
            Ok(tx.execute("DELETE FROM sessions WHERE started_at < ?1", [cutoff])?)
        })
    }

    /// The most recently started session with this gateway session key, if any.
    pub fn latest_session_for_key(
        &self,
        session_key: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let conn = self.lock();
        query_session(&conn, "s.session_key = ?1", session_key)
            .map_err(self.sql_err("latest_session_for_key"))
    }

    fn update_session(
        &self,
        op: &'static str,
        id: &str,
        sql: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.write(op, |tx| {
            let n = tx.execute(sql, [id, value])?;
            found(n, id)
        })
    }

    /// How many distinct gateway session keys have sessions (the gateway's routed
    /// conversations, for `hermes gateway status`).
    pub fn count_session_keys(&self) -> Result<u64, StoreError> {
        let conn = self.lock();
        conn.query_row(
            "SELECT COUNT(DISTINCT session_key) FROM sessions WHERE session_key IS NOT NULL",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| u64::try_from(n).unwrap_or(0))
        .map_err(self.sql_err("count_session_keys"))
    }

    /// When the newest active message of a session was committed (`None` for a session
    /// without messages or an unknown id). The gateway's idle reset measures from it.
    pub fn last_activity(&self, session_id: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let conn = self.lock();
        conn.query_row(
            "SELECT MAX(timestamp) FROM messages WHERE session_id = ?1 AND active = 1",
            [session_id],
            |r| r.get::<_, Option<f64>>(0),
        )
        .map(|t| t.map(from_ts))
        .map_err(self.sql_err("last_activity"))
    }

    /// Runs `PRAGMA integrity_check` and returns its text (`ok` when healthy).
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let conn = self.lock();
        conn.prepare("PRAGMA integrity_check")
            .and_then(|mut st| {
                st.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map(|lines| lines.join("\n"))
            .map_err(self.sql_err("integrity_check"))
    }

    /// `PRAGMA journal_mode` of this connection (`wal` for a file store).
    pub fn journal_mode(&self) -> Result<String, StoreError> {
        let conn = self.lock();
        conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(self.sql_err("journal_mode"))
    }

    /// `PRAGMA user_version` (equals [`SCHEMA_VERSION`] after opening).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let conn = self.lock();
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(self.sql_err("schema_version"))
    }
}

impl Drop for SessionStore {
    fn drop(&mut self) {
        let conn = self.lock();
        checkpoint(&conn, "TRUNCATE", &self.db);
    }
}

fn checkpoint(conn: &Connection, mode: &str, db: &str) {
    let sql = format!("PRAGMA wal_checkpoint({mode})");
    if let Err(e) = conn.query_row(&sql, [], |_| Ok(())) {
        tracing::debug!(db, mode, error = %e, "WAL checkpoint skipped");
    }
}

pub(crate) fn found(changed: usize, id: &str) -> Result<(), StoreError> {
    if changed == 0 {
        Err(StoreError::SessionNotFound { id: id.to_string() })
    } else {
        Ok(())
    }
}

pub(crate) enum TxError {
    Sql(rusqlite::Error),
    Store(StoreError),
}

/// Lets `?` work on SQLite calls inside store transactions. The `op` is `"write"` and `db`
/// is empty here; the store re-wraps such errors with the real operation and file name
/// before returning them.
impl From<rusqlite::Error> for StoreError {
    fn from(source: rusqlite::Error) -> StoreError {
        // Only used inside `write` closures; `write` re-wraps with the op and db name.
        StoreError::Sqlite {
            op: "write",
            db: String::new(),
            source,
        }
    }
}

fn run_immediate<T>(
    conn: &mut Connection,
    f: &impl Fn(&Transaction<'_>) -> Result<T, StoreError>,
) -> Result<T, TxError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(TxError::Sql)?;
    let value = f(&tx).map_err(|e| match e {
        StoreError::Sqlite { source, .. } => TxError::Sql(source),
        other => TxError::Store(other),
    })?;
    tx.commit().map_err(TxError::Sql)?;
    Ok(value)
}

enum MigrateError {
    TooNew(i64),
    Sql(i64, rusqlite::Error),
}

fn migrate_once(conn: &mut Connection) -> Result<(), MigrateError> {
    let current: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| MigrateError::Sql(0, e))?;
    if current > SCHEMA_VERSION {
        return Err(MigrateError::TooNew(current));
    }
    if current == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| MigrateError::Sql(current + 1, e))?;
    // Re-read under the write lock: another process may have migrated meanwhile.
    let current: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| MigrateError::Sql(current + 1, e))?;
    if current > SCHEMA_VERSION {
        return Err(MigrateError::TooNew(current));
    }
    for (index, step) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
        let version = index as i64 + 1;
        tx.execute_batch(step)
            .and_then(|()| tx.pragma_update(None, "user_version", version))
            .map_err(|e| MigrateError::Sql(version, e))?;
    }
    tx.commit()
        .map_err(|e| MigrateError::Sql(SCHEMA_VERSION, e))
}

pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Retries a statement that is not in a transaction (e.g. switching to WAL) while busy.
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = Instant::now();
    loop {
        match f() {
            Err(e) if is_busy(&e) && start.elapsed() < WRITE_RETRY_BUDGET => {
                std::thread::sleep(jitter(start.elapsed()));
            }
            other => return other,
        }
    }
}

/// Sleep before the next attempt: 20–150 ms at first, growing to 100–500 ms after a few
/// seconds of waiting, randomized so competing processes do not retry in lockstep.
fn jitter(waited: Duration) -> Duration {
    let (lo, hi) = if waited < Duration::from_secs(2) {
        (20, 150)
    } else {
        (100, 500)
    };
    Duration::from_millis(rand::rng().random_range(lo..=hi))
}

/// Stored timestamps are REAL unix seconds (UTC).
pub(crate) fn to_ts(t: DateTime<Utc>) -> f64 {
    t.timestamp_millis() as f64 / 1000.0
}

pub(crate) fn from_ts(x: f64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis((x * 1000.0).round() as i64).unwrap_or_default()
}

fn query_session(
    conn: &Connection,
    filter: &str,
    value: &str,
) -> rusqlite::Result<Option<SessionRecord>> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions s WHERE {filter} \
         ORDER BY s.started_at DESC, s.rowid DESC LIMIT 1"
    );
    // Cached: the REPL reads its session after every turn (status line), and the few filters
    // used make a handful of distinct statements.
    conn.prepare_cached(&sql)?
        .query_row([value], session_from_row)
        .optional()
}

fn count(row: &Row<'_>, idx: usize) -> rusqlite::Result<u64> {
    Ok(row.get::<_, i64>(idx)?.max(0) as u64)
}

pub(crate) fn session_from_row(row: &Row<'_>) -> rusqlite::Result<SessionRecord> {
    let preview: Option<String> = row.get(21)?;
    Ok(SessionRecord {
        id: row.get(0)?,
        source: row.get(1)?,
        session_key: row.get(2)?,
        title: row.get(3)?,
        model: row.get(4)?,
        provider: row.get(5)?,
        system_prompt: row.get(6)?,
        parent_session_id: row.get(7)?,
        started_at: from_ts(row.get(8)?),
        ended_at: row.get::<_, Option<f64>>(9)?.map(from_ts),
        end_reason: row.get(10)?,
        message_count: count(row, 11)?,
        tool_call_count: count(row, 12)?,
        input_tokens: count(row, 13)?,
        output_tokens: count(row, 14)?,
        cache_read_tokens: count(row, 15)?,
        cache_write_tokens: count(row, 16)?,
        reasoning_tokens: count(row, 17)?,
        cost_usd: row.get(18)?,
        cwd: row.get(19)?,
        history_version: count(row, 20)?,
        preview: preview.and_then(|p| make_preview(&p)),
    })
}

fn make_preview(text: &str) -> Option<String> {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    Some(collapsed.chars().take(PREVIEW_CHARS).collect())
}
