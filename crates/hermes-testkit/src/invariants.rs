//! Request-shape invariants checked over every captured request (CONVENTIONS pattern 4).

use std::collections::BTreeSet;

use serde_json::Value;

fn messages(req: &Value) -> &[Value] {
    req.get("messages")
        .and_then(|m| m.as_array())
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn role(m: &Value) -> &str {
    m.get("role").and_then(|r| r.as_str()).unwrap_or("")
}

fn system_prompt(req: &Value) -> Option<&Value> {
    messages(req)
        .iter()
        .find(|m| role(m) == "system")
        .and_then(|m| m.get("content"))
}

fn tool_names(req: &Value) -> Vec<String> {
    req.get("tools")
        .and_then(|t| t.as_array())
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t.pointer("/function/name")
                        .or_else(|| t.get("name"))
                        .and_then(|n| n.as_str())
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Checks Chat Completions request bodies of ONE session, in send order:
/// (a) in every request, each assistant `tool_calls[].id` is answered by exactly one `tool`
/// message in the block of tool messages right after it, and no tool message lacks its call;
/// (b) the system message is identical in every request; (c) the list of tool names (order
/// included) is identical in every request. Returns the first violation, described.
pub fn check_request_invariants(requests: &[Value]) -> Result<(), String> {
    for (n, req) in requests.iter().enumerate() {
        let msgs = messages(req);
        let mut i = 0;
        while i < msgs.len() {
            let m = &msgs[i];
            if role(m) == "tool" {
                let id = m.get("tool_call_id").and_then(|v| v.as_str()).unwrap_or("");
                return Err(format!(
                    "request {n}: tool result for `{id}` (message {i}) has no assistant tool call right before it"
                ));
            }
            let calls = m.get("tool_calls").and_then(|c| c.as_array());
            i += 1;
            let Some(calls) = calls.filter(|c| role(m) == "assistant" && !c.is_empty()) else {
                continue;
            };
            let mut pending: BTreeSet<String> = BTreeSet::new();
            for c in calls {
                let id = c
                    .get("id")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string();
                if !pending.insert(id.clone()) {
                    return Err(format!("request {n}: duplicate tool call id `{id}`"));
                }
            }
            while i < msgs.len() && role(&msgs[i]) == "tool" {
                let id = msgs[i]
                    .get("tool_call_id")
                    .and_then(|v| v.as_str())
                    .unwrap_or("");
                if !pending.remove(id) {
                    return Err(format!(
                        "request {n}: tool result for `{id}` (message {i}) answers no pending call (orphan or duplicate)"
                    ));
                }
                i += 1;
            }
            if let Some(id) = pending.iter().next() {
                return Err(format!(
                    "request {n}: assistant tool call `{id}` has no tool result after it"
                ));
            }
        }
    }
    if let Some(first) = requests.first() {
        let sys = system_prompt(first);
        let tools = tool_names(first);
        for (n, req) in requests.iter().enumerate().skip(1) {
            if system_prompt(req) != sys {
                return Err(format!(
                    "request {n}: system message differs from request 0 (prompt cache broken)"
                ));
            }
            let t = tool_names(req);
            if t != tools {
                return Err(format!(
                    "request {n}: tool list {t:?} differs from request 0 {tools:?} (prompt cache broken)"
                ));
            }
        }
    }
    Ok(())
}

/// Panics with the violation found by [`check_request_invariants`], if any.
pub fn assert_request_invariants(requests: &[Value]) {
    if let Err(e) = check_request_invariants(requests) {
        panic!("request invariant violated: {e}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(msgs: Value, tools: &[&str]) -> Value {
        let tools: Vec<Value> = tools
            .iter()
            .map(|n| json!({"type": "function", "function": {"name": n}}))
            .collect();
        json!({"messages": msgs, "tools": tools})
    }

    #[test]
    fn good_session_passes() {
        let r1 = req(
            json!([{"role":"system","content":"S"},{"role":"user","content":"hi"}]),
            &["a", "b"],
        );
        let r2 = req(
            json!([{"role":"system","content":"S"},{"role":"user","content":"hi"},
                {"role":"assistant","content":"","tool_calls":[{"id":"c1"},{"id":"c2"}]},
                {"role":"tool","tool_call_id":"c2","content":"x"},
                {"role":"tool","tool_call_id":"c1","content":"y"}]),
            &["a", "b"],
        );
        assert_eq!(check_request_invariants(&[r1, r2]), Ok(()));
    }

    #[test]
    fn violations_are_found() {
        let orphan = req(
            json!([{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"x"}]),
            &[],
        );
        assert!(
            check_request_invariants(&[orphan])
                .unwrap_err()
                .contains("c9")
        );
        let missing = req(
            json!([{"role":"assistant","content":"","tool_calls":[{"id":"c1"}]},{"role":"user","content":"?"}]),
            &[],
        );
        assert!(
            check_request_invariants(&[missing])
                .unwrap_err()
                .contains("no tool result")
        );
        let dup = req(
            json!([{"role":"assistant","content":"","tool_calls":[{"id":"c1"}]},
            {"role":"tool","tool_call_id":"c1","content":"x"},{"role":"tool","tool_call_id":"c1","content":"x"}]),
            &[],
        );
        assert!(check_request_invariants(&[dup]).is_err());
        let s1 = req(json!([{"role":"system","content":"A"}]), &["a"]);
        let s2 = req(json!([{"role":"system","content":"B"}]), &["a"]);
        assert!(
            check_request_invariants(&[s1.clone(), s2])
                .unwrap_err()
                .contains("system")
        );
        let t2 = req(json!([{"role":"system","content":"A"}]), &["b", "a"]);
        let t1 = req(json!([{"role":"system","content":"A"}]), &["a", "b"]);
        assert!(
            check_request_invariants(&[t1, t2])
                .unwrap_err()
                .contains("tool list")
        );
    }
}
