//! Provider commands end to end (issue 3): `hermes doctor` probes the provider (a loopback
//! mock answers, a closed port fails with a message and exit 1), `hermes model set` checks the
//! choice and persists it to config.yaml, and `chat -q` ends with the session's tokens and cost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn doctor_reports_a_reachable_provider() {
    let env = Env::new().await;
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = format!(
        "ok    provider reachable: GET {}/models → 200",
        env.mock.base_url()
    );
    assert!(text.lines().any(|l| l == line), "{text}");
    assert!(
        env.mock.captured().iter().any(|r| r.path == "/v1/models"),
        "the models endpoint was asked"
    );
}

#[tokio::test]
async fn doctor_fails_on_an_unreachable_provider() {
    let env = Env::new().await;
    let dead = closed_port_url();
    std::fs::write(
        env.home.home().config_file(),
        format!("model:\n  provider: custom\n  base_url: {dead}\n  default: mock-model\n"),
    )
    .unwrap();
    let out = env.run(&["doctor"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let prefix =
        format!("FAIL  provider custom is not reachable at {dead}/models: connection failed");
    assert!(text.lines().any(|l| l.starts_with(&prefix)), "{text}");
}

#[tokio::test]
async fn model_set_persists_and_the_next_chat_uses_it() {
    let env = Env::new().await;
    let out = env.run(&["model", "set", "second-model"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The provider lists only `mock-model`: a note, and the choice is still written.
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("note: `second-model` is not among the 1 models"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("default model set to second-model on custom"),
        "{text}"
    );
    // A listed model gets no note.
    let out = env.run(&["model", "set", "mock-model"]).await;
    assert!(
        stdout(&out).starts_with("default model set to mock-model"),
        "{}",
        stdout(&out)
    );
    env.run_ok(&["model", "set", "second-model"]).await;
    let config = std::fs::read_to_string(env.home.home().config_file()).unwrap();
    assert!(config.contains("default: second-model"), "{config}");
    assert!(
        config.contains(&env.mock.base_url()),
        "the base URL stays: {config}"
    );

    let out = env.run(&["model"]).await;
    assert!(
        stdout(&out).contains("model:    second-model"),
        "{}",
        stdout(&out)
    );
    env.mock
        .push(MockResponse::text("hi from the second model"));
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.mock.requests()[0]["model"], "second-model");
}

#[tokio::test]
async fn model_set_with_an_unknown_provider_changes_nothing() {
    let env = Env::new().await;
    let before = std::fs::read_to_string(env.home.home().config_file()).unwrap();
    let out = env.run(&["model", "set", "nosuch", "some-model"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown provider `nosuch`; known providers: openrouter"),
        "{}",
        stderr(&out)
    );
    let after = std::fs::read_to_string(env.home.home().config_file()).unwrap();
    assert_eq!(before, after);

    // A provider whose key is missing is refused the same way, naming the variable.
    let out = env
        .run(&["model", "set", "anthropic", "claude-sonnet-4"])
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("ANTHROPIC_API_KEY"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(env.home.home().config_file()).unwrap(),
        before
    );
}

#[tokio::test]
async fn chat_ends_with_the_session_tokens_and_cost() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("an answer"));
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "an answer",
        "the summary stays off stdout"
    );
    let err = stderr(&out);
    let summary = err
        .lines()
        .find(|l| l.starts_with("session "))
        .unwrap_or_else(|| panic!("no summary: {err}"));
    // The mock reports 10 prompt tokens; mock-model has no price.
    assert!(summary.contains(": 10 input,"), "{summary}");
    assert!(summary.ends_with("cost unknown"), "{summary}");

    env.mock.push(MockResponse::text("again"));
    let out = env.run(&["chat", "-q", "hello", "-Q"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("cost"), "-Q keeps it quiet");
}
