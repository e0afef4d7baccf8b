//! The secrets test of issue 18 on the API server: fake keys are planted in the server's
//! HERMES_HOME (`.env`, `auth.json`) and a copy of them in a workspace file; the mock model
//! makes the agent `cat` that copy. No key may appear in the SSE body, in
//! `GET /api/sessions/{id}/messages`, in the model's next request or in `state.db` (with its
//! WAL), and the markers must be where the keys were (so the test fails without redaction).
#![cfg(feature = "api-server")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_common;

use api_common::*;
use hermes_testkit::MockResponse;
use reqwest::StatusCode;
use serde_json::json;

const ENV_KEY: &str = "sk-api-e2e-env-openai-31415926";
const AUTH_TOKEN: &str = "api-e2e-auth-access-token-27182818";

fn assert_no_key(channel: &str, text: &str) {
    for key in [ENV_KEY, AUTH_TOKEN] {
        assert!(!text.contains(key), "{key} leaked into {channel}:\n{text}");
    }
}

#[tokio::test]
async fn planted_keys_never_leave_through_the_api() {
    let server = Server::start(None).await;
    server
        .factory
        .terminal
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let home = server.home();
    std::fs::write(home.env_file(), format!("OPENAI_API_KEY={ENV_KEY}\n")).unwrap();
    std::fs::write(
        home.auth_file(),
        format!(r#"{{"version":1,"providers":{{"nous":{{"access_token":"{AUTH_TOKEN}"}}}}}}"#),
    )
    .unwrap();
    std::fs::write(
        server.cwd().join("keys.txt"),
        format!("env: {ENV_KEY}\nauth: {AUTH_TOKEN}\n"),
    )
    .unwrap();
    server.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "terminal",
        r#"{"command":"cat keys.txt"}"#,
    )]));
    server.mock.push(MockResponse::text("I read the file."));

    let body = json!({
        "model": "hermes-agent",
        "stream": true,
        "messages": [{"role": "user", "content": "show me keys.txt"}],
    });
    let resp = server.chat(body, Some("secrets-1")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let sse = resp.text().await.unwrap();
    assert!(
        sse_data(&sse).last().is_some_and(|d| d == "[DONE]"),
        "{sse}"
    );
    assert_no_key("the SSE body", &sse);

    // The model saw the tool result, with markers instead of the keys.
    let requests = server.mock.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let sent = serde_json::to_string(&requests).unwrap();
    assert_no_key("the model requests", &sent);
    assert!(
        sent.contains("[REDACTED:OPENAI_API_KEY]")
            && sent.contains("[REDACTED:auth.json.providers.nous.access_token]"),
        "{sent}"
    );

    let messages = server
        .req(reqwest::Method::GET, "/api/sessions/secrets-1/messages")
        .send()
        .await
        .unwrap();
    assert_eq!(messages.status(), StatusCode::OK);
    let messages = messages.text().await.unwrap();
    assert_no_key("GET /api/sessions/{id}/messages", &messages);
    assert!(messages.contains("[REDACTED:OPENAI_API_KEY]"), "{messages}");

    // The store on disk, with its WAL.
    let db_path = server.store_path();
    let mut db = String::new();
    for side in ["", "-wal"] {
        let mut p = db_path.clone().into_os_string();
        p.push(side);
        db.push_str(&String::from_utf8_lossy(
            &std::fs::read(std::path::PathBuf::from(p)).unwrap_or_default(),
        ));
    }
    assert_no_key("state.db", &db);
    assert!(
        db.contains("[REDACTED:OPENAI_API_KEY]"),
        "the store holds the marker"
    );
    server.stop().await;
}
