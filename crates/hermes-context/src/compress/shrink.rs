//! Lossy-but-safe reductions of single messages: shortening old tool outputs ("prune old tool
//! outputs first", FEATURES §9) and shrinking long tool-call arguments without ever producing
//! invalid JSON (case C16).

use hermes_protocol::{ContentPart, Message, Role};
use serde_json::Value;

const PRUNED_MARKER: &str = include_str!("../../prompts/compress_pruned.md");
const ARG_CUT_MARKER: &str = include_str!("../../prompts/compress_arg_cut.md");

/// The first `keep` characters of `text` (whole `char`s) and how many characters were cut.
fn cut_chars(text: &str, keep: usize) -> Option<(&str, usize)> {
    let total = text.chars().count();
    if total <= keep {
        return None;
    }
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    Some((&text[..end], total - keep))
}

/// Shortens a tool result whose text is longer than `keep_chars` characters: the first
/// `keep_chars` characters stay, followed by a marker with the number of characters cut.
/// Returns `true` when the message changed. Non-tool messages and short results are left
/// alone; image parts are kept.
pub fn prune_tool_output(message: &mut Message, keep_chars: usize) -> bool {
    if message.role != Role::Tool {
        return false;
    }
    let text = message.text();
    let Some((kept, omitted)) = cut_chars(&text, keep_chars) else {
        return false;
    };
    let marker = PRUNED_MARKER
        .trim()
        .replace("{omitted}", &omitted.to_string());
    let shortened = format!("{kept}\n{marker}");
    let mut parts: Vec<ContentPart> = message
        .content
        .iter()
        .filter(|p| !matches!(p, ContentPart::Text { .. }))
        .cloned()
        .collect();
    parts.insert(0, ContentPart::Text { text: shortened });
    message.content = parts;
    true
}

/// Shrinks every string leaf longer than `max_leaf_chars` characters inside a JSON argument
/// text: the leaf keeps its first `max_leaf_chars` characters plus a cut marker, and the value
/// is re-serialized, so the result always parses (case C16). Short scalars such as paths stay
/// intact; object keys are never changed. Text that is not JSON is returned unchanged (it
/// cannot be made more invalid, and cutting it could hide what the model sent). Returns `None`
/// when nothing was shrunk.
pub fn shrink_json_arguments(arguments: &str, max_leaf_chars: usize) -> Option<String> {
    let mut value: Value = serde_json::from_str(arguments).ok()?;
    if !shrink_value(&mut value, max_leaf_chars) {
        return None;
    }
    serde_json::to_string(&value).ok()
}

fn shrink_value(value: &mut Value, max: usize) -> bool {
    match value {
        Value::String(s) => match cut_chars(s, max) {
            Some((kept, omitted)) => {
                let marker = ARG_CUT_MARKER
                    .trim()
                    .replace("{omitted}", &omitted.to_string());
                *s = format!("{kept}{marker}");
                true
            }
            None => false,
        },
        Value::Array(items) => {
            items
                .iter_mut()
                .map(|v| shrink_value(v, max))
                .filter(|changed| *changed)
                .count()
                > 0
        }
        Value::Object(map) => {
            map.values_mut()
                .map(|v| shrink_value(v, max))
                .filter(|changed| *changed)
                .count()
                > 0
        }
        _ => false,
    }
}

/// Shrinks the arguments of every tool call of an assistant message with
/// [`shrink_json_arguments`]; call ids and names are untouched. Returns `true` when the
/// message changed.
pub fn shrink_tool_call_arguments(message: &mut Message, max_leaf_chars: usize) -> bool {
    let mut changed = false;
    for call in &mut message.tool_calls {
        if let Some(shorter) = shrink_json_arguments(&call.arguments, max_leaf_chars) {
            call.arguments = shorter;
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    #[test]
    fn case_c16_long_write_file_arguments_stay_valid_json() {
        let content: String = "print('hello world')\n".repeat(33); // ~690 chars
        let args = serde_json::json!({"path": "/tmp/report.py", "content": content}).to_string();
        let mut m = Message::assistant("");
        m.tool_calls
            .push(ToolCall::new("call_9", "write_file", args));
        let limit = 200;
        assert!(shrink_tool_call_arguments(&mut m, limit));
        let parsed: Value =
            serde_json::from_str(&m.tool_calls[0].arguments).expect("json_valid: true");
        assert_eq!(parsed["path"], "/tmp/report.py");
        let shrunk = parsed["content"].as_str().unwrap_or_default();
        assert!(shrunk.starts_with("print('hello world')"));
        assert!(shrunk.contains("cut by context compression"), "{shrunk}");
        let marker_len = ARG_CUT_MARKER.trim().chars().count() + 4;
        assert!(shrunk.chars().count() <= limit + marker_len);
        assert_eq!(m.tool_calls[0].id, "call_9");
    }

    #[test]
    fn non_json_and_short_arguments_are_untouched() {
        assert_eq!(shrink_json_arguments("{\"path\": \"a\"", 5), None);
        assert_eq!(shrink_json_arguments(r#"{"path":"a.txt"}"#, 50), None);
        let nested = r#"{"edits":[{"old":"aaaaaaaaaa","new":"b"}],"n":3}"#;
        let out = shrink_json_arguments(nested, 4).unwrap_or_default();
        let v: Value = serde_json::from_str(&out).unwrap_or_default();
        assert!(
            v["edits"][0]["old"]
                .as_str()
                .unwrap_or("")
                .starts_with("aaaa…")
        );
        assert_eq!(v["edits"][0]["new"], "b");
        assert_eq!(v["n"], 3);
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let out = shrink_json_arguments(r#"{"t":"日本語のテキストです"}"#, 3).unwrap_or_default();
        let v: Value = serde_json::from_str(&out).unwrap_or_default();
        assert!(v["t"].as_str().unwrap_or("").starts_with("日本語…"));
    }

    #[test]
    fn long_tool_outputs_are_pruned_with_a_count_and_short_ones_kept() {
        let mut long = Message::tool("c1", "terminal", "x".repeat(1000));
        assert!(prune_tool_output(&mut long, 100));
        let text = long.text();
        assert!(text.starts_with(&"x".repeat(100)));
        assert!(text.contains("900 more characters"), "{text}");
        assert_eq!(long.tool_call_id.as_deref(), Some("c1"));

        let mut short = Message::tool("c2", "terminal", "ok");
        assert!(!prune_tool_output(&mut short, 100));
        let mut user = Message::user("y".repeat(1000));
        assert!(!prune_tool_output(&mut user, 100));
    }
}
