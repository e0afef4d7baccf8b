#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use hermes_protocol::ToolCall;

#[test]
fn configured_threshold_ratio() {
    // `compression.threshold`: 0.7 of a 200k window; 0.3 stays at the 64k floor; 0.95 lifts
    // the 0.85 cap; nonsense falls back to 0.5.
    assert_eq!(compression_threshold_at(0.7, 200_000, 0), 140_000);
    assert_eq!(compression_threshold_at(0.3, 200_000, 0), 64_000);
    assert_eq!(compression_threshold_at(0.95, 200_000, 0), 190_000);
    assert_eq!(
        compression_threshold_at(7.0, 200_000, 0),
        compression_threshold(200_000, 0)
    );
}

#[test]
fn vector_compression_threshold_tokens_every_row() {
    let path = hermes_testkit::shared_path("vectors/numeric_policies.json");
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = v["compression_threshold_tokens"].as_array().unwrap();
    assert!(rows.len() >= 5);
    for row in rows {
        let ctx = row["context"].as_u64().unwrap();
        let max = row["max_tokens"].as_u64().unwrap();
        let want = row["threshold"].as_u64().unwrap();
        assert_eq!(compression_threshold(ctx, max), want, "row {row}");
    }
    // Tiny windows: the 0.85 cap wins over the 64k floor.
    assert_eq!(compression_threshold(2_000, 0), 1_700);
    assert_eq!(compression_threshold(1_000, 2_000), 0);
}

fn long_history(turns: usize) -> Vec<Message> {
    let mut h = Vec::new();
    for i in 0..turns {
        h.push(Message::user(format!(
            "step {i}: please look at file{i}.txt"
        )));
        let mut a = Message::assistant("");
        a.tool_calls.push(ToolCall::new(
            format!("c{i}"),
            "read_file",
            format!(r#"{{"path":"file{i}.txt"}}"#),
        ));
        h.push(a);
        h.push(Message::tool(
            format!("c{i}"),
            "read_file",
            "x".repeat(3000),
        ));
        h.push(Message::assistant(format!("file{i} holds 3000 x")));
    }
    h
}

#[test]
fn plan_keeps_head_and_tail_and_apply_inserts_one_summary() {
    let h = long_history(20);
    let c = ContextCompressor::default();
    let plan = c.plan(&h, 2_000).unwrap();
    assert_eq!(plan.head.len(), 3, "user, call, its result");
    assert!(plan.tail.len() <= 20 && !plan.tail.is_empty());
    assert_eq!(plan.tail.last(), h.last());
    assert_eq!(
        plan.head.len() + plan.middle.len() + plan.tail.len(),
        h.len()
    );
    // Head tool output pruned, with the count of cut characters.
    assert!(plan.head[2].text().contains("1500 more characters"));
    let out = plan.apply("## Goal\nread files");
    assert_eq!(out.len(), plan.head.len() + 1 + plan.tail.len());
    let summary = &out[plan.head.len()];
    assert_eq!(
        summary_body(summary).as_deref(),
        Some("## Goal\nread files")
    );
    assert_ne!(summary.role, out[plan.head.len() + 1].role);
    assert!(c.estimate(&out) < c.estimate(&h) / 2);
}

#[test]
fn recompression_passes_the_previous_summary_for_update() {
    let h = long_history(20);
    let c = ContextCompressor::default();
    let first = c
        .plan(&h, 2_000)
        .unwrap()
        .apply("FIRST SUMMARY: goal is reading files");
    let mut grown = first.clone();
    grown.extend(long_history(10));
    let plan = c.plan(&grown, 2_000).unwrap();
    assert_eq!(
        plan.previous_summary.as_deref(),
        Some("FIRST SUMMARY: goal is reading files")
    );
    let req = plan.summary_request(None, &|s: &str| s.to_string());
    assert!(req.contains("<previous-summary>"));
    assert!(req.contains("FIRST SUMMARY"));
}

#[test]
fn summary_request_redacts_focuses_and_caps() {
    let mut h = vec![
        Message::user("a"),
        Message::assistant("b"),
        Message::user("c"),
    ];
    h.push(Message::user("my key is SECRET123 keep it"));
    h.push(Message::assistant("y".repeat(50_000)));
    h.push(Message::user("last"));
    let c = ContextCompressor::new(CompressionConfig {
        protect_last_n: 1,
        transcript_max_chars: 5_000,
        ..CompressionConfig::default()
    });
    let plan = c.plan(&h, 10).unwrap();
    assert_eq!(plan.middle.len(), 2);
    let req = plan.summary_request(Some("the database"), &|s: &str| {
        s.replace("SECRET123", "***")
    });
    assert!(!req.contains("SECRET123"));
    assert!(req.contains("my key is *** keep it"));
    assert!(req.contains("focus on: the database"));
    assert!(req.chars().count() < 6_000, "{}", req.chars().count());
    assert!(req.contains("characters …]"));
}

#[test]
fn case_c17_prune_only_keeps_every_message_and_pair() {
    let mut h = vec![Message::system("sys")];
    for i in 0..41 {
        h.push(Message::user(format!("u{i}")));
        let mut a = Message::assistant("");
        a.tool_calls
            .push(ToolCall::new(format!("c{i}"), "terminal", "{}"));
        h.push(a);
        h.push(Message::tool(format!("c{i}"), "terminal", "o".repeat(5000)));
    }
    assert_eq!(h.len(), 124);
    let c = ContextCompressor::default();
    let out = c.prune_only(&h, 1_000);
    assert_eq!(out.len(), 124, "message_count_after_failed_summary");
    for (a, b) in h.iter().zip(&out) {
        assert_eq!(a.role, b.role);
        assert_eq!(a.tool_call_id, b.tool_call_id);
        assert_eq!(a.tool_calls.len(), b.tool_calls.len());
    }
    assert!(c.estimate(&out) < c.estimate(&h));
    assert_eq!(out.last(), h.last(), "the tail is untouched");
}

#[test]
fn anti_thrash_after_two_ineffective_compressions() {
    let mut c = ContextCompressor::default();
    assert!(c.should_compress(101, 100));
    assert!(!c.should_compress(100, 100));
    c.record(1000, 950);
    assert!(c.should_compress(101, 100));
    c.record(1000, 960);
    assert!(c.is_thrashing());
    assert!(!c.should_compress(10_000, 100));
    c.record(1000, 500);
    assert!(!c.is_thrashing());
}

#[test]
fn nothing_to_compress_in_a_short_history() {
    let h = vec![Message::user("a"), Message::assistant("b")];
    assert!(ContextCompressor::default().plan(&h, 1_000).is_none());
}
