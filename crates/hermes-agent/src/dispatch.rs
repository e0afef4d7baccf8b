//! Tool dispatch: argument parsing, coercion and validation, unknown and unhealthy tools,
//! previews (FEATURES §3; seed 004 §3).

use std::sync::Arc;

use hermes_protocol::{ToolCall, ToolSpec};
use hermes_tools::{Tool, ToolContext, ToolHealth, ToolOutput, ToolValidators};
use serde_json::Value;

const ARGS_PREVIEW_CHARS: usize = 80;
const RESULT_PREVIEW_CHARS: usize = 120;

/// Cuts `text` to at most `max` chars on a char boundary, adding `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A one-line preview of a call's arguments (≤ 80 chars): the most telling argument
/// (`command`, `path`, `pattern`, `query`, `url`) when present, else compact JSON.
pub fn args_preview(arguments: &str) -> String {
    let text = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => ["command", "path", "pattern", "query", "url", "action"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| Value::Object(map).to_string()),
        _ => arguments.to_string(),
    };
    clip(&text.replace(['\n', '\r'], " "), ARGS_PREVIEW_CHARS)
}

/// The preview of a call of tool `name` with `arguments` (issue 20 item 10): for `todo`
/// the list itself — `3 items: ✓ read · ▶ fix · ☐ test` (✓ completed, ▶ in progress,
/// ☐ pending, ✗ cancelled; `read` when the call only reads it), up to 400 chars — and for
/// `clarify` the question with its choices; every other tool as [`args_preview`].
pub fn call_preview(name: &str, arguments: &str) -> String {
    let args = serde_json::from_str::<Value>(arguments).ok();
    match (name, args) {
        ("todo", Some(args)) => match args.get("todos").and_then(Value::as_array) {
            None => "read the list".to_string(),
            Some(items) => {
                let shown: Vec<String> = items
                    .iter()
                    .map(|item| {
                        let mark = match item.get("status").and_then(Value::as_str) {
                            Some("completed") => "✓",
                            Some("in_progress") => "▶",
                            Some("cancelled") => "✗",
                            _ => "☐",
                        };
                        let text = item
                            .get("content")
                            .and_then(Value::as_str)
                            .or_else(|| item.get("id").and_then(Value::as_str))
                            .unwrap_or("");
                        format!(
                            "{mark} {}",
                            text.split_whitespace().collect::<Vec<_>>().join(" ")
                        )
                    })
                    .collect();
                let merge = args.get("merge").and_then(Value::as_bool) == Some(true);
                let head = format!(
                    "{} item{}{}",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" },
                    if merge { " updated" } else { "" }
                );
                clip(&format!("{head}: {}", shown.join(" · ")), 400)
            }
        },
        ("clarify", Some(args)) => {
            let question = args.get("question").and_then(Value::as_str).unwrap_or("");
            let choices: Vec<&str> = args
                .get("choices")
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let text = if choices.is_empty() {
                question.to_string()
            } else {
                format!("{question} [{}]", choices.join(" | "))
            };
            clip(&text.replace(['\n', '\r'], " "), 400)
        }
        _ => args_preview(arguments),
    }
}

/// A one-line preview of a result (≤ 120 chars of its first non-empty line).
pub fn result_preview(content: &str) -> String {
    let line = content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    clip(line.trim(), RESULT_PREVIEW_CHARS)
}

/// Checks that a call can run: the tool exists, the arguments are one JSON object, they
/// match the tool's schema once coerced ([`hermes_tools::validate`]: one error result naming
/// each offending field, the same for built-in, MCP and declarative tools), and the tool is
/// not hidden as unhealthy ([`hermes_tools::ToolHealth::hides_tool`]: answered at once
/// instead of waiting for its timeout). Returns the tool and the coerced arguments (the
/// stored call keeps the model's text), or the error result to give the model instead of
/// running anything. `specs[i]` is the spec of `tools[i]`, `validators` their compiled
/// schemas.
pub(crate) fn prepare_call(
    tools: &[Arc<dyn Tool>],
    specs: &[ToolSpec],
    validators: &ToolValidators,
    call: &ToolCall,
) -> Result<(Arc<dyn Tool>, Value), ToolOutput> {
    let Some(index) = specs.iter().position(|s| s.name == call.name) else {
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let close = hermes_tools::closest_names(&call.name, names.iter().map(String::as_str), 3);
        let hint = if close.is_empty() {
            format!("Available tools: {}.", names.join(", "))
        } else {
            format!("Did you mean: {}?", close.join(", "))
        };
        return Err(ToolOutput::error(format!(
            "Unknown tool `{}`; nothing was run. {hint}",
            call.name
        )));
    };
    let parsed = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(other) => {
            return Err(ToolOutput::error(format!(
                "The arguments of `{}` must be one JSON object, got {}; the tool was not run.",
                call.name,
                json_kind(&other)
            )));
        }
        Err(e) => {
            return Err(ToolOutput::error(format!(
                "The arguments of `{}` are not valid JSON ({e}); the tool was not run. Send the arguments again as one complete JSON object.",
                call.name
            )));
        }
    };
    let coerced = hermes_tools::coerce_args(&specs[index].parameters, parsed);
    let args = validators.check(index, &specs[index], coerced)?;
    let tool = tools[index].clone();
    if let ToolHealth::Unhealthy {
        reason,
        fallback: false,
    } = tool.health()
    {
        return Err(ToolOutput::error(format!(
            "`{}` is unavailable right now ({reason}); it was not run. It is offered again once its health check passes.",
            call.name
        )));
    }
    Ok((tool, args))
}

/// The specs offered to the model in the next request: `specs` (of `tools`, same order)
/// without the tools that are unhealthy and have no fallback
/// ([`hermes_tools::ToolHealth::hides_tool`]). A cached read per tool; no I/O.
pub(crate) fn offered_specs(tools: &[Arc<dyn Tool>], specs: &[ToolSpec]) -> Vec<ToolSpec> {
    specs
        .iter()
        .zip(tools)
        .filter(|(_, tool)| !tool.health().hides_tool())
        .map(|(spec, _)| spec.clone())
        .collect()
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Runs one prepared call, racing it against the context's cancellation token — except a
/// tool that [handles cancellation itself](Tool::handles_cancel), whose own result is awaited.
pub(crate) async fn run_prepared(
    tool: Arc<dyn Tool>,
    args: Value,
    ctx: &ToolContext,
) -> ToolOutput {
    if tool.handles_cancel() {
        return tool.call(args, ctx).await;
    }
    tokio::select! {
        out = tool.call(args, ctx) => out,
        () = ctx.cancel.cancelled() => ToolOutput::error(CANCELLED_TEXT),
    }
}

/// Result text for a call cancelled by the user (FEATURES §3 Interrupt).
pub(crate) const CANCELLED_TEXT: &str =
    "[cancelled by user: the tool call was interrupted before it finished]";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_short_single_lines() {
        assert_eq!(
            args_preview(r#"{"path":"src/main.rs","offset":3}"#),
            "src/main.rs"
        );
        assert_eq!(args_preview(r#"{"command":"ls\n-la"}"#), "ls -la");
        let long = format!(r#"{{"command":"{}"}}"#, "x".repeat(200));
        assert_eq!(args_preview(&long).chars().count(), 80);
        assert_eq!(
            call_preview(
                "todo",
                r#"{"todos":[{"id":"1","content":"read  the config","status":"completed"},{"id":"2","content":"fix it","status":"in_progress"},{"id":"3","content":"test","status":"pending"}]}"#
            ),
            "3 items: ✓ read the config · ▶ fix it · ☐ test"
        );
        assert_eq!(call_preview("todo", "{}"), "read the list");
        assert_eq!(
            call_preview(
                "clarify",
                r#"{"question":"Which one?","choices":["a","b"]}"#
            ),
            "Which one? [a | b]"
        );
        assert_eq!(result_preview("\n\n  first line  \nsecond"), "first line");
    }
}
