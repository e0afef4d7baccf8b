//! Telegram adapter end to end against a loopback fake of the Bot API.
#![cfg(feature = "telegram")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::platforms::telegram::{TelegramAdapter, TelegramSettings};
use hermes_gateway::{
    AttachmentKind, ChatTarget, ChatType, InboundMessage, PlatformAdapter, PlatformError,
    SentMessage,
};
use serde_json::json;
use support::telegram_fake::FakeBotApi;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "123456:TEST-token";
/// Hang guard: everything here completes in well under a second on a quiet machine.
const HANG: Duration = Duration::from_secs(20);

fn settings(fake: &FakeBotApi, dir: &std::path::Path) -> TelegramSettings {
    let mut s = TelegramSettings::new(TOKEN, dir.join("media"));
    s.api_base_url = fake.base_url();
    s.poll_timeout = Duration::from_secs(1);
    s.reconnect_base = Duration::from_millis(10);
    s.reconnect_max = Duration::from_millis(40);
    s
}

struct Running {
    adapter: Arc<TelegramAdapter>,
    rx: mpsc::Receiver<InboundMessage>,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), PlatformError>>,
}

fn start(settings: TelegramSettings, capacity: usize) -> Running {
    let adapter = Arc::new(TelegramAdapter::new(settings).unwrap());
    let (tx, rx) = mpsc::channel(capacity);
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
    }
}

async fn next(rx: &mut mpsc::Receiver<InboundMessage>) -> InboundMessage {
    tokio::time::timeout(HANG, rx.recv())
        .await
        .expect("no inbound message in time")
        .expect("inbound channel closed")
}

fn dm_update(update_id: i64, message_id: i64, text: &str) -> serde_json::Value {
    json!({
        "update_id": update_id,
        "message": {
            "message_id": message_id, "date": 0,
            "chat": {"id": 4242, "type": "private", "first_name": "Alice"},
            "from": {"id": 4242, "is_bot": false, "first_name": "Alice", "username": "alice"},
            "text": text
        }
    })
}

#[tokio::test]
async fn dm_text_arrives_with_stable_ids_and_the_reply_goes_back_as_markdown_v2() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    fake.push_update(dm_update(10, 5, "hello bot"));
    let mut run = start(settings(&fake, dir.path()), 8);

    let msg = next(&mut run.rx).await;
    assert_eq!(msg.text, "hello bot");
    assert_eq!(msg.message_id.as_deref(), Some("5"));
    assert_eq!(msg.source.platform, "telegram");
    assert_eq!(msg.source.chat_type, ChatType::Dm);
    assert_eq!(msg.source.chat_id.as_deref(), Some("4242"));
    assert_eq!(msg.source.user_id.as_deref(), Some("4242"));
    assert_eq!(msg.source.user_name.as_deref(), Some("alice"));
    assert!(msg.attachments.is_empty());

    let target = ChatTarget::reply_to(&msg).unwrap();
    let sent = run.adapter.send(&target, r"Hi Alice\!").await.unwrap();
    assert!(sent.message_id.parse::<i64>().is_ok());
    let calls = fake.calls("sendMessage");
    assert_eq!(calls.len(), 1);
    let body = &calls[0].body;
    assert_eq!(body["chat_id"], json!(4242));
    assert_eq!(body["text"], json!(r"Hi Alice\!"));
    assert_eq!(body["parse_mode"], json!("MarkdownV2"));
    assert_eq!(body["reply_parameters"]["message_id"], json!(5));
    assert!(body.get("message_thread_id").is_none());

    // the next poll acknowledges update 10
    let polls = fake.wait_calls("getUpdates", 2).await;
    assert_eq!(polls[1].body["offset"], json!(11));
    assert_eq!(polls[1].body["timeout"], json!(1));

    run.cancel.cancel();
    let result = tokio::time::timeout(HANG, run.task).await.unwrap().unwrap();
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn group_message_in_a_forum_topic_carries_the_thread_and_replies_go_into_it() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    for (update_id, user, name) in [(1, 11, "bob"), (2, 12, "carol")] {
        fake.push_update(json!({
            "update_id": update_id,
            "message": {
                "message_id": 100 + update_id, "date": 0,
                "message_thread_id": 77, "is_topic_message": true,
                "chat": {"id": -1001234, "type": "supergroup", "title": "Team", "is_forum": true},
                "from": {"id": user, "is_bot": false, "first_name": name},
                "text": format!("question from {name}"),
                "reply_to_message": {"message_id": 77, "date": 0,
                    "chat": {"id": -1001234, "type": "supergroup"}}
            }
        }));
    }
    let mut run = start(settings(&fake, dir.path()), 8);
    let first = next(&mut run.rx).await;
    let second = next(&mut run.rx).await;
    for (msg, user) in [(&first, "11"), (&second, "12")] {
        assert_eq!(msg.source.chat_type, ChatType::Group);
        assert_eq!(msg.source.chat_id.as_deref(), Some("-1001234"));
        assert_eq!(msg.source.thread_id.as_deref(), Some("77"));
        assert_eq!(msg.source.user_id.as_deref(), Some(user));
        assert_eq!(msg.reply_to, None, "the topic root is not a reply");
    }
    let target = ChatTarget::reply_to(&second).unwrap();
    run.adapter.send(&target, "answer").await.unwrap();
    run.adapter.typing(&target).await.unwrap();
    let body = &fake.calls("sendMessage")[0].body;
    assert_eq!(body["chat_id"], json!(-1001234));
    assert_eq!(body["message_thread_id"], json!(77));
    assert_eq!(body["reply_parameters"]["message_id"], json!(102));
    let typing = &fake.calls("sendChatAction")[0].body;
    assert_eq!(typing["action"], json!("typing"));
    assert_eq!(typing["message_thread_id"], json!(77));
    run.cancel.cancel();
}

#[tokio::test]
async fn photo_is_downloaded_under_the_media_dir_and_oversized_files_are_announced_not_saved() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let jpeg: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    fake.add_file("photo-big", "photos/file_1.jpg", jpeg.clone());
    fake.push_update(json!({
        "update_id": 30,
        "message": {
            "message_id": 9, "date": 0,
            "chat": {"id": 4242, "type": "private"},
            "from": {"id": 4242, "first_name": "Alice"},
            "caption": "what is this?",
            "photo": [
                {"file_id": "photo-small", "file_unique_id": "ps", "width": 90, "height": 60, "file_size": 300},
                {"file_id": "photo-big", "file_unique_id": "pb", "width": 1280, "height": 853, "file_size": 3000}
            ]
        }
    }));
    fake.add_file("doc-huge", "documents/big.pdf", vec![7u8; 5000]);
    fake.push_update(json!({
        "update_id": 31,
        "message": {
            "message_id": 10, "date": 0,
            "chat": {"id": 4242, "type": "private"},
            "from": {"id": 4242, "first_name": "Alice"},
            "document": {"file_id": "doc-huge", "file_unique_id": "dh",
                "file_name": "report.pdf", "mime_type": "application/pdf"}
        }
    }));
    let mut s = settings(&fake, dir.path());
    s.max_media_bytes = 4096;
    let mut run = start(s, 8);

    let photo = next(&mut run.rx).await;
    assert_eq!(photo.text, "what is this?");
    assert_eq!(photo.attachments.len(), 1);
    let att = &photo.attachments[0];
    assert_eq!(att.kind, AttachmentKind::Image);
    assert_eq!(att.size_bytes, 3000);
    assert!(
        att.path.starts_with(dir.path().join("media")),
        "{:?}",
        att.path
    );
    assert_eq!(std::fs::read(&att.path).unwrap(), jpeg);

    // the document's size is unknown up front; the download stops at the cap
    let doc = next(&mut run.rx).await;
    assert!(doc.attachments.is_empty());
    assert!(doc.text.contains("report.pdf"), "{}", doc.text);
    assert!(doc.text.contains("4096"), "{}", doc.text);
    let saved: Vec<_> = std::fs::read_dir(dir.path().join("media"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(saved.len(), 1, "only the photo is on disk: {saved:?}");
    run.cancel.cancel();
}

#[tokio::test]
async fn bad_token_ends_run_with_an_auth_error_without_retrying() {
    let fake = FakeBotApi::start("999:the-real-token").await;
    let dir = tempfile::tempdir().unwrap();
    let run = start(settings(&fake, dir.path()), 8);
    let result = tokio::time::timeout(HANG, run.task).await.unwrap().unwrap();
    assert!(
        matches!(result, Err(PlatformError::Auth { .. })),
        "{result:?}"
    );
    assert!(
        fake.calls("getMe").is_empty(),
        "the fake records only accepted tokens"
    );
    assert!(fake.calls("getUpdates").is_empty());
}

#[tokio::test]
async fn flood_control_on_send_waits_retry_after_then_succeeds() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    fake.fail_next(
        "sendMessage",
        429,
        json!({"ok": false, "error_code": 429,
               "description": "Too Many Requests: retry after 1",
               "parameters": {"retry_after": 1}}),
    );
    let adapter = TelegramAdapter::new(settings(&fake, dir.path())).unwrap();
    let target = ChatTarget {
        chat_id: "4242".into(),
        thread_id: None,
        reply_to: None,
    };
    let sent = tokio::time::timeout(HANG, adapter.send(&target, "hi"))
        .await
        .unwrap()
        .unwrap();
    assert!(!sent.message_id.is_empty());
    assert_eq!(fake.calls("sendMessage").len(), 2);

    // a wait longer than the configured maximum goes back to the caller
    let mut s = settings(&fake, dir.path());
    s.max_rate_limit_wait = Duration::from_secs(5);
    let strict = TelegramAdapter::new(s).unwrap();
    fake.fail_next(
        "sendMessage",
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests",
               "parameters": {"retry_after": 30}}),
    );
    match strict.send(&target, "hi").await {
        Err(PlatformError::RateLimited { retry_after, .. }) => {
            assert_eq!(retry_after, Duration::from_secs(30))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn server_errors_while_polling_are_retried_until_the_api_recovers() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    fake.fail_next(
        "getMe",
        502,
        json!({"ok": false, "error_code": 502, "description": "Bad Gateway"}),
    );
    for _ in 0..3 {
        fake.fail_next(
            "getUpdates",
            500,
            json!({"ok": false, "error_code": 500, "description": "Internal Server Error"}),
        );
    }
    fake.push_update(dm_update(40, 1, "still there?"));
    let mut run = start(settings(&fake, dir.path()), 8);
    let msg = next(&mut run.rx).await;
    assert_eq!(msg.text, "still there?");
    assert_eq!(fake.calls("getMe").len(), 2);
    assert!(fake.calls("getUpdates").len() >= 4);
    assert!(!run.task.is_finished());
    run.cancel.cancel();
}

#[tokio::test]
async fn restart_after_a_crash_redelivers_only_updates_not_yet_forwarded() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    for (id, text) in [(50, "one"), (51, "two"), (52, "three")] {
        fake.push_update(dm_update(id, id, text));
    }
    let mut s = settings(&fake, dir.path());
    s.offset_file = Some(dir.path().join("telegram.offset"));

    // capacity 1 and nobody reading: "one" is handed over, "two" waits for room
    let first = start(s.clone(), 1);
    fake.wait_calls("getUpdates", 1).await;
    for _ in 0..200 {
        if std::fs::read_to_string(dir.path().join("telegram.offset")).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.task.abort(); // the crash: no clean shutdown, no final acknowledgment
    let _ = first.task.await;
    let mut crashed_rx = first.rx;
    assert_eq!(next(&mut crashed_rx).await.text, "one");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("telegram.offset"))
            .unwrap()
            .trim(),
        "51"
    );

    let mut second = start(s, 8);
    assert_eq!(next(&mut second.rx).await.text, "two");
    assert_eq!(next(&mut second.rx).await.text, "three");
    let polls = fake.calls("getUpdates");
    let restart_poll = polls.iter().find(|c| c.body["offset"] == json!(51));
    assert!(restart_poll.is_some(), "restart polls from 51: {polls:?}");
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), second.rx.recv())
            .await
            .is_err(),
        "nothing else is delivered"
    );
    second.cancel.cancel();
}

#[tokio::test]
async fn unparsable_markdown_falls_back_to_plain_text_and_is_reported() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let adapter = TelegramAdapter::new(settings(&fake, dir.path())).unwrap();
    let target = ChatTarget {
        chat_id: "4242".into(),
        thread_id: Some("3".into()),
        reply_to: None,
    };
    fake.fail_next(
        "sendMessage",
        400,
        json!({"ok": false, "error_code": 400,
               "description": "Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 8"}),
    );
    let report = adapter
        .send_reporting(&target, r"*step\-1\. done")
        .await
        .unwrap();
    assert!(report.fell_back_to_plain);
    assert_eq!(adapter.plain_fallbacks(), 1);
    let calls = fake.calls("sendMessage");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].body["text"], json!("*step-1. done"));
    assert!(calls[1].body.get("parse_mode").is_none());
    assert_eq!(calls[1].body["message_thread_id"], json!(3));

    let ok = adapter.send_reporting(&target, "fine").await.unwrap();
    assert!(!ok.fell_back_to_plain);

    // other rejections are returned as they are
    fake.fail_next(
        "sendMessage",
        403,
        json!({"ok": false, "error_code": 403, "description": "Forbidden: bot was blocked by the user"}),
    );
    let err = adapter.send(&target, "hello").await.unwrap_err();
    assert!(matches!(err, PlatformError::Rejected { .. }), "{err:?}");
}

#[tokio::test]
async fn edits_and_files_use_the_right_methods() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let adapter = TelegramAdapter::new(settings(&fake, dir.path())).unwrap();
    let target = ChatTarget {
        chat_id: "4242".into(),
        thread_id: None,
        reply_to: Some("8".into()),
    };
    let msg = SentMessage {
        message_id: "1001".into(),
    };
    adapter
        .edit(&target, &msg, "partial answer…")
        .await
        .unwrap();
    let edit = &fake.calls("editMessageText")[0].body;
    assert_eq!(edit["message_id"], json!(1001));
    assert_eq!(edit["parse_mode"], json!("MarkdownV2"));

    fake.fail_next(
        "editMessageText",
        400,
        json!({"ok": false, "error_code": 400,
               "description": "Bad Request: message is not modified: specified new message content and reply markup are exactly the same"}),
    );
    adapter
        .edit(&target, &msg, "partial answer…")
        .await
        .unwrap();

    let png = dir.path().join("chart.png");
    std::fs::write(&png, b"PNGDATA-123").unwrap();
    adapter
        .send_file(&target, &png, Some("the chart"))
        .await
        .unwrap();
    let body = fake.calls("sendPhoto")[0].body["multipart"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        body.contains("name=\"photo\"; filename=\"chart.png\""),
        "{body}"
    );
    assert!(body.contains("PNGDATA-123"));
    assert!(body.contains("the chart"));
    assert!(body.contains("\"message_id\":8"));

    let txt = dir.path().join("notes.txt");
    std::fs::write(&txt, b"plain notes").unwrap();
    adapter.send_file(&target, &txt, None).await.unwrap();
    let body = fake.calls("sendDocument")[0].body["multipart"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        body.contains("name=\"document\"; filename=\"notes.txt\""),
        "{body}"
    );

    let missing = adapter
        .send_file(&target, &dir.path().join("nope.pdf"), None)
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("nope.pdf"), "{missing}");
}

const HOOK_SECRET: &str = "hook-Secret_0123456789";

fn webhook_settings(fake: &FakeBotApi, dir: &std::path::Path) -> TelegramSettings {
    let mut s = settings(fake, dir);
    let mut hook = hermes_gateway::platforms::telegram::TelegramWebhook::new(
        "https://bot.example.com/tg-hook",
        HOOK_SECRET,
    );
    hook.bind = "127.0.0.1:0".parse().unwrap();
    s.webhook = Some(hook);
    s
}

async fn push(
    addr: std::net::SocketAddr,
    host: &str,
    secret: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}/tg-hook"))
        .header("host", host)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(secret) = secret {
        request = request.header("X-Telegram-Bot-Api-Secret-Token", secret);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn webhook_mode_registers_the_url_and_accepts_only_updates_with_the_secret() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let mut run = start(webhook_settings(&fake, dir.path()), 1);
    assert!(
        !run.adapter.single_connection(),
        "webhook mode serves on every replica"
    );
    let addr = run
        .adapter
        .webhook_addr()
        .expect("a bound webhook listener");
    let set = fake.wait_calls("setWebhook", 1).await;
    assert_eq!(set[0].body["url"], "https://bot.example.com/tg-hook");
    assert_eq!(set[0].body["secret_token"], HOOK_SECRET);
    assert!(
        fake.calls("getUpdates").is_empty(),
        "no polling in webhook mode"
    );

    let update = dm_update(9001, 55, "pushed hello").to_string();
    // Wrong or missing secret: 401 and nothing forwarded.
    let wrong = push(addr, "bot.example.com", Some("nope"), &update).await;
    assert_eq!(wrong.status(), 401);
    let missing = push(addr, "bot.example.com", None, &update).await;
    assert_eq!(missing.status(), 401);
    // A Host that is not the webhook's (DNS rebinding): 421.
    let rebound = push(addr, "evil.example", Some(HOOK_SECRET), &update).await;
    assert_eq!(rebound.status(), 421);
    // Not an Update: 400.
    let junk = push(addr, "bot.example.com", Some(HOOK_SECRET), "[1,2]").await;
    assert_eq!(junk.status(), 400);
    assert!(run.rx.try_recv().is_err(), "nothing was forwarded");

    let ok = push(addr, "bot.example.com", Some(HOOK_SECRET), &update).await;
    assert_eq!(ok.status(), 200);
    let msg = next(&mut run.rx).await;
    assert_eq!(msg.text, "pushed hello");
    assert_eq!(msg.message_id.as_deref(), Some("55"));
    assert_eq!(msg.source.user_id.as_deref(), Some("4242"));

    // An update is answered only once the gateway took it: with the channel full (capacity
    // 1, nobody reading) the second push waits.
    let first = push(
        addr,
        "bot.example.com",
        Some(HOOK_SECRET),
        &dm_update(9002, 56, "one").to_string(),
    )
    .await;
    assert_eq!(first.status(), 200);
    let second = tokio::spawn(async move {
        push(
            addr,
            "bot.example.com",
            Some(HOOK_SECRET),
            &dm_update(9003, 57, "two").to_string(),
        )
        .await
        .status()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "answered before the gateway had the update"
    );
    assert_eq!(next(&mut run.rx).await.text, "one");
    assert_eq!(
        tokio::time::timeout(HANG, second).await.unwrap().unwrap(),
        200
    );
    assert_eq!(next(&mut run.rx).await.text, "two");

    // Stopping leaves the webhook registered (the other replicas keep receiving).
    run.cancel.cancel();
    tokio::time::timeout(HANG, run.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(fake.calls("deleteWebhook").is_empty());
}

#[tokio::test]
async fn webhook_mode_without_a_valid_secret_refuses_to_start() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    for secret in ["", "has space", "semi;colon"] {
        let mut s = webhook_settings(&fake, dir.path());
        if let Some(hook) = s.webhook.as_mut() {
            hook.secret = secret.into();
        }
        let err = TelegramAdapter::new(s).unwrap_err();
        assert!(
            matches!(err, PlatformError::Auth { .. })
                && err.to_string().contains("TELEGRAM_WEBHOOK_SECRET"),
            "{secret:?}: {err}"
        );
    }
    let mut s = webhook_settings(&fake, dir.path());
    if let Some(hook) = s.webhook.as_mut() {
        hook.url = "https:///path-only".into();
    }
    assert!(
        TelegramAdapter::new(s)
            .unwrap_err()
            .to_string()
            .contains("no host")
    );
}

#[tokio::test]
async fn polling_clears_a_webhook_left_registered() {
    let fake = FakeBotApi::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let run = start(settings(&fake, dir.path()), 4);
    assert!(run.adapter.single_connection());
    fake.wait_calls("getUpdates", 1).await;
    let cleared = fake.calls("deleteWebhook");
    assert_eq!(cleared.len(), 1);
    assert_eq!(cleared[0].body["drop_pending_updates"], false);
    run.cancel.cancel();
}
