//! Python Hermes' cron execution ledger, `HERMES_HOME/cron/executions.db` (Python Hermes
//! 0.19.0's `cron/executions.py`): one row per run attempt in table `executions`, which
//! Python's `hermes cron runs` lists. hermes writes a row for every run it finishes (source
//! `hermes`), so Python's history shows hermes' runs, and reads Python's rows back into
//! `hermes cron runs`, so each program lists the other's. hermes' own, fuller history stays
//! in `state.db` ([`crate::history`]); this file is the shared part.
//!
//! The table, its indexes and pragmas are Python's (`_connect`); rows are written as
//! Python's `finish_execution` leaves them (a terminal `status`, ISO timestamps with their
//! offset) and the ledger is pruned to Python's [`MAX_TERMINAL_EXECUTIONS`] terminal rows.
//! hermes writes only terminal rows, at the end of a run, so Python's recovery of
//! interrupted attempts never has to judge one of them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rusqlite::{Connection, params};

use crate::history::RunRecord;
use crate::record::parse_time;

/// The ledger's file name under `HERMES_HOME/cron/`.
pub const EXECUTIONS_FILE: &str = "executions.db";
/// Terminal rows Python keeps (`MAX_TERMINAL_EXECUTIONS`); older ones are pruned.
pub const MAX_TERMINAL_EXECUTIONS: u32 = 1000;
/// The `source` hermes writes its rows with.
pub const HERMES_SOURCE: &str = "hermes";

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS executions (
    id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    source TEXT NOT NULL,
    process_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    process_started_at INTEGER,
    status TEXT NOT NULL CHECK(status IN
      ('claimed','running','completed','failed','unknown')),
    claimed_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS idx_executions_job_claimed
    ON executions(job_id, claimed_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS idx_executions_status_claimed
    ON executions(status, claimed_at DESC, id DESC);";

/// Why the ledger could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct LedgerError {
    /// The ledger file.
    pub path: PathBuf,
    /// The SQLite error.
    #[source]
    pub source: rusqlite::Error,
}

/// The ledger of the cron folder `cron_dir` (`HERMES_HOME/cron`).
#[derive(Debug, Clone)]
pub struct ExecutionLedger {
    path: PathBuf,
}

impl ExecutionLedger {
    /// The ledger in `cron_dir`; nothing is opened until it is used.
    pub fn new(cron_dir: &Path) -> ExecutionLedger {
        ExecutionLedger {
            path: cron_dir.join(EXECUTIONS_FILE),
        }
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> LedgerError + '_ {
        |source| LedgerError {
            path: self.path.clone(),
            source,
        }
    }

    /// Opens the file as Python does (creating it and the table when missing).
    fn open(&self) -> Result<Connection, LedgerError> {
        if let Some(dir) = self.path.parent() {
            let _ = hermes_protocol::private_fs::create_dir_all(dir);
        }
        let conn = Connection::open(&self.path).map_err(self.err())?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(self.err())?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(self.err())?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(self.err())?;
        conn.execute_batch(SCHEMA).map_err(self.err())?;
        Ok(conn)
    }

    /// Writes the finished `run` as one terminal row (`completed` for `ok`/`silent`,
    /// `unknown` for `interrupted`, `failed` otherwise) and prunes old terminal rows.
    ///
    /// # Errors
    /// [`LedgerError`] when the file cannot be opened or written.
    pub fn record(&self, run: &RunRecord) -> Result<(), LedgerError> {
        let conn = self.open()?;
        let status = match run.status.as_str() {
            "ok" | "silent" => "completed",
            "interrupted" => "unknown",
            _ => "failed",
        };
        let started = run.started_at.to_rfc3339();
        let finished = (run.started_at
            + chrono::Duration::milliseconds(i64::try_from(run.duration_ms).unwrap_or(i64::MAX)))
        .to_rfc3339();
        let error = match status {
            "completed" => None,
            _ => Some(run.error.clone().unwrap_or_else(|| run.status.clone())),
        };
        conn.execute(
            "INSERT OR IGNORE INTO executions (id, job_id, source, process_id, pid, \
             process_started_at, status, claimed_at, started_at, finished_at, error) \
             VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7, ?7, ?8, ?9)",
            params![
                execution_id(&run.run_id),
                run.job_id,
                HERMES_SOURCE,
                process_id(),
                std::process::id(),
                status,
                started,
                finished,
                error
            ],
        )
        .map_err(self.err())?;
        conn.execute(
            "DELETE FROM executions WHERE id IN (SELECT id FROM executions \
             WHERE status IN ('completed','failed','unknown') \
             ORDER BY claimed_at DESC, id DESC LIMIT -1 OFFSET ?1)",
            params![MAX_TERMINAL_EXECUTIONS],
        )
        .map_err(self.err())?;
        Ok(())
    }

    /// The newest `limit` attempts recorded by Python Hermes (every source but hermes'), of
    /// job `job_id` or all jobs, newest first, as run records: `job_name` from `name_of`,
    /// status `ok` / `failed` / `interrupted` (`unknown`) / `running` (claimed or running),
    /// the duration from start to finish (0 while running). A missing file is no rows; a
    /// row whose claim time does not parse is skipped.
    ///
    /// # Errors
    /// [`LedgerError`] when an existing file cannot be read.
    pub fn python_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
        name_of: impl Fn(&str) -> String,
    ) -> Result<Vec<RunRecord>, LedgerError> {
        if !self.path.exists() {
            return Ok(Vec::new());
        }
        let conn = self.open()?;
        let mut stmt = conn
            .prepare(
                "SELECT id, job_id, status, claimed_at, started_at, finished_at, error \
                 FROM executions WHERE source != ?1 AND (?2 IS NULL OR job_id = ?2) \
                 ORDER BY claimed_at DESC, id DESC LIMIT ?3",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(
                params![
                    HERMES_SOURCE,
                    job_id,
                    i64::try_from(limit).unwrap_or(i64::MAX)
                ],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<String>>(6)?,
                    ))
                },
            )
            .map_err(self.err())?;
        let mut out = Vec::new();
        for row in rows {
            let (id, job, status, claimed, started, finished, error) = row.map_err(self.err())?;
            let Some(begin) = started
                .as_deref()
                .and_then(parse_time)
                .or_else(|| parse_time(&claimed))
            else {
                continue;
            };
            let duration_ms = finished
                .as_deref()
                .and_then(parse_time)
                .map_or(0, |end| (end - begin).num_milliseconds().max(0) as u64);
            let status = match status.as_str() {
                "completed" => "ok",
                "failed" => "failed",
                "unknown" => "interrupted",
                _ => "running",
            };
            out.push(RunRecord {
                run_id: id.chars().take(12).collect(),
                job_name: name_of(&job),
                job_id: job,
                due_at: None,
                started_at: begin,
                duration_ms,
                status: status.to_string(),
                error,
                output_path: None,
                deliveries: Vec::new(),
                session_id: None,
            });
        }
        Ok(out)
    }
}

/// The ledger id of hermes run `run_id`: Python's ids are 32 hex digits (`uuid4().hex`);
/// hermes' 12-hex run id is padded with zeros, so recording the same run twice (a retried
/// write) leaves one row.
fn execution_id(run_id: &str) -> String {
    format!("{run_id:0<32}")
}

/// This process's ledger identity (Python's `_PROCESS_ID`: 32 random hex digits).
fn process_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("{:032x}", rand::random::<u128>()))
}
