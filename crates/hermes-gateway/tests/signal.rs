//! Signal adapter against a loopback fake of signal-cli's HTTP daemon (axum).
//!
//! Payload sources: signal-cli's `signal-cli-jsonrpc(5)` manual page (the HTTP endpoints
//! `/api/v1/rpc`, `/api/v1/events`, `/api/v1/check`; the `receive` notification
//! `{"envelope": {…}, "account": …}`; JSON-RPC error objects, code -5 for a rate limit) and
//! the envelope / `send` result JSON signal-cli prints in its `--output=json` mode
//! (`source`, `sourceNumber`, `sourceUuid`, `sourceName`, `timestamp`, `dataMessage` with
//! `message`, `groupInfo.groupId`, `mentions`, `attachments[].{id, contentType, filename,
//! size}`; `syncMessage.sentMessage`; `receiptMessage`; `typingMessage`; a send answers
//! `{"timestamp": …, "results": [{"recipientAddress": {…}, "type": "SUCCESS"}]}`).
#![cfg(feature = "signal")]
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use hermes_gateway::{
    AttachmentKind, ChatTarget, ChatType, InboundMessage, PlatformAdapter, PlatformError,
    SignalAdapter, SignalSettings,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const ACCOUNT: &str = "+15550001111";
const ALICE: &str = "+15552223333";
const GROUP: &str = "Z3JvdXAtb25l";
const HANG: Duration = Duration::from_secs(20);

type RpcHandler = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

#[derive(Clone)]
struct Daemon {
    rpc_calls: Arc<Mutex<Vec<Value>>>,
    streams: mpsc::UnboundedSender<(String, mpsc::UnboundedSender<Bytes>)>,
    healthy: Arc<Mutex<bool>>,
    handler: RpcHandler,
}

async fn check(State(d): State<Daemon>) -> StatusCode {
    if *d.healthy.lock().unwrap() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn events(State(d): State<Daemon>, RawQuery(q): RawQuery) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let _ = d.streams.send((q.unwrap_or_default(), tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

async fn rpc(State(d): State<Daemon>, body: Bytes) -> Response {
    let req: Value = serde_json::from_slice(&body).expect("JSON-RPC request");
    d.rpc_calls.lock().unwrap().push(req.clone());
    let mut answer = (d.handler)(&req);
    answer["jsonrpc"] = json!("2.0");
    answer["id"] = req["id"].clone();
    axum::Json(answer).into_response()
}

struct Harness {
    daemon: Daemon,
    streams: mpsc::UnboundedReceiver<(String, mpsc::UnboundedSender<Bytes>)>,
    adapter: Arc<SignalAdapter>,
    inbound: mpsc::Receiver<InboundMessage>,
    cancel: CancellationToken,
    media: tempfile::TempDir,
}

fn default_rpc(req: &Value) -> Value {
    match req["method"].as_str().unwrap_or_default() {
        "send" => json!({"result": {"timestamp": 1_700_000_009_000u64, "results": [
            {"recipientAddress": {"uuid": "a-uuid", "number": ALICE}, "type": "SUCCESS"}]}}),
        "sendTyping" => json!({"result": {}}),
        "getAttachment" => json!({"result": {"data":
            base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake image")}}),
        _ => json!({"error": {"code": -32601, "message": "Method not implemented"}}),
    }
}

async fn start(
    handler: impl Fn(&Value) -> Value + Send + Sync + 'static,
    groups: &[&str],
) -> Harness {
    let (stx, streams) = mpsc::unbounded_channel();
    let daemon = Daemon {
        rpc_calls: Arc::default(),
        streams: stx,
        healthy: Arc::new(Mutex::new(true)),
        handler: Arc::new(handler),
    };
    let app = axum::Router::new()
        .route("/api/v1/check", axum::routing::get(check))
        .route("/api/v1/events", axum::routing::get(events))
        .route("/api/v1/rpc", axum::routing::post(rpc))
        .with_state(daemon.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let media = tempfile::tempdir().unwrap();
    let mut settings = SignalSettings::new(url, ACCOUNT, media.path());
    settings.group_allowed = groups.iter().map(|g| g.to_string()).collect();
    settings.reconnect_initial = Duration::from_millis(10);
    settings.reconnect_max = Duration::from_millis(50);
    settings.max_attachment_bytes = 1000;
    let adapter = Arc::new(SignalAdapter::new(settings).unwrap());
    let (tx, inbound) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    tokio::spawn(async move { a.run(tx, c).await });
    Harness {
        daemon,
        streams,
        adapter,
        inbound,
        cancel,
        media,
    }
}

impl Harness {
    async fn stream(&mut self) -> (String, mpsc::UnboundedSender<Bytes>) {
        tokio::time::timeout(HANG, self.streams.recv())
            .await
            .expect("the adapter opened the event stream")
            .expect("daemon running")
    }

    async fn next(&mut self) -> InboundMessage {
        tokio::time::timeout(HANG, self.inbound.recv())
            .await
            .expect("an inbound message")
            .expect("adapter running")
    }

    fn calls(&self, method: &str) -> Vec<Value> {
        self.daemon
            .rpc_calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c["method"] == method)
            .cloned()
            .collect()
    }
}

/// One `receive` event as the daemon frames it.
fn event(envelope: Value) -> Bytes {
    let data = json!({"envelope": envelope, "account": ACCOUNT});
    Bytes::from(format!("event:receive\ndata:{data}\n\n"))
}

fn data_message(from: &str, ts: u64, message: Value) -> Value {
    json!({
        "source": from, "sourceNumber": from, "sourceUuid": "a-uuid", "sourceName": "Alice",
        "sourceDevice": 1, "timestamp": ts,
        "dataMessage": message,
    })
}

#[tokio::test]
async fn direct_and_group_messages_arrive_once_and_the_rest_is_skipped() {
    let mut h = start(default_rpc, &[GROUP]).await;
    let (query, tx) = h.stream().await;
    assert!(query.contains("account=%2B15550001111"), "{query}");
    // Keep-alive comments, a malformed event, receipts and typing notifications are skipped.
    tx.send(Bytes::from(":\n\n")).unwrap();
    tx.send(Bytes::from("data:{not json\n\n")).unwrap();
    tx.send(event(
        json!({"source": ALICE, "sourceNumber": ALICE, "timestamp": 1,
        "receiptMessage": {"when": 1, "isDelivery": true, "timestamps": [5]}}),
    ))
    .unwrap();
    tx.send(event(
        json!({"source": ALICE, "sourceNumber": ALICE, "timestamp": 2,
        "typingMessage": {"action": "STARTED", "timestamp": 2}}),
    ))
    .unwrap();
    tx.send(event(
        json!({"sourceNumber": null, "timestamp": 3, "dataMessage": {"message": "x"}}),
    ))
    .unwrap();
    // A direct message, split across two network reads in the middle of a character.
    let dm = event(data_message(
        ALICE,
        1_700_000_000_001,
        json!({
            "timestamp": 1_700_000_000_001u64, "message": "héllo 😀", "expiresInSeconds": 0,
            "viewOnce": false, "mentions": [], "attachments": []
        }),
    ));
    let cut = dm.iter().position(|b| *b == 0xC3).unwrap() + 1;
    tx.send(dm.slice(..cut)).unwrap();
    tx.send(dm.slice(cut..)).unwrap();
    // The same message again (a daemon replay) is not handed on twice.
    tx.send(dm.clone()).unwrap();
    let m = h.next().await;
    assert_eq!(m.source.platform, "signal");
    assert_eq!(m.source.chat_type, ChatType::Dm);
    assert_eq!(m.source.chat_id.as_deref(), Some(ALICE));
    assert_eq!(m.source.user_id.as_deref(), Some(ALICE));
    assert_eq!(m.source.user_name.as_deref(), Some("Alice"));
    assert_eq!(m.message_id.as_deref(), Some("1700000000001"));
    assert_eq!(m.text, "héllo 😀");

    // A group not listed, then a listed one whose mention of the bot is removed.
    tx.send(event(data_message(
        ALICE,
        1_700_000_000_002,
        json!({
            "message": "elsewhere", "groupInfo": {"groupId": "b3RoZXI=", "type": "DELIVER"}
        }),
    )))
    .unwrap();
    tx.send(event(data_message(ALICE, 1_700_000_000_003, json!({
        "message": "\u{FFFC} status? cc \u{FFFC}",
        "mentions": [{"name": ACCOUNT, "number": ACCOUNT, "uuid": "bot-uuid", "start": 0, "length": 1},
                     {"name": "+15559998888", "number": "+15559998888", "start": 13, "length": 1}],
        "groupInfo": {"groupId": GROUP, "type": "DELIVER"},
        "quote": {"id": 1_700_000_000_000u64, "author": ACCOUNT, "text": "earlier answer"}
    }))))
    .unwrap();
    let g = h.next().await;
    assert_eq!(g.source.chat_type, ChatType::Group);
    assert_eq!(
        g.source.chat_id.as_deref(),
        Some(&*format!("group:{GROUP}"))
    );
    assert_eq!(g.source.user_id.as_deref(), Some(ALICE));
    assert_eq!(g.text, "status? cc @+15559998888");
    assert_eq!(g.reply_to.as_deref(), Some("1700000000000"));
    assert_eq!(g.reply_to_text.as_deref(), Some("earlier answer"));

    // A "Note to Self" (the account's own sync) is read; an echo of a reply is not.
    let sent = h
        .adapter
        .send(
            &ChatTarget {
                chat_id: ACCOUNT.into(),
                thread_id: None,
                reply_to: None,
            },
            "pong",
        )
        .await
        .unwrap();
    let sync = |ts: u64, text: &str| {
        json!({
            "source": ACCOUNT, "sourceNumber": ACCOUNT, "timestamp": ts,
            "syncMessage": {"sentMessage": {"destination": ACCOUNT, "destinationNumber": ACCOUNT,
                "timestamp": ts, "message": text}}
        })
    };
    tx.send(event(sync(sent.message_id.parse().unwrap(), "pong")))
        .unwrap();
    tx.send(event(sync(1_700_000_000_010, "remember milk")))
        .unwrap();
    let note = h.next().await;
    assert_eq!(note.text, "remember milk");
    assert_eq!(note.source.user_id.as_deref(), Some(ACCOUNT));
    h.cancel.cancel();
}

#[tokio::test]
async fn attachments_are_fetched_and_oversized_ones_named() {
    let mut h = start(default_rpc, &[]).await;
    let (_, tx) = h.stream().await;
    tx.send(event(data_message(ALICE, 1_700_000_000_020, json!({
        "message": "", "attachments": [
            {"contentType": "image/png", "filename": "chart.png", "id": "att-1.png", "size": 15},
            {"contentType": "video/mp4", "filename": "big.mp4", "id": "att-2.mp4", "size": 5_000_000}
        ]
    }))))
    .unwrap();
    // A group message while no group is allowed (SIGNAL_GROUP_ALLOWED_USERS unset) is skipped.
    tx.send(event(data_message(
        ALICE,
        1_700_000_000_021,
        json!({
            "message": "in a group", "groupInfo": {"groupId": GROUP}
        }),
    )))
    .unwrap();
    tx.send(event(data_message(
        ALICE,
        1_700_000_000_022,
        json!({"message": "after"}),
    )))
    .unwrap();
    let m = h.next().await;
    assert_eq!(m.attachments.len(), 1);
    let a = &m.attachments[0];
    assert_eq!(a.kind, AttachmentKind::Image);
    assert_eq!(a.file_name.as_deref(), Some("chart.png"));
    assert!(a.path.starts_with(h.media.path()));
    assert_eq!(std::fs::read(&a.path).unwrap(), b"\x89PNG fake image");
    assert!(m.text.contains("big.mp4"), "{}", m.text);
    let fetches = h.calls("getAttachment");
    assert_eq!(fetches.len(), 1, "the oversized file is not fetched");
    assert_eq!(fetches[0]["params"]["id"], "att-1.png");
    assert_eq!(fetches[0]["params"]["account"], ACCOUNT);
    assert_eq!(h.next().await.text, "after");
    h.cancel.cancel();
}

#[tokio::test]
async fn replies_typing_and_files_go_out_as_json_rpc() {
    let mut h = start(default_rpc, &[GROUP]).await;
    let _stream = h.stream().await;
    let dm = ChatTarget {
        chat_id: ALICE.into(),
        thread_id: None,
        reply_to: Some("1".into()),
    };
    let group = ChatTarget {
        chat_id: format!("group:{GROUP}"),
        thread_id: None,
        reply_to: None,
    };
    let sent = h.adapter.send(&dm, "**Done**: see `log`").await.unwrap();
    assert_eq!(sent.message_id, "1700000009000");
    h.adapter.send(&group, "plain words").await.unwrap();
    h.adapter.typing(&group).await.unwrap();
    let file = h.media.path().join("report.txt");
    std::fs::write(&file, b"all good").unwrap();
    h.adapter
        .send_file(&dm, &file, Some("the report"))
        .await
        .unwrap();
    let sends = h.calls("send");
    assert_eq!(sends.len(), 3);
    let p = &sends[0]["params"];
    assert_eq!(p["account"], ACCOUNT);
    assert_eq!(p["recipient"], json!([ALICE]));
    assert_eq!(p["message"], "Done: see log");
    assert_eq!(p["textStyles"], json!(["0:4:BOLD", "10:3:MONOSPACE"]));
    let p = &sends[1]["params"];
    assert_eq!(p["groupId"], GROUP);
    assert!(p.get("recipient").is_none() && p.get("textStyle").is_none());
    let p = &sends[2]["params"];
    assert_eq!(p["message"], "the report");
    let uri = p["attachments"][0].as_str().unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(b"all good");
    assert_eq!(
        uri,
        format!("data:text/plain;filename=report.txt;base64,{b64}")
    );
    let typing = h.calls("sendTyping");
    assert_eq!(typing[0]["params"]["groupId"], GROUP);
    // Signal has no edits to stream into; oversized files are refused before any call.
    let e = h.adapter.edit(&dm, &sent, "x").await.unwrap_err();
    assert!(matches!(e, PlatformError::Unsupported { .. }));
    std::fs::write(&file, vec![b'x'; 2000]).unwrap();
    let e = h.adapter.send_file(&dm, &file, None).await.unwrap_err();
    assert!(matches!(e, PlatformError::Rejected { .. }), "{e}");
    assert_eq!(h.calls("send").len(), 3);
    let limits = h.adapter.limits();
    assert_eq!(limits.max_message_len, 8000);
    assert!(!limits.supports_edit);
    h.cancel.cancel();
}

#[tokio::test]
async fn a_rate_limited_send_waits_the_named_time_and_goes_out_once() {
    let tries = Arc::new(Mutex::new(0));
    let t = tries.clone();
    let mut h = start(
        move |req| {
            if req["method"] == "send" && req["params"]["recipient"][0] == "+15554445555" {
                return json!({"error": {"code": -5, "message": "Failed to send message due to rate limiting",
                    "data": {"response": {"timestamp": 1, "results": [
                        {"recipientAddress": {"number": "+15554445555"}, "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 3600}]}}}});
            }
            if req["method"] == "send" {
                let mut n = t.lock().unwrap();
                *n += 1;
                if *n == 1 {
                    return json!({"error": {"code": -5, "message": "Failed to send message due to rate limiting",
                        "data": {"response": {"timestamp": 1, "results": [
                            {"recipientAddress": {"number": ALICE}, "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 1}]}}}});
                }
            }
            default_rpc(req)
        },
        &[],
    )
    .await;
    let _stream = h.stream().await;
    let dm = ChatTarget {
        chat_id: ALICE.into(),
        thread_id: None,
        reply_to: None,
    };
    h.adapter.send(&dm, "hello").await.unwrap();
    assert_eq!(
        h.calls("send").len(),
        2,
        "one refused try, one that went out"
    );
    // A wait longer than the adapter will sit through is the caller's to handle.
    let far = ChatTarget {
        chat_id: "+15554445555".into(),
        thread_id: None,
        reply_to: None,
    };
    let e = h.adapter.send(&far, "hello").await.unwrap_err();
    assert!(
        matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(3600)),
        "{e}"
    );
    assert_eq!(h.calls("send").len(), 3);
    h.cancel.cancel();
}

#[tokio::test]
async fn a_dropped_stream_and_a_daemon_that_is_down_are_retried() {
    let mut h = start(default_rpc, &[]).await;
    let (_, tx) = h.stream().await;
    tokio::time::timeout(HANG, async {
        while !h.adapter.is_connected() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("connected");
    *h.daemon.healthy.lock().unwrap() = false;
    drop(tx);
    // The daemon refuses health checks for a while; once it is back, the stream reopens.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        h.streams.try_recv().is_err(),
        "no stream while the daemon is down"
    );
    *h.daemon.healthy.lock().unwrap() = true;
    let (_, tx) = h.stream().await;
    tx.send(event(data_message(
        ALICE,
        1_700_000_000_030,
        json!({"message": "still there?"}),
    )))
    .unwrap();
    assert_eq!(h.next().await.text, "still there?");
    // The stream closed mid-event: the half event is dropped, nothing is handed on twice.
    tx.send(Bytes::from("data:{\"envelope\":")).unwrap();
    drop(tx);
    let (_, tx) = h.stream().await;
    tx.send(event(data_message(
        ALICE,
        1_700_000_000_030,
        json!({"message": "still there?"}),
    )))
    .unwrap();
    tx.send(event(data_message(
        ALICE,
        1_700_000_000_031,
        json!({"message": "yes"}),
    )))
    .unwrap();
    assert_eq!(h.next().await.text, "yes");
    h.cancel.cancel();
}
