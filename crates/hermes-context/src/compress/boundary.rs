//! Where to cut a history into protected head, summarized middle and protected tail
//! (FEATURES §9: "keep the first 3 messages and a token-budgeted tail (≈20 messages), with
//! boundaries that never split a tool call from its results").
//!
//! A boundary index `i` is valid when `history[i]` is not a tool result (or `i` is the end):
//! the results of an assistant message's calls always follow it directly (the agent repairs
//! the history first), so a cut before a non-tool message never separates a call from its
//! results.

use hermes_protocol::{Message, Role};

use crate::TokenEstimator;

/// The cut of a history: `head = ..head_end`, `middle = head_end..tail_start`,
/// `tail = tail_start..`. Always `head_end <= tail_start <= len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// End (exclusive) of the protected head.
    pub head_end: usize,
    /// Start of the protected tail.
    pub tail_start: usize,
}

fn is_boundary(history: &[Message], i: usize) -> bool {
    history.get(i).is_none_or(|m| m.role != Role::Tool)
}

/// Computes the split. The head is the first `protect_first_n` messages, extended past any
/// tool results that follow them. The tail grows backwards from the end while it has fewer than
/// `protect_last_n` messages and stays within `tail_budget_tokens` (estimated tokens), but holds
/// at least the last message; its start then moves back to the assistant message owning any
/// tool results it begins with.
pub fn split(
    history: &[Message],
    protect_first_n: usize,
    protect_last_n: usize,
    tail_budget_tokens: u64,
    estimator: &TokenEstimator,
) -> Split {
    let len = history.len();
    let mut head_end = protect_first_n.min(len);
    while !is_boundary(history, head_end) {
        head_end += 1;
    }
    let mut tail_start = len;
    let mut tokens = 0u64;
    while tail_start > head_end {
        let cost = estimator.estimate_message(&history[tail_start - 1]);
        let count = len - tail_start;
        if count > 0 && (count >= protect_last_n.max(1) || tokens + cost > tail_budget_tokens) {
            break;
        }
        tokens += cost;
        tail_start -= 1;
    }
    while tail_start > head_end && !is_boundary(history, tail_start) {
        tail_start -= 1;
    }
    Split {
        head_end,
        tail_start: tail_start.max(head_end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    fn calls(n: usize, id: &str) -> Vec<Message> {
        let mut a = Message::assistant("");
        a.tool_calls = (0..n)
            .map(|k| ToolCall::new(format!("{id}_{k}"), "t", "{}"))
            .collect();
        let mut out = vec![a];
        out.extend((0..n).map(|k| Message::tool(format!("{id}_{k}"), "t", "r")));
        out
    }

    #[test]
    fn head_extends_past_results_and_tail_never_starts_with_a_result() {
        let mut h = vec![Message::user("u0")];
        h.extend(calls(3, "a")); // indices 1..=4
        for i in 0..10 {
            h.push(Message::user(format!("u{i}")));
            h.extend(calls(2, &format!("b{i}")));
        }
        let s = split(&h, 3, 4, u64::MAX, &TokenEstimator::new());
        assert_eq!(s.head_end, 5, "head holds the call and all its results");
        assert!(s.tail_start >= s.head_end);
        assert_ne!(h[s.tail_start].role, Role::Tool);
        assert!(h.len() - s.tail_start >= 4);
    }

    #[test]
    fn tail_respects_the_token_budget_but_keeps_the_last_message() {
        let mut h: Vec<Message> = (0..30).map(|i| Message::user(format!("m{i}"))).collect();
        h.push(Message::user("z".repeat(4000)));
        let s = split(&h, 3, 20, 100, &TokenEstimator::new());
        assert_eq!(s.tail_start, h.len() - 1);
        let s = split(&h[..30], 3, 20, 100_000, &TokenEstimator::new());
        assert_eq!(s.tail_start, 10, "at most 20 messages");
    }

    #[test]
    fn short_histories_have_an_empty_middle() {
        let h: Vec<Message> = (0..3).map(|i| Message::user(format!("m{i}"))).collect();
        let s = split(&h, 3, 20, 1000, &TokenEstimator::new());
        assert_eq!((s.head_end, s.tail_start), (3, 3));
    }
}
