//! Conversation repair: the one function that makes history valid before every request
//! (ARCHITECTURE §2 invariant 2; CONVENTIONS pattern 5; cases C14 and C18).
//!
//! Guarantees on the output:
//! - no system messages (the system prompt travels separately);
//! - every assistant tool call is followed, before the next non-tool message, by exactly one
//!   tool result whose `tool_call_id` equals the call's id byte-for-byte;
//! - no tool result lacks its call;
//! - no assistant message is empty (no text, no tool calls, no reasoning).
//!
//! Ids are matched through aliases (C14): whitespace-trimmed forms, and for composite ids
//! such as `call_7|fc_7` each half. A result that arrives out of place (e.g. after a later
//! user message) is moved back next to its call. A call with no result (an interrupted turn,
//! a crash) gets a synthesized "not completed" result (C18). Tool call ids duplicated across
//! assistant messages are paired with the nearest earlier call that is still unanswered.

use std::collections::HashMap;

use hermes_protocol::{Message, Role};

/// Text of the result synthesized for a call that never got one (C18).
pub const MISSING_RESULT_TEXT: &str = "[interrupted: this tool call was cancelled by the user or cut off before it finished; it did not complete]";

/// The forms under which one tool call id may appear (C14).
fn aliases(id: &str) -> Vec<String> {
    let trimmed = id.trim();
    let mut out = vec![trimmed.to_string()];
    if let Some((a, b)) = trimmed.split_once('|') {
        for half in [a.trim(), b.trim()] {
            if !half.is_empty() {
                out.push(half.to_string());
            }
        }
    }
    out
}

/// What [`repair_history`] changed, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Results synthesized for calls that had none.
    pub synthesized: usize,
    /// Results dropped because no call matched them (or a call already had one).
    pub dropped_orphans: usize,
    /// Results whose id was rewritten to their call's id.
    pub rewritten_ids: usize,
    /// Results moved back next to their call.
    pub moved: usize,
    /// Empty assistant messages removed.
    pub dropped_empty: usize,
}

impl RepairReport {
    /// True when the history needed no change.
    pub fn is_clean(&self) -> bool {
        *self == RepairReport::default()
    }
}

/// Returns a copy of `history` that satisfies the guarantees in the module docs. Takes the
/// messages by reference (a slice or any iterator of `&Message`), so callers need not clone
/// their history first; each message is cloned once, into the output.
pub fn repair_history<'a>(
    history: impl IntoIterator<Item = &'a Message>,
) -> (Vec<Message>, RepairReport) {
    let history: Vec<&Message> = history.into_iter().collect();
    let mut report = RepairReport::default();

    // Pass 1: index the calls of every assistant message and bind each result to a call.
    // calls[i] = (message index, call index) in order of appearance.
    let mut alias_index: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
    // (assistant message index, call index) → index of the tool message answering it.
    let mut answered: HashMap<(usize, usize), usize> = HashMap::new();
    let mut result_position: HashMap<usize, (usize, usize)> = HashMap::new();

    for (mi, m) in history.iter().copied().enumerate() {
        match m.role {
            Role::Assistant => {
                for (ci, call) in m.tool_calls.iter().enumerate() {
                    for a in aliases(&call.id) {
                        alias_index.entry(a).or_default().push((mi, ci));
                    }
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let mut target = None;
                for a in aliases(&id) {
                    if let Some(cands) = alias_index.get(&a) {
                        // Nearest earlier unanswered call with this alias.
                        if let Some(found) = cands
                            .iter()
                            .rev()
                            .find(|(cmi, _)| *cmi < mi)
                            .filter(|k| !answered.contains_key(k))
                        {
                            target = Some(*found);
                            break;
                        }
                    }
                }
                match target {
                    Some(key) => {
                        answered.insert(key, mi);
                        result_position.insert(mi, key);
                    }
                    None => report.dropped_orphans += 1,
                }
            }
            _ => {}
        }
    }

    // Pass 2: rebuild in order, placing each call's result right after its assistant message.
    let mut out = Vec::with_capacity(history.len());
    for (mi, m) in history.iter().copied().enumerate() {
        match m.role {
            Role::System => {}
            Role::Tool => {
                // Emitted with its call below; count moves for results not adjacent.
                if let Some((cmi, _)) = result_position.get(&mi) {
                    let adjacent = history[*cmi + 1..mi].iter().all(|x| x.role == Role::Tool);
                    if !adjacent {
                        report.moved += 1;
                    }
                }
            }
            Role::Assistant => {
                if m.tool_calls.is_empty()
                    && m.text().trim().is_empty()
                    && m.reasoning.as_ref().is_none_or(|r| r.text.is_empty())
                {
                    report.dropped_empty += 1;
                    continue;
                }
                out.push(m.clone());
                for (ci, call) in m.tool_calls.iter().enumerate() {
                    match answered.remove(&(mi, ci)) {
                        Some(ri) => {
                            let mut result = history[ri].clone();
                            if result.tool_call_id.as_deref() != Some(call.id.as_str()) {
                                result.tool_call_id = Some(call.id.clone());
                                report.rewritten_ids += 1;
                            }
                            if result.tool_name.is_none() {
                                result.tool_name = Some(call.name.clone());
                            }
                            out.push(result);
                        }
                        None => {
                            report.synthesized += 1;
                            out.push(Message::tool(
                                call.id.clone(),
                                call.name.clone(),
                                MISSING_RESULT_TEXT,
                            ));
                        }
                    }
                }
            }
            Role::User => out.push(m.clone()),
        }
    }
    (out, report)
}

/// True when [`repair_history`] would return `history` unchanged (an equal copy and a clean
/// report), decided in one pass without allocating for the usual shapes: no system message;
/// no empty assistant message; each assistant message's tool calls have pairwise distinct
/// aliases (C14) and are followed at once, in call order, by exactly one tool result each
/// whose `tool_call_id` equals the call's id byte-for-byte and which has a tool name; no
/// other tool message. A history the agent wrote itself has this shape, so building a
/// request can skip the repair's index and copy the messages directly (issue 6); anything
/// else goes through [`repair_history`].
pub fn needs_no_repair<'a>(history: impl IntoIterator<Item = &'a Message>) -> bool {
    let mut expected: &[hermes_protocol::ToolCall] = &[];
    for m in history {
        match m.role {
            Role::Tool => {
                let Some((call, rest)) = expected.split_first() else {
                    return false;
                };
                if m.tool_call_id.as_deref() != Some(call.id.as_str()) || m.tool_name.is_none() {
                    return false;
                }
                expected = rest;
            }
            _ if !expected.is_empty() => return false,
            Role::System => return false,
            Role::User => {}
            Role::Assistant => {
                if m.tool_calls.is_empty()
                    && m.text().trim().is_empty()
                    && m.reasoning.as_ref().is_none_or(|r| r.text.is_empty())
                {
                    return false;
                }
                if m.tool_calls.len() > 1 {
                    let all: Vec<String> =
                        m.tool_calls.iter().flat_map(|c| aliases(&c.id)).collect();
                    let distinct: std::collections::HashSet<&String> = all.iter().collect();
                    // A call's own aliases may repeat (`a|a`); count them per call.
                    let per_call: usize = m
                        .tool_calls
                        .iter()
                        .map(|c| {
                            aliases(&c.id)
                                .iter()
                                .collect::<std::collections::HashSet<_>>()
                                .len()
                        })
                        .sum();
                    if distinct.len() != per_call {
                        return false;
                    }
                }
                expected = &m.tool_calls;
            }
        }
    }
    expected.is_empty()
}

/// Checks the guarantees without changing anything; returns a description of the first
/// violation. Used by tests and debug assertions.
pub fn validate_tool_pairs(history: &[Message]) -> Result<(), String> {
    let mut i = 0;
    while i < history.len() {
        let m = &history[i];
        match m.role {
            Role::Assistant => {
                let mut j = i + 1;
                for call in &m.tool_calls {
                    match history.get(j) {
                        Some(r)
                            if r.role == Role::Tool
                                && r.tool_call_id.as_deref() == Some(call.id.as_str()) =>
                        {
                            j += 1
                        }
                        _ => {
                            return Err(format!(
                                "message {i}: tool call {} has no result right after it",
                                call.id
                            ));
                        }
                    }
                }
                i = j;
            }
            Role::Tool => return Err(format!("message {i}: tool result without a matching call")),
            _ => i += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    fn call_msg(calls: &[(&str, &str)]) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls = calls
            .iter()
            .map(|(id, n)| ToolCall::new(*id, *n, "{}"))
            .collect();
        m
    }

    #[test]
    fn case_c14_composite_tool_call_ids_pair_with_their_results() {
        let mut a = Message::assistant("");
        a.tool_calls.push(ToolCall::new(
            "call_7|fc_7",
            "terminal",
            r#"{"command":"grep -c TODO src/main.rs"}"#,
        ));
        let history = vec![
            Message::user("count"),
            a,
            Message::tool("call_7", "terminal", "42"),
        ];
        let (out, report) = repair_history(&history);
        assert_eq!(report.synthesized, 0, "stub_inserted must be false");
        assert_eq!(out[2].text(), "42", "tool_message_content_sent");
        assert_eq!(
            out[2].tool_call_id.as_deref(),
            Some("call_7|fc_7"),
            "outgoing ids match"
        );
        validate_tool_pairs(&out).unwrap();

        // Variant #9999: whitespace around the id.
        let history = vec![
            Message::user("x"),
            call_msg(&[("functions.cronjob:24", "cronjob")]),
            Message::tool(" functions.cronjob:24", "cronjob", "ok"),
        ];
        let (out, report) = repair_history(&history);
        assert_eq!(report.synthesized, 0);
        assert_eq!(out[2].text(), "ok");
        assert_eq!(out[2].tool_call_id.as_deref(), Some("functions.cronjob:24"));
    }

    #[test]
    fn case_c18_interrupted_call_gets_cancelled_result_before_next_user_message() {
        let mut a = Message::assistant("");
        a.tool_calls
            .push(ToolCall::new("call_F8", "shell", r#"{"cmd":"cargo test"}"#));
        let history = vec![
            Message::user("run the tests"),
            a,
            Message::user("stop, use nextest instead"),
        ];
        let (out, report) = repair_history(&history);
        assert_eq!(report.synthesized, 1);
        let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            vec![Role::User, Role::Assistant, Role::Tool, Role::User]
        );
        assert_eq!(out[2].tool_call_id.as_deref(), Some("call_F8"));
        assert!(out[2].text().contains("cancelled by the user"));
        assert_eq!(out[3].text(), "stop, use nextest instead");
        validate_tool_pairs(&out).unwrap();
    }

    #[test]
    fn orphans_dropped_out_of_place_results_moved_duplicates_removed() {
        let history = vec![
            Message::user("a"),
            Message::tool("ghost", "x", "orphan"),
            call_msg(&[("c1", "t"), ("c2", "t")]),
            Message::tool("c2", "t", "two"),
            Message::user("b"),
            Message::tool("c1", "t", "one"),
            Message::tool("c1", "t", "one again"),
            Message::assistant(""),
        ];
        let (out, report) = repair_history(&history);
        validate_tool_pairs(&out).unwrap();
        assert_eq!(report.dropped_orphans, 2);
        assert_eq!(report.moved, 1);
        assert_eq!(report.dropped_empty, 1);
        let texts: Vec<String> = out.iter().map(|m| m.text()).collect();
        assert_eq!(texts, vec!["a", "", "one", "two", "b"]);
    }

    #[test]
    fn reused_ids_pair_with_nearest_unanswered_call() {
        let history = vec![
            Message::user("a"),
            call_msg(&[("call_0", "t")]),
            Message::tool("call_0", "t", "first"),
            Message::assistant("mid"),
            Message::user("b"),
            call_msg(&[("call_0", "t")]),
            Message::tool("call_0", "t", "second"),
        ];
        let (out, report) = repair_history(&history);
        assert!(report.is_clean(), "{report:?}");
        assert_eq!(out[2].text(), "first");
        assert_eq!(out[6].text(), "second");
    }

    #[test]
    fn clean_history_is_unchanged() {
        let history = vec![
            Message::system("sys"),
            Message::user("a"),
            call_msg(&[("c1", "t")]),
            Message::tool("c1", "t", "r"),
            Message::assistant("done"),
        ];
        let (out, report) = repair_history(&history);
        assert!(report.is_clean());
        assert_eq!(out, history[1..].to_vec());
    }
}
