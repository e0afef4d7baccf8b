//! Issue 18 §6: a hung model is cut. A provider that stalls mid-stream, never answers, or
//! trickles bytes forever ends the call with a retryable `timeout`-class error within the
//! configured limits (`model.stream_idle_timeout`, `model.request_timeout_seconds`).
//! Limits are tiny here; each test also bounds its own wait generously to detect a hang.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::request;
use futures::StreamExt;
use hermes_llm::runtime::{ApiMode, Runtime};
use hermes_llm::{
    ClientOptions, ErrorClass, LlmError, ModelClient, OpenAiChatClient, OpenAiChatConfig,
    StreamEvent, Timeouts, build_client_with,
};
use hermes_protocol::Message;
use hermes_protocol::config::Config;
use hermes_testkit::{MockProvider, MockResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Far longer than any limit used below: hitting it means the call hung.
const HANG: Duration = Duration::from_secs(30);

fn client(base_url: &str, timeouts: Timeouts) -> OpenAiChatClient {
    let mut cfg = OpenAiChatConfig::new(base_url, "test-model");
    cfg.timeouts = timeouts;
    OpenAiChatClient::new(cfg).unwrap()
}

fn limits(idle_ms: u64, total_ms: u64) -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(5),
        stream_idle: Duration::from_millis(idle_ms),
        total: Duration::from_millis(total_ms),
    }
}

/// Runs one call to its end: the text deltas seen, then the error it ended with.
async fn run(client: &dyn ModelClient) -> (String, LlmError) {
    let req = request(vec![Message::user("x")]);
    let work = async {
        let mut stream = match client.stream(&req).await {
            Ok(s) => s,
            Err(e) => return (String::new(), e),
        };
        let mut text = String::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::TextDelta(t)) => text.push_str(&t),
                Ok(_) => {}
                Err(e) => return (text, e),
            }
        }
        panic!("the stream ended without an error; text so far: {text:?}")
    };
    tokio::time::timeout(HANG, work)
        .await
        .expect("the call hung instead of being cut")
}

fn stalling_mid_stream(mock: &MockProvider) {
    mock.push(
        MockResponse::from_bytes(
            200,
            vec![("content-type".into(), "text/event-stream".into())],
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n",
        )
        .hang(),
    );
}

#[tokio::test]
async fn a_stream_that_stalls_mid_answer_is_cut_as_a_retryable_timeout() {
    let mock = MockProvider::start().await;
    stalling_mid_stream(&mock);
    let c = client(&mock.base_url(), limits(300, 60_000));
    let (text, err) = run(&c).await;
    assert_eq!(text, "partial", "the data before the stall arrives");
    assert_eq!(err.class, ErrorClass::Timeout, "{err}");
    assert!(err.retryable());
    assert!(
        err.message.contains("model.stream_idle_timeout"),
        "{}",
        err.message
    );
}

/// A server that accepts and reads the request but never answers.
async fn silent_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            held.push(sock);
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_provider_that_never_answers_is_cut_after_the_idle_limit() {
    let base = silent_server().await;
    let c = client(&base, limits(300, 60_000));
    let (_, err) = run(&c).await;
    assert_eq!(err.class, ErrorClass::Timeout, "{err}");
    assert!(err.message.contains("before answering"), "{}", err.message);
}

/// A server that sends the SSE head, then one keep-alive comment every 50 ms forever:
/// never idle, never done.
async fn trickling_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = sock.read(&mut buf).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                loop {
                    let chunk = b": ping\n\n";
                    let framed = format!("{:x}\r\n{}\r\n", chunk.len(), ": ping\n\n");
                    if sock.write_all(framed.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            });
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn the_total_wait_of_one_call_is_bounded() {
    let base = trickling_server().await;
    let c = client(&base, limits(5_000, 800));
    let (_, err) = run(&c).await;
    assert_eq!(err.class, ErrorClass::Timeout, "{err}");
    assert!(err.retryable());
}

#[tokio::test]
async fn the_config_keys_reach_the_built_client() {
    let config = Config::parse(
        "model:\n  stream_idle_timeout: 0.3\n  request_timeout_seconds: 60\n",
        Path::new("config.yaml"),
    )
    .unwrap()
    .config;
    let (opts, warnings) = ClientOptions::from_config(&config);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(opts.timeouts.stream_idle, Duration::from_millis(300));
    assert_eq!(opts.timeouts.total, Duration::from_secs(60));

    let mock = MockProvider::start().await;
    stalling_mid_stream(&mock);
    let rt = Runtime {
        provider: "custom".to_string(),
        api_mode: ApiMode::ChatCompletions,
        base_url: mock.base_url(),
        model: "test-model".to_string(),
        api_key: None,
        context_window: None,
        trace: Vec::new(),
    };
    let c = build_client_with(&rt, &opts).unwrap();
    let (text, err) = run(c.as_ref()).await;
    assert_eq!(text, "partial");
    assert_eq!(err.class, ErrorClass::Timeout, "{err}");
}

#[tokio::test]
async fn python_hermes_key_name_is_accepted_as_an_alias() {
    let config = Config::parse(
        "model:\n  stale_timeout_seconds: 12\n",
        Path::new("config.yaml"),
    )
    .unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let (opts, _) = ClientOptions::from_config(&config.config);
    assert_eq!(opts.timeouts.stream_idle, Duration::from_secs(12));
}
