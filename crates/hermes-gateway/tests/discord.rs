//! Discord adapter against a loopback fake of the REST API (axum) and the gateway websocket.
#![cfg(feature = "discord")]
#![allow(clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::platforms::discord::INTENTS;
use hermes_gateway::{
    ChatTarget, ChatType, DiscordAdapter, DiscordSettings, InboundMessage, PlatformAdapter,
    PlatformError, SentMessage,
};
use serde_json::{Value, json};
use support::{
    HttpFake, Reaction, Recorded, WsServer, discord_heartbeat_ack, ok_json, status_json, within,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "good-token";

fn silent(v: &Value) -> Reaction {
    Reaction {
        reply: None,
        forward: v["op"] != 1,
    }
}

fn rest_handler(ws_url: String) -> impl Fn(&Recorded) -> support::Answer + Send + Sync {
    move |r: &Recorded| {
        if r.header("authorization").as_deref() != Some(&format!("Bot {TOKEN}")) {
            return status_json(401, json!({"message": "401: Unauthorized", "code": 0}));
        }
        let parts: Vec<&str> = r.path.trim_start_matches('/').split('/').collect();
        match (r.method.as_str(), parts.as_slice()) {
            ("GET", ["gateway", "bot"]) => ok_json(json!({"url": ws_url, "shards": 1})),
            ("GET", ["channels", id]) if id.starts_with("thread") => {
                ok_json(json!({"id": id, "type": 11, "parent_id": "parent-1"}))
            }
            ("GET", ["channels", id]) => ok_json(json!({"id": id, "type": 0})),
            ("POST", ["channels", "limited", "messages"]) => status_json(
                429,
                json!({"message": "You are being rate limited.", "retry_after": 1.5, "global": false}),
            ),
            ("POST", ["channels", "secret", "messages"]) => {
                status_json(403, json!({"message": "Missing Access", "code": 50001}))
            }
            ("POST", ["channels", id, "messages"]) => {
                ok_json(json!({"id": format!("sent-in-{id}"), "channel_id": id}))
            }
            ("PATCH", ["channels", _, "messages", mid]) => ok_json(json!({"id": mid})),
            ("POST", ["channels", _, "typing"]) => {
                (axum::http::StatusCode::NO_CONTENT, vec![], vec![])
            }
            _ => status_json(404, json!({"message": "Unknown route"})),
        }
    }
}

struct Harness {
    ws: WsServer,
    rest: HttpFake,
    adapter: Arc<DiscordAdapter>,
    inbound: mpsc::Receiver<InboundMessage>,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), PlatformError>>,
    _media: tempfile::TempDir,
}

async fn start(react: fn(&Value) -> Reaction, token: &str, cdn: Option<Vec<u8>>) -> Harness {
    let ws = WsServer::start(react).await;
    let ws_url = ws.url.clone();
    let handler = rest_handler(ws_url);
    let rest = HttpFake::start(move |r| {
        if r.path.starts_with("/cdn/") {
            return (
                axum::http::StatusCode::OK,
                vec![],
                cdn.clone().unwrap_or_default(),
            );
        }
        handler(r)
    })
    .await;
    let media = tempfile::tempdir().expect("tempdir");
    let mut settings = DiscordSettings::new(token, media.path());
    settings.api_base_url = rest.url.clone();
    settings.reconnect_initial = Duration::from_millis(10);
    settings.reconnect_max = Duration::from_millis(50);
    settings.max_media_bytes = 1000;
    let adapter = Arc::new(DiscordAdapter::new(settings).expect("adapter"));
    let (tx, inbound) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let a = adapter.clone();
    let c = cancel.clone();
    let run = tokio::spawn(async move { a.run(tx, c).await });
    Harness {
        ws,
        rest,
        adapter,
        inbound,
        cancel,
        run,
        _media: media,
    }
}

fn hello(interval_ms: u64) -> Value {
    json!({"op": 10, "d": {"heartbeat_interval": interval_ms}, "s": null, "t": null})
}

fn dispatch(t: &str, s: u64, d: Value) -> Value {
    json!({"op": 0, "t": t, "s": s, "d": d})
}

fn message(id: &str, channel: &str, author: &str, guild: Option<&str>, content: &str) -> Value {
    let mut d = json!({
        "id": id, "channel_id": channel, "type": 0, "content": content,
        "author": {"id": author, "username": format!("user{author}"), "global_name": null},
        "attachments": [],
    });
    if let Some(g) = guild {
        d["guild_id"] = json!(g);
    }
    d
}

fn ready(session: &str, resume_url: &str) -> Value {
    json!({"v": 10, "session_id": session, "resume_gateway_url": resume_url,
           "user": {"id": "bot-1", "username": "hermes", "bot": true}})
}

impl Harness {
    async fn next(&mut self) -> InboundMessage {
        within("an inbound message", self.inbound.recv())
            .await
            .expect("adapter running")
    }

    /// HELLO, expect IDENTIFY, READY with resume URL `<ws>/resume`.
    async fn identify(&mut self) -> support::FakeConn {
        let mut conn = self.ws.next_conn().await;
        conn.send(hello(45_000));
        let ident = conn.recv().await;
        assert_eq!(ident["op"], 2, "expected IDENTIFY, got {ident}");
        assert_eq!(ident["d"]["token"], TOKEN);
        assert_eq!(ident["d"]["intents"], INTENTS);
        let resume_url = format!("{}/resume", self.ws.url);
        conn.send(dispatch("READY", 1, ready("sess-1", &resume_url)));
        conn
    }
}

#[tokio::test]
async fn dm_group_and_thread_messages_arrive_with_stable_ids_and_own_messages_are_ignored() {
    let mut h = start(discord_heartbeat_ack, TOKEN, None).await;
    let conn = h.identify().await;
    // Malformed and unknown input is skipped without dropping the connection.
    conn.send_raw("this is not json");
    conn.send(json!({"op": 42, "d": null}));
    conn.send(dispatch("MESSAGE_CREATE", 2, json!({"id": "broken"})));
    conn.send(dispatch(
        "MESSAGE_CREATE",
        2,
        message("m1", "dm-chan", "42", None, "hi there"),
    ));
    let dm = h.next().await;
    assert_eq!(dm.source.platform, "discord");
    assert_eq!(dm.source.chat_type, ChatType::Dm);
    assert_eq!(dm.source.chat_id.as_deref(), Some("dm-chan"));
    assert_eq!(dm.source.user_id.as_deref(), Some("42"));
    assert_eq!(dm.source.user_name.as_deref(), Some("user42"));
    assert_eq!(dm.message_id.as_deref(), Some("m1"));
    assert_eq!(dm.text, "hi there");

    // The bot's own message comes first and must not surface.
    conn.send(dispatch(
        "MESSAGE_CREATE",
        3,
        message("m2", "dm-chan", "bot-1", None, "my reply"),
    ));
    conn.send(dispatch(
        "MESSAGE_CREATE",
        4,
        message(
            "m3",
            "chan-1",
            "43",
            Some("guild-1"),
            "<@bot-1> what time is it?",
        ),
    ));
    let group = h.next().await;
    assert_eq!(group.message_id.as_deref(), Some("m3"));
    assert_eq!(group.source.chat_type, ChatType::Group);
    assert_eq!(group.source.chat_id.as_deref(), Some("chan-1"));
    assert_eq!(group.source.thread_id, None);
    assert_eq!(group.source.user_id.as_deref(), Some("43"));
    assert_eq!(group.text, "what time is it?");

    conn.send(dispatch(
        "MESSAGE_CREATE",
        5,
        message("m4", "thread-9", "44", Some("guild-1"), "in a thread"),
    ));
    let threaded = h.next().await;
    assert_eq!(threaded.source.chat_id.as_deref(), Some("parent-1"));
    assert_eq!(threaded.source.thread_id.as_deref(), Some("thread-9"));
    assert_eq!(threaded.source.user_id.as_deref(), Some("44"));

    h.cancel.cancel();
    within("run to stop", h.run)
        .await
        .expect("join")
        .expect("clean stop");
}

#[tokio::test]
async fn a_dropped_connection_resumes_the_session_and_messages_keep_arriving() {
    let mut h = start(discord_heartbeat_ack, TOKEN, None).await;
    let conn = h.identify().await;
    conn.send(dispatch(
        "MESSAGE_CREATE",
        2,
        message("m1", "dm", "42", None, "one"),
    ));
    assert_eq!(h.next().await.text, "one");
    conn.drop_connection();

    let mut conn = h.ws.next_conn().await;
    assert!(conn.path.starts_with("/resume"), "resumed at {}", conn.path);
    conn.send(hello(45_000));
    let resume = conn.recv().await;
    assert_eq!(resume["op"], 6, "expected RESUME, got {resume}");
    assert_eq!(resume["d"]["session_id"], "sess-1");
    assert_eq!(resume["d"]["seq"], 2);
    assert_eq!(resume["d"]["token"], TOKEN);
    conn.send(dispatch("RESUMED", 3, json!({})));
    conn.send(dispatch(
        "MESSAGE_CREATE",
        4,
        message("m2", "dm", "42", None, "two"),
    ));
    assert_eq!(h.next().await.text, "two");

    // RECONNECT (op 7) also resumes, with the newest sequence number.
    conn.send(json!({"op": 7, "d": null}));
    assert_eq!(conn.recv().await["__closed"], 4000);
    let mut conn = h.ws.next_conn().await;
    conn.send(hello(45_000));
    let resume = conn.recv().await;
    assert_eq!(resume["op"], 6);
    assert_eq!(resume["d"]["seq"], 4);

    // INVALID_SESSION (not resumable) → a fresh IDENTIFY through GET /gateway/bot.
    conn.send(json!({"op": 9, "d": false}));
    let mut conn = h.ws.next_conn().await;
    assert!(!conn.path.starts_with("/resume"));
    conn.send(hello(45_000));
    assert_eq!(conn.recv().await["op"], 2);

    h.cancel.cancel();
    assert_eq!(
        conn.recv().await["__closed"],
        1000,
        "shutdown closes normally"
    );
    within("run to stop", h.run)
        .await
        .expect("join")
        .expect("clean stop");
}

#[tokio::test]
async fn a_missing_heartbeat_ack_drops_the_connection_and_resumes() {
    let mut h = start(silent, TOKEN, None).await;
    let mut conn = h.ws.next_conn().await;
    conn.send(hello(30));
    assert_eq!(conn.recv().await["op"], 2);
    conn.send(dispatch("READY", 1, ready("sess-z", &h.ws.url)));
    // No ACK for the heartbeat: the adapter must give up on this connection…
    assert_eq!(conn.recv().await["__closed"], 4000);
    // …and resume on a new one.
    let mut conn = h.ws.next_conn().await;
    conn.send(hello(45_000));
    let resume = conn.recv().await;
    assert_eq!(resume["op"], 6);
    assert_eq!(resume["d"]["session_id"], "sess-z");
    h.cancel.cancel();
    within("run to stop", h.run)
        .await
        .expect("join")
        .expect("clean stop");
}

#[tokio::test]
async fn a_bad_token_ends_run_with_an_auth_error() {
    let h = start(discord_heartbeat_ack, "wrong-token", None).await;
    let err = within("run to fail", h.run)
        .await
        .expect("join")
        .expect_err("auth error");
    assert!(matches!(err, PlatformError::Auth { .. }), "{err:?}");
    assert!(err.to_string().contains("DISCORD_BOT_TOKEN"), "{err}");
    // No retry loop: exactly one call.
    assert_eq!(h.rest.requests_to("/gateway/bot").len(), 1);
}

#[tokio::test]
async fn close_code_4004_ends_run_with_an_auth_error() {
    let mut h = start(discord_heartbeat_ack, TOKEN, None).await;
    let mut conn = h.ws.next_conn().await;
    conn.send(hello(45_000));
    assert_eq!(conn.recv().await["op"], 2);
    conn.close(4004);
    let err = within("run to fail", h.run)
        .await
        .expect("join")
        .expect_err("auth error");
    assert!(matches!(err, PlatformError::Auth { .. }), "{err:?}");
}

#[tokio::test]
async fn send_edit_file_and_typing_requests_are_well_formed() {
    let h = start(discord_heartbeat_ack, TOKEN, None).await;
    let dm = ChatTarget {
        chat_id: "dm-chan".into(),
        thread_id: None,
        reply_to: Some("m1".into()),
    };
    let sent = h.adapter.send(&dm, "hello **there**").await.expect("send");
    assert_eq!(
        sent,
        SentMessage {
            message_id: "sent-in-dm-chan".into()
        }
    );
    h.adapter
        .edit(&dm, &sent, "hello again")
        .await
        .expect("edit");

    let thread = ChatTarget {
        chat_id: "parent-1".into(),
        thread_id: Some("thread-9".into()),
        reply_to: None,
    };
    h.adapter
        .send(&thread, "in thread")
        .await
        .expect("send to thread");
    h.adapter.typing(&thread).await.expect("typing");

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("report.txt");
    std::fs::write(&file, "FILE-CONTENT-123").expect("write");
    let f = h
        .adapter
        .send_file(&dm, &file, Some("the report"))
        .await
        .expect("file");
    assert_eq!(f.message_id, "sent-in-dm-chan");

    let posts = h.rest.requests_to("/channels/dm-chan/messages");
    assert_eq!(posts.len(), 2);
    let body = posts[0].json();
    assert_eq!(body["content"], "hello **there**");
    assert_eq!(body["message_reference"]["message_id"], "m1");
    assert_eq!(body["allowed_mentions"]["parse"], json!([]));
    let multipart = posts[1].text();
    assert!(
        posts[1]
            .header("content-type")
            .unwrap_or_default()
            .starts_with("multipart/form-data")
    );
    assert!(multipart.contains("name=\"payload_json\""));
    assert!(multipart.contains("\"content\":\"the report\""));
    assert!(multipart.contains("name=\"files[0]\"; filename=\"report.txt\""));
    assert!(multipart.contains("FILE-CONTENT-123"));

    let patch = h
        .rest
        .requests_to("/channels/dm-chan/messages/sent-in-dm-chan");
    assert_eq!(patch.len(), 1);
    assert_eq!(patch[0].method, "PATCH");
    assert_eq!(patch[0].json()["content"], "hello again");

    let in_thread = h.rest.requests_to("/channels/thread-9/messages");
    assert_eq!(in_thread.len(), 1);
    assert!(in_thread[0].json().get("message_reference").is_none());
    assert_eq!(h.rest.requests_to("/channels/thread-9/typing").len(), 1);
    h.cancel.cancel();
}

#[tokio::test]
async fn rest_errors_map_to_rate_limit_rejection_and_auth() {
    let h = start(discord_heartbeat_ack, TOKEN, None).await;
    let t = |c: &str| ChatTarget {
        chat_id: c.into(),
        thread_id: None,
        reply_to: None,
    };
    match h.adapter.send(&t("limited"), "x").await {
        Err(PlatformError::RateLimited { retry_after, .. }) => {
            assert_eq!(retry_after, Duration::from_millis(1500));
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
    assert!(matches!(
        h.adapter.send(&t("secret"), "x").await,
        Err(PlatformError::Rejected { .. })
    ));
    h.cancel.cancel();

    let bad = start(discord_heartbeat_ack, "wrong-token", None).await;
    assert!(matches!(
        bad.adapter.send(&t("any"), "x").await,
        Err(PlatformError::Auth { .. })
    ));
}

#[tokio::test]
async fn attachments_are_saved_and_oversized_ones_noted() {
    let mut h = start(discord_heartbeat_ack, TOKEN, Some(b"PNGDATA".to_vec())).await;
    let conn = h.identify().await;
    let mut d = message("m1", "dm", "42", None, "see this");
    d["attachments"] = json!([
        {"id": "a1", "filename": "cat.png", "url": format!("{}/cdn/cat.png", h.rest.url),
         "size": 7, "content_type": "image/png"},
        {"id": "a2", "filename": "huge.bin", "url": format!("{}/cdn/huge.bin", h.rest.url),
         "size": 5000, "content_type": "application/octet-stream"},
    ]);
    conn.send(dispatch("MESSAGE_CREATE", 2, d));
    let m = h.next().await;
    assert_eq!(m.attachments.len(), 1);
    let a = &m.attachments[0];
    assert_eq!(a.kind, hermes_gateway::AttachmentKind::Image);
    assert_eq!(a.size_bytes, 7);
    assert_eq!(std::fs::read(&a.path).expect("saved"), b"PNGDATA");
    assert!(a.path.starts_with(h._media.path().join("discord")));
    assert!(m.text.starts_with("see this\n"), "{}", m.text);
    assert!(
        m.text.contains("huge.bin") && m.text.contains("5000"),
        "{}",
        m.text
    );
    h.cancel.cancel();
}

#[tokio::test]
async fn run_stops_when_the_receiver_is_dropped() {
    let mut h = start(discord_heartbeat_ack, TOKEN, None).await;
    let conn = h.identify().await;
    drop(h.inbound);
    conn.send(dispatch(
        "MESSAGE_CREATE",
        2,
        message("m1", "dm", "42", None, "anyone?"),
    ));
    within("run to stop", h.run)
        .await
        .expect("join")
        .expect("clean stop");
}
