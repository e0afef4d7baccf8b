//! A model stream that fails after it showed text and is retried: the front ends are told
//! with `StreamRestarted` before the retried attempt streams again, so the answer is never
//! shown twice; the stored history holds only the complete reply.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, final_text};
use hermes_protocol::{AgentEvent, TurnOutcome};
use hermes_testkit::{MockResponse, RawFault, RawHttpServer};

/// The answer text a front end shows when it honours `StreamRestarted`: deltas before the
/// last restart are dropped.
fn visible_text(events: &[AgentEvent]) -> String {
    let mut shown = String::new();
    for e in events {
        match e {
            AgentEvent::TextDelta { text } => shown.push_str(text),
            AgentEvent::StreamRestarted { .. } => shown.clear(),
            _ => {}
        }
    }
    shown
}

fn restarts(events: &[AgentEvent]) -> Vec<(u32, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::StreamRestarted { attempt, reason } => Some((*attempt, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_stream_cut_after_text_is_announced_before_the_retry_streams_again() {
    let h = Harness::new().await;
    let mut agent = h.agent().await;
    let full = MockResponse::text("the complete answer");
    h.mock.push(MockResponse::sse(full.first_sse_events(2)));
    h.mock.push(full);
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed);

    let all: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_ne!(all, "the complete answer", "the cut attempt did show text");
    let r = restarts(&events);
    assert_eq!(r.len(), 1, "{events:?}");
    assert_eq!(r[0].0, 2, "the second attempt starts");
    assert!(r[0].1.contains("ended before"), "{}", r[0].1);
    assert_eq!(visible_text(&events), "the complete answer");
    assert_eq!(final_text(&events), "the complete answer");

    // The restart comes at once, before the retry's status line and any delta of the retry.
    let pos = |f: &dyn Fn(&AgentEvent) -> bool| events.iter().position(f).unwrap();
    let restart = pos(&|e| matches!(e, AgentEvent::StreamRestarted { .. }));
    let status =
        pos(&|e| matches!(e, AgentEvent::Status { message } if message.contains("retrying")));
    assert!(restart < status);

    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert_eq!(stored.len(), 2, "user + the one complete answer");
    assert_eq!(stored[1].message.text(), "the complete answer");
}

#[tokio::test]
async fn a_failure_before_any_text_needs_no_restart() {
    let h = Harness::new().await;
    let mut agent = h.agent().await;
    let full = MockResponse::text("fine");
    h.mock.push(MockResponse::from_bytes(
        503,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"busy"}}"#,
    ));
    h.mock.push(full);
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed, "{events:?}");
    assert!(restarts(&events).is_empty(), "{events:?}");
    assert_eq!(visible_text(&events), "fine");
}

#[tokio::test]
async fn every_retry_of_a_connection_dropped_mid_answer_is_announced() {
    let h = Harness::new().await;
    let full = MockResponse::text("never finished");
    let raw = RawHttpServer::start(RawFault::CutBody {
        body: full.first_sse_events(2).into_bytes().into(),
    })
    .await;
    let mut config = hermes_llm::OpenAiChatConfig::new(raw.base_url(), "mock-model");
    config.timeouts.total = std::time::Duration::from_millis(800);
    let mut deps = h.deps.clone();
    deps.client = std::sync::Arc::new(hermes_llm::OpenAiChatClient::new(config).unwrap());
    let mut agent = hermes_agent::Agent::start(deps, h.opts.clone(), None)
        .await
        .unwrap();
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    let attempts: Vec<u32> = restarts(&events).into_iter().map(|(a, _)| a).collect();
    assert_eq!(attempts, vec![2, 3, 4], "one try and three retries");
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert!(
        stored
            .iter()
            .all(|m| m.message.text() != "never finished" && !m.message.text().contains("never")),
        "no partial answer is stored"
    );
}
