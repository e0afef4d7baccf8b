//! The learning loop against the mock provider (FEATURES §8, issue 4 item 9): periodic
//! memory and skill reviews in a background fork after the reply, the fork's limits (memory
//! and skill tools only, at most 8 calls, no session writes), the notice, and the
//! session-end review before `/new`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use hermes_agent::{Agent, AgentHandle, LearningOptions};
use hermes_context::memory::{MemorySnapshot, MemoryStore};
use hermes_context::{ReviewKind, learning_tools};
use hermes_protocol::config::MemoryConfig;
use hermes_protocol::{AgentEvent, Op, TurnOutcome};
use hermes_testkit::MockResponse;
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// A harness whose agents offer the learning tools and build their prompt from the memory
/// snapshot at session start (like the CLI), with the learning loop configured by `learning`.
async fn learning_harness(learning: LearningOptions) -> Harness {
    let mut h = Harness::new().await;
    let home = h.home.home().clone();
    h.deps.tools.retain(|t| t.spec().name != "skills_list");
    h.deps
        .tools
        .extend(learning_tools(&home, Some(h.store.clone())));
    let prompt_home = home.clone();
    h.deps.prompt = Arc::new(move |_m: &str, _p: &str, _t: &[String]| {
        let snap = MemorySnapshot::load(&MemoryStore::from_config(
            &prompt_home,
            &MemoryConfig::default(),
        ));
        let mut text = SYSTEM_PROMPT.to_string();
        if let Some(block) = snap.memory_block() {
            text.push_str("\n\n");
            text.push_str(&block);
        }
        text
    });
    h.opts.learning = learning;
    h
}

fn every(memory: u32, skills: u32) -> LearningOptions {
    LearningOptions {
        memory_interval: memory,
        skill_interval: skills,
        ..LearningOptions::default()
    }
}

/// Runs one turn and returns its outcome and receiver (left open: a background review may
/// still send its notice).
async fn turn(
    h: &Harness,
    agent: &mut Agent,
    input: &str,
) -> (TurnOutcome, UnboundedReceiver<AgentEvent>) {
    let (tx, rx) = unbounded_channel();
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        agent.run_turn(input, &tx, CancellationToken::new()),
    )
    .await
    .expect("turn hung");
    let _ = h;
    (outcome, rx)
}

fn drain(rx: &mut UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

fn status_lines(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Status { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

fn stored_messages(h: &Harness, session: &str) -> usize {
    h.store.load_messages(session).unwrap().len()
}

const ENTRY: &str = "User wants answers in British English";

#[tokio::test]
async fn after_ten_user_turns_a_background_review_saves_memory_for_the_next_session() {
    let h = learning_harness(LearningOptions::hermes_defaults()).await;
    let mut agent = h.agent().await;
    let session = agent.session_id().to_string();
    for i in 1..10 {
        h.mock.push(MockResponse::text(&format!("answer {i}")));
        let (outcome, _) = turn(&h, &mut agent, &format!("question {i}")).await;
        assert_eq!(outcome, TurnOutcome::Completed);
    }
    assert_eq!(h.mock.requests().len(), 9, "no review before the 10th turn");

    // Turn 10: the reply, then the review (a memory call, then its answer).
    h.mock.push(MockResponse::text("answer 10"));
    h.mock.push(MockResponse::tool_calls(&[(
        "rev_1",
        "memory",
        &format!(r#"{{"action":"add","target":"memory","content":"{ENTRY}"}}"#),
    )]));
    h.mock.push(MockResponse::text("Saved."));
    let (outcome, mut rx) = turn(&h, &mut agent, "please always use British spelling").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    // The reply is out before the review has made a single call: the turn's events end
    // with the final answer and the mock has seen only the 10 turn requests.
    let delivered = drain(&mut rx);
    assert!(matches!(
        delivered.last(),
        Some(AgentEvent::TurnFinished { final_text, .. }) if final_text == "answer 10"
    ));
    assert_eq!(
        h.mock.requests().len(),
        10,
        "the review starts after the reply"
    );

    let report = agent.wait_for_review().await.expect("a review ran");
    assert_eq!(report.kind, ReviewKind::Memory);
    assert_eq!(report.saved, vec!["memory updated".to_string()]);
    assert_eq!(report.iterations, 2);
    assert_eq!(
        status_lines(&drain(&mut rx)),
        vec!["memory updated".to_string()],
        "one short notice"
    );

    let requests = h.checked_requests();
    assert_eq!(requests.len(), 12);
    let (turn10, review) = (&requests[9], &requests[10]);
    // The fork reuses the cached prefix: same system prompt, same tools, same history.
    assert_eq!(review["messages"][0], turn10["messages"][0]);
    assert_eq!(review["tools"], turn10["tools"]);
    let n = turn10["messages"].as_array().unwrap().len();
    assert_eq!(
        review["messages"].as_array().unwrap()[..n],
        turn10["messages"].as_array().unwrap()[..]
    );
    let ask = last_user_text(review);
    assert!(ask.contains("Background review"), "{ask}");
    assert!(ask.contains("Nothing to save."), "{ask}");

    // No session writes: 10 user + 10 assistant messages, one session.
    assert_eq!(stored_messages(&h, &session), 20);
    assert_eq!(h.store.list_sessions(10, 0).unwrap().len(), 1);
    // The current session keeps its frozen prompt; the next one shows the entry.
    assert!(!agent.system_prompt().contains(ENTRY));
    h.mock.push(MockResponse::text("answer 11"));
    turn(&h, &mut agent, "question 11").await;
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 13, "the counter started again");
    assert!(
        !requests[12]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains(ENTRY)
    );
    agent.new_session().await.unwrap();
    assert!(
        agent.system_prompt().contains(ENTRY),
        "{}",
        agent.system_prompt()
    );
}

#[tokio::test]
async fn the_models_own_memory_call_resets_the_memory_counter() {
    let h = learning_harness(every(3, 0)).await;
    let mut agent = h.agent().await;
    h.mock.push(MockResponse::text("a1"));
    turn(&h, &mut agent, "q1").await;
    h.mock.push(MockResponse::tool_calls(&[(
        "c1",
        "memory",
        r#"{"action":"add","content":"Likes short answers"}"#,
    )]));
    h.mock.push(MockResponse::text("a2"));
    turn(&h, &mut agent, "q2").await;
    h.mock.push(MockResponse::text("a3"));
    turn(&h, &mut agent, "q3").await;
    assert!(
        agent.wait_for_review().await.is_none(),
        "counter was reset at turn 2"
    );
    h.mock.push(MockResponse::text("a4"));
    turn(&h, &mut agent, "q4").await;
    assert!(agent.wait_for_review().await.is_none());
    h.mock.push(MockResponse::text("a5"));
    h.mock.push(MockResponse::text("Nothing to save."));
    let (_, mut rx) = turn(&h, &mut agent, "q5").await;
    let report = agent
        .wait_for_review()
        .await
        .expect("due 3 turns after the memory call");
    assert_eq!(report.kind, ReviewKind::Memory);
    assert!(report.saved.is_empty());
    assert_eq!(report.final_text, "Nothing to save.");
    // Silent: nothing after the turn's own events.
    let events = drain(&mut rx);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::TurnFinished { .. })
    ));
}

#[tokio::test]
async fn skill_review_runs_only_memory_and_skill_tools_and_stops_at_eight_calls() {
    let h = learning_harness(every(0, 2)).await;
    let mut agent = h.agent().await;
    let session = agent.session_id().to_string();
    // One turn with two tool-calling iterations makes the skill review due.
    h.mock
        .push(MockResponse::tool_calls(&[("t1", "skills_list", "{}")]));
    h.mock
        .push(MockResponse::tool_calls(&[("t2", "skills_list", "{}")]));
    h.mock.push(MockResponse::text("done"));
    // The review: a refused terminal call, a created skill, then calls until the cap.
    let marker = h.path("should-not-exist");
    h.mock.push(MockResponse::tool_calls(&[(
        "r1",
        "terminal",
        &format!(r#"{{"command":"touch {}"}}"#, marker.display()),
    )]));
    let skill = "---\\nname: deploy-flow\\ndescription: How this user deploys.\\n---\\n1. Build.\\n2. Ship.\\n";
    h.mock.push(MockResponse::tool_calls(&[(
        "r2",
        "skill_manage",
        &format!(r#"{{"action":"create","name":"deploy-flow","content":"{skill}"}}"#),
    )]));
    h.mock.set_fallback(Some(MockResponse::tool_calls(&[(
        "rn",
        "skills_list",
        "{}",
    )])));
    let (outcome, _rx) = turn(&h, &mut agent, "ship it").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let report = agent.wait_for_review().await.expect("skill review ran");
    assert_eq!(report.kind, ReviewKind::Skills);
    assert_eq!(report.iterations, 8, "{report:?}");
    assert_eq!(report.refused, vec!["terminal".to_string()]);
    assert!(!marker.exists(), "a refused call does not run");
    assert_eq!(
        report.saved,
        vec!["skill created: deploy-flow".to_string()],
        "{report:?}"
    );
    assert_eq!(
        report.notice().as_deref(),
        Some("skill created: deploy-flow")
    );
    let skill_files: Vec<_> = walk(&h.home.home().skills_dir());
    assert!(
        skill_files
            .iter()
            .any(|p| p.ends_with("deploy-flow/SKILL.md")),
        "{skill_files:?}"
    );
    // 3 turn requests + 8 review requests; the session holds only the turn's messages.
    assert_eq!(h.mock.requests().len(), 11);
    assert_eq!(stored_messages(&h, &session), 6);
    let results = tool_messages(&h.mock.requests()[4]);
    let refused = results.iter().find(|(id, _)| id == "r1").unwrap();
    assert!(
        refused.1.contains("cannot run during a background review"),
        "{results:?}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test]
async fn new_session_runs_the_session_end_review_first() {
    // One turn is far from the periodic review; the session-end review runs anyway.
    let h = learning_harness(every(10, 0)).await;
    let agent = h.agent().await;
    let mut handle = AgentHandle::spawn(agent);
    h.mock.push(MockResponse::text("hello"));
    handle.submit(Op::user("I am Ada and I deploy on Fridays"));
    wait_finished(&mut handle).await;
    h.mock.push(MockResponse::tool_calls(&[(
        "e1",
        "memory",
        r#"{"action":"add","content":"Ada deploys on Fridays"}"#,
    )]));
    h.mock.push(MockResponse::text("Saved."));
    handle.submit(Op::NewSession);
    let events = wait_finished(&mut handle).await;
    let lines = status_lines(&events);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], "memory updated");
    assert!(lines[1].starts_with("new session"), "{lines:?}");
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 3);
    let ask = last_user_text(&requests[1]);
    assert!(ask.contains("Session-end review"), "{ask}");
    assert!(ask.contains("MEMORY.md (your notes):\n(empty)"), "{ask}");

    // The new session's prompt shows the entry; a /new right away has nothing to review.
    handle.submit(Op::NewSession);
    wait_finished(&mut handle).await;
    assert_eq!(h.mock.requests().len(), 3);
    let agent = handle.shutdown().await.unwrap();
    assert!(agent.system_prompt().contains("Ada deploys on Fridays"));
}

#[tokio::test]
async fn no_session_end_review_when_the_learning_loop_is_off() {
    let h = learning_harness(every(0, 0)).await;
    let mut handle = AgentHandle::spawn(h.agent().await);
    h.mock.push(MockResponse::text("hello"));
    handle.submit(Op::user("hi"));
    wait_finished(&mut handle).await;
    handle.submit(Op::NewSession);
    wait_finished(&mut handle).await;
    assert_eq!(h.mock.requests().len(), 1);
    handle.shutdown().await;
}

async fn wait_finished(handle: &mut AgentHandle) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(60), handle.next_event())
            .await
            .expect("hung")
            .expect("agent gone");
        let done = matches!(e, AgentEvent::TurnFinished { .. });
        out.push(e);
        if done {
            return out;
        }
    }
}
