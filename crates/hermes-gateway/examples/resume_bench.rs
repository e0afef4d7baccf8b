//! Session resume harness (issue 24 §3): the time to bring a released session of 200 stored
//! messages back into memory — what the gateway does when a message arrives for a session
//! whose agent was evicted (`hermes_session_resume_duration_seconds`): the agent is built
//! for the routed session and its history loaded and repaired from the store. The test
//! factory of the gateway's tests builds the agents (the terminal toolset, a mock model on
//! loopback that is never called).
//!
//! `cargo run --release -p hermes-gateway --example resume_bench [-- ROUNDS]`; prints one
//! JSON line with p50/p99 in milliseconds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Instant;

use common::Harness;
use hermes_gateway::{AgentFactory, AgentSpec};
use hermes_protocol::{Message, ToolCall};
use hermes_store::NewSession;
use hermes_tools::{Approval, FixedApprover};

/// Messages in the resumed session.
const MESSAGES: usize = 200;

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let h = Harness::new().await;
    let id = "bench_resume".to_string();
    let key = "agent:main:bench:dm:1".to_string();
    h.store
        .create_session(&NewSession {
            id: id.clone(),
            source: "bench".into(),
            session_key: Some(key.clone()),
            model: "mock-model".into(),
            provider: "custom".into(),
            system_prompt: common::SYSTEM_PROMPT.into(),
            ..NewSession::default()
        })
        .unwrap();
    // Turns of four messages: a question, a tool call, its result, the answer.
    for turn in 0..MESSAGES / 4 {
        let call = ToolCall {
            id: format!("call_{turn}"),
            name: "terminal".into(),
            arguments: format!("{{\"command\":\"ls src/part_{turn}\"}}"),
        };
        let mut asking = Message::assistant(String::new());
        asking.tool_calls = vec![call];
        for m in [
            Message::user(format!(
                "what is in part {turn} of the project? {}",
                "x".repeat(200)
            )),
            asking,
            Message::tool(
                format!("call_{turn}"),
                "terminal",
                "a.rs\nb.rs\n".repeat(20),
            ),
            Message::assistant(format!("Part {turn} holds two files. {}", "y".repeat(300))),
        ] {
            h.store.append_message(&id, &m, None).unwrap();
        }
    }
    let mut ms = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let spec = AgentSpec {
            session_key: key.clone(),
            resume: Some(id.clone()),
            source: "bench".into(),
            ephemeral_prompt: None,
            approver: Arc::new(FixedApprover(Approval::Deny)),
            origin: None,
            model: None,
        };
        let started = Instant::now();
        let agent = h.factory.build(spec).await.unwrap();
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(agent.history().len(), MESSAGES);
        drop(agent);
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{{\"messages\":{MESSAGES},\"rounds\":{rounds},\"resume_p50_ms\":{:.3},\"resume_p99_ms\":{:.3}}}",
        at(0.5),
        at(0.99)
    );
}
