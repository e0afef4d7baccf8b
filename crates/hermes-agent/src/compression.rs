//! Context compression in the turn (FEATURES §9; ARCHITECTURE §2 step 3a): the preflight
//! check, the summarizer call, the deterministic fallback, the store update and the one-time
//! system prompt rebuild. The planning itself lives in `hermes_context::compress`.

use hermes_context::compress::SUMMARY_SYSTEM_PROMPT;
use hermes_context::{TokenEstimator, compression_threshold_at};
use hermes_llm::{ChatRequest, ToolChoice};
use hermes_protocol::{AgentEvent, Message};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, Entry};
use crate::repair::repair_history;
use crate::turn::CallFailure;

/// Context window assumed when neither the options nor the client know it (tokens).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// Why a compression runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressTrigger {
    /// The preflight estimate exceeded the threshold.
    Threshold,
    /// The provider answered `context_overflow` / `payload_too_large`.
    Overflow,
    /// The user asked (`/compress`).
    Manual,
}

/// What one compression did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressionReport {
    /// Active messages before.
    pub messages_before: usize,
    /// Active messages after.
    pub messages_after: usize,
    /// Estimated tokens of the history before.
    pub tokens_before: u64,
    /// Estimated tokens of the history after.
    pub tokens_after: u64,
    /// False when the summary call failed and only old tool outputs were shortened.
    pub summarized: bool,
}

impl Agent {
    /// The context window used for the threshold: [`crate::AgentOptions::context_window`],
    /// else the client's, else [`DEFAULT_CONTEXT_WINDOW`] (tokens).
    pub fn context_window(&self) -> u64 {
        self.opts
            .context_window
            .or_else(|| self.deps.client.context_window())
            .unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    /// The compression threshold in tokens (`hermes_context::compression_threshold_at` of
    /// the compressor's `threshold_ratio` — `compression.threshold` — the context window and
    /// the output cap).
    pub fn compression_threshold(&self) -> u64 {
        compression_threshold_at(
            self.compressor.config().threshold_ratio,
            self.context_window(),
            u64::from(self.opts.max_tokens.unwrap_or(0)),
        )
    }

    /// Estimated tokens of the next request (system prompt, repaired history, tools).
    pub fn estimate_request_tokens(&self) -> u64 {
        let (messages, _) = repair_history(self.history.iter().map(|e| &e.message));
        TokenEstimator::new().estimate_request(&self.system_prompt, &messages, &self.specs)
    }

    /// Compresses now (`/compress [focus]`). Returns `None` when there was nothing to
    /// compress or the call was cancelled; a `Status` event says what happened either way.
    pub async fn compress(
        &mut self,
        focus: Option<&str>,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Option<CompressionReport> {
        self.compress_history(focus, CompressTrigger::Manual, events, cancel)
            .await
    }

    /// Preflight (ARCHITECTURE §2 step 3a): compresses before `request` is sent when its
    /// estimate crosses the threshold, unless compression is disabled or paused by
    /// anti-thrash. Returns true when the history changed (the caller builds the request
    /// again).
    pub(crate) async fn preflight_compress(
        &mut self,
        request: &ChatRequest,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> bool {
        if !self.opts.compression_enabled {
            return false;
        }
        // `request` comes from `Agent::request`, whose tools are `self.specs` (less any tool
        // hidden as unhealthy, so this may overestimate a little): their estimate is kept
        // with them instead of serializing every schema again.
        let estimate =
            TokenEstimator::new().estimate_request(&request.system, &request.messages, &[])
                + self.specs_tokens;
        let threshold = self.compression_threshold();
        if self.compressor.should_compress(estimate, threshold) {
            self.compress_history(None, CompressTrigger::Threshold, events, cancel)
                .await
                .is_some()
        } else {
            if estimate > threshold {
                tracing::debug!(estimate, threshold, "compression paused (anti-thrash)");
            }
            false
        }
    }

    /// The tail keeps at most a quarter of the threshold (tokens).
    fn tail_budget(&self) -> u64 {
        (self.compression_threshold() / 4).max(1)
    }

    #[tracing::instrument(name = "compress", skip_all, fields(hermes.compression.trigger = ?trigger))]
    pub(crate) async fn compress_history(
        &mut self,
        focus: Option<&str>,
        trigger: CompressTrigger,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Option<CompressionReport> {
        let status = |message: String| {
            let _ = events.send(AgentEvent::Status { message });
        };
        self.flush_unsaved().await;
        let (current, _) = repair_history(self.history.iter().map(|e| &e.message));
        let budget = self.tail_budget();
        let Some(plan) = self.compressor.plan(&current, budget) else {
            if trigger != CompressTrigger::Threshold {
                // Say why (issue 20 item 10): everything is in the parts always kept.
                let c = &self.opts.compression;
                status(format!(
                    "context compression: nothing to compress yet — the {} message(s) so far are all \
                     in the parts always kept (the first {}, and the last {} or ~{budget} tokens)",
                    current.len(),
                    c.protect_first_n,
                    c.protect_last_n,
                ));
            }
            return None;
        };
        let request = ChatRequest {
            model: self.active.model().to_string(),
            system: SUMMARY_SYSTEM_PROMPT.trim().to_string(),
            messages: vec![Message::user(
                plan.summary_request(focus, &hermes_llm::redact_secrets),
            )],
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
            max_tokens: self.opts.max_tokens,
            temperature: None,
            cancel: cancel.child_token(),
        };
        // The summary is not part of the conversation: its deltas go nowhere.
        let (sink, _drop) = unbounded_channel();
        let (new_history, summarized) = match self.call_model(&request, &sink, cancel).await {
            Ok(reply) if !reply.text.trim().is_empty() => {
                self.record_usage(&reply.usage).await;
                self.session_usage.add(&reply.usage);
                (plan.apply(&self.with_carry_over(&reply.text)), true)
            }
            Err(CallFailure::Cancelled) => return None,
            other => {
                let reason = match other {
                    Err(CallFailure::Failed(e)) => e.to_string(),
                    _ => "the model returned an empty summary".to_string(),
                };
                status(format!(
                    "warning: context compression could not write a summary ({reason}); \
                     no messages were removed, old tool outputs were shortened instead"
                ));
                (self.compressor.prune_only(&current, budget), false)
            }
        };
        let tokens_before = self.compressor.estimate(&current);
        let tokens_after = self.compressor.estimate(&new_history);
        if summarized && tokens_after >= tokens_before {
            // A summary longer than what it replaces is not kept (issue 20 item 10). The
            // fallback without a summary only shortens tool outputs and keeps every message,
            // so it is reported as it is (case C17).
            status(format!(
                "context compression skipped: the result (~{tokens_after} tokens) would not be \
                 smaller than the conversation now (~{tokens_before} tokens); nothing changed"
            ));
            return None;
        }
        let messages_before = self.history.len();
        if let Err(e) = self.commit_history(new_history).await {
            status(format!(
                "warning: context compression was not saved ({e}); the history is unchanged"
            ));
            return None;
        }
        self.compressor.record(tokens_before, tokens_after);
        self.rebuild_system_prompt(events).await;
        let report = CompressionReport {
            messages_before,
            messages_after: self.history.len(),
            tokens_before,
            tokens_after,
            summarized,
        };
        hermes_telemetry::metrics().compression(match trigger {
            CompressTrigger::Threshold => "threshold",
            CompressTrigger::Overflow => "overflow",
            CompressTrigger::Manual => "manual",
        });
        let why = match trigger {
            CompressTrigger::Threshold => "context over the threshold",
            CompressTrigger::Overflow => "the provider reported a context overflow",
            CompressTrigger::Manual => "requested",
        };
        status(format!(
            "context compressed ({why}): {} → {} messages, ~{} → ~{} tokens{}",
            report.messages_before,
            report.messages_after,
            report.tokens_before,
            report.tokens_after,
            if summarized { "" } else { " (no summary)" }
        ));
        Some(report)
    }

    /// The summary text followed by each tool's [`hermes_tools::Tool::carry_over`] state
    /// (the open `todo` items), so the model still sees it after the summarized messages are
    /// gone (issue 4 item 8).
    fn with_carry_over(&self, summary: &str) -> String {
        let mut text = summary.trim().to_string();
        for note in self.deps.tools.iter().filter_map(|t| t.carry_over()) {
            text.push_str("\n\n");
            text.push_str(note.trim());
        }
        text
    }

    /// Makes `new` the active history, in memory and in the store: messages equal to the
    /// current ones at the start keep their rows; from the first difference on, the old rows
    /// become inactive (still searchable) and the rest is appended, in one transaction.
    async fn commit_history(&mut self, new: Vec<Message>) -> Result<(), crate::AgentError> {
        let keep = self
            .history
            .iter()
            .zip(&new)
            .take_while(|(e, m)| e.id.is_some() && e.message == **m)
            .count();
        let from_id = self.history[keep..].iter().find_map(|e| e.id);
        let replacement: Vec<Message> = new[keep..].to_vec();
        let trace_ids = carried_trace_ids(
            &self.history[keep..],
            &replacement,
            hermes_telemetry::trace::current_trace_id(),
        );
        let stored_ids = trace_ids.clone();
        let sid = self.session_id.clone();
        let expected = self.history_version;
        let (ids, version) = match self
            .blocking(move |s| {
                s.replace_active_traced(&sid, from_id, &replacement, &stored_ids, expected)
            })
            .await
        {
            Ok(done) => done,
            Err(e) => {
                if crate::agent::is_conflict(&e) {
                    self.history_conflict = true;
                }
                return Err(e);
            }
        };
        self.history_version = version;
        self.history.truncate(keep);
        self.history
            .extend(new[keep..].iter().cloned().zip(ids).zip(trace_ids).map(
                |((message, id), trace_id)| Entry {
                    id: Some(id),
                    message,
                    trace_id,
                },
            ));
        self.unsaved.clear();
        Ok(())
    }

    /// Rebuilds the system prompt once after a compression (memory and skills are read
    /// again) and stores it with the session, so a resume reuses the new text.
    async fn rebuild_system_prompt(&mut self, events: &UnboundedSender<AgentEvent>) {
        let prompt = self.build_system_prompt();
        if prompt == self.system_prompt {
            return;
        }
        let sid = self.session_id.clone();
        let stored = prompt.clone();
        if let Err(e) = self
            .blocking(move |s| s.set_system_prompt(&sid, &stored))
            .await
        {
            let _ = events.send(AgentEvent::Status {
                message: format!("warning: the rebuilt system prompt was not saved ({e})"),
            });
        }
        self.system_prompt = prompt;
    }
}

/// The trace id each message of `new` (the history after a compression, from the first
/// changed message on) is stored with: the trace id of the message of `old` it carries over
/// — the same message, or the same tool call or tool result with a shortened output — found
/// in order; `current` (the compressing turn's) for a message that is new, such as the
/// summary.
fn carried_trace_ids(
    old: &[Entry],
    new: &[Message],
    current: Option<String>,
) -> Vec<Option<String>> {
    fn same(a: &Message, b: &Message) -> bool {
        if a == b {
            return true;
        }
        if a.role != b.role {
            return false;
        }
        let call_ids = |m: &Message| {
            m.tool_calls
                .iter()
                .map(|c| c.id.clone())
                .collect::<Vec<_>>()
        };
        (a.tool_call_id.is_some() && a.tool_call_id == b.tool_call_id)
            || (!a.tool_calls.is_empty() && call_ids(a) == call_ids(b))
    }
    let mut cursor = 0;
    new.iter()
        .map(
            |m| match old[cursor..].iter().position(|e| same(&e.message, m)) {
                Some(i) => {
                    let found = old[cursor + i].trace_id.clone();
                    cursor += i + 1;
                    found
                }
                None => current.clone(),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(message: Message, trace: &str) -> Entry {
        Entry {
            id: Some(1),
            message,
            trace_id: Some(trace.to_string()),
        }
    }

    #[test]
    fn kept_messages_keep_their_trace_id_and_new_ones_get_the_current() {
        let old = vec![
            entry(Message::user("first"), "a"),
            entry(Message::assistant("ok"), "a"),
            entry(Message::user("second"), "b"),
            entry(Message::tool("c1", "read_file", "a long output"), "b"),
            entry(Message::assistant("ok"), "b"),
        ];
        let new = vec![
            Message::user("summary"),
            Message::tool("c1", "read_file", "[shortened]"),
            Message::assistant("ok"),
        ];
        let ids = carried_trace_ids(&old, &new, Some("now".into()));
        let ids: Vec<Option<&str>> = ids.iter().map(Option::as_deref).collect();
        // The second "ok" is the one after the tool result (found in order).
        assert_eq!(ids, [Some("now"), Some("b"), Some("b")]);
        assert_eq!(carried_trace_ids(&old, &[Message::user("x")], None), [None]);
    }
}
