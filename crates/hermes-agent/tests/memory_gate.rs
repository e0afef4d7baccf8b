//! The learning loop's memory writes go through the same write gate as the model's own
//! `memory` calls (seed 004 §5.2, issue 27 item 4): a background review that tries to save
//! low-information text is refused with the reason, and a near-duplicate it saves updates the
//! existing entry instead of adding one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use hermes_agent::LearningOptions;
use hermes_context::memory::{MemoryOp, MemoryStore, MemoryTarget};
use hermes_context::{ReviewKind, learning_tools};
use hermes_protocol::TurnOutcome;
use hermes_testkit::MockResponse;
use serde_json::Value;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

const EXISTING: &str = "User prefers dark mode in every editor and terminal";
const NEAR_DUPLICATE: &str = "User prefers the dark mode theme in every editor and terminal";

#[tokio::test]
async fn a_review_is_refused_low_information_text_and_merges_a_near_duplicate() {
    let mut h = Harness::new().await;
    let home = h.home.home().clone();
    let store = MemoryStore::new(&home);
    store
        .apply(
            MemoryTarget::Memory,
            &[MemoryOp::Add {
                content: EXISTING.into(),
            }],
        )
        .unwrap();
    h.deps.tools.retain(|t| t.spec().name != "skills_list");
    h.deps
        .tools
        .extend(learning_tools(&home, Some(h.store.clone())));
    h.opts.learning = LearningOptions {
        memory_interval: 1,
        skill_interval: 0,
        ..LearningOptions::default()
    };
    let mut agent = h.agent().await;

    h.mock.push(MockResponse::text("answer 1"));
    h.mock.push(MockResponse::tool_calls(&[
        (
            "rev_1",
            "memory",
            r#"{"action":"add","content":"Noted, remember this"}"#,
        ),
        (
            "rev_2",
            "memory",
            &format!(r#"{{"action":"add","content":"{NEAR_DUPLICATE}"}}"#),
        ),
    ]));
    h.mock.push(MockResponse::text("Saved."));
    let (tx, _rx) = unbounded_channel();
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        agent.run_turn("I like dark themes", &tx, CancellationToken::new()),
    )
    .await
    .expect("turn hung");
    assert_eq!(outcome, TurnOutcome::Completed);
    let report = agent.wait_for_review().await.expect("a review ran");
    assert_eq!(report.kind, ReviewKind::Memory);
    assert_eq!(report.saved, vec!["memory updated".to_string()]);

    // The review's second call saw both tool results: the refusal with its reason, the merge.
    let requests = h.checked_requests();
    let results = tool_messages(requests.last().unwrap());
    let body = |id: &str| -> Value {
        let (_, content) = results.iter().find(|(c, _)| c == id).unwrap();
        serde_json::from_str(content).unwrap()
    };
    let refused = body("rev_1");
    assert_eq!(refused["reason"], "low_information", "{refused}");
    assert_eq!(refused["rule"], "restatement", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("Write the fact itself"),
        "{refused}"
    );
    let merged = body("rev_2");
    assert_eq!(merged["merged"][0]["existing_entry"], EXISTING, "{merged}");
    assert_eq!(merged["entries"], 1, "{merged}");

    assert_eq!(
        std::fs::read_to_string(store.path(MemoryTarget::Memory)).unwrap(),
        NEAR_DUPLICATE
    );
}
