//! Webhook adapter over loopback HTTP: a real client posts signed (and badly signed or
//! malformed) requests; replies go to a recording callback server.
#![cfg(feature = "webhook")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hermes_gateway::platforms::webhook::{
    DELIVERY_HEADER, SIGNATURE_HEADER, Signer, TIMESTAMP_HEADER, WebhookAdapter, WebhookSettings,
};
use hermes_gateway::{ChatTarget, ChatType, InboundMessage, PlatformAdapter, PlatformError};
use serde_json::json;
use support::{HttpFake, ok_json, status_json, within};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "webhook-test-secret";

fn settings() -> WebhookSettings {
    let mut s = WebhookSettings::new(SECRET);
    s.bind = SocketAddr::from(([127, 0, 0, 1], 0));
    s.retry_base = Duration::from_millis(5);
    s.retry_max = Duration::from_millis(20);
    s
}

struct Running {
    adapter: Arc<WebhookAdapter>,
    rx: mpsc::Receiver<InboundMessage>,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), PlatformError>>,
    url: String,
}

async fn start(settings: WebhookSettings) -> Running {
    let adapter = Arc::new(WebhookAdapter::bind(settings).await.unwrap());
    let url = format!("http://{}/webhook", adapter.local_addr());
    let (tx, rx) = mpsc::channel(8);
    let cancel = CancellationToken::new();
    let task = {
        let adapter = adapter.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { adapter.run(tx, cancel).await })
    };
    Running {
        adapter,
        rx,
        cancel,
        task,
        url,
    }
}

async fn post(url: &str, body: &str, signature: Option<String>) -> (u16, serde_json::Value) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(sig) = signature {
        req = req.header(SIGNATURE_HEADER, sig);
    }
    req = req.header(TIMESTAMP_HEADER, ts().to_string());
    let resp = within("the webhook answer", req.send()).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.json().await.unwrap_or(serde_json::Value::Null);
    (status, body)
}

/// One timestamp per test process (well inside the 5-minute window), so a signature made
/// by [`sign`] matches the header [`post`] sends.
fn ts() -> i64 {
    static NOW: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *NOW.get_or_init(|| chrono::Utc::now().timestamp())
}

fn sign(body: &str) -> Option<String> {
    Some(
        Signer::new(SECRET.as_bytes())
            .unwrap()
            .sign_timestamped(ts(), body.as_bytes()),
    )
}

#[tokio::test]
async fn signed_post_becomes_an_inbound_message() {
    let mut run = start(settings()).await;
    let body = r#"{"chat_id": "room-1", "user_id": 9001, "text": "deploy status?", "thread_id": "t-2", "message_id": 44, "chat_type": "group", "user_name": "ops"}"#;
    let (status, answer) = post(&run.url, body, sign(body)).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["ok"], json!(true));
    let msg = within("the inbound message", run.rx.recv()).await.unwrap();
    assert_eq!(msg.text, "deploy status?");
    assert_eq!(msg.source.platform, "webhook");
    assert_eq!(msg.source.chat_type, ChatType::Group);
    assert_eq!(msg.source.chat_id.as_deref(), Some("room-1"));
    assert_eq!(msg.source.user_id.as_deref(), Some("9001"));
    assert_eq!(msg.source.thread_id.as_deref(), Some("t-2"));
    assert_eq!(msg.source.user_name.as_deref(), Some("ops"));
    assert_eq!(msg.message_id.as_deref(), Some("44"));

    run.cancel.cancel();
    let result = within("run to stop", run.task).await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    let refused = reqwest::Client::new()
        .post(&run.url)
        .body("{}")
        .send()
        .await;
    assert!(refused.is_err(), "the listener is closed after cancel");
}

#[tokio::test]
async fn missing_or_wrong_signatures_get_401_and_nothing_is_forwarded() {
    let mut run = start(settings()).await;
    let body = r#"{"chat_id": 1, "user_id": 2, "text": "rm -rf /"}"#;
    let other = Signer::new(b"someone-else").unwrap().sign(body.as_bytes());
    let tampered = sign(r#"{"chat_id": 1, "user_id": 2, "text": "hello"}"#);
    let cases = [
        None,
        Some(other),
        tampered,
        Some("sha256=".into()),
        Some("md5=abc".into()),
    ];
    for signature in cases {
        let (status, answer) = post(&run.url, body, signature.clone()).await;
        assert_eq!(status, 401, "{signature:?}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains(SIGNATURE_HEADER));
    }
    assert!(run.rx.try_recv().is_err(), "nothing reached the gateway");
    run.cancel.cancel();
}

#[tokio::test]
async fn malformed_bodies_get_400_naming_the_problem_and_oversized_ones_413() {
    let mut s = settings();
    s.max_body_bytes = 512;
    let mut run = start(s).await;
    for (body, expected) in [
        ("not json", "not valid JSON"),
        (r#"{"user_id": 2, "text": "x"}"#, "`chat_id` is required"),
        (
            r#"{"chat_id": [1], "user_id": 2, "text": "x"}"#,
            "`chat_id` must be",
        ),
        (
            r#"{"chat_id": 1, "user_id": 2, "text": ""}"#,
            "`text` is empty",
        ),
        (
            r#"{"chat_id": 1, "user_id": 2, "text": "x", "from": "a"}"#,
            "unknown field `from`",
        ),
    ] {
        let (status, answer) = post(&run.url, body, sign(body)).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(expected), "{body}: {error}");
    }
    let big = format!(
        r#"{{"chat_id": 1, "user_id": 2, "text": "{}"}}"#,
        "a".repeat(600)
    );
    let (status, _) = post(&run.url, &big, sign(&big)).await;
    assert_eq!(status, 413);
    assert!(run.rx.try_recv().is_err());
    run.cancel.cancel();
}

#[tokio::test]
async fn replies_are_posted_signed_to_the_callback() {
    let callback = HttpFake::start(|_| ok_json(json!({"message_id": "cb-17"}))).await;
    let mut s = settings();
    s.callback_url = Some(format!("{}/hooks/reply", callback.url));
    let run = start(s).await;
    let target = ChatTarget {
        chat_id: "room-1".into(),
        thread_id: Some("t-2".into()),
        reply_to: Some("44".into()),
    };
    let sent = run.adapter.send(&target, "all green").await.unwrap();
    assert_eq!(sent.message_id, "cb-17");
    let requests = callback.requests_to("/hooks/reply");
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.method, "POST");
    assert_eq!(
        req.json(),
        json!({"chat_id": "room-1", "thread_id": "t-2", "text": "all green"})
    );
    let signature = req.header(SIGNATURE_HEADER);
    assert!(run.adapter.signer().verify(&req.body, signature.as_deref()));
    assert!(req.header(DELIVERY_HEADER).is_some());

    assert!(matches!(
        run.adapter.edit(&target, &sent, "x").await,
        Err(PlatformError::Unsupported { .. })
    ));
    assert!(run.adapter.typing(&target).await.is_ok());
    run.cancel.cancel();
}

#[tokio::test]
async fn callback_server_errors_are_retried_with_the_same_delivery_id() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let callback = HttpFake::start(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) < 2 {
            status_json(503, json!({"error": "busy"}))
        } else {
            ok_json(json!({}))
        }
    })
    .await;
    let mut s = settings();
    s.callback_url = Some(format!("{}/cb", callback.url));
    let adapter = WebhookAdapter::bind(s).await.unwrap();
    let target = ChatTarget {
        chat_id: "7".into(),
        thread_id: None,
        reply_to: None,
    };
    let sent = within("the send", adapter.send(&target, "hi"))
        .await
        .unwrap();
    let requests = callback.requests_to("/cb");
    assert_eq!(requests.len(), 3);
    let ids: Vec<_> = requests
        .iter()
        .map(|r| r.header(DELIVERY_HEADER).unwrap())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(
        sent.message_id, ids[0],
        "no message_id answer → the delivery id"
    );
    assert_eq!(requests[2].json()["thread_id"], json!(null));
}

#[tokio::test]
async fn callback_rejections_are_not_retried_and_persistent_failures_give_up() {
    let callback = HttpFake::start(|r| {
        if r.path == "/bad" {
            status_json(400, json!({"error": "unknown chat"}))
        } else {
            status_json(502, json!({"error": "down"}))
        }
    })
    .await;
    let target = ChatTarget {
        chat_id: "7".into(),
        thread_id: None,
        reply_to: None,
    };
    let mut s = settings();
    s.callback_url = Some(format!("{}/bad", callback.url));
    let adapter = WebhookAdapter::bind(s.clone()).await.unwrap();
    let err = adapter.send(&target, "hi").await.unwrap_err();
    assert!(matches!(err, PlatformError::Rejected { .. }), "{err:?}");
    assert!(err.to_string().contains("unknown chat"), "{err}");
    assert_eq!(callback.requests_to("/bad").len(), 1);

    s.callback_url = Some(format!("{}/down", callback.url));
    s.send_attempts = 3;
    let adapter = WebhookAdapter::bind(s).await.unwrap();
    let err = within("the send", adapter.send(&target, "hi"))
        .await
        .unwrap_err();
    assert!(matches!(err, PlatformError::Transport { .. }), "{err:?}");
    assert_eq!(callback.requests_to("/down").len(), 3);
}

#[tokio::test]
async fn configuration_errors_are_reported_at_bind() {
    let mut s = settings();
    s.secret = String::new();
    assert!(matches!(
        WebhookAdapter::bind(s).await,
        Err(PlatformError::Auth { .. })
    ));
    let mut s = settings();
    s.path = "webhook".into();
    assert!(matches!(
        WebhookAdapter::bind(s).await,
        Err(PlatformError::Rejected { .. })
    ));
    let adapter = WebhookAdapter::bind(settings()).await.unwrap();
    let target = ChatTarget {
        chat_id: "7".into(),
        thread_id: None,
        reply_to: None,
    };
    assert!(matches!(
        adapter.send(&target, "hi").await,
        Err(PlatformError::Unsupported { .. })
    ));
}

async fn post_raw(
    url: &str,
    body: &str,
    timestamp: i64,
    extra: &[(&str, &str)],
) -> (u16, serde_json::Value) {
    let signature = Signer::new(SECRET.as_bytes())
        .unwrap()
        .sign_timestamped(timestamp, body.as_bytes());
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header(SIGNATURE_HEADER, signature)
        .header(TIMESTAMP_HEADER, timestamp.to_string())
        .body(body.to_string());
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let resp = within("the webhook answer", req.send()).await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(serde_json::Value::Null))
}

/// Issue 18 §3: a signed body sent 4 times runs once; a stale timestamp is refused.
#[tokio::test]
async fn replayed_and_stale_requests_do_not_run_again() {
    let mut run = start(settings()).await;
    let body = r#"{"chat_id": 1, "user_id": 2, "text": "deploy"}"#;
    let (status, _) = post(&run.url, body, sign(body)).await;
    assert_eq!(status, 202);
    for _ in 0..3 {
        let (status, answer) = post(&run.url, body, sign(body)).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["duplicate"], true);
    }
    let first = within("the message", run.rx.recv()).await.unwrap();
    assert_eq!(first.text, "deploy");
    assert!(run.rx.try_recv().is_err(), "the replays were not forwarded");

    // Correctly signed but 10 minutes old (or ahead): refused, nothing forwarded.
    let now = chrono::Utc::now().timestamp();
    for ts in [now - 600, now + 600] {
        let (status, answer) = post_raw(&run.url, body, ts, &[]).await;
        assert_eq!(status, 401, "{answer}");
        assert!(
            answer["error"].as_str().unwrap().contains(TIMESTAMP_HEADER),
            "{answer}"
        );
    }
    // The same message id re-signed later (a sender's retry) runs once.
    let with_id = r#"{"chat_id": 1, "user_id": 2, "text": "once", "message_id": "m-9"}"#;
    assert_eq!(post_raw(&run.url, with_id, now, &[]).await.0, 202);
    assert_eq!(post_raw(&run.url, with_id, now + 1, &[]).await.0, 200);
    assert_eq!(within("m-9", run.rx.recv()).await.unwrap().text, "once");
    assert!(run.rx.try_recv().is_err());
    run.cancel.cancel();
}

#[tokio::test]
async fn rebinding_hosts_and_browser_requests_are_refused() {
    let mut run = start(settings()).await;
    let body = r#"{"chat_id": 1, "user_id": 2, "text": "x"}"#;
    let now = chrono::Utc::now().timestamp();
    let port = run.adapter.local_addr().port().to_string();
    let evil = format!("evil.example:{port}");
    let (status, answer) = post_raw(&run.url, body, now, &[("host", &evil)]).await;
    assert_eq!(status, 421, "{answer}");
    let (status, _) = post_raw(&run.url, body, now, &[("origin", "https://evil.example")]).await;
    assert_eq!(status, 403);
    let (status, _) = post_raw(&run.url, body, now, &[("sec-fetch-site", "cross-site")]).await;
    assert_eq!(status, 403);
    assert!(run.rx.try_recv().is_err(), "nothing reached the gateway");
    run.cancel.cancel();
}

#[tokio::test]
async fn silent_sockets_do_not_take_the_listener_down() {
    let mut s = settings();
    s.limits.header_timeout = Duration::from_millis(300);
    s.limits.max_connections = 32;
    let mut run = start(s).await;
    let mut silent = Vec::new();
    for _ in 0..200 {
        silent.push(
            tokio::net::TcpStream::connect(run.adapter.local_addr())
                .await
                .unwrap(),
        );
    }
    let body = r#"{"chat_id": 1, "user_id": 2, "text": "still here"}"#;
    let now = chrono::Utc::now().timestamp();
    let (status, _) = post_raw(&run.url, body, now, &[]).await;
    assert_eq!(status, 202);
    assert_eq!(
        within("msg", run.rx.recv()).await.unwrap().text,
        "still here"
    );
    drop(silent);
    run.cancel.cancel();
}

/// The signature's hex digits are accepted in either case, so a captured request re-sent
/// with its signature upper- or mixed-case is the same request: it must not run again
/// (it did, once per spelling).
#[tokio::test]
async fn a_replay_with_the_signature_respelled_does_not_run_again() {
    let mut run = start(settings()).await;
    let body = r#"{"chat_id": 1, "user_id": 2, "text": "deploy"}"#;
    let signature = sign(body).unwrap();
    assert_eq!(post(&run.url, body, Some(signature.clone())).await.0, 202);
    let hex = &signature["sha256=".len()..];
    let mixed: String = hex
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    for respelled in [
        format!("sha256={}", hex.to_ascii_uppercase()),
        format!("sha256={mixed}"),
        format!(" sha256={hex} "),
    ] {
        let (status, answer) = post(&run.url, body, Some(respelled.clone())).await;
        assert_eq!(status, 200, "{respelled}: {answer}");
        assert_eq!(answer["duplicate"], true, "{respelled}");
    }
    assert_eq!(
        within("the message", run.rx.recv()).await.unwrap().text,
        "deploy"
    );
    assert!(
        run.rx.try_recv().is_err(),
        "a respelled replay was forwarded"
    );
    run.cancel.cancel();
}

/// Issue 18 §3: when the message cannot be handed over (the gateway goes away while the
/// request waits for room in the inbound queue), the answer is a 503 with `Retry-After`, so
/// the sender retries later.
#[tokio::test]
async fn an_unhandled_message_gets_503_with_retry_after() {
    let adapter = Arc::new(WebhookAdapter::bind(settings()).await.unwrap());
    let url = format!("http://{}/webhook", adapter.local_addr());
    // Room for one message: the second request waits in the handler.
    let (tx, rx) = mpsc::channel(1);
    let cancel = CancellationToken::new();
    let task = {
        let adapter = adapter.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { adapter.run(tx, cancel).await })
    };
    let first = r#"{"chat_id": "room-9", "user_id": 1, "text": "one", "message_id": 901}"#;
    let (status, answer) = post(&url, first, sign(first)).await;
    assert_eq!(status, 202, "{answer}");
    let second = r#"{"chat_id": "room-9", "user_id": 1, "text": "two", "message_id": 902}"#;
    let waiting = tokio::spawn(
        reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, sign(second).unwrap())
            .header(TIMESTAMP_HEADER, ts().to_string())
            .body(second)
            .send(),
    );
    // Let the second request reach the handler, then the gateway goes away.
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(rx);
    let resp = within("the webhook answer", waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert!(
        resp.headers().get("retry-after").is_some(),
        "{:?}",
        resp.headers()
    );
    cancel.cancel();
    let _ = within("run to stop", task).await;
}
