//! Run history: one JSON line per finished run in `HERMES_HOME/cron/runs.jsonl`, appended
//! under the jobs lock. Agent runs also leave a session in `state.db` with
//! `source = "cron"` (its `end_reason` is the run status); [`RunRecord::session_id`] links
//! the two.

use std::io::Write;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::delivery::DeliveryResult;
use crate::store::{JobStore, JobStoreError};

/// One finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Run id.
    pub run_id: String,
    /// Job id.
    pub job_id: String,
    /// Job name at run time.
    pub job_name: String,
    /// The due time it ran for (`None`: manual run).
    pub due_at: Option<DateTime<Utc>>,
    /// Start time.
    pub started_at: DateTime<Utc>,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// `ok`, `silent`, `failed`, `timeout`.
    pub status: String,
    /// Error text of a failed run.
    pub error: Option<String>,
    /// The Markdown output file, relative to `HERMES_HOME`.
    pub output_path: Option<String>,
    /// One result per delivery target.
    pub deliveries: Vec<DeliveryResult>,
    /// The agent session in `state.db`, if an agent ran.
    pub session_id: Option<String>,
}

/// Appends `record` to `cron/runs.jsonl` under the jobs lock.
pub fn append_run(store: &JobStore, record: &RunRecord) -> Result<(), JobStoreError> {
    let path = store.dir().join("runs.jsonl");
    let mut line = serde_json::to_string(record).map_err(|e| JobStoreError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    line.push('\n');
    store.update(|_| {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()).map(|()| f));
        match f.as_mut() {
            Ok(_) => Ok((false, ())),
            Err(e) => Err(JobStoreError::Io {
                path: path.clone(),
                source: std::io::Error::new(e.kind(), e.to_string()),
            }),
        }
    })
}

/// The newest `limit` runs, newest first, of job `job_id` (all jobs when `None`).
/// Unreadable lines are skipped.
pub fn list_runs(
    store: &JobStore,
    job_id: Option<&str>,
    limit: usize,
) -> Result<Vec<RunRecord>, JobStoreError> {
    let path = store.dir().join("runs.jsonl");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(JobStoreError::Io { path, source }),
    };
    Ok(text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<RunRecord>(l).ok())
        .filter(|r| job_id.is_none_or(|id| r.job_id == id))
        .take(limit)
        .collect())
}
