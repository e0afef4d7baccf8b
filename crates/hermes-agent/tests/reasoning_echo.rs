//! Reasoning content (DeepSeek/Kimi `reasoning_content`) is stored with the assistant message
//! and echoed back on later requests only to endpoints that require it (FEATURES §2; the
//! capability is decided inside hermes-llm from the base URL and model).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Harness, final_text};
use hermes_agent::Agent;
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::{Role, TurnOutcome};
use hermes_testkit::MockResponse;
use serde_json::{Value, json};

/// A streamed answer whose reasoning arrives as `reasoning_content` deltas, then either text
/// or one tool call.
fn reasoning_reply(
    reasoning: &str,
    text: Option<&str>,
    call: Option<(&str, &str)>,
) -> MockResponse {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    let half = reasoning.len() / 2;
    chunks.push(chunk(
        json!({"reasoning_content": &reasoning[..half]}),
        None,
    ));
    chunks.push(chunk(
        json!({"reasoning_content": &reasoning[half..]}),
        None,
    ));
    let finish = if let Some((id, name)) = call {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": "{}"}}]}),
            None,
        ));
        "tool_calls"
    } else {
        chunks.push(chunk(json!({"content": text.unwrap_or("")}), None));
        "stop"
    };
    chunks.push(chunk(json!({}), Some(finish)));
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        body,
    )
}

fn assistant_messages(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect()
}

async fn harness_for(model: &str) -> Harness {
    let mut h = Harness::new().await;
    let client = OpenAiChatClient::new(OpenAiChatConfig::new(h.mock.base_url(), model)).unwrap();
    h.deps.client = Arc::new(client);
    h
}

/// Turn 1: reasoning + tool call, then reasoning + answer. Turn 2: a plain answer.
async fn two_turns(h: &Harness) -> Agent {
    h.mock.push(reasoning_reply(
        "The user wants skills. ",
        None,
        Some(("call_1", "skills_list")),
    ));
    h.mock.push(reasoning_reply(
        "No skills exist.",
        Some("There are none."),
        None,
    ));
    h.mock.push(MockResponse::text("Still none."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "list my skills").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "There are none.");
    let (outcome, _) = h.turn(&mut agent, "and now?").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    agent
}

#[tokio::test]
async fn deepseek_reasoner_gets_its_reasoning_content_back_on_later_requests() {
    let h = harness_for("deepseek-reasoner").await;
    let agent = two_turns(&h).await;
    let requests = h.checked_requests();
    assert_eq!(requests.len(), 3);

    // Second call of turn 1: the tool-calling assistant message carries its reasoning.
    let a = assistant_messages(&requests[1]);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["reasoning_content"], "The user wants skills. ");
    assert_eq!(a[0]["tool_calls"][0]["id"], "call_1");

    // Turn 2: both earlier assistant messages echo their own reasoning, in order.
    let a = assistant_messages(&requests[2]);
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["reasoning_content"], "The user wants skills. ");
    assert_eq!(a[1]["reasoning_content"], "No skills exist.");
    assert_eq!(a[1]["content"], "There are none.");

    // The reasoning is stored with the messages (it survives a resume).
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    let reasoning: Vec<String> = stored
        .iter()
        .filter(|m| m.message.role == Role::Assistant)
        .filter_map(|m| m.message.reasoning.as_ref().map(|r| r.text.clone()))
        .collect();
    assert_eq!(
        reasoning,
        vec!["The user wants skills. ", "No skills exist."]
    );

    // A resumed session echoes the stored reasoning too.
    let mut resumed = Agent::start(h.deps.clone(), h.opts.clone(), Some(agent.session_id()))
        .await
        .unwrap();
    h.mock.push(MockResponse::text("resumed"));
    h.turn(&mut resumed, "once more").await;
    let last = h.mock.requests().pop().unwrap();
    let a = assistant_messages(&last);
    assert_eq!(a[0]["reasoning_content"], "The user wants skills. ");
    assert_eq!(a[1]["reasoning_content"], "No skills exist.");
    assert!(
        a[2].get("reasoning_content").is_none(),
        "no reasoning, no field"
    );
}

#[tokio::test]
async fn kimi_thinking_models_get_reasoning_content_back() {
    let h = harness_for("moonshotai/kimi-k2-thinking").await;
    two_turns(&h).await;
    let requests = h.checked_requests();
    let a = assistant_messages(&requests[2]);
    assert_eq!(a[0]["reasoning_content"], "The user wants skills. ");
    assert_eq!(a[1]["reasoning_content"], "No skills exist.");
}

#[tokio::test]
async fn other_endpoints_never_receive_reasoning_content() {
    let h = harness_for("qwen3-8b").await;
    let agent = two_turns(&h).await;
    for request in h.checked_requests() {
        for a in assistant_messages(&request) {
            assert!(a.get("reasoning_content").is_none(), "leaked: {a}");
        }
    }
    // Still stored: the capability only decides what is sent.
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert!(stored.iter().any(|m| {
        m.message
            .reasoning
            .as_ref()
            .is_some_and(|r| r.text == "No skills exist.")
    }));
}
