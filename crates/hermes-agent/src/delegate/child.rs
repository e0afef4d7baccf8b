//! One subagent run: a fresh [`Agent`] on the parent's client with its own session (linked
//! to the parent), its own iteration budget and a restricted tool list; its tool calls are
//! shown to the parent's observers; its usage is added to the parent session.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use hermes_context::{LayerKind, PromptBuilder, PromptInputs, PromptProfile};
use hermes_llm::{ChatRequest, EventStream, LlmError, ModelClient};
use hermes_protocol::{AgentEvent, HermesHome, Role, TurnOutcome, Usage};
use hermes_store::SUBAGENT_SOURCE;
use hermes_tools::{Tool, ToolContext};
use serde_json::{Value, json};
use tokio::sync::mpsc::unbounded_channel;

use super::DelegationSettings;
use super::parent::ParentTurn;
use crate::agent::{Agent, AgentDeps, AgentOptions, SystemPromptSource};
use crate::dispatch::clip;
use crate::review::LearningOptions;

/// One task of a `delegate_task` call, as validated.
#[derive(Clone)]
pub(crate) struct ChildTask {
    /// What the subagent must do (its first user message and part of its system prompt).
    pub(crate) goal: String,
    /// Context pieces for its system prompt (the task's own, then what the call shares).
    pub(crate) context: Vec<String>,
    /// The tools it gets (already intersected and filtered).
    pub(crate) tools: Vec<Arc<dyn Tool>>,
}

/// How a subagent's run ended, for the parent's tool result.
#[derive(Debug, Clone)]
pub(crate) struct ChildReport {
    pub(crate) status: &'static str,
    pub(crate) summary: String,
    pub(crate) error: Option<String>,
    pub(crate) iterations: u32,
    pub(crate) duration_ms: u64,
    pub(crate) session_id: Option<String>,
}

impl ChildReport {
    /// True for `completed` and `budget_exhausted` (the child produced a summary).
    pub(crate) fn produced_summary(&self) -> bool {
        matches!(self.status, "completed" | "budget_exhausted")
    }

    /// The report as one entry of the tool result (`task` is 1-based).
    pub(crate) fn to_json(&self, task: usize, goal: &str) -> Value {
        let mut v = json!({
            "task": task,
            "goal": clip(goal, GOAL_ECHO_CHARS),
            "status": self.status,
            "summary": self.summary,
            "iterations": self.iterations,
            "duration_ms": self.duration_ms,
            "session_id": self.session_id,
        });
        if let (Some(error), Some(obj)) = (&self.error, v.as_object_mut()) {
            obj.insert("error".to_string(), Value::String(error.clone()));
        }
        v
    }
}

/// Chars of a task's goal repeated in its result entry.
const GOAL_ECHO_CHARS: usize = 200;

/// The status word of a turn outcome in the tool result.
fn status_of(outcome: &TurnOutcome) -> &'static str {
    match outcome {
        TurnOutcome::Completed => "completed",
        TurnOutcome::BudgetExhausted => "budget_exhausted",
        TurnOutcome::Interrupted => "interrupted",
        TurnOutcome::Failed => "failed",
    }
}

/// Runs task number `index` (0-based) to its end. Never fails: a child that cannot start
/// is reported as `failed` with the reason.
pub(crate) async fn run_child(
    index: usize,
    task: &ChildTask,
    parent: &ParentTurn,
    ctx: &ToolContext,
    settings: &DelegationSettings,
    override_client: Option<&Arc<dyn ModelClient>>,
) -> ChildReport {
    let started = Instant::now();
    let label = format!("[subagent {}]", index + 1);
    if ctx.cancel.is_cancelled() {
        // Interrupted while waiting for a free slot: nothing was started, no session made.
        return ChildReport {
            status: "interrupted",
            summary: String::new(),
            error: None,
            iterations: 0,
            duration_ms: 0,
            session_id: None,
        };
    }
    let (client, fallbacks, context_window) = match (override_client, &settings.model) {
        (Some(c), _) => (c.clone(), Vec::new(), None),
        (None, Some(model)) if model != parent.client.model() => (
            Arc::new(ModelOverride {
                inner: parent.client.clone(),
                model: model.clone(),
            }) as Arc<dyn ModelClient>,
            Vec::new(),
            None,
        ),
        _ => (
            parent.client.clone(),
            parent.fallbacks.clone(),
            parent.opts.context_window,
        ),
    };
    let prompt = ChildPrompt {
        home: ctx.home.clone(),
        cwd: ctx.cwd.clone(),
        layer: hermes_context::subagent_layer(
            &task.goal,
            &task.context.iter().map(String::as_str).collect::<Vec<_>>(),
        ),
        profile: settings.prompt_profile,
        tool_use_enforcement: settings.tool_use_enforcement.clone(),
        context_window: context_window.or_else(|| client.context_window()),
    };
    let deps = AgentDeps {
        client,
        tools: task.tools.clone(),
        store: parent.store.clone(),
        approver: ctx.approver.clone(),
        prompt: Arc::new(prompt),
        home: ctx.home.clone(),
    };
    let opts = AgentOptions {
        max_turns: settings.max_iterations.max(1),
        api_max_retries: parent.opts.api_max_retries,
        retry_base: parent.opts.retry_base,
        retry_max: parent.opts.retry_max,
        yolo: ctx.yolo,
        cwd: ctx.cwd.clone(),
        terminal_timeout_s: ctx.terminal_timeout_s,
        source: SUBAGENT_SOURCE.to_string(),
        max_tokens: parent.opts.max_tokens,
        ephemeral_prompt: None,
        context_window,
        compression_enabled: parent.opts.compression_enabled,
        compression: parent.opts.compression.clone(),
        session_key: None,
        hooks: crate::Hooks::default(),
        learning: LearningOptions::default(),
        parent_session_id: Some(parent.session_id.clone()),
        sandbox: ctx.sandbox.clone(),
        defer_session_creation: false,
        session_id: None,
        send_images: parent.opts.send_images,
    };
    let mut agent = match Agent::start(deps, opts, None).await {
        Ok(agent) => agent,
        Err(e) => {
            return ChildReport {
                status: "failed",
                summary: String::new(),
                error: Some(format!("the subagent could not start: {e}")),
                iterations: 0,
                duration_ms: elapsed_ms(started),
                session_id: None,
            };
        }
    };
    agent.set_fallbacks(fallbacks);
    let session_id = agent.session_id().to_string();

    let (tx, mut rx) = unbounded_channel();
    let cancel = ctx.cancel.child_token();
    let turn = async {
        let tx = tx;
        agent.run_turn(&task.goal, &tx, cancel).await
    };
    let forward = async {
        let mut finished: Option<(String, Usage)> = None;
        while let Some(event) = rx.recv().await {
            match event {
                AgentEvent::TurnFinished {
                    final_text, usage, ..
                } => finished = Some((final_text, usage)),
                other => {
                    if let Some(shown) = as_parent_event(index, other) {
                        let _ = parent.events.send(shown);
                    }
                }
            }
        }
        finished
    };
    let (outcome, finished) = tokio::join!(turn, forward);
    let (final_text, usage) = finished.unwrap_or_default();
    let status = status_of(&outcome);
    let iterations = iterations_used(&agent, &outcome);
    (ctx.progress)(format!("{label} {status} after {iterations} step(s)"));

    add_usage_to_parent(parent, &agent, &usage).await;
    let store = parent.store.clone();
    let sid = session_id.clone();
    let reason = format!("subagent {status}");
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || store.end_session(&sid, &reason)).await
    {
        tracing::warn!(session = %session_id, error = %e, "could not close a subagent session");
    }

    let (summary, error) = match outcome {
        TurnOutcome::Failed => (String::new(), Some(final_text)),
        _ => (final_text, None),
    };
    ChildReport {
        status,
        summary,
        error,
        iterations,
        duration_ms: elapsed_ms(started),
        session_id: Some(session_id),
    }
}

/// A child's event as the parent's observers see it: its tool calls, with call ids made
/// distinct (`subagent<N>:<id>`) and the arguments preview prefixed `[subagent N]`; its text,
/// reasoning and status lines stay in its own session.
fn as_parent_event(index: usize, event: AgentEvent) -> Option<AgentEvent> {
    let n = index + 1;
    match event {
        AgentEvent::ToolStarted {
            call_id,
            name,
            args_preview,
            arguments,
        } => Some(AgentEvent::ToolStarted {
            call_id: format!("subagent{n}:{call_id}"),
            name,
            args_preview: format!("[subagent {n}] {args_preview}"),
            arguments,
        }),
        AgentEvent::ToolFinished {
            call_id,
            ok,
            preview,
            duration_ms,
        } => Some(AgentEvent::ToolFinished {
            call_id: format!("subagent{n}:{call_id}"),
            ok,
            preview,
            duration_ms,
        }),
        _ => None,
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Model calls of the child's turn that produced a reply: its assistant messages, less the
/// summary written after the budget ran out.
fn iterations_used(agent: &Agent, outcome: &TurnOutcome) -> u32 {
    let replies = agent
        .history()
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    let replies = if *outcome == TurnOutcome::BudgetExhausted {
        replies.saturating_sub(1)
    } else {
        replies
    };
    u32::try_from(replies).unwrap_or(u32::MAX)
}

/// Adds the child's tokens and cost to the parent session (store totals and the parent's
/// running turn), under the child's model.
async fn add_usage_to_parent(parent: &ParentTurn, agent: &Agent, usage: &Usage) {
    if usage.is_empty() {
        return;
    }
    parent.add_child_usage(usage);
    let store = parent.store.clone();
    let sid = parent.session_id.clone();
    let row = agent.usage_row(usage);
    match tokio::task::spawn_blocking(move || store.add_usage(&sid, &row.as_record())).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "could not add a subagent's usage to its parent"),
        Err(e) => tracing::warn!(error = %e, "could not add a subagent's usage to its parent"),
    }
}

/// The system prompt of a subagent: the builder's identity, tool guidance, project context
/// and metadata, with the subagent layer as the caller's system message and the tool-use
/// discipline layer where the model needs it — no memory, user profile or skills index.
struct ChildPrompt {
    home: HermesHome,
    cwd: PathBuf,
    layer: String,
    profile: Option<PromptProfile>,
    tool_use_enforcement: Option<String>,
    context_window: Option<u64>,
}

impl SystemPromptSource for ChildPrompt {
    fn build(&self, model: &str, provider: &str, tool_names: &[String]) -> String {
        let mut builder = PromptBuilder::new(PromptInputs {
            home: &self.home,
            cwd: &self.cwd,
            tool_names,
            model,
            provider,
            date: chrono::Local::now().date_naive(),
            profile: self
                .profile
                .unwrap_or_else(|| PromptProfile::auto(self.context_window)),
            context_window: self.context_window,
            extra_system: Some(self.layer.clone()),
            load_context_files: true,
        });
        if let Some(layer) = hermes_context::tool_use_discipline(
            model,
            self.tool_use_enforcement.as_deref(),
            tool_names,
        ) {
            builder = builder.with_layer(LayerKind::ToolUseDiscipline, layer);
        }
        builder.build().text
    }
}

/// The parent's client under another model name (`delegation.model` without a provider):
/// the same connection and credential pool, the request sent with `model`.
struct ModelOverride {
    inner: Arc<dyn ModelClient>,
    model: String,
}

#[async_trait::async_trait]
impl ModelClient for ModelOverride {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let mut request = request.clone();
        request.model = self.model.clone();
        self.inner.stream(&request).await
    }
    fn provider(&self) -> &str {
        self.inner.provider()
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn base_url(&self) -> &str {
        self.inner.base_url()
    }
    fn spare_credentials(&self) -> u32 {
        self.inner.spare_credentials()
    }
}
