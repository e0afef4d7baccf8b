//! Provider fallback, thinking-signature recovery and live tool lists through the turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{Harness, final_text};
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::{AgentEvent, ToolSpec, TurnOutcome};
use hermes_testkit::{MockProvider, MockResponse};
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput, ToolSource};
use serde_json::{Value, json};

fn error(status: u16, message: &str) -> MockResponse {
    MockResponse::from_bytes(
        status,
        vec![("content-type".into(), "application/json".into())],
        format!(r#"{{"error":{{"message":"{message}"}}}}"#),
    )
}

#[tokio::test]
async fn fallback_provider_answers_for_the_turn_and_the_next_turn_starts_on_the_primary() {
    let h = Harness::new().await;
    let backup = MockProvider::start().await;
    let backup_client =
        OpenAiChatClient::new(OpenAiChatConfig::new(backup.base_url(), "backup-model")).unwrap();
    let mut agent = h.agent().await;
    agent.set_fallbacks(vec![Arc::new(backup_client)]);

    h.mock
        .push(error(404, "The model `mock-model` does not exist"));
    backup.push(MockResponse::text("answered by the backup"));
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "answered by the backup");
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::Status { message } if message.contains("falling back"))
        )
    );
    assert_eq!(backup.requests()[0]["model"], "backup-model");

    // The next turn tries the primary first again.
    h.mock.push(MockResponse::text("primary is back"));
    let (_, events) = h.turn(&mut agent, "again").await;
    assert_eq!(final_text(&events), "primary is back");
    assert_eq!(backup.requests().len(), 1);
    assert_eq!(h.mock.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_fall_back_once_the_retries_run_out() {
    let h = Harness::new().await;
    let backup = MockProvider::start().await;
    let backup_client =
        OpenAiChatClient::new(OpenAiChatConfig::new(backup.base_url(), "backup-model")).unwrap();
    let mut agent = h.agent().await;
    agent.set_fallbacks(vec![Arc::new(backup_client)]);
    h.mock.push(error(500, "Internal server error"));
    h.mock.push(error(500, "Internal server error"));
    h.mock.push(error(500, "Internal server error"));
    h.mock.push(error(500, "Internal server error"));
    backup.push(MockResponse::text("backup after retries"));
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "backup after retries");
    assert_eq!(
        h.mock.requests().len(),
        4,
        "1 try + 3 retries before falling back"
    );
}

#[tokio::test]
async fn rejected_thinking_signature_is_retried_once_without_reasoning() {
    let h = Harness::new().await;
    let mut agent = h.agent().await;
    // First turn stores an assistant message with reasoning.
    h.mock.push(MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"let me think\",\"content\":\"ok\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    ));
    h.turn(&mut agent, "first").await;
    assert!(agent.history()[1].reasoning.is_some());
    h.mock.push(error(
        400,
        "messages.1.content.0: Invalid `signature` in `thinking` block",
    ));
    h.mock.push(MockResponse::text("second answer"));
    let (outcome, events) = h.turn(&mut agent, "second").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "second answer");
    assert_eq!(h.mock.requests().len(), 3);
}

/// The shared, growable tool list of the fake server.
type SharedTools = Arc<Mutex<Vec<Arc<dyn Tool>>>>;

/// A tool list that gains a tool after the first call of the turn (an MCP server sending
/// `notifications/tools/list_changed`, case C32).
struct GrowingSource {
    generation: Arc<AtomicU64>,
    tools: SharedTools,
}

impl ToolSource for GrowingSource {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.lock().unwrap().clone()
    }
}

struct Named(&'static str, Arc<AtomicU64>, Option<SharedTools>);

#[async_trait::async_trait]
impl Tool for Named {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.0.to_string(),
            description: format!("The {} tool.", self.0),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "mcp-demo"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        // Calling the first tool makes the server add a second one.
        if let Some(list) = &self.2 {
            list.lock()
                .unwrap()
                .push(Arc::new(Named("mcp__demo__added", self.1.clone(), None)));
            self.1.fetch_add(1, Ordering::SeqCst);
        }
        ToolOutput::ok(format!("{} ran", self.0))
    }
}

#[tokio::test]
async fn case_c32_tool_list_change_is_visible_to_the_next_call_in_the_same_turn() {
    let h = Harness::new().await;
    let generation = Arc::new(AtomicU64::new(1));
    let list: SharedTools = Arc::new(Mutex::new(Vec::new()));
    list.lock().unwrap().push(Arc::new(Named(
        "mcp__demo__enable",
        generation.clone(),
        Some(list.clone()),
    )));
    let mut agent = h.agent().await;
    agent.add_tool_source(Arc::new(GrowingSource {
        generation: generation.clone(),
        tools: list.clone(),
    }));
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "mcp__demo__enable",
        "{}",
    )]));
    h.mock.push(MockResponse::tool_calls(&[(
        "call_2",
        "mcp__demo__added",
        "{}",
    )]));
    h.mock.push(MockResponse::text("both ran"));
    let (outcome, events) = h.turn(&mut agent, "enable and use").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let requests = h.mock.requests();
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(!names(&requests[0]).contains(&"mcp__demo__added".to_string()));
    assert!(names(&requests[1]).contains(&"mcp__demo__added".to_string()));
    let results: Vec<bool> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { ok, .. } => Some(*ok),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![true, true],
        "the new tool ran in the same turn"
    );
}

#[tokio::test]
async fn an_unreachable_primary_falls_back_after_its_retries() {
    let h = Harness::new().await;
    // Nothing listens on this port: every attempt is a refused connection (class timeout).
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        OpenAiChatClient::new(OpenAiChatConfig::new(
            format!("http://127.0.0.1:{port}/v1"),
            "dead-model",
        ))
        .unwrap()
    };
    let mut deps = h.deps.clone();
    deps.client = Arc::new(dead);
    let mut agent = hermes_agent::Agent::start(deps, h.opts.clone(), None)
        .await
        .unwrap();
    let backup = OpenAiChatClient::new(OpenAiChatConfig::new(h.mock.base_url(), "backup")).unwrap();
    agent.set_fallbacks(vec![Arc::new(backup)]);
    h.mock.push(MockResponse::text("reached the backup"));
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "reached the backup");
}
