//! Property: `needs_no_repair` only says yes when `repair_history` would hand back the very
//! same history with a clean report (the request builder then copies the history instead of
//! repairing it, issue 6), and it says yes for the histories the agent writes itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_agent::{needs_no_repair, repair_history};
use hermes_protocol::{Message, ToolCall};
use proptest::prelude::*;

/// Ids that collide through their aliases (C14): composite, trimmed and repeated forms.
const IDS: [&str; 8] = ["a", "b", "a|b", " a", "b|c", "c", "a|a", "call_1"];

/// One block of a conversation and a flaw to put into it (0..=3: none).
fn block() -> impl Strategy<Value = (u8, Vec<usize>, u8)> {
    (
        0u8..4,
        prop::collection::vec(0usize..IDS.len(), 1..4),
        0u8..12,
    )
}

fn build(blocks: &[(u8, Vec<usize>, u8)]) -> Vec<Message> {
    let mut out = Vec::new();
    for (kind, ids, flaw) in blocks {
        match kind {
            0 => out.push(Message::user("question")),
            1 => out.push(Message::assistant(if *flaw == 4 { " " } else { "answer" })),
            2 if *flaw == 5 => out.push(Message::system("system")),
            _ => {
                let mut call = Message::assistant("");
                call.tool_calls = ids
                    .iter()
                    .map(|&i| ToolCall::new(IDS[i], "t", "{}"))
                    .collect();
                out.push(call);
                for (k, &i) in ids.iter().enumerate() {
                    let id = match flaw {
                        6 if k == 0 => IDS[(i + 1) % IDS.len()],
                        7 if k == 0 => continue,
                        _ => IDS[i],
                    };
                    let mut result = Message::tool(id, "t", format!("result {k}"));
                    if *flaw == 8 {
                        result.tool_name = None;
                    }
                    out.push(result);
                }
                if *flaw == 9 {
                    out.push(Message::tool(IDS[ids[0]], "t", "a second result"));
                }
                if *flaw == 10 {
                    // The results arrive after a later user message.
                    let results = out.split_off(out.len() - ids.len());
                    out.push(Message::user("meanwhile"));
                    out.extend(results);
                }
            }
        }
    }
    out
}

proptest! {
    #[test]
    fn a_history_needing_no_repair_comes_back_unchanged(blocks in prop::collection::vec(block(), 0..12)) {
        let h = build(&blocks);
        if needs_no_repair(&h) {
            let (out, report) = repair_history(&h);
            prop_assert!(report.is_clean(), "{report:?} for {h:?}");
            prop_assert_eq!(out, h);
        }
    }
}

#[test]
fn the_agents_own_histories_need_no_repair() {
    let mut h = Vec::new();
    for n in 0..50 {
        h.push(Message::user(format!("turn {n}")));
        let mut call = Message::assistant("");
        call.tool_calls = vec![
            ToolCall::new(format!("call_{n}"), "read_file", "{}"),
            ToolCall::new(format!("call_{n}b|fc_{n}"), "terminal", "{}"),
        ];
        h.push(call);
        h.push(Message::tool(format!("call_{n}"), "read_file", "text"));
        h.push(Message::tool(
            format!("call_{n}b|fc_{n}"),
            "terminal",
            "out",
        ));
        h.push(Message::assistant("done"));
    }
    assert!(needs_no_repair(&h));
    // Each flaw the repair fixes makes it say no.
    let mut missing = h.clone();
    missing.pop();
    missing.pop();
    assert!(!needs_no_repair(&missing), "unanswered call");
    let mut orphan = h.clone();
    orphan.push(Message::tool("call_x", "t", "x"));
    assert!(!needs_no_repair(&orphan), "orphan result");
    let mut empty = h.clone();
    empty.push(Message::assistant(""));
    assert!(!needs_no_repair(&empty), "empty assistant message");
    let mut system = h.clone();
    system.insert(0, Message::system("s"));
    assert!(!needs_no_repair(&system), "system message");
    let mut trimmed = h;
    let last_result = trimmed.len() - 2;
    trimmed[last_result].tool_call_id = Some(" call_49b|fc_49".into());
    assert!(
        !needs_no_repair(&trimmed),
        "id that only matches once trimmed"
    );
}
