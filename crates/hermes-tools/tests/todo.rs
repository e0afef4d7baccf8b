//! The `todo` tool: read, replace, merge, bad input, carry-over text and restore.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use hermes_protocol::Message;
use hermes_tools::{Approval, Registry, TodoStatus, TodoTool, Tool, ToolsetSelection};
use serde_json::{Value, json};

async fn call(tool: &TodoTool, args: Value) -> (Value, bool) {
    let dir = tempfile::tempdir().unwrap();
    let out = tool
        .call(args, &common::ctx(dir.path(), Approval::Deny))
        .await;
    let v = serde_json::from_str(&out.content).unwrap_or(Value::String(out.content.clone()));
    (v, out.is_error)
}

#[tokio::test]
async fn read_replace_and_merge() {
    let tool = TodoTool::new();
    let (v, err) = call(&tool, json!({})).await;
    assert!(!err);
    assert_eq!(v["todos"], json!([]));
    assert_eq!(v["summary"]["total"], 0);

    let (v, _) = call(
        &tool,
        json!({"todos": [
            {"id": "1", "content": "read the code", "status": "in_progress"},
            {"id": "2", "content": "write tests"},
        ]}),
    )
    .await;
    assert_eq!(
        v["todos"][1]["status"], "pending",
        "status defaults to pending"
    );
    assert_eq!(v["summary"]["in_progress"], 1);
    assert_eq!(v["summary"]["pending"], 1);

    // Merge: update one field of item 1, append item 3.
    let (v, _) = call(
        &tool,
        json!({"merge": true, "todos": [
            {"id": "1", "status": "completed"},
            {"id": "3", "content": "land it", "status": "pending"},
        ]}),
    )
    .await;
    assert_eq!(v["todos"][0]["content"], "read the code");
    assert_eq!(v["todos"][0]["status"], "completed");
    assert_eq!(v["todos"][2]["id"], "3");
    assert_eq!(v["summary"]["total"], 3);

    // Without merge the list is replaced.
    let (v, _) = call(
        &tool,
        json!({"todos": [{"id": "x", "content": "only", "status": "cancelled"}]}),
    )
    .await;
    assert_eq!(v["summary"]["total"], 1);
    assert_eq!(v["summary"]["cancelled"], 1);
    let items = tool.store().items();
    assert_eq!(items[0].status, TodoStatus::Cancelled);
}

#[tokio::test]
async fn bad_items_are_refused_and_the_list_is_unchanged() {
    let tool = TodoTool::new();
    call(&tool, json!({"todos": [{"id": "a", "content": "keep me"}]})).await;
    for (args, needle) in [
        (json!({"todos": [{"content": "no id"}]}), "todos[0] needs"),
        (
            json!({"todos": [{"id": "b", "content": "c", "status": "done"}]}),
            "unknown status `done`",
        ),
        (
            json!({"todos": [{"id": "b", "content": "c"}, {"id": "b", "content": "d"}]}),
            "appears twice",
        ),
        (
            json!({"merge": true, "todos": [{"id": "new"}]}),
            "needs a non-empty `content`",
        ),
        (json!({"todos": "a string"}), "must be an array"),
        (json!({"todos": [3]}), "todos[0] must be an object"),
    ] {
        let (v, err) = call(&tool, args).await;
        assert!(err, "{v}");
        assert!(v.as_str().unwrap().contains(needle), "{v} lacks {needle}");
    }
    assert_eq!(tool.store().items().len(), 1);
    assert_eq!(tool.store().items()[0].content, "keep me");
}

#[tokio::test]
async fn carry_over_lists_open_items_and_restore_reads_it_back() {
    let tool = TodoTool::new();
    assert_eq!(tool.carry_over(), None, "empty list: nothing to carry");
    let (result, _) = call(
        &tool,
        json!({"todos": [
            {"id": "1", "content": "done already", "status": "completed"},
            {"id": "2", "content": "in the works", "status": "in_progress"},
            {"id": "3", "content": "later: maybe", "status": "pending"},
        ]}),
    )
    .await;
    let text = tool.carry_over().unwrap();
    assert!(text.contains("- [in_progress] 2: in the works"), "{text}");
    assert!(text.contains("- [pending] 3: later: maybe"), "{text}");
    assert!(!text.contains("done already"));

    // Restore from a summary message holding the block: the open items come back.
    let other = TodoTool::new();
    other.restore(&[Message::user(format!("## Goal\nship\n\n{text}"))]);
    let items = other.store().items();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1].content, "later: maybe");

    // Restore from a tool result: the whole list comes back.
    other.restore(&[Message::tool("call_1", "todo", result.to_string())]);
    assert_eq!(other.store().items().len(), 3);

    // A fresh session clears it.
    other.restore(&[]);
    assert!(other.store().items().is_empty());
}

#[test]
fn todo_is_in_the_default_toolset() {
    let set = Registry::builtin()
        .select(&ToolsetSelection::default())
        .unwrap();
    assert!(set.names().contains(&"todo".to_string()));
    let only = Registry::builtin()
        .select(&ToolsetSelection::parse("todo"))
        .unwrap();
    assert_eq!(only.names(), vec!["todo"]);
}
