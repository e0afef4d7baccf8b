//! `hermes doctor`'s reachability probe against a loopback mock and a closed port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hermes_llm::reachability::{Reachability, models_url, probe};
use hermes_llm::{ApiMode, Runtime};
use hermes_testkit::MockProvider;

fn runtime(api_mode: ApiMode, base_url: &str, key: Option<&str>) -> Runtime {
    Runtime {
        provider: "custom".into(),
        api_mode,
        base_url: base_url.into(),
        model: "mock-model".into(),
        api_key: key.map(str::to_string),
        context_window: None,
        trace: Vec::new(),
    }
}

fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn a_listening_server_is_reachable_and_gets_the_key() {
    let mock = MockProvider::start().await;
    let rt = runtime(
        ApiMode::ChatCompletions,
        &mock.base_url(),
        Some("sk-test-123"),
    );
    let found = probe(&rt, Duration::from_secs(5)).await;
    assert_eq!(
        found,
        Reachability::Reachable {
            url: format!("{}/models", mock.base_url()),
            status: 200
        }
    );
    let asked = mock.captured();
    assert_eq!(asked[0].path, "/v1/models");
    assert_eq!(asked[0].header("authorization"), Some("Bearer sk-test-123"));
}

#[tokio::test]
async fn anthropic_is_asked_with_its_own_headers() {
    let mock = MockProvider::start().await;
    let rt = runtime(
        ApiMode::AnthropicMessages,
        &mock.base_url(),
        Some("sk-ant-1"),
    );
    assert!(matches!(
        probe(&rt, Duration::from_secs(5)).await,
        Reachability::Reachable { .. }
    ));
    let asked = &mock.captured()[0];
    assert_eq!(asked.header("x-api-key"), Some("sk-ant-1"));
    assert_eq!(asked.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(asked.header("authorization"), None);
    let bare = runtime(
        ApiMode::AnthropicMessages,
        "https://api.anthropic.com",
        None,
    );
    assert_eq!(
        models_url(&bare).as_deref(),
        Some("https://api.anthropic.com/v1/models")
    );
}

#[tokio::test]
async fn a_closed_port_is_unreachable_with_the_reason() {
    let url = closed_port_url();
    let rt = runtime(ApiMode::ChatCompletions, &url, None);
    match probe(&rt, Duration::from_secs(5)).await {
        Reachability::Unreachable { url: asked, reason } => {
            assert_eq!(asked, format!("{url}/models"));
            assert!(reason.starts_with("connection failed"), "{reason}");
        }
        other => panic!("expected unreachable, got {other:?}"),
    }
}

#[tokio::test]
async fn the_embedded_model_is_not_probed() {
    let rt = runtime(ApiMode::Local, "", None);
    assert_eq!(
        probe(&rt, Duration::from_secs(1)).await,
        Reachability::NotApplicable
    );
}
