//! The Matrix adapter against a scripted homeserver on loopback, for what a well-behaved
//! Synapse does not do on demand: a 5xx and a body that is not JSON from `/sync`, malformed
//! and unknown events in a batch, `M_LIMIT_EXCEEDED` with `retry_after_ms` on a send (the
//! retry reuses the transaction id, so the message exists once), a saved sync token the
//! server no longer accepts (replaced by a fresh sync), and a refused access token (the
//! adapter stops with an authentication error instead of retrying forever).
#![cfg(feature = "matrix")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use common::{Harness, wait_until};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::{Gateway, MatrixAdapter, MatrixSettings, PlatformAdapter, PlatformError};
use hermes_testkit::MockResponse;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ROOM: &str = "!dm:fake";

#[derive(Default)]
struct Inner {
    /// Answers for `/sync`, in order (status, body text); when empty, an idle batch.
    syncs: VecDeque<(u16, String)>,
    /// Answers for sends before they succeed.
    send_failures: VecDeque<(u16, Value)>,
    /// Every send: (path, body).
    sends: Vec<(String, Value)>,
    /// `since` of every sync.
    since: Vec<Option<String>>,
    token_ok: bool,
}

#[derive(Clone)]
struct Fake {
    inner: Arc<Mutex<Inner>>,
}

impl Fake {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }
}

fn json_response(status: u16, body: String) -> Response {
    (
        StatusCode::from_u16(status).unwrap(),
        [("content-type", "application/json")],
        body,
    )
        .into_response()
}

async fn handler(State(fake): State<Fake>, method: Method, uri: Uri, body: String) -> Response {
    let path = uri.path().to_string();
    if !fake.lock().token_ok {
        return json_response(
            401,
            json!({"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed."})
                .to_string(),
        );
    }
    if path.ends_with("/account/whoami") {
        return json_response(200, json!({"user_id": "@hermes:fake"}).to_string());
    }
    if path.ends_with("/joined_members") {
        return json_response(
            200,
            json!({"joined": {"@alice:fake": {}, "@hermes:fake": {}}}).to_string(),
        );
    }
    if path.ends_with("/sync") {
        let since = uri.query().and_then(|q| {
            q.split('&')
                .find_map(|kv| kv.strip_prefix("since="))
                .map(str::to_owned)
        });
        let next = fake.lock().syncs.pop_front();
        fake.lock().since.push(since.clone());
        return match next {
            Some((status, body)) => json_response(status, body),
            None => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let token = since.unwrap_or_else(|| "s0".into());
                json_response(200, json!({"next_batch": token}).to_string())
            }
        };
    }
    if method == Method::PUT && path.contains("/send/") {
        let content: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let mut inner = fake.lock();
        inner.sends.push((path.clone(), content));
        if let Some((status, body)) = inner.send_failures.pop_front() {
            return json_response(status, body.to_string());
        }
        // The same transaction id gives the same event id (the spec's idempotency).
        let txn = path.rsplit('/').next().unwrap_or("").to_string();
        return json_response(200, json!({"event_id": format!("$ev-{txn}")}).to_string());
    }
    if path.contains("/typing/") {
        return json_response(200, "{}".into());
    }
    json_response(
        404,
        json!({"errcode": "M_UNRECOGNIZED", "error": "not scripted"}).to_string(),
    )
}

async fn start(fake: &Fake) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(handler).with_state(fake.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

fn settings(url: &str, h: &Harness) -> MatrixSettings {
    let mut s = MatrixSettings::new(url, "syt_fake_token");
    s.allowed_users = vec!["@alice:fake".into()];
    s.pair_strangers = false;
    s.state_file = Some(h.home.home().root().join("gateway/matrix_state.json"));
    s.media_dir = h.home.home().cache_dir().join("media");
    s.reconnect_base = Duration::from_millis(10);
    s.reconnect_max = Duration::from_millis(50);
    s.poll_timeout = Duration::from_millis(100);
    s
}

fn message(id: &str, body: Value) -> Value {
    json!({"type": "m.room.message", "sender": "@alice:fake", "event_id": id,
           "origin_server_ts": 1, "content": {"msgtype": "m.text", "body": body}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_syncs_and_events_are_skipped_and_a_rate_limited_send_is_stored_once() {
    let fake = Fake {
        inner: Arc::new(Mutex::new(Inner {
            token_ok: true,
            ..Default::default()
        })),
    };
    let batch = json!({
        "next_batch": "s2",
        "rooms": {"join": {ROOM: {"timeline": {"events": [
            {"no_type": true},
            {"type": "org.example.unknown", "sender": "@alice:fake", "event_id": "$u", "content": {}},
            message("$bad", json!(42)),
            message("$good", json!("hello")),
        ]}}}},
    });
    {
        let mut inner = fake.lock();
        inner
            .syncs
            .push_back((200, json!({"next_batch": "s1"}).to_string()));
        inner
            .syncs
            .push_back((502, "<html>bad gateway</html>".into()));
        inner.syncs.push_back((200, "this is not json".into()));
        inner.syncs.push_back((200, batch.to_string()));
        inner.send_failures.push_back((
            429,
            json!({"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests", "retry_after_ms": 150}),
        ));
    }
    let url = start(&fake).await;
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("Hi Alice."));
    let env = [(
        "MATRIX_ALLOWED_USERS".to_string(),
        "@alice:fake".to_string(),
    )]
    .into_iter()
    .collect();
    let config =
        GatewayConfig::from_config(&hermes_protocol::config::Config::default(), &env, None)
            .unwrap()
            .0;
    let adapter = Arc::new(MatrixAdapter::new(settings(&url, &h)).unwrap());
    let gw = Gateway::new(
        config,
        vec![adapter.clone() as Arc<dyn PlatformAdapter>],
        h.factory.clone(),
        h.store.clone(),
        h.home.home().clone(),
    );
    let cancel = CancellationToken::new();
    let (g, c) = (gw.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        let _ = g.run(c).await;
    });
    wait_until("the answer to be sent", || {
        fake.lock()
            .sends
            .iter()
            .any(|(_, b)| b["body"] == "Hi Alice.")
            && fake.lock().sends.len() >= 2
    })
    .await;
    // Let a few idle syncs pass: nothing more is sent.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sends = fake.lock().sends.clone();
    let answers: Vec<_> = sends
        .iter()
        .filter(|(_, b)| b["body"] == "Hi Alice.")
        .collect();
    assert_eq!(
        answers.len(),
        2,
        "the refused send and its retry: {sends:#?}"
    );
    assert_eq!(
        answers[0].0, answers[1].0,
        "the retry reuses the transaction id"
    );
    assert_eq!(
        answers[0].1["m.relates_to"]["m.in_reply_to"]["event_id"], "$good",
        "the answer replies to the message"
    );
    assert_eq!(
        h.mock.requests().len(),
        1,
        "only the good message reached the agent"
    );
    assert_eq!(
        common::request_users(&h.mock.requests()[0])
            .last()
            .map(String::as_str),
        Some("hello")
    );
    let since = fake.lock().since.clone();
    assert_eq!(since[0], None, "the first sync is an initial one");
    assert!(
        since.iter().filter(|s| s.as_deref() == Some("s1")).count() >= 3,
        "a failed sync is retried with the same token: {since:?}"
    );
    assert!(since.contains(&Some("s2".into())), "{since:?}");
    let state =
        std::fs::read_to_string(h.home.home().root().join("gateway/matrix_state.json")).unwrap();
    assert!(state.contains("\"s2\""), "{state}");
    cancel.cancel();
    gw.shutdown().await;
    let _ = task.await;
}

#[tokio::test]
async fn a_refused_token_stops_the_adapter_with_an_auth_error() {
    let fake = Fake {
        inner: Arc::new(Mutex::new(Inner::default())),
    };
    let url = start(&fake).await;
    let h = Harness::new().await;
    let adapter = MatrixAdapter::new(settings(&url, &h)).unwrap();
    let (tx, _rx) = tokio::sync::mpsc::channel(4);
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        adapter.run(tx, CancellationToken::new()),
    )
    .await
    .expect("run returns instead of retrying");
    let err = result.unwrap_err();
    assert!(matches!(err, PlatformError::Auth { .. }), "{err}");
    assert!(!err.to_string().contains("syt_fake_token"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_token_the_server_refuses_is_replaced_by_a_fresh_sync() {
    let fake = Fake {
        inner: Arc::new(Mutex::new(Inner {
            token_ok: true,
            ..Default::default()
        })),
    };
    let stale = json!({"errcode": "M_UNKNOWN", "error": "Invalid stream token"}).to_string();
    {
        let mut inner = fake.lock();
        for _ in 0..3 {
            inner.syncs.push_back((400, stale.clone()));
        }
        inner
            .syncs
            .push_back((200, json!({"next_batch": "fresh"}).to_string()));
        let batch = json!({"next_batch": "fresh2", "rooms": {"join": {ROOM: {"timeline": {"events": [
            message("$after", json!("are you back?")),
        ]}}}}});
        inner.syncs.push_back((200, batch.to_string()));
    }
    let url = start(&fake).await;
    let h = Harness::new().await;
    let state = h.home.home().root().join("gateway/matrix_state.json");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    std::fs::write(&state, r#"{"since": "stale-token"}"#).unwrap();
    let adapter = MatrixAdapter::new(settings(&url, &h)).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let task = tokio::spawn(async move { adapter.run(tx, c).await });
    let msg = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("the message after the fresh sync")
        .unwrap();
    assert_eq!(msg.text, "are you back?");
    let since = fake.lock().since.clone();
    assert_eq!(
        &since[..5],
        &[
            Some("stale-token".to_string()),
            Some("stale-token".to_string()),
            Some("stale-token".to_string()),
            None,
            Some("fresh".to_string()),
        ],
        "{since:?}"
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}
