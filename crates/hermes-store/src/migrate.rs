//! What `SqliteStore::open` does to a file before using it (issue 17 item 1):
//! - an empty file gets the shared schema ([`crate::schema`]: Python Hermes 0.19.0's, version
//!   22, plus the `hermes_*` tables), so Python opens it without migrating;
//! - a file of Python's layout (a `schema_version` table) is used as it is when every column
//!   hermes reads or writes exists, whatever its version; the `hermes_*` tables are added
//!   when missing, and the columns hermes added to them later when an older hermes made
//!   them (nothing of Python's changes); otherwise it is refused
//!   ([`StoreError::SchemaMismatch`]);
//! - a file of hermes' own earlier schema (`PRAGMA user_version` 1–4, [`crate::legacy`]) is
//!   copied to `state.db.bak-v<N>-<UTC time>` and then converted, in one transaction, keeping
//!   every session, message (and its row id), usage row and cron run;
//! - anything else (not SQLite, cut short, another program's database) is refused
//!   ([`StoreError::NotASessionStore`]) before SQLite writes to it.

use std::path::Path;

use hermes_protocol::{ContentPart, Message, Reasoning, Role, ToolCall};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::StoreError;
use crate::legacy::{LEGACY_LAST, LEGACY_STEPS};
use crate::messages::{encode, insert_row_with_id};
use crate::schema::{
    HERMES_ADDED_COLUMNS, HERMES_LAYOUT, HERMES_TABLES, PY_DEFERRED_INDEXES, PY_FTS,
    PY_FTS_TRIGRAM, PY_PLATFORM_INDEX, PY_SCHEMA, PY_TITLE_INDEX, REBUILD_SEARCH, REQUIRED_COLUMNS,
    SCHEMA_VERSION, fresh_schema,
};

/// Checks the SQLite header of an existing file without SQLite touching it: the magic
/// string, and that the file is as long as its header says (a cut-short copy fails here
/// rather than on the first query that reaches a missing page). A file with a non-empty
/// `-wal` beside it is not measured (its last pages may live in the WAL).
pub(crate) fn check_header(path: &Path) -> Result<(), StoreError> {
    use std::io::Read as _;
    let db = path.display().to_string();
    let not = |detail: String| StoreError::NotASessionStore {
        db: db.clone(),
        detail,
    };
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // does not exist yet: SQLite creates it
    };
    if meta.len() == 0 {
        return Ok(());
    }
    let mut header = [0u8; 100];
    let mut file = std::fs::File::open(path).map_err(|e| not(format!("cannot read it: {e}")))?;
    let read = file
        .read(&mut header)
        .map_err(|e| not(format!("cannot read it: {e}")))?;
    if read < 100 || &header[..16] != b"SQLite format 3\0" {
        return Err(not("it is not an SQLite database".into()));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes([
        header[28], header[29], header[30], header[31],
    ]));
    let counter = &header[24..28];
    let valid_for = &header[92..96];
    let wal = std::fs::metadata(format!("{}-wal", path.display()))
        .map(|m| m.len())
        .unwrap_or(0);
    if counter == valid_for && wal == 0 && pages > 0 && meta.len() < pages * page_size {
        return Err(not(format!(
            "it is cut short: its header says {} bytes, the file has {}",
            pages * page_size,
            meta.len()
        )));
    }
    Ok(())
}

/// What kind of file an open connection holds.
enum Layout {
    Empty,
    Legacy(i64),
    Shared,
}

fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect()
}

fn classify(conn: &Connection, db: &str) -> Result<Layout, StoreError> {
    let unreadable = |e: rusqlite::Error| StoreError::NotASessionStore {
        db: db.to_string(),
        detail: format!("SQLite cannot read it: {e}"),
    };
    let names = tables(conn).map_err(unreadable)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(unreadable)?;
    let has = |t: &str| names.iter().any(|n| n == t);
    if names.is_empty() {
        return Ok(Layout::Empty);
    }
    if (1..=LEGACY_LAST).contains(&version) && has("sessions") && has("messages") {
        return Ok(Layout::Legacy(version));
    }
    if has("schema_version") && has("sessions") && has("messages") {
        return Ok(Layout::Shared);
    }
    let mut shown: Vec<&str> = names.iter().map(String::as_str).take(8).collect();
    if names.len() > shown.len() {
        shown.push("…");
    }
    Err(StoreError::NotASessionStore {
        db: db.to_string(),
        detail: format!(
            "it is an SQLite database of another program (tables: {}; user_version {version})",
            shown.join(", ")
        ),
    })
}

/// Refuses a file hermes cannot use (see [`classify`]) with reads only, before any pragma
/// that could write to it.
pub(crate) fn check_readable(conn: &Connection, db: &str) -> Result<(), StoreError> {
    classify(conn, db).map(|_| ())
}

/// The `table.column` names of [`REQUIRED_COLUMNS`] missing from the file (`hermes_*` tables
/// left out when `with_hermes` is false: hermes adds those itself).
pub(crate) fn missing_columns(
    conn: &Connection,
    with_hermes: bool,
) -> rusqlite::Result<Vec<String>> {
    let mut missing = Vec::new();
    for (table, columns) in REQUIRED_COLUMNS {
        if !with_hermes && table.starts_with("hermes_") {
            continue;
        }
        let live: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")?
            .query_map([table], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for c in *columns {
            if !live.iter().any(|l| l == c) {
                missing.push(format!("{table}.{c}"));
            }
        }
    }
    Ok(missing)
}

/// The `schema_version` row as text (`none` when the table is empty).
pub(crate) fn python_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row("SELECT version FROM schema_version LIMIT 1", [], |r| {
        r.get(0)
    })
    .optional()
}

/// Errors of one preparation attempt: SQLite errors may be `busy` and are retried by the
/// caller; store errors are final.
pub(crate) enum PrepError {
    Sql(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for PrepError {
    fn from(e: rusqlite::Error) -> PrepError {
        PrepError::Sql(e)
    }
}

impl From<StoreError> for PrepError {
    fn from(e: StoreError) -> PrepError {
        PrepError::Store(e)
    }
}

/// Brings the file behind `conn` to the shared schema (see the module doc). `path` is the
/// file (for the backup); `None` for an in-memory store.
pub(crate) fn prepare(
    conn: &mut Connection,
    db: &str,
    path: Option<&Path>,
) -> Result<(), PrepError> {
    match classify(conn, db)? {
        Layout::Empty => {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Another process may have created it meanwhile.
            if tables(&tx)?.is_empty() {
                tx.execute_batch(&fresh_schema())?;
                tx.execute(
                    "INSERT INTO schema_version (version) VALUES (?1)",
                    [SCHEMA_VERSION],
                )?;
                tx.pragma_update(None, "user_version", HERMES_LAYOUT)?;
            }
            tx.commit()?;
            Ok(())
        }
        Layout::Shared => use_shared(conn, db),
        Layout::Legacy(version) => {
            if let Some(path) = path {
                backup(conn, db, path, version)?;
            }
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if (1..=LEGACY_LAST).contains(&now) {
                convert_legacy(&tx, db, now).map_err(|e| match e {
                    PrepError::Sql(source) => PrepError::Store(StoreError::Migration {
                        version: SCHEMA_VERSION,
                        db: db.to_string(),
                        source,
                    }),
                    other => other,
                })?;
                tracing::info!(
                    db,
                    from = now,
                    "migrated hermes' own schema to the shared Python Hermes schema"
                );
            }
            tx.commit()?;
            Ok(())
        }
    }
}

fn use_shared(conn: &mut Connection, db: &str) -> Result<(), PrepError> {
    let mismatch = |conn: &Connection, missing: Vec<String>| -> PrepError {
        let found = python_version(conn)
            .ok()
            .flatten()
            .map_or_else(|| "none".to_string(), |v| v.to_string());
        PrepError::Store(StoreError::SchemaMismatch {
            db: db.to_string(),
            found,
            supported: SCHEMA_VERSION,
            missing,
        })
    };
    let missing = missing_columns(conn, false)?;
    if !missing.is_empty() {
        return Err(mismatch(conn, missing));
    }
    let needs_tables = missing_columns(conn, true)?;
    if !needs_tables.is_empty() {
        // Only hermes' own tables or columns are missing (a file Python or an older hermes
        // made): add them.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(HERMES_TABLES)?;
        add_hermes_columns(&tx)?;
        let layout: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if layout < HERMES_LAYOUT {
            tx.pragma_update(None, "user_version", HERMES_LAYOUT)?;
        }
        tx.commit()?;
        let still = missing_columns(conn, true)?;
        if !still.is_empty() {
            return Err(mismatch(conn, still));
        }
    }
    Ok(())
}

/// Adds each of [`HERMES_ADDED_COLUMNS`] its table lacks (in the caller's transaction; a
/// column another process added meanwhile is seen and left alone).
fn add_hermes_columns(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    for (table, column, kind) in HERMES_ADDED_COLUMNS {
        let has: bool = tx.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
            [table, column],
            |r| r.get(0),
        )?;
        if !has {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind};"))?;
            tracing::info!(table, column, "added a column to hermes' own table");
        }
    }
    Ok(())
}

/// `VACUUM INTO state.db.bak-v<version>-<UTC time>`: a consistent copy (WAL included).
fn backup(conn: &Connection, db: &str, path: &Path, version: i64) -> Result<(), PrepError> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let mut target = format!("{}.bak-v{version}-{stamp}", path.display());
    let mut n = 1;
    while Path::new(&target).exists() {
        n += 1;
        target = format!("{}.bak-v{version}-{stamp}-{n}", path.display());
    }
    match conn.execute("VACUUM INTO ?1", [&target]) {
        Ok(_) => {
            tracing::info!(db, backup = %target, "backed up the session store before migrating it");
            Ok(())
        }
        Err(e) if crate::store::is_busy(&e) => Err(PrepError::Sql(e)),
        Err(source) => Err(PrepError::Store(StoreError::Backup {
            db: db.to_string(),
            backup: target,
            source,
        })),
    }
}

/// Triggers and search tables of hermes' earlier schema, and those Python adds when it opens
/// such a file (all derived data, rebuilt from the messages).
const LEGACY_DERIVED: &str = "
DROP TRIGGER IF EXISTS messages_ai;
DROP TRIGGER IF EXISTS messages_ad;
DROP TRIGGER IF EXISTS messages_au;
DROP TRIGGER IF EXISTS messages_fts_insert;
DROP TRIGGER IF EXISTS messages_fts_delete;
DROP TRIGGER IF EXISTS messages_fts_update;
DROP TRIGGER IF EXISTS messages_fts_trigram_insert;
DROP TRIGGER IF EXISTS messages_fts_trigram_delete;
DROP TRIGGER IF EXISTS messages_fts_trigram_update;
DROP TABLE IF EXISTS messages_fts;
DROP TABLE IF EXISTS messages_trgm;
DROP TABLE IF EXISTS messages_fts_trigram;
";

/// Sessions of the old table into Python's columns. A title used by several sessions stays
/// with the newest; the others get ` (<id>)` appended (titles are unique in Python's schema).
/// A parent that no longer exists is dropped from the link (Python's schema has the foreign
/// key). Subagent sessions get Python's `_delegate_from` marker so Python hides them too.
const COPY_SESSIONS: &str = "
INSERT INTO sessions (id, source, session_key, title, model, billing_provider, system_prompt,
    parent_session_id, started_at, ended_at, end_reason, message_count, tool_call_count,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
    estimated_cost_usd, cost_status, cwd, model_config, api_call_count)
SELECT o.id, o.source, o.session_key,
    CASE WHEN o.title IS NOT NULL AND EXISTS (SELECT 1 FROM hermes_legacy_sessions n
        WHERE n.title = o.title AND (n.started_at > o.started_at
            OR (n.started_at = o.started_at AND n.rowid > o.rowid)))
        THEN o.title || ' (' || o.id || ')' ELSE o.title END,
    NULLIF(o.model, ''), NULLIF(o.provider, ''), o.system_prompt,
    CASE WHEN EXISTS (SELECT 1 FROM hermes_legacy_sessions p WHERE p.id = o.parent_session_id)
        THEN o.parent_session_id END,
    o.started_at, o.ended_at, o.end_reason, o.message_count, o.tool_call_count,
    o.input_tokens, o.output_tokens, o.cache_read_tokens, o.cache_write_tokens,
    o.reasoning_tokens, o.cost_usd, CASE WHEN o.cost_usd IS NULL THEN NULL ELSE 'estimated' END,
    o.cwd,
    CASE WHEN o.source = 'subagent' AND o.parent_session_id IS NOT NULL
        THEN json_object('_delegate_from', o.parent_session_id) END,
    (SELECT COALESCE(sum(u.calls), 0) FROM hermes_legacy_usage u WHERE u.session_id = o.id)
FROM hermes_legacy_sessions o;
INSERT OR REPLACE INTO hermes_sessions (session_id, history_version, model_choice)
SELECT id, history_version, model_choice FROM hermes_legacy_sessions;
INSERT OR IGNORE INTO session_model_usage (session_id, model, billing_provider,
    billing_base_url, billing_mode, task, api_call_count, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd,
    actual_cost_usd, cost_status)
SELECT session_id, model, provider, '', '', '', calls, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, reasoning_tokens, COALESCE(cost_usd, 0), 0,
    CASE WHEN cost_usd IS NULL THEN NULL ELSE 'estimated' END
FROM hermes_legacy_usage WHERE session_id IN (SELECT id FROM sessions);
";

fn convert_legacy(tx: &rusqlite::Transaction<'_>, db: &str, from: i64) -> Result<(), PrepError> {
    for step in LEGACY_STEPS.iter().skip(usize::try_from(from).unwrap_or(0)) {
        tx.execute_batch(step)?;
    }
    tx.execute_batch(LEGACY_DERIVED)?;
    tx.execute_batch(
        "ALTER TABLE sessions RENAME TO hermes_legacy_sessions;
         ALTER TABLE messages RENAME TO hermes_legacy_messages;
         ALTER TABLE session_usage RENAME TO hermes_legacy_usage;
         ALTER TABLE cron_runs RENAME TO hermes_cron_runs;",
    )?;
    // Indexes follow a renamed table; drop them so Python's names are free (Python may
    // have created its indexes on the old tables).
    let indexes: Vec<String> = tx
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL \
             AND tbl_name IN ('hermes_legacy_sessions', 'hermes_legacy_messages', \
             'hermes_legacy_usage', 'hermes_cron_runs')",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for name in indexes {
        tx.execute_batch(&format!("DROP INDEX \"{}\";", name.replace('"', "\"\"")))?;
    }
    tx.pragma_update(None, "defer_foreign_keys", "ON")?;
    tx.execute_batch(PY_SCHEMA)?;
    tx.execute_batch(PY_PLATFORM_INDEX)?;
    tx.execute_batch(PY_DEFERRED_INDEXES)?;
    tx.execute_batch(PY_TITLE_INDEX)?;
    tx.execute_batch(HERMES_TABLES)?;
    tx.execute_batch(COPY_SESSIONS)?;
    copy_messages(tx, db)?;
    tx.execute_batch(
        "DROP TABLE hermes_legacy_messages;
         DROP TABLE hermes_legacy_usage;
         DROP TABLE hermes_legacy_sessions;",
    )?;
    tx.execute_batch(PY_FTS)?;
    tx.execute_batch(PY_FTS_TRIGRAM)?;
    tx.execute_batch(REBUILD_SEARCH)?;
    if python_version(tx)?.is_some() {
        tx.execute("UPDATE schema_version SET version = ?1", [SCHEMA_VERSION])?;
    } else {
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [SCHEMA_VERSION],
        )?;
    }
    tx.pragma_update(None, "user_version", HERMES_LAYOUT)?;
    Ok(())
}

/// Every old message row, decoded as the old build wrote it and encoded as this one writes
/// it, under its old row id.
fn copy_messages(tx: &rusqlite::Transaction<'_>, db: &str) -> Result<(), PrepError> {
    let mut read = tx.prepare(
        "SELECT id, session_id, role, content, content_json, tool_calls, tool_call_id, \
         tool_name, reasoning, finish_reason, timestamp, token_count, active \
         FROM hermes_legacy_messages WHERE session_id IN (SELECT id FROM sessions) ORDER BY id",
    )?;
    let mut rows = read.query([])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let corrupt = |what: &'static str, e: serde_json::Error| {
            PrepError::Store(StoreError::Corrupt {
                db: db.to_string(),
                what,
                message_id: id,
                detail: e.to_string(),
            })
        };
        let session_id: String = r.get(1)?;
        let role: String = r.get(2)?;
        let text: String = r.get::<_, Option<String>>(3)?.unwrap_or_default();
        let content = match r.get::<_, Option<String>>(4)? {
            Some(json) => serde_json::from_str::<Vec<ContentPart>>(&json)
                .map_err(|e| corrupt("content_json", e))?,
            None if text.is_empty() => Vec::new(),
            None => vec![ContentPart::Text { text }],
        };
        let tool_calls = match r.get::<_, Option<String>>(5)? {
            Some(json) => serde_json::from_str::<Vec<ToolCall>>(&json)
                .map_err(|e| corrupt("tool_calls", e))?,
            None => Vec::new(),
        };
        let reasoning = match r.get::<_, Option<String>>(8)? {
            Some(json) => Some(
                serde_json::from_str::<Reasoning>(&json).map_err(|e| corrupt("reasoning", e))?,
            ),
            None => None,
        };
        let finish: Option<String> = r.get(9)?;
        let message = Message {
            role: Role::parse(&role).unwrap_or(Role::User),
            content,
            tool_calls,
            tool_call_id: r.get(6)?,
            tool_name: r.get(7)?,
            reasoning,
            finish_reason: finish
                .as_deref()
                .map(hermes_protocol::FinishReason::from_wire),
        };
        let enc = encode(&message)?;
        insert_row_with_id(
            tx,
            Some(id),
            &session_id,
            &role,
            &message,
            &enc,
            r.get(10)?,
            r.get(11)?,
            r.get::<_, i64>(12)? != 0,
        )?;
    }
    Ok(())
}
