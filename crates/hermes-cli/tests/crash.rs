//! Crash safety (ARCHITECTURE §2 invariant 3): `kill -9` in the middle of a tool call loses
//! nothing that was complete, and `hermes -c` resumes with valid tool pairs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hermes_protocol::Role;
use hermes_store::SessionStore;
use hermes_testkit::{MockProvider, MockResponse, TempHome};

#[tokio::test]
async fn kill_9_mid_tool_then_continue() {
    let mock = MockProvider::start().await;
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        home.home().config_file(),
        format!(
            "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\n",
            mock.base_url()
        ),
    )
    .unwrap();
    mock.push(MockResponse::tool_calls(&[
        ("call_sleep", "terminal", r#"{"command":"sleep 20"}"#),
        ("call_after", "search_files", r#"{"pattern":"x"}"#),
    ]));
    let bin = assert_cmd::cargo::cargo_bin("hermes");
    let mut child = Command::new(&bin)
        .env("HERMES_HOME", home.path())
        .env("NO_COLOR", "1")
        .current_dir(cwd.path())
        .args(["chat", "-q", "run the long job"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Wait until the assistant's tool call is committed (the tool is then running).
    let db = home.home().state_db();
    let deadline = Instant::now() + Duration::from_secs(60);
    let session_id = loop {
        assert!(
            Instant::now() < deadline,
            "the tool call never reached the store"
        );
        if db.exists()
            && let Ok(store) = SessionStore::open(&db)
            && let Ok(Some(s)) = store.latest_session(None)
            && let Ok(msgs) = store.load_messages(&s.id)
            && msgs.iter().any(|m| !m.message.tool_calls.is_empty())
        {
            break s.id;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let store = SessionStore::open(&db).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let stored = store.load_messages(&session_id).unwrap();
    let roles: Vec<Role> = stored.iter().map(|m| m.message.role).collect();
    assert_eq!(
        roles,
        vec![Role::User, Role::Assistant],
        "completed messages survive"
    );
    drop(store);

    mock.push(MockResponse::text(
        "The job was interrupted; want me to run it again?",
    ));
    let out = tokio::task::spawn_blocking(move || {
        Command::new(&bin)
            .env("HERMES_HOME", home.path())
            .env("NO_COLOR", "1")
            .current_dir(cwd.path())
            .args(["-c", "chat", "-q", "what happened?"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted"));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    hermes_testkit::assert_request_invariants(&requests);
    let msgs = requests[1]["messages"].as_array().unwrap();
    let tool_ids: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        tool_ids,
        vec!["call_sleep", "call_after"],
        "every call of the killed turn is answered"
    );
}
