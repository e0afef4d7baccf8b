//! One turn of the loop (ARCHITECTURE §2 steps 2–5).

use futures::StreamExt;
use hermes_llm::fallback::{RecoveryAction, retry_status};
use hermes_llm::{ChatRequest, ErrorClass, LlmError, StreamEvent, ToolChoice};
use hermes_protocol::{
    AgentEvent, AssistantMessage, FinishReason, Message, Role, TurnOutcome, Usage,
};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use hermes_protocol::StreamRedactor;

use crate::agent::Agent;
use crate::compression::CompressTrigger;
use crate::delegate::{DELEGATE_TASK, with_parent};
use crate::repair::{needs_no_repair, repair_history};

const BUDGET_SUMMARY_PROMPT: &str = include_str!("../prompts/budget_summary.md");
const BUDGET_FALLBACK_TEXT: &str = include_str!("../prompts/budget_fallback.md");

/// The final text of a turn stopped because the session's history changed elsewhere while it
/// ran (an `/undo`, `/new` or compression in another agent or process; issue 7 item 4).
pub const HISTORY_CHANGED_TEXT: &str = "This conversation was changed elsewhere while I was \
working (an undo, a new session or a compression), so I stopped instead of writing over it. \
The conversation now is what was saved; send your message again if it still applies.";

/// Why a model call produced no message.
pub(crate) enum CallFailure {
    Cancelled,
    Failed(LlmError),
}

/// The attempts of one model call, across retries and an overflow compression: which
/// attempt runs, and whether a failed one had shown deltas that the front ends must
/// discard ([`AgentEvent::StreamRestarted`]).
#[derive(Default)]
pub(crate) struct Attempts {
    /// Attempts started so far.
    started: u32,
    /// An attempt failed after sending deltas and the caller may resend after compressing:
    /// the error, announced when (if) the next attempt begins.
    pending: Option<String>,
}

impl Attempts {
    /// Called before each attempt: announces a restart left pending.
    fn begin(&mut self, events: &UnboundedSender<AgentEvent>) {
        if let Some(reason) = self.pending.take() {
            self.announce(events, &reason);
        }
        self.started += 1;
    }

    /// Tells the front ends that the next attempt restarts the stream. Sent as soon as the
    /// retry is decided, before its status line, so nothing of the failed attempt is drawn
    /// after the failure.
    fn announce(&self, events: &UnboundedSender<AgentEvent>, reason: &str) {
        let reason = reason.split(['\r', '\n']).collect::<Vec<_>>().join(" ");
        let _ = events.send(AgentEvent::StreamRestarted {
            attempt: self.started + 1,
            reason,
        });
    }
}

impl Agent {
    /// Runs one turn for `input`: persists the user message, loops model calls and tool
    /// batches within the iteration budget, and emits events to `events` (a closed channel is
    /// ignored). Returns how the turn ended; the same outcome is sent as `TurnFinished`.
    ///
    /// Every log record of the turn carries the session id (a `turn{session=…}` span), so
    /// `hermes logs --session <id>` finds them, as Python Hermes tags its lines.
    pub async fn run_turn(
        &mut self,
        input: &str,
        events: &UnboundedSender<AgentEvent>,
        cancel: CancellationToken,
    ) -> TurnOutcome {
        use tracing::Instrument;
        let span = tracing::info_span!("turn", session = %self.session_id);
        self.run_turn_traced(input, true, events, cancel)
            .instrument(span)
            .await
    }

    /// [`Agent::run_turn`] for a message delivered again after a turn for it may have
    /// started and not finished (its process was killed, or stopped mid-turn, and the message
    /// was taken over — issue 21 item 4). When the stored history ends with `input` as the
    /// last user message and no answer after it (only tool calls and their results), the
    /// turn continues from there instead of storing the message a second time; otherwise it
    /// is an ordinary turn.
    pub async fn run_redelivered_turn(
        &mut self,
        input: &str,
        events: &UnboundedSender<AgentEvent>,
        cancel: CancellationToken,
    ) -> TurnOutcome {
        use tracing::Instrument;
        let span = tracing::info_span!("turn", session = %self.session_id);
        let stored = self.awaits_answer_to(input);
        if stored {
            tracing::info!(parent: &span, "continuing the unfinished turn of a redelivered message");
        }
        self.run_turn_traced(input, !stored, events, cancel)
            .instrument(span)
            .await
    }

    /// Whether the history's last user message is `input` and nothing after it answers it.
    fn awaits_answer_to(&self, input: &str) -> bool {
        let Some(i) = self
            .history
            .iter()
            .rposition(|e| e.message.role == Role::User)
        else {
            return false;
        };
        self.history[i].message.text() == input
            && self.history[i + 1..].iter().all(|e| {
                e.message.role == Role::Tool
                    || (e.message.role == Role::Assistant && !e.message.tool_calls.is_empty())
            })
    }

    async fn run_turn_traced(
        &mut self,
        input: &str,
        persist_input: bool,
        events: &UnboundedSender<AgentEvent>,
        cancel: CancellationToken,
    ) -> TurnOutcome {
        let emit = |e: AgentEvent| {
            let _ = events.send(e);
        };
        emit(AgentEvent::TurnStarted {
            session_id: self.session_id.clone(),
        });
        self.fire_hook("agent:start", serde_json::json!({"message": input}));
        self.store_failure = None;
        let mut message = Message::user(input);
        // Images attached for this message; a continued turn already stored its own.
        message.content.append(&mut self.pending_images);
        if persist_input {
            self.persist(message.clone(), events).await;
            if self.history_conflict {
                // The history moved on before this turn wrote anything: the new message goes
                // on top of what is stored now.
                self.reload_after_conflict().await;
                self.persist(message, events).await;
            }
            if self.store_failure.is_some() {
                self.forget_unsaved_input();
            }
        }
        self.learning_on_user_turn();
        self.maybe_set_title(input).await;
        // Each turn starts on the primary provider (fallback is turn-scoped, FEATURES §2),
        // unless it is cooling down after a rate-limit or billing fallback.
        self.start_turn_clients(events);

        let mut usage = Usage::default();
        let mut final_text = String::new();
        let mut outcome = TurnOutcome::BudgetExhausted;
        let budget = self.opts.max_turns.max(1);

        for iteration in 0..budget {
            if self.history_conflict {
                final_text = HISTORY_CHANGED_TEXT.to_string();
                outcome = TurnOutcome::Failed;
                self.reload_after_conflict().await;
                break;
            }
            if let Some(text) = &self.store_failure {
                // A message of this turn could not be stored: no more model calls whose
                // answers could not be kept either (issue 17).
                final_text = text.clone();
                outcome = TurnOutcome::Failed;
                break;
            }
            if self.refresh_tools() {
                emit(AgentEvent::Status {
                    message: format!("tool list changed: {} tools available", self.specs.len()),
                });
            }
            let mut request = self.request(ToolChoice::Auto, None, &cancel);
            if self.preflight_compress(&request, events, &cancel).await {
                request = self.request(ToolChoice::Auto, None, &cancel);
            }
            let mut compressed_for_overflow = false;
            let mut attempts = Attempts::default();
            let result = loop {
                match self
                    .call_model_attempts(&request, events, &cancel, &mut attempts)
                    .await
                {
                    Err(CallFailure::Failed(e))
                        if e.class.should_compress() && !compressed_for_overflow =>
                    {
                        compressed_for_overflow = true;
                        let trigger = CompressTrigger::Overflow;
                        if self
                            .compress_history(None, trigger, events, &cancel)
                            .await
                            .is_none()
                        {
                            break Err(CallFailure::Failed(e));
                        }
                        request = self.request(ToolChoice::Auto, None, &cancel);
                    }
                    other => break other,
                }
            };
            let reply = match result {
                Ok(reply) => reply,
                Err(CallFailure::Cancelled) => {
                    outcome = TurnOutcome::Interrupted;
                    break;
                }
                Err(CallFailure::Failed(e)) => {
                    tracing::warn!(class = ?e.class, status = ?e.status, error = %e.message, "model call failed");
                    final_text = format!("The model call failed: {e}");
                    outcome = TurnOutcome::Failed;
                    break;
                }
            };
            usage.add(&reply.usage);
            for d in &reply.diagnostics {
                emit(AgentEvent::Status { message: d.clone() });
            }
            // The reply and the tokens it cost are committed together (one commit).
            self.persist_with_usage(reply.to_message(), &reply.usage, events)
                .await;
            if self.history_conflict {
                continue;
            }

            if reply.tool_calls.is_empty() {
                final_text = reply.text.clone();
                outcome = TurnOutcome::Completed;
                break;
            }
            self.learning_on_tool_calls(&reply.tool_calls);
            self.fire_hook(
                "agent:step",
                serde_json::json!({
                    "iteration": iteration + 1,
                    "tool_calls": reply.tool_calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                }),
            );
            let truncated = reply.finish_reason == Some(FinishReason::Length);
            // `delegate_task` calls of the batch see this agent as their parent; the tokens
            // their subagents used count for this turn.
            let delegates = reply.tool_calls.iter().any(|c| c.name == DELEGATE_TASK);
            let parent = delegates.then(|| self.parent_turn(events));
            let batch = self.run_tools(&reply.tool_calls, truncated, events, &cancel);
            let finished = match &parent {
                Some(parent) => with_parent(parent.clone(), batch).await,
                None => batch.await,
            };
            if let Some(parent) = &parent {
                usage.add(&parent.take_child_usage());
            }
            if !finished {
                outcome = TurnOutcome::Interrupted;
                break;
            }
            self.take_steering(events).await;
        }

        if outcome == TurnOutcome::BudgetExhausted && self.history_conflict {
            final_text = HISTORY_CHANGED_TEXT.to_string();
            outcome = TurnOutcome::Failed;
            self.reload_after_conflict().await;
        }
        if outcome == TurnOutcome::BudgetExhausted {
            final_text = self.budget_summary(&mut usage, events, &cancel).await;
        }
        if outcome == TurnOutcome::Interrupted {
            final_text = "Interrupted.".to_string();
        }
        if let Some(text) = &self.store_failure {
            // However the turn ended otherwise, it did not end saved (issue 17).
            final_text = text.clone();
            outcome = TurnOutcome::Failed;
        }
        self.session_usage.add(&usage);
        hermes_telemetry::metrics().turn_finished(&self.opts.source, outcome.as_str());
        self.fire_hook(
            "agent:end",
            serde_json::json!({
                "outcome": outcome,
                "final_text": final_text,
                "usage": usage,
            }),
        );
        emit(AgentEvent::TurnFinished {
            outcome: outcome.clone(),
            final_text,
            usage,
        });
        // The learning loop starts only now, after the reply went out (FEATURES §8).
        if matches!(
            outcome,
            TurnOutcome::Completed | TurnOutcome::BudgetExhausted
        ) {
            self.learning_after_turn(events);
        }
        outcome
    }

    /// The user message that opened the turn could not be stored: it is dropped from memory
    /// too (the turn fails without calling the model, so the user sends it again rather
    /// than having it written twice later).
    fn forget_unsaved_input(&mut self) {
        let Some(last) = self.history.len().checked_sub(1) else {
            return;
        };
        if self.history[last].id.is_none() && self.unsaved.last() == Some(&last) {
            self.unsaved.pop();
            self.history.truncate(last);
        }
    }

    /// The request the next turn starts from, without its question: the session's system
    /// prompt, tools and history, for [`hermes_llm::ModelClient::warm`] before the user
    /// has asked anything.
    pub fn warm_request(&self) -> ChatRequest {
        self.request(ToolChoice::Auto, None, &CancellationToken::new())
    }

    /// Builds a request: stored prompt + ephemeral prompt + repaired history + tools (always
    /// the same list in the same order, so the prompt prefix stays cacheable).
    fn request(
        &self,
        tool_choice: ToolChoice,
        extra_user: Option<&str>,
        cancel: &CancellationToken,
    ) -> ChatRequest {
        let mut system = self.system_prompt.clone();
        if let Some(eph) = &self.opts.ephemeral_prompt {
            system.push_str("\n\n");
            system.push_str(eph);
        }
        let history = self.history.iter().map(|e| &e.message);
        let mut messages = if needs_no_repair(history.clone()) {
            history.cloned().collect()
        } else {
            let (messages, report) = repair_history(history);
            if !report.is_clean() {
                tracing::debug!(?report, "history repaired before request");
            }
            messages
        };
        if let Some(text) = extra_user {
            messages.push(Message::user(text));
        }
        ChatRequest {
            model: self.active.model().to_string(),
            system,
            messages,
            tools: crate::dispatch::offered_specs(&self.tools, &self.specs),
            tool_choice,
            max_tokens: self.opts.max_tokens,
            temperature: None,
            cancel: cancel.child_token(),
        }
    }

    /// One model call with recovery per the error class, as decided by
    /// [`hermes_llm::fallback::RecoveryPolicy`] (FEATURES §2): the next key of a credential
    /// pool after a key-specific failure, retries with jittered backoff
    /// (a `Retry-After` wins; sleeps are interruptible), one retry without replayed reasoning
    /// after a rejected thinking signature, then the next fallback provider for the rest of
    /// the turn. Context overflow is returned at once: the caller compresses.
    pub(crate) async fn call_model(
        &mut self,
        request: &ChatRequest,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<AssistantMessage, CallFailure> {
        self.call_model_attempts(request, events, cancel, &mut Attempts::default())
            .await
    }

    /// [`Self::call_model`] counting attempts in `attempts`, which the caller keeps across
    /// its own resend (after an overflow compression). Before an attempt that follows one
    /// which failed after streaming deltas, [`AgentEvent::StreamRestarted`] is sent, so front
    /// ends drop the partial answer instead of showing it twice.
    pub(crate) async fn call_model_attempts(
        &mut self,
        request: &ChatRequest,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
        attempts: &mut Attempts,
    ) -> Result<AssistantMessage, CallFailure> {
        let status = |message: String| {
            let _ = events.send(AgentEvent::Status { message });
        };
        // Borrowed until a recovery step has to change it (the history is not copied again
        // for every call; issue 6).
        let mut request = std::borrow::Cow::Borrowed(request);
        loop {
            attempts.begin(events);
            let mut shown = false;
            let mut first_token = None;
            let started = std::time::Instant::now();
            // One span per attempt, named and attributed per the OpenTelemetry conventions
            // for generative AI (`chat {model}`); no prompt or answer text.
            let span = tracing::info_span!(
                "chat",
                "otel.name" = %format!("chat {}", request.model),
                "otel.kind" = "client",
                "gen_ai.operation.name" = "chat",
                "gen_ai.provider.name" = %self.active.provider(),
                "gen_ai.request.model" = %request.model,
                "hermes.attempt" = attempts.started,
                "gen_ai.usage.input_tokens" = tracing::field::Empty,
                "gen_ai.usage.output_tokens" = tracing::field::Empty,
                "hermes.time_to_first_token_ms" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                "gen_ai.system_instructions" = tracing::field::Empty,
                "gen_ai.input.messages" = tracing::field::Empty,
                "gen_ai.output.messages" = tracing::field::Empty,
            );
            crate::span_content::record_request(&span, &request);
            let result = {
                use tracing::Instrument;
                self.stream_once(&request, events, cancel, &mut shown, &mut first_token)
                    .instrument(span.clone())
                    .await
            };
            if let Some(t) = first_token {
                span.record("hermes.time_to_first_token_ms", t.as_millis() as u64);
            }
            match &result {
                Ok(reply) => {
                    span.record("gen_ai.usage.input_tokens", reply.usage.input_tokens);
                    span.record("gen_ai.usage.output_tokens", reply.usage.output_tokens);
                    crate::span_content::record_reply(&span, reply);
                }
                Err(CallFailure::Failed(e)) => {
                    span.record("error.type", e.class.as_str());
                }
                Err(CallFailure::Cancelled) => {
                    span.record("error.type", "cancelled");
                }
            }
            drop(span);
            let metrics = hermes_telemetry::metrics();
            if !matches!(result, Err(CallFailure::Cancelled)) {
                metrics.model_call(
                    self.active.provider(),
                    &request.model,
                    started.elapsed().as_secs_f64(),
                    first_token.map(|t: std::time::Duration| t.as_secs_f64()),
                );
            }
            let error = match result {
                Ok(reply) => {
                    self.recovery.on_success();
                    return Ok(reply);
                }
                Err(CallFailure::Cancelled) => return Err(CallFailure::Cancelled),
                Err(CallFailure::Failed(e)) => e,
            };
            metrics.api_error(error.class.as_str());
            let action = self.recovery.decide(&error);
            if shown {
                match action {
                    // The turn fails: no attempt follows.
                    RecoveryAction::Stop => {}
                    // The caller compresses and may resend, or fail.
                    RecoveryAction::Compress => attempts.pending = Some(error.to_string()),
                    _ => attempts.announce(events, &error.to_string()),
                }
            }
            match action {
                // A pooled client put the failed key on cooldown; the next call takes
                // another key of the pool at once.
                RecoveryAction::RotateCredential => {
                    status(format!(
                        "{} error ({error}); trying the next API key of {}",
                        error.class.as_str(),
                        self.active.provider()
                    ));
                }
                RecoveryAction::Retry { wait, .. } => {
                    tracing::warn!(class = error.class.as_str(), error = %error, "model call failed; retrying");
                    status(retry_status(
                        &error,
                        wait,
                        self.recovery.turn.retries,
                        self.recovery.max_retries,
                    ));
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = cancel.cancelled() => return Err(CallFailure::Cancelled),
                    }
                }
                RecoveryAction::StripThinking => {
                    for m in &mut request.to_mut().messages {
                        m.reasoning = None;
                    }
                    status(
                        "the provider rejected a replayed thinking block; retrying without it"
                            .to_string(),
                    );
                }
                RecoveryAction::Fallback(target) => {
                    let index = self.recovery.turn.next_fallback - 1;
                    let Some(next) = self.fallbacks.get(index).cloned() else {
                        return Err(CallFailure::Failed(error));
                    };
                    status(format!(
                        "{} failed ({error}); falling back to {} / {} for this turn",
                        self.active.provider(),
                        target.provider,
                        target.model
                    ));
                    self.note_fallback_from(&error);
                    request.to_mut().model = next.model().to_string();
                    self.recovery.spare_credentials = next.spare_credentials();
                    self.active = next;
                }
                // Resending an oversized request cannot help: the caller compresses first.
                RecoveryAction::Compress | RecoveryAction::Stop => {
                    return Err(CallFailure::Failed(error));
                }
            }
        }
    }

    /// One attempt of a model call; `shown` becomes true once a non-empty text or reasoning
    /// delta of this attempt was sent to `events`; `first_token` is set to the time from the
    /// request to the first streamed piece (text, reasoning or a tool call).
    async fn stream_once(
        &self,
        request: &ChatRequest,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
        shown: &mut bool,
        first_token: &mut Option<std::time::Duration>,
    ) -> Result<AssistantMessage, CallFailure> {
        let started = std::time::Instant::now();
        let client = self.active.clone();
        // An interrupt wins over whatever the stream reports at the same moment (a cancelled
        // request often ends in a transport error): `biased` polls the token first, and a
        // failure seen after the token fired counts as the interrupt, not as a provider error.
        let failed = |e: LlmError| {
            if cancel.is_cancelled() {
                CallFailure::Cancelled
            } else {
                CallFailure::Failed(e)
            }
        };
        let mut stream = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(CallFailure::Cancelled),
            r = client.stream(request) => r.map_err(failed)?,
        };
        // What the model writes is masked like tool results: a model that learned a key
        // (or was told to repeat one) must not put it on the screen, in a chat, in the store
        // or in the API's stream (the attack pass of issue 18, finding 13).
        let mut text_guard = StreamRedactor::new(Arc::clone(&self.redactor));
        let mut reasoning_guard = StreamRedactor::new(Arc::clone(&self.redactor));
        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(CallFailure::Cancelled),
                item = stream.next() => item,
            };
            if first_token.is_none()
                && matches!(
                    item,
                    Some(Ok(StreamEvent::TextDelta(_)
                        | StreamEvent::ReasoningDelta(_)
                        | StreamEvent::ToolCallStarted { .. }))
                )
            {
                *first_token = Some(started.elapsed());
            }
            match item {
                Some(Ok(StreamEvent::TextDelta(text))) => {
                    *shown |= !text.is_empty();
                    let text = text_guard.push(&text);
                    if !text.is_empty() {
                        let _ = events.send(AgentEvent::TextDelta { text });
                    }
                }
                Some(Ok(StreamEvent::ReasoningDelta(text))) => {
                    *shown |= !text.is_empty();
                    let text = reasoning_guard.push(&text);
                    if !text.is_empty() {
                        let _ = events.send(AgentEvent::ReasoningDelta { text });
                    }
                }
                Some(Ok(StreamEvent::ToolCallStarted { .. })) => {}
                Some(Ok(StreamEvent::Completed(mut reply))) => {
                    let text = reasoning_guard.finish();
                    if !text.is_empty() {
                        let _ = events.send(AgentEvent::ReasoningDelta { text });
                    }
                    let text = text_guard.finish();
                    if !text.is_empty() {
                        let _ = events.send(AgentEvent::TextDelta { text });
                    }
                    reply.text = self.redactor.redact_string(reply.text);
                    for call in &mut reply.tool_calls {
                        call.arguments = self
                            .redactor
                            .redact_string(std::mem::take(&mut call.arguments));
                    }
                    return Ok(reply);
                }
                Some(Err(e)) => return Err(failed(e)),
                None => {
                    return Err(failed(LlmError {
                        class: ErrorClass::Unknown,
                        status: None,
                        message: "the model stream ended before the response was complete"
                            .to_string(),
                        retry_after: None,
                    }));
                }
            }
        }
    }

    /// Budget exhausted: one tool-less call asking for a summary; a fixed notice if it fails.
    async fn budget_summary(
        &mut self,
        usage: &mut Usage,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> String {
        let _ = events.send(AgentEvent::Status {
            message: format!(
                "iteration budget of {} reached; asking for a summary",
                self.opts.max_turns
            ),
        });
        let request = self.request(ToolChoice::None, Some(BUDGET_SUMMARY_PROMPT.trim()), cancel);
        let text = match self.call_model(&request, events, cancel).await {
            Ok(reply) if !reply.text.trim().is_empty() => {
                usage.add(&reply.usage);
                self.record_usage(&reply.usage).await;
                reply.text
            }
            _ => {
                let text = BUDGET_FALLBACK_TEXT
                    .trim()
                    .replace("{max_turns}", &self.opts.max_turns.to_string());
                let _ = events.send(AgentEvent::TextDelta { text: text.clone() });
                text
            }
        };
        self.persist(Message::assistant(text.clone()), events).await;
        text
    }

    /// Hands messages steered in during the tool batch to the model as one user message.
    async fn take_steering(&mut self, events: &UnboundedSender<AgentEvent>) {
        let Some(queue) = &self.steer else {
            return;
        };
        let texts = queue.drain();
        if texts.is_empty() {
            return;
        }
        let _ = events.send(AgentEvent::Status {
            message: format!(
                "{} message(s) from the user added to this turn",
                texts.len()
            ),
        });
        self.persist(Message::user(texts.join("\n\n")), events)
            .await;
    }

    /// Records one model call's usage in a commit of its own (best effort: a failure is
    /// logged). Replies use [`Agent::persist_with_usage`], which commits both at once.
    pub(crate) async fn record_usage(&self, usage: &Usage) {
        if usage.is_empty() {
            return;
        }
        let sid = self.session_id.clone();
        let row = self.usage_row(usage);
        if let Err(e) = self
            .blocking(move |s| s.add_usage(&sid, &row.as_record()))
            .await
        {
            tracing::warn!(error = %e, "could not record usage");
        }
    }

    /// What the store records for one call of the active client: its model, provider,
    /// tokens and cost from the price table. Each row built is one call's usage, so the
    /// tokens and cost are counted in the metrics here too.
    pub(crate) fn usage_row(&self, usage: &Usage) -> UsageRow {
        let model = self.active.model().to_string();
        let provider = self.active.provider().to_string();
        let cost_usd = hermes_llm::pricing::provider_cost_usd(&provider, &model, usage);
        count_usage(&model, usage, cost_usd);
        UsageRow {
            provider,
            model,
            base_url: self.active.base_url().to_string(),
            usage: *usage,
            cost_usd,
        }
    }

    /// Titles an untitled session from its first user message (≤ 60 chars).
    async fn maybe_set_title(&self, input: &str) {
        let user_turns = self
            .history
            .iter()
            .filter(|e| e.message.role == hermes_protocol::Role::User)
            .count();
        if user_turns != 1 {
            return;
        }
        let line = input
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        let mut title: String = line.chars().take(60).collect();
        if line.chars().count() > 60 {
            title.push('…');
        }
        if title.is_empty() {
            return;
        }
        let sid = self.session_id.clone();
        if let Err(e) = self
            .blocking(move |s| s.set_title_numbered(&sid, &title))
            .await
        {
            tracing::warn!(error = %e, "could not set session title");
        }
    }
}

/// One model call's usage as it is stored (owned, so it can move to the blocking pool).
pub(crate) struct UsageRow {
    model: String,
    provider: String,
    base_url: String,
    usage: Usage,
    cost_usd: Option<f64>,
}

impl UsageRow {
    /// The store's borrowed view of this row.
    pub(crate) fn as_record(&self) -> hermes_store::UsageRecord<'_> {
        hermes_store::UsageRecord {
            model: &self.model,
            provider: &self.provider,
            base_url: &self.base_url,
            usage: &self.usage,
            cost_usd: self.cost_usd,
        }
    }
}

/// Counts one call's tokens and estimated cost in the process metrics.
fn count_usage(model: &str, usage: &Usage, cost_usd: Option<f64>) {
    let metrics = hermes_telemetry::metrics();
    for (kind, n) in [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache_read", usage.cache_read_tokens),
        ("cache_write", usage.cache_write_tokens),
        ("reasoning", usage.reasoning_tokens),
    ] {
        metrics.tokens(model, kind, n);
    }
    if let Some(usd) = cost_usd {
        metrics.cost(model, usd);
    }
}
