//! `hermes sessiondb migrate --from sqlite://PATH --to postgresql://DSN` (issue 21 item 3):
//! copies every session, message (with its `hermes_messages` row), per-model usage row, cron
//! run and gateway routing entry of a `state.db` into the PostgreSQL store, column for column.
//!
//! - Resumable: the sessions go in first (one transaction), each recorded in
//!   `hermes_import_sessions`; then each session's messages and usage are copied in one
//!   transaction of their own that also marks it done. An interrupted run leaves whole
//!   sessions done or not started, and the next run with the same source copies the rest.
//! - Verified: in each session's transaction the copied messages are read back and their
//!   count and SHA-256 checksum (over every copied column) compared with the source's; a
//!   mismatch rolls that session back and stops. At the end the totals are compared.
//! - Refuses a target that already has sessions (other than those of an unfinished import of
//!   the same file) unless `merge` is set. Merging keeps the target's sessions: a session id
//!   present in both is left as the target has it (counted as skipped), imported messages get
//!   new ids (the target's ids are in use), and a title the target uses gets a ` #N` suffix.
//!   A fresh import keeps the message ids.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::future::try_join_all;

use super::PgStore;
use super::cells::{
    Cell, Column, checked, checksum, common_columns, convert, insert, params, read_rows, select,
    sqlite_columns, src_err,
};
use super::db::{Db, now, read, write_tx};
use crate::error::StoreError;

/// How a migration ended ([`PgStore::import_sqlite`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// True when an unfinished import of the same file was continued.
    pub resumed: bool,
    /// Sessions of the source (all of them, subagents included).
    pub source_sessions: u64,
    /// Sessions whose messages this run copied.
    pub sessions_copied: u64,
    /// Sessions left alone because the target already had a session with that id (merge).
    pub sessions_skipped: u64,
    /// Messages this run copied.
    pub messages: u64,
    /// Per-model usage rows this run copied.
    pub usage_rows: u64,
    /// Cron runs added (runs the target had already are not counted).
    pub cron_runs: u64,
    /// Gateway routing entries added.
    pub routes: u64,
    /// Messages of every imported session, as verified at the end (equal in both stores).
    pub verified_messages: u64,
}

/// What the importer knows about the tables.
struct Tables {
    sessions: Vec<Column>,
    messages: Vec<Column>,
    usage: Vec<Column>,
    cron: Vec<Column>,
    routing: Vec<Column>,
}

/// One source message: its copied cells and its `hermes_messages` extras.
struct SourceMessage {
    id: i64,
    cells: Vec<Cell>,
    parts: Option<String>,
    signature: Option<String>,
    trace_id: Option<String>,
}

impl SourceMessage {
    /// Its `hermes_messages` cells, in the order the checksum reads them.
    fn extras(&self) -> [Option<String>; 3] {
        [
            self.parts.clone(),
            self.signature.clone(),
            self.trace_id.clone(),
        ]
    }
}

impl PgStore {
    /// Copies the SQLite store at `from` into this store (see the module doc); `merge`
    /// allows a target that already has sessions. `progress` receives one line now and then
    /// (`sessions 120/1000, messages 45210`).
    ///
    /// Errors: [`StoreError::Import`] for a non-empty target without `merge` or a value that
    /// does not copy or verify; the errors of [`crate::SqliteStore::open`] for the source and
    /// of the PostgreSQL writes. What was committed stays and a new run resumes from it.
    pub fn import_sqlite(
        &self,
        from: &Path,
        merge: bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<ImportReport, StoreError> {
        // Brings a file of an earlier schema to the shared one (as any hermes start would).
        drop(crate::store::SqliteStore::open(from)?);
        let source = std::fs::canonicalize(from)
            .unwrap_or_else(|_| from.to_path_buf())
            .display()
            .to_string();
        let conn = rusqlite::Connection::open_with_flags(
            from,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            db: from.display().to_string(),
            source,
        })?;
        let mut report = ImportReport::default();
        let names = |t: &str| sqlite_columns(&conn, t);
        let (s, m, u, c, g) = (
            names("sessions")?,
            names("messages")?,
            names("session_model_usage")?,
            names("hermes_cron_runs")?,
            names("gateway_routing")?,
        );
        let tables = self.run(move |db| async move {
            Ok(Tables {
                sessions: common_columns(&db, "sessions", &s).await?,
                messages: common_columns(&db, "messages", &m).await?,
                usage: common_columns(&db, "session_model_usage", &u).await?,
                cron: common_columns(&db, "hermes_cron_runs", &c).await?,
                routing: common_columns(&db, "gateway_routing", &g).await?,
            })
        })?;
        let tables = std::sync::Arc::new(tables);

        // 1. The run: fresh, resumed, or refused.
        let max_id: i64 = conn
            .query_row("SELECT COALESCE(max(id), 0) FROM messages", [], |r| {
                r.get(0)
            })
            .map_err(src_err("read"))?;
        let src = source.clone();
        report.resumed =
            self.run(move |db| async move { db.start_import(&src, merge, max_id).await })?;
        let keep_ids = !self.run({
            let src = source.clone();
            move |db| async move { db.import_merges(&src).await }
        })?;
        progress(&format!(
            "{} the import of {source}{}",
            if report.resumed {
                "resuming"
            } else {
                "starting"
            },
            if keep_ids { "" } else { " (merging)" }
        ));

        // 2. Sessions (all at once: parents may come after their children).
        let sessions = read_rows(
            &conn,
            "sessions",
            &tables.sessions,
            &select(&tables.sessions, "sessions", "ORDER BY rowid"),
            &[],
        )?;
        report.source_sessions = sessions.len() as u64;
        let versions = read_versions(&conn)?;
        let (t, src) = (tables.clone(), source.clone());
        let (inserted, skipped) = self.run(move |db| async move {
            db.import_sessions(&src, &t.sessions, &sessions, &versions)
                .await
        })?;
        report.sessions_skipped = skipped;
        progress(&format!(
            "sessions: {inserted} added, {skipped} already in the target"
        ));

        // 3. Each pending session's messages and usage, one transaction each.
        let src = source.clone();
        let pending = self.run(move |db| async move { db.pending_imports(&src).await })?;
        let total = pending.len();
        let mut last = Instant::now();
        for (i, session_id) in pending.into_iter().enumerate() {
            let messages = read_messages(&conn, &tables.messages, &session_id)?;
            let usage = read_rows(
                &conn,
                "session_model_usage",
                &tables.usage,
                &select(
                    &tables.usage,
                    "session_model_usage",
                    "WHERE session_id = ?1",
                ),
                &[&session_id],
            )?;
            let (t, src) = (tables.clone(), source.clone());
            let n = messages.len() as u64;
            let usage_n = usage.len() as u64;
            self.run(move |db| async move {
                db.import_session(&src, &t, &session_id, &messages, &usage, keep_ids)
                    .await
            })?;
            report.sessions_copied += 1;
            report.messages += n;
            report.usage_rows += usage_n;
            if last.elapsed() >= Duration::from_secs(1) || i + 1 == total {
                progress(&format!(
                    "sessions {}/{total}, messages {}",
                    i + 1,
                    report.messages
                ));
                last = Instant::now();
            }
        }

        // 4. Cron runs and routing entries (idempotent: existing keys are kept).
        let cron = read_rows(
            &conn,
            "hermes_cron_runs",
            &tables.cron,
            &select(&tables.cron, "hermes_cron_runs", "ORDER BY rowid"),
            &[],
        )?;
        let routes = read_rows(
            &conn,
            "gateway_routing",
            &tables.routing,
            &select(&tables.routing, "gateway_routing", ""),
            &[],
        )?;
        let t = tables.clone();
        let (cron_n, route_n) = self.run(move |db| async move {
            let a = db
                .import_rows(
                    "hermes_cron_runs",
                    &t.cron,
                    &cron,
                    "ON CONFLICT (run_id) DO NOTHING",
                )
                .await?;
            let b = db
                .import_rows(
                    "gateway_routing",
                    &t.routing,
                    &routes,
                    "ON CONFLICT DO NOTHING",
                )
                .await?;
            Ok((a, b))
        })?;
        report.cron_runs = cron_n;
        report.routes = route_n;
        progress(&format!(
            "cron runs: {cron_n} added; routing entries: {route_n} added"
        ));

        // 5. Totals: every imported session has the source's message count, and the run is
        // finished.
        let mut expected: u64 = 0;
        {
            let mut st = conn
                .prepare("SELECT session_id, count(*) FROM messages GROUP BY session_id")
                .map_err(src_err("read"))?;
            let counts = st
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(src_err("read"))?;
            let src = source.clone();
            let imported = self.run(move |db| async move { db.imported_sessions(&src).await })?;
            for (id, n) in counts {
                if imported.contains(&id) {
                    expected += n.max(0) as u64;
                }
            }
        }
        let src = source.clone();
        let verified = self.run(move |db| async move { db.finish_import(&src, expected).await })?;
        report.verified_messages = verified;
        progress(&format!(
            "verified: {verified} messages in {} sessions; the import of {source} is complete",
            report.source_sessions - report.sessions_skipped
        ));
        Ok(report)
    }
}

/// `hermes_sessions` rows of the source: (session, history version, model choice).
fn read_versions(
    conn: &rusqlite::Connection,
) -> Result<Vec<(String, i64, Option<String>)>, StoreError> {
    let mut st = conn
        .prepare("SELECT session_id, history_version, model_choice FROM hermes_sessions")
        .map_err(src_err("read"))?;
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(src_err("read"))
}

fn read_messages(
    conn: &rusqlite::Connection,
    columns: &[Column],
    session_id: &str,
) -> Result<Vec<SourceMessage>, StoreError> {
    let id_at = columns.iter().position(|c| c.name == "id");
    let mut sql = select(columns, "messages m", "");
    sql = sql.replacen(
        "SELECT ",
        "SELECT h.content_parts, h.reasoning_signature, h.trace_id, ",
        1,
    );
    sql.push_str(
        " LEFT JOIN hermes_messages h ON h.message_id = m.id WHERE m.session_id = ?1 \
         ORDER BY m.id",
    );
    let mut st = conn.prepare_cached(&sql).map_err(src_err("read"))?;
    let mut rows = st.query([session_id]).map_err(src_err("read"))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(src_err("read"))? {
        let parts: Option<String> = row.get(0).map_err(src_err("read"))?;
        let signature: Option<String> = row.get(1).map_err(src_err("read"))?;
        let trace_id: Option<String> = row.get(2).map_err(src_err("read"))?;
        let mut cells = Vec::with_capacity(columns.len());
        for (i, col) in columns.iter().enumerate() {
            let v = row.get_ref(i + 3).map_err(src_err("read"))?;
            let where_ = || format!("messages.{} of session {session_id}", col.name);
            cells.push(convert(v, col.kind, &where_)?);
        }
        let id = match id_at.map(|i| &cells[i]) {
            Some(Cell::Int(Some(id))) => *id,
            _ => {
                return Err(StoreError::Import {
                    detail: format!("a message of session {session_id} has no id"),
                });
            }
        };
        out.push(SourceMessage {
            id,
            cells,
            parts,
            signature,
            trace_id,
        });
    }
    Ok(out)
}

impl Db {
    /// Records the start of an import of `source`; true when it resumes an unfinished one.
    async fn start_import(
        &self,
        source: &str,
        merge: bool,
        max_id: i64,
    ) -> Result<bool, StoreError> {
        write_tx!(self, "migrate", |tx| {
            let run = tx
                .query_opt(
                    "SELECT finished_at IS NULL FROM hermes_import_runs WHERE source = $1",
                    &[&source],
                )
                .await?;
            if let Some(row) = &run
                && row.try_get::<_, bool>(0)?
            {
                return Ok(true);
            }
            let sessions: i64 = tx
                .query_one("SELECT count(*) FROM sessions", &[])
                .await?
                .try_get(0)?;
            if sessions > 0 && !merge {
                return Err(StoreError::Import {
                    detail: format!(
                        "the target already has {sessions} sessions; pass --merge to add this \
                         file's sessions to them (nothing was copied)"
                    ),
                });
            }
            tx.execute(
                "INSERT INTO hermes_import_runs (source, merge, started_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (source) DO UPDATE SET merge = excluded.merge, \
                 started_at = excluded.started_at, finished_at = NULL",
                &[&source, &(sessions > 0), &now()],
            )
            .await?;
            if sessions == 0 && max_id > 0 {
                // New rows written meanwhile get ids above the imported ones.
                tx.execute(
                    "SELECT setval(pg_get_serial_sequence('messages', 'id'), \
                     GREATEST($1, (SELECT COALESCE(max(id), 0) FROM messages)))",
                    &[&max_id],
                )
                .await?;
            }
            Ok(false)
        })
    }

    /// Whether the import of `source` merges (keeps no ids).
    async fn import_merges(&self, source: &str) -> Result<bool, StoreError> {
        read!(self, "migrate", |c| {
            Ok(c.query_one(
                "SELECT merge FROM hermes_import_runs WHERE source = $1",
                &[&source],
            )
            .await?
            .try_get(0)?)
        })
    }

    /// Inserts the sessions the target lacks (recording them for `source`); returns how
    /// many were added and how many were there already (not imported by this source).
    async fn import_sessions(
        &self,
        source: &str,
        columns: &[Column],
        rows: &[Vec<Cell>],
        versions: &[(String, i64, Option<String>)],
    ) -> Result<(u64, u64), StoreError> {
        let id_at = columns.iter().position(|c| c.name == "id");
        let title_at = columns.iter().position(|c| c.name == "title");
        let sql = insert(
            columns,
            "sessions",
            "ON CONFLICT (id) DO NOTHING RETURNING id",
        );
        write_tx!(self, "migrate", |tx| {
            tx.batch_execute("SET CONSTRAINTS ALL DEFERRED").await?;
            let st = tx.prepare(&sql).await?;
            let mut added = 0u64;
            let mut skipped = 0u64;
            for row in rows {
                let mut row = row.clone();
                let Some(Cell::Text(Some(id))) = id_at.map(|i| row[i].clone()) else {
                    continue;
                };
                let mine = tx
                    .query_opt(
                        "SELECT 1 FROM hermes_import_sessions WHERE source = $1 AND session_id = $2",
                        &[&source, &id],
                    )
                    .await?
                    .is_some();
                if mine {
                    continue;
                }
                if let Some(at) = title_at
                    && let Cell::Text(Some(title)) = &row[at]
                {
                    let mut candidate = title.clone();
                    let mut n = 1;
                    while tx
                        .query_opt(
                            "SELECT 1 FROM sessions WHERE title = $1 AND id <> $2",
                            &[&candidate, &id],
                        )
                        .await?
                        .is_some()
                    {
                        n += 1;
                        candidate = format!("{title} #{n}");
                    }
                    row[at] = Cell::Text(Some(candidate));
                }
                if tx.query_opt(&st, &params(&row)).await?.is_some() {
                    tx.execute(
                        "INSERT INTO hermes_import_sessions (source, session_id) VALUES ($1, $2)",
                        &[&source, &id],
                    )
                    .await?;
                    if let Some((_, v, choice)) = versions.iter().find(|(s, _, _)| s == &id) {
                        tx.execute(
                            "INSERT INTO hermes_sessions (session_id, history_version, model_choice) \
                             VALUES ($1, $2, $3) ON CONFLICT (session_id) DO NOTHING",
                            &[&id, v, choice],
                        )
                        .await?;
                    }
                    added += 1;
                } else {
                    skipped += 1;
                }
            }
            // A parent the source does not have (Python does not enforce the link).
            tx.execute(
                "UPDATE sessions s SET parent_session_id = NULL FROM hermes_import_sessions i \
                 WHERE i.source = $1 AND i.session_id = s.id AND s.parent_session_id IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id)",
                &[&source],
            )
            .await?;
            Ok((added, skipped))
        })
    }

    async fn pending_imports(&self, source: &str) -> Result<Vec<String>, StoreError> {
        read!(self, "migrate", |c| {
            let rows = c
                .query(
                    "SELECT i.session_id FROM hermes_import_sessions i \
                     JOIN sessions s ON s.id = i.session_id \
                     WHERE i.source = $1 AND i.done_at IS NULL ORDER BY s.hermes_seq",
                    &[&source],
                )
                .await?;
            rows.iter()
                .map(|r| r.try_get(0).map_err(StoreError::from))
                .collect()
        })
    }

    async fn imported_sessions(
        &self,
        source: &str,
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        read!(self, "migrate", |c| {
            let rows = c
                .query(
                    "SELECT session_id FROM hermes_import_sessions WHERE source = $1",
                    &[&source],
                )
                .await?;
            rows.iter()
                .map(|r| r.try_get(0).map_err(StoreError::from))
                .collect()
        })
    }

    /// Copies one session's messages and usage, verifies them and marks the session done,
    /// in one transaction.
    async fn import_session(
        &self,
        source: &str,
        tables: &Tables,
        session_id: &str,
        messages: &[SourceMessage],
        usage: &[Vec<Cell>],
        keep_ids: bool,
    ) -> Result<(), StoreError> {
        let columns: Vec<Column> = tables
            .messages
            .iter()
            .filter(|c| keep_ids || c.name != "id")
            .cloned()
            .collect();
        let id_at = tables.messages.iter().position(|c| c.name == "id");
        let insert_sql = insert(&columns, "messages", "RETURNING id");
        let usage_sql = insert(&tables.usage, "session_model_usage", "");
        let check_cols = checked(&tables.messages);
        let expected = checksum(
            &messages
                .iter()
                .map(|m| {
                    (
                        check_cols.iter().map(|&i| m.cells[i].clone()).collect(),
                        m.extras(),
                    )
                })
                .collect::<Vec<_>>(),
        );
        let names: Vec<&str> = check_cols
            .iter()
            .map(|&i| tables.messages[i].name.as_str())
            .collect();
        let readback = format!(
            "SELECT {}, h.content_parts, h.reasoning_signature, h.trace_id FROM messages m \
             LEFT JOIN hermes_messages h ON h.message_id = m.id WHERE m.session_id = $1 \
             ORDER BY m.id",
            names
                .iter()
                .map(|n| format!("m.{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        write_tx!(self, "migrate", |tx| {
            for sql in [
                "DELETE FROM hermes_messages WHERE message_id IN \
                 (SELECT id FROM messages WHERE session_id = $1)",
                "DELETE FROM messages WHERE session_id = $1",
                "DELETE FROM session_model_usage WHERE session_id = $1",
            ] {
                tx.execute(sql, &[&session_id]).await?;
            }
            let st = tx.prepare(&insert_sql).await?;
            let rows: Vec<Vec<Cell>> = messages
                .iter()
                .map(|m| {
                    m.cells
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| keep_ids || Some(*i) != id_at)
                        .map(|(_, c)| c.clone())
                        .collect()
                })
                .collect();
            let mut new_ids = Vec::with_capacity(rows.len());
            for chunk in rows.chunks(500) {
                let inserted = try_join_all(chunk.iter().map(|r| {
                    let st = &st;
                    let tx = &tx;
                    async move { tx.query_one(st, &params(r)).await }
                }))
                .await?;
                for row in inserted {
                    new_ids.push(row.try_get::<_, i64>(0)?);
                }
            }
            for (m, id) in messages.iter().zip(&new_ids) {
                if m.parts.is_some() || m.signature.is_some() || m.trace_id.is_some() {
                    tx.execute(
                        "INSERT INTO hermes_messages (message_id, content_parts, \
                         reasoning_signature, trace_id) VALUES ($1, $2, $3, $4)",
                        &[id, &m.parts, &m.signature, &m.trace_id],
                    )
                    .await?;
                }
            }
            if !keep_ids {
                // Messages arrive in the source's order, so their new ids keep it.
                debug_assert!(new_ids.windows(2).all(|w| w[0] < w[1]));
            } else if let Some(bad) = messages.iter().zip(&new_ids).find(|(m, id)| m.id != **id) {
                return Err(StoreError::Import {
                    detail: format!(
                        "message {} of session {session_id} got id {}",
                        bad.0.id, bad.1
                    ),
                });
            }
            let ust = tx.prepare(&usage_sql).await?;
            for row in usage {
                tx.execute(&ust, &params(row)).await?;
            }
            // Read back and compare.
            let back = tx.query(readback.as_str(), &[&session_id]).await?;
            let mut copied = Vec::with_capacity(back.len());
            for r in &back {
                let mut cells = Vec::with_capacity(check_cols.len());
                for (k, &i) in check_cols.iter().enumerate() {
                    cells.push(Cell::from_pg(r, k, tables.messages[i].kind)?);
                }
                let parts: Option<String> = r.try_get(check_cols.len())?;
                let signature: Option<String> = r.try_get(check_cols.len() + 1)?;
                let trace_id: Option<String> = r.try_get(check_cols.len() + 2)?;
                copied.push((cells, [parts, signature, trace_id]));
            }
            let got = checksum(&copied);
            if copied.len() != messages.len() || got != expected {
                return Err(StoreError::Import {
                    detail: format!(
                        "session {session_id}: {} messages with checksum {got} read back, the \
                         source has {} with checksum {expected} (this session was not copied)",
                        copied.len(),
                        messages.len()
                    ),
                });
            }
            let n = i64::try_from(messages.len()).unwrap_or(i64::MAX);
            tx.execute(
                "UPDATE hermes_import_sessions SET messages = $3, checksum = $4, done_at = $5 \
                 WHERE source = $1 AND session_id = $2",
                &[&source, &session_id, &n, &got, &now()],
            )
            .await?;
            Ok(())
        })
    }

    /// Inserts `rows` into `table` in transactions of 500; returns how many were added.
    async fn import_rows(
        &self,
        table: &'static str,
        columns: &[Column],
        rows: &[Vec<Cell>],
        conflict: &str,
    ) -> Result<u64, StoreError> {
        if columns.is_empty() {
            return Ok(0);
        }
        let sql = insert(columns, table, conflict);
        let mut added = 0u64;
        for chunk in rows.chunks(500) {
            added += write_tx!(self, "migrate", |tx| {
                let st = tx.prepare(&sql).await?;
                let mut n = 0u64;
                for row in chunk {
                    n += tx.execute(&st, &params(row)).await?;
                }
                Ok(n)
            })?;
        }
        Ok(added)
    }

    /// Compares the copied totals with `expected`, moves the id sequence past the imported
    /// ids, and marks the import finished; returns the verified message count.
    async fn finish_import(&self, source: &str, expected: u64) -> Result<u64, StoreError> {
        write_tx!(self, "migrate", |tx| {
            let row = tx
                .query_one(
                    "SELECT COALESCE(sum(i.messages), 0)::bigint, \
                     (SELECT count(*) FROM messages m JOIN hermes_import_sessions j \
                      ON j.session_id = m.session_id WHERE j.source = $1), \
                     count(*) FILTER (WHERE i.done_at IS NULL) \
                     FROM hermes_import_sessions i WHERE i.source = $1",
                    &[&source],
                )
                .await?;
            let recorded = row.try_get::<_, i64>(0)?.max(0) as u64;
            let present = row.try_get::<_, i64>(1)?.max(0) as u64;
            let unfinished: i64 = row.try_get(2)?;
            if unfinished > 0 || recorded != expected || present != expected {
                return Err(StoreError::Import {
                    detail: format!(
                        "totals differ: the source has {expected} messages in the imported \
                         sessions, {recorded} were recorded as copied and {present} are in the \
                         target ({unfinished} sessions unfinished); run the command again"
                    ),
                });
            }
            tx.execute(
                "SELECT setval(pg_get_serial_sequence('messages', 'id'), \
                 (SELECT GREATEST(COALESCE(max(id), 0), 1) FROM messages))",
                &[],
            )
            .await?;
            tx.execute(
                "UPDATE hermes_import_runs SET finished_at = $2 WHERE source = $1",
                &[&source, &now()],
            )
            .await?;
            Ok(present)
        })
    }
}
