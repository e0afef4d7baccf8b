//! `hermes pairing {list,approve,revoke}` and `hermes gateway {status,run}` end to end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_gateway::auth::pairing::{CodeRequest, PairingStore, now_unix};

#[tokio::test]
async fn pairing_list_approve_revoke() {
    let env = Env::new().await;
    let out = env.run_ok(&["pairing", "list"]).await;
    assert!(
        stdout(&out).contains("no pairing codes"),
        "{}",
        stdout(&out)
    );
    let store = PairingStore::new(env.home.path().join("pairing"));
    let CodeRequest::Issued(code) = store
        .request_code("telegram", "4242", Some("bob"), now_unix())
        .unwrap()
    else {
        panic!("no code issued");
    };
    let out = env.run_ok(&["pairing", "list"]).await;
    assert!(stdout(&out).contains(&code), "{}", stdout(&out));
    assert!(stdout(&out).contains("4242 (bob)"), "{}", stdout(&out));
    let bad = env
        .run(&["pairing", "approve", "telegram", "ZZZZZZZZ"])
        .await;
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("no pending pairing code"),
        "{}",
        stderr(&bad)
    );
    let out = env
        .run_ok(&["pairing", "approve", "telegram", &code.to_lowercase()])
        .await;
    assert!(
        stdout(&out).contains("approved telegram user 4242"),
        "{}",
        stdout(&out)
    );
    assert!(store.is_approved("telegram", "4242").unwrap());
    let status = env
        .run_env(
            &["gateway", "status"],
            &[("TELEGRAM_BOT_TOKEN", "123:abc".into())],
        )
        .await;
    assert!(status.status.success(), "{}", stderr(&status));
    let text = stdout(&status);
    let telegram = text.lines().find(|l| l.starts_with("telegram")).unwrap();
    assert!(
        telegram.contains("yes") && telegram.contains("pairing"),
        "{text}"
    );
    assert!(text.contains("routed sessions: 0"), "{text}");
    env.run_ok(&["pairing", "revoke", "telegram", "4242"]).await;
    assert!(!store.is_approved("telegram", "4242").unwrap());
    let again = env.run(&["pairing", "revoke", "telegram", "4242"]).await;
    assert_eq!(again.status.code(), Some(1));
}

#[tokio::test]
async fn gateway_config_errors_and_no_platforms_are_reported() {
    let env = Env::with_config("display:\n  busy_input_mode: sometimes\n").await;
    let out = env.run(&["gateway", "status"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("display.busy_input_mode"),
        "{}",
        stderr(&out)
    );
    let env = Env::new().await;
    let out = env.run(&["gateway", "run"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no messaging platform is configured"),
        "{}",
        stderr(&out)
    );
}
