//! The `memory` tool (FEATURES §6): add / replace / remove, or an all-or-nothing batch.

use hermes_protocol::ToolSpec;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::fragments::Fragment;
use crate::memory::store::{MemoryError, MemoryOp, MemoryStore, MemoryTarget};

/// The `memory` tool over one [`MemoryStore`]. Toolset `memory`.
#[derive(Debug, Clone)]
pub struct MemoryTool {
    store: MemoryStore,
    memory_enabled: bool,
    user_enabled: bool,
}

impl MemoryTool {
    /// A tool writing to `store`, both files writable.
    pub fn new(store: MemoryStore) -> MemoryTool {
        MemoryTool {
            store,
            memory_enabled: true,
            user_enabled: true,
        }
    }

    /// The same tool with only the enabled files writable (config `memory.memory_enabled`,
    /// `memory.user_profile_enabled`); a call on a disabled file is refused with a reason.
    pub fn with_targets(mut self, memory: bool, user: bool) -> MemoryTool {
        self.memory_enabled = memory;
        self.user_enabled = user;
        self
    }

    fn target_enabled(&self, target: MemoryTarget) -> bool {
        match target {
            MemoryTarget::Memory => self.memory_enabled,
            MemoryTarget::User => self.user_enabled,
        }
    }
}

fn str_arg<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Builds one operation from an object with `action`, `content`, `old_text`.
fn parse_op(v: &Value) -> Result<MemoryOp, String> {
    let action = str_arg(v, "action").ok_or("`action` is required (add, replace or remove)")?;
    let content = || {
        str_arg(v, "content")
            .map(str::to_string)
            .ok_or_else(|| format!("`{action}` needs `content`"))
    };
    let old_text = || {
        str_arg(v, "old_text")
            .map(str::to_string)
            .ok_or_else(|| format!("`{action}` needs `old_text`"))
    };
    match action {
        "add" => Ok(MemoryOp::Add {
            content: content()?,
        }),
        "replace" => Ok(MemoryOp::Replace {
            old_text: old_text()?,
            content: content()?,
        }),
        "remove" => Ok(MemoryOp::Remove {
            old_text: old_text()?,
        }),
        other => Err(format!(
            "unknown action `{other}`; use add, replace or remove"
        )),
    }
}

/// Parses the whole argument object into a target and its operations.
fn parse_args(args: &Value) -> Result<(MemoryTarget, Vec<MemoryOp>), String> {
    let target = match str_arg(args, "target") {
        None => MemoryTarget::Memory,
        Some(t) => MemoryTarget::parse(t)
            .ok_or_else(|| format!("unknown target `{t}`; use memory or user"))?,
    };
    let ops = match args.get("operations").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.iter().map(parse_op).collect::<Result<_, _>>()?,
        _ => vec![parse_op(args)?],
    };
    Ok((target, ops))
}

#[async_trait::async_trait]
impl Tool for MemoryTool {
    fn spec(&self) -> ToolSpec {
        let op_props = json!({
            "action": {"type": "string", "enum": ["add", "replace", "remove"], "description": "What to do."},
            "content": {"type": "string", "description": "Entry text (add, replace)."},
            "old_text": {"type": "string", "description": "A unique part of the entry to change (replace, remove)."}
        });
        let mut props = op_props.clone();
        if let Some(map) = props.as_object_mut() {
            map.insert(
                "target".into(),
                json!({"type": "string", "enum": ["memory", "user"], "description": "memory (your notes, default) or user (the user profile)."}),
            );
            map.insert(
                "operations".into(),
                json!({"type": "array", "description": "Several changes applied all-or-nothing instead of a single action.",
                       "items": {"type": "object", "properties": op_props, "required": ["action"]}}),
            );
        }
        ToolSpec {
            name: "memory".to_string(),
            description: Fragment::ToolMemory.raw().trim().to_string(),
            parameters: json!({"type": "object", "properties": props}),
        }
    }

    fn toolset(&self) -> &'static str {
        "memory"
    }

    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let (target, ops) = match parse_args(&args) {
            Ok(parsed) => parsed,
            Err(e) => return ToolOutput::error(e),
        };
        if !self.target_enabled(target) {
            let key = match target {
                MemoryTarget::Memory => "memory_enabled",
                MemoryTarget::User => "user_profile_enabled",
            };
            return ToolOutput::error(
                json!({
                    "success": false,
                    "target": target.as_str(),
                    "reason": "disabled",
                    "error": format!("{} is turned off (config.yaml memory.{key}: false); nothing was saved", target.file_name()),
                })
                .to_string(),
            );
        }
        let store = self.store.clone();
        // A span for the file update (issue 24 §1): target and size of the change, never the
        // entries' text; entered on the blocking thread so it nests under the tool call.
        let span = tracing::info_span!(
            "memory.update",
            "hermes.memory.target" = target.as_str(),
            "hermes.memory.operations" = ops.len(),
            "hermes.memory.changed" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        );
        let in_span = span.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _entered = in_span.entered();
            store.apply(target, &ops)
        })
        .await;
        match &result {
            Ok(Ok(outcome)) => {
                span.record("hermes.memory.changed", outcome.changed);
            }
            Ok(Err(e)) => {
                span.record("error.type", e.reason());
            }
            Err(_) => {
                span.record("error.type", "panicked");
            }
        }
        match result {
            Ok(Ok(outcome)) => {
                let body = json!({
                    "success": true,
                    "target": target.as_str(),
                    "changed": outcome.changed,
                    "entries": outcome.entries.len(),
                    "usage": outcome.usage(),
                    "note": if outcome.changed { "saved; shown in the prompt from the next session" } else { "already saved; nothing changed" },
                });
                ToolOutput::ok(body.to_string())
            }
            Ok(Err(e)) => ToolOutput::error(error_body(target, &e)),
            Err(join) => ToolOutput::error(format!("memory update did not finish: {join}")),
        }
    }
}

fn error_body(target: MemoryTarget, e: &MemoryError) -> String {
    // The over-limit message lists the current entries so the model can consolidate.
    json!({
        "success": false,
        "target": target.as_str(),
        "reason": e.reason(),
        "error": e.to_string(),
    })
    .to_string()
}
