//! The connection, write discipline (ARCHITECTURE §2 invariant 4) and session rows.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, Transaction};

pub use crate::busy::WRITE_RETRY_BUDGET;
pub(crate) use crate::busy::is_busy;
use crate::busy::{TxError, jitter, millis, retry_busy, retry_store_busy, run_immediate};
use crate::error::StoreError;
use crate::messages::bump_version;
use crate::migrate::{PrepError, check_header, check_readable, prepare};
use crate::subagents::SUBAGENT_SOURCE;
use crate::types::{NewSession, SessionRecord};

/// SQLite's own wait per attempt (`PRAGMA busy_timeout`), 1 s.
const BUSY_TIMEOUT: Duration = Duration::from_secs(1);

/// A passive WAL checkpoint runs after this many committed writes (FEATURES §10).
const CHECKPOINT_EVERY: u64 = 50;

/// Preview length of the first user message in [`SessionRecord::preview`], in chars.
const PREVIEW_CHARS: usize = 120;

/// A session row as [`session_from_row`] reads it, from [`SESSION_FROM`]. Python's nullable
/// columns read as empty or zero; the provider is Python's `billing_provider`; the history
/// version is hermes' own count plus Python's `rewind_count` (so a rewind in Python also
/// refuses hermes' version-checked writes).
pub(crate) const SESSION_COLUMNS: &str = "s.id, s.source, s.session_key, s.title, \
     COALESCE(s.model, ''), COALESCE(s.billing_provider, ''), COALESCE(s.system_prompt, ''), \
     s.parent_session_id, s.started_at, s.ended_at, s.end_reason, \
     COALESCE(s.message_count, 0), COALESCE(s.tool_call_count, 0), COALESCE(s.input_tokens, 0), \
     COALESCE(s.output_tokens, 0), COALESCE(s.cache_read_tokens, 0), \
     COALESCE(s.cache_write_tokens, 0), COALESCE(s.reasoning_tokens, 0), \
     COALESCE(s.actual_cost_usd, s.estimated_cost_usd), s.cwd, \
     COALESCE(h.history_version, 0) + COALESCE(s.rewind_count, 0), \
     (SELECT m.content FROM messages m WHERE m.session_id = s.id AND m.role = 'user' \
      ORDER BY m.id LIMIT 1)";

/// The `FROM` of [`SESSION_COLUMNS`].
pub(crate) const SESSION_FROM: &str =
    "sessions s LEFT JOIN hermes_sessions h ON h.session_id = s.id";

/// Sessions that are not conversations of their own: hermes' subagent sessions and Python's
/// delegate children (marked `_delegate_from` in `model_config`).
pub(crate) const NOT_A_CHILD: &str = "s.source != 'subagent' AND \
     json_extract(CASE WHEN json_valid(s.model_config) THEN s.model_config ELSE '{}' END, \
     '$._delegate_from') IS NULL";

/// The SQLite session store (`HERMES_HOME/state.db`).
///
/// Blocking and `Send + Sync`: one connection behind a mutex; async code calls it through
/// `spawn_blocking`. The CLI, the gateway and cron may each open their own handle to the same
/// file: every write runs in `BEGIN IMMEDIATE` and is retried with jitter for up to
/// [`WRITE_RETRY_BUDGET`] while another process holds the lock. Dropping the store runs a
/// truncating WAL checkpoint.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    db: String,
    writes: AtomicU64,
    /// The write retry budget in milliseconds ([`SqliteStore::set_retry_budget`]).
    retry_budget_ms: AtomicU64,
    /// The file's registration among this process's open stores; declared last so it is
    /// dropped after the connection closed.
    file: Option<crate::open_files::OpenFile>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("db", &self.db).finish()
    }
}

impl SqliteStore {
    /// Opens (creating it, mode 0600, and its parent directories, mode 0700, if needed; an
    /// existing database readable by others is tightened) the database at `path`, turns
    /// on WAL, `synchronous=NORMAL`, foreign keys and a busy timeout, and brings the file to
    /// the shared schema (Python Hermes 0.19.0's, see `migrate.rs`): a new file gets it, a
    /// file of hermes' earlier schema is backed up and migrated, a Python file is used as it
    /// is.
    ///
    /// Errors: [`StoreError::CreateDir`], [`StoreError::Open`],
    /// [`StoreError::NotASessionStore`] (not SQLite, cut short, another program's database),
    /// [`StoreError::SchemaMismatch`] (columns hermes needs are missing), [`StoreError::Backup`]
    /// and [`StoreError::Migration`] (earlier schema), [`StoreError::Busy`]. A refused file is
    /// not changed.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            hermes_protocol::private_fs::create_dir_all(parent).map_err(|source| {
                StoreError::CreateDir {
                    path: parent.to_path_buf(),
                    source,
                }
            })?;
        }
        // Mode 0600 before SQLite opens it; its -wal and -shm files take the same mode.
        hermes_protocol::private_fs::prepare_sqlite(path).map_err(|source| {
            StoreError::CreateDir {
                path: path.to_path_buf(),
                source,
            }
        })?;
        // The header is read through a descriptor of our own only by the first store of the
        // process on this file: closing it would release the other stores' locks.
        let file = crate::open_files::register(path, || check_header(path))?;
        let db = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            db: db.clone(),
            source,
        })?;
        let mut store = SqliteStore::init(conn, db, Some(path))?;
        store.file = Some(file);
        Ok(store)
    }

    /// An in-memory store (tests, `--no-persist` runs). Same schema, no file.
    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        let db = ":memory:".to_string();
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
            db: db.clone(),
            source,
        })?;
        SqliteStore::init(conn, db, None)
    }

    fn init(conn: Connection, db: String, path: Option<&Path>) -> Result<SqliteStore, StoreError> {
        let open_err = |source| StoreError::Open {
            db: db.clone(),
            source,
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        retry_store_busy(|| check_readable(&conn, &db))?;
        // journal_mode answers with a row; in-memory databases answer "memory".
        let _mode: String =
            retry_busy(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)))
                .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        let store = SqliteStore {
            conn: Mutex::new(conn),
            db,
            writes: AtomicU64::new(0),
            retry_budget_ms: AtomicU64::new(millis(WRITE_RETRY_BUDGET)),
            file: None,
        };
        store.migrate(path)?;
        crate::leases::create_table(&store)?;
        crate::claims::create_table(&store)?;
        crate::documents::create_table(&store)?;
        Ok(store)
    }

    fn migrate(&self, path: Option<&Path>) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let start = Instant::now();
        loop {
            match prepare(&mut conn, &self.db, path) {
                Ok(()) => return Ok(()),
                Err(PrepError::Store(e)) => return Err(e),
                Err(PrepError::Sql(e)) => {
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
                        version: crate::SCHEMA_VERSION,
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
    pub fn with_retry_budget(self, budget: Duration) -> SqliteStore {
        self.set_retry_budget(budget);
        self
    }

    /// [`SqliteStore::with_retry_budget`] on a shared store: later writes use `budget`.
    pub fn set_retry_budget(&self, budget: Duration) {
        self.retry_budget_ms
            .store(millis(budget), Ordering::Relaxed);
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
                    let budget =
                        Duration::from_millis(self.retry_budget_ms.load(Ordering::Relaxed));
                    if waited >= budget {
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

    /// Creates a session row; does nothing if a session with `new.id` exists already (case
    /// C21). `started_at` is now. The row is complete for Python Hermes: `source`, `model`,
    /// `billing_provider` (the provider), `system_prompt`, `cwd`, zero counters; a subagent
    /// session also gets Python's `_delegate_from` marker in `model_config`. A session with a
    /// `session_key` becomes where Python's gateway routes that key too (`gateway.rs`).
    ///
    /// Errors: [`StoreError::TitleTaken`] when `new.title` names another session,
    /// [`StoreError::Sqlite`] (for example a `parent_session_id` that names no session).
    pub fn create_session(&self, new: &NewSession) -> Result<(), StoreError> {
        let now = to_ts(Utc::now());
        let model_config = match (&new.parent_session_id, new.source == SUBAGENT_SOURCE) {
            (Some(parent), true) => {
                Some(serde_json::json!({ "_delegate_from": parent }).to_string())
            }
            _ => None,
        };
        self.write("create_session", |tx| {
            title_free(tx, new.title.as_deref(), &new.id)?;
            tx.execute(
                "INSERT INTO sessions (id, source, session_key, title, model, billing_provider, \
                 system_prompt, parent_session_id, started_at, cwd, model_config, \
                 message_count, tool_call_count) \
                 VALUES (?1, ?2, ?3, ?4, NULLIF(?5, ''), NULLIF(?6, ''), ?7, ?8, ?9, ?10, ?11, 0, 0) \
                 ON CONFLICT (id) DO NOTHING",
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
                    new.cwd,
                    model_config
                ],
            )?;
            if let (Some(key), false) = (&new.session_key, new.source == SUBAGENT_SOURCE) {
                crate::gateway::move_routes(tx, key, &new.id, now)?;
            }
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

    /// The most recently started session that is not archived, optionally only from
    /// `source` (e.g. `cli`).
    /// Subagent sessions ([`crate::SUBAGENT_SOURCE`]) are never "the latest" unless asked
    /// for by that source: `hermes -c` continues the conversation, not a child of it.
    pub fn latest_session(
        &self,
        source: Option<&str>,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM {SESSION_FROM} WHERE \
             (?1 IS NULL AND {NOT_A_CHILD} OR s.source = ?1) AND s.archived = 0 \
             ORDER BY s.started_at DESC, s.rowid DESC LIMIT 1"
        );
        conn.query_row(&sql, [source], session_from_row)
            .optional()
            .map_err(self.sql_err("latest_session"))
    }

    /// Sessions newest first, `limit` rows after skipping `offset`, each with its message
    /// count and first-user-message preview. Subagent sessions ([`crate::SUBAGENT_SOURCE`])
    /// are left out: they belong to their parent ([`SqliteStore::child_sessions`]); so are
    /// archived ones (`archived = 1`, Python's soft-hide), as in Python's list.
    pub fn list_sessions(
        &self,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let conn = self.lock();
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM {SESSION_FROM} WHERE {NOT_A_CHILD} \
             AND s.archived = 0 ORDER BY s.started_at DESC, s.rowid DESC LIMIT ?1 OFFSET ?2"
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

    /// Sets the title. Titles are unique (Python's `idx_sessions_title_unique`).
    ///
    /// Errors: [`StoreError::SessionNotFound`] for an unknown id, [`StoreError::TitleTaken`]
    /// when another session has this title (nothing is changed).
    pub fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        self.write("set_title", |tx| {
            title_free(tx, Some(title), id)?;
            let n = tx.execute("UPDATE sessions SET title = ?2 WHERE id = ?1", [id, title])?;
            found(n, id)
        })
    }

    /// Sets `title`, or when another session has it, the first free of `title #2`,
    /// `title #3`, … (Python's numbering of repeated titles); returns the title set. For
    /// titles made automatically (the first user message), which may repeat.
    ///
    /// Errors: [`StoreError::SessionNotFound`] for an unknown id.
    pub fn set_title_numbered(&self, id: &str, title: &str) -> Result<String, StoreError> {
        self.write("set_title_numbered", |tx| {
            let mut candidate = title.to_string();
            let mut n = 1u32;
            while title_owner(tx, &candidate)?.is_some_and(|other| other != id) {
                n += 1;
                candidate = format!("{title} #{n}");
            }
            let changed = tx.execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                [id, candidate.as_str()],
            )?;
            found(changed, id)?;
            Ok(candidate)
        })
    }

    /// Records the end time (now) and a free-text reason, and bumps `history_version` so an
    /// agent elsewhere still working on the session cannot append to it unawares
    /// ([`SqliteStore::append_message_checked`]). Errors with
    /// [`StoreError::SessionNotFound`] for an unknown id.
    pub fn end_session(&self, id: &str, reason: &str) -> Result<(), StoreError> {
        let now = to_ts(Utc::now());
        self.write("end_session", |tx| {
            let n = tx.execute(
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3 WHERE id = ?1",
                rusqlite::params![id, now, reason],
            )?;
            found(n, id)?;
            bump_version(tx, id)?;
            Ok(())
        })
    }

    /// Archives (`archived = 1`) or restores a session: Python Hermes' soft-hide, which
    /// leaves it out of [`SqliteStore::list_sessions`], `-c` and `sessions prune`, while
    /// `-r <id>`, search and export still reach it. Errors with
    /// [`StoreError::SessionNotFound`] for an unknown id.
    pub fn set_archived(&self, id: &str, archived: bool) -> Result<(), StoreError> {
        self.write("set_archived", |tx| {
            let n = tx.execute(
                "UPDATE sessions SET archived = ?2 WHERE id = ?1",
                rusqlite::params![id, i64::from(archived)],
            )?;
            found(n, id)?;
            Ok(())
        })
    }

    /// Deletes a session with its messages (and their search entries), usage rows and
    /// hermes' rows for it; sessions that named it as their parent keep existing without the
    /// link (as Python's `delete_session` does). Returns false when no such session existed.
    pub fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        self.write("delete_session", |tx| {
            Ok(delete_where(tx, "SELECT ?1", rusqlite::params![id])? > 0)
        })
    }

    /// Deletes every session started before `cutoff` (as [`SqliteStore::delete_session`]
    /// does), for `hermes sessions prune --older-than 90d` (FEATURES §10), except archived
    /// ones (as Python's prune without `--include-archived`). Returns how many sessions were
    /// deleted.
    pub fn prune_sessions(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let cutoff = to_ts(cutoff);
        self.write("prune_sessions", |tx| {
            delete_where(
                tx,
                "SELECT id FROM sessions WHERE started_at < ?1 AND archived = 0",
                rusqlite::params![cutoff],
            )
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

    /// The file's Python schema version (`schema_version.version`; [`crate::SCHEMA_VERSION`]
    /// for a file this build created or migrated, possibly higher for a file a newer Python
    /// Hermes wrote).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let conn = self.lock();
        crate::migrate::python_version(&conn)
            .map(Option::unwrap_or_default)
            .map_err(self.sql_err("schema_version"))
    }
}

impl Drop for SqliteStore {
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

/// Deletes the sessions whose ids `ids` (a `SELECT` of one column using `params`) returns,
/// with everything that belongs to them; returns how many sessions went.
fn delete_where(
    tx: &Transaction<'_>,
    ids: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<usize, StoreError> {
    tx.execute(
        &format!(
            "DELETE FROM hermes_messages WHERE message_id IN \
             (SELECT id FROM messages WHERE session_id IN ({ids}))"
        ),
        params,
    )?;
    for sql in [
        "DELETE FROM messages WHERE session_id IN ({ids})",
        "DELETE FROM session_model_usage WHERE session_id IN ({ids})",
        "DELETE FROM hermes_sessions WHERE session_id IN ({ids})",
        "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({ids}) \
         AND id NOT IN ({ids})",
    ] {
        tx.execute(&sql.replace("{ids}", ids), params)?;
    }
    // Children deleted in the same call may still name each other.
    tx.execute(
        &format!(
            "UPDATE sessions SET parent_session_id = NULL WHERE id IN ({ids}) \
             AND parent_session_id IS NOT NULL"
        ),
        params,
    )?;
    Ok(tx.execute(&format!("DELETE FROM sessions WHERE id IN ({ids})"), params)?)
}

/// The session that has `title`, if any.
fn title_owner(tx: &Transaction<'_>, title: &str) -> rusqlite::Result<Option<String>> {
    tx.prepare_cached("SELECT id FROM sessions WHERE title = ?1")?
        .query_row([title], |r| r.get(0))
        .optional()
}

/// [`StoreError::TitleTaken`] when a session other than `id` has `title`.
fn title_free(tx: &Transaction<'_>, title: Option<&str>, id: &str) -> Result<(), StoreError> {
    let Some(title) = title else {
        return Ok(());
    };
    match title_owner(tx, title)? {
        Some(other) if other != id => Err(StoreError::TitleTaken {
            title: title.to_string(),
            other,
        }),
        _ => Ok(()),
    }
}

pub(crate) fn found(changed: usize, id: &str) -> Result<(), StoreError> {
    if changed == 0 {
        Err(StoreError::SessionNotFound { id: id.to_string() })
    } else {
        Ok(())
    }
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
        "SELECT {SESSION_COLUMNS} FROM {SESSION_FROM} WHERE {filter} \
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

pub(crate) fn make_preview(text: &str) -> Option<String> {
    // Python's list-of-parts content (`\0json:[...]`): its text parts.
    let parts;
    let text = match text.strip_prefix("\u{0}json:") {
        Some(json) => {
            let value: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
            parts = value
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            parts.as_str()
        }
        None => text,
    };
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    Some(collapsed.chars().take(PREVIEW_CHARS).collect())
}
