//! Busy mode `steer`: messages queued while a turn runs reach the model after the next tool
//! batch, as one user message, and are stored with the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Harness;
use hermes_agent::SteerQueue;
use hermes_protocol::{Role, TurnOutcome};
use hermes_testkit::MockResponse;

#[tokio::test]
async fn steered_messages_follow_the_tool_results_and_are_stored() {
    let h = Harness::new().await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "skills_list", "{}")]));
    h.mock
        .push(MockResponse::text("Done, and skipping the changelog."));
    let mut agent = h.agent().await;
    let queue = SteerQueue::new();
    agent.set_steer_queue(queue.clone());
    queue.push("also bump the version");
    queue.push("skip the changelog");
    let (outcome, _) = h.turn(&mut agent, "build the release").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert!(queue.is_empty());
    let requests = h.checked_requests();
    assert_eq!(requests.len(), 2);
    // Nothing steered reaches the first call; the second has it after the tool result.
    let first = requests[0]["messages"].to_string();
    assert!(!first.contains("also bump"), "{first}");
    let msgs = requests[1]["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(
        last["content"],
        "also bump the version\n\nskip the changelog"
    );
    assert_eq!(msgs[msgs.len() - 2]["role"], "tool");
    let stored: Vec<Role> = h
        .store
        .load_messages(agent.session_id())
        .unwrap()
        .iter()
        .map(|m| m.message.role)
        .collect();
    assert_eq!(
        stored,
        vec![
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::Assistant
        ]
    );
}

#[tokio::test]
async fn new_sessions_carry_the_gateway_session_key() {
    let mut h = Harness::new().await;
    h.opts.session_key = Some("agent:main:telegram:dm:1".into());
    let agent = h.agent().await;
    let found = h
        .store
        .latest_session_for_key("agent:main:telegram:dm:1")
        .unwrap()
        .unwrap();
    assert_eq!(found.id, agent.session_id());
}
