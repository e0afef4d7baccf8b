//! WhatsApp Cloud API adapter against a loopback fake of Meta's Graph API (axum), with
//! webhook requests signed as Meta signs them, alone and behind the gateway core with the
//! mock model.
//!
//! Payload sources (Meta for Developers): "Webhooks — messages" reference and its payload
//! examples (text, image, status `failed` with error 131047), "Getting started with webhooks"
//! (the `hub.mode` / `hub.verify_token` / `hub.challenge` verification request), Cloud API
//! "Messages" (send answer `{"messaging_product", "contacts", "messages": [{"id"}]}`),
//! "Media" (upload answer `{"id"}`, retrieve answer `{"url", "mime_type", "sha256",
//! "file_size", "id"}`), "Error codes" (131047 re-engagement, 130429 throughput).
#![cfg(feature = "whatsapp")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Harness, open_config, wait_until};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::platforms::whatsapp::{SIGNATURE_HEADER, sign};
use hermes_gateway::{
    AttachmentKind, ChatTarget, Gateway, InboundMessage, PlatformAdapter, PlatformError,
    WhatsAppAdapter, WhatsAppSettings,
};
use hermes_testkit::MockResponse;
use serde_json::{Value, json};
use support::{HttpFake, Recorded, ok_json, status_json, within};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PHONE: &str = "PN1";
const TOKEN: &str = "wa-token";
const APP_SECRET: &str = "wa-app-secret";
const VERIFY: &str = "wa-verify";
const USER: &str = "491701234567";

fn graph_fake(base: Arc<Mutex<String>>) -> impl Fn(&Recorded) -> support::Answer + Send + Sync {
    let sent = AtomicU32::new(0);
    let once = AtomicU32::new(0);
    move |r: &Recorded| {
        if r.header("authorization").as_deref() != Some(&format!("Bearer {TOKEN}")) {
            return status_json(
                401,
                json!({"error": {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}}),
            );
        }
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/v20.0/PN1/messages") => {
                let body = r.json();
                if body["status"] == "read" {
                    return ok_json(json!({"success": true}));
                }
                match body["to"].as_str().unwrap_or_default() {
                    "4900429" if once.fetch_add(1, Ordering::SeqCst) == 0 => (
                        axum::http::StatusCode::TOO_MANY_REQUESTS,
                        vec![("retry-after".into(), "1".into())],
                        br#"{"error":{"message":"(#130429) Rate limit hit","code":130429}}"#
                            .to_vec(),
                    ),
                    "4900430" => status_json(
                        400,
                        json!({"error": {"message": "(#130429) Rate limit hit", "type": "OAuthException", "code": 130429}}),
                    ),
                    "4931047" => status_json(
                        400,
                        json!({"error": {"message": "(#131047) Re-engagement message", "type": "OAuthException", "code": 131047,
                        "error_data": {"messaging_product": "whatsapp", "details": "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}, "fbtrace_id": "A1"}}),
                    ),
                    to => {
                        let n = sent.fetch_add(1, Ordering::SeqCst);
                        ok_json(
                            json!({"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}], "messages": [{"id": format!("wamid.OUT{n}")}]}),
                        )
                    }
                }
            }
            ("POST", "/v20.0/PN1/media") => ok_json(json!({"id": "UPLOADED.1"})),
            ("GET", "/v20.0/MEDIA.1") => ok_json(json!({
                "messaging_product": "whatsapp",
                "url": format!("{}/lookaside/MEDIA.1", base.lock().unwrap()),
                "mime_type": "image/jpeg", "sha256": "abc", "file_size": 5, "id": "MEDIA.1"})),
            ("GET", "/lookaside/MEDIA.1") => {
                (axum::http::StatusCode::OK, vec![], b"JPEG!".to_vec())
            }
            _ => status_json(
                404,
                json!({"error": {"message": "Unknown path", "code": 100}}),
            ),
        }
    }
}

struct Wa {
    graph: HttpFake,
    adapter: Arc<WhatsAppAdapter>,
    url: String,
    dir: Arc<tempfile::TempDir>,
}

async fn wa_in(dir: Arc<tempfile::TempDir>) -> Wa {
    let base = Arc::new(Mutex::new(String::new()));
    let graph = HttpFake::start(graph_fake(base.clone())).await;
    *base.lock().unwrap() = graph.url.clone();
    let mut s = WhatsAppSettings::new(PHONE, TOKEN, dir.path().join("media"));
    s.app_secret = APP_SECRET.into();
    s.verify_token = VERIFY.into();
    s.api_base_url = graph.url.clone();
    s.bind = ([127, 0, 0, 1], 0).into();
    s.window_file = Some(dir.path().join("gateway").join("whatsapp_windows.json"));
    s.retry_max = Duration::from_millis(50);
    let adapter = Arc::new(WhatsAppAdapter::bind(s).unwrap());
    let url = format!(
        "http://{}/whatsapp/webhook",
        adapter.webhook_addr().unwrap()
    );
    Wa {
        graph,
        adapter,
        url,
        dir,
    }
}

async fn wa() -> Wa {
    wa_in(Arc::new(tempfile::tempdir().unwrap())).await
}

fn run_alone(
    adapter: &Arc<WhatsAppAdapter>,
) -> (mpsc::Receiver<InboundMessage>, CancellationToken) {
    let (tx, rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    tokio::spawn(async move { a.run(tx, c).await });
    (rx, cancel)
}

/// A `messages` notification as Meta sends it (payload examples, "Text messages").
fn notification(messages: Value) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA1", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": PHONE},
        "contacts": [{"profile": {"name": "Ann"}, "wa_id": USER}],
        "messages": messages}}]}]})
}

fn text(from: &str, wamid: &str, ts: i64, body: &str) -> Value {
    json!({"from": from, "id": wamid, "timestamp": ts.to_string(), "type": "text", "text": {"body": body}})
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

async fn post(url: &str, body: &Value, signature: Option<String>) -> u16 {
    let body = body.to_string();
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json");
    if let Some(s) = signature {
        req = req.header(SIGNATURE_HEADER, s);
    }
    within("the webhook answer", req.body(body).send())
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn deliver(url: &str, body: &Value) -> u16 {
    post(
        url,
        body,
        Some(sign(APP_SECRET, body.to_string().as_bytes())),
    )
    .await
}

fn sent_texts(graph: &HttpFake, to: &str) -> Vec<Value> {
    graph
        .requests_to("/v20.0/PN1/messages")
        .iter()
        .map(Recorded::json)
        .filter(|b| b["to"] == to && b["type"] == "text")
        .collect()
}

fn target(chat: &str) -> ChatTarget {
    ChatTarget {
        chat_id: chat.into(),
        thread_id: None,
        reply_to: None,
    }
}

#[tokio::test]
async fn the_verification_handshake_echoes_the_challenge_only_for_the_right_token() {
    let w = wa().await;
    let (_rx, cancel) = run_alone(&w.adapter);
    let get = |q: &str| {
        let url = format!("{}?{q}", w.url);
        async move {
            let r = within("the handshake", reqwest::get(url)).await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(
        get("hub.mode=subscribe&hub.verify_token=wa-verify&hub.challenge=1158201444").await,
        (200, "1158201444".into())
    );
    assert_eq!(
        get("hub.mode=subscribe&hub.verify_token=guess&hub.challenge=1")
            .await
            .0,
        403
    );
    assert_eq!(
        get("hub.mode=unsubscribe&hub.verify_token=wa-verify&hub.challenge=1")
            .await
            .0,
        400
    );
    assert_eq!(
        get("hub.mode=subscribe&hub.verify_token=wa-verify").await.0,
        400
    );
    cancel.cancel();
}

#[tokio::test]
async fn signed_messages_arrive_once_and_bad_signatures_or_bodies_are_refused() {
    let w = wa().await;
    let (mut rx, cancel) = run_alone(&w.adapter);
    let body = notification(json!([text(USER, "wamid.IN1", now(), "hello")]));
    assert_eq!(post(&w.url, &body, None).await, 401);
    assert_eq!(
        post(
            &w.url,
            &body,
            Some(sign("another-secret", body.to_string().as_bytes()))
        )
        .await,
        401
    );
    let tampered = sign(
        APP_SECRET,
        body.to_string().replace("hello", "hellp").as_bytes(),
    );
    assert_eq!(post(&w.url, &body, Some(tampered)).await, 401);
    let junk = json!("not an object");
    assert_eq!(deliver(&w.url, &junk).await, 400);
    assert!(
        rx.try_recv().is_err(),
        "nothing refused reaches the gateway"
    );

    assert_eq!(deliver(&w.url, &body).await, 200);
    let msg = within("the message", rx.recv()).await.unwrap();
    assert_eq!(msg.source.platform, "whatsapp_cloud");
    assert_eq!(msg.source.chat_id.as_deref(), Some(USER));
    assert_eq!(msg.source.user_id.as_deref(), Some(USER));
    assert_eq!(msg.source.user_name.as_deref(), Some("Ann"));
    assert_eq!(msg.message_id.as_deref(), Some("wamid.IN1"));
    assert_eq!(msg.text, "hello");
    // Meta redelivers (no 200 seen, or a retry): the same wamid is not forwarded again.
    assert_eq!(deliver(&w.url, &body).await, 200);
    // Unknown message types and other fields are answered 200 and skipped.
    let odd = notification(
        json!([{"from": USER, "id": "wamid.IN2", "timestamp": "1", "type": "reaction", "reaction": {"message_id": "wamid.IN1", "emoji": "👍"}}]),
    );
    assert_eq!(deliver(&w.url, &odd).await, 200);
    let next = notification(json!([text(USER, "wamid.IN3", now(), "second")]));
    assert_eq!(deliver(&w.url, &next).await, 200);
    assert_eq!(
        within("the next message", rx.recv()).await.unwrap().text,
        "second"
    );
    cancel.cancel();
}

#[tokio::test]
async fn inbound_media_is_fetched_with_the_token_and_files_go_out_uploaded() {
    let w = wa().await;
    let (mut rx, cancel) = run_alone(&w.adapter);
    let image = json!({"from": USER, "id": "wamid.IMG", "timestamp": now().to_string(), "type": "image",
        "image": {"caption": "look", "mime_type": "image/jpeg", "sha256": "abc", "id": "MEDIA.1"}});
    assert_eq!(deliver(&w.url, &notification(json!([image]))).await, 200);
    let msg = within("the image", rx.recv()).await.unwrap();
    assert_eq!(msg.text, "look");
    assert_eq!(msg.attachments.len(), 1, "{msg:?}");
    let a = &msg.attachments[0];
    assert_eq!(a.kind, AttachmentKind::Image);
    assert_eq!(std::fs::read(&a.path).unwrap(), b"JPEG!");
    assert!(
        a.path
            .starts_with(w.dir.path().join("media").join("whatsapp_cloud"))
    );
    let download = w.graph.requests_to("/lookaside/MEDIA.1");
    assert_eq!(
        download[0].header("authorization").as_deref(),
        Some("Bearer wa-token")
    );

    let file = w.dir.path().join("report.pdf");
    std::fs::write(&file, b"%PDF-1.4").unwrap();
    let sent = w
        .adapter
        .send_file(&target(USER), &file, Some("the report"))
        .await
        .unwrap();
    assert_eq!(sent.message_id, "wamid.OUT0");
    let upload = &w.graph.requests_to("/v20.0/PN1/media")[0];
    let form = upload.text();
    assert!(
        form.contains("name=\"messaging_product\"") && form.contains("whatsapp"),
        "{form}"
    );
    assert!(
        form.contains("application/pdf") && form.contains("%PDF-1.4"),
        "{form}"
    );
    let message = w
        .graph
        .requests_to("/v20.0/PN1/messages")
        .last()
        .unwrap()
        .json();
    assert_eq!(message["type"], "document");
    assert_eq!(
        message["document"],
        json!({"id": "UPLOADED.1", "caption": "the report", "filename": "report.pdf"})
    );
    cancel.cancel();
}

#[tokio::test]
async fn outside_the_24_hour_window_a_reply_fails_clearly_also_after_a_restart() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let w = wa_in(dir.clone()).await;
    let (mut rx, cancel) = run_alone(&w.adapter);
    // A message sent 25 hours ago, delivered late (Meta retries for up to 7 days).
    let old = notification(json!([text(
        USER,
        "wamid.OLD",
        now() - 25 * 3600,
        "are you there?"
    )]));
    assert_eq!(deliver(&w.url, &old).await, 200);
    within("the late message", rx.recv()).await.unwrap();
    let err = w.adapter.send(&target(USER), "yes").await.unwrap_err();
    assert!(matches!(err, PlatformError::Rejected { .. }), "{err:?}");
    assert!(
        err.to_string().contains("24-hour customer service window"),
        "{err}"
    );
    assert!(
        sent_texts(&w.graph, USER).is_empty(),
        "nothing was sent to Meta"
    );
    cancel.cancel();

    // The window state is kept: a new adapter on the same home refuses the same way.
    let again = wa_in(dir.clone()).await;
    let err = again
        .adapter
        .send(&target(USER), "still there?")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("window"), "{err}");
    assert!(sent_texts(&again.graph, USER).is_empty());
    let (mut rx, cancel) = run_alone(&again.adapter);
    // The user writes again: the window opens.
    assert_eq!(
        deliver(
            &again.url,
            &notification(json!([text(USER, "wamid.NEW", now(), "hi")]))
        )
        .await,
        200
    );
    within("the new message", rx.recv()).await.unwrap();
    again
        .adapter
        .send(&target(USER), "hello again")
        .await
        .unwrap();
    assert_eq!(sent_texts(&again.graph, USER).len(), 1);

    // Meta's own verdict, on the send (131047) or later in a `failed` status, closes it too.
    let err = again
        .adapter
        .send(&target("4931047"), "hi")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("24-hour"), "{err}");
    let calls = again.graph.requests_to("/v20.0/PN1/messages").len();
    assert!(again.adapter.send(&target("4931047"), "hi").await.is_err());
    assert_eq!(
        again.graph.requests_to("/v20.0/PN1/messages").len(),
        calls,
        "known closed: no call"
    );
    let status = json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA1", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550001111", "phone_number_id": PHONE},
        "statuses": [{"id": "wamid.OUT0", "status": "failed", "timestamp": now().to_string(), "recipient_id": USER,
            "errors": [{"code": 131047, "title": "Re-engagement message", "message": "Re-engagement message",
                "error_data": {"details": "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}}]}]}}]}]});
    assert_eq!(deliver(&again.url, &status).await, 200);
    assert!(
        again
            .adapter
            .send(&target(USER), "late")
            .await
            .unwrap_err()
            .to_string()
            .contains("window")
    );
    cancel.cancel();
}

#[tokio::test]
async fn throttling_is_retried_after_the_hint_and_reported_when_it_persists() {
    let w = wa().await;
    let sent = w.adapter.send(&target("4900429"), "hi").await.unwrap();
    assert_eq!(sent.message_id, "wamid.OUT0");
    let tries: Vec<Value> = w
        .graph
        .requests_to("/v20.0/PN1/messages")
        .iter()
        .map(Recorded::json)
        .collect();
    assert_eq!(tries.len(), 2, "one 429, one retry, nothing sent twice");
    let err = w.adapter.send(&target("4900430"), "hi").await.unwrap_err();
    assert!(matches!(err, PlatformError::RateLimited { .. }), "{err:?}");
    assert_eq!(
        sent_texts(&w.graph, "4900430").len(),
        4,
        "send_attempts tries"
    );
}

struct Served {
    gw: Gateway,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    async fn stop(self) {
        self.cancel.cancel();
        within("the gateway to stop", self.task).await.unwrap();
    }
}

fn serve(h: &Harness, config: GatewayConfig, adapter: Arc<WhatsAppAdapter>) -> Served {
    let gw = Gateway::new(
        config,
        vec![adapter as Arc<dyn PlatformAdapter>],
        h.factory.clone(),
        h.store.clone(),
        h.home.home().clone(),
    );
    let cancel = CancellationToken::new();
    let (g, c) = (gw.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        let _ = g.run(c).await;
    });
    Served { gw, cancel, task }
}

fn allow(users: &str) -> GatewayConfig {
    let env = [(
        "WHATSAPP_CLOUD_ALLOWED_USERS".to_string(),
        users.to_string(),
    )]
    .into_iter()
    .collect();
    GatewayConfig::from_config(&hermes_protocol::config::Config::default(), &env, None)
        .unwrap()
        .0
}

#[tokio::test]
async fn a_long_reply_arrives_in_parts_within_4096_and_a_restart_replays_nothing() {
    let h = Harness::new().await;
    let long = "Ünïcödé words 😀 and more. ".repeat(400);
    h.mock.push(MockResponse::text(&long));
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let w = wa_in(dir.clone()).await;
    let served = serve(&h, open_config("whatsapp_cloud"), w.adapter.clone());
    let body = notification(json!([text(USER, "wamid.Q1", now(), "tell me a lot")]));
    assert_eq!(deliver(&w.url, &body).await, 200);
    wait_until("the reply parts", || sent_texts(&w.graph, USER).len() >= 3).await;
    common::idle(&served.gw).await;
    let parts = sent_texts(&w.graph, USER);
    for p in &parts {
        let t = p["text"]["body"].as_str().unwrap();
        assert!(
            t.encode_utf16().count() <= 4096,
            "{} units",
            t.encode_utf16().count()
        );
    }
    assert_eq!(
        parts[0]["context"]["message_id"], "wamid.Q1",
        "the first part quotes the question"
    );
    assert!(parts[1..].iter().all(|p| p.get("context").is_none()));
    let joined: String = parts
        .iter()
        .map(|p| p["text"]["body"].as_str().unwrap())
        .collect();
    assert_eq!(joined.matches('😀').count(), 400, "no emoji lost or cut");
    served.stop().await;

    // Restart on the same home and store: Meta redelivers the message; it is not run again.
    let again = wa_in(dir).await;
    let served = serve(&h, open_config("whatsapp_cloud"), again.adapter.clone());
    assert_eq!(deliver(&again.url, &body).await, 200);
    common::idle(&served.gw).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        h.user_texts(&format!("agent:main:whatsapp_cloud:dm:{USER}")),
        vec!["tell me a lot"]
    );
    assert!(
        sent_texts(&again.graph, USER).is_empty(),
        "nothing answered twice"
    );
    served.stop().await;
}

#[tokio::test]
async fn strangers_are_paired_without_an_allowlist_and_ignored_with_one() {
    let h = Harness::new().await;
    let w = wa().await;
    let served = serve(&h, GatewayConfig::default(), w.adapter.clone());
    assert_eq!(
        deliver(
            &w.url,
            &notification(json!([text(USER, "wamid.S1", now(), "hi")]))
        )
        .await,
        200
    );
    wait_until("the pairing reply", || {
        !sent_texts(&w.graph, USER).is_empty()
    })
    .await;
    let reply = sent_texts(&w.graph, USER)[0]["text"]["body"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reply.contains("hermes pairing approve whatsapp_cloud"),
        "{reply}"
    );
    common::idle(&served.gw).await;
    assert_eq!(h.builds(), 0, "a stranger never reaches an agent");
    served.stop().await;

    let w = wa().await;
    let served = serve(&h, allow("+49 170 1234000"), w.adapter.clone());
    assert_eq!(
        deliver(
            &w.url,
            &notification(json!([text(USER, "wamid.S2", now(), "hi")]))
        )
        .await,
        200
    );
    common::idle(&served.gw).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        sent_texts(&w.graph, USER).is_empty(),
        "no reply and no code with an allowlist"
    );
    assert_eq!(h.builds(), 0);
    served.stop().await;
    // The allowlist is compared by digits, as Python normalises it: `+49 170 1234567` allows USER.
    assert_eq!(
        allow("+49 170 1234567")
            .access("whatsapp_cloud")
            .allowed_users,
        vec![USER]
    );
}

#[tokio::test]
async fn a_cron_delivery_outside_the_window_fails_with_the_window_named() {
    let w = wa().await;
    let (mut rx, cancel) = run_alone(&w.adapter);
    let old = notification(json!([text(
        USER,
        "wamid.C1",
        now() - 30 * 3600,
        "remind me"
    )]));
    assert_eq!(deliver(&w.url, &old).await, 200);
    within("the message", rx.recv()).await.unwrap();
    let homes = [(
        "whatsapp_cloud".to_string(),
        ChatTarget {
            chat_id: USER.into(),
            thread_id: None,
            reply_to: None,
        },
    )]
    .into_iter()
    .collect();
    let outbox =
        hermes_gateway::Outbox::new(&[w.adapter.clone() as Arc<dyn PlatformAdapter>], homes);
    let err = outbox
        .send("whatsapp_cloud", None, "Your daily report")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("24-hour customer service window"),
        "{err}"
    );
    assert!(sent_texts(&w.graph, USER).is_empty());
    cancel.cancel();
}

#[tokio::test]
async fn read_receipts_mark_the_question_read_and_can_be_turned_off() {
    let w = wa().await;
    let (mut rx, cancel) = run_alone(&w.adapter);
    assert_eq!(
        deliver(
            &w.url,
            &notification(json!([text(USER, "wamid.R1", now(), "hi")]))
        )
        .await,
        200
    );
    within("the message", rx.recv()).await.unwrap();
    w.adapter.typing(&target(USER)).await.unwrap();
    let receipts: Vec<Value> = w
        .graph
        .requests_to("/v20.0/PN1/messages")
        .iter()
        .map(Recorded::json)
        .collect();
    assert_eq!(
        receipts,
        vec![
            json!({"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.R1", "typing_indicator": {"type": "text"}})
        ]
    );
    // Unknown chats send nothing.
    w.adapter.typing(&target("4900000")).await.unwrap();
    assert_eq!(w.graph.requests_to("/v20.0/PN1/messages").len(), 1);
    cancel.cancel();

    let dir = Arc::new(tempfile::tempdir().unwrap());
    let base = Arc::new(Mutex::new(String::new()));
    let graph = HttpFake::start(graph_fake(base)).await;
    let mut s = WhatsAppSettings::new(PHONE, TOKEN, dir.path().join("media"));
    s.app_secret = APP_SECRET.into();
    s.api_base_url = graph.url.clone();
    s.bind = ([127, 0, 0, 1], 0).into();
    s.read_receipts = false;
    let quiet = Arc::new(WhatsAppAdapter::bind(s).unwrap());
    let url = format!("http://{}/whatsapp/webhook", quiet.webhook_addr().unwrap());
    let (mut rx, cancel) = run_alone(&quiet);
    assert_eq!(
        deliver(
            &url,
            &notification(json!([text(USER, "wamid.R2", now(), "hi")]))
        )
        .await,
        200
    );
    within("the message", rx.recv()).await.unwrap();
    quiet.typing(&target(USER)).await.unwrap();
    assert!(
        graph.requests().is_empty(),
        "no receipt with WHATSAPP_CLOUD_READ_RECEIPTS=false"
    );
    cancel.cancel();
}

#[tokio::test]
async fn foreign_hosts_and_oversized_bodies_are_refused_before_the_signature() {
    let w = wa().await;
    let (mut rx, cancel) = run_alone(&w.adapter);
    let body = notification(json!([text(USER, "wamid.H1", now(), "hi")])).to_string();
    let foreign = reqwest::Client::new()
        .post(&w.url)
        .header("host", "evil.example")
        .header(SIGNATURE_HEADER, sign(APP_SECRET, body.as_bytes()))
        .body(body.clone())
        .send();
    assert_eq!(
        within("the answer", foreign)
            .await
            .unwrap()
            .status()
            .as_u16(),
        421
    );
    let big = "x".repeat(3 * 1024 * 1024 + 1);
    let oversized = reqwest::Client::new()
        .post(&w.url)
        .header(SIGNATURE_HEADER, sign(APP_SECRET, big.as_bytes()))
        .body(big)
        .send();
    assert_eq!(
        within("the answer", oversized)
            .await
            .unwrap()
            .status()
            .as_u16(),
        413
    );
    assert!(rx.try_recv().is_err());
    cancel.cancel();
}
