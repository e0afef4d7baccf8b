//! The learning loop (FEATURES §8; seeds 002 §6–7): counters that make a memory review due
//! every `memory.nudge_interval` user turns and a skill review every
//! `skills.creation_nudge_interval` tool-calling iterations, and the review itself — a fork
//! of the session (same stored system prompt, same tool list, a snapshot of the history) that
//! runs in the background after the reply, makes at most
//! [`LearningOptions::max_iterations`] model calls, may run only the memory and skill tools
//! ([`REVIEW_TOOLS`]), writes nothing to the session store, and reports only what it saved.
//!
//! The texts of the reviews come from `hermes-context` ([`ReviewKind::prompt`]).

use std::sync::Arc;

use futures::StreamExt;
use hermes_context::{REVIEW_MAX_ITERATIONS, REVIEW_TOOLS, ReviewKind};
use hermes_llm::{ChatRequest, ModelClient, StreamEvent, ToolChoice};
use hermes_protocol::config::MemoryConfig;
use hermes_protocol::{
    AgentEvent, AssistantMessage, HermesHome, Message, Role, ToolCall, ToolSpec, Usage,
};
use hermes_tools::{Tool, ToolContext, ToolOutput};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::dispatch::{prepare_call, run_prepared};
use crate::repair::repair_history;

/// When reviews run (FEATURES §8). The [`Default`] turns the periodic reviews off so that
/// embedders opt in; [`LearningOptions::hermes_defaults`] has Hermes' intervals, and front
/// ends fill it from `config.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearningOptions {
    /// User turns between memory reviews (`memory.nudge_interval`); 0 = never.
    pub memory_interval: u32,
    /// Tool-calling iterations between skill reviews (`skills.creation_nudge_interval`);
    /// 0 = never.
    pub skill_interval: u32,
    /// Most model calls of one review (FEATURES §8: 8).
    pub max_iterations: u32,
    /// `memory:` settings, for the live memory shown to the session-end review.
    pub memory: MemoryConfig,
}

impl Default for LearningOptions {
    fn default() -> Self {
        LearningOptions {
            memory_interval: 0,
            skill_interval: 0,
            max_iterations: REVIEW_MAX_ITERATIONS,
            memory: MemoryConfig::default(),
        }
    }
}

impl LearningOptions {
    /// Hermes' defaults: a memory review every 10 user turns, a skill review every 10
    /// tool-calling iterations, 8 iterations per review.
    pub fn hermes_defaults() -> LearningOptions {
        LearningOptions {
            memory_interval: hermes_protocol::config::DEFAULT_MEMORY_NUDGE_INTERVAL,
            skill_interval: hermes_protocol::config::DEFAULT_SKILL_NUDGE_INTERVAL,
            ..LearningOptions::default()
        }
    }
}

/// One session's learning counters and its running background review.
#[derive(Default)]
pub(crate) struct LearningState {
    /// User turns since the last memory review or `memory` call.
    pub(crate) turns_since_memory: u32,
    /// Tool-calling iterations since the last skill review or `skill_manage` call.
    pub(crate) iters_since_skill: u32,
    /// User turns no review has looked at yet (the session-end review skips when 0).
    pub(crate) unreviewed_turns: u32,
    /// The background review started after an earlier turn, if any.
    pub(crate) running: Option<JoinHandle<ReviewReport>>,
}

impl LearningState {
    /// Forgets the counters (new or resumed session); a running review goes on.
    pub(crate) fn reset_counters(&mut self) {
        self.turns_since_memory = 0;
        self.iters_since_skill = 0;
        self.unreviewed_turns = 0;
    }
}

/// What a review did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewReport {
    /// Which review ran.
    pub kind: ReviewKind,
    /// Model calls made (≤ the iteration cap).
    pub iterations: u32,
    /// What was saved, one short phrase per change: `memory updated`, `user profile updated`,
    /// `skill created: <name>`, `skill updated: <name>`, `skill deleted: <name>`.
    pub saved: Vec<String>,
    /// Names of tools the model called that a review may not run (refused, not run).
    pub refused: Vec<String>,
    /// The model's last text (usually "Nothing to save.").
    pub final_text: String,
    /// Why the review stopped early (a failed model call, cancellation); logged only.
    pub error: Option<String>,
    /// Tokens used by the review's model calls (not added to the session's usage).
    pub usage: Usage,
}

impl ReviewReport {
    /// The one short notice for the user, or `None` when nothing was saved (FEATURES §8:
    /// silent unless it saved something). Duplicate phrases appear once.
    pub fn notice(&self) -> Option<String> {
        let mut phrases: Vec<&str> = Vec::new();
        for s in &self.saved {
            if !phrases.contains(&s.as_str()) {
                phrases.push(s);
            }
        }
        (!phrases.is_empty()).then(|| phrases.join(" · "))
    }
}

/// A forked agent ready to review one conversation. Made by [`Agent::fork_review`] or
/// [`Agent::session_end_review`]; owns copies of everything it needs, so it can run on
/// another task while the session goes on.
pub struct Review {
    kind: ReviewKind,
    client: Arc<dyn ModelClient>,
    system: String,
    messages: Vec<Message>,
    tools: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    /// The compiled schemas of `specs` (the session's, shared).
    validators: Arc<hermes_tools::ToolValidators>,
    max_tokens: Option<u32>,
    max_iterations: u32,
    home: HermesHome,
    memory: MemoryConfig,
    cwd: std::path::PathBuf,
    terminal_timeout_s: u64,
    sandbox: Arc<hermes_tools::SandboxSettings>,
}

impl Review {
    /// Which review this is.
    pub fn kind(&self) -> ReviewKind {
        self.kind
    }

    /// Runs the review: the review message is appended to the history snapshot, then up to
    /// the iteration cap model calls, each followed by its tool calls (memory and skill tools
    /// only; others get an error result and do not run). Never writes to the session store.
    /// Stops at the first answer without tool calls, at the cap, on a failed call, or when
    /// `cancel` fires.
    pub async fn run(self, cancel: CancellationToken) -> ReviewReport {
        let mut report = ReviewReport {
            kind: self.kind,
            iterations: 0,
            saved: Vec::new(),
            refused: Vec::new(),
            final_text: String::new(),
            error: None,
            usage: Usage::default(),
        };
        let (kind, home, memory) = (self.kind, self.home.clone(), self.memory.clone());
        let prompt = match tokio::task::spawn_blocking(move || kind.prompt(&home, &memory)).await {
            Ok(p) => p,
            Err(e) => {
                report.error = Some(format!("review prompt: {e}"));
                return report;
            }
        };
        let mut messages = self.messages.clone();
        messages.push(Message::user(prompt));
        let ctx = ToolContext {
            cwd: self.cwd.clone(),
            home: self.home.clone(),
            cancel: cancel.child_token(),
            approver: Arc::new(hermes_tools::FixedApprover(hermes_tools::Approval::Deny)),
            yolo: false,
            terminal_timeout_s: self.terminal_timeout_s,
            progress: Arc::new(|_message: String| {}),
            sandbox: self.sandbox.clone(),
            session_toolsets: Some(Arc::new(crate::batch::toolsets_of(&self.tools))),
            call_id: String::new(),
        };
        while report.iterations < self.max_iterations.max(1) {
            report.iterations += 1;
            let request = ChatRequest {
                model: self.client.model().to_string(),
                system: self.system.clone(),
                messages: messages.clone(),
                tools: self.specs.clone(),
                tool_choice: ToolChoice::Auto,
                max_tokens: self.max_tokens,
                temperature: None,
                cancel: cancel.child_token(),
            };
            let reply = match complete(&self.client, &request, &cancel).await {
                Ok(reply) => reply,
                Err(e) => {
                    report.error = Some(e);
                    break;
                }
            };
            report.usage.add(&reply.usage);
            report.final_text = reply.text.clone();
            messages.push(reply.to_message());
            if reply.tool_calls.is_empty() {
                break;
            }
            for call in &reply.tool_calls {
                let output = self.run_call(call, &ctx, &mut report).await;
                messages.push(Message::tool(
                    call.id.clone(),
                    call.name.clone(),
                    output.content,
                ));
            }
        }
        report
    }

    async fn run_call(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        report: &mut ReviewReport,
    ) -> ToolOutput {
        if !REVIEW_TOOLS.contains(&call.name.as_str()) {
            report.refused.push(call.name.clone());
            return ToolOutput::error(format!(
                "`{}` cannot run during a background review: only {} run here. Nothing was run.",
                call.name,
                REVIEW_TOOLS.join(", ")
            ));
        }
        let output = match prepare_call(&self.tools, &self.specs, &self.validators, call) {
            Ok((tool, args)) => run_prepared(tool, args, ctx).await,
            Err(refusal) => refusal,
        };
        if !output.is_error
            && let Some(phrase) = saved_phrase(call, &output.content)
        {
            report.saved.push(phrase);
        }
        output
    }
}

/// What a successful memory or skill call changed, as a short phrase; `None` for reads and
/// no-op memory calls (an exact duplicate reports `"changed": false`).
fn saved_phrase(call: &ToolCall, result: &str) -> Option<String> {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    match call.name.as_str() {
        "memory" => {
            let body: Value = serde_json::from_str(result).ok()?;
            if body["changed"] != Value::Bool(true) {
                return None;
            }
            Some(match body["target"].as_str() {
                Some("user") => "user profile updated".to_string(),
                _ => "memory updated".to_string(),
            })
        }
        "skill_manage" => {
            let name = args["name"].as_str().unwrap_or("?");
            let verb = match args["action"].as_str() {
                Some("create") => "created",
                Some("delete") => "deleted",
                _ => "updated",
            };
            Some(format!("skill {verb}: {name}"))
        }
        _ => None,
    }
}

/// One streamed model call, collected into its final message.
async fn complete(
    client: &Arc<dyn ModelClient>,
    request: &ChatRequest,
    cancel: &CancellationToken,
) -> Result<AssistantMessage, String> {
    let mut stream = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err("cancelled".to_string()),
        r = client.stream(request) => r.map_err(|e| e.to_string())?,
    };
    loop {
        let item = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err("cancelled".to_string()),
            item = stream.next() => item,
        };
        match item {
            Some(Ok(StreamEvent::Completed(reply))) => return Ok(reply),
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e.to_string()),
            None => return Err("the model stream ended before the response was complete".into()),
        }
    }
}

impl Agent {
    fn has_tool(&self, name: &str) -> bool {
        self.specs.iter().any(|s| s.name == name)
    }

    /// A fork of this session for `kind`: the stored system prompt (plus the ephemeral
    /// prompt), the same tool list in the same order — so the request prefix matches the
    /// session's cached one — and a snapshot of the repaired history. `None` when the session
    /// has no user message yet or offers neither `memory` nor `skill_manage`.
    pub fn fork_review(&self, kind: ReviewKind) -> Option<Review> {
        if !self.has_tool("memory") && !self.has_tool("skill_manage") {
            return None;
        }
        if !self.history.iter().any(|e| e.message.role == Role::User) {
            return None;
        }
        let mut system = self.system_prompt.clone();
        if let Some(eph) = &self.opts.ephemeral_prompt {
            system.push_str("\n\n");
            system.push_str(eph);
        }
        let (messages, _) = repair_history(self.history.iter().map(|e| &e.message));
        Some(Review {
            kind,
            client: self.deps.client.clone(),
            system,
            messages,
            tools: self.tools.clone(),
            specs: self.specs.clone(),
            validators: self.validators.clone(),
            max_tokens: self.opts.max_tokens,
            max_iterations: self.opts.learning.max_iterations,
            home: self.deps.home.clone(),
            memory: self.opts.learning.memory.clone(),
            cwd: self.opts.cwd.clone(),
            terminal_timeout_s: self.opts.terminal_timeout_s,
            sandbox: self.opts.sandbox.clone(),
        })
    }

    /// The final review of this session before it is reset (FEATURES §8: `/new`, the
    /// gateway's idle/daily reset). `None` when the learning loop is off (both intervals 0),
    /// no user turn happened since the last review, or the session offers no memory/skill
    /// tool. The caller runs it ([`Review::run`]),
    /// normally awaiting it so the next session's prompt shows what it saved, and then calls
    /// [`Agent::mark_reviewed`]. [`crate::AgentHandle`] does all this for `Op::NewSession`.
    pub fn session_end_review(&self) -> Option<Review> {
        let opts = &self.opts.learning;
        if opts.memory_interval == 0 && opts.skill_interval == 0 {
            return None;
        }
        if self.learning.unreviewed_turns == 0 {
            return None;
        }
        self.fork_review(ReviewKind::SessionEnd)
    }

    /// What must happen before this session is replaced by a new one (FEATURES §8: `/new`,
    /// `/reset`, the gateway's idle/daily reset): waits for a background review still
    /// running, then runs the session-end review ([`Agent::session_end_review`]) to its end
    /// so the next session's prompt shows what it saved. Returns the notices to show the user
    /// (`memory updated`, …; empty when nothing was saved). Cancelling `cancel` stops the
    /// review early; nothing of the session is written either way.
    pub async fn close_for_reset(&mut self, cancel: CancellationToken) -> Vec<String> {
        let mut notices = Vec::new();
        if let Some(report) = self.wait_for_review().await {
            notices.extend(report.notice());
        }
        if let Some(review) = self.session_end_review() {
            let report = review.run(cancel).await;
            log_report(self.session_id(), &report);
            notices.extend(report.notice());
            self.mark_reviewed();
        }
        notices
    }

    /// Records that a review covered the conversation so far (the counters start again).
    pub fn mark_reviewed(&mut self) {
        self.learning.reset_counters();
    }

    /// Waits for the background review started after an earlier turn, if any, and returns
    /// its report. Front ends call it before exiting so a review is not cut off.
    pub async fn wait_for_review(&mut self) -> Option<ReviewReport> {
        let running = self.learning.running.take()?;
        running.await.ok()
    }

    /// Counts one user turn (start of [`Agent::run_turn`]).
    pub(crate) fn learning_on_user_turn(&mut self) {
        self.learning.unreviewed_turns += 1;
        if self.opts.learning.memory_interval > 0 && self.has_tool("memory") {
            self.learning.turns_since_memory += 1;
        }
    }

    /// Counts one tool-calling iteration; the model's own use of `memory` or `skill_manage`
    /// resets that counter (FEATURES §8).
    pub(crate) fn learning_on_tool_calls(&mut self, calls: &[ToolCall]) {
        if calls.iter().any(|c| c.name == "memory") {
            self.learning.turns_since_memory = 0;
        }
        if calls.iter().any(|c| c.name == "skill_manage") {
            self.learning.iters_since_skill = 0;
        } else if self.opts.learning.skill_interval > 0 && self.has_tool("skill_manage") {
            self.learning.iters_since_skill += 1;
        }
    }

    /// After the reply was delivered: starts the due review in the background, unless one
    /// is still running (it is then started after a later turn). Its notice, if it saved
    /// something, goes to `events` as one status line.
    pub(crate) fn learning_after_turn(&mut self, events: &UnboundedSender<AgentEvent>) {
        let opts = &self.opts.learning;
        let memory_due =
            opts.memory_interval > 0 && self.learning.turns_since_memory >= opts.memory_interval;
        let skills_due =
            opts.skill_interval > 0 && self.learning.iters_since_skill >= opts.skill_interval;
        let Some(kind) = ReviewKind::due(memory_due, skills_due) else {
            return;
        };
        if self
            .learning
            .running
            .as_ref()
            .is_some_and(|r| !r.is_finished())
        {
            return;
        }
        let Some(review) = self.fork_review(kind) else {
            return;
        };
        if memory_due {
            self.learning.turns_since_memory = 0;
        }
        if skills_due {
            self.learning.iters_since_skill = 0;
        }
        self.learning.unreviewed_turns = 0;
        let events = events.clone();
        let session = self.session_id.clone();
        self.learning.running = Some(tokio::spawn(async move {
            let report = review.run(CancellationToken::new()).await;
            log_report(&session, &report);
            if let Some(notice) = report.notice() {
                let _ = events.send(AgentEvent::Status { message: notice });
            }
            report
        }));
    }
}

/// Logs a finished review (the user sees only the notice).
pub(crate) fn log_report(session: &str, report: &ReviewReport) {
    tracing::info!(
        session,
        kind = report.kind.as_str(),
        iterations = report.iterations,
        saved = ?report.saved,
        refused = ?report.refused,
        error = ?report.error,
        "learning review finished"
    );
}
