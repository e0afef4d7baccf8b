//! What an ACP client sees of a turn: hermes' [`AgentEvent`]s and stored messages as ACP
//! `session/update` payloads ([`SessionUpdate`]).
//!
//! - answer and reasoning text → `agent_message_chunk` / `agent_thought_chunk`;
//! - a tool call → `tool_call` (`in_progress`) with its kind ([`tool_kind`], the mapping
//!   Python Hermes' ACP adapter uses), a title, the raw arguments, the files it touches as
//!   `locations` and, for `write_file` and `patch`, the edit as a `diff`; its end →
//!   `tool_call_update` (`completed` / `failed`) with the result (its first
//!   [`super::session::SHOWN_RESULT_CHARS`] characters) and, for a command run in the
//!   editor's terminal, that terminal;
//! - the `todo` list → `plan` ([`plan_of_todos`]);
//! - `session/load` replays a stored session the same way ([`replay`]).

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, Terminal, TerminalId, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use hermes_protocol::{Message, Role};
use serde_json::Value;

/// The ACP kind of a hermes tool (Python Hermes `acp_adapter/tools.py` `TOOL_KIND_MAP`);
/// `other` for any tool it does not name (MCP tools among them).
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "skill_view" | "skills_list" | "browser_snapshot" | "browser_vision"
        | "browser_get_images" | "vision_analyze" | "session_search" => ToolKind::Read,
        "write_file" | "patch" | "skill_manage" | "memory" => ToolKind::Edit,
        "search_files" => ToolKind::Search,
        "terminal" | "process" | "execute_code" | "delegate_task" | "browser_click"
        | "browser_type" | "browser_scroll" | "browser_press" | "browser_back"
        | "image_generate" | "text_to_speech" | "cronjob" => ToolKind::Execute,
        "web_search" | "web_extract" | "browser_navigate" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

/// A text chunk update.
pub fn text_chunk(text: &str, thought: bool) -> SessionUpdate {
    let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
    if thought {
        SessionUpdate::AgentThoughtChunk(chunk)
    } else {
        SessionUpdate::AgentMessageChunk(chunk)
    }
}

/// The user's own text, replayed by `session/load`.
fn user_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

/// The `path` argument of a call, resolved against `cwd` (ACP paths are absolute).
fn path_arg(args: &Value, cwd: &Path) -> Option<PathBuf> {
    let p = args.get("path").and_then(Value::as_str)?;
    if p.is_empty() {
        return None;
    }
    let path = PathBuf::from(p);
    Some(if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    })
}

/// The `tool_call` that announces call `call_id` of tool `name`, with `arguments` (the
/// model's JSON text) and `preview` (hermes' one-line summary of them).
pub fn tool_call(
    call_id: &str,
    name: &str,
    preview: &str,
    arguments: &str,
    cwd: &Path,
) -> ToolCall {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let title = if preview.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {preview}")
    };
    let mut call = ToolCall::new(call_id.to_string(), title)
        .kind(tool_kind(name))
        .status(ToolCallStatus::InProgress);
    if !args.is_null() {
        call = call.raw_input(args.clone());
    }
    if let Some(path) = path_arg(&args, cwd) {
        let line = args
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        call = call.locations(vec![ToolCallLocation::new(path.clone()).line(line)]);
        if let Some(diff) = edit_diff(name, &args, path) {
            call = call.content(vec![ToolCallContent::Diff(diff)]);
        }
    }
    call
}

/// The edit of a `write_file` (the whole new text) or `patch` (the replaced region: old and
/// new string) call, as an ACP diff.
fn edit_diff(name: &str, args: &Value, path: PathBuf) -> Option<Diff> {
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    match name {
        "write_file" => Some(Diff::new(path, s("content")?)),
        "patch" => Some(Diff::new(path, s("new_string")?).old_text(s("old_string"))),
        _ => None,
    }
}

/// The `tool_call_update` that ends a call: `completed`, or `failed` when `ok` is false,
/// with the result text as its content, after the editor terminal the call ran in (the
/// update replaces the call's content: the terminal stays in view).
pub fn tool_finished(
    call_id: &str,
    ok: bool,
    result: &str,
    terminal: Option<TerminalId>,
) -> ToolCallUpdate {
    let status = if ok {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    let mut content: Vec<ToolCallContent> = terminal
        .map(|id| ToolCallContent::Terminal(Terminal::new(id)))
        .into_iter()
        .collect();
    content.push(ToolCallContent::from(ContentBlock::Text(TextContent::new(
        result,
    ))));
    ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(Value::String(result.to_string())),
    )
}

/// The ACP plan of a `todo` result (`{"todos": [{id, content, status}], …}`); cancelled
/// items are left out (ACP has no such status). `None` when `result` is not a todo list.
pub fn plan_of_todos(result: &str) -> Option<Plan> {
    let value: Value = serde_json::from_str(result).ok()?;
    let todos = value.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .filter_map(|t| {
            let content = t.get("content")?.as_str()?.to_string();
            let status = match t.get("status")?.as_str()? {
                "pending" => PlanEntryStatus::Pending,
                "in_progress" => PlanEntryStatus::InProgress,
                "completed" => PlanEntryStatus::Completed,
                _ => return None,
            };
            Some(PlanEntry::new(content, PlanEntryPriority::Medium, status))
        })
        .collect();
    Some(Plan::new(entries))
}

/// The result shown for a stored tool call that has none (hermes was killed or its client
/// went away during the call; the model is told the same when the session goes on).
pub const NO_RESULT: &str = "[interrupted: hermes stopped during this call; it has no result]";

/// Ends, as `failed`, every call of `open` (announced, no result stored).
fn end_open_calls(open: &mut Vec<String>, out: &mut Vec<SessionUpdate>) {
    for id in open.drain(..) {
        let mut update = tool_finished(&id, false, NO_RESULT, None);
        update.fields.raw_output = None;
        out.push(SessionUpdate::ToolCallUpdate(update));
    }
}

/// The updates that show a stored session's history to a client that loads it: user
/// messages, answers, reasoning, and each tool call with its result (shown as completed:
/// the store keeps no error flag), in order. A call with no stored result (hermes stopped
/// during it) is shown `failed` with [`NO_RESULT`], so no call stays running in the
/// client. `messages` are the active ones; system messages are not shown.
pub fn replay(messages: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        if m.role != Role::Tool {
            end_open_calls(&mut open, &mut out);
        }
        match m.role {
            Role::User => {
                let text = m.text();
                if !text.is_empty() {
                    out.push(user_chunk(&text));
                }
            }
            Role::Assistant => {
                if let Some(r) = m.reasoning.as_ref().filter(|r| !r.text.is_empty()) {
                    out.push(text_chunk(&r.text, true));
                }
                let text = m.text();
                if !text.is_empty() {
                    out.push(text_chunk(&text, false));
                }
                for call in &m.tool_calls {
                    open.push(call.id.clone());
                    let preview = hermes_agent::call_preview(&call.name, &call.arguments);
                    out.push(SessionUpdate::ToolCall(tool_call(
                        &call.id,
                        &call.name,
                        &preview,
                        &call.arguments,
                        cwd,
                    )));
                }
            }
            Role::Tool => {
                if let Some(id) = m.tool_call_id.as_deref() {
                    open.retain(|o| o != id);
                    let text = m.text();
                    let mut update = tool_finished(id, true, &text, None);
                    if let Some(plan) = (m.tool_name.as_deref() == Some("todo"))
                        .then(|| plan_of_todos(&text))
                        .flatten()
                    {
                        out.push(SessionUpdate::Plan(plan));
                    }
                    update.fields.raw_output = None;
                    out.push(SessionUpdate::ToolCallUpdate(update));
                }
            }
            _ => {}
        }
    }
    end_open_calls(&mut open, &mut out);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn edits_carry_their_diff_and_location() {
        let call = tool_call(
            "c1",
            "patch",
            "src/a.rs",
            r#"{"path":"src/a.rs","old_string":"x = 1","new_string":"x = 2"}"#,
            Path::new("/w"),
        );
        let v = serde_json::to_value(&call).unwrap();
        assert_eq!(v["kind"], "edit");
        assert_eq!(v["status"], "in_progress");
        assert_eq!(v["locations"][0]["path"], "/w/src/a.rs");
        assert_eq!(v["content"][0]["type"], "diff");
        assert_eq!(v["content"][0]["oldText"], "x = 1");
        assert_eq!(v["content"][0]["newText"], "x = 2");
        let read = tool_call(
            "c2",
            "read_file",
            "/etc/hosts",
            r#"{"path":"/etc/hosts","offset":3}"#,
            Path::new("/w"),
        );
        let v = serde_json::to_value(&read).unwrap();
        assert_eq!(v["kind"], "read");
        assert_eq!(v["locations"][0]["line"], 3);
        assert!(
            v.get("content")
                .is_none_or(|c| c.as_array().unwrap().is_empty())
        );
    }

    #[test]
    fn todo_results_become_plans() {
        let plan = plan_of_todos(
            r#"{"todos":[{"id":"1","content":"read","status":"completed"},
                {"id":"2","content":"edit","status":"in_progress"},
                {"id":"3","content":"drop","status":"cancelled"}],"summary":{}}"#,
        )
        .unwrap();
        let v = serde_json::to_value(&plan).unwrap();
        assert_eq!(v["entries"].as_array().unwrap().len(), 2);
        assert_eq!(v["entries"][1]["status"], "in_progress");
        assert!(plan_of_todos("not json").is_none());
    }
}
