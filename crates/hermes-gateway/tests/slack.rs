//! Slack adapter against a loopback fake of the Web API (axum) and Socket Mode (websocket).
#![cfg(feature = "slack")]
#![allow(clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hermes_gateway::{
    ChatTarget, ChatType, InboundMessage, PlatformAdapter, PlatformError, SentMessage,
    SlackAdapter, SlackSettings,
};
use serde_json::{Value, json};
use support::{HttpFake, Reaction, Recorded, WsServer, ok_json, status_json, within};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const BOT: &str = "xoxb-good";
const APP: &str = "xapp-good";

fn forward_all(_: &Value) -> Reaction {
    Reaction {
        reply: None,
        forward: true,
    }
}

fn form_field(body: &str, key: &str) -> Option<String> {
    body.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| {
            let v = v.replace('+', " ");
            let mut out = Vec::new();
            let b = v.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'%'
                    && i + 2 < b.len()
                    && let Ok(x) = u8::from_str_radix(&v[i + 1..i + 3], 16)
                {
                    out.push(x);
                    i += 3;
                    continue;
                }
                out.push(b[i]);
                i += 1;
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    })
}

fn web_handler(
    ws_url: String,
    base: Arc<std::sync::Mutex<String>>,
) -> impl Fn(&Recorded) -> support::Answer + Send + Sync {
    let ts = AtomicU64::new(100);
    move |r: &Recorded| {
        let auth = r.header("authorization").unwrap_or_default();
        let bad = || ok_json(json!({"ok": false, "error": "invalid_auth"}));
        match r.path.as_str() {
            "/apps.connections.open" => {
                if auth != format!("Bearer {APP}") {
                    return bad();
                }
                ok_json(json!({"ok": true, "url": ws_url}))
            }
            p if auth != format!("Bearer {BOT}") && !p.starts_with("/upload/") => bad(),
            "/auth.test" => ok_json(json!({"ok": true, "user_id": "UBOT", "team_id": "T1"})),
            "/users.info" => match form_field(&r.text(), "user").as_deref() {
                Some("U42") => ok_json(json!({"ok": true, "user": {"id": "U42", "name": "ann",
                    "profile": {"display_name": "Ann", "real_name": "Ann Lee"}}})),
                Some("U43") => ok_json(json!({"ok": true, "user": {"id": "U43", "name": "bob",
                    "profile": {"display_name": "", "real_name": ""}}})),
                _ => ok_json(json!({"ok": false, "error": "user_not_found"})),
            },
            "/chat.postMessage" => {
                let body = r.json();
                match body["channel"].as_str() {
                    Some("C-429") => (
                        axum::http::StatusCode::TOO_MANY_REQUESTS,
                        vec![("retry-after".into(), "3".into())],
                        vec![],
                    ),
                    Some("C-limited") => ok_json(json!({"ok": false, "error": "ratelimited"})),
                    Some("C-gone") => ok_json(json!({"ok": false, "error": "channel_not_found"})),
                    Some(c) => {
                        let n = ts.fetch_add(1, Ordering::SeqCst);
                        ok_json(json!({"ok": true, "channel": c, "ts": format!("1700.{n}")}))
                    }
                    None => ok_json(json!({"ok": false, "error": "channel_not_found"})),
                }
            }
            "/chat.update" => ok_json(json!({"ok": true, "ts": r.json()["ts"]})),
            "/files.getUploadURLExternal" => ok_json(json!({
                "ok": true,
                "upload_url": format!("{}/upload/F1", base.lock().expect("lock")),
                "file_id": "F1",
            })),
            "/upload/F1" => (axum::http::StatusCode::OK, vec![], b"OK - 16".to_vec()),
            "/files.completeUploadExternal" => {
                ok_json(json!({"ok": true, "files": [{"id": "F1"}]}))
            }
            "/files/notes.txt" => (axum::http::StatusCode::OK, vec![], b"NOTES".to_vec()),
            _ => status_json(404, json!({"ok": false, "error": "unknown_method"})),
        }
    }
}

struct Harness {
    ws: WsServer,
    web: HttpFake,
    adapter: Arc<SlackAdapter>,
    inbound: mpsc::Receiver<InboundMessage>,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), PlatformError>>,
    media: tempfile::TempDir,
}

async fn start(bot: &str, app: &str, ping: Duration) -> Harness {
    let ws = WsServer::start(forward_all).await;
    let base = Arc::new(std::sync::Mutex::new(String::new()));
    let web = HttpFake::start(web_handler(ws.url.clone(), base.clone())).await;
    *base.lock().expect("lock") = web.url.clone();
    let media = tempfile::tempdir().expect("tempdir");
    let mut settings = SlackSettings::new(bot, app, media.path());
    settings.api_base_url = web.url.clone();
    settings.reconnect_initial = Duration::from_millis(10);
    settings.reconnect_max = Duration::from_millis(50);
    settings.ping_interval = ping;
    let adapter = Arc::new(SlackAdapter::new(settings).expect("adapter"));
    let (tx, inbound) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    let run = tokio::spawn(async move { a.run(tx, c).await });
    Harness {
        ws,
        web,
        adapter,
        inbound,
        cancel,
        run,
        media,
    }
}

fn envelope(id: &str, event: Value) -> Value {
    json!({
        "envelope_id": id,
        "type": "events_api",
        "accepts_response_payload": false,
        "retry_attempt": 0,
        "payload": {"type": "event_callback", "team_id": "T1", "event_id": format!("Ev{id}"), "event": event},
    })
}

fn im(user: &str, ts: &str, text: &str) -> Value {
    json!({"type": "message", "channel": "D1", "channel_type": "im", "user": user, "ts": ts, "text": text})
}

impl Harness {
    async fn next(&mut self) -> InboundMessage {
        within("an inbound message", self.inbound.recv())
            .await
            .expect("adapter running")
    }

    async fn hello(&mut self) -> support::FakeConn {
        let conn = self.ws.next_conn().await;
        conn.send(json!({"type": "hello", "num_connections": 1}));
        conn
    }
}

const LONG: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn events_arrive_as_messages_every_envelope_is_acked_and_bot_messages_are_skipped() {
    let mut h = start(BOT, APP, LONG).await;
    let mut conn = h.hello().await;

    // Malformed input and unknown envelope types are skipped; the unknown one is acked.
    conn.send_raw("{not json");
    conn.send(json!({"envelope_id": "e0", "type": "slash_commands", "payload": {}}));
    assert_eq!(conn.recv().await, json!({"envelope_id": "e0"}));
    conn.send(envelope("e1", im("U42", "1.1", "hello &amp; welcome")));
    assert_eq!(conn.recv().await, json!({"envelope_id": "e1"}));
    let dm = h.next().await;
    assert_eq!(dm.source.platform, "slack");
    assert_eq!(dm.source.chat_type, ChatType::Dm);
    assert_eq!(dm.source.chat_id.as_deref(), Some("D1"));
    assert_eq!(dm.source.user_id.as_deref(), Some("U42"));
    assert_eq!(dm.message_id.as_deref(), Some("1.1"));
    assert_eq!(dm.text, "hello & welcome");
    assert_eq!(
        dm.source.user_name.as_deref(),
        Some("Ann"),
        "display name from users.info"
    );

    // Skipped: a bot's message, our own, an edit, a join.
    let mut from_bot = im("U9", "1.2", "beep");
    from_bot["bot_id"] = json!("B1");
    conn.send(envelope("e2", from_bot));
    conn.send(envelope("e3", im("UBOT", "1.3", "my own reply")));
    let mut edit = im("U42", "1.4", "edited");
    edit["subtype"] = json!("message_changed");
    conn.send(envelope("e4", edit));
    conn.send(envelope("e5", json!({"type": "message", "subtype": "channel_join", "channel": "C1",
                                   "channel_type": "channel", "user": "U7", "ts": "1.5", "text": "joined"})));
    // A mention in a thread arrives twice (message + app_mention); one message results.
    let msg = json!({"type": "message", "channel": "C1", "channel_type": "channel", "user": "U43",
                     "ts": "2.5", "thread_ts": "2.0", "text": "<@UBOT> status?"});
    conn.send(envelope("e6", msg));
    conn.send(envelope(
        "e7",
        json!({"type": "app_mention", "channel": "C1", "user": "U43",
                                   "ts": "2.5", "thread_ts": "2.0", "text": "<@UBOT> status?"}),
    ));
    conn.send(envelope(
        "e8",
        json!({"type": "message", "channel": "G1", "channel_type": "mpim",
                                   "user": "U44", "ts": "3.0", "text": "group chat"}),
    ));
    for id in ["e2", "e3", "e4", "e5", "e6", "e7", "e8"] {
        assert_eq!(conn.recv().await, json!({"envelope_id": id}));
    }
    let threaded = h.next().await;
    assert_eq!(threaded.source.chat_type, ChatType::Channel);
    assert_eq!(threaded.source.chat_id.as_deref(), Some("C1"));
    assert_eq!(threaded.source.thread_id.as_deref(), Some("2.0"));
    assert_eq!(threaded.source.user_id.as_deref(), Some("U43"));
    assert_eq!(threaded.text, "status?");
    assert_eq!(threaded.source.user_name.as_deref(), Some("bob"));
    let group = h.next().await;
    assert_eq!(group.source.chat_type, ChatType::Group);
    assert_eq!(group.text, "group chat");
    // user_not_found: no name, the message still arrives.
    assert_eq!(group.source.user_name, None);
    conn.send(envelope("e9", im("U42", "1.9", "again")));
    assert_eq!(conn.recv().await["envelope_id"], "e9");
    assert_eq!(h.next().await.source.user_name.as_deref(), Some("Ann"));
    assert_eq!(
        h.web.requests_to("/users.info").len(),
        3,
        "names are cached"
    );

    h.cancel.cancel();
    assert_eq!(conn.recv().await["__closed"], 1000);
    within("run to stop", h.run)
        .await
        .expect("join")
        .expect("clean stop");
}

#[tokio::test]
async fn disconnect_envelopes_and_dropped_connections_reconnect_and_messages_keep_arriving() {
    let mut h = start(BOT, APP, LONG).await;
    let mut conn = h.hello().await;
    conn.send(envelope("e1", im("U42", "1.1", "one")));
    assert_eq!(conn.recv().await["envelope_id"], "e1");
    assert_eq!(h.next().await.text, "one");

    conn.send(json!({"type": "disconnect", "reason": "refresh_requested"}));
    assert_eq!(conn.recv().await["__closed"], 1000);
    let mut conn = h.hello().await;
    conn.send(envelope("e2", im("U42", "1.2", "two")));
    assert_eq!(conn.recv().await["envelope_id"], "e2");
    assert_eq!(h.next().await.text, "two");

    conn.drop_connection();
    let mut conn = h.hello().await;
    conn.send(envelope("e3", im("U42", "1.3", "three")));
    assert_eq!(conn.recv().await["envelope_id"], "e3");
    assert_eq!(h.next().await.text, "three");
    assert_eq!(h.web.requests_to("/apps.connections.open").len(), 3);
    assert_eq!(h.web.requests_to("/auth.test").len(), 1);
    h.cancel.cancel();
    within("run to stop", h.run)
        .await
        .expect("join")
        .expect("clean stop");
}

#[tokio::test]
async fn a_silent_connection_is_replaced() {
    let mut h = start(BOT, APP, Duration::from_millis(50)).await;
    let conn = h.hello().await;
    conn.freeze();
    // Pings go unanswered; the adapter must give up on this connection and open another.
    let mut conn = h.hello().await;
    conn.send(envelope("e1", im("U42", "1.1", "still here")));
    assert_eq!(conn.recv().await["envelope_id"], "e1");
    assert_eq!(h.next().await.text, "still here");
    h.cancel.cancel();
    within("run to stop", h.run)
        .await
        .expect("join")
        .expect("clean stop");
}

#[tokio::test]
async fn a_bad_app_token_ends_run_with_an_auth_error() {
    let h = start(BOT, "xapp-wrong", LONG).await;
    let err = within("run to fail", h.run)
        .await
        .expect("join")
        .expect_err("auth error");
    assert!(
        matches!(&err, PlatformError::Auth { detail, .. } if detail.contains("SLACK_APP_TOKEN")),
        "{err:?}"
    );
    assert_eq!(h.web.requests_to("/apps.connections.open").len(), 1);
}

#[tokio::test]
async fn a_bad_bot_token_ends_run_with_an_auth_error() {
    let h = start("xoxb-wrong", APP, LONG).await;
    let err = within("run to fail", h.run)
        .await
        .expect("join")
        .expect_err("auth error");
    assert!(
        matches!(&err, PlatformError::Auth { detail, .. } if detail.contains("SLACK_BOT_TOKEN")),
        "{err:?}"
    );
    assert!(h.web.requests_to("/apps.connections.open").is_empty());
}

#[tokio::test]
async fn post_update_and_file_upload_requests_are_well_formed() {
    let h = start(BOT, APP, LONG).await;
    let t = ChatTarget {
        chat_id: "C1".into(),
        thread_id: Some("2.0".into()),
        reply_to: Some("2.5".into()),
    };
    let sent = h.adapter.send(&t, "*bold* reply").await.expect("send");
    assert_eq!(
        sent,
        SentMessage {
            message_id: "1700.100".into()
        }
    );
    h.adapter
        .edit(&t, &sent, "*bold* reply, longer")
        .await
        .expect("edit");
    h.adapter.typing(&t).await.expect("typing is a no-op");

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("chart.png");
    std::fs::write(&file, "PNG-BYTES-0123456").expect("write");
    let f = h
        .adapter
        .send_file(&t, &file, Some("the chart"))
        .await
        .expect("upload");
    assert_eq!(f.message_id, "F1");

    let post = h.web.requests_to("/chat.postMessage");
    assert_eq!(post.len(), 1);
    assert_eq!(
        post[0].header("authorization").as_deref(),
        Some("Bearer xoxb-good")
    );
    assert_eq!(
        post[0].json(),
        json!({"channel": "C1", "text": "*bold* reply", "thread_ts": "2.0"})
    );
    let update = h.web.requests_to("/chat.update");
    assert_eq!(
        update[0].json(),
        json!({"channel": "C1", "ts": "1700.100", "text": "*bold* reply, longer"})
    );

    let get_url = h.web.requests_to("/files.getUploadURLExternal");
    let body = get_url[0].text();
    assert_eq!(form_field(&body, "filename").as_deref(), Some("chart.png"));
    assert_eq!(form_field(&body, "length").as_deref(), Some("17"));
    let upload = h.web.requests_to("/upload/F1");
    assert_eq!(upload[0].text(), "PNG-BYTES-0123456");
    let complete = h.web.requests_to("/files.completeUploadExternal")[0].text();
    assert_eq!(form_field(&complete, "channel_id").as_deref(), Some("C1"));
    assert_eq!(form_field(&complete, "thread_ts").as_deref(), Some("2.0"));
    assert_eq!(
        form_field(&complete, "initial_comment").as_deref(),
        Some("the chart")
    );
    let files: Value =
        serde_json::from_str(&form_field(&complete, "files").expect("files")).expect("json");
    assert_eq!(files, json!([{"id": "F1", "title": "chart.png"}]));
    h.cancel.cancel();
}

#[tokio::test]
async fn web_api_errors_map_to_rate_limit_rejection_and_auth() {
    let h = start(BOT, APP, LONG).await;
    let t = |c: &str| ChatTarget {
        chat_id: c.into(),
        thread_id: None,
        reply_to: None,
    };
    assert!(matches!(
        h.adapter.send(&t("C-429"), "x").await,
        Err(PlatformError::RateLimited { retry_after, .. }) if retry_after == Duration::from_secs(3)
    ));
    assert!(matches!(
        h.adapter.send(&t("C-limited"), "x").await,
        Err(PlatformError::RateLimited { .. })
    ));
    assert!(matches!(
        h.adapter.send(&t("C-gone"), "x").await,
        Err(PlatformError::Rejected { detail, .. }) if detail.contains("channel_not_found")
    ));
    h.cancel.cancel();
    let bad = start("xoxb-wrong", APP, LONG).await;
    assert!(matches!(
        bad.adapter.send(&t("C1"), "x").await,
        Err(PlatformError::Auth { .. })
    ));
}

#[tokio::test]
async fn shared_files_are_downloaded_with_the_bot_token() {
    let mut h = start(BOT, APP, LONG).await;
    let mut conn = h.hello().await;
    let mut ev = im("U42", "4.0", "here are my notes");
    ev["subtype"] = json!("file_share");
    ev["files"] = json!([{"id": "F9", "name": "notes.txt", "mimetype": "text/plain", "size": 5,
                          "url_private_download": format!("{}/files/notes.txt", h.web.url)}]);
    conn.send(envelope("e1", ev));
    assert_eq!(conn.recv().await["envelope_id"], "e1");
    let m = h.next().await;
    assert_eq!(m.text, "here are my notes");
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(
        std::fs::read(&m.attachments[0].path).expect("saved"),
        b"NOTES"
    );
    assert!(
        m.attachments[0]
            .path
            .starts_with(h.media.path().join("slack"))
    );
    let get = h.web.requests_to("/files/notes.txt");
    assert_eq!(
        get[0].header("authorization").as_deref(),
        Some("Bearer xoxb-good")
    );
    h.cancel.cancel();
}

const SIGNING: &str = "slack-signing-secret";

async fn events_post(
    addr: std::net::SocketAddr,
    body: &str,
    signed_at: i64,
    secret: &str,
) -> (u16, Value) {
    use hermes_gateway::platforms::slack::events::{SIGNATURE_HEADER, TIMESTAMP_HEADER, sign};
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/slack/events"))
        .header("content-type", "application/json")
        .header(TIMESTAMP_HEADER, signed_at.to_string())
        .header(SIGNATURE_HEADER, sign(secret, signed_at, body.as_bytes()))
        .body(body.to_string())
        .send()
        .await
        .expect("post");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn events_api_verifies_signatures_answers_the_challenge_and_forwards_messages() {
    let web = HttpFake::start(web_handler(String::new(), Arc::default())).await;
    let media = tempfile::tempdir().expect("tempdir");
    // No app token: the Events API needs none.
    let mut settings = SlackSettings::new(BOT, "", media.path());
    settings.api_base_url = web.url.clone();
    let mut events = hermes_gateway::platforms::slack::SlackEvents::new(SIGNING);
    events.bind = "127.0.0.1:0".parse().expect("addr");
    settings.events = Some(events);
    let adapter = Arc::new(SlackAdapter::new(settings).expect("adapter"));
    assert!(!adapter.single_connection(), "every replica receives");
    let addr = adapter.events_addr().expect("bound");
    let (tx, mut inbound) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    let run = tokio::spawn(async move { a.run(tx, c).await });
    let now = chrono::Utc::now().timestamp();

    // Slack's URL verification handshake (retried until auth.test is done and we serve).
    let challenge =
        json!({"type": "url_verification", "token": "t", "challenge": "abc123"}).to_string();
    let answer = within("the challenge answer", async {
        loop {
            if let Ok(r) = tokio::time::timeout(
                Duration::from_secs(1),
                events_post(addr, &challenge, now, SIGNING),
            )
            .await
                && r.0 == 200
            {
                break r.1;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(answer["challenge"], "abc123");

    let callback = |ts: &str, text: &str| {
        json!({"type": "event_callback", "team_id": "T1", "event_id": format!("Ev{ts}"),
               "event": im("U42", ts, text)})
        .to_string()
    };
    // Forged: another secret, a replayed old timestamp.
    let body = callback("1.1", "forged");
    assert_eq!(events_post(addr, &body, now, "wrong").await.0, 401);
    assert_eq!(events_post(addr, &body, now - 600, SIGNING).await.0, 401);
    // Genuine: forwarded once; Slack's retry of the same event is dropped.
    let body = callback("1.2", "hello over http");
    assert_eq!(events_post(addr, &body, now, SIGNING).await.0, 200);
    let msg = within("the message", inbound.recv())
        .await
        .expect("running");
    assert_eq!(msg.text, "hello over http");
    assert_eq!(msg.source.chat_type, ChatType::Dm);
    assert_eq!(msg.source.user_id.as_deref(), Some("U42"));
    assert_eq!(msg.message_id.as_deref(), Some("1.2"));
    assert_eq!(events_post(addr, &body, now, SIGNING).await.0, 200);
    let next = callback("1.3", "after");
    assert_eq!(events_post(addr, &next, now, SIGNING).await.0, 200);
    let msg = within("the next message", inbound.recv())
        .await
        .expect("running");
    assert_eq!(msg.text, "after", "the retried event was forwarded twice");
    // Other payloads are acknowledged and ignored.
    let other = json!({"type": "app_rate_limited", "minute_rate_limited": 1}).to_string();
    assert_eq!(events_post(addr, &other, now, SIGNING).await.0, 200);
    assert!(inbound.try_recv().is_err());
    cancel.cancel();
    within("run to end", run)
        .await
        .expect("join")
        .expect("clean stop");
}
