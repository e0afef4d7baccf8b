//! `delegate_task` (FEATURES §3, §4; seeds 001 §18.5.3): hands a goal to a subagent — a fresh
//! [`crate::Agent`] with its own iteration budget (`delegation.max_iterations`, default 50),
//! the parent's model client (same credential pool and rate limits) unless
//! `delegation.model`/`delegation.provider` say otherwise, a restricted tool list
//! ([`child_tools`]) and a system prompt with the subagent layer instead of memory — and
//! returns its summary. `tasks` runs several subagents, at most
//! `delegation.max_concurrent_children` (default 3) at once, results in task order.
//!
//! Each child's transcript is a session of its own (source [`hermes_store::SUBAGENT_SOURCE`],
//! linked to the parent session); its tokens are added to the parent session's usage and to
//! the running turn's. The parent's interrupt reaches every running child at once (their
//! cancel tokens are children of the call's), each child ends its turn with valid tool
//! pairs, and the result says `interrupted`. The parent's observers (REPL tool lines,
//! gateway progress, API stream, `--json`) get each child's `tool_started`/`tool_finished`
//! events, call ids prefixed `subagent<N>:` and argument previews `[subagent N] `.

mod child;
mod parent;
mod tools;

use std::sync::Arc;

use futures::StreamExt;
use hermes_context::PromptProfile;
use hermes_llm::ModelClient;
use hermes_protocol::ToolSpec;
use hermes_protocol::config::DelegationConfig;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

pub(crate) use parent::with_parent;
pub use tools::{
    SUBAGENT_BLOCKED_TOOLS, SUBAGENT_BLOCKED_TOOLSETS, allowed_for_subagent, child_tools,
};

use child::{ChildTask, run_child};

/// One subagent's run, boxed so a batch can be driven as a stream.
type ChildRun<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = child::ChildReport> + Send + 'a>>;

/// Name of the tool.
pub const DELEGATE_TASK: &str = "delegate_task";
/// Toolset of the tool (included in the `hermes-cli` preset).
pub const DELEGATION_TOOLSET: &str = "delegation";

/// Most entries one `tasks` list may hold (ours; FEATURES §4 gives none). A longer list is
/// refused before any subagent starts, so a confused model cannot queue an unbounded batch
/// against the shared credential pool (seeds 001 §18.5.3).
pub const MAX_TASKS: usize = 10;

/// How subagents run (`config.yaml` `delegation:`, plus the prompt settings of the front
/// end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationSettings {
    /// Iteration budget of each subagent (`delegation.max_iterations`, default 50).
    pub max_iterations: u32,
    /// Subagents of one call running at once (`delegation.max_concurrent_children`,
    /// default 3; at least 1).
    pub max_concurrent_children: usize,
    /// Model name for subagents on the parent's client (`delegation.model` without
    /// `delegation.provider`); `None` = the parent's model.
    pub model: Option<String>,
    /// Prompt profile of subagents (the front end's choice for the parent); `None` =
    /// automatic by the context window.
    pub prompt_profile: Option<PromptProfile>,
    /// `agent.tool_use_enforcement`, for the subagent's tool-use discipline layer.
    pub tool_use_enforcement: Option<String>,
}

impl DelegationSettings {
    /// Settings from `config.yaml` `delegation:` (the prompt settings left automatic).
    pub fn from_config(config: &DelegationConfig) -> DelegationSettings {
        DelegationSettings {
            max_iterations: config.max_iterations.max(1),
            max_concurrent_children: config.max_concurrent_children.max(1),
            model: config.model.clone().filter(|m| !m.trim().is_empty()),
            prompt_profile: None,
            tool_use_enforcement: None,
        }
    }
}

impl Default for DelegationSettings {
    /// [`DelegationSettings::from_config`] of the default `delegation:` section.
    fn default() -> DelegationSettings {
        DelegationSettings::from_config(&DelegationConfig::default())
    }
}

/// The `delegate_task` tool. Registered by the front ends beside the other tools; it works
/// only when called from an agent's turn (it takes the parent session, client and tools
/// from there).
pub struct DelegateTool {
    settings: DelegationSettings,
    client: Option<Arc<dyn ModelClient>>,
}

impl std::fmt::Debug for DelegateTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegateTool")
            .field("settings", &self.settings)
            .field(
                "client",
                &self.client.as_ref().map(|c| c.model().to_string()),
            )
            .finish()
    }
}

impl DelegateTool {
    /// A tool whose subagents use the parent's client (or `settings.model` on it).
    pub fn new(settings: DelegationSettings) -> DelegateTool {
        DelegateTool {
            settings,
            client: None,
        }
    }

    /// The same tool with subagents on `client` instead (`delegation.provider`: another
    /// provider, built by the front end); the parent's fallbacks are then not used.
    pub fn with_client(mut self, client: Arc<dyn ModelClient>) -> DelegateTool {
        self.client = Some(client);
        self
    }

    /// The settings in use.
    pub fn settings(&self) -> &DelegationSettings {
        &self.settings
    }
}

/// One task as the model wrote it.
struct RawTask {
    goal: String,
    context: Option<String>,
    toolsets: Option<Vec<String>>,
}

/// Reads `args`: the single task (`goal`, `context`, `toolsets`), or the batch of `tasks`
/// with the top-level `goal` as the aim of the whole job (returned beside the tasks), the
/// top-level `context` appended to every task's, and the top-level `toolsets` used by the
/// tasks that name none.
fn parse_tasks(args: &Value) -> Result<(Vec<RawTask>, Option<String>), String> {
    let goal = text_field(args, "goal", "")?;
    let context = text_field(args, "context", "")?;
    let toolsets = toolsets_field(args, "")?;
    let tasks = match args.get("tasks") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) if items.is_empty() => None,
        Some(Value::Array(items)) => Some(items),
        Some(_) => {
            return Err(
                "`tasks` must be a list of {goal, context?, toolsets?} objects".to_string(),
            );
        }
    };
    let Some(items) = tasks else {
        let goal = goal.ok_or("`goal` is required: say what the subagent should do")?;
        return Ok((
            vec![RawTask {
                goal,
                context,
                toolsets,
            }],
            None,
        ));
    };
    if items.len() > MAX_TASKS {
        return Err(format!(
            "`tasks` holds {} entries; at most {MAX_TASKS} per call — split the job or merge tasks",
            items.len()
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("tasks[{i}].");
        if !item.is_object() {
            return Err(format!("`tasks[{i}]` must be an object with a `goal`"));
        }
        let task_goal = text_field(item, "goal", &at)?.ok_or(format!("`{at}goal` is required"))?;
        let merged = match (text_field(item, "context", &at)?, &context) {
            (Some(own), Some(common)) => Some(format!("{own}\n\n{common}")),
            (Some(own), None) => Some(own),
            (None, common) => common.clone(),
        };
        out.push(RawTask {
            goal: task_goal,
            context: merged,
            toolsets: toolsets_field(item, &at)?.or_else(|| toolsets.clone()),
        });
    }
    Ok((out, goal))
}

/// A non-blank string field; `None` when absent or blank.
fn text_field(v: &Value, key: &str, at: &str) -> Result<Option<String>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(format!("`{at}{key}` must be a string")),
    }
}

/// A list of toolset names (a comma-separated string is accepted too).
fn toolsets_field(v: &Value, at: &str) -> Result<Option<Vec<String>>, String> {
    let names: Vec<String> = match v.get("toolsets") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                match item.as_str() {
                    Some(n) if !n.trim().is_empty() => names.push(n.trim().to_string()),
                    _ => return Err(format!("`{at}toolsets` must be a list of toolset names")),
                }
            }
            names
        }
        Some(_) => return Err(format!("`{at}toolsets` must be a list of toolset names")),
    };
    Ok((!names.is_empty()).then_some(names))
}

fn task_schema() -> Value {
    json!({
        "goal": {"type": "string", "description": "What the subagent must do or find out, as one self-contained instruction."},
        "context": {"type": "string", "description": "Everything it needs to know: it sees none of this conversation (paths, names, constraints, what was already tried)."},
        "toolsets": {"type": "array", "items": {"type": "string"}, "description": "Toolsets it may use (e.g. [\"file\"], [\"file\", \"terminal\"]); default: yours, without delegate_task, clarify and memory."}
    })
}

#[async_trait::async_trait]
impl Tool for DelegateTool {
    fn spec(&self) -> ToolSpec {
        let mut properties = task_schema();
        if let Some(obj) = properties.as_object_mut() {
            obj.insert(
                "tasks".to_string(),
                json!({
                    "type": "array",
                    "maxItems": MAX_TASKS,
                    "description": "Several independent tasks run by parallel subagents (results in this order); `goal` then names the whole job, `context` is added to every task's, and `toolsets` applies to tasks that name none.",
                    "items": {"type": "object", "properties": task_schema(), "required": ["goal"]}
                }),
            );
        }
        ToolSpec {
            name: DELEGATE_TASK.to_string(),
            description: hermes_context::delegate_task_description().to_string(),
            parameters: json!({"type": "object", "properties": properties, "required": ["goal"]}),
        }
    }

    fn toolset(&self) -> &'static str {
        DELEGATION_TOOLSET
    }

    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }

    fn handles_cancel(&self) -> bool {
        true
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let Some(parent) = parent::current_parent() else {
            return ToolOutput::error(
                "delegate_task can only run inside an agent's turn; nothing was started",
            );
        };
        let (raw, aim) = match parse_tasks(&args) {
            Ok(parsed) => parsed,
            Err(e) => return ToolOutput::error(format!("{e}; no subagent was started")),
        };
        let part_of = aim
            .filter(|_| raw.len() > 1)
            .map(|aim| hermes_context::subagent_part_of(&aim));
        let batch = raw.len() > 1;
        let mut tasks = Vec::with_capacity(raw.len());
        for (i, task) in raw.into_iter().enumerate() {
            let tools = match child_tools(&parent.tools, task.toolsets.as_deref()) {
                Ok(tools) => tools,
                Err(e) => {
                    let which = if batch {
                        format!("task {}: ", i + 1)
                    } else {
                        String::new()
                    };
                    return ToolOutput::error(format!("{which}{e}; no subagent was started"));
                }
            };
            let context = task.context.into_iter().chain(part_of.clone()).collect();
            tasks.push(ChildTask {
                goal: task.goal,
                context,
                tools,
            });
        }
        let mut runs: Vec<ChildRun<'_>> = Vec::with_capacity(tasks.len());
        for (i, task) in tasks.iter().enumerate() {
            runs.push(Box::pin(run_child(
                i,
                task,
                &parent,
                ctx,
                &self.settings,
                self.client.as_ref(),
            )));
        }
        let reports: Vec<child::ChildReport> = futures::stream::iter(runs)
            .buffered(self.settings.max_concurrent_children.max(1))
            .collect()
            .await;
        let results: Vec<Value> = reports
            .iter()
            .zip(&tasks)
            .enumerate()
            .map(|(i, (report, task))| report.to_json(i + 1, &task.goal))
            .collect();
        let content = json!({ "results": results }).to_string();
        if reports.iter().any(child::ChildReport::produced_summary) {
            ToolOutput::ok(content)
        } else {
            ToolOutput::error(content)
        }
    }
}
