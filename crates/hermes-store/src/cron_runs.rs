//! Cron run history (table `hermes_cron_runs`; `cron_runs` in hermes' own schema V3; issue 8, FEATURES §1 Cron): one row per
//! finished run of a scheduled job. The agent session of a run is an ordinary `sessions` row
//! with `source = 'cron'`, linked by [`CronRun::session_id`]. The scheduler (hermes-cron)
//! writes rows; `hermes cron runs` and `hermes cron status` read them.

use chrono::{DateTime, Utc};
use rusqlite::Row;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::store::{SqliteStore, from_ts, to_ts};

/// The outcome of delivering one run to one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronDelivery {
    /// The target as written in the job (`local`, `origin`, `telegram:123`, a URL).
    pub target: String,
    /// True when delivered.
    pub ok: bool,
    /// What happened (`saved to …`, `sent (attempt 1)`, `HTTP 500 after 3 attempts`, …).
    pub detail: String,
}

/// One finished run of a cron job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronRun {
    /// Run id (12 hex chars); unique.
    pub run_id: String,
    /// Job id.
    pub job_id: String,
    /// Job name at run time.
    pub job_name: String,
    /// The due time it ran for (`None`: a manual run).
    pub due_at: Option<DateTime<Utc>>,
    /// Start time (stored with millisecond precision).
    pub started_at: DateTime<Utc>,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// `ok`, `silent`, `failed`, `timeout` or `interrupted`.
    pub status: String,
    /// Error text of a run that did not finish with a reply.
    pub error: Option<String>,
    /// The Markdown output file, relative to `HERMES_HOME`.
    pub output_path: Option<String>,
    /// One result per delivery target, in the job's order (empty for `[SILENT]`).
    pub deliveries: Vec<CronDelivery>,
    /// The agent session in `sessions` (`source = 'cron'`), if an agent ran.
    pub session_id: Option<String>,
}

impl CronRun {
    /// Whether the run itself failed (`failed`, `timeout`, `interrupted`); delivery failures
    /// are separate ([`CronRun::failed_deliveries`]).
    pub fn is_failure(&self) -> bool {
        !matches!(self.status.as_str(), "ok" | "silent")
    }

    /// The deliveries that did not succeed.
    pub fn failed_deliveries(&self) -> impl Iterator<Item = &CronDelivery> {
        self.deliveries.iter().filter(|d| !d.ok)
    }
}

const COLUMNS: &str = "run_id, job_id, job_name, due_at, started_at, duration_ms, status, error, \
                       output_path, deliveries, session_id";

fn run_from_row(r: &Row<'_>) -> rusqlite::Result<CronRun> {
    let deliveries: String = r.get(9)?;
    let duration: i64 = r.get(5)?;
    Ok(CronRun {
        run_id: r.get(0)?,
        job_id: r.get(1)?,
        job_name: r.get(2)?,
        due_at: r.get::<_, Option<f64>>(3)?.map(from_ts),
        started_at: from_ts(r.get(4)?),
        duration_ms: u64::try_from(duration).unwrap_or(0),
        status: r.get(6)?,
        error: r.get(7)?,
        output_path: r.get(8)?,
        // A damaged JSON cell shows as no deliveries rather than hiding the whole run.
        deliveries: serde_json::from_str(&deliveries).unwrap_or_default(),
        session_id: r.get(10)?,
    })
}

impl SqliteStore {
    /// Records finished runs in one transaction. A run whose `run_id` is already recorded is
    /// left as it is (`INSERT OR IGNORE`), so importing the same history twice adds nothing.
    /// Returns how many rows were added.
    ///
    /// Errors: [`StoreError::Busy`] when the database stayed locked (nothing written),
    /// [`StoreError::Sqlite`].
    pub fn record_cron_runs(&self, runs: &[CronRun]) -> Result<usize, StoreError> {
        let rows: Vec<(String, Option<f64>, f64, i64)> = runs
            .iter()
            .map(|run| {
                (
                    serde_json::to_string(&run.deliveries).unwrap_or_else(|_| "[]".into()),
                    run.due_at.map(to_ts),
                    to_ts(run.started_at),
                    i64::try_from(run.duration_ms).unwrap_or(i64::MAX),
                )
            })
            .collect();
        self.write("record_cron_runs", |tx| {
            let mut added = 0;
            let mut st = tx.prepare_cached(&format!(
                "INSERT OR IGNORE INTO hermes_cron_runs ({COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
            ))?;
            for (run, (deliveries, due, started, duration)) in runs.iter().zip(&rows) {
                added += st.execute(rusqlite::params![
                    run.run_id,
                    run.job_id,
                    run.job_name,
                    due,
                    started,
                    duration,
                    run.status,
                    run.error,
                    run.output_path,
                    deliveries,
                    run.session_id
                ])?;
            }
            Ok(added)
        })
    }

    /// Records one finished run (see [`SqliteStore::record_cron_runs`]).
    pub fn record_cron_run(&self, run: &CronRun) -> Result<(), StoreError> {
        self.record_cron_runs(std::slice::from_ref(run)).map(|_| ())
    }

    /// The newest `limit` runs, newest first (by start time, then insertion order), of job
    /// `job_id`, or of every job when `None`.
    pub fn cron_runs(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<CronRun>, StoreError> {
        let conn = self.lock();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        conn.prepare(&format!(
            "SELECT {COLUMNS} FROM hermes_cron_runs WHERE (?1 IS NULL OR job_id = ?1) \
             ORDER BY started_at DESC, rowid DESC LIMIT ?2"
        ))
        .and_then(|mut st| {
            st.query_map(rusqlite::params![job_id, limit], run_from_row)?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(self.sql_err("cron_runs"))
    }

    /// The newest run of each job, keyed by job id (for `hermes cron status`).
    pub fn latest_cron_runs(&self) -> Result<Vec<CronRun>, StoreError> {
        let conn = self.lock();
        conn.prepare(&format!(
            "SELECT {COLUMNS} FROM hermes_cron_runs c WHERE c.rowid = (SELECT c2.rowid FROM hermes_cron_runs c2 \
             WHERE c2.job_id = c.job_id ORDER BY c2.started_at DESC, c2.rowid DESC LIMIT 1) \
             ORDER BY c.started_at DESC"
        ))
        .and_then(|mut st| {
            st.query_map([], run_from_row)?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(self.sql_err("latest_cron_runs"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::SCHEMA_VERSION;
    use crate::legacy::LEGACY_STEPS;

    fn run(id: &str, job: &str, at: &str, status: &str) -> CronRun {
        CronRun {
            run_id: id.into(),
            job_id: job.into(),
            job_name: format!("job {job}"),
            due_at: Some(at.parse().unwrap()),
            started_at: at.parse().unwrap(),
            duration_ms: 1500,
            status: status.into(),
            error: (status == "failed").then(|| "model unreachable".into()),
            output_path: Some(format!("cron/output/{job}/x.md")),
            deliveries: vec![
                CronDelivery {
                    target: "local".into(),
                    ok: true,
                    detail: "saved".into(),
                },
                CronDelivery {
                    target: "telegram:1".into(),
                    ok: false,
                    detail: "HTTP 502 (after 3 attempts)".into(),
                },
            ],
            session_id: None,
        }
    }

    #[test]
    fn runs_round_trip_newest_first_and_import_is_idempotent() {
        let store = SqliteStore::open_in_memory().unwrap();
        let a = run("r1", "j1", "2026-01-01T07:00:00Z", "ok");
        let b = run("r2", "j2", "2026-01-01T08:00:00Z", "failed");
        let c = run("r3", "j1", "2026-01-02T07:00:00Z", "timeout");
        assert_eq!(
            store
                .record_cron_runs(&[a.clone(), b.clone(), c.clone()])
                .unwrap(),
            3
        );
        assert_eq!(store.record_cron_runs(&[a.clone(), b.clone()]).unwrap(), 0);
        assert_eq!(
            store.cron_runs(None, 10).unwrap(),
            vec![c.clone(), b.clone(), a.clone()]
        );
        assert_eq!(store.cron_runs(Some("j1"), 10).unwrap(), vec![c.clone(), a]);
        assert_eq!(store.cron_runs(None, 1).unwrap(), vec![c.clone()]);
        assert_eq!(
            store.latest_cron_runs().unwrap(),
            vec![c.clone(), b.clone()]
        );
        assert!(c.is_failure() && b.is_failure());
        assert_eq!(c.failed_deliveries().count(), 1);
    }

    /// A `state.db` of hermes' own schema version 2 (with a session in it) is migrated to the
    /// shared schema on open, keeps its sessions and records cron runs.
    #[test]
    fn a_version_2_database_migrates_to_the_shared_schema_keeping_its_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            for step in &LEGACY_STEPS[..2] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 2).unwrap();
            conn.execute(
                "INSERT INTO sessions (id, source, model, provider, started_at) \
                 VALUES ('old', 'cron', 'm', 'p', 1.0)",
                [],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.get_session("old").unwrap().unwrap().source, "cron");
        let mut r = run("r1", "j1", "2026-01-01T07:00:00Z", "silent");
        r.session_id = Some("old".into());
        r.due_at = None;
        store.record_cron_run(&r).unwrap();
        assert_eq!(store.cron_runs(Some("j1"), 5).unwrap(), vec![r]);
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }
}
