//! Scheduler behaviour with mocked time: exactly-once claims (C39), missed runs after
//! downtime, manual runs that keep the schedule (C41), timeouts, `[SILENT]`, delivery.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use hermes_cron::{
    Deliverer, Job, JobRunner, JobStore, NO_GATEWAY, NewJob, PlatformMessage, PlatformSender,
    RunOutput, RunStatus, Scheduler, SchedulerConfig, TokioClock,
};
use hermes_testkit::TempHome;
use tokio_util::sync::CancellationToken;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// Counts runs and answers with a fixed output.
struct FakeRunner {
    runs: AtomicUsize,
    reply: String,
    status: RunStatus,
}

impl FakeRunner {
    fn new(reply: &str, status: RunStatus) -> Arc<FakeRunner> {
        Arc::new(FakeRunner {
            runs: AtomicUsize::new(0),
            reply: reply.into(),
            status,
        })
    }
}

#[async_trait::async_trait]
impl JobRunner for FakeRunner {
    async fn run(&self, _job: &Job, _cancel: CancellationToken) -> RunOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        // A run that takes a while, so overlapping ticks really overlap.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        RunOutput {
            status: self.status,
            text: self.reply.clone(),
            error: (self.status != RunStatus::Ok).then(|| "it went wrong".to_string()),
            session_id: None,
        }
    }
}

/// A fake gateway that records what it was asked to send.
#[derive(Default)]
struct FakePlatform {
    sent: std::sync::Mutex<Vec<PlatformMessage>>,
}

#[async_trait::async_trait]
impl PlatformSender for FakePlatform {
    async fn send(&self, message: &PlatformMessage) -> Result<(), String> {
        self.sent.lock().unwrap().push(message.clone());
        Ok(())
    }
}

fn scheduler(
    home: &TempHome,
    start: DateTime<Utc>,
    runner: Arc<dyn JobRunner>,
    platform: Option<Arc<dyn PlatformSender>>,
    owner: &str,
) -> Scheduler {
    let mut deliverer = Deliverer::new(platform);
    deliverer.retry_base = std::time::Duration::from_millis(1);
    Scheduler::new(
        JobStore::new(home.home()),
        Arc::new(hermes_store::SessionStore::open(home.home().state_db()).unwrap()),
        Arc::new(TokioClock::starting_at(start)),
        runner,
        deliverer,
        SchedulerConfig {
            owner: owner.into(),
            ..SchedulerConfig::default()
        },
    )
}

fn create(home: &TempHome, schedule: &str, deliver: &str, now: DateTime<Utc>) -> Job {
    JobStore::new(home.home())
        .create(
            NewJob {
                prompt: "summarize the inbox".into(),
                schedule: schedule.into(),
                deliver: Some(deliver.into()),
                ..NewJob::default()
            },
            now,
            Tz::UTC,
        )
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn case_c39_two_schedulers_fire_a_due_job_once() {
    let home = TempHome::new().unwrap();
    let job = create(
        &home,
        "0 12 * * *",
        "telegram:4242",
        t("2026-06-23T11:00:00Z"),
    );
    assert_eq!(job.next_run_at, Some(t("2026-06-23T12:00:00Z")));
    let runner = FakeRunner::new("inbox: 3 new", RunStatus::Ok);
    let platform = Arc::new(FakePlatform::default());
    let a = scheduler(
        &home,
        t("2026-06-23T12:00:56Z"),
        runner.clone(),
        Some(platform.clone()),
        "A",
    );
    let b = scheduler(
        &home,
        t("2026-06-23T12:00:57Z"),
        runner.clone(),
        Some(platform.clone()),
        "B",
    );
    let cancel = CancellationToken::new();
    let (ra, rb) = tokio::join!(a.tick(&cancel), b.tick(&cancel));
    let total = ra.unwrap().runs.len() + rb.unwrap().runs.len();
    assert_eq!(total, 1, "executions recorded");
    assert_eq!(runner.runs.load(Ordering::SeqCst), 1, "executions");
    assert_eq!(platform.sent.lock().unwrap().len(), 1, "deliveries");
    let sent = platform.sent.lock().unwrap()[0].clone();
    assert_eq!(sent.chat_id.as_deref(), Some("4242"));
    assert_eq!(sent.text, "inbox: 3 new");
    // A third tick a second later finds nothing due either.
    let c = scheduler(&home, t("2026-06-23T12:00:58Z"), runner.clone(), None, "C");
    assert!(c.tick(&cancel).await.unwrap().runs.is_empty());
    let stored = JobStore::new(home.home()).get(&job.id).unwrap();
    assert_eq!(stored.next_run_at, Some(t("2026-06-24T12:00:00Z")));
    assert_eq!(stored.lease, None);
    assert_eq!(stored.last_status.as_deref(), Some("ok"));
}

#[tokio::test(start_paused = true)]
async fn downtime_across_slots_fires_once_then_follows_the_schedule() {
    let home = TempHome::new().unwrap();
    let job = create(&home, "every 1h", "local", t("2026-01-01T09:00:00Z"));
    assert_eq!(job.next_run_at, Some(t("2026-01-01T10:00:00Z")));
    let runner = FakeRunner::new("done", RunStatus::Ok);
    // Down from 09:30 to 12:30: slots 10:00, 11:00, 12:00 were missed.
    let s = scheduler(&home, t("2026-01-01T12:30:00Z"), runner.clone(), None, "A");
    let report = s.tick(&CancellationToken::new()).await.unwrap();
    assert_eq!(report.runs.len(), 1);
    assert_eq!(report.runs[0].due_at, Some(t("2026-01-01T10:00:00Z")));
    let stored = JobStore::new(home.home()).get(&job.id).unwrap();
    assert_eq!(stored.next_run_at, Some(t("2026-01-01T13:00:00Z")));

    // Cron jobs too: 3 hours down across two 0 */2 slots.
    let cron = create(&home, "0 */2 * * *", "local", t("2026-01-02T09:00:00Z"));
    assert_eq!(cron.next_run_at, Some(t("2026-01-02T10:00:00Z")));
    let s = scheduler(&home, t("2026-01-02T13:00:00Z"), runner.clone(), None, "A");
    let report = s.tick(&CancellationToken::new()).await.unwrap();
    assert_eq!(
        report.runs.len(),
        2,
        "the 1h job and the cron job, once each"
    );
    let stored = JobStore::new(home.home()).get(&cron.id).unwrap();
    assert_eq!(stored.next_run_at, Some(t("2026-01-02T14:00:00Z")));
}

#[tokio::test(start_paused = true)]
async fn case_c41_manual_run_keeps_the_schedule() {
    let home = TempHome::new().unwrap();
    let store = JobStore::new(home.home());
    let job = create(&home, "every 1d", "local", t("2026-03-03T07:00:00Z"));
    store
        .modify(&job.id, |j| {
            j.last_run_at = Some(t("2026-03-04T07:00:00Z"));
            j.next_run_at = Some(t("2026-03-05T07:00:00Z"));
        })
        .unwrap();
    let runner = FakeRunner::new("manual", RunStatus::Ok);
    let s = scheduler(&home, t("2026-03-04T13:00:00Z"), runner.clone(), None, "A");
    let rec = s.run_now(&job.id, &CancellationToken::new()).await.unwrap();
    assert!(rec.is_some());
    let after = store.get(&job.id).unwrap();
    assert_eq!(after.next_run_at, Some(t("2026-03-05T07:00:00Z")));
    assert_eq!(after.last_run_at, Some(t("2026-03-04T13:00:00Z")));
    // And the scheduled run then happens at 07:00, anchored.
    let s = scheduler(&home, t("2026-03-05T07:00:01Z"), runner.clone(), None, "A");
    s.tick(&CancellationToken::new()).await.unwrap();
    let after = store.get(&job.id).unwrap();
    assert_eq!(after.next_run_at, Some(t("2026-03-06T07:00:00Z")));
    assert_eq!(runner.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_run_is_recorded_and_the_next_run_still_happens() {
    let home = TempHome::new().unwrap();
    let job = create(&home, "every 30m", "local", t("2026-01-01T00:00:00Z"));
    let runner = FakeRunner::new("", RunStatus::Timeout);
    let s = scheduler(&home, t("2026-01-01T00:30:00Z"), runner.clone(), None, "A");
    s.tick(&CancellationToken::new()).await.unwrap();
    let store = JobStore::new(home.home());
    let after = store.get(&job.id).unwrap();
    assert_eq!(after.last_status.as_deref(), Some("timeout"));
    assert_eq!(after.last_error.as_deref(), Some("it went wrong"));
    assert_eq!(after.next_run_at, Some(t("2026-01-01T01:00:00Z")));
    let s = scheduler(&home, t("2026-01-01T01:00:00Z"), runner.clone(), None, "A");
    assert_eq!(
        s.tick(&CancellationToken::new()).await.unwrap().runs.len(),
        1
    );
    let runs = s.history().list(Some(&job.id), 10).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.status == "timeout"));
}

#[tokio::test(start_paused = true)]
async fn silent_reply_delivers_nothing_but_is_recorded() {
    let home = TempHome::new().unwrap();
    let job = create(&home, "5m", "telegram:1", t("2026-01-01T00:00:00Z"));
    let runner = FakeRunner::new("[SILENT]", RunStatus::Ok);
    let platform = Arc::new(FakePlatform::default());
    let s = scheduler(
        &home,
        t("2026-01-01T00:05:00Z"),
        runner,
        Some(platform.clone()),
        "A",
    );
    let report = s.tick(&CancellationToken::new()).await.unwrap();
    assert_eq!(report.runs.len(), 1);
    assert_eq!(report.runs[0].status, "silent");
    assert!(report.runs[0].deliveries.is_empty());
    assert!(platform.sent.lock().unwrap().is_empty());
    // A one-shot has `repeat.times` 1: after its run it is removed, as Python removes it.
    assert!(
        JobStore::new(home.home()).get(&job.id).is_err(),
        "a one-shot runs once"
    );
    let out = report.runs[0].output_path.clone().unwrap();
    assert!(home.path().join(out).is_file());
}

#[tokio::test(start_paused = true)]
async fn platform_targets_without_a_gateway_are_recorded_as_not_deliverable() {
    let home = TempHome::new().unwrap();
    let job = create(
        &home,
        "every 5m",
        "local,discord:9:77",
        t("2026-01-01T00:00:00Z"),
    );
    let runner = FakeRunner::new("hello", RunStatus::Ok);
    let s = scheduler(&home, t("2026-01-01T00:05:00Z"), runner, None, "A");
    let report = s.tick(&CancellationToken::new()).await.unwrap();
    let d = &report.runs[0].deliveries;
    assert_eq!(d.len(), 2);
    assert!(
        d[0].ok && d[0].detail.starts_with("saved to cron/output/"),
        "{d:?}"
    );
    assert!(!d[1].ok);
    assert_eq!(d[1].target, "discord:9:77");
    assert_eq!(d[1].detail, NO_GATEWAY);
    let after = JobStore::new(home.home()).get(&job.id).unwrap();
    assert_eq!(
        after.last_delivery_error.as_deref(),
        Some(format!("discord:9:77: {NO_GATEWAY}").as_str())
    );
    let md = std::fs::read_to_string(
        home.path()
            .join(report.runs[0].output_path.clone().unwrap()),
    )
    .unwrap();
    assert!(md.contains("## Response\n\nhello"), "{md}");
}
