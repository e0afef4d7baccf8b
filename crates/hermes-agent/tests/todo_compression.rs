//! The `todo` list across context compression and resume (issue 4 item 8), with the mock
//! provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_agent::Agent;
use hermes_testkit::MockResponse;
use serde_json::Value;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

const TODOS: &str = r#"{"todos": [
    {"id": "1", "content": "survey the repo", "status": "completed"},
    {"id": "2", "content": "port the parser", "status": "in_progress"},
    {"id": "3", "content": "write the release notes", "status": "pending"}
]}"#;

fn is_summary_request(req: &Value) -> bool {
    req.get("tools")
        .is_none_or(|t| t.as_array().is_none_or(|a| a.is_empty()))
}

/// The content of tool result `call_id` in the last request the mock received.
fn last_tool_messages(h: &Harness, call_id: &str) -> String {
    let requests = h.mock.requests();
    let last = requests.last().unwrap();
    tool_messages(last)
        .into_iter()
        .find(|(id, _)| id == call_id)
        .map(|(_, text)| text)
        .unwrap_or_default()
}

#[tokio::test]
async fn the_todo_list_survives_compression_and_resume() {
    let mut h = Harness::new().await;
    // A small window so a manual compression has something to summarize; no automatic one.
    h.opts.context_window = Some(4_000);
    h.opts.compression_enabled = false;
    let mut agent = h.agent().await;
    // The first messages are kept verbatim by compression; the plan comes after them.
    h.mock.push(MockResponse::text("hello"));
    h.turn(&mut agent, "hi").await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_t", "todo", TODOS)]));
    h.mock.push(MockResponse::text("plan written"));
    h.turn(&mut agent, "plan the port").await;
    for i in 0..6 {
        h.mock.push(MockResponse::text(&format!("ok {i}")));
        h.turn(
            &mut agent,
            &format!("step {i}: {}", "filler text ".repeat(100)),
        )
        .await;
    }

    h.mock.push(MockResponse::text(
        "## Goal\nPort the parser.\n## Remaining work\nsee list",
    ));
    let (tx, _rx) = unbounded_channel();
    let report = agent
        .compress(None, &tx, &CancellationToken::new())
        .await
        .expect("compressed");
    assert!(report.summarized);
    // The todo call and its result were in the summarized middle.
    assert!(
        !agent
            .history()
            .iter()
            .any(|m| m.tool_name.as_deref() == Some("todo"))
    );

    h.mock.push(MockResponse::text("continuing"));
    h.turn(&mut agent, "go on").await;
    let main: Vec<Value> = h
        .mock
        .requests()
        .into_iter()
        .filter(|r| !is_summary_request(r))
        .collect();
    hermes_testkit::assert_request_invariants(&main);
    let last = main.last().unwrap();
    let sent = last["messages"].to_string();
    assert!(
        sent.contains("port the parser"),
        "open item re-injected: {sent}"
    );
    assert!(sent.contains("write the release notes"));
    assert!(
        !sent.contains("survey the repo"),
        "completed items are not carried"
    );

    // `hermes -c`: a resumed agent's todo tool reads the carried list back.
    let sid = agent.session_id().to_string();
    let mut resumed = Agent::start(h.deps.clone(), h.opts.clone(), Some(&sid))
        .await
        .unwrap();
    h.mock
        .push(MockResponse::tool_calls(&[("call_r", "todo", "{}")]));
    h.mock.push(MockResponse::text("read it"));
    h.turn(&mut resumed, "what is left?").await;
    let results = last_tool_messages(&h, "call_r");
    assert!(results.contains("port the parser"), "{results}");

    // A new session starts with an empty list.
    let mut fresh = h.agent().await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_f", "todo", "{}")]));
    h.mock.push(MockResponse::text("empty"));
    h.turn(&mut fresh, "anything?").await;
    let results = last_tool_messages(&h, "call_f");
    assert!(results.contains("\"total\":0"), "{results}");
}
