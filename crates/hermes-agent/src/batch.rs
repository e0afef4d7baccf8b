//! Running one batch of tool calls (ARCHITECTURE §2 step f; FEATURES §3): refusals for
//! calls that cannot run, the parallel plan, identical calls run once, cancellation, the
//! result budget, and one committed tool message per call in call order. Every result has
//! its known secrets masked ([`hermes_protocol::SecretRedactor`]) as soon as it is back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use hermes_protocol::{AgentEvent, Message, ToolCall};
use hermes_tools::budget::{BudgetItem, ResultBudget, apply_result_budget};
use hermes_tools::plan::{BatchCall, MAX_PARALLEL_WORKERS, SegmentKind, plan_batch};
use hermes_tools::{Tool, ToolContext, ToolOutput};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::Agent;
use crate::dispatch::{CANCELLED_TEXT, call_preview, prepare_call, result_preview, run_prepared};

const TRUNCATED_CALL_TEXT: &str = include_str!("../prompts/truncated_tool_call.md");

/// What will happen to one call of the batch.
enum Plan {
    /// Run this tool with these (coerced) arguments.
    Run(Arc<dyn Tool>, Value),
    /// Do not run; give the model this result instead.
    Refuse(ToolOutput),
    /// Same name and arguments as an earlier call of the batch: reuse its result.
    SameAs(usize),
}

impl Agent {
    /// Runs `calls` and persists one result per call, in call order. `truncated` (the reply
    /// hit the output limit, case C03) refuses every call. Returns false when the user
    /// interrupted; every call still gets a result, so tool pairs stay intact.
    pub(crate) async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        truncated: bool,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> bool {
        let ctx = self.tool_context(cancel, events);
        let plans: Vec<Plan> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                if truncated {
                    return Plan::Refuse(ToolOutput::error(TRUNCATED_CALL_TEXT.trim()));
                }
                if let Some(j) = calls[..i]
                    .iter()
                    .position(|c| c.name == call.name && c.arguments == call.arguments)
                {
                    return Plan::SameAs(j);
                }
                match prepare_call(&self.tools, &self.specs, &self.validators, call) {
                    Ok((tool, args)) => Plan::Run(tool, args),
                    Err(refusal) => Plan::Refuse(refusal),
                }
            })
            .collect();
        let batch: Vec<BatchCall<'_>> = calls
            .iter()
            .zip(&plans)
            .map(|(call, plan)| BatchCall {
                name: &call.name,
                args: match plan {
                    Plan::Run(_, args) => Some(args),
                    _ => None,
                },
            })
            .collect();
        // `specs[i]` names `tools[i]`; `Tool::spec` would build every schema again.
        let (tools, specs) = (&self.tools, &self.specs);
        let parallelism_of = |name: &str| {
            specs
                .iter()
                .position(|s| s.name == name)
                .and_then(|i| tools.get(i))
                .map(|t| t.parallelism())
        };
        let segments = plan_batch(&batch, parallelism_of, &self.opts.cwd);

        let budget = ResultBudget::for_context(self.active.context_window());
        let spill_dir = self
            .deps
            .home
            .cache_dir()
            .join("tool_results")
            .join(&self.session_id);
        let mut turn_chars_left = budget.per_turn;
        let mut outputs: Vec<Option<(ToolOutput, Duration)>> = vec![None; calls.len()];

        // One span per call (OpenTelemetry's `execute_tool {name}`): name, call id, the
        // sandbox mode it ran under and outcome; the arguments and the result only with
        // content capture on.
        let spans: Vec<tracing::Span> = calls
            .iter()
            .map(|c| {
                let name = tool_label(&c.name, &self.specs);
                tracing::info_span!(
                    "execute_tool",
                    "otel.name" = %format!("execute_tool {name}"),
                    "gen_ai.operation.name" = "execute_tool",
                    "gen_ai.tool.name" = name,
                    "gen_ai.tool.call.id" = span_call_id(&c.id),
                    "hermes.sandbox.mode" = ctx.sandbox.mode.as_str(),
                    "hermes.tool.outcome" = tracing::field::Empty,
                    "gen_ai.tool.call.arguments" = tracing::field::Empty,
                    "gen_ai.tool.call.result" = tracing::field::Empty,
                )
            })
            .collect();
        if hermes_telemetry::trace::capturing_content() {
            for (span, call) in spans.iter().zip(calls) {
                if let Some(text) = hermes_telemetry::trace::captured(&call.arguments) {
                    span.record("gen_ai.tool.call.arguments", text);
                }
            }
        }
        for segment in segments {
            for &i in &segment.calls {
                let _ = events.send(AgentEvent::ToolStarted {
                    call_id: calls[i].id.clone(),
                    name: calls[i].name.clone(),
                    args_preview: call_preview(&calls[i].name, &calls[i].arguments),
                    arguments: calls[i].arguments.clone(),
                });
            }
            let runnable: Vec<usize> = segment
                .calls
                .iter()
                .copied()
                .filter(|&i| !matches!(plans[i], Plan::SameAs(_)))
                .collect();
            let results: Vec<(usize, ToolOutput, Duration)> = match segment.kind {
                SegmentKind::Parallel => {
                    let mut futs = Vec::with_capacity(runnable.len());
                    for &i in &runnable {
                        futs.push(Box::pin(
                            run_one(i, &plans[i], ctx.for_call(&calls[i].id))
                                .instrument(spans[i].clone()),
                        ));
                    }
                    futures::stream::iter(futs)
                        .buffer_unordered(MAX_PARALLEL_WORKERS)
                        .collect()
                        .await
                }
                SegmentKind::Sequential => {
                    let mut out = Vec::with_capacity(runnable.len());
                    for &i in &runnable {
                        out.push(
                            run_one(i, &plans[i], ctx.for_call(&calls[i].id))
                                .instrument(spans[i].clone())
                                .await,
                        );
                    }
                    out
                }
            };
            for (i, mut output, took) in results {
                let outcome = tool_outcome(&plans[i], &output, cancel);
                spans[i].record("hermes.tool.outcome", outcome);
                hermes_telemetry::metrics().tool_call(
                    tool_label(&calls[i].name, &self.specs),
                    outcome,
                    took.as_secs_f64(),
                );
                // The one place every tool result passes (built-ins, MCP, delegation):
                // known secrets become markers before the budget spills, the store, the
                // events or the model see the text (issue 18 item 2).
                output.content = self.redactor.redact_string(output.content);
                if let Some(text) = hermes_telemetry::trace::captured(&output.content) {
                    spans[i].record("gen_ai.tool.call.result", text);
                }
                outputs[i] = Some((output, took));
            }
            for &i in &segment.calls {
                if let Plan::SameAs(j) = plans[i] {
                    outputs[i] = outputs[j].clone();
                }
            }

            // Result budget (FEATURES §3): spill oversized results of this segment to files.
            let mut items: Vec<BudgetItem> = segment
                .calls
                .iter()
                .map(|&i| {
                    let content = outputs[i]
                        .as_ref()
                        .map(|(o, _)| o.content.clone())
                        .unwrap_or_default();
                    BudgetItem::new(calls[i].id.clone(), calls[i].name.clone(), content)
                })
                .collect();
            let segment_budget = ResultBudget {
                per_result: budget.per_result,
                per_turn: turn_chars_left
                    .max(hermes_tools::budget::SPILL_PREVIEW_CHARS * items.len()),
            };
            if let Err(e) = apply_result_budget(&mut items, segment_budget, &spill_dir) {
                tracing::warn!(error = %e, "could not spill large tool results; sending them whole");
            }

            for (&i, item) in segment.calls.iter().zip(items) {
                let (output, took) = outputs[i]
                    .clone()
                    .unwrap_or_else(|| (ToolOutput::error(CANCELLED_TEXT), Duration::ZERO));
                turn_chars_left = turn_chars_left.saturating_sub(item.content.chars().count());
                let preview = result_preview(&item.content);
                // Committed before it is reported: a `tool_finished` event means the result
                // is in the store (invariant 3, nothing acknowledged is lost).
                self.persist(
                    Message::tool(calls[i].id.clone(), calls[i].name.clone(), item.content),
                    events,
                )
                .await;
                let _ = events.send(AgentEvent::ToolFinished {
                    call_id: calls[i].id.clone(),
                    ok: !output.is_error,
                    preview,
                    duration_ms: took.as_millis() as u64,
                });
            }
        }
        !cancel.is_cancelled()
    }
}

impl Agent {
    /// The context every tool call of a turn gets; progress goes out as status events.
    fn tool_context(
        &self,
        cancel: &CancellationToken,
        events: &UnboundedSender<AgentEvent>,
    ) -> ToolContext {
        let progress_events = events.clone();
        let redactor = self.redactor.clone();
        ToolContext {
            cwd: self.opts.cwd.clone(),
            home: self.deps.home.clone(),
            cancel: cancel.child_token(),
            approver: self.deps.approver.clone(),
            yolo: self.opts.yolo,
            terminal_timeout_s: self.opts.terminal_timeout_s,
            sandbox: self.opts.sandbox.clone(),
            session_toolsets: Some(Arc::new(toolsets_of(&self.tools))),
            call_id: String::new(),
            progress: Arc::new(move |message: String| {
                let message = redactor.redact_string(message);
                let _ = progress_events.send(AgentEvent::Status { message });
            }),
        }
    }
}

/// The toolset names of `tools`, sorted and distinct.
pub(crate) fn toolsets_of(tools: &[Arc<dyn hermes_tools::Tool>]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.toolset().to_string()).collect();
    names.sort();
    names.dedup();
    names
}

/// Runs (or refuses) call `i`; a call not yet started when the user interrupts is not run.
async fn run_one(i: usize, plan: &Plan, ctx: ToolContext) -> (usize, ToolOutput, Duration) {
    let ctx = &ctx;
    let started = Instant::now();
    let output = match plan {
        _ if ctx.cancel.is_cancelled() => ToolOutput::error(CANCELLED_TEXT),
        Plan::Refuse(out) => out.clone(),
        Plan::Run(tool, args) => run_prepared(tool.clone(), args.clone(), ctx).await,
        Plan::SameAs(_) => ToolOutput::error(CANCELLED_TEXT),
    };
    (i, output, started.elapsed())
}

/// The metrics label of a call of `name`: the tool's name when it is offered, `unknown` for
/// a name the model made up (so a hostile model cannot fill the label's cap).
/// Longest tool call id a span carries, in bytes: the id is the model's to choose, and one
/// of megabytes would make its span (and the export batch holding it) too large for a
/// collector to take.
const MAX_SPAN_CALL_ID_BYTES: usize = 128;

/// `id` cut to [`MAX_SPAN_CALL_ID_BYTES`] on a character boundary, for the span.
fn span_call_id(id: &str) -> &str {
    if id.len() <= MAX_SPAN_CALL_ID_BYTES {
        return id;
    }
    let mut end = MAX_SPAN_CALL_ID_BYTES;
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    &id[..end]
}

fn tool_label<'a>(name: &'a str, specs: &[hermes_protocol::ToolSpec]) -> &'a str {
    if specs.iter().any(|s| s.name == name) {
        name
    } else {
        "unknown"
    }
}

/// How a call ended, for `hermes_tool_calls_total`: `refused` (not run: unknown tool, bad
/// arguments, truncated reply), `cancelled`, `error` or `ok`.
fn tool_outcome(plan: &Plan, output: &ToolOutput, cancel: &CancellationToken) -> &'static str {
    if matches!(plan, Plan::Refuse(_)) {
        "refused"
    } else if cancel.is_cancelled() && output.content == CANCELLED_TEXT {
        "cancelled"
    } else if output.is_error {
        "error"
    } else {
        "ok"
    }
}
