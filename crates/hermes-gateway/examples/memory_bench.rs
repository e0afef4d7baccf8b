//! Memory harness (issue 7 "Memory"): 1,000 routed sessions of 20 messages each go through
//! the gateway core (fake platform, mock model on loopback), then the process RSS is reported
//! with the agent cache full ("live") and emptied ("idle"). The mock provider runs in the same
//! process, so the figures are an upper bound for the gateway itself.
//!
//! `cargo run -p hermes-gateway --example memory_bench [-- SESSIONS]`; prints one JSON line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use common::{FakeAdapter, Harness, open_config};
use hermes_gateway::ChatType;
use hermes_protocol::Message;
use hermes_store::NewSession;
use hermes_testkit::MockResponse;

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let sessions: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let h = Harness::new().await;
    let start_kb = rss_kb();
    // 18 stored messages per session; the routed turn adds the 19th and 20th.
    for i in 0..sessions {
        let id = format!("bench_{i:05}");
        h.store
            .create_session(&NewSession {
                id: id.clone(),
                source: "bench".into(),
                session_key: Some(format!("agent:main:bench:dm:{i}")),
                model: "mock-model".into(),
                provider: "custom".into(),
                system_prompt: common::SYSTEM_PROMPT.into(),
                ..NewSession::default()
            })
            .unwrap();
        for j in 0..9 {
            h.store
                .append_message(
                    &id,
                    &Message::user(format!("question {j} of session {i}")),
                    None,
                )
                .unwrap();
            h.store
                .append_message(&id, &Message::assistant(format!("answer {j}")), None)
                .unwrap();
        }
        h.mock.push(MockResponse::text("ok"));
    }
    let (adapter, _inject) = FakeAdapter::new("bench");
    let gw = h.gateway(open_config("bench"), adapter.clone());
    for i in 0..sessions {
        let user = i.to_string();
        gw.handle(common::message(
            "bench",
            ChatType::Dm,
            &user,
            &user,
            "one more",
        ))
        .await;
    }
    gw.wait_idle().await;
    let live_kb = rss_kb();
    let cached = gw.cached_agents();
    gw.shutdown().await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let idle_kb = rss_kb();
    let replies = adapter.texts().len();
    println!(
        "{{\"sessions\":{sessions},\"messages_per_session\":20,\"replies\":{replies},\"cached_agents\":{cached},\"rss_kb_start\":{start_kb},\"rss_kb_live\":{live_kb},\"rss_kb_idle\":{idle_kb}}}"
    );
}
