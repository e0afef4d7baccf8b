//! The gateway's outbox (issue 8: cron results sent to platforms): a chat, a thread, the
//! home channel from `<PLATFORM>_HOME_CHANNEL`, long text split within the platform limit,
//! and clear errors for a platform that is not running or has no home channel.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::FakeAdapter;
use hermes_gateway::outbox::home_channels_from_env;
use hermes_gateway::{ChatTarget, Outbox, OutboxError, PlatformAdapter};

fn chat(id: &str, thread: Option<&str>) -> ChatTarget {
    ChatTarget {
        chat_id: id.into(),
        thread_id: thread.map(str::to_string),
        reply_to: None,
    }
}

#[tokio::test]
async fn sends_to_chats_threads_and_home_channels() {
    let (tg, _tx) = FakeAdapter::new("telegram");
    let (dc, _tx2) = FakeAdapter::new("discord");
    let env: BTreeMap<String, String> =
        [("TELEGRAM_HOME_CHANNEL".to_string(), "-100:9".to_string())].into();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![tg.clone(), dc.clone()];
    let outbox = Outbox::new(&adapters, home_channels_from_env(&env));
    assert_eq!(outbox.platforms(), vec!["discord", "telegram"]);

    assert_eq!(
        outbox
            .send("telegram", Some(chat("42", None)), "hello **there**")
            .await
            .unwrap(),
        1
    );
    assert_eq!(outbox.send("Telegram", None, "to home").await.unwrap(), 1);
    outbox
        .send("discord", Some(chat("7", Some("8"))), "in a thread")
        .await
        .unwrap();
    let sent = tg.sent.lock().unwrap().clone();
    assert_eq!(sent[0].0, chat("42", None));
    assert!(sent[0].1.contains("there"), "{:?}", sent[0]);
    assert_eq!(sent[1].0, chat("-100", Some("9")));
    assert_eq!(dc.sent.lock().unwrap()[0].0, chat("7", Some("8")));

    // Longer than the fake's 4096-unit limit: several parts, each within it.
    let long = "word ".repeat(3000);
    let parts = outbox
        .send("telegram", Some(chat("42", None)), &long)
        .await
        .unwrap();
    assert!(parts >= 2);
    let sent = tg.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 2 + parts);
    assert!(sent.iter().all(|(_, t)| t.encode_utf16().count() <= 4096));
}

#[tokio::test]
async fn unknown_platforms_and_missing_home_channels_are_explained() {
    let (tg, _tx) = FakeAdapter::new("telegram");
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![tg.clone()];
    let outbox = Outbox::new(&adapters, BTreeMap::new());
    let e = outbox.send("slack", None, "x").await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "platform `slack` is not running in this gateway (running: telegram)"
    );
    let e = outbox.send("telegram", None, "x").await.unwrap_err();
    assert!(matches!(e, OutboxError::NoHomeChannel { .. }));
    assert!(e.to_string().contains("TELEGRAM_HOME_CHANNEL"), "{e}");
    let e = outbox
        .send("telegram", Some(chat("1", None)), "  ")
        .await
        .unwrap_err();
    assert_eq!(e, OutboxError::Empty);
    assert!(tg.sent.lock().unwrap().is_empty());
}
