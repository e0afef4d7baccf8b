//! `Scheduler::run_forever` (the scheduler inside `hermes gateway run`) with paused time: a
//! job created through the `cronjob` tool wakes it at once (no wait for the next re-read),
//! jobs created by another process are seen within `MAX_SLEEP`, and it leaves a heartbeat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hermes_cron::{
    CronjobTool, Deliverer, Job, JobRunner, JobStore, MAX_SLEEP, NewJob, Origin, RunOutput,
    RunStatus, Scheduler, SchedulerBeat, SchedulerConfig, TokioClock, Tz,
};
use hermes_store::SessionStore;
use hermes_testkit::TempHome;
use hermes_tools::{Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Echo;

#[async_trait::async_trait]
impl JobRunner for Echo {
    async fn run(&self, job: &Job, _cancel: CancellationToken) -> RunOutput {
        RunOutput {
            status: RunStatus::Ok,
            text: format!("ran: {}", job.prompt),
            error: None,
            session_id: None,
        }
    }
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn scheduler(home: &TempHome, start: DateTime<Utc>) -> Scheduler {
    Scheduler::new(
        JobStore::new(home.home()),
        Arc::new(SessionStore::open(home.home().state_db()).unwrap()),
        Arc::new(TokioClock::starting_at(start)),
        Arc::new(Echo),
        Deliverer::new(None),
        SchedulerConfig {
            owner: "gateway-test".into(),
            ..SchedulerConfig::default()
        },
    )
}

async fn wait_for_runs(s: &Scheduler, n: usize) -> Vec<hermes_cron::RunRecord> {
    for _ in 0..10_000 {
        let log = s.history().clone();
        let runs = tokio::task::spawn_blocking(move || log.list(None, 10).unwrap())
            .await
            .unwrap();
        if runs.len() >= n {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} runs recorded");
}

#[tokio::test(start_paused = true)]
async fn a_job_created_through_the_tool_wakes_the_scheduler() {
    let home = TempHome::new().unwrap();
    let start = t("2026-03-04T13:00:00Z");
    let s = scheduler(&home, start);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (s, c) = (s.clone(), cancel.clone());
        async move { s.run_forever(c).await }
    });
    // Let it pass once over the (empty) jobs and go to sleep for MAX_SLEEP.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let beat = tokio::task::spawn_blocking({
        let store = JobStore::new(home.home());
        move || SchedulerBeat::read(&store)
    })
    .await
    .unwrap()
    .expect("a heartbeat after the first pass");
    assert_eq!(beat.owner, "gateway-test");
    assert_eq!(beat.pid, std::process::id());

    let tool = CronjobTool::new(
        JobStore::new(home.home()),
        Arc::new(TokioClock::starting_at(
            start + chrono::Duration::seconds(1),
        )),
        Tz::UTC,
        Some(s.clone()),
        None,
    )
    .with_origin(Some(Origin {
        platform: "telegram".into(),
        chat_id: "4242".into(),
        thread_id: None,
        extra: Default::default(),
    }));
    let ctx = ToolContext::for_tests(home.path(), home.home().clone());
    let out = tool
        .call(
            json!({"action": "create", "schedule": "2026-03-04T13:00:00Z", "prompt": "ping"}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    let created: serde_json::Value = serde_json::from_str(&out.content).unwrap();
    // Read before the scheduler runs it (nothing yields before this synchronous read).
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("cron/jobs.json")).unwrap())
            .unwrap();
    assert_eq!(stored["jobs"][0]["origin"]["chat_id"], "4242");
    assert_eq!(
        created["created"]["deliver"], "origin",
        "a chat's jobs report back to it"
    );

    let runs = wait_for_runs(&s, 1).await;
    assert!(
        runs[0].started_at < start + chrono::Duration::from_std(MAX_SLEEP).unwrap(),
        "the run started at {} — the scheduler slept through the wake",
        runs[0].started_at
    );
    // A one-shot is removed after its run (its repeat limit is 1), as in Python.
    assert!(JobStore::new(home.home()).get("ping").is_err());
    // No gateway sender here: the origin delivery is recorded as not deliverable.
    assert!(
        runs[0]
            .deliveries
            .iter()
            .any(|d| d.target == "origin" && !d.ok)
    );
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn jobs_written_by_another_process_are_picked_up_within_max_sleep() {
    let home = TempHome::new().unwrap();
    let start = t("2026-03-04T13:00:00Z");
    let s = scheduler(&home, start);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (s, c) = (s.clone(), cancel.clone());
        async move { s.run_forever(c).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Written straight to jobs.json, as `hermes cron create` in another process would.
    let store = JobStore::new(home.home());
    tokio::task::spawn_blocking(move || {
        store
            .create(
                NewJob {
                    prompt: "from elsewhere".into(),
                    schedule: "2026-03-04T13:00:00Z".into(),
                    ..NewJob::default()
                },
                t("2026-03-04T13:00:01Z"),
                Tz::UTC,
            )
            .unwrap()
    })
    .await
    .unwrap();
    let runs = wait_for_runs(&s, 1).await;
    let late = runs[0].started_at - start;
    assert!(
        late <= chrono::Duration::from_std(MAX_SLEEP).unwrap() + chrono::Duration::seconds(2),
        "picked up after {late}"
    );
    assert_eq!(runs[0].status, "ok");
    cancel.cancel();
    task.await.unwrap();
}
