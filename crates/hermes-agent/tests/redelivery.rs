//! A message delivered again after its turn started and did not finish (issue 21: a replica
//! killed or stopped mid-turn, the message taken over by another): the new turn continues
//! what is stored instead of storing the question a second time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Harness, final_text};
use hermes_agent::Agent;
use hermes_protocol::{AgentEvent, Role, TurnOutcome};
use hermes_testkit::MockResponse;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

fn stored_user_texts(h: &Harness, session: &str) -> Vec<String> {
    h.store
        .load_messages(session)
        .unwrap()
        .into_iter()
        .filter(|m| m.message.role == Role::User)
        .map(|m| m.message.text())
        .collect()
}

async fn redelivered(agent: &mut Agent, input: &str) -> (TurnOutcome, Vec<AgentEvent>) {
    let (tx, mut rx) = unbounded_channel();
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        agent.run_redelivered_turn(input, &tx, CancellationToken::new()),
    )
    .await
    .expect("turn hung");
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    (outcome, events)
}

#[tokio::test]
async fn a_redelivered_message_continues_its_unfinished_turn_and_is_stored_once() {
    let h = Harness::new().await;
    let mut first = h.agent().await;
    h.mock.push(MockResponse::text("one"));
    h.turn(&mut first, "first question").await;
    let session = first.session_id().to_string();

    // The turn for "cut me" stores the question, then its process stops mid-call.
    h.mock
        .push(MockResponse::text("never seen").with_delay(Duration::from_secs(30)));
    let (tx, _rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel();
    });
    let outcome = first.run_turn("cut me", &tx, cancel).await;
    assert_eq!(outcome, TurnOutcome::Interrupted);
    assert_eq!(
        stored_user_texts(&h, &session),
        ["first question", "cut me"]
    );

    // Another process takes the message over: one question stored, one answer.
    let mut taker = Agent::start(h.deps.clone(), h.opts.clone(), Some(&session))
        .await
        .unwrap();
    h.mock.push(MockResponse::text("answered"));
    let (outcome, events) = redelivered(&mut taker, "cut me").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "answered");
    assert_eq!(
        stored_user_texts(&h, &session),
        ["first question", "cut me"]
    );
    let last = h.checked_requests().pop().unwrap().to_string();
    assert_eq!(last.matches("cut me").count(), 1, "{last}");

    // Once answered, the same text delivered again is a new question (an ordinary turn),
    // and so is any other text.
    h.mock.push(MockResponse::text("again"));
    redelivered(&mut taker, "cut me").await;
    h.mock.push(MockResponse::text("new"));
    redelivered(&mut taker, "another").await;
    assert_eq!(
        stored_user_texts(&h, &session),
        ["first question", "cut me", "cut me", "another"]
    );
}
