//! Small utility tools for a server's resources and prompts (FEATURES §11: "exposed through
//! small utility tools when advertised"): `mcp__<server>__list_resources`,
//! `…__read_resource`, `…__list_prompts`, `…__get_prompt`.

use std::sync::Arc;

use hermes_protocol::ToolSpec;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::server::McpServer;

/// Which utility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
}

impl Kind {
    /// The suffix after `mcp__<server>__`.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Kind::ListResources => "list_resources",
            Kind::ReadResource => "read_resource",
            Kind::ListPrompts => "list_prompts",
            Kind::GetPrompt => "get_prompt",
        }
    }

    /// The utilities a server with these capabilities gets.
    pub(crate) fn for_capabilities(caps: &Value) -> Vec<Kind> {
        let mut out = Vec::new();
        if caps.get("resources").is_some_and(Value::is_object) {
            out.extend([Kind::ListResources, Kind::ReadResource]);
        }
        if caps.get("prompts").is_some_and(Value::is_object) {
            out.extend([Kind::ListPrompts, Kind::GetPrompt]);
        }
        out
    }
}

/// One utility tool bound to a server.
pub(crate) struct UtilityTool {
    pub(crate) server: Arc<McpServer>,
    pub(crate) kind: Kind,
    pub(crate) name: String,
    pub(crate) toolset: &'static str,
}

fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = template.trim_end().to_string();
    for (k, v) in pairs {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

impl UtilityTool {
    fn sibling(&self, kind: Kind) -> String {
        let base = self
            .name
            .strip_suffix(self.kind.suffix())
            .unwrap_or(&self.name);
        format!("{base}{}", kind.suffix())
    }
}

#[async_trait::async_trait]
impl Tool for UtilityTool {
    fn spec(&self) -> ToolSpec {
        let server = self.server.name();
        let (template, parameters) = match self.kind {
            Kind::ListResources => (
                include_str!("../prompts/list_resources.md"),
                json!({"type": "object", "properties": {}}),
            ),
            Kind::ReadResource => (
                include_str!("../prompts/read_resource.md"),
                json!({"type": "object", "properties": {"uri": {"type": "string", "description": "Resource URI"}}, "required": ["uri"]}),
            ),
            Kind::ListPrompts => (
                include_str!("../prompts/list_prompts.md"),
                json!({"type": "object", "properties": {}}),
            ),
            Kind::GetPrompt => (
                include_str!("../prompts/get_prompt.md"),
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "Prompt name"},
                    "arguments": {"type": "object", "description": "String arguments of the prompt", "additionalProperties": {"type": "string"}}
                }, "required": ["name"]}),
            ),
        };
        let description = fill(
            template,
            &[
                ("server", server),
                ("read_tool", &self.sibling(Kind::ReadResource)),
                ("list_tool", &self.sibling(Kind::ListResources)),
                ("get_tool", &self.sibling(Kind::GetPrompt)),
            ],
        );
        ToolSpec {
            name: self.name.clone(),
            description,
            parameters,
        }
    }

    fn toolset(&self) -> &'static str {
        self.toolset
    }

    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }

    /// The server's health, as its tools report it ([`crate::McpTool`]).
    fn health(&self) -> hermes_tools::ToolHealth {
        crate::manager::server_health(&self.server)
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let s = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let result = match self.kind {
            Kind::ListResources => self.server.list_resources().await,
            Kind::ReadResource => self.server.read_resource(&s("uri")).await.map(|r| {
                // Same rendering as embedded resources in tool results.
                let blocks: Vec<Value> = r["contents"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|c| json!({"type": "resource", "resource": c}))
                            .collect()
                    })
                    .unwrap_or_default();
                Value::String(crate::mapping::map_call_result(&json!({"content": blocks})).text)
            }),
            Kind::ListPrompts => self.server.list_prompts().await,
            Kind::GetPrompt => {
                let arguments = args.get("arguments").cloned().unwrap_or_else(|| json!({}));
                self.server.get_prompt(&s("name"), arguments).await
            }
        };
        match result {
            Ok(Value::String(text)) => ToolOutput::ok(text),
            Ok(v) => ToolOutput::ok(serde_json::to_string_pretty(&v).unwrap_or_default()),
            Err(e) => ToolOutput::error(e),
        }
    }
}
