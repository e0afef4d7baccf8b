//! Run history in `state.db` (issue 8): runs recorded by the scheduler are read back by
//! `RunLog`, and the `cron/runs.jsonl` journal of earlier versions (also the fallback when
//! `state.db` refuses a write) is imported once, with nothing lost.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use hermes_cron::{IMPORTED_RUNS_FILE, JobStore, PENDING_RUNS_FILE, RunLog};
use hermes_store::SessionStore;
use hermes_testkit::TempHome;

/// Two lines in the shape earlier versions wrote, and one damaged line.
const LEGACY: &str = r#"{"run_id":"aaaaaaaaaaaa","job_id":"j1","job_name":"digest","due_at":"2026-01-01T07:00:00Z","started_at":"2026-01-01T07:00:01Z","duration_ms":2300,"status":"ok","error":null,"output_path":"cron/output/j1/2026-01-01_07-00-01.md","deliveries":[{"target":"local","ok":true,"detail":"saved to cron/output/j1/2026-01-01_07-00-01.md"}],"session_id":"20260101_070001_abcdef"}
{"run_id":"bbbbbbbbbbbb","job_id":"j1","job_name":"digest","due_at":null,"started_at":"2026-01-02T09:00:00Z","duration_ms":100,"status":"failed","error":"model unreachable","output_path":null,"deliveries":[{"target":"telegram:5","ok":false,"detail":"HTTP 502 (after 3 attempts)"}],"session_id":null}
{"run_id": "cut off
"#;

#[test]
fn the_runs_jsonl_journal_is_imported_once_and_archived() {
    let home = TempHome::new().unwrap();
    let jobs = JobStore::new(home.home());
    std::fs::create_dir_all(jobs.dir()).unwrap();
    std::fs::write(jobs.dir().join(PENDING_RUNS_FILE), LEGACY).unwrap();
    let db = Arc::new(SessionStore::open(home.home().state_db()).unwrap());
    let log = RunLog::new(jobs.clone(), db.clone());

    let runs = log.list(None, 10).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].run_id, "bbbbbbbbbbbb", "newest first");
    assert_eq!(runs[0].error.as_deref(), Some("model unreachable"));
    assert!(!runs[0].deliveries[0].ok);
    assert_eq!(runs[1].duration_ms, 2300);
    assert_eq!(
        runs[1].session_id.as_deref(),
        Some("20260101_070001_abcdef")
    );

    assert!(!jobs.dir().join(PENDING_RUNS_FILE).exists());
    let archive = std::fs::read_to_string(jobs.dir().join(IMPORTED_RUNS_FILE)).unwrap();
    assert_eq!(archive, LEGACY, "every line is kept, the damaged one too");

    // A journal written again later (a failed write) is imported too; old runs stay single.
    let mut again = LEGACY.lines().next().unwrap().to_string();
    again.push('\n');
    std::fs::write(jobs.dir().join(PENDING_RUNS_FILE), &again).unwrap();
    let report = log.import_pending().unwrap();
    assert_eq!(report.imported, 0, "already in state.db");
    assert_eq!(db.cron_runs(None, 10).unwrap().len(), 2);
    let archive = std::fs::read_to_string(jobs.dir().join(IMPORTED_RUNS_FILE)).unwrap();
    assert_eq!(archive, format!("{LEGACY}{again}"));
    assert_eq!(log.latest_per_job().unwrap().len(), 1);
}

#[test]
fn nothing_to_import_is_not_an_error() {
    let home = TempHome::new().unwrap();
    let db = Arc::new(SessionStore::open(home.home().state_db()).unwrap());
    let log = RunLog::new(JobStore::new(home.home()), db);
    assert_eq!(log.import_pending().unwrap().imported, 0);
    assert!(log.list(Some("nope"), 5).unwrap().is_empty());
}
