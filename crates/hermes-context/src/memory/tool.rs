//! The `memory` tool (FEATURES §6): add / replace / remove, or an all-or-nothing batch,
//! through a [`MemoryProvider`] and its write gate (seed 004 §5.2).

use std::sync::Arc;

use hermes_protocol::ToolSpec;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::fragments::Fragment;
use crate::memory::provider::{FileMemoryProvider, MemoryProvider};
use crate::memory::store::{
    GateAction, MemoryError, MemoryOp, MemoryOutcome, MemoryStore, MemoryTarget,
};

/// The `memory` tool over one [`MemoryProvider`]. Toolset `memory`.
#[derive(Debug, Clone)]
pub struct MemoryTool {
    provider: Arc<dyn MemoryProvider>,
    memory_enabled: bool,
    user_enabled: bool,
}

impl MemoryTool {
    /// A tool writing to `store` through the built-in provider ([`FileMemoryProvider`],
    /// gated), both files writable.
    pub fn new(store: MemoryStore) -> MemoryTool {
        MemoryTool::with_provider(Arc::new(FileMemoryProvider::new(store)))
    }

    /// A tool writing through `provider`, both files writable.
    pub fn with_provider(provider: Arc<dyn MemoryProvider>) -> MemoryTool {
        MemoryTool {
            provider,
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
        let provider = self.provider.clone();
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
            provider.apply(target, &ops)
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
            Ok(Ok(outcome)) => ToolOutput::ok(success_body(target, &outcome).to_string()),
            Ok(Err(e)) => ToolOutput::error(error_body(target, &e)),
            Err(join) => ToolOutput::error(format!("memory update did not finish: {join}")),
        }
    }
}

/// The result of a successful call: what changed, and what the write gate merged or
/// replaced instead of adding (`merged`, `superseded`), so the model knows.
fn success_body(target: MemoryTarget, outcome: &MemoryOutcome) -> Value {
    let mut merged = Vec::new();
    let mut superseded = Vec::new();
    for action in &outcome.gated {
        match action {
            GateAction::Merged {
                before,
                after,
                similarity,
            } => merged.push(json!({
                "existing_entry": before,
                "entry_now": after,
                "similarity": (similarity * 100.0).round() / 100.0,
            })),
            GateAction::Superseded { old, new, conflict } => superseded.push(json!({
                "old_entry": old,
                "new_entry": new,
                "conflict": conflict.as_str(),
            })),
        }
    }
    let note = if !superseded.is_empty() {
        "saved; it contradicted an existing entry, which was replaced by the newer fact (see \
         `superseded`); shown in the prompt from the next session"
    } else if !merged.is_empty() && !outcome.changed {
        "already saved: an existing entry nearly duplicates the new text (word-set Jaccard \
         similarity above 0.85) and already says all of it (see `merged`); nothing changed"
    } else if !merged.is_empty() {
        "merged: the new text nearly duplicates an existing entry (word-set Jaccard similarity \
         above 0.85), so that entry was updated instead of adding a new one (see `merged`); \
         shown in the prompt from the next session"
    } else if outcome.changed {
        "saved; shown in the prompt from the next session"
    } else {
        "already saved; nothing changed"
    };
    let mut body = json!({
        "success": true,
        "target": target.as_str(),
        "changed": outcome.changed,
        "entries": outcome.entries.len(),
        "usage": outcome.usage(),
        "note": note,
    });
    if let Some(map) = body.as_object_mut() {
        if !merged.is_empty() {
            map.insert("merged".into(), Value::Array(merged));
        }
        if !superseded.is_empty() {
            map.insert("superseded".into(), Value::Array(superseded));
        }
    }
    body
}

fn error_body(target: MemoryTarget, e: &MemoryError) -> String {
    // The over-limit message lists the current entries so the model can consolidate; a
    // low-information refusal says what to write instead.
    let mut body = json!({
        "success": false,
        "target": target.as_str(),
        "reason": e.reason(),
        "error": e.to_string(),
    });
    if let (MemoryError::LowInformation(refusal), Some(map)) = (e, body.as_object_mut()) {
        map.insert("rule".into(), Value::String(refusal.rule().to_string()));
    }
    body.to_string()
}
