//! `/model` in a chat (issue 7 item 6): shows the session's model, switches it for the
//! following turns the way the REPL does, keeps the choice through an LRU eviction, a gateway
//! restart and `/new`, and refuses a bad choice with a clear reply without changing anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_testkit::MockResponse;

const KEY: &str = "agent:main:telegram:dm:5";

fn models(h: &Harness) -> Vec<String> {
    h.mock
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap().to_string())
        .collect()
}

async fn say(gw: &hermes_gateway::Gateway, h: &Harness, user: &str, text: &str, answer: &str) {
    h.mock.push(MockResponse::text(answer));
    gw.handle(dm(user, text)).await;
    idle(gw).await;
}

#[tokio::test]
async fn model_switches_the_chat_and_survives_eviction_restart_and_new() {
    let h = Harness::new().await;
    let mut config = open_config("telegram");
    config.agent_cache_size = 1;
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(config.clone(), adapter.clone());

    say(&gw, &h, "5", "hello", "one").await;
    gw.handle(dm("5", "/model")).await;
    gw.handle(dm("5", "/model other-model")).await;
    idle(&gw).await;
    say(&gw, &h, "5", "again", "two").await;
    assert_eq!(
        adapter.texts(),
        vec![
            "one",
            "Model: mock-model (custom), as configured. Switch with /model MODEL or /model PROVIDER MODEL.",
            "Switched to other-model (custom) for this chat.",
            "two",
        ]
    );
    assert_eq!(models(&h), vec!["mock-model", "other-model"]);
    let session = h.store.latest_session_for_key(KEY).unwrap().unwrap();
    assert_eq!(
        (session.model.as_str(), session.provider.as_str()),
        ("other-model", "custom")
    );

    // Another chat evicts this chat's agent (cache of one); the rebuilt agent keeps the model.
    let builds = h.builds();
    say(&gw, &h, "6", "hi", "three").await;
    say(&gw, &h, "5", "after eviction", "four").await;
    assert_eq!(h.builds(), builds + 2, "chat 5's agent was rebuilt");
    assert_eq!(
        models(&h)[2..],
        ["mock-model".to_string(), "other-model".to_string()]
    );

    // A new gateway on the same store (a restart) continues the chat on the chosen model.
    drop(gw);
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(config.clone(), adapter.clone());
    say(&gw, &h, "5", "after restart", "five").await;
    gw.handle(dm("5", "/model")).await;
    idle(&gw).await;
    assert_eq!(models(&h).last().unwrap(), "other-model");
    assert_eq!(
        adapter.texts()[1],
        "Model: other-model (custom), picked with /model for this chat. Switch with /model MODEL or /model PROVIDER MODEL."
    );

    // `/new` keeps the chat's model for the fresh session, also after another restart.
    gw.handle(dm("5", "/new")).await;
    idle(&gw).await;
    let fresh = h.store.latest_session_for_key(KEY).unwrap().unwrap();
    assert_ne!(fresh.id, session.id);
    drop(gw);
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(config, adapter.clone());
    say(&gw, &h, "5", "fresh start", "six").await;
    assert_eq!(models(&h).last().unwrap(), "other-model");
    assert_eq!(
        h.store.latest_session_for_key(KEY).unwrap().unwrap().id,
        fresh.id
    );
}

#[tokio::test]
async fn a_bad_choice_is_answered_and_changes_nothing() {
    let h = Harness::new().await;
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    say(&gw, &h, "5", "hello", "one").await;
    for text in [
        "/model nosuch some-model",
        "/model a b c",
        "/model anthropic claude-sonnet-4",
    ] {
        gw.handle(dm("5", text)).await;
        idle(&gw).await;
    }
    say(&gw, &h, "5", "still there?", "two").await;
    let texts = adapter.texts();
    assert_eq!(texts.len(), 5, "{texts:?}");
    // Backticks are Markdown code spans; the plain-text fake platform shows their text.
    assert!(
        texts[1].starts_with("/model: unknown provider nosuch; known providers: openrouter"),
        "{}",
        texts[1]
    );
    assert_eq!(
        texts[2],
        "/model: usage: /model MODEL, /model PROVIDER MODEL or /model PROVIDER:MODEL"
    );
    assert!(
        texts[3].starts_with("/model: provider anthropic needs an API key: set ANTHROPIC_API_KEY"),
        "{}",
        texts[3]
    );
    assert!(
        texts[3].ends_with("Still using mock-model (custom)."),
        "{}",
        texts[3]
    );
    assert_eq!(texts[4], "two");
    assert_eq!(models(&h), vec!["mock-model", "mock-model"]);
    let session = h.store.latest_session_for_key(KEY).unwrap().unwrap();
    assert_eq!(h.store.model_choice(&session.id).unwrap(), None);
    assert_eq!(session.model, "mock-model");
}

#[tokio::test]
async fn a_switch_waits_for_the_running_turn_instead_of_interrupting_it() {
    let h = Harness::new().await;
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "wait_gate", "{}")]));
    h.mock.push(MockResponse::text("built"));
    gw.handle(dm("5", "build it")).await;
    h.gate().wait_entered().await;
    gw.handle(dm("5", "/model other-model")).await;
    h.gate().open();
    idle(&gw).await;
    say(&gw, &h, "5", "next", "done").await;
    assert_eq!(
        adapter.texts(),
        vec![
            "⚙ wait_gate",
            "built",
            "Switched to other-model (custom) for this chat.",
            "done"
        ]
    );
    assert_eq!(models(&h), vec!["mock-model", "mock-model", "other-model"]);
}
