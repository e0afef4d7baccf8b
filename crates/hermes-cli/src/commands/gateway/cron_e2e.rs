//! End to end (issue 8, "How it is checked"): the gateway as `hermes gateway run` serves it
//! ([`crate::commands::gateway::serve`]), with the mock model and the fake platform adapter of
//! `hermes_gateway::testing`. A job
//! created through the `cronjob` tool in a DM fires on the gateway's own scheduler and its
//! reply arrives in that chat; a `[SILENT]` reply delivers nothing but is in the run history.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hermes_cron::{JobStore, RunLog, RunRecord};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::testing::FakeAdapter;
use hermes_gateway::{
    ChatType, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits,
};
use hermes_protocol::config::Config;
use hermes_testkit::{MockProvider, MockResponse, TempHome};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// A phrase of the cron preamble: only scheduled runs send it to the model.
const CRON_RUN: &str = "You are running as a scheduled job";

/// The fake chat platform: named `telegram`, plain text, no edits.
fn fake_chat() -> (Arc<FakeAdapter>, mpsc::Sender<InboundMessage>) {
    FakeAdapter::with_limits(
        "telegram",
        PlatformLimits {
            max_message_len: 4096,
            length_unit: LengthUnit::Utf16,
            markup: Markup::Plain,
            supports_edit: false,
        },
    )
}

/// A DM from Ann (user 77) in chat 4242.
fn dm(text: &str) -> InboundMessage {
    hermes_gateway::testing::message("telegram", ChatType::Dm, "4242", "77", text)
}

/// The model's call creating a one-shot job that is due at once (an ISO time 5 s ago, inside
/// the 2-minute grace for past one-shots).
fn create_call(call_id: &str, prompt: &str) -> MockResponse {
    let at = (chrono::Utc::now() - chrono::Duration::seconds(5))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let args = serde_json::json!({"action": "create", "schedule": at, "prompt": prompt});
    MockResponse::tool_calls(&[(call_id, "cronjob", &args.to_string())])
}

async fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    for _ in 0..1800 {
        if let Some(v) = check() {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

fn runs(log: &RunLog) -> Vec<RunRecord> {
    log.list(None, 10).unwrap()
}

/// `hermes gateway run` in-process: the mock model, a temporary home whose config.yaml
/// selects it (plus `extra_config`), everyone allowed, and the fake chat as the only adapter.
struct Served {
    mock: MockProvider,
    home: TempHome,
    _cwd: tempfile::TempDir,
    chat: Arc<FakeAdapter>,
    tx: mpsc::Sender<InboundMessage>,
    cancel: CancellationToken,
    served: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    log: RunLog,
}

impl Served {
    async fn start(extra_config: &str) -> Served {
        let mock = MockProvider::start().await;
        let home = TempHome::new().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(
            home.home().config_file(),
            format!(
                "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\nterminal:\n  cwd: {}\n{extra_config}",
                mock.base_url(),
                cwd.path().display()
            ),
        )
        .unwrap();
        let env: BTreeMap<String, String> =
            [("GATEWAY_ALLOW_ALL_USERS".to_string(), "true".to_string())].into();
        let app = App {
            home: home.home().clone(),
            config: Config::load(&home.home().config_file()).unwrap().config,
            config_warnings: Vec::new(),
            startup_notes: Vec::new(),
            env,
            profile: None,
        };
        let (chat, tx) = fake_chat();
        let (config, _) = GatewayConfig::from_config(&app.config, &app.env, None).unwrap();
        let cancel = CancellationToken::new();
        let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![chat.clone()];
        let served = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                crate::commands::gateway::serve(
                    &app,
                    None,
                    &ChatArgs::default(),
                    config,
                    adapters,
                    cancel,
                )
                .await
            }
        });
        let log = RunLog::new(
            JobStore::new(home.home()),
            Arc::new(hermes_store::SessionStore::open(home.home().state_db()).unwrap()),
        );
        Served {
            mock,
            home,
            _cwd: cwd,
            chat,
            tx,
            cancel,
            served: Some(served),
            log,
        }
    }

    async fn stop(&mut self) {
        self.cancel.cancel();
        let served = self.served.take().expect("stopped once");
        tokio::time::timeout(Duration::from_secs(60), served)
            .await
            .expect("the gateway stops")
            .unwrap()
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_made_in_a_dm_replies_in_that_chat_and_a_silent_run_is_only_recorded() {
    let mut s = Served::start("").await;
    let (mock, home, chat, tx, log) = (&s.mock, &s.home, &s.chat, &s.tx, &s.log);

    // 1. "Remind me": the model schedules a job; the scheduled run answers in the same DM.
    mock.push(create_call("call_1", "Greet Ann and name today's date."));
    mock.push(MockResponse::text("Done, I scheduled it."));
    mock.push_matching(CRON_RUN, MockResponse::text("Good morning, Ann!"));
    tx.send(dm("greet me in a moment")).await.unwrap();
    wait_for("the scheduled reply in chat 4242", || {
        chat.texts_to("4242")
            .iter()
            .any(|t| t.contains("Good morning, Ann!"))
            .then_some(())
    })
    .await;
    let first = wait_for("the first run in the history", || {
        runs(log).into_iter().next()
    })
    .await;
    assert_eq!(first.status, "ok", "{first:?}");
    assert_eq!(first.deliveries.len(), 1, "{first:?}");
    assert_eq!(first.deliveries[0].target, "origin");
    assert!(first.deliveries[0].ok, "{first:?}");
    // The reply reached the job's chat (above); a one-shot job is removed after its run,
    // as Python Hermes removes a job whose repeat limit is reached.
    assert!(
        JobStore::new(home.home()).get(&first.job_id).is_err(),
        "the one-shot job is gone after its run"
    );
    let session = first.session_id.clone().expect("an agent ran");
    let stored = log.db().get_session(&session).unwrap().unwrap();
    assert_eq!(stored.source, "cron");
    wait_for("the turn's own reply", || {
        chat.texts_to("4242")
            .iter()
            .any(|t| t.contains("Done, I scheduled it."))
            .then_some(())
    })
    .await;

    // 2. A run that answers exactly [SILENT] sends nothing but is recorded.
    mock.push(create_call(
        "call_2",
        "Check the disk; report only problems.",
    ));
    mock.push(MockResponse::text("Noted."));
    mock.push_matching(CRON_RUN, MockResponse::text("[SILENT]"));
    tx.send(dm("watch the disk")).await.unwrap();
    let silent = wait_for("the silent run in the history", || {
        runs(log).into_iter().find(|r| r.run_id != first.run_id)
    })
    .await;
    assert_eq!(silent.status, "silent", "{silent:?}");
    assert!(silent.deliveries.is_empty(), "{silent:?}");
    wait_for("the second turn's reply", || {
        chat.texts_to("4242")
            .iter()
            .any(|t| t.contains("Noted."))
            .then_some(())
    })
    .await;
    let texts = chat.texts_to("4242");
    assert!(!texts.iter().any(|t| t.contains("[SILENT]")), "{texts:?}");
    assert_eq!(
        texts.iter().filter(|t| t.contains("Good morning")).count(),
        1,
        "{texts:?}"
    );
    assert_eq!(mock.pending(), 0);
    s.stop().await;
}

/// `cron.enabled: false`: jobs made in chat are saved with their chat, but the gateway runs
/// none of them (they are left to `hermes cron tick`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_cron_disabled_the_gateway_runs_no_job() {
    let mut s = Served::start("cron:\n  enabled: false\n").await;
    s.mock.push(create_call("call_1", "Greet Ann."));
    s.mock.push(MockResponse::text("Done, I scheduled it."));
    s.mock
        .push_matching(CRON_RUN, MockResponse::text("Good morning, Ann!"));
    s.tx.send(dm("greet me in a moment")).await.unwrap();
    wait_for("the turn's reply", || {
        s.chat
            .texts_to("4242")
            .iter()
            .any(|t| t.contains("Done, I scheduled it."))
            .then_some(())
    })
    .await;
    let jobs = JobStore::new(s.home.home()).list().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        jobs[0].origin.as_ref().map(|o| o.chat_id.as_str()),
        Some("4242")
    );
    s.stop().await;
    assert!(runs(&s.log).is_empty(), "no run: {:?}", runs(&s.log));
    assert_eq!(
        JobStore::new(s.home.home()).list().unwrap()[0].last_run_at,
        None
    );
    assert!(
        !s.mock
            .requests()
            .iter()
            .any(|r| r.to_string().contains(CRON_RUN)),
        "the model was never asked to run the job"
    );
    assert!(
        !s.chat
            .texts_to("4242")
            .iter()
            .any(|t| t.contains("Good morning"))
    );
}
