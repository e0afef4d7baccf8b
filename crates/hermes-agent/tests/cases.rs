//! Cases from `shared/cases/cases.json` observed through the whole turn (the decoder-level
//! halves live in hermes-llm's tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, final_text, tool_messages};
use hermes_protocol::{AgentEvent, Role, TurnOutcome};
use hermes_testkit::MockResponse;
use serde_json::Value;

fn case(id: &str) -> Value {
    let path = hermes_testkit::shared_path("cases/cases.json");
    let all: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all.into_iter().find(|c| c["id"] == id).unwrap()
}

fn json_body(body: &str) -> MockResponse {
    MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "application/json".into())],
        body.to_string(),
    )
}

#[tokio::test]
async fn case_c01_usage_only_final_chunk_is_not_a_dropped_stream() {
    let c = case("C01");
    let h = Harness::new().await;
    h.mock.push(MockResponse::sse(
        c["trigger"].as_str().unwrap().to_string(),
    ));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "finish").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), c["expected"]["assistant_text"]);
    let continuation_requests = h.mock.requests().len() - 1;
    assert_eq!(
        continuation_requests as u64,
        c["expected"]["continuation_requests"].as_u64().unwrap()
    );
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    let assistants: Vec<_> = stored
        .iter()
        .filter(|m| m.message.role == Role::Assistant)
        .collect();
    assert_eq!(
        assistants.len() as u64,
        c["expected"]["assistant_messages_persisted"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(
        assistants[0]
            .message
            .finish_reason
            .as_ref()
            .map(|f| f.as_str().to_string()),
        Some(c["expected"]["finish_reason"].as_str().unwrap().to_string())
    );
    let session = h.store.get_session(agent.session_id()).unwrap().unwrap();
    assert_eq!(
        session.input_tokens,
        c["expected"]["usage"]["prompt_tokens"].as_u64().unwrap()
    );
    assert_eq!(
        session.output_tokens,
        c["expected"]["usage"]["completion_tokens"]
            .as_u64()
            .unwrap()
    );
}

#[tokio::test]
async fn case_c03_truncated_tool_call_is_never_executed() {
    let c = case("C03");
    let h = Harness::new().await;
    h.mock.push(json_body(c["trigger"].as_str().unwrap()));
    h.mock
        .push(MockResponse::text("I will write it in smaller parts."));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "write big.py").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert!(!h.path("big.py").exists(), "file_written must be false");
    let finished: Vec<bool> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { ok, .. } => Some(*ok),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        vec![false],
        "tools_executed must be 0 (an error result only)"
    );
    let requests = h.checked_requests();
    let hint = &tool_messages(&requests[1])[0].1;
    assert!(
        hint.contains("not run") && hint.contains("cut off"),
        "{hint}"
    );
    // The truncated arguments are stored verbatim, never replaced by {}.
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert!(
        stored[1].message.tool_calls[0]
            .arguments
            .contains("import os")
    );

    // Same when the router reports finish_reason=tool_calls: invalid JSON is caught anyway.
    let h = Harness::new().await;
    let trigger = c["trigger"]
        .as_str()
        .unwrap()
        .replace("\"length\"", "\"tool_calls\"");
    h.mock.push(json_body(&trigger));
    h.mock.push(MockResponse::text("ok"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "write big.py").await;
    assert!(!h.path("big.py").exists());
    let requests = h.checked_requests();
    assert!(tool_messages(&requests[1])[0].1.contains("not valid JSON"));
}

#[tokio::test]
async fn case_c04_empty_or_absent_arguments_run_the_tool_with_an_empty_object() {
    let c = case("C04");
    let shapes = [
        // (1) empty string arguments
        r#"{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"skills_list","arguments":""}}]}}]}"#,
        // (2) no arguments field at all (vLLM hermes parser, streamed)
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"skills_list\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
        // (3) whitespace only
        r#"{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"skills_list","arguments":"  \n"}}]}}]}"#,
    ];
    for shape in shapes {
        let h = Harness::new().await;
        h.mock.push(if shape.starts_with("data:") {
            MockResponse::sse(shape)
        } else {
            json_body(shape)
        });
        h.mock.push(MockResponse::text("no skills"));
        let mut agent = h.agent().await;
        h.turn(&mut agent, "list skills").await;
        assert_eq!(
            h.counting.count(),
            1,
            "tool_executed must be true for {shape}"
        );
        let args = h.counting.last_args.lock().unwrap().clone().unwrap();
        assert_eq!(args, c["expected"]["parsed_arguments"]);
        let stored = h.store.load_messages(agent.session_id()).unwrap();
        assert_eq!(
            stored[1].message.tool_calls[0].arguments,
            c["expected"]["stored_arguments_string"].as_str().unwrap()
        );
        let requests = h.checked_requests();
        let sent = &requests[1]["messages"][2]["tool_calls"][0]["function"]["arguments"];
        assert_eq!(sent, "{}", "replayed to the provider as valid JSON");
    }
}

#[tokio::test]
async fn case_c13_tool_call_markup_in_content_is_not_executed_and_not_shown() {
    let c = case("C13");
    let h = Harness::new().await;
    std::fs::write(h.path("notes.md"), "secret plans").unwrap();
    h.mock.push(json_body(c["trigger"].as_str().unwrap()));
    let mut agent = h.agent().await;
    let (outcome, events) = h.turn(&mut agent, "read notes.md").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let executed = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolStarted { .. }))
        .count();
    assert_eq!(executed, 0, "tools_executed_by_default");
    let visible: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.clone()),
            AgentEvent::TurnFinished { final_text, .. } => Some(final_text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        !visible.contains("<tool_call>"),
        "user-visible text must not contain the markup: {visible}"
    );
    let diagnostic = events
        .iter()
        .any(|e| matches!(e, AgentEvent::Status { message } if message.contains("tool")));
    assert!(diagnostic, "diagnostic_emitted");
    assert_eq!(h.mock.requests().len(), 1);
}
