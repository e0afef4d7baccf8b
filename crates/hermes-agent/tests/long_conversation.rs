//! The long-conversation scenario of issue 4: 300 turns, each with a large tool output, on a
//! model with a 32k-token context window. Every turn completes without a context overflow,
//! every request keeps tool pairs valid (testkit request invariants), and `session_search`
//! still finds a fact the user gave in turn 5.
//!
//! The model is an in-process [`ModelClient`] (no HTTP, no sleeps) that plays a provider with
//! a hard 32k window: it measures each request with hermes-llm's estimate and refuses an
//! oversized one with a context-overflow error, as a real endpoint would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use hermes_context::SessionSearchTool;
use hermes_llm::openai_chat::{ChatWireOptions, build_body, estimate_prompt_tokens};
use hermes_llm::{ChatRequest, ErrorClass, EventStream, LlmError, ModelClient, StreamEvent};
use hermes_protocol::{
    AssistantMessage, FinishReason, Role, ToolCall, ToolSpec, TurnOutcome, Usage,
};
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const WINDOW: u64 = 32_000;
const TURNS: usize = 300;
const FACT: &str = "my locker combination is marmalade-7731";

/// A provider with a hard 32k window and a fixed script: a user message gets a `fetch_log`
/// call, a tool result gets a short answer, a tool-less request (the compression summary)
/// gets a structured summary.
#[derive(Default)]
struct WindowedModel {
    bodies: Mutex<Vec<Value>>,
    overflows: Mutex<u32>,
    largest: Mutex<u64>,
}

#[async_trait]
impl ModelClient for WindowedModel {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let tokens = estimate_prompt_tokens(request);
        if tokens > WINDOW {
            *self.overflows.lock().unwrap() += 1;
            return Err(LlmError::new(
                ErrorClass::ContextOverflow,
                Some(400),
                format!("maximum context length is {WINDOW} tokens, got {tokens}"),
            ));
        }
        {
            let mut largest = self.largest.lock().unwrap();
            *largest = (*largest).max(tokens);
        }
        let n = {
            let mut bodies = self.bodies.lock().unwrap();
            bodies.push(build_body(request, "windowed", &ChatWireOptions::default()));
            bodies.len()
        };
        let last = request.messages.last().map(|m| m.role);
        let reply = if request.tools.is_empty() {
            text("## Goal\nKeep chatting and reading logs.\n## Remaining work\nnone")
        } else if last == Some(Role::Tool) {
            text(&format!("Read it (request {n})."))
        } else {
            AssistantMessage {
                tool_calls: vec![ToolCall {
                    id: format!("call_{n}"),
                    name: "fetch_log".into(),
                    arguments: json!({"part": n}).to_string(),
                }],
                finish_reason: Some(FinishReason::ToolCalls),
                ..text("")
            }
        };
        Ok(Box::pin(futures::stream::iter(vec![Ok(
            StreamEvent::Completed(reply),
        )])))
    }
    fn provider(&self) -> &str {
        "windowed"
    }
    fn model(&self) -> &str {
        "windowed-32k"
    }
    fn context_window(&self) -> Option<u64> {
        Some(WINDOW)
    }
}

fn text(t: &str) -> AssistantMessage {
    AssistantMessage {
        text: t.to_string(),
        reasoning: None,
        tool_calls: Vec::new(),
        usage: Usage::default(),
        finish_reason: Some(FinishReason::Stop),
        diagnostics: Vec::new(),
    }
}

/// A tool with a large output: about 12,000 chars (≈ 3,000 tokens) of log lines.
struct FetchLog;

#[async_trait]
impl Tool for FetchLog {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "fetch_log".into(),
            description: "Returns one part of a long log.".into(),
            parameters: json!({"type": "object", "properties": {"part": {"type": "integer"}}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "file"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let part = args["part"].as_u64().unwrap_or(0);
        let mut out = String::new();
        for line in 0..150 {
            out.push_str(&format!(
                "part {part:04} line {line:03}: worker heartbeat ok, queue depth nominal\n"
            ));
        }
        ToolOutput::ok(out)
    }
}

#[tokio::test]
async fn three_hundred_turns_with_large_tool_outputs_fit_a_32k_window() {
    let mut h = Harness::new().await;
    let model = Arc::new(WindowedModel::default());
    h.deps.client = model.clone();
    h.deps.tools = vec![
        Arc::new(FetchLog),
        Arc::new(SessionSearchTool::new(h.store.clone())),
    ];
    h.opts.context_window = Some(WINDOW);
    let mut agent = h.agent().await;

    for turn in 1..=TURNS {
        let input = if turn == 5 {
            format!("Turn {turn}: remember that {FACT}. Now read the next log part.")
        } else {
            format!("Turn {turn}: read the next log part and tell me if anything is wrong.")
        };
        let (outcome, events) = h.turn(&mut agent, &input).await;
        assert_eq!(
            outcome,
            TurnOutcome::Completed,
            "turn {turn}: {}",
            final_text(&events)
        );
    }

    assert_eq!(
        *model.overflows.lock().unwrap(),
        0,
        "no request exceeded the window"
    );
    assert!(*model.largest.lock().unwrap() <= WINDOW);
    // Tool pairs are valid in every request; the main requests share one system prompt
    // and one tool list (summary requests carry neither tools nor the session prompt).
    let bodies = model.bodies.lock().unwrap().clone();
    let main: Vec<Value> = bodies
        .iter()
        .filter(|b| {
            b.get("tools")
                .is_some_and(|t| !t.as_array().unwrap().is_empty())
        })
        .cloned()
        .collect();
    assert!(main.len() >= 2 * TURNS);
    assert!(bodies.len() > main.len(), "the history was compressed");
    hermes_testkit::assert_request_invariants(&main);
    // The last request no longer holds turn 5, yet session_search finds it in the store.
    assert!(!main.last().unwrap().to_string().contains("marmalade-7731"));
    let search = SessionSearchTool::new(h.store.clone());
    let ctx = ToolContext {
        cwd: h.cwd.path().to_path_buf(),
        home: h.home.home().clone(),
        cancel: CancellationToken::new(),
        approver: Arc::new(hermes_tools::FixedApprover(hermes_tools::Approval::Deny)),
        yolo: false,
        terminal_timeout_s: 10,
        progress: Arc::new(|_m: String| {}),
        sandbox: Arc::new(hermes_tools::SandboxSettings::off()),
        session_toolsets: None,
        call_id: String::new(),
    };
    let found = search.call(json!({"query": "marmalade"}), &ctx).await;
    assert!(!found.is_error, "{}", found.content);
    assert!(
        found.content.contains("marmalade-7731"),
        "{}",
        found.content
    );
}
