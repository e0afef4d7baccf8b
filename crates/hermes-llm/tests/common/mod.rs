//! Shared helpers for the Chat Completions integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use futures::StreamExt;
use hermes_llm::{
    ChatRequest, EventStream, LlmError, ModelClient, OpenAiChatClient, OpenAiChatConfig,
    StreamEvent,
};
use hermes_protocol::{AssistantMessage, Message};
use tokio_util::sync::CancellationToken;

/// What one call produced: the final message, the concatenated text deltas, and how many
/// `Completed` events arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub message: AssistantMessage,
    pub streamed_text: String,
    pub completed_events: usize,
}

pub async fn collect(mut stream: EventStream) -> Result<Outcome, LlmError> {
    let mut streamed_text = String::new();
    let mut message = None;
    let mut completed_events = 0;
    while let Some(item) = stream.next().await {
        match item? {
            StreamEvent::TextDelta(t) => streamed_text.push_str(&t),
            StreamEvent::Completed(m) => {
                completed_events += 1;
                message = Some(m);
            }
            _ => {}
        }
    }
    let message = message.expect("stream ended without Completed or error");
    Ok(Outcome {
        message,
        streamed_text,
        completed_events,
    })
}

pub fn client(base_url: &str) -> OpenAiChatClient {
    let mut cfg = OpenAiChatConfig::new(base_url, "test-model");
    cfg.api_key = Some("sk-test-0123456789abcdef".to_string());
    OpenAiChatClient::new(cfg).unwrap()
}

pub fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: String::new(),
        system: "You are a test.".to_string(),
        messages,
        tools: Vec::new(),
        tool_choice: hermes_llm::ToolChoice::Auto,
        max_tokens: None,
        temperature: None,
        cancel: CancellationToken::new(),
    }
}

pub async fn call(client: &OpenAiChatClient, req: &ChatRequest) -> Result<Outcome, LlmError> {
    let stream = client.stream(req).await?;
    collect(stream).await
}

pub fn read_case(id: &str) -> serde_json::Value {
    let path = hermes_testkit::shared_path("cases/cases.json");
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    all.into_iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("case {id} not in cases.json"))
}
