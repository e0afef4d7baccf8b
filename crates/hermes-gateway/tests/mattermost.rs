//! Mattermost adapter against loopback fakes of the REST API v4 (recording axum server) and
//! the websocket (`/api/v4/websocket`).
//!
//! Payload sources: the Mattermost API v4 reference (api.mattermost.com): `GET /users/me`
//! (a User), `POST /posts` (a Post: `id`, `channel_id`, `root_id`, `message`,
//! `pending_post_id`, `file_ids`), `PUT /posts/{post_id}/patch`, `POST
//! /users/{user_id}/typing`, `POST /files` (`{"file_infos": [{"id": …}]}`), `GET
//! /files/{file_id}/info`, errors as `{"id", "message", "status_code"}`; and its
//! "WebSocket" page: the `authentication_challenge` action and its `{"status": "OK",
//! "seq_reply": 1}` answer, the `hello` event with `connection_id`, `posted` events whose
//! `data.post` is the post as a JSON string, `channel_type` `D`/`O`/`P`/`G`,
//! `sender_name`, reconnection with `connection_id` and `sequence_number`.
#![cfg(feature = "mattermost")]
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use hermes_gateway::platforms::mattermost::ReplyMode;
use hermes_gateway::{
    AttachmentKind, ChatTarget, ChatType, InboundMessage, MattermostAdapter, MattermostSettings,
    PlatformAdapter, PlatformError,
};
use serde_json::{Value, json};
use support::{FakeConn, HttpFake, Reaction, Recorded, WsServer, ok_json, status_json, within};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "mm-bot-token";

fn auth_ok(v: &Value) -> Reaction {
    if v["action"] == "authentication_challenge" && v["data"]["token"] == TOKEN {
        Reaction {
            reply: Some(json!({"status": "OK", "seq_reply": 1})),
            forward: true,
        }
    } else if v["action"] == "authentication_challenge" {
        Reaction {
            reply: Some(json!({"status": "FAIL", "seq_reply": 1,
                "error": {"id": "api.web_socket_router.not_authenticated.app_error", "message": "invalid session"}})),
            forward: true,
        }
    } else {
        Reaction {
            reply: None,
            forward: true,
        }
    }
}

fn rest(r: &Recorded) -> support::Answer {
    if r.header("authorization").as_deref() != Some(&format!("Bearer {TOKEN}")) {
        return status_json(
            401,
            json!({"id": "api.context.session_expired.app_error", "message": "Invalid or expired session, please login again.", "status_code": 401}),
        );
    }
    let parts: Vec<&str> = r.path.trim_start_matches("/api/v4/").split('/').collect();
    match (r.method.as_str(), parts.as_slice()) {
        ("GET", ["users", "me"]) => {
            ok_json(json!({"id": "bot1", "username": "hermes", "is_bot": true}))
        }
        ("GET", ["files", "f1", "info"]) => {
            ok_json(json!({"id": "f1", "name": "plot.png", "mime_type": "image/png", "size": 9}))
        }
        ("GET", ["files", "f1"]) => (StatusCode::OK, vec![], b"PNG bytes".to_vec()),
        ("POST", ["posts"]) => {
            let body = r.json();
            ok_json(
                json!({"id": format!("post-{}", body["message"].as_str().unwrap_or_default().len()),
                "channel_id": body["channel_id"], "root_id": body.get("root_id").cloned().unwrap_or(json!("")),
                "message": body["message"]}),
            )
        }
        ("PUT", ["posts", id, "patch"]) => {
            ok_json(json!({"id": id, "message": r.json()["message"]}))
        }
        ("POST", ["users", "bot1", "typing"]) => ok_json(json!({"status": "OK"})),
        ("POST", ["files"]) => {
            ok_json(json!({"file_infos": [{"id": "up-1", "name": "report.txt"}]}))
        }
        _ => status_json(404, json!({"message": "not found", "status_code": 404})),
    }
}

struct Harness {
    ws: WsServer,
    rest: HttpFake,
    adapter: Arc<MattermostAdapter>,
    inbound: mpsc::Receiver<InboundMessage>,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), PlatformError>>,
    media: tempfile::TempDir,
}

async fn start(
    handler: impl Fn(&Recorded) -> support::Answer + Send + Sync + 'static,
    token: &str,
    mode: ReplyMode,
) -> Harness {
    let ws = WsServer::start(auth_ok).await;
    let rest = HttpFake::start(handler).await;
    let media = tempfile::tempdir().unwrap();
    let mut s = MattermostSettings::new(rest.url.clone(), token, media.path());
    s.websocket_url = Some(format!("{}/api/v4/websocket", ws.url));
    s.reply_mode = mode;
    s.reconnect_initial = Duration::from_millis(10);
    s.reconnect_max = Duration::from_millis(50);
    s.max_media_bytes = 1000;
    let adapter = Arc::new(MattermostAdapter::new(s).unwrap());
    let (tx, inbound) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    let run = tokio::spawn(async move { a.run(tx, c).await });
    Harness {
        ws,
        rest,
        adapter,
        inbound,
        cancel,
        run,
        media,
    }
}

impl Harness {
    async fn next(&mut self) -> InboundMessage {
        within("an inbound message", self.inbound.recv())
            .await
            .expect("adapter running")
    }

    /// Accepts a connection, checks the challenge, says hello.
    async fn connect(&mut self, connection_id: &str) -> FakeConn {
        let mut conn = self.ws.next_conn().await;
        let challenge = conn.recv().await;
        assert_eq!(challenge["action"], "authentication_challenge");
        assert_eq!(challenge["data"]["token"], TOKEN);
        conn.send(json!({"event": "hello", "data": {"connection_id": connection_id, "server_version": "9.11.0"},
            "broadcast": {"user_id": "bot1"}, "seq": 0}));
        conn
    }
}

fn posted(seq: u64, channel_type: &str, post: Value) -> Value {
    json!({"event": "posted", "seq": seq, "broadcast": {"channel_id": post["channel_id"]},
        "data": {"channel_display_name": "Town Square", "channel_name": "town-square",
            "channel_type": channel_type, "sender_name": "@alice", "team_id": "team1",
            "post": post.to_string()}})
}

fn post(id: &str, channel: &str, user: &str, message: &str) -> Value {
    json!({"id": id, "create_at": 1_700_000_000_000u64, "update_at": 1_700_000_000_000u64,
        "user_id": user, "channel_id": channel, "root_id": "", "message": message, "type": "",
        "props": {}, "file_ids": []})
}

#[tokio::test]
async fn posts_arrive_once_with_threads_mentions_and_files() {
    let mut h = start(rest, TOKEN, ReplyMode::Thread).await;
    let conn = h.connect("conn-1").await;
    conn.send_raw("not json");
    conn.send(json!({"event": "typing", "data": {"parent_id": ""}, "seq": 1}));
    conn.send(json!({"event": "posted", "data": {"post": "{broken"}, "seq": 2}));
    conn.send(posted(3, "D", post("own", "dm1", "bot1", "my own reply")));
    let mut system = post("sys", "ch1", "alice", "alice joined");
    system["type"] = json!("system_join_channel");
    conn.send(posted(4, "O", system));
    conn.send(posted(5, "D", post("p1", "dm1", "alice", "hello there")));
    conn.send(posted(6, "D", post("p1", "dm1", "alice", "hello there")));
    let dm = h.next().await;
    assert_eq!(dm.source.platform, "mattermost");
    assert_eq!(dm.source.chat_type, ChatType::Dm);
    assert_eq!(dm.source.chat_id.as_deref(), Some("dm1"));
    assert_eq!(dm.source.user_id.as_deref(), Some("alice"));
    assert_eq!(dm.source.user_name.as_deref(), Some("alice"));
    assert_eq!(dm.source.thread_id, None);
    assert_eq!(dm.message_id.as_deref(), Some("p1"));
    assert_eq!(dm.text, "hello there");

    // A channel post without a mention is skipped; one with it starts a thread (reply mode
    // `thread`) and loses the mention; a reply inside a thread keeps its root.
    conn.send(posted(7, "O", post("p2", "ch1", "alice", "just chatting")));
    conn.send(posted(
        8,
        "O",
        post("p3", "ch1", "alice", "@Hermes what's the status?"),
    ));
    let m = h.next().await;
    assert_eq!(m.message_id.as_deref(), Some("p3"));
    assert_eq!(m.source.chat_type, ChatType::Channel);
    assert_eq!(m.source.thread_id.as_deref(), Some("p3"));
    assert_eq!(m.text, "what's the status?");
    let mut in_thread = post("p4", "ch1", "alice", "@hermes and now?");
    in_thread["root_id"] = json!("p3");
    in_thread["file_ids"] = json!(["f1"]);
    conn.send(posted(9, "P", in_thread));
    let m = h.next().await;
    assert_eq!(m.source.chat_type, ChatType::Group);
    assert_eq!(m.source.thread_id.as_deref(), Some("p3"));
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].kind, AttachmentKind::Image);
    assert_eq!(std::fs::read(&m.attachments[0].path).unwrap(), b"PNG bytes");
    assert!(m.attachments[0].path.starts_with(h.media.path()));
    h.cancel.cancel();
}

#[tokio::test]
async fn replies_edits_typing_and_files_use_the_rest_api() {
    let mut h = start(rest, TOKEN, ReplyMode::Off).await;
    let _conn = h.connect("conn-1").await;
    let target = ChatTarget {
        chat_id: "ch1".into(),
        thread_id: Some("p3".into()),
        reply_to: Some("p4".into()),
    };
    let sent = h.adapter.send(&target, "**working** on it").await.unwrap();
    h.adapter.edit(&target, &sent, "**done**").await.unwrap();
    h.adapter.typing(&target).await.unwrap();
    let file = h.media.path().join("report.txt");
    std::fs::write(&file, "all good").unwrap();
    h.adapter
        .send_file(&target, &file, Some("the report"))
        .await
        .unwrap();
    let posts = h.rest.requests_to("/api/v4/posts");
    assert_eq!(posts.len(), 2);
    let first = posts[0].json();
    assert_eq!(first["channel_id"], "ch1");
    assert_eq!(first["root_id"], "p3");
    assert_eq!(first["message"], "**working** on it");
    assert!(
        first["pending_post_id"]
            .as_str()
            .unwrap()
            .starts_with("bot1:")
    );
    let patch = h
        .rest
        .requests_to(&format!("/api/v4/posts/{}/patch", sent.message_id));
    assert_eq!(patch[0].method, "PUT");
    assert_eq!(patch[0].json()["message"], "**done**");
    let typing = h.rest.requests_to("/api/v4/users/bot1/typing");
    assert_eq!(
        typing[0].json(),
        json!({"channel_id": "ch1", "parent_id": "p3"})
    );
    let upload = h.rest.requests_to("/api/v4/files");
    let form = upload[0].text();
    assert!(
        form.contains("name=\"channel_id\"") && form.contains("ch1"),
        "{form}"
    );
    assert!(
        form.contains("filename=\"report.txt\"") && form.contains("all good"),
        "{form}"
    );
    let with_file = posts[1].json();
    assert_eq!(with_file["file_ids"], json!(["up-1"]));
    assert_eq!(with_file["message"], "the report");
    assert_eq!(h.adapter.limits().max_message_len, 4000);
    h.cancel.cancel();
}

#[tokio::test]
async fn a_rate_limited_post_waits_and_keeps_its_pending_id() {
    let tries = Arc::new(std::sync::Mutex::new(0));
    let t = tries.clone();
    let mut h = start(
        move |r| {
            if r.path == "/api/v4/posts" {
                let mut n = t.lock().unwrap();
                *n += 1;
                if *n == 1 {
                    return (
                        StatusCode::TOO_MANY_REQUESTS,
                        vec![("retry-after".into(), "1".into()), ("x-ratelimit-reset".into(), "1".into())],
                        br#"{"id":"api.context.rate_limit","message":"limit exceeded","status_code":429}"#.to_vec(),
                    );
                }
            }
            rest(r)
        },
        TOKEN,
        ReplyMode::Off,
    )
    .await;
    let _conn = h.connect("conn-1").await;
    let target = ChatTarget {
        chat_id: "ch1".into(),
        thread_id: None,
        reply_to: None,
    };
    h.adapter.send(&target, "hi").await.unwrap();
    let posts = h.rest.requests_to("/api/v4/posts");
    assert_eq!(posts.len(), 2);
    assert_eq!(
        posts[0].json()["pending_post_id"],
        posts[1].json()["pending_post_id"]
    );
    assert!(posts[1].json().get("root_id").is_none());
    h.cancel.cancel();
}

#[tokio::test]
async fn a_dropped_websocket_resumes_where_it_left_off() {
    let mut h = start(rest, TOKEN, ReplyMode::Off).await;
    let conn = h.connect("conn-1").await;
    conn.send(posted(41, "D", post("p1", "dm1", "alice", "one")));
    assert_eq!(h.next().await.text, "one");
    conn.drop_connection();
    let mut conn = h.ws.next_conn().await;
    assert!(
        conn.path.contains("connection_id=conn-1") && conn.path.contains("sequence_number=41"),
        "{}",
        conn.path
    );
    assert_eq!(conn.recv().await["action"], "authentication_challenge");
    conn.send(json!({"event": "hello", "data": {"connection_id": "conn-1"}, "seq": 42}));
    // The server replays what was missed, including a post already handed on.
    conn.send(posted(41, "D", post("p1", "dm1", "alice", "one")));
    conn.send(posted(43, "D", post("p2", "dm1", "alice", "two")));
    assert_eq!(h.next().await.text, "two");
    h.cancel.cancel();
    within("the adapter to stop", &mut h.run)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_refused_token_stops_the_adapter_with_an_auth_error() {
    let mut h = start(rest, "wrong-token", ReplyMode::Off).await;
    let result = within("the adapter to stop", &mut h.run).await.unwrap();
    assert!(
        matches!(result, Err(PlatformError::Auth { .. })),
        "{result:?}"
    );
    let e = h
        .adapter
        .send(
            &ChatTarget {
                chat_id: "ch1".into(),
                thread_id: None,
                reply_to: None,
            },
            "x",
        )
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::Auth { .. }), "{e}");
}
