//! `hermes send` (issue 22 item 9) against a loopback fake of the Telegram Bot API
//! (`TELEGRAM_API_BASE_URL`): the message, a home channel, a thread,
//! `--file`, `--subject`, `MEDIA:` attachments, `--json`, and the exit codes of Python
//! Hermes' `hermes_cli/send_cmd.py` (0 sent, 1 the platform failed, 2 usage or config).
//! Response shapes from the Bot API reference (https://core.telegram.org/bots/api#making-requests:
//! `{"ok": true, "result": Message}`, errors `{"ok": false, "error_code", "description"}`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use common::{stderr, stdout};
use serde_json::{Value, json};

/// What the fake Bot API received: (method, body as text).
type Calls = Arc<Mutex<Vec<(String, String)>>>;

/// A fake Bot API answering every method with a sent message, or with `refuse` when set.
async fn fake_telegram(refuse: Option<(u16, &'static str)>) -> (String, Calls) {
    let calls: Calls = Arc::default();
    let app = axum::Router::new()
        .route("/{bot}/{method}", axum::routing::post(method))
        .with_state((calls.clone(), refuse));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, calls)
}

async fn method(
    State((calls, refuse)): State<(Calls, Option<(u16, &'static str)>)>,
    Path((_bot, method)): Path<(String, String)>,
    _headers: HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    calls
        .lock()
        .unwrap()
        .push((method, String::from_utf8_lossy(&body).into_owned()));
    if let Some((code, description)) = refuse {
        let status = axum::http::StatusCode::from_u16(code).unwrap();
        let body = json!({"ok": false, "error_code": code, "description": description});
        return (status, axum::Json(body)).into_response();
    }
    axum::Json(json!({"ok": true, "result": {
        "message_id": 7, "date": 1_700_000_000,
        "chat": {"id": 42, "type": "private"}, "text": "ok"
    }}))
    .into_response()
}

/// An environment with a Telegram bot whose API is `url`.
async fn env_with_bot(url: &str, extra_env: &str) -> common::Env {
    let env = common::Env::new().await;
    std::fs::write(
        env.home.path().join(".env"),
        format!("TELEGRAM_BOT_TOKEN=123:secret-token\nTELEGRAM_API_BASE_URL={url}\n{extra_env}"),
    )
    .unwrap();
    env
}

fn texts(calls: &Calls) -> Vec<(String, Value)> {
    calls
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(m, b)| Some((m.clone(), serde_json::from_str::<Value>(b).ok()?)))
        .collect()
}

#[tokio::test]
async fn a_message_reaches_the_chat_and_prints_sent() {
    let (url, calls) = fake_telegram(None).await;
    let env = env_with_bot(&url, "").await;
    let out = env
        .run(&["send", "--to", "telegram:42", "deploy **finished**"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "sent to telegram:42");
    let sent = texts(&calls);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].0, "sendMessage");
    assert_eq!(sent[0].1["chat_id"], 42);
    assert!(
        sent[0].1["text"].as_str().unwrap().contains("finished"),
        "{sent:?}"
    );
    assert!(
        !stderr(&out).contains("secret-token"),
        "the token leaked: {}",
        stderr(&out)
    );
}

#[tokio::test]
async fn the_home_channel_a_thread_a_file_and_a_subject() {
    let (url, calls) = fake_telegram(None).await;
    let env = env_with_bot(&url, "TELEGRAM_HOME_CHANNEL=-100555\n").await;
    let out = env
        .run(&["send", "-t", "telegram", "-s", "Nightly", "build green"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env
        .run(&[
            "send",
            "--to",
            "telegram:-100555:17",
            "--json",
            "topic note",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["success"], true);
    assert_eq!(v["parts"], 1);
    // The body from a file.
    let file = env.cwd.path().join("report.md");
    std::fs::write(&file, "from a file").unwrap();
    let out = env
        .run(&["send", "--to", "telegram:42", "--file", "report.md", "-q"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "--quiet prints nothing");
    let sent = texts(&calls);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[0].1["chat_id"], -100555);
    let first = sent[0].1["text"].as_str().unwrap();
    assert!(
        first.starts_with("Nightly\n\nbuild green"),
        "the subject, a blank line, the message: {first:?}"
    );
    assert_eq!(sent[1].1["message_thread_id"], 17, "{:?}", sent[1]);
    assert!(sent[2].1["text"].as_str().unwrap().contains("from a file"));
}

#[tokio::test]
async fn a_media_tag_sends_the_file_and_a_missing_one_sends_nothing() {
    let (url, calls) = fake_telegram(None).await;
    let env = env_with_bot(&url, "").await;
    std::fs::write(env.cwd.path().join("notes.txt"), "attached").unwrap();
    let out = env
        .run(&["send", "--to", "telegram:42", "see MEDIA:notes.txt"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 file"), "{}", stdout(&out));
    let methods: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(methods, ["sendMessage", "sendDocument"]);
    assert!(calls.lock().unwrap()[1].1.contains("attached"));

    let out = env
        .run(&["send", "--to", "telegram:42", "MEDIA:/nonexistent/x.png"])
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no such file"), "{}", stderr(&out));
    assert_eq!(
        calls.lock().unwrap().len(),
        2,
        "nothing sent after a bad tag"
    );
}

#[tokio::test]
async fn usage_and_configuration_errors_exit_2_with_one_line() {
    let (url, calls) = fake_telegram(None).await;
    let env = env_with_bot(&url, "").await;
    for (args, want) in [
        (vec!["send", "hello"], "--to"),
        (vec!["send", "--to", "telegram"], "no message"),
        (
            vec!["send", "--to", "telegram", "hi"],
            "TELEGRAM_HOME_CHANNEL",
        ),
        (vec!["send", "--to", "signal:+1555", "hi"], "not configured"),
        (vec!["send", "--to", "telegram:1 2", "hi"], "space"),
        (
            vec!["send", "--to", "telegram:42", "-f", "missing.md"],
            "cannot read",
        ),
    ] {
        let out = env.run(&args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_refusal_by_the_platform_exits_1() {
    let (url, calls) = fake_telegram(Some((400, "Bad Request: chat not found"))).await;
    let env = env_with_bot(&url, "").await;
    let out = env.run(&["send", "--to", "telegram:999", "hi"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("chat not found"), "{}", stderr(&out));
    let out = env
        .run(&["send", "--to", "telegram:999", "--json", "hi"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("chat not found"),
        "{v}"
    );
    assert!(!calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn list_shows_home_channels_and_known_channels() {
    let (url, _calls) = fake_telegram(None).await;
    let env = env_with_bot(&url, "TELEGRAM_HOME_CHANNEL=-100555\n").await;
    std::fs::write(
        env.home.path().join("channel_directory.json"),
        r##"{"platforms": {"discord": [{"id": "999", "name": "#ops", "type": "channel"}]}}"##,
    )
    .unwrap();
    let out = env.run(&["send", "--list"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("telegram") && text.contains("-100555"),
        "{text}"
    );
    assert!(
        text.contains("discord:999") && text.contains("#ops"),
        "{text}"
    );
    let out = env.run(&["send", "--list", "telegram", "--json"]).await;
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["home_channels"]["telegram"], "-100555");
    assert_eq!(v["count"], 0, "discord filtered out: {v}");
}
