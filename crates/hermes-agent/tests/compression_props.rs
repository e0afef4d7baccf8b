//! Property: whatever the history, the compressed history (and the prune-only fallback) of its
//! repaired form keeps every tool call paired with its results (ARCHITECTURE §2 invariant 2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_agent::{repair_history, validate_tool_pairs};
use hermes_context::{CompressionConfig, ContextCompressor};
use hermes_protocol::{Message, ToolCall};
use proptest::prelude::*;

/// 0 user, 1 assistant text, 2 assistant with calls, 3 tool result (maybe orphan/misplaced).
fn history() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec((0u8..4, 0usize..4, 0usize..400), 0..60).prop_map(|items| {
        items
            .into_iter()
            .enumerate()
            .map(|(i, (kind, n, len))| match kind {
                0 => Message::user("u".repeat(len)),
                1 => Message::assistant("a".repeat(len)),
                2 => {
                    let mut m = Message::assistant("");
                    m.tool_calls = (0..n.max(1))
                        .map(|k| ToolCall::new(format!("c{}", (i + k) % 7), "t", "{}"))
                        .collect();
                    m
                }
                _ => Message::tool(format!("c{}", (i + n) % 7), "t", "r".repeat(len)),
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn compressed_history_keeps_tool_pairs(h in history(), first in 0usize..5, last in 1usize..25, budget in 1u64..2_000) {
        let (repaired, _) = repair_history(&h);
        let c = ContextCompressor::new(CompressionConfig {
            protect_first_n: first,
            protect_last_n: last,
            prune_keep_chars: 50,
            ..CompressionConfig::default()
        });
        if let Some(plan) = c.plan(&repaired, budget) {
            let out = plan.apply("summary");
            prop_assert!(validate_tool_pairs(&out).is_ok(), "{:?}", validate_tool_pairs(&out));
            prop_assert_eq!(out.len(), plan.head.len() + 1 + plan.tail.len());
            prop_assert!(out.len() <= repaired.len() + 1);
        }
        let fallback = c.prune_only(&repaired, budget);
        prop_assert!(validate_tool_pairs(&fallback).is_ok());
        prop_assert_eq!(fallback.len(), repaired.len());
    }
}
