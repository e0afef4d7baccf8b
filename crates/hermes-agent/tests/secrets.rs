//! Issue 18 item 2 at the agent layer: the secrets of the home are masked in every tool
//! result before the model, the store, the spill files and the events see them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, tool_messages};
use hermes_protocol::AgentEvent;
use hermes_testkit::MockResponse;

const ENV_KEY: &str = "sk-agent-test-env-0123456789";
const CONFIG_KEY: &str = "sk-agent-test-config-abcdef";
const AUTH_TOKEN: &str = "agent-auth-token-9876543210";

fn plant(h: &Harness) {
    let home = h.home.home();
    std::fs::write(
        home.env_file(),
        format!("OPENAI_API_KEY={ENV_KEY}\nHERMES_MODEL=plain/model\n"),
    )
    .unwrap();
    std::fs::write(
        home.config_file(),
        format!("delegation:\n  api_key: {CONFIG_KEY}\n"),
    )
    .unwrap();
    std::fs::write(
        home.auth_file(),
        format!(r#"{{"providers":{{"nous":{{"access_token":"{AUTH_TOKEN}"}}}}}}"#),
    )
    .unwrap();
    std::fs::write(
        h.path("notes.txt"),
        format!("env {ENV_KEY}\nconfig {CONFIG_KEY}\nauth {AUTH_TOKEN}\nmodel plain/model\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn tool_results_reach_model_store_and_events_with_markers_only() {
    let h = Harness::new().await;
    plant(&h);
    h.mock.push(MockResponse::tool_calls(&[
        ("call_1", "read_file", r#"{"path":"notes.txt"}"#),
        ("call_2", "terminal", r#"{"command":"cat notes.txt"}"#),
    ]));
    h.mock.push(MockResponse::text("done"));
    let mut agent = h.agent().await;
    let (_, events) = h.turn(&mut agent, "read my notes").await;

    let requests = h.checked_requests();
    let results = tool_messages(&requests[1]);
    assert_eq!(results.len(), 2);
    for (_, content) in &results {
        assert!(content.contains("[REDACTED:OPENAI_API_KEY]"), "{content}");
        assert!(
            content.contains("[REDACTED:delegation.api_key]"),
            "{content}"
        );
        assert!(
            content.contains("[REDACTED:auth.json.providers.nous.access_token]"),
            "{content}"
        );
        assert!(content.contains("plain/model"), "not a secret: {content}");
    }
    let all_requests = serde_json::to_string(&requests).unwrap();
    let stored: Vec<_> = h
        .store
        .load_messages(agent.session_id())
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    let stored = serde_json::to_string(&stored).unwrap();
    let shown = format!("{events:?}");
    for secret in [ENV_KEY, CONFIG_KEY, AUTH_TOKEN] {
        assert!(!all_requests.contains(secret), "{secret} sent to the model");
        assert!(!stored.contains(secret), "{secret} stored");
        assert!(!shown.contains(secret), "{secret} in an event");
    }
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolFinished { preview, .. } if preview.contains("[REDACTED:"))),
        "{events:?}"
    );
}

/// A key pasted into a file the system prompt carries (`AGENTS.md`, memory) is masked there
/// too: in the request and in the stored session (attack pass of stop 31).
#[tokio::test]
async fn a_secret_in_the_system_prompt_is_masked() {
    let mut h = Harness::new().await;
    plant(&h);
    let prompt = |_m: &str, _p: &str, _t: &[String]| {
        format!("You are helpful.\n\n# AGENTS.md\nDeploy with OPENAI_API_KEY={ENV_KEY}.\n")
    };
    h.deps.prompt = std::sync::Arc::new(prompt);
    h.mock.push(MockResponse::text("ok"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "hi").await;
    let requests = serde_json::to_string(&h.checked_requests()).unwrap();
    assert!(!requests.contains(ENV_KEY), "the key was sent: {requests}");
    assert!(requests.contains("[REDACTED:OPENAI_API_KEY]"), "{requests}");
    assert!(!agent.system_prompt().contains(ENV_KEY));
    let stored = h.store.find_session(agent.session_id()).unwrap().unwrap();
    assert!(
        !stored.system_prompt.contains(ENV_KEY),
        "stored in the session"
    );
}

#[tokio::test]
async fn spilled_results_hold_markers_not_secrets() {
    let mut h = Harness::new().await;
    // A small window: results over 8,000 chars are spilled.
    let mut config = hermes_llm::OpenAiChatConfig::new(h.mock.base_url(), "mock-model");
    config.context_window = Some(10_000);
    h.deps.client = std::sync::Arc::new(hermes_llm::OpenAiChatClient::new(config).unwrap());
    plant(&h);
    // Large enough to be spilled to HERMES_HOME/cache/tool_results (FEATURES §3 budget).
    let mut big = "filler line of text\n".repeat(1_000);
    big.push_str(&format!("tail {ENV_KEY}\n"));
    std::fs::write(h.path("big.txt"), &big).unwrap();
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "terminal",
        r#"{"command":"cat big.txt"}"#,
    )]));
    h.mock.push(MockResponse::text("done"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "print it").await;
    let spill_dir = h.home.home().cache_dir().join("tool_results");
    let mut spilled = Vec::new();
    for entry in walk(&spill_dir) {
        spilled.push(std::fs::read_to_string(entry).unwrap());
    }
    assert!(!spilled.is_empty(), "the result was spilled");
    assert!(
        spilled
            .iter()
            .any(|t| t.contains("[REDACTED:OPENAI_API_KEY]"))
    );
    assert!(spilled.iter().all(|t| !t.contains(ENV_KEY)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for entry in walk(&spill_dir) {
            let mode = std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", entry.display());
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The model's own words are masked too (the attack pass of issue 18, finding 13): a model
/// that repeats a key in its answer or in a tool call's arguments gets it replaced in the
/// events (the screen, the API's stream, chat replies) and in the store.
#[tokio::test]
async fn a_secret_the_model_writes_is_masked_in_events_and_store() {
    let h = Harness::new().await;
    plant(&h);
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "terminal",
        &format!(r#"{{"command":"echo {ENV_KEY} > /dev/null"}}"#),
    )]));
    h.mock.push(MockResponse::text(&format!(
        "the key is {ENV_KEY}, and the token {AUTH_TOKEN}; nothing else"
    )));
    let mut agent = h.agent().await;
    let (_, events) = h.turn(&mut agent, "tell me the key").await;
    let shown: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        shown,
        "the key is [REDACTED:OPENAI_API_KEY], and the token \
         [REDACTED:auth.json.providers.nous.access_token]; nothing else"
    );
    let stored = serde_json::to_string(
        &h.store
            .load_messages(agent.session_id())
            .unwrap()
            .into_iter()
            .map(|m| m.message)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let all_events = format!("{events:?}");
    for secret in [ENV_KEY, AUTH_TOKEN] {
        assert!(!stored.contains(secret), "{secret} stored: {stored}");
        assert!(!all_events.contains(secret), "{secret} in an event");
    }
    assert!(stored.contains("[REDACTED:OPENAI_API_KEY]"), "{stored}");
}
