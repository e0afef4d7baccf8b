//! Usage and cost (FEATURES §2): each call's cost comes from hermes-llm's price table and is
//! summed per session in the store; a model without a price has an unknown (NULL) cost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::Harness;
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::Usage;
use hermes_testkit::MockResponse;

async fn harness_for(model: &str) -> Harness {
    let mut h = Harness::new().await;
    let client = OpenAiChatClient::new(OpenAiChatConfig::new(h.mock.base_url(), model)).unwrap();
    h.deps.client = Arc::new(client);
    h
}

#[tokio::test]
async fn priced_model_costs_are_summed_per_session() {
    let h = harness_for("gpt-4o").await;
    let mut agent = h.agent().await;
    // Mock usage: 10 prompt tokens, chars/4 + 1 completion tokens per answer.
    h.mock
        .push(MockResponse::tool_calls(&[("c1", "skills_list", "{}")]));
    h.mock.push(MockResponse::text("done"));
    h.turn(&mut agent, "go").await;
    let record = h.store.get_session(agent.session_id()).unwrap().unwrap();
    let calls = [
        Usage {
            input_tokens: 10,
            output_tokens: 10,
            ..Usage::default()
        },
        Usage {
            input_tokens: 10,
            output_tokens: 2,
            ..Usage::default()
        },
    ];
    let expected: f64 = calls
        .iter()
        .map(|u| hermes_llm::pricing::cost_usd("gpt-4o", u).unwrap())
        .sum();
    assert_eq!(record.input_tokens, 20);
    assert_eq!(record.output_tokens, 12);
    let cost = record.cost_usd.expect("gpt-4o has a price");
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    // 20 input tokens at $2.50/M and 12 output at $10/M.
    assert!((cost - (20.0 * 2.5 + 12.0 * 10.0) / 1e6).abs() < 1e-12);
}

#[tokio::test]
async fn unpriced_model_has_unknown_cost_but_counts_tokens() {
    let h = harness_for("mock-model").await;
    let mut agent = h.agent().await;
    h.mock.push(MockResponse::text("hello"));
    h.turn(&mut agent, "hi").await;
    let record = h.store.get_session(agent.session_id()).unwrap().unwrap();
    assert_eq!(record.input_tokens, 10);
    assert_eq!(record.cost_usd, None);
    assert_eq!(hermes_llm::pricing::format_cost(record.cost_usd), "unknown");
}
