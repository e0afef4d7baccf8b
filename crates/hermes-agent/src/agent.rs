//! The [`Agent`]: one session's state and the services a turn uses.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hermes_context::{CompressionConfig, ContextCompressor};
use hermes_llm::ModelClient;
use hermes_llm::fallback::{FallbackTarget, RecoveryPolicy};
use hermes_protocol::{
    AgentEvent, HermesHome, Message, Role, SecretRedactor, SessionId, Usage, new_session_id,
};
use hermes_store::{NewSession, SessionStore};
use hermes_tools::{Approver, Tool, ToolSource};
use tokio::sync::mpsc::UnboundedSender;

use crate::hooks::{HookEvent, Hooks};

/// Builds the system prompt of a new session (ARCHITECTURE §2 step 1). Called once per
/// session; the text is stored with the session and reused byte-for-byte on resume.
pub trait SystemPromptSource: Send + Sync {
    /// Returns the full system prompt for a session on this model/provider with these tools.
    fn build(&self, model: &str, provider: &str, tool_names: &[String]) -> String;
}

impl<F> SystemPromptSource for F
where
    F: Fn(&str, &str, &[String]) -> String + Send + Sync,
{
    fn build(&self, model: &str, provider: &str, tool_names: &[String]) -> String {
        self(model, provider, tool_names)
    }
}

/// The services an agent uses.
#[derive(Clone)]
pub struct AgentDeps {
    /// The model connection.
    pub client: Arc<dyn ModelClient>,
    /// The tools offered to the model, in the stable order they are sent.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The session store.
    pub store: Arc<SessionStore>,
    /// Approval policy for dangerous commands.
    pub approver: Arc<dyn Approver>,
    /// Builds the system prompt of new sessions.
    pub prompt: Arc<dyn SystemPromptSource>,
    /// The hermes home.
    pub home: HermesHome,
}

/// Per-agent settings (from flags and `config.yaml`).
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Iteration budget per turn (`agent.max_turns`, `--max-turns`; default 90).
    pub max_turns: u32,
    /// Retries of a failed model call (`agent.api_max_retries`; default 3).
    pub api_max_retries: u32,
    /// First retry delay; doubled per attempt up to `retry_max` (FEATURES §2: 2 s / 60 s).
    pub retry_base: Duration,
    /// Largest retry delay before jitter.
    pub retry_max: Duration,
    /// Skip approval of dangerous commands (`--yolo`).
    pub yolo: bool,
    /// Working directory of tools.
    pub cwd: PathBuf,
    /// Default terminal timeout in seconds.
    pub terminal_timeout_s: u64,
    /// Session source recorded in the store (`cli`, `gateway`, `cron`, …).
    pub source: String,
    /// Output token cap per model call.
    pub max_tokens: Option<u32>,
    /// Text appended to the system prompt at call time only (never stored).
    pub ephemeral_prompt: Option<String>,
    /// Context window in tokens for the compression threshold; `None` asks the client and
    /// falls back to [`crate::DEFAULT_CONTEXT_WINDOW`] (`model.context_length`).
    pub context_window: Option<u64>,
    /// Automatic compression on the preflight estimate (`compression.enabled`, default
    /// true). Overflow errors and `/compress` compress regardless.
    pub compression_enabled: bool,
    /// Compressor tunables (`compression.protect_first_n`, `protect_last_n`, …).
    pub compression: CompressionConfig,
    /// Gateway session key recorded with every session this agent creates (FEATURES §1
    /// Gateway: the persisted key→session routing); `None` outside the gateway.
    pub session_key: Option<String>,
    /// Lifecycle hooks (FEATURES §12); the agent fires `session:start`, `agent:start`,
    /// `agent:step` and `agent:end`. Empty by default.
    pub hooks: Hooks,
    /// The learning loop's intervals (FEATURES §8); off by default, front ends set them
    /// from `memory.nudge_interval` and `skills.creation_nudge_interval`.
    pub learning: crate::review::LearningOptions,
    /// Parent recorded with every session this agent creates (`parent_session_id`): set for
    /// `delegate_task` subagents, whose transcript is linked to the session that delegated
    /// (FEATURES §4). `None` by default.
    pub parent_session_id: Option<SessionId>,
    /// The OS sandbox of the agent's commands and the path policy of its file tools
    /// (`terminal.sandbox`, `terminal.backend`). The default is `workspace-write` without a
    /// launcher, which refuses commands until the front end sets the launcher
    /// (issue 18).
    pub sandbox: Arc<hermes_tools::SandboxSettings>,
    /// Write a new session's row only with its first message (issue 20 item 6): a REPL
    /// opened and closed, or a `/new` never used, leaves nothing in `sessions list`. Off by
    /// default: the gateway records model choices and routes on a session before its first
    /// message.
    pub defer_session_creation: bool,
    /// The id of the first session this agent creates (a later `/new` makes its own);
    /// `None` makes a new one. Cron runs use Python Hermes' `cron_<job>_<YYYYmmdd_HHMMSS>`.
    /// The caller makes sure no session has it yet.
    pub session_id: Option<String>,
    /// Send attached images to the model as images ([`Agent::attach_images`]); the front end
    /// decides it from `agent.image_input_mode`, `model.supports_vision` and the model
    /// (hermes-llm `vision::sends_images`). Off by default.
    pub send_images: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_turns: hermes_protocol::config::DEFAULT_MAX_TURNS,
            api_max_retries: 3,
            retry_base: Duration::from_secs(2),
            retry_max: Duration::from_secs(60),
            yolo: false,
            cwd: PathBuf::from("."),
            terminal_timeout_s: hermes_protocol::config::DEFAULT_TERMINAL_TIMEOUT_S,
            source: "cli".to_string(),
            max_tokens: None,
            ephemeral_prompt: None,
            context_window: None,
            compression_enabled: true,
            compression: CompressionConfig::default(),
            session_key: None,
            hooks: Hooks::default(),
            learning: crate::review::LearningOptions::default(),
            parent_session_id: None,
            sandbox: Arc::new(hermes_tools::SandboxSettings::default()),
            defer_session_creation: false,
            session_id: None,
            send_images: false,
        }
    }
}

/// A failure that stops the agent from starting or continuing a session.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The session store failed.
    #[error("session store: {0}")]
    Store(#[from] hermes_store::StoreError),
    /// The requested session does not exist.
    #[error("no session matches `{0}` (see `hermes sessions list`)")]
    SessionNotFound(String),
    /// A blocking task panicked or was cancelled.
    #[error("internal task failed: {0}")]
    Join(String),
}

/// One message of the active history, with its store row id once saved and the trace id of
/// the turn that produced it (issue 24 §1: stored with it; `None` when trace export is off).
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) id: Option<i64>,
    pub(crate) message: Message,
    pub(crate) trace_id: Option<String>,
}

/// One session's agent: its history, prompt and services. Driven by [`crate::AgentHandle`]
/// or directly through [`Agent::run_turn`].
pub struct Agent {
    pub(crate) deps: AgentDeps,
    pub(crate) opts: AgentOptions,
    pub(crate) session_id: SessionId,
    pub(crate) system_prompt: String,
    pub(crate) history: Vec<Entry>,
    /// Messages whose save failed; retried before the next write (nothing is dropped).
    pub(crate) unsaved: Vec<usize>,
    pub(crate) session_usage: Usage,
    /// The tools offered now: the built-ins of `deps.tools`, then those of `sources`.
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    /// `tools[i].spec()`, computed when the list changes: sent with every request in this
    /// stable order.
    pub(crate) specs: Vec<hermes_protocol::ToolSpec>,
    /// The input validators of `specs`, each compiled on its tool's first call; rebuilt with
    /// `specs` (seed 004 §3: every call validated before it runs).
    pub(crate) validators: Arc<hermes_tools::ToolValidators>,
    /// Estimated tokens of `specs` ([`hermes_context::TokenEstimator::estimate_tool`]
    /// summed), computed with them: the preflight estimate of every request adds it instead
    /// of serializing each schema again (issue 6).
    pub(crate) specs_tokens: u64,
    /// Tool lists that may change during the session (MCP servers).
    pub(crate) sources: Vec<Arc<dyn ToolSource>>,
    /// Sum of the sources' generations when `tools` was last built.
    pub(crate) sources_generation: u64,
    /// The model client of the running turn: the primary, or a fallback after a failure.
    pub(crate) active: Arc<dyn ModelClient>,
    /// `fallback_providers`, tried in order within one turn (FEATURES §2); `recovery`
    /// holds one target per client, in the same order.
    pub(crate) fallbacks: Vec<Arc<dyn ModelClient>>,
    /// What to do after a failed model call, and this turn's retry/fallback counters.
    pub(crate) recovery: RecoveryPolicy,
    /// Plans compressions; remembers recent savings for anti-thrash.
    pub(crate) compressor: ContextCompressor,
    /// Messages for the running turn, read after each tool batch (busy mode `steer`).
    pub(crate) steer: Option<crate::SteerQueue>,
    /// The session's `history_version` as this agent last loaded or wrote it; every commit
    /// is checked against it (issue 7 item 4).
    pub(crate) history_version: u64,
    /// A commit found the history changed elsewhere; the turn stops and the session is
    /// reloaded ([`Agent::reload_after_conflict`]).
    pub(crate) history_conflict: bool,
    /// The first failed save of the running turn that was not a history conflict (the
    /// store's own retries on a locked database already spent, case C21), as the line the
    /// front ends show. The turn stops and ends as [`hermes_protocol::TurnOutcome::Failed`]
    /// with it (issue 17: a message that cannot be stored fails loudly). Cleared when a
    /// turn starts.
    pub(crate) store_failure: Option<String>,
    /// Until when turns skip the primary after a rate-limit or billing fallback.
    pub(crate) primary_cooldown: Option<tokio::time::Instant>,
    /// Learning-loop counters and the running background review (FEATURES §8).
    pub(crate) learning: crate::review::LearningState,
    /// The secrets hermes knows, masked in every tool result before the model, the store,
    /// the spill files or an event sees it (issue 18 item 2).
    pub(crate) redactor: Arc<SecretRedactor>,
    /// The row of a new session not written yet ([`AgentOptions::defer_session_creation`]):
    /// created before the first message is.
    pub(crate) pending_session: Option<NewSession>,
    /// Image parts for the next user message ([`Agent::attach_images`]).
    pub(crate) pending_images: Vec<hermes_protocol::ContentPart>,
}

impl Agent {
    /// Starts a new session, or resumes `resume` (an id, a title or a unique id prefix).
    pub async fn start(
        deps: AgentDeps,
        opts: AgentOptions,
        resume: Option<&str>,
    ) -> Result<Agent, AgentError> {
        let mut deps = deps;
        // Stateful tools (`todo`) get an instance of their own per agent.
        deps.tools = deps
            .tools
            .iter()
            .map(|t| t.for_session().unwrap_or_else(|| t.clone()))
            .collect();
        let specs: Vec<hermes_protocol::ToolSpec> = deps.tools.iter().map(|t| t.spec()).collect();
        let specs_tokens = tools_tokens(&specs);
        let compressor = ContextCompressor::new(opts.compression.clone());
        let recovery = RecoveryPolicy {
            retry_base: opts.retry_base,
            retry_max: opts.retry_max,
            ..RecoveryPolicy::new(opts.api_max_retries, Vec::new())
        };
        let home = deps.home.clone();
        let redactor = tokio::task::spawn_blocking(move || SecretRedactor::load(&home))
            .await
            .map_err(|e| AgentError::Join(e.to_string()))?;
        let mut agent = Agent {
            redactor: Arc::new(redactor),
            compressor,
            steer: None,
            primary_cooldown: None,
            learning: crate::review::LearningState::default(),
            validators: Arc::new(hermes_tools::ToolValidators::new(specs.len())),
            specs,
            specs_tokens,
            tools: deps.tools.clone(),
            sources: Vec::new(),
            sources_generation: 0,
            active: deps.client.clone(),
            fallbacks: Vec::new(),
            recovery,
            deps,
            opts,
            session_id: String::new(),
            system_prompt: String::new(),
            history: Vec::new(),
            unsaved: Vec::new(),
            session_usage: Usage::default(),
            history_version: 0,
            history_conflict: false,
            store_failure: None,
            pending_session: None,
            pending_images: Vec::new(),
        };
        match resume {
            Some(key) => agent.resume(key).await?,
            None => agent.new_session().await?,
        }
        Ok(agent)
    }

    /// Replaces the secret redactor, e.g. with the one a front end built once at start and
    /// shares between its agents. [`Agent::start`] loads one from `deps.home`
    /// ([`SecretRedactor::load`]), so an agent always redacts what its home holds.
    pub fn set_redactor(&mut self, redactor: Arc<SecretRedactor>) {
        self.redactor = redactor;
    }

    /// The secret redactor applied to tool results.
    pub fn redactor(&self) -> &Arc<SecretRedactor> {
        &self.redactor
    }

    /// The session store this agent writes to.
    pub fn store(&self) -> Arc<SessionStore> {
        self.deps.store.clone()
    }

    /// The current session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The stored system prompt of the current session.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// The active history (without the system prompt).
    pub fn history(&self) -> Vec<Message> {
        self.history.iter().map(|e| e.message.clone()).collect()
    }

    /// The session's `history_version` as this agent last loaded or wrote it. Another writer
    /// (an `/undo`, `/new` or compression elsewhere) moves the stored version on; this agent's
    /// next commit is then refused and the session reloaded.
    pub fn history_version(&self) -> u64 {
        self.history_version
    }

    /// Tokens used by this session's model calls since the agent started.
    pub fn session_usage(&self) -> Usage {
        self.session_usage
    }

    /// Adds a tool list that may change during the session (e.g. an MCP manager). Its tools
    /// go after the built-ins and are re-read before every model call when it changes.
    pub fn add_tool_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
        self.sources_generation = u64::MAX;
        self.refresh_tools();
    }

    /// Sets the fallback providers (`fallback_providers`), tried in order within a turn
    /// when the current provider fails with a class that allows fallback (FEATURES §2); the
    /// next turn starts on the primary again.
    pub fn set_fallbacks(&mut self, fallbacks: Vec<Arc<dyn ModelClient>>) {
        self.recovery.fallbacks = fallbacks
            .iter()
            .map(|c| FallbackTarget {
                provider: c.provider().to_string(),
                model: c.model().to_string(),
                base_url: None,
            })
            .collect();
        self.fallbacks = fallbacks;
    }

    /// Sets the queue whose messages are handed to the running turn after each tool batch
    /// (gateway busy mode `steer`).
    pub fn set_steer_queue(&mut self, queue: crate::SteerQueue) {
        self.steer = Some(queue);
    }

    /// Rebuilds the tool list when a source changed; returns true when it did.
    pub(crate) fn refresh_tools(&mut self) -> bool {
        let generation = self
            .sources
            .iter()
            .fold(0u64, |acc, s| acc.wrapping_add(s.generation()));
        if generation == self.sources_generation {
            return false;
        }
        self.sources_generation = generation;
        let mut tools = self.deps.tools.clone();
        for source in &self.sources {
            tools.extend(source.tools());
        }
        self.specs = tools.iter().map(|t| t.spec()).collect();
        self.specs_tokens = tools_tokens(&self.specs);
        self.validators = Arc::new(hermes_tools::ToolValidators::new(self.specs.len()));
        self.tools = tools;
        true
    }

    /// The model client.
    pub fn client(&self) -> &Arc<dyn ModelClient> {
        &self.deps.client
    }

    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.name.clone()).collect()
    }

    /// A newly built system prompt with every known secret replaced by its marker: the
    /// prompt carries files the user wrote (`AGENTS.md`, `SOUL.md`, memory), and a key pasted
    /// into one must reach neither the model nor the stored session.
    pub(crate) fn build_system_prompt(&self) -> String {
        let client = &self.deps.client;
        let prompt = self
            .deps
            .prompt
            .build(client.model(), client.provider(), &self.tool_names());
        self.redactor.redact_string(prompt)
    }

    /// Begins a fresh session with a newly built system prompt.
    pub async fn new_session(&mut self) -> Result<(), AgentError> {
        let id = self.opts.session_id.take().unwrap_or_else(new_session_id);
        let prompt = self.build_system_prompt();
        let client = &self.deps.client;
        let record = NewSession {
            id: id.clone(),
            source: self.opts.source.clone(),
            session_key: self.opts.session_key.clone(),
            title: None,
            model: client.model().to_string(),
            provider: client.provider().to_string(),
            system_prompt: prompt.clone(),
            parent_session_id: self.opts.parent_session_id.clone(),
            cwd: Some(self.opts.cwd.display().to_string()),
        };
        if self.opts.defer_session_creation {
            self.pending_session = Some(record);
        } else {
            self.blocking(move |s| s.create_session(&record)).await?;
            self.pending_session = None;
        }
        self.session_id = id;
        self.system_prompt = prompt;
        self.history.clear();
        self.unsaved.clear();
        self.session_usage = Usage::default();
        self.history_version = 0;
        self.history_conflict = false;
        self.learning.reset_counters();
        self.restore_tool_state();
        self.fire_hook(
            "session:start",
            serde_json::json!({"model": client.model(), "provider": client.provider()}),
        );
        Ok(())
    }

    /// Loads an existing session: its stored prompt (byte-for-byte) and active messages.
    pub async fn resume(&mut self, key: &str) -> Result<(), AgentError> {
        let k = key.to_string();
        let record = self
            .blocking(move |s| s.find_session(&k))
            .await?
            .ok_or_else(|| AgentError::SessionNotFound(key.to_string()))?;
        let id = record.id.clone();
        let messages = self.blocking(move |s| s.load_messages(&id)).await?;
        self.history_version = record.history_version;
        self.history_conflict = false;
        self.pending_session = None;
        self.session_id = record.id;
        self.system_prompt = record.system_prompt;
        self.history = messages
            .into_iter()
            .filter(|m| m.message.role != Role::System)
            .map(|m| Entry {
                id: Some(m.id),
                message: m.message,
                trace_id: m.trace_id,
            })
            .collect();
        self.unsaved.clear();
        self.session_usage = Usage::default();
        self.learning.reset_counters();
        self.restore_tool_state();
        Ok(())
    }

    /// Lets stateful tools (the `todo` list) rebuild their state from the active history
    /// ([`hermes_tools::Tool::restore`]): empty for a new session, the stored messages on
    /// resume.
    fn restore_tool_state(&self) {
        let messages: Vec<Message> = self.history.iter().map(|e| e.message.clone()).collect();
        for tool in &self.deps.tools {
            tool.restore(&messages);
        }
    }

    /// Removes the last `count` user turns from the active history (`/undo`). Returns the
    /// text of the earliest removed user message, or `None` when there was nothing to undo.
    pub async fn undo(&mut self, count: u32) -> Result<Option<String>, AgentError> {
        let user_positions: Vec<usize> = self
            .history
            .iter()
            .enumerate()
            .filter(|(_, e)| e.message.role == Role::User)
            .map(|(i, _)| i)
            .collect();
        let count = count.max(1) as usize;
        if user_positions.is_empty() {
            return Ok(None);
        }
        let cut = user_positions[user_positions.len().saturating_sub(count)];
        self.flush_unsaved().await;
        if let Some(first_id) = self.history[cut..].iter().find_map(|e| e.id) {
            let sid = self.session_id.clone();
            let expected = self.history_version;
            match self
                .blocking(move |s| s.deactivate_messages_checked(&sid, first_id, expected))
                .await
            {
                Ok(version) => self.history_version = version,
                Err(e) => {
                    if is_conflict(&e) {
                        // Someone else changed the history: show them what is stored now.
                        self.reload_after_conflict().await;
                    }
                    return Err(e);
                }
            }
        }
        let text = self.history[cut].message.text();
        self.history.truncate(cut);
        self.unsaved.retain(|&i| i < cut);
        Ok(Some(text))
    }

    /// Appends `message` to the history and commits it to the store at once (invariant 3).
    /// A failed write keeps the message in memory, queued to be written before the next one,
    /// and sets [`Agent::store_failure`]: the running turn then ends with an error.
    pub(crate) async fn persist(&mut self, message: Message, events: &UnboundedSender<AgentEvent>) {
        self.persist_with_usage(message, &Usage::default(), events)
            .await;
    }

    /// [`Self::persist`] for a model's reply: the usage of the call that produced it is
    /// recorded in the same commit (one commit per model call instead of two, issue 6). When
    /// that commit fails the usage is recorded on its own, as before (best effort, logged).
    pub(crate) async fn persist_with_usage(
        &mut self,
        message: Message,
        usage: &Usage,
        _events: &UnboundedSender<AgentEvent>,
    ) {
        // Taken here, inside the turn's span: the write below runs on a blocking thread.
        let trace_id = hermes_telemetry::trace::current_trace_id();
        self.flush_unsaved().await;
        let index = self.history.len();
        if let Err(e) = self.create_pending_session().await {
            // Kept in memory and written (with the session) before the next message.
            self.note_store_failure(&e);
            self.history.push(Entry {
                id: None,
                message,
                trace_id,
            });
            self.unsaved.push(index);
            self.record_usage(usage).await;
            return;
        }
        self.history.push(Entry {
            id: None,
            message: message.clone(),
            trace_id: trace_id.clone(),
        });
        if !self.unsaved.is_empty() {
            // Earlier messages are still not written: this one waits behind them, so the
            // stored order stays the order of the conversation.
            self.unsaved.push(index);
            self.record_usage(usage).await;
            return;
        }
        let sid = self.session_id.clone();
        let expected = self.history_version;
        let row = (!usage.is_empty()).then(|| self.usage_row(usage));
        let with_usage = row.is_some();
        let store_span = tracing::info_span!(
            "store.append_message",
            "db.operation.name" = "append_message",
            "hermes.role" = message.role.as_str(),
        );
        // The span is entered around the awaited future, on the agent's task: entered on the
        // blocking thread instead, a turn's four write spans cost as much as its model-call
        // and tool spans together (turn_overhead bench, docs/benchmarks.md).
        use tracing::Instrument as _;
        let result = self
            .blocking(move |s| {
                let started = std::time::Instant::now();
                let record = row.as_ref().map(|row| row.as_record());
                let written = s.append_message_traced(
                    &sid,
                    &message,
                    trace_id.as_deref(),
                    record.as_ref(),
                    expected,
                );
                if written.is_ok() {
                    hermes_telemetry::metrics().store_write(started.elapsed().as_secs_f64());
                }
                written
            })
            .instrument(store_span)
            .await;
        if result.is_err() && with_usage {
            self.record_usage(usage).await;
        }
        match result {
            Ok(id) => self.history[index].id = Some(id),
            Err(e) if is_conflict(&e) => {
                tracing::warn!(error = %e, "history changed elsewhere; message not saved");
                self.history.truncate(index);
                self.history_conflict = true;
            }
            Err(e) => {
                self.note_store_failure(&e);
                self.unsaved.push(index);
            }
        }
    }

    /// Writes the messages whose save failed, oldest first; stops at the first that fails
    /// again (it and the rest stay queued, [`Agent::store_failure`] is set).
    pub(crate) async fn flush_unsaved(&mut self) {
        if self.unsaved.is_empty() {
            return;
        }
        if let Err(e) = self.create_pending_session().await {
            self.note_store_failure(&e);
            return;
        }
        let pending = std::mem::take(&mut self.unsaved);
        let mut rest = pending.into_iter();
        while let Some(index) = rest.next() {
            let Some(entry) = self.history.get(index) else {
                continue;
            };
            let message = entry.message.clone();
            let trace_id = entry.trace_id.clone();
            let sid = self.session_id.clone();
            let expected = self.history_version;
            match self
                .blocking(move |s| {
                    s.append_message_traced(&sid, &message, trace_id.as_deref(), None, expected)
                })
                .await
            {
                Ok(id) => self.history[index].id = Some(id),
                Err(e) if is_conflict(&e) => {
                    self.history_conflict = true;
                    return;
                }
                Err(e) => {
                    self.note_store_failure(&e);
                    self.unsaved.push(index);
                    self.unsaved.extend(rest);
                    return;
                }
            }
        }
    }

    /// Writes the row of a session whose creation was deferred, if any
    /// ([`AgentOptions::defer_session_creation`]); kept pending when that fails.
    async fn create_pending_session(&mut self) -> Result<(), AgentError> {
        let Some(record) = self.pending_session.take() else {
            return Ok(());
        };
        let row = record.clone();
        match self.blocking(move |s| s.create_session(&row)).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.pending_session = Some(record);
                Err(e)
            }
        }
    }

    /// Whether the current session's row is written yet (false for a new session that has
    /// no message yet, when its creation is deferred).
    pub fn session_is_stored(&self) -> bool {
        self.pending_session.is_none()
    }

    /// Records a failed save (not a conflict): the first of the turn becomes
    /// [`Agent::store_failure`] (shown once, as the turn's error); each is logged.
    fn note_store_failure(&mut self, e: &AgentError) {
        tracing::error!(error = %e, "could not save a message");
        if self.store_failure.is_none() {
            self.store_failure = Some(store_failure_text(e));
        }
    }

    /// After a refused commit: drops what this agent had in memory and loads the session as
    /// stored (the other writer's change wins; what this agent had not saved is not written).
    /// A failed reload is logged; the next commit is then refused again.
    pub(crate) async fn reload_after_conflict(&mut self) {
        let sid = self.session_id.clone();
        if let Err(e) = self.resume(&sid).await {
            tracing::warn!(session = %sid, error = %e, "could not reload the session after a history conflict");
        }
    }

    /// Fires a lifecycle hook event for this session in the background (never waits).
    pub(crate) fn fire_hook(&self, event: &str, data: serde_json::Value) {
        if self.opts.hooks.is_empty() {
            return;
        }
        let _detached = self.opts.hooks.fire(&HookEvent {
            event: event.to_string(),
            session_id: Some(self.session_id.clone()),
            platform: Some(self.opts.source.clone()),
            data,
        });
    }

    /// Runs a blocking store call off the async threads (ARCHITECTURE §6).
    pub(crate) async fn blocking<T, F>(&self, f: F) -> Result<T, AgentError>
    where
        T: Send + 'static,
        F: FnOnce(&SessionStore) -> Result<T, hermes_store::StoreError> + Send + 'static,
    {
        let store = self.deps.store.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(|e| AgentError::Join(e.to_string()))?
            .map_err(AgentError::from)
    }
}

/// The one line a failed save ends the turn with: names the database file (the store's
/// errors carry its path, `…/state.db`) and the cause.
pub(crate) fn store_failure_text(e: &AgentError) -> String {
    let cause = match e {
        AgentError::Store(inner) => inner.to_string(),
        other => other.to_string(),
    };
    let cause = cause.split(['\r', '\n']).collect::<Vec<_>>().join(" ");
    format!("{STORE_FAILED_PREFIX} ({cause}); this turn is not saved")
}

/// How the final text of a turn that could not save its messages begins (issue 17). Front
/// ends may match it to report a storage error instead of a model error.
pub const STORE_FAILED_PREFIX: &str = "The conversation could not be saved to the session database";

/// True when `e` is a refused version-checked write ([`hermes_store::StoreError::HistoryChanged`]).
pub(crate) fn is_conflict(e: &AgentError) -> bool {
    matches!(
        e,
        AgentError::Store(hermes_store::StoreError::HistoryChanged { .. })
    )
}

/// Estimated tokens of a tool list as the preflight counts it.
fn tools_tokens(specs: &[hermes_protocol::ToolSpec]) -> u64 {
    let estimator = hermes_context::TokenEstimator::new();
    specs.iter().map(|t| estimator.estimate_tool(t)).sum()
}
