//! End-to-end tests of `hermes cron …` on a temporary HERMES_HOME against the mock provider:
//! create → tick fires once → Markdown output; `[SILENT]` recorded but not delivered; manual
//! runs keep the schedule (C41); run history and delivery failures in `cron runs` and
//! `cron status`; the `cronjob` tool in a chat session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

use common::{Env, hermes, stderr, stdout};
use hermes_testkit::MockResponse;
use serde_json::Value;

impl Env {
    fn jobs(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.home.path().join("cron/jobs.json")).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        v["jobs"].as_array().unwrap().clone()
    }

    /// Makes job `id` due now by editing jobs.json (as another process could).
    fn make_due(&self, id: &str) {
        let path = self.home.path().join("cron/jobs.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for j in v["jobs"].as_array_mut().unwrap() {
            if j["id"] == id {
                let past = chrono::Utc::now() - chrono::Duration::seconds(5);
                j["next_run_at"] = Value::String(past.to_rfc3339());
            }
        }
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }

    /// The run history in `state.db`, newest first.
    fn runs(&self) -> Vec<Value> {
        hermes_store::SessionStore::open(self.home.home().state_db())
            .unwrap()
            .cron_runs(None, 100)
            .unwrap()
            .iter()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect()
    }
}

fn created_id(out: &Output) -> String {
    stdout(out)
        .strip_prefix("created job ")
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("unexpected create output: {}", stdout(out)))
        .to_string()
}

#[tokio::test]
async fn tick_fires_a_due_job_once_and_saves_markdown() {
    let env = Env::new().await;
    let soon = (chrono::Utc::now() - chrono::Duration::seconds(20)).to_rfc3339();
    let id = created_id(
        &env.run_ok(&[
            "cron",
            "create",
            &soon,
            "Report the build status",
            "--name",
            "build",
        ])
        .await,
    );
    env.mock.push(MockResponse::text("The build is green."));

    let tick = env.run_ok(&["cron", "tick"]).await;
    assert!(stdout(&tick).contains(&id), "{}", stdout(&tick));
    assert!(stdout(&tick).contains(": ok"), "{}", stdout(&tick));
    assert_eq!(env.mock.requests().len(), 1);
    // The cron preamble is in the request, the job prompt is the user message.
    let body = env.mock.requests()[0].to_string();
    assert!(body.contains("[SILENT]"), "preamble missing: {body}");
    assert!(body.contains("Report the build status"));
    hermes_testkit::assert_request_invariants(&env.mock.requests());

    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[0]["deliveries"].as_array().unwrap().len(), 1);
    let rel = runs[0]["output_path"].as_str().unwrap();
    assert!(rel.starts_with(&format!("cron/output/{id}/")), "{rel}");
    let md = std::fs::read_to_string(env.home.path().join(rel)).unwrap();
    assert!(md.contains("# build"), "{md}");
    assert!(md.contains("The build is green."), "{md}");
    // A one-shot's repeat limit is 1: after its run it is removed, as Python removes it;
    // its run stays in the history.
    assert!(env.jobs().is_empty(), "{:?}", env.jobs());

    // A second tick finds nothing due and asks the model nothing.
    let again = env.run_ok(&["cron", "tick"]).await;
    assert!(stderr(&again).contains("no jobs due"), "{}", stderr(&again));
    assert_eq!(env.mock.requests().len(), 1);
    assert_eq!(env.runs().len(), 1);

    let listed = env.run_ok(&["cron", "runs", "build"]).await;
    assert!(stdout(&listed).contains("ok"), "{}", stdout(&listed));
}

#[tokio::test]
async fn silent_reply_is_recorded_but_not_delivered_and_the_schedule_advances() {
    let env = Env::new().await;
    let id = created_id(
        &env.run_ok(&["cron", "create", "every 1h", "Watch the disk"])
            .await,
    );
    env.make_due(&id);
    env.mock.push(MockResponse::text("[SILENT]"));

    env.run_ok(&["cron", "tick"]).await;
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "silent");
    assert_eq!(runs[0]["deliveries"].as_array().unwrap().len(), 0);
    let job = &env.jobs()[0];
    assert_eq!(job["last_status"], "silent");
    let next: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(job["next_run_at"].clone()).unwrap();
    assert!(next > chrono::Utc::now() + chrono::Duration::minutes(50));

    env.run_ok(&["cron", "tick"]).await;
    assert_eq!(
        env.mock.requests().len(),
        1,
        "the second tick must not fire"
    );
    assert_eq!(env.runs().len(), 1);
}

#[tokio::test]
async fn runs_and_status_read_the_history_in_state_db_and_show_delivery_failures() {
    let env = Env::new().await;
    let id = created_id(
        &env.run_ok(&[
            "cron",
            "create",
            "every 1h",
            "Post the build status",
            "--name",
            "build",
            "--deliver",
            "local,telegram:5",
        ])
        .await,
    );
    let status = env.run_ok(&["cron", "status"]).await;
    assert!(
        stdout(&status).contains("scheduler: none seen"),
        "{}",
        stdout(&status)
    );
    env.make_due(&id);
    env.mock.push(MockResponse::text("All green."));
    env.run_ok(&["cron", "tick"]).await;
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[0]["deliveries"][1]["target"], "telegram:5");
    assert_eq!(runs[0]["deliveries"][1]["ok"], false);
    assert!(
        !env.home.path().join("cron/runs.jsonl").exists(),
        "runs go to state.db"
    );

    let status = stdout(&env.run_ok(&["cron", "status"]).await);
    assert!(status.contains("problems in the latest runs:"), "{status}");
    assert!(status.contains(&format!("{id} \"build\"")), "{status}");
    assert!(
        status.contains(
            "not delivered to telegram:5: not deliverable: gateway not running/configured"
        ),
        "{status}"
    );
    let listed = stdout(&env.run_ok(&["cron", "runs", "build"]).await);
    assert!(listed.contains("ok"), "{listed}");
    assert!(listed.contains("not delivered to telegram:5"), "{listed}");
    // A removed job's runs stay listed by its id.
    env.run_ok(&["cron", "remove", &id]).await;
    let listed = stdout(&env.run_ok(&["cron", "runs", &id]).await);
    assert!(listed.contains("build"), "{listed}");
}

#[tokio::test]
async fn manual_run_keeps_next_run_at_c41_and_management_commands_work() {
    let env = Env::new().await;
    let id = created_id(
        &env.run_ok(&["cron", "create", "every 1d", "Daily digest"])
            .await,
    );
    let before = env.jobs()[0]["next_run_at"].clone();
    env.mock.push(MockResponse::text("Digest: nothing new."));

    let run = env.run_ok(&["cron", "run", &id]).await;
    assert!(stdout(&run).contains(": ok"), "{}", stdout(&run));
    // Issue 20 item 10: the run prints the job's answer, not only its status.
    assert!(
        stdout(&run)
            .lines()
            .any(|l| l.trim() == "Digest: nothing new."),
        "{}",
        stdout(&run)
    );
    let job = &env.jobs()[0];
    assert_eq!(
        job["next_run_at"], before,
        "a manual run must not move the schedule"
    );
    assert!(job["last_run_at"].is_string());
    assert_eq!(env.runs()[0]["due_at"], Value::Null);

    let paused = env.run_ok(&["cron", "pause", &id]).await;
    assert!(stdout(&paused).contains("paused"));
    let list = env.run_ok(&["cron", "list"]).await;
    assert!(stdout(&list).contains("paused"), "{}", stdout(&list));
    env.run_ok(&["cron", "resume", &id]).await;
    env.run_ok(&[
        "cron",
        "edit",
        &id,
        "--name",
        "digest",
        "--schedule",
        "0 7 * * *",
    ])
    .await;
    let job = &env.jobs()[0];
    assert_eq!(job["name"], "digest");
    assert_eq!(job["schedule_text"], "0 7 * * *");
    let status = env.run_ok(&["cron", "status"]).await;
    assert!(
        stdout(&status).contains("1 jobs: 1 scheduled"),
        "{}",
        stdout(&status)
    );
    env.run_ok(&["cron", "remove", "digest"]).await;
    assert!(env.jobs().is_empty());

    let missing = hermes(env.home.path(), env.cwd.path(), &["cron", "pause", "nope"]).await;
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("no cron job `nope`"),
        "{}",
        stderr(&missing)
    );
    let bad = hermes(
        env.home.path(),
        env.cwd.path(),
        &["cron", "create", "every banana", "x"],
    )
    .await;
    assert!(!bad.status.success());
}

#[tokio::test]
async fn chat_session_can_schedule_with_the_cronjob_tool() {
    let env = Env::new().await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "cronjob",
        r#"{"action":"create","schedule":"every 2h","prompt":"Check the weather in Paris","name":"weather"}"#,
    )]));
    env.mock.push(MockResponse::text("Scheduled."));
    let out = env
        .run_ok(&["chat", "-q", "check the weather every two hours"])
        .await;
    assert_eq!(stdout(&out).trim(), "Scheduled.");
    let tools: Vec<String> = env.mock.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tools.contains(&"cronjob".to_string()), "{tools:?}");
    let jobs = env.jobs();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["name"], "weather");
    assert_eq!(jobs[0]["schedule"]["kind"], "interval");

    // The scheduled run itself never offers `cronjob`.
    env.make_due(jobs[0]["id"].as_str().unwrap());
    env.mock.push(MockResponse::text("Sunny."));
    env.run_ok(&["cron", "tick"]).await;
    let run_tools = env.mock.requests()[2]["tools"].to_string();
    assert!(!run_tools.contains("cronjob"), "{run_tools}");
    assert!(run_tools.contains("terminal"), "{run_tools}");
}

/// `hermes cron create` writes the record Python Hermes reads: `schedule_display`, `state`,
/// the per-job provider/model/base URL, `workdir` and a script name under `scripts/`.
#[tokio::test]
async fn create_writes_python_fields() {
    let env = Env::new().await;
    let wd = tempfile::tempdir().unwrap();
    let wd_real = std::fs::canonicalize(wd.path()).unwrap();
    env.run_ok(&[
        "cron",
        "create",
        "every 2h",
        "check the build",
        "--workdir",
        wd.path().to_str().unwrap(),
        "--provider",
        "openrouter",
        "--base-url",
        "https://openrouter.ai/api/v1/",
        "-m",
        "some/model",
        "--script",
        "collect.sh",
    ])
    .await;
    let job = &env.jobs()[0];
    assert_eq!(job["schedule_display"], "every 120m");
    assert_eq!(job["schedule"]["display"], "every 120m");
    assert_eq!(job["state"], "scheduled");
    assert_eq!(job["provider"], "openrouter");
    assert_eq!(job["base_url"], "https://openrouter.ai/api/v1");
    assert_eq!(job["model"], "some/model");
    assert_eq!(job["script"], "collect.sh");
    assert_eq!(job["workdir"], wd_real.to_str().unwrap());

    let bad = hermes(
        env.home.path(),
        env.cwd.path(),
        &[
            "cron",
            "create",
            "every 1h",
            "x",
            "--workdir",
            "relative/dir",
        ],
    )
    .await;
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("not an absolute path"),
        "{}",
        stderr(&bad)
    );
    assert_eq!(env.jobs().len(), 1);
}

/// Python Hermes' edit flags (the switching pass of issue 17): `--add-skill`,
/// `--remove-skill`, `--clear-skills`, `--no-agent` and `--agent`.
#[tokio::test]
async fn edit_takes_python_hermes_skill_and_agent_flags() {
    let env = Env::new().await;
    let id = created_id(&env.run_ok(&["cron", "create", "every 1d", "digest"]).await);
    env.run_ok(&["cron", "edit", &id, "--add-skill", "a", "--add-skill", "b"])
        .await;
    assert_eq!(env.jobs()[0]["skills"], serde_json::json!(["a", "b"]));
    env.run_ok(&[
        "cron",
        "edit",
        &id,
        "--remove-skill",
        "a",
        "--add-skill",
        "c",
    ])
    .await;
    assert_eq!(env.jobs()[0]["skills"], serde_json::json!(["b", "c"]));
    env.run_ok(&["cron", "edit", &id, "--no-agent", "--script", "x.sh"])
        .await;
    assert_eq!(env.jobs()[0]["no_agent"], true);
    env.run_ok(&["cron", "edit", &id, "--agent", "--clear-skills"])
        .await;
    let job = &env.jobs()[0];
    assert_eq!(job["no_agent"], false);
    assert!(
        job["skills"].as_array().is_none_or(|a| a.is_empty()),
        "{job}"
    );
    let both = hermes(
        env.home.path(),
        env.cwd.path(),
        &["cron", "edit", &id, "--agent", "--no-agent"],
    )
    .await;
    assert!(!both.status.success());
}
