//! Run history (issue 8, FEATURES §1 Cron): one row per finished run in the session store
//! (`state.db`, table `cron_runs`); the run's agent session is a `sessions` row with
//! `source = "cron"` linked by [`RunRecord::session_id`].
//!
//! Nothing acknowledged is lost: when `state.db` cannot take a run (locked past the store's
//! retry budget, disk error), the run is appended as one JSON line to
//! `HERMES_HOME/cron/runs.jsonl` instead. That file is also where earlier versions kept the
//! whole history. [`RunLog::import_pending`] (called before every read) moves its lines into
//! `state.db` — idempotently, by run id — and then appends them to
//! `cron/runs.imported.jsonl` and removes `runs.jsonl`, all under the jobs lock; lines that
//! cannot be read are kept in the archive and reported, never dropped.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use hermes_store::SessionStore;

use crate::executions::ExecutionLedger;
use crate::store::{JobStore, JobStoreError};

/// One finished run (a row of `cron_runs`).
pub type RunRecord = hermes_store::CronRun;

/// The pending-runs journal, relative to `HERMES_HOME/cron/`.
pub const PENDING_RUNS_FILE: &str = "runs.jsonl";
/// Where imported journal lines are archived, relative to `HERMES_HOME/cron/`.
pub const IMPORTED_RUNS_FILE: &str = "runs.imported.jsonl";

/// What [`RunLog::import_pending`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Runs newly added to `state.db`.
    pub imported: usize,
    /// Lines that were not a run record (kept in the archive file).
    pub unreadable: usize,
}

/// The run history of one hermes home: `state.db` plus the fallback journal.
#[derive(Debug, Clone)]
pub struct RunLog {
    jobs: JobStore,
    db: Arc<SessionStore>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JobStoreError + '_ {
    move |source| JobStoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl RunLog {
    /// The history kept in `db` for the jobs of `jobs`.
    pub fn new(jobs: JobStore, db: Arc<SessionStore>) -> RunLog {
        RunLog { jobs, db }
    }

    /// The session store the history lives in.
    pub fn db(&self) -> &Arc<SessionStore> {
        &self.db
    }

    /// Records a finished run in `state.db`; when that fails, appends it to the journal (see
    /// the module docs). It is also written to Python Hermes' ledger
    /// ([`crate::executions`]; a failure there is logged, the run is kept either way).
    /// Blocking. Errors only when neither `state.db` nor the journal could take it.
    pub fn record(&self, run: &RunRecord) -> Result<(), JobStoreError> {
        if let Err(e) = ExecutionLedger::new(self.jobs.dir()).record(run) {
            tracing::warn!(error = %e, run = %run.run_id, "cron run not written to Python's execution ledger");
        }
        match self.db.record_cron_run(run) {
            Ok(()) => Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, run = %run.run_id, "cron run not stored in state.db; kept in cron/runs.jsonl");
                self.append_pending(run)
            }
        }
    }

    /// Appends `run` to `cron/runs.jsonl` under the jobs lock.
    fn append_pending(&self, run: &RunRecord) -> Result<(), JobStoreError> {
        let path = self.jobs.dir().join(PENDING_RUNS_FILE);
        let mut line = serde_json::to_string(run).map_err(|e| JobStoreError::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push('\n');
        self.jobs.update(|_| {
            append(&path, line.as_bytes())?;
            Ok((false, ()))
        })
    }

    /// Moves the runs of `cron/runs.jsonl` into `state.db` (module docs). Blocking.
    /// When `state.db` refuses them, the journal stays as it was and the error is returned.
    pub fn import_pending(&self) -> Result<ImportReport, JobStoreError> {
        let dir = self.jobs.dir().to_path_buf();
        let pending = dir.join(PENDING_RUNS_FILE);
        if !pending.exists() {
            return Ok(ImportReport::default());
        }
        self.jobs.update(|_| {
            let text = match std::fs::read_to_string(&pending) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok((false, ImportReport::default()));
                }
                Err(e) => return Err(io(&pending)(e)),
            };
            let mut runs = Vec::new();
            let mut unreadable = 0;
            for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match serde_json::from_str::<RunRecord>(line) {
                    Ok(r) => runs.push(r),
                    Err(e) => {
                        unreadable += 1;
                        tracing::warn!(file = %pending.display(), line = n + 1, error = %e, "cron run line not readable; kept in cron/runs.imported.jsonl");
                    }
                }
            }
            let imported = self.db.record_cron_runs(&runs)?;
            let archive = dir.join(IMPORTED_RUNS_FILE);
            let mut body = text;
            if !body.ends_with('\n') {
                body.push('\n');
            }
            append(&archive, body.as_bytes())?;
            std::fs::remove_file(&pending).map_err(io(&pending))?;
            Ok((
                false,
                ImportReport {
                    imported,
                    unreadable,
                },
            ))
        })
    }

    /// The newest `limit` runs, newest first, of job `job_id` (all jobs when `None`): hermes'
    /// own, after importing any pending journal lines (an import failure is logged; the runs
    /// already in `state.db` are still returned), and Python Hermes' from its ledger
    /// ([`ExecutionLedger::python_runs`]; an unreadable ledger is logged and left out).
    /// Blocking.
    pub fn list(
        &self,
        job_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RunRecord>, JobStoreError> {
        if let Err(e) = self.import_pending() {
            tracing::warn!(error = %e, "pending cron runs not imported yet");
        }
        let mut runs = self
            .db
            .cron_runs(job_id, limit)
            .map_err(JobStoreError::from)?;
        let names: std::collections::HashMap<String, String> = self
            .jobs
            .list()
            .map(|jobs| jobs.into_iter().map(|j| (j.id, j.name)).collect())
            .unwrap_or_default();
        let name_of = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_string());
        match ExecutionLedger::new(self.jobs.dir()).python_runs(job_id, limit, name_of) {
            Ok(python) => runs.extend(python),
            Err(e) => tracing::warn!(error = %e, "Python Hermes' cron runs not read"),
        }
        runs.sort_by_key(|r| std::cmp::Reverse(r.started_at));
        runs.truncate(limit);
        Ok(runs)
    }

    /// The newest run of every job (for `hermes cron status`), after importing pending
    /// journal lines. Blocking.
    pub fn latest_per_job(&self) -> Result<Vec<RunRecord>, JobStoreError> {
        if let Err(e) = self.import_pending() {
            tracing::warn!(error = %e, "pending cron runs not imported yet");
        }
        self.db.latest_cron_runs().map_err(JobStoreError::from)
    }
}

fn append(path: &Path, bytes: &[u8]) -> Result<(), JobStoreError> {
    let mut f = hermes_protocol::private_fs::open_append(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}
