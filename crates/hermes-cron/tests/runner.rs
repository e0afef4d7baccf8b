//! The headless [`AgentRunner`] end to end: a scheduler over a temp home, the real
//! OpenAI-compatible client against the mock provider, the session store. Covers a reply
//! delivered locally, `[SILENT]`, the inactivity timeout with a hanging stream, and the run's
//! session in `state.db` with source `cron`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use hermes_cron::{
    AgentRunner, ClientFactory, Deliverer, HeadlessOptions, JobStore, NewJob, RunRecord, Scheduler,
    SchedulerConfig, SystemClock, Tz,
};
use hermes_llm::{ModelClient, OpenAiChatClient, OpenAiChatConfig};
use hermes_store::SessionStore;
use hermes_testkit::{MockProvider, MockResponse, TempHome};
use tokio_util::sync::CancellationToken;

const PROMPT: &str = "You are the stored test prompt.";

struct Env {
    mock: MockProvider,
    home: TempHome,
    _cwd: tempfile::TempDir,
    store: Arc<SessionStore>,
    scheduler: Scheduler,
}

async fn env(inactivity: Duration) -> Env {
    let mock = MockProvider::start().await;
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = Arc::new(SessionStore::open(home.home().state_db()).unwrap());
    let base = mock.base_url();
    let clients: ClientFactory = Arc::new(move |choice: &hermes_cron::ModelChoice| {
        let c = OpenAiChatClient::new(OpenAiChatConfig::new(
            choice.base_url.clone().unwrap_or_else(|| base.clone()),
            choice.model.as_deref().unwrap_or("mock-model"),
        ))
        .map_err(|e| e.to_string())?;
        Ok(Arc::new(c) as Arc<dyn ModelClient>)
    });
    let prompt = |_m: &str, _p: &str, _t: &[String]| PROMPT.to_string();
    let runner = AgentRunner::new(HeadlessOptions {
        home: home.home().clone(),
        cwd: cwd.path().to_path_buf(),
        store: store.clone(),
        prompt: Arc::new(prompt),
        clients,
        max_turns: 5,
        api_max_retries: 0,
        terminal_timeout_s: 30,
        inactivity,
        // The web tools as the CLI builds them from an empty config: `web_search` has no
        // backend and stays hidden.
        extra_tools: hermes_tools::web::tools(&Default::default(), &Default::default())
            .unwrap()
            .into_iter()
            .chain([Arc::new(hermes_agent::DelegateTool::new(
                hermes_agent::DelegationSettings::default(),
            )) as Arc<dyn hermes_tools::Tool>])
            .collect(),
        sandbox: Arc::new(hermes_tools::SandboxSettings::off()),
        timezone: hermes_cron::Tz::UTC,
    });
    let scheduler = Scheduler::new(
        JobStore::new(home.home()),
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(runner),
        Deliverer::new(None),
        SchedulerConfig::default(),
    );
    Env {
        mock,
        home,
        _cwd: cwd,
        store,
        scheduler,
    }
}

impl Env {
    /// A job due now (a one-shot 10 s in the past, inside the 2-minute grace).
    /// A recurring job that is due now (a one-shot would be removed after its run, and
    /// these tests look at the job's last status).
    fn due_job(&self, prompt: &str, model: Option<&str>) -> String {
        let store = JobStore::new(self.home.home());
        let id = store
            .create(
                NewJob {
                    name: Some("digest".into()),
                    prompt: prompt.into(),
                    schedule: "every 1h".into(),
                    model: model.map(str::to_string),
                    ..NewJob::default()
                },
                Utc::now(),
                Tz::UTC,
            )
            .unwrap()
            .id;
        store
            .modify(&id, |j| {
                j.next_run_at = Some(Utc::now() - chrono::Duration::seconds(10));
            })
            .unwrap();
        id
    }

    async fn tick_one(&self) -> RunRecord {
        let report = tokio::time::timeout(
            Duration::from_secs(60),
            self.scheduler.tick(&CancellationToken::new()),
        )
        .await
        .expect("the tick hung")
        .unwrap();
        assert_eq!(report.runs.len(), 1);
        report.runs.into_iter().next().unwrap()
    }
}

#[tokio::test]
async fn reply_is_delivered_locally_and_the_session_is_stored_with_source_cron() {
    let env = env(Duration::from_secs(600)).await;
    let id = env.due_job("Summarize today's notes", Some("job-model"));
    env.mock.push(MockResponse::text("Three notes, all done."));

    let rec = env.tick_one().await;
    assert_eq!(rec.job_id, id);
    assert_eq!(rec.status, "ok");
    assert_eq!(rec.deliveries.len(), 1);
    assert!(rec.deliveries[0].ok, "{:?}", rec.deliveries);
    assert_eq!(rec.deliveries[0].target, "local");
    let md = std::fs::read_to_string(env.home.path().join(rec.output_path.unwrap())).unwrap();
    assert!(md.contains("Three notes, all done."), "{md}");
    assert!(md.contains("Summarize today's notes"), "{md}");

    // The request: the job's model, stored prompt + cron preamble, the job prompt as the
    // user message, and only file, terminal and web tools.
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req["model"], "job-model");
    let system = req["messages"][0]["content"].to_string();
    assert!(system.contains(PROMPT), "{system}");
    assert!(system.contains("[SILENT]"), "{system}");
    let tools: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"terminal") && tools.contains(&"read_file"));
    assert!(tools.contains(&"web_extract"), "{tools:?}");
    assert!(!tools.contains(&"web_search"), "no backend: {tools:?}");
    for banned in ["cronjob", "clarify", "memory", "send_message"] {
        assert!(!tools.contains(&banned), "{banned} offered: {tools:?}");
    }
    hermes_testkit::assert_request_invariants(&requests);

    let session = env
        .store
        .get_session(rec.session_id.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(session.source, "cron");
    // Python Hermes' naming: `cron_<job>_<YYYYmmdd_HHMMSS>`, titled `<name> · Mon DD HH:MM`,
    // ended `cron_complete`.
    let job = &JobStore::new(env.home.home()).list().unwrap()[0];
    let stamp = session
        .id
        .strip_prefix(&format!("cron_{}_", job.id))
        .unwrap();
    assert!(
        chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%d_%H%M%S").is_ok(),
        "{}",
        session.id
    );
    let title = session.title.as_deref().unwrap();
    let (name, when) = title.split_once(" · ").unwrap();
    assert_eq!(name, job.name);
    assert!(
        chrono::NaiveTime::parse_from_str(&when[7..], "%H:%M").is_ok(),
        "{title}"
    );
    assert_eq!(session.end_reason.as_deref(), Some("cron_complete"));
    assert!(session.message_count >= 2);
}

#[tokio::test]
async fn silent_reply_delivers_nothing() {
    let env = env(Duration::from_secs(600)).await;
    env.due_job("Tell me if the disk is full", None);
    env.mock.push(MockResponse::text("[SILENT]"));
    let rec = env.tick_one().await;
    assert_eq!(rec.status, "silent");
    assert!(rec.deliveries.is_empty());
    let job = &JobStore::new(env.home.home()).list().unwrap()[0];
    assert_eq!(job.last_status.as_deref(), Some("silent"));
}

#[tokio::test]
async fn a_hanging_stream_hits_the_inactivity_timeout() {
    let env = env(Duration::from_secs(1)).await;
    env.due_job("Check the backups", None);
    // One delta, then the stream stays open without another byte.
    let first = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\
                 \"model\":\"mock-model\",\"choices\":[{\"index\":0,\"delta\":\
                 {\"role\":\"assistant\",\"content\":\"Checking\"},\"finish_reason\":null}]}\n\n";
    env.mock.push(
        MockResponse::from_bytes(
            200,
            vec![("content-type".into(), "text/event-stream".into())],
            first,
        )
        .hang(),
    );
    let rec = env.tick_one().await;
    assert_eq!(rec.status, "timeout", "{:?}", rec.error);
    assert!(
        rec.error.as_deref().unwrap().contains("no activity"),
        "{:?}",
        rec.error
    );
    let session = env
        .store
        .get_session(rec.session_id.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(session.end_reason.as_deref(), Some("cron_complete"));
    let job = &JobStore::new(env.home.home()).list().unwrap()[0];
    assert_eq!(job.last_status.as_deref(), Some("timeout"));
    assert!(job.lease.is_none(), "the lease is released after a timeout");
}

#[tokio::test]
async fn a_script_only_job_needs_no_model() {
    let env = env(Duration::from_secs(600)).await;
    let at = (Utc::now() - chrono::Duration::seconds(10)).to_rfc3339();
    JobStore::new(env.home.home())
        .create(
            NewJob {
                prompt: String::new(),
                schedule: at,
                script: Some("echo disk at 42%".into()),
                no_agent: true,
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    let rec = env.tick_one().await;
    assert_eq!(rec.status, "ok");
    assert!(rec.session_id.is_none());
    assert!(env.mock.requests().is_empty());
    let md = std::fs::read_to_string(env.home.path().join(rec.output_path.unwrap())).unwrap();
    assert!(md.contains("disk at 42%"), "{md}");
}

#[tokio::test]
async fn a_run_can_delegate_to_a_subagent_linked_to_the_run_session() {
    let env = env(Duration::from_secs(600)).await;
    env.due_job("Check the disk", None);
    env.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        r#"{"goal": "Measure the free disk space"}"#,
    )]));
    env.mock.push(MockResponse::text("42 GB free."));
    env.mock.push(MockResponse::text("Disk: 42 GB free."));

    let rec = env.tick_one().await;
    assert_eq!(rec.status, "ok", "{rec:?}");
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 3);
    let child_tools = requests[1]["tools"].to_string();
    assert!(child_tools.contains("terminal"), "{child_tools}");
    assert!(!child_tools.contains("delegate_task"), "{child_tools}");
    let run = env.store.latest_session(Some("cron")).unwrap().unwrap();
    let children = env.store.child_sessions(&run.id).unwrap();
    assert_eq!(children.len(), 1);
    let result = requests[2]["messages"].to_string();
    assert!(result.contains("42 GB free."), "{result}");
    assert!(result.contains(&children[0].id), "{result}");
}

/// A Python-style script job (`--script disk_check.sh --no-agent`): the script is found
/// under `HERMES_HOME/scripts/`, run with bash, and its stdout is the output; no model call.
#[tokio::test]
async fn a_python_script_job_runs_from_the_scripts_directory() {
    let env = env(Duration::from_secs(600)).await;
    let scripts = env.home.path().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(
        scripts.join("disk_check.sh"),
        "echo \"disk ok from $(pwd) token=$DISK_CHECK_TOKEN\"\n",
    )
    .unwrap();
    // Python has `.env` in its environment when it runs a script (the switching pass of
    // issue 17); so does hermes.
    std::fs::write(
        env.home.home().env_file(),
        "DISK_CHECK_TOKEN=tok-from-dotenv\n",
    )
    .unwrap();
    let at = (Utc::now() - chrono::Duration::seconds(10)).to_rfc3339();
    JobStore::new(env.home.home())
        .create(
            NewJob {
                schedule: at,
                script: Some("disk_check.sh".into()),
                no_agent: true,
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    let rec = env.tick_one().await;
    assert_eq!(rec.status, "ok", "{:?}", rec.error);
    assert!(env.mock.requests().is_empty());
    let md = std::fs::read_to_string(env.home.path().join(rec.output_path.unwrap())).unwrap();
    let scripts = std::fs::canonicalize(&scripts).unwrap();
    assert!(
        md.contains(&format!(
            "disk ok from {} token=tok-from-dotenv",
            scripts.display()
        )),
        "{md}"
    );
}

/// A script that is not in the scripts directory fails with Python's message, and one that
/// escapes it is refused.
#[tokio::test]
async fn a_missing_or_escaping_script_fails_clearly() {
    let env = env(Duration::from_secs(600)).await;
    let outside = tempfile::NamedTempFile::new().unwrap();
    for (script, expected) in [
        ("nope.sh".to_string(), "Script not found"),
        (
            outside.path().display().to_string(),
            "outside the scripts directory",
        ),
    ] {
        let at = (Utc::now() - chrono::Duration::seconds(10)).to_rfc3339();
        JobStore::new(env.home.home())
            .create(
                NewJob {
                    schedule: at,
                    script: Some(script.clone()),
                    no_agent: true,
                    ..NewJob::default()
                },
                Utc::now(),
                Tz::UTC,
            )
            .unwrap();
        let rec = env.tick_one().await;
        assert_eq!(rec.status, "failed", "{script}");
        let err = rec.error.unwrap_or_default();
        assert!(err.contains(expected), "{script}: {err}");
    }
}

/// Python's per-job fields steer the run: `model`/`base_url` pick the client, `workdir` is the
/// tools' directory, `enabled_toolsets` narrows the tools, `skills` are loaded, and the latest
/// output of each `context_from` job comes before the prompt.
#[tokio::test]
async fn python_job_fields_are_honoured_by_the_run() {
    let env = env(Duration::from_secs(600)).await;
    let workdir = tempfile::tempdir().unwrap();
    let skill = env.home.path().join("skills/research/arxiv");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: arxiv\ndescription: papers\n---\nSearch arXiv first.\n",
    )
    .unwrap();
    let source = "0123456789ab";
    let out_dir = env.home.path().join("cron/output").join(source);
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(
        out_dir.join("2026-01-01_00-00-00.md"),
        "yesterday: 3 papers",
    )
    .unwrap();
    let at = (Utc::now() - chrono::Duration::seconds(10)).to_rfc3339();
    let job = JobStore::new(env.home.home())
        .create(
            NewJob {
                prompt: "List today's papers".into(),
                schedule: at,
                model: Some("py-model".into()),
                base_url: Some(format!("{}/", env.mock.base_url())),
                provider: Some("custom".into()),
                skills: vec!["arxiv".into()],
                enabled_toolsets: Some(vec!["file".into()]),
                workdir: Some(workdir.path().display().to_string()),
                context_from: Some(vec![source.into()]),
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    assert_eq!(job.skill.as_deref(), Some("arxiv"));
    env.mock.push(MockResponse::text("done"));
    let rec = env.tick_one().await;
    assert_eq!(rec.status, "ok", "{:?}", rec.error);
    let requests = env.mock.requests();
    let req = &requests[0];
    assert_eq!(req["model"], "py-model");
    let tools: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"read_file"), "{tools:?}");
    assert!(!tools.contains(&"terminal"), "{tools:?}");
    assert!(!tools.contains(&"web_extract"), "{tools:?}");
    let messages = req["messages"].to_string();
    assert!(messages.contains("yesterday: 3 papers"), "{messages}");
    assert!(messages.contains("Search arXiv first."), "{messages}");
    let context_at = messages.find("yesterday: 3 papers").unwrap();
    assert!(context_at < messages.find("List today's papers").unwrap());
}

/// `workdir` is also the directory of a script command line.
#[tokio::test]
async fn a_job_workdir_is_the_working_directory_of_its_command() {
    let env = env(Duration::from_secs(600)).await;
    let workdir = tempfile::tempdir().unwrap();
    let at = (Utc::now() - chrono::Duration::seconds(10)).to_rfc3339();
    JobStore::new(env.home.home())
        .create(
            NewJob {
                schedule: at,
                script: Some("pwd -P".into()),
                no_agent: true,
                workdir: Some(workdir.path().display().to_string()),
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    let rec = env.tick_one().await;
    assert_eq!(rec.status, "ok", "{:?}", rec.error);
    let md = std::fs::read_to_string(env.home.path().join(rec.output_path.unwrap())).unwrap();
    let real = std::fs::canonicalize(workdir.path()).unwrap();
    assert!(md.contains(&real.display().to_string()), "{md}");
}

/// A workdir swapped for a symlink after it was checked (by the model through the terminal,
/// between `cronjob create` and the run) does not move the run: the job fails, naming the
/// folder, and nothing runs in the symlink's target (issue 18, attack pass of stop 31).
#[tokio::test]
async fn a_workdir_swapped_for_a_symlink_is_refused_at_run_time() {
    let env = env(Duration::from_secs(600)).await;
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    let workdir = root.join("sub");
    let outside = root.join("outside");
    std::fs::create_dir(&workdir).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let at = (Utc::now() - chrono::Duration::seconds(10)).to_rfc3339();
    JobStore::new(env.home.home())
        .create(
            NewJob {
                schedule: at,
                script: Some("touch canary".into()),
                no_agent: true,
                workdir: Some(workdir.display().to_string()),
                ..NewJob::default()
            },
            Utc::now(),
            Tz::UTC,
        )
        .unwrap();
    std::fs::remove_dir(&workdir).unwrap();
    std::os::unix::fs::symlink(&outside, &workdir).unwrap();
    let rec = env.tick_one().await;
    assert_eq!(rec.status, "failed", "{rec:?}");
    let error = rec.error.unwrap_or_default();
    assert!(error.contains("through a symlink"), "{error}");
    assert!(
        !outside.join("canary").exists(),
        "nothing ran in the target"
    );
}
