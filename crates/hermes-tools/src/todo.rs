//! The `todo` tool (FEATURES §4; issue 4 item 8): a per-session task list the model reads
//! and writes. Items are `{id, content, status}` with status `pending`, `in_progress`,
//! `completed` or `cancelled`. A call without `todos` reads; with `todos` it replaces the list,
//! or with `merge: true` updates items by id and appends new ones. Every call answers with
//! the whole list and counts per status as JSON.
//!
//! The list lives in the tool instance (one per agent). [`Tool::carry_over`] renders the open
//! items for the compression summary, and [`Tool::restore`] rebuilds the list from the last
//! `todo` result of a resumed history, so `hermes -c` continues it.

use std::sync::{Arc, Mutex, PoisonError};

use hermes_protocol::{Message, Role, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool::{Parallelism, Tool, ToolContext, ToolOutput};

/// Status of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Cancelled,
}

impl TodoStatus {
    const NAMES: [&'static str; 4] = ["pending", "in_progress", "completed", "cancelled"];

    fn parse(s: &str) -> Option<TodoStatus> {
        match s {
            "pending" => Some(TodoStatus::Pending),
            "in_progress" => Some(TodoStatus::InProgress),
            "completed" => Some(TodoStatus::Completed),
            "cancelled" => Some(TodoStatus::Cancelled),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Cancelled => "cancelled",
        }
    }

    fn is_open(self) -> bool {
        matches!(self, TodoStatus::Pending | TodoStatus::InProgress)
    }
}

/// One task of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Short unique id chosen by the model.
    pub id: String,
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// The shared list of one session; clones share the same list.
#[derive(Debug, Clone, Default)]
pub struct TodoStore {
    items: Arc<Mutex<Vec<TodoItem>>>,
}

impl TodoStore {
    /// An empty list.
    pub fn new() -> TodoStore {
        TodoStore::default()
    }

    /// The current items, in list order.
    pub fn items(&self) -> Vec<TodoItem> {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, items: Vec<TodoItem>) {
        *self.items.lock().unwrap_or_else(PoisonError::into_inner) = items;
    }

    /// Applies a write: `todos` replaces the list, or with `merge` updates items by id (only
    /// the fields given) and appends unknown ids, which then need `content`.
    ///
    /// # Errors
    /// A message naming the item (by position, 0-based) and field when an item is not an
    /// object, lacks `id`, has an unknown status, repeats an id, or is a new item without
    /// `content`. The list is unchanged on error.
    pub fn write(&self, todos: &[Value], merge: bool) -> Result<(), String> {
        let mut list = if merge { self.items() } else { Vec::new() };
        let mut seen: Vec<String> = Vec::new();
        for (i, raw) in todos.iter().enumerate() {
            let obj = raw
                .as_object()
                .ok_or_else(|| format!("todos[{i}] must be an object with id, content, status"))?;
            let id = match obj.get("id") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err(format!("todos[{i}] needs a non-empty string `id`")),
            };
            if seen.contains(&id) {
                return Err(format!("todos[{i}]: id `{id}` appears twice in this call"));
            }
            seen.push(id.clone());
            let content = match obj.get("content") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.trim().to_string()),
                Some(_) => return Err(format!("todos[{i}] (`{id}`): `content` must be a string")),
            };
            let status = match obj.get("status") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(TodoStatus::parse(s.trim()).ok_or_else(|| {
                    format!(
                        "todos[{i}] (`{id}`): unknown status `{s}`; use one of {}",
                        TodoStatus::NAMES.join(", ")
                    )
                })?),
                Some(_) => return Err(format!("todos[{i}] (`{id}`): `status` must be a string")),
            };
            if let Some(existing) = list.iter_mut().find(|t| t.id == id) {
                if let Some(c) = content.filter(|c| !c.is_empty()) {
                    existing.content = c;
                }
                if let Some(s) = status {
                    existing.status = s;
                }
                continue;
            }
            let content = content.filter(|c| !c.is_empty()).ok_or_else(|| {
                format!("todos[{i}] (`{id}`) is a new item and needs a non-empty `content`")
            })?;
            list.push(TodoItem {
                id,
                content,
                status: status.unwrap_or(TodoStatus::Pending),
            });
        }
        self.set(list);
        Ok(())
    }

    /// The JSON answer of every call: `{"todos": [...], "summary": {"total", "pending",
    /// "in_progress", "completed", "cancelled"}}`.
    pub fn to_json(&self) -> Value {
        let items = self.items();
        let count = |s: TodoStatus| items.iter().filter(|t| t.status == s).count();
        json!({
            "todos": items,
            "summary": {
                "total": items.len(),
                "pending": count(TodoStatus::Pending),
                "in_progress": count(TodoStatus::InProgress),
                "completed": count(TodoStatus::Completed),
                "cancelled": count(TodoStatus::Cancelled),
            }
        })
    }

    /// The open (pending and in-progress) items as text for the compression summary, or
    /// `None` when nothing is open. One line per item: `- [status] id: content`.
    pub fn carry_over_text(&self) -> Option<String> {
        let open: Vec<String> = self
            .items()
            .into_iter()
            .filter(|t| t.status.is_open())
            .map(|t| format!("- [{}] {}: {}", t.status.name(), t.id, t.content))
            .collect();
        if open.is_empty() {
            return None;
        }
        Some(format!(
            "{}\n{}",
            include_str!("../prompts/todo_carry_over.md").trim(),
            open.join("\n")
        ))
    }

    /// Rebuilds the list from the latest of: a successful `todo` tool result, or a
    /// compression summary holding [`TodoStore::carry_over_text`] (then only the open items
    /// come back). An empty list when `history` has neither (a fresh session).
    pub fn restore_from(&self, history: &[Message]) {
        let last = history.iter().rev().find_map(|m| {
            if m.role == Role::Tool {
                if m.tool_name.as_deref() != Some("todo") {
                    return None;
                }
                let v: Value = serde_json::from_str(&m.text()).ok()?;
                return serde_json::from_value::<Vec<TodoItem>>(v.get("todos")?.clone()).ok();
            }
            parse_carry_over(&m.text())
        });
        self.set(last.unwrap_or_default());
    }
}

/// The items of a [`TodoStore::carry_over_text`] block inside `text`, if it has one.
fn parse_carry_over(text: &str) -> Option<Vec<TodoItem>> {
    let header = include_str!("../prompts/todo_carry_over.md").trim();
    let (_, rest) = text.rsplit_once(header)?;
    let items: Vec<TodoItem> = rest
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .map_while(|line| {
            let line = line.strip_prefix("- [")?;
            let (status, rest) = line.split_once("] ")?;
            let (id, content) = rest.split_once(": ")?;
            Some(TodoItem {
                id: id.to_string(),
                content: content.to_string(),
                status: TodoStatus::parse(status)?,
            })
        })
        .collect();
    Some(items)
}

/// The `todo` tool over one [`TodoStore`].
#[derive(Debug, Clone, Default)]
pub struct TodoTool {
    store: TodoStore,
}

impl TodoTool {
    /// A tool with its own empty list.
    pub fn new() -> TodoTool {
        TodoTool::default()
    }

    /// The list this tool writes (for front ends that show it).
    pub fn store(&self) -> &TodoStore {
        &self.store
    }
}

#[async_trait::async_trait]
impl Tool for TodoTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "todo".to_string(),
            description: include_str!("../prompts/todo_description.md")
                .trim()
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "description": "Items to write; leave out to read the list.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "Unique item id."},
                                "content": {"type": "string", "description": "The task."},
                                "status": {"type": "string", "enum": TodoStatus::NAMES},
                            },
                            "required": ["id"],
                        }
                    },
                    "merge": {
                        "type": "boolean",
                        "description": "true: update items by id and append new ones; false (default): replace the list.",
                    }
                },
            }),
        }
    }

    fn toolset(&self) -> &'static str {
        "todo"
    }

    fn parallelism(&self) -> Parallelism {
        // Writes shared state: keep calls in order.
        Parallelism::Never
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        match args.get("todos") {
            None | Some(Value::Null) => {}
            Some(Value::Array(todos)) => {
                let merge = args.get("merge").and_then(Value::as_bool).unwrap_or(false);
                if let Err(e) = self.store.write(todos, merge) {
                    return ToolOutput::error(format!("todo: {e}; the list was not changed"));
                }
            }
            Some(_) => {
                return ToolOutput::error(
                    "todo: `todos` must be an array of {id, content, status} objects",
                );
            }
        }
        ToolOutput::ok(self.store.to_json().to_string())
    }

    fn for_session(&self) -> Option<Arc<dyn Tool>> {
        Some(Arc::new(TodoTool::new()))
    }

    fn carry_over(&self) -> Option<String> {
        self.store.carry_over_text()
    }

    fn restore(&self, history: &[Message]) {
        self.store.restore_from(history);
    }
}
