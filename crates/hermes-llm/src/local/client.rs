//! [`LocalClient`]: the `local` provider behind the [`ModelClient`] trait (FEATURES §14).

use std::sync::Arc;

use hermes_protocol::{AssistantMessage, FinishReason, Usage};
use tokio::sync::mpsc;

use super::engine::{GenerateOptions, LocalConfig, LocalModel, StopReason, local_error};
use super::prompt::build_turns;
use super::tool_parse::ToolCallParser;
use crate::client::{ChatRequest, EventStream, ModelClient, StreamEvent};
use crate::error::{ErrorClass, LlmError};

/// The embedded model as a [`ModelClient`]: provider `local`, model = GGUF file stem,
/// context window = the configured `n_ctx`.
///
/// Each [`ModelClient::stream`] call renders the prompt, then generates on a blocking
/// thread, streaming [`StreamEvent::TextDelta`] (tool-call markup held back),
/// [`StreamEvent::ToolCallStarted`] per accepted call and a final
/// [`StreamEvent::Completed`]. When `request.cancel` fires the generation stops between
/// tokens and the stream ends without `Completed`.
#[derive(Debug, Clone)]
pub struct LocalClient {
    model: Arc<LocalModel>,
}

impl LocalClient {
    /// Wraps an already loaded model (share one `Arc<LocalModel>` between clients).
    pub fn new(model: Arc<LocalModel>) -> LocalClient {
        LocalClient { model }
    }

    /// Loads the GGUF of `config` and wraps it. Blocking (memory-maps the file); errors
    /// as [`LocalModel::load`].
    pub fn load(config: &LocalConfig) -> Result<LocalClient, LlmError> {
        Ok(LocalClient::new(Arc::new(LocalModel::load(config)?)))
    }

    /// The shared model.
    pub fn local_model(&self) -> &Arc<LocalModel> {
        &self.model
    }

    /// The exact prompt text this client would feed the model for `request`. The system
    /// prompt is the request's, byte for byte (the compact profile for small windows is
    /// built by `hermes-context`, not here).
    pub fn render_prompt(&self, request: &ChatRequest) -> String {
        self.render_prompt_parts(request).0
    }

    /// The prompt text and the byte length of its stable leading part (the rendered system
    /// turn, which holds the tools block, identity, memory, skills index and date), when
    /// the template renders that turn as a prefix of the whole prompt.
    pub fn render_prompt_parts(&self, request: &ChatRequest) -> (String, Option<usize>) {
        let turns = build_turns(&request.system, &request.messages, &request.tools);
        let prompt = self.model.render(&turns);
        let stable = turns
            .first()
            .filter(|t| t.role == "system")
            .map(|t| self.model.render_with(std::slice::from_ref(t), false))
            .filter(|head| !head.is_empty() && prompt.starts_with(head.as_str()))
            .map(|head| head.len());
        (prompt, stable)
    }
}

#[async_trait::async_trait]
impl ModelClient for LocalClient {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let (prompt, stable_prefix) = self.render_prompt_parts(request);
        let prompt_tokens = self.model.count_tokens(&prompt);
        let n_ctx = self.model.n_ctx() as usize;
        if prompt_tokens >= n_ctx {
            return Err(local_error(
                ErrorClass::ContextOverflow,
                format!(
                    "the prompt takes {prompt_tokens} tokens but the context window is {n_ctx} tokens"
                ),
            ));
        }
        let options = GenerateOptions {
            max_tokens: request
                .max_tokens
                .unwrap_or(self.model.default_max_tokens()),
            temperature: request.temperature,
            seed: self.model.seed(),
            reuse_prefix: true,
            stable_prefix,
        };
        let declared: Vec<String> = if request.tool_choice == crate::client::ToolChoice::None {
            Vec::new()
        } else {
            request.tools.iter().map(|t| t.name.clone()).collect()
        };
        let cancel = request.cancel.clone();
        let model = Arc::clone(&self.model);
        let (tx, mut rx) = mpsc::unbounded_channel::<Result<StreamEvent, LlmError>>();

        tokio::task::spawn_blocking(move || {
            let mut parser = ToolCallParser::new(declared);
            let result = model.generate(&prompt, &options, &cancel, |piece| {
                let before = parser.accepted_calls();
                let visible = parser.push(piece);
                if !visible.is_empty() && tx.send(Ok(StreamEvent::TextDelta(visible))).is_err() {
                    return false;
                }
                if parser.accepted_calls() > before
                    && let Some(call) = parser.last_call()
                {
                    let started = StreamEvent::ToolCallStarted {
                        id: call.id.clone(),
                        name: call.name.clone(),
                    };
                    if tx.send(Ok(started)).is_err() {
                        return false;
                    }
                }
                true
            });
            let generation = match result {
                Ok(g) => g,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            if matches!(generation.stop, StopReason::Cancelled | StopReason::Aborted) {
                return;
            }
            let calls_before = parser.accepted_calls();
            let (tail, parsed) = parser.finish();
            if !tail.is_empty() {
                let _ = tx.send(Ok(StreamEvent::TextDelta(tail)));
            }
            for call in parsed.tool_calls.iter().skip(calls_before) {
                let _ = tx.send(Ok(StreamEvent::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                }));
            }
            for d in &parsed.diagnostics {
                tracing::warn!(target: "hermes_llm::local", "{d}");
            }
            let finish_reason = if !parsed.tool_calls.is_empty() {
                FinishReason::ToolCalls
            } else if generation.stop == StopReason::Length {
                FinishReason::Length
            } else {
                FinishReason::Stop
            };
            let message = AssistantMessage {
                text: parsed.text,
                reasoning: None,
                tool_calls: parsed.tool_calls,
                usage: Usage {
                    input_tokens: generation.prompt_tokens,
                    cache_read_tokens: generation.reused_tokens,
                    output_tokens: generation.generated_tokens,
                    ..Usage::default()
                },
                finish_reason: Some(finish_reason),
                diagnostics: parsed.diagnostics,
            };
            let _ = tx.send(Ok(StreamEvent::Completed(message)));
        });

        let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
        Ok(Box::pin(stream))
    }

    async fn warm(&self, request: &ChatRequest) -> Result<(), LlmError> {
        let turns = build_turns(&request.system, &request.messages, &request.tools);
        // The conversation without the assistant's opening: a prefix of the next prompt.
        let prompt = self.model.render_with(&turns, false);
        if prompt.is_empty() || self.model.count_tokens(&prompt) >= self.model.n_ctx() as usize {
            return Ok(());
        }
        let options = GenerateOptions {
            max_tokens: 1,
            temperature: None,
            seed: self.model.seed(),
            reuse_prefix: true,
            stable_prefix: None,
        };
        let model = Arc::clone(&self.model);
        let cancel = request.cancel.clone();
        tokio::task::spawn_blocking(move || {
            model
                .generate(&prompt, &options, &cancel, |_| false)
                .map(|_| ())
        })
        .await
        .map_err(|e| local_error(ErrorClass::Unknown, format!("warm-up: {e}")))?
    }

    fn provider(&self) -> &str {
        "local"
    }

    fn model(&self) -> &str {
        self.model.name()
    }

    fn context_window(&self) -> Option<u64> {
        Some(u64::from(self.model.n_ctx()))
    }
}
