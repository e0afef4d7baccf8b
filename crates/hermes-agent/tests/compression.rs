//! Context compression in the turn loop against the mock provider (FEATURES §9).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_agent::Agent;
use hermes_context::TokenEstimator;
use hermes_protocol::{AgentEvent, Message, TurnOutcome};
use hermes_testkit::MockResponse;
use serde_json::Value;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

const SUMMARY: &str = "## Goal\nRemember the numbered facts.\n## Remaining work\nnone";

fn statuses(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Status { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn is_summary_request(req: &Value) -> bool {
    req.get("tools")
        .is_none_or(|t| t.as_array().is_none_or(|a| a.is_empty()))
}

fn body_chars(req: &Value) -> usize {
    req["messages"].to_string().chars().count()
}

/// An agent whose threshold sits `headroom` tokens above its empty-history request size.
async fn agent_with_headroom(h: &mut Harness, headroom: u64) -> Agent {
    let probe = h.agent().await;
    let base = probe.estimate_request_tokens();
    // Small windows: threshold = 0.85 · window.
    h.opts.context_window = Some(((base + headroom) as f64 / 0.85).ceil() as u64);
    let agent = h.agent().await;
    assert!(agent.compression_threshold() >= base + headroom - 1);
    agent
}

fn fact(i: usize) -> String {
    format!("fact {i}: {}", "lorem ipsum dolor sit amet ".repeat(12))
}

#[tokio::test]
async fn crossing_the_threshold_compresses_with_a_summary_and_keeps_everything_stored() {
    let mut h = Harness::new().await;
    let mut agent = agent_with_headroom(&mut h, 1_200).await;
    let estimator = TokenEstimator::new();

    // Turn 1 uses a tool so that the compressed middle holds a call/result pair.
    h.mock.push(MockResponse::text("noted 0"));
    h.turn(&mut agent, &fact(0)).await;
    h.mock
        .push(MockResponse::tool_calls(&[("call_a", "skills_list", "{}")]));
    h.mock.push(MockResponse::text("no skills; noted"));
    let (outcome, _) = h.turn(&mut agent, &fact(1)).await;
    assert_eq!(outcome, TurnOutcome::Completed);

    let mut compressed_at = None;
    for i in 2..30 {
        let input = fact(i);
        let predicted =
            agent.estimate_request_tokens() + estimator.estimate_message(&Message::user(&input));
        let crosses = predicted > agent.compression_threshold();
        if crosses {
            h.mock.push(MockResponse::text(SUMMARY));
        }
        h.mock.push(MockResponse::text(&format!("noted {i}")));
        let (outcome, events) = h.turn(&mut agent, &input).await;
        assert_eq!(outcome, TurnOutcome::Completed);
        if crosses {
            let st = statuses(&events);
            assert!(
                st.iter()
                    .any(|s| s.starts_with("context compressed (context over the threshold)")),
                "{st:?}"
            );
            compressed_at = Some(i);
            break;
        }
    }
    let at = compressed_at.expect("the threshold was never crossed");
    assert_eq!(h.mock.pending(), 0);

    let all = h.mock.requests();
    let main: Vec<Value> = all
        .iter()
        .filter(|r| !is_summary_request(r))
        .cloned()
        .collect();
    let summary_reqs: Vec<&Value> = all.iter().filter(|r| is_summary_request(r)).collect();
    assert_eq!(summary_reqs.len(), 1);
    let sreq = summary_reqs[0].to_string();
    assert!(
        sreq.contains("## Completed actions"),
        "our summary prompt is the system message"
    );
    assert!(
        sreq.contains("skills_list"),
        "the middle's tool call is in the transcript"
    );

    // The request after compression is smaller than the one before and holds the summary.
    let before = &main[main.len() - 2];
    let after = &main[main.len() - 1];
    assert!(body_chars(after) < body_chars(before));
    assert!(
        after["messages"]
            .to_string()
            .contains("Remember the numbered facts.")
    );
    assert!(
        after["messages"]
            .to_string()
            .contains(&format!("fact {at}:"))
    );
    hermes_testkit::assert_request_invariants(&main);
    hermes_agent::validate_tool_pairs(&agent.history()).unwrap();

    // Every original message is still in the store; the active ones equal the history.
    let stored = h.store.load_all_messages(agent.session_id()).unwrap();
    for i in 0..=at {
        assert!(
            stored.iter().any(|m| m.message.text() == fact(i)),
            "fact {i} kept in the store"
        );
    }
    assert!(stored.iter().any(|m| !m.active));
    let active: Vec<Message> = h
        .store
        .load_messages(agent.session_id())
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(active, agent.history());
}

#[tokio::test]
async fn context_overflow_error_compresses_and_retries_once() {
    let mut h = Harness::new().await;
    h.opts.context_window = Some(1_000_000);
    h.opts.compression.protect_last_n = 4;
    let mut agent = h.agent().await;
    for i in 0..8 {
        h.mock.push(MockResponse::text(&format!("noted {i}")));
        h.turn(&mut agent, &fact(i)).await;
    }
    let overflow = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error"}}"#;
    let error = || {
        MockResponse::from_bytes(
            400,
            vec![("content-type".into(), "application/json".into())],
            overflow,
        )
    };
    h.mock.push(error());
    h.mock.push(MockResponse::text(SUMMARY));
    h.mock.push(MockResponse::text("answer after compression"));
    let (outcome, events) = h.turn(&mut agent, "and now?").await;
    assert_eq!(outcome, TurnOutcome::Completed, "{events:?}");
    assert_eq!(final_text(&events), "answer after compression");
    assert!(
        statuses(&events)
            .iter()
            .any(|s| s.contains("context overflow"))
    );
    let n = h.mock.requests().len();

    // A second overflow right after the compressed retry is not retried again.
    h.mock.push(error());
    h.mock.push(MockResponse::text(SUMMARY));
    h.mock.push(error());
    let (outcome, _) = h.turn(&mut agent, "once more").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    assert_eq!(h.mock.requests().len(), n + 3);
}

#[tokio::test]
async fn case_c17_failed_summary_keeps_every_message_and_warns() {
    let mut h = Harness::new().await;
    h.opts.context_window = Some(1_000_000);
    h.opts.api_max_retries = 0;
    h.opts.compression.protect_last_n = 4;
    let mut agent = h.agent().await;
    for i in 0..4 {
        h.mock.push(MockResponse::tool_calls(&[(
            &format!("c{i}"),
            "skills_list",
            "{}",
        )]));
        h.mock.push(MockResponse::text(&format!("noted {i}")));
        h.turn(&mut agent, &fact(i)).await;
    }
    let before = agent.history();
    h.mock.push(MockResponse::from_bytes(
        500,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"Connection error."}}"#,
    ));
    let (tx, mut rx) = unbounded_channel();
    let report = agent
        .compress(Some("facts"), &tx, &CancellationToken::new())
        .await
        .expect("fallback still reports");
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    assert!(!report.summarized);
    assert_eq!(
        report.messages_after,
        before.len(),
        "message_count_after_failed_summary"
    );
    assert_eq!(agent.history().len(), before.len());
    assert!(
        statuses(&events)
            .iter()
            .any(|s| s.starts_with("warning: context compression"))
    );
    hermes_agent::validate_tool_pairs(&agent.history()).unwrap();
    let orphans = agent
        .history()
        .iter()
        .filter(|m| m.role == hermes_protocol::Role::Tool)
        .count();
    assert_eq!(orphans, 4, "every result kept with its call");
}

#[tokio::test]
async fn compress_op_through_the_handle_and_system_prompt_rebuilt() {
    let mut h = Harness::new().await;
    h.opts.context_window = Some(1_000_000);
    h.opts.compression.protect_last_n = 2;
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = counter.clone();
    h.deps.prompt = std::sync::Arc::new(move |_: &str, _: &str, _: &[String]| {
        let n = c2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        format!("prompt build {n}")
    });
    let mut agent = h.agent().await;
    for i in 0..5 {
        h.mock.push(MockResponse::text(&format!("noted {i}")));
        h.turn(&mut agent, &fact(i)).await;
    }
    h.mock.push(MockResponse::text(SUMMARY));
    let mut handle = hermes_agent::AgentHandle::spawn(agent);
    handle.submit(hermes_protocol::Op::Compress {
        focus: Some("facts".into()),
    });
    let mut st = Vec::new();
    while let Some(e) = handle.next_event().await {
        match e {
            AgentEvent::Status { message } => st.push(message),
            AgentEvent::TurnFinished { .. } => break,
            _ => {}
        }
    }
    assert!(
        st.iter()
            .any(|s| s.starts_with("context compressed (requested)")),
        "{st:?}"
    );
    let agent = handle.shutdown().await.unwrap();
    assert_eq!(agent.system_prompt(), "prompt build 1");
    let rec = h.store.find_session(agent.session_id()).unwrap().unwrap();
    assert_eq!(rec.system_prompt, "prompt build 1");
    let sreq = h.mock.requests().last().unwrap().to_string();
    assert!(sreq.contains("focus on: facts"));
    assert_eq!(agent.history().len(), 3 + 1 + 2);
}

/// `compression.threshold` (Python Hermes' key) moves the threshold: 0.7 of a 200,000-token
/// window is 140,000 tokens where the default 0.5 gives 100,000.
#[tokio::test]
async fn the_configured_threshold_ratio_moves_the_threshold() {
    let mut h = Harness::new().await;
    h.opts.context_window = Some(200_000);
    assert_eq!(h.agent().await.compression_threshold(), 100_000);
    h.opts.compression.threshold_ratio = 0.7;
    assert_eq!(h.agent().await.compression_threshold(), 140_000);
}

/// Runs `/compress` through the handle and returns the status lines and the agent after it.
async fn compress_now(agent: Agent) -> (Vec<String>, Agent) {
    let mut handle = hermes_agent::AgentHandle::spawn(agent);
    handle.submit(hermes_protocol::Op::Compress { focus: None });
    let mut st = Vec::new();
    while let Some(e) = handle.next_event().await {
        match e {
            AgentEvent::Status { message } => st.push(message),
            AgentEvent::TurnFinished { .. } => break,
            _ => {}
        }
    }
    (st, handle.shutdown().await.unwrap())
}

/// Issue 20 item 10: `/compress` on a short conversation says why there is nothing to
/// compress (everything is in the parts always kept), and sends no summary request.
#[tokio::test]
async fn compress_with_nothing_to_compress_says_why() {
    let mut h = Harness::new().await;
    h.opts.context_window = Some(1_000_000);
    let mut agent = h.agent().await;
    h.mock.push(MockResponse::text("noted 0"));
    h.turn(&mut agent, &fact(0)).await;
    let requests = h.mock.requests().len();
    let before = agent.history().len();
    let (st, agent) = compress_now(agent).await;
    let line = st
        .iter()
        .find(|s| s.starts_with("context compression: nothing to compress yet"))
        .unwrap_or_else(|| panic!("no reason given: {st:?}"));
    assert!(line.contains("always kept"), "{line}");
    assert!(line.contains("message(s) so far"), "{line}");
    assert_eq!(
        h.mock.requests().len(),
        requests,
        "no summary was asked for"
    );
    assert_eq!(agent.history().len(), before);
}

/// Issue 20 item 10: a summary longer than the messages it would replace is not kept: the
/// history is unchanged and the status line says why.
#[tokio::test]
async fn a_summary_longer_than_the_conversation_is_not_kept() {
    let mut h = Harness::new().await;
    h.opts.context_window = Some(1_000_000);
    h.opts.compression.protect_last_n = 2;
    let mut agent = h.agent().await;
    for i in 0..5 {
        h.mock.push(MockResponse::text(&format!("noted {i}")));
        h.turn(&mut agent, &format!("short {i}")).await;
    }
    let before: Vec<String> = agent
        .history()
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    let bloated = format!("## Goal\n{}", "a very long summary line. ".repeat(400));
    h.mock.push(MockResponse::text(&bloated));
    let (st, agent) = compress_now(agent).await;
    assert!(
        is_summary_request(h.mock.requests().last().unwrap()),
        "a summary was asked for"
    );
    let line = st
        .iter()
        .find(|s| s.starts_with("context compression skipped"))
        .unwrap_or_else(|| panic!("no reason given: {st:?}"));
    assert!(line.contains("would not be smaller"), "{line}");
    assert!(
        !st.iter().any(|s| s.starts_with("context compressed")),
        "{st:?}"
    );
    let after: Vec<String> = agent
        .history()
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    assert_eq!(after, before, "the history is unchanged");
}
