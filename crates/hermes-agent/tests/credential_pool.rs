//! The credential pool in the turn loop (FEATURES §2): a key-specific failure (401, 402, 429)
//! cools the key down and the same call is retried at once with the next key; the cooldowns
//! are persisted by key label in the state file and respected by later turns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::{Harness, final_text};
use hermes_llm::credentials::load_state;
use hermes_llm::runtime::{ApiMode, Runtime};
use hermes_llm::{ClientOptions, build_client_with};
use hermes_protocol::{AgentEvent, TurnOutcome};
use hermes_testkit::MockResponse;

const KEY_A: &str = "sk-or-v1-aaaaaaaaaaaaaaaaaaaa";
const KEY_B: &str = "sk-or-v1-bbbbbbbbbbbbbbbbbbbb";

fn error(status: u16, headers: &[(&str, &str)], message: &str) -> MockResponse {
    let mut h = vec![("content-type".to_string(), "application/json".to_string())];
    h.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    MockResponse::from_bytes(
        status,
        h,
        format!(r#"{{"error":{{"message":"{message}","code":{status}}}}}"#),
    )
}

/// A harness whose client pools KEY_A (the runtime's key) and KEY_B (`model.api_keys`).
async fn pooled_harness() -> Harness {
    let mut h = Harness::new().await;
    let rt = Runtime {
        provider: "openrouter".to_string(),
        api_mode: ApiMode::ChatCompletions,
        base_url: h.mock.base_url(),
        model: "mock-model".to_string(),
        api_key: Some(KEY_A.to_string()),
        context_window: None,
        trace: Vec::new(),
    };
    let opts = ClientOptions {
        extra_keys: vec![KEY_B.to_string()],
        state_file: Some(h.home.home().credential_state_file()),
        ..ClientOptions::default()
    };
    let client = build_client_with(&rt, &opts).unwrap();
    assert_eq!(client.spare_credentials(), 1);
    h.deps.client = client;
    h
}

/// The bearer key of every request the mock received, in order.
fn keys_used(h: &Harness) -> Vec<String> {
    h.mock
        .captured()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| {
            r.header("authorization")
                .unwrap_or("")
                .trim_start_matches("Bearer ")
                .to_string()
        })
        .collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_401_on_key_a_rotates_to_key_b_and_a_stays_cooled_down() {
    let h = pooled_harness().await;
    let mut agent = h.agent().await;
    h.mock.push(error(401, &[], "Invalid API key"));
    h.mock.push(MockResponse::text("hello from key B"));
    let (outcome, events) = h.turn(&mut agent, "hi").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "hello from key B");
    assert_eq!(keys_used(&h), vec![KEY_A, KEY_B]);
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Status { message } if message.contains("next API key"))));
    // No secret in any event.
    let shown = format!("{events:?}");
    assert!(!shown.contains(KEY_A) && !shown.contains(KEY_B));

    // The cooldown (5 min after a 401) is persisted by label, without the key.
    let path = h.home.home().credential_state_file();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(KEY_A) && !text.contains(KEY_B));
    let state = load_state(&path);
    let a = &state["openrouter"]["primary"];
    assert_eq!(a.cooldown_reason.as_deref(), Some("auth"));
    let left = a.cooldown_until.unwrap() - now();
    assert!((250..=300).contains(&left), "{left}");
    assert!(state["openrouter"]["config-1"].cooldown_until.is_none());

    // The next turn goes straight to key B.
    h.mock.push(MockResponse::text("still key B"));
    let (_, events) = h.turn(&mut agent, "again").await;
    assert_eq!(final_text(&events), "still key B");
    assert_eq!(keys_used(&h), vec![KEY_A, KEY_B, KEY_B]);
}

#[tokio::test]
async fn rate_limit_and_billing_cool_keys_down_for_the_provider_time_or_an_hour() {
    let h = pooled_harness().await;
    let mut agent = h.agent().await;
    h.mock
        .push(error(429, &[("retry-after", "30")], "Rate limit exceeded"));
    h.mock.push(MockResponse::text("ok"));
    let (outcome, _) = h.turn(&mut agent, "one").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let state = load_state(&h.home.home().credential_state_file());
    let a = &state["openrouter"]["primary"];
    assert_eq!(a.cooldown_reason.as_deref(), Some("rate_limit"));
    let left = a.cooldown_until.unwrap() - now();
    assert!((20..=30).contains(&left), "Retry-After wins: {left}");

    // Key B now runs out of credit: 1 h cooldown; A is still cooling, so the soonest (A) is
    // tried anyway rather than failing without a call.
    h.mock.push(error(
        402,
        &[],
        "Insufficient credits. Add more using https://openrouter.ai/credits",
    ));
    h.mock.push(MockResponse::text("A again"));
    let (outcome, events) = h.turn(&mut agent, "two").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "A again");
    assert_eq!(keys_used(&h), vec![KEY_A, KEY_B, KEY_B, KEY_A]);
    let state = load_state(&h.home.home().credential_state_file());
    let b = &state["openrouter"]["config-1"];
    assert_eq!(b.cooldown_reason.as_deref(), Some("billing"));
    let left = b.cooldown_until.unwrap() - now();
    assert!((3500..=3600).contains(&left), "{left}");
}

#[tokio::test]
async fn when_every_key_is_rejected_the_turn_fails_after_one_try_each() {
    let h = pooled_harness().await;
    let mut agent = h.agent().await;
    h.mock.push(error(401, &[], "Invalid API key"));
    h.mock.push(error(401, &[], "Invalid API key"));
    let (outcome, events) = h.turn(&mut agent, "hi").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    assert!(final_text(&events).contains("Invalid API key"));
    assert_eq!(keys_used(&h), vec![KEY_A, KEY_B]);
}

#[tokio::test]
async fn saved_cooldowns_are_respected_by_a_new_client() {
    let h = pooled_harness().await;
    let mut agent = h.agent().await;
    h.mock.push(error(401, &[], "Invalid API key"));
    h.mock.push(MockResponse::text("B"));
    h.turn(&mut agent, "hi").await;
    drop(agent);
    // A fresh process: the pool is rebuilt from config and the state file.
    let h2 = pooled_harness_on(&h).await;
    let mut agent = h2.agent().await;
    h.mock.push(MockResponse::text("B again"));
    let (_, events) = h2.turn(&mut agent, "new process").await;
    assert_eq!(final_text(&events), "B again");
    assert_eq!(keys_used(&h), vec![KEY_A, KEY_B, KEY_B]);
}

/// A second client over the same mock and home (as a new process would build).
async fn pooled_harness_on(h: &Harness) -> Harness {
    let mut h2 = Harness::new().await;
    let rt = Runtime {
        provider: "openrouter".to_string(),
        api_mode: ApiMode::ChatCompletions,
        base_url: h.mock.base_url(),
        model: "mock-model".to_string(),
        api_key: Some(KEY_A.to_string()),
        context_window: None,
        trace: Vec::new(),
    };
    let opts = ClientOptions {
        extra_keys: vec![KEY_B.to_string()],
        state_file: Some(h.home.home().credential_state_file()),
        ..ClientOptions::default()
    };
    h2.deps.client = build_client_with(&rt, &opts).unwrap();
    h2
}
