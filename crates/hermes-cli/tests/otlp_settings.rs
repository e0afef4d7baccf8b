//! The OTLP exporter variables an operator may get wrong (issue 24 §1): the spec's protocol
//! values are taken without case, and a protocol hermes does not speak gives one warning
//! and export over http/protobuf — not a second warning from the OTLP crate reading the
//! variables itself and refusing to export at all. A collector port nothing listens on
//! keeps the check free of a receiver: the exporter was built when `agent.log` says its
//! first batch failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stdout};
use hermes_testkit::MockResponse;

/// A loopback port nothing listens on.
fn down_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `chat -q` with `vars`: (stderr's `warning:` lines, agent.log's export failures).
async fn run_with(vars: &[(&str, String)]) -> (Vec<String>, Vec<String>) {
    let env = Env::with_config("").await;
    env.mock.push(MockResponse::text("answer: quince-7"));
    let out = env.run_env(&["chat", "-q", "hello"], vars).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(stdout(&out).contains("quince-7"));
    let warnings = common::stderr(&out)
        .lines()
        .filter(|l| l.contains("warning"))
        .map(str::to_string)
        .collect();
    let log =
        std::fs::read_to_string(env.home.path().join("logs").join("agent.log")).unwrap_or_default();
    let failures = log
        .lines()
        .filter(|l| l.contains("trace export failed"))
        .map(str::to_string)
        .collect();
    (warnings, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_traces_protocol_gives_one_warning_and_http_export() {
    let endpoint = format!("http://127.0.0.1:{}", down_port());
    let (warnings, failures) = run_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json".into()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".into()),
    ])
    .await;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("`http/json` is not supported"),
        "{warnings:?}"
    );
    assert_eq!(
        failures.len(),
        1,
        "the exporter was not built: {failures:?}"
    );
    assert!(failures[0].contains("/v1/traces"), "{failures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_values_are_taken_without_case() {
    let endpoint = format!("http://127.0.0.1:{}", down_port());
    let (warnings, failures) = run_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "GRPC".into()),
    ])
    .await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        failures.len(),
        1,
        "the exporter was not built: {failures:?}"
    );
    assert!(
        failures[0].contains("gRPC"),
        "not sent over gRPC: {failures:?}"
    );
}
