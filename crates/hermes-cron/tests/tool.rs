//! The `cronjob` tool through the `Tool` interface: every action, the errors the model sees,
//! and `run` keeping the schedule (C41). Runs go through a scheduler with a fake runner.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use hermes_cron::{
    CRONJOB_TOOLSET, CronSettings, CronjobTool, Deliverer, Job, JobRunner, JobStore, RunOutput,
    RunStatus, Scheduler, SchedulerConfig, TokioClock, Tz,
};
use hermes_testkit::TempHome;
use hermes_tools::{Parallelism, Tool, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct CountingRunner(AtomicUsize);

#[async_trait::async_trait]
impl JobRunner for CountingRunner {
    async fn run(&self, job: &Job, _cancel: CancellationToken) -> RunOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        RunOutput {
            status: RunStatus::Ok,
            text: format!("done: {}", job.prompt),
            error: None,
            session_id: None,
        }
    }
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

struct Fixture {
    home: TempHome,
    tool: CronjobTool,
    runner: Arc<CountingRunner>,
    ctx: ToolContext,
}

fn fixture(with_scheduler: bool) -> Fixture {
    let home = TempHome::new().unwrap();
    let clock = Arc::new(TokioClock::starting_at(t("2026-03-04T13:00:00Z")));
    let runner = Arc::new(CountingRunner::default());
    let scheduler = Scheduler::new(
        JobStore::new(home.home()),
        Arc::new(hermes_store::SessionStore::open(home.home().state_db()).unwrap()),
        clock.clone(),
        runner.clone(),
        Deliverer::new(None),
        SchedulerConfig::default(),
    );
    let tool = CronjobTool::new(
        JobStore::new(home.home()),
        clock,
        Tz::UTC,
        with_scheduler.then_some(scheduler),
        None,
    );
    let ctx = ToolContext::for_tests(home.path(), home.home().clone());
    Fixture {
        home,
        tool,
        runner,
        ctx,
    }
}

impl Fixture {
    async fn call(&self, args: Value) -> (bool, Value) {
        let out = self.tool.call(args, &self.ctx).await;
        let v = serde_json::from_str(&out.content).unwrap_or(Value::String(out.content));
        (out.is_error, v)
    }
}

#[tokio::test(start_paused = true)]
async fn every_action_through_the_tool_interface() {
    let f = fixture(true);
    assert_eq!(f.tool.spec().name, CRONJOB_TOOLSET);
    assert_eq!(f.tool.toolset(), "cronjob");
    assert_eq!(f.tool.parallelism(), Parallelism::Never);
    let actions = f.tool.spec().parameters["properties"]["action"]["enum"].clone();
    assert_eq!(
        actions,
        json!([
            "create", "list", "update", "pause", "resume", "remove", "run"
        ])
    );

    let (err, v) = f
        .call(
            json!({"action": "create", "schedule": "every 1d", "prompt": "daily digest",
                     "name": "digest", "skills": ["notes"]}),
        )
        .await;
    assert!(!err, "{v}");
    let id = v["created"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["created"]["next_run_at"], "2026-03-05T13:00:00+00:00");
    assert_eq!(v["created"]["skills"], json!(["notes"]));

    let (_, v) = f.call(json!({"action": "list"})).await;
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(v["jobs"][0]["state"], "scheduled");

    let (err, v) = f
        .call(
            json!({"action": "update", "job_id": "digest", "schedule": "0 7 * * *",
                     "deliver": "local"}),
        )
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["updated"]["next_run_at"], "2026-03-05T07:00:00+00:00");

    let (_, v) = f.call(json!({"action": "pause", "job_id": id})).await;
    assert_eq!(v["paused"]["state"], "paused");
    let (_, v) = f.call(json!({"action": "resume", "job_id": id})).await;
    assert_eq!(v["resumed"]["state"], "scheduled");

    // `run` runs it now and keeps the schedule (C41).
    let (err, v) = f.call(json!({"action": "run", "job_id": id})).await;
    assert!(!err, "{v}");
    assert_eq!(v["ran"]["status"], "ok");
    assert!(
        v["ran"]["output"]
            .as_str()
            .unwrap()
            .contains("done: daily digest")
    );
    assert_eq!(f.runner.0.load(Ordering::SeqCst), 1);
    let job = JobStore::new(f.home.home()).get(&id).unwrap();
    assert_eq!(job.next_run_at, Some(t("2026-03-05T07:00:00Z")));
    assert_eq!(job.last_run_at, Some(t("2026-03-04T13:00:00Z")));

    let (_, v) = f.call(json!({"action": "remove", "job_id": id})).await;
    assert_eq!(v["removed"]["name"], "digest");
    assert!(JobStore::new(f.home.home()).list().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn mistakes_come_back_as_error_results() {
    let f = fixture(false);
    for (args, needle) in [
        (json!({}), "`action` is required"),
        (json!({"action": "frobnicate"}), "unknown action"),
        (json!({"action": "pause"}), "needs `job_id`"),
        (
            json!({"action": "create", "prompt": "x"}),
            "needs `schedule`",
        ),
        (
            json!({"action": "create", "schedule": "every banana", "prompt": "x"}),
            "banana",
        ),
        (
            json!({"action": "create", "schedule": "every 1h", "prompt": "x", "deliver": "a:b:c:d"}),
            "delivery target",
        ),
        (json!({"action": "remove", "job_id": "nope"}), "no cron job"),
        (
            json!({"action": "update", "job_id": "nope"}),
            "at least one field",
        ),
    ] {
        let (err, v) = f.call(args.clone()).await;
        assert!(err, "{args} should fail");
        assert!(v.to_string().contains(needle), "{args}: {v}");
    }
    let (_, v) = f
        .call(json!({"action": "create", "schedule": "every 1h", "prompt": "x"}))
        .await;
    let id = v["created"]["id"].as_str().unwrap();
    let (err, v) = f.call(json!({"action": "run", "job_id": id})).await;
    assert!(err);
    assert!(v.to_string().contains("not available"), "{v}");
    assert_eq!(f.runner.0.load(Ordering::SeqCst), 0);
}

#[test]
fn cron_settings_read_parallelism_and_inactivity_timeout() {
    let yaml: yaml_serde::Value =
        yaml_serde::from_str("max_parallel_jobs: 3\ninactivity_timeout: 90\n").unwrap();
    let s = CronSettings::from_yaml(Some(&yaml));
    assert_eq!(s.max_parallel_jobs, 3);
    assert_eq!(s.inactivity_timeout, std::time::Duration::from_secs(90));
    let d = CronSettings::from_yaml(None);
    assert_eq!(d.max_parallel_jobs, 1);
    assert_eq!(d.inactivity_timeout, hermes_cron::INACTIVITY_TIMEOUT);
}

#[test]
fn cron_enabled_defaults_to_true_and_reads_booleans_and_words() {
    let read = |text: &str| {
        let yaml: yaml_serde::Value = yaml_serde::from_str(text).unwrap();
        CronSettings::scheduler_enabled(Some(&yaml))
    };
    assert_eq!(CronSettings::scheduler_enabled(None), Ok(true));
    assert_eq!(read("max_parallel_jobs: 2\n"), Ok(true));
    assert_eq!(read("enabled: false\n"), Ok(false));
    assert_eq!(read("enabled: true\n"), Ok(true));
    assert_eq!(read("enabled: off\n"), Ok(false));
    assert_eq!(read("enabled: 'yes'\n"), Ok(true));
    assert_eq!(read("enabled: 0\n"), Ok(false));
    let e = read("enabled: sometimes\n").unwrap_err();
    assert_eq!(e, "cron.enabled: expected true or false, got sometimes");
}

/// A job's runs are sandboxed with its `workdir` as their workspace, so the agent must not
/// choose a folder wider than its own sandbox: a job at `/` or `~` would let the next run
/// write everything the session may not (issue 18). Jobs it creates or re-prompts work
/// where the session may write; without a folder they get the session's, not the
/// scheduler's. With the sandbox off, the folder is taken as given.
#[tokio::test(start_paused = true)]
async fn a_job_cannot_work_outside_the_sessions_sandbox() {
    let mut f = fixture(false);
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    std::fs::create_dir(ws_path.join("sub")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    f.ctx.cwd = ws_path.clone();
    f.ctx.sandbox = Arc::new(hermes_tools::SandboxSettings {
        temp_dir: ws_path.join("sub"),
        ..hermes_tools::SandboxSettings::default()
    });
    for wide in ["/", outside.path().to_str().unwrap()] {
        let (err, v) = f
            .call(
                json!({"action": "create", "schedule": "every 1h", "prompt": "p",
                         "name": "wide", "workdir": wide}),
            )
            .await;
        assert!(err, "{wide}: {v}");
        assert!(
            v.as_str()
                .unwrap()
                .contains("outside this session's sandbox"),
            "{v}"
        );
    }
    assert!(JobStore::new(f.home.home()).list().unwrap().is_empty());

    let (err, v) = f
        .call(json!({"action": "create", "schedule": "every 1h", "prompt": "p", "name": "here"}))
        .await;
    assert!(!err, "{v}");
    let store = JobStore::new(f.home.home());
    assert_eq!(
        store.get("here").unwrap().workdir.as_deref(),
        Some(ws_path.to_str().unwrap())
    );
    let (err, v) = f
        .call(
            json!({"action": "create", "schedule": "every 1h", "prompt": "p",
                     "name": "sub", "workdir": "sub"}),
        )
        .await;
    assert!(!err, "{v}");
    assert_eq!(
        store.get("sub").unwrap().workdir.as_deref(),
        Some(ws_path.join("sub").to_str().unwrap())
    );
    let (err, v) = f
        .call(json!({"action": "update", "job_id": "here", "workdir": "/"}))
        .await;
    assert!(err, "{v}");

    // A job the user placed elsewhere cannot be re-prompted from this session; its schedule
    // can still change.
    store
        .modify("sub", |j| {
            j.workdir = Some(outside.path().display().to_string())
        })
        .unwrap();
    let (err, v) = f
        .call(json!({"action": "update", "job_id": "sub", "prompt": "write everywhere"}))
        .await;
    assert!(err, "{v}");
    assert_eq!(store.get("sub").unwrap().prompt, "p");
    let (err, v) = f
        .call(json!({"action": "update", "job_id": "sub", "schedule": "every 2h"}))
        .await;
    assert!(!err, "{v}");

    f.ctx.sandbox = Arc::new(hermes_tools::SandboxSettings::off());
    let (err, v) = f
        .call(
            json!({"action": "create", "schedule": "every 1h", "prompt": "p",
                     "name": "off", "workdir": "/"}),
        )
        .await;
    assert!(!err, "{v}");
    assert_eq!(store.get("off").unwrap().workdir.as_deref(), Some("/"));
}

/// A job the agent makes gets at most its session's toolsets (the attack pass of issue 18:
/// a `-t file,cronjob` session made jobs whose runs had a terminal and the web).
#[tokio::test(start_paused = true)]
async fn a_job_gets_no_toolset_its_session_lacks() {
    let mut f = fixture(false);
    f.ctx.session_toolsets = Some(Arc::new(vec!["cronjob".into(), "file".into()]));
    let create = |extra: Value| {
        let mut args = json!({"action": "create", "prompt": "check", "schedule": "every 1h"});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    let (err, v) = f
        .call(create(json!({"enabled_toolsets": ["terminal", "web"]})))
        .await;
    assert!(err, "{v}");
    assert!(
        v.as_str()
            .unwrap()
            .contains("`terminal` is not one of this session's"),
        "{v}"
    );

    let (err, v) = f.call(create(json!({}))).await;
    assert!(!err, "{v}");
    let id = v["created"]["id"].as_str().unwrap().to_string();
    let store = JobStore::new(f.home.home());
    assert_eq!(
        store.get(&id).unwrap().enabled_toolsets,
        Some(vec!["file".to_string()])
    );

    // A job the user made with every cron toolset, re-prompted from this session.
    let user_made = store
        .create(
            hermes_cron::NewJob {
                prompt: "user job".into(),
                schedule: "every 2h".into(),
                ..hermes_cron::NewJob::default()
            },
            t("2026-03-04T13:00:00Z"),
            Tz::UTC,
        )
        .unwrap();
    assert_eq!(user_made.enabled_toolsets, None);
    let (err, v) = f
        .call(json!({"action": "update", "job_id": user_made.id, "prompt": "run rm"}))
        .await;
    assert!(!err, "{v}");
    assert_eq!(
        store.get(&user_made.id).unwrap().enabled_toolsets,
        Some(vec!["file".to_string()])
    );
    let (err, _) = f
        .call(json!({"action": "update", "job_id": id, "enabled_toolsets": ["terminal"]}))
        .await;
    assert!(err);

    f.ctx.session_toolsets = Some(Arc::new(vec!["cronjob".into()]));
    let (err, v) = f.call(create(json!({}))).await;
    assert!(
        err && v
            .as_str()
            .unwrap()
            .contains("none of this session's toolsets"),
        "{v}"
    );
}

/// URL deliveries the agent asks for are POSTs hermes makes outside the sandbox: refused
/// to loopback, private and metadata addresses, and when the session has no network.
#[tokio::test(start_paused = true)]
async fn delivery_urls_follow_the_sessions_network_rules() {
    let mut f = fixture(false);
    for url in [
        "http://127.0.0.1:18190/exfil",
        "http://169.254.169.254/latest",
        "http://[::1]:80/x",
        "http://10.1.2.3/hook",
        "http://localhost:9/x",
    ] {
        let (err, v) = f
            .call(
                json!({"action": "create", "prompt": "p", "schedule": "every 1h", "deliver": url}),
            )
            .await;
        assert!(err, "{url}: {v}");
        assert!(v.as_str().unwrap().contains("not allowed"), "{url}: {v}");
    }
    let mut settings = (*f.ctx.sandbox).clone();
    settings.network = false;
    f.ctx.sandbox = Arc::new(settings);
    let (err, v) = f
        .call(json!({"action": "create", "prompt": "p", "schedule": "every 1h", "deliver": "https://93.184.216.34/hook"}))
        .await;
    assert!(err && v.as_str().unwrap().contains("no network"), "{v}");
    assert!(JobStore::new(f.home.home()).list().unwrap().is_empty());

    // The user's setting lets private addresses through, as for web_extract.
    let f2 = fixture(false);
    let tool = f2.tool.clone().allow_private_urls(true);
    let out = tool
        .call(
            json!({"action": "create", "prompt": "p", "schedule": "every 1h", "deliver": "http://127.0.0.1:18190/hook"}),
            &f2.ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
}
