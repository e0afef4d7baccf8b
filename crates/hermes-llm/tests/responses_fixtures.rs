//! Replays every recorded OpenAI Responses body (`fixtures/providers/openai_responses/`) through
//! the mock provider and the real client, whole and split at odd byte boundaries; reasoning
//! items carried into the next request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{collect, request};
use hermes_llm::openai_responses::request::build_input;
use hermes_llm::{ErrorClass, LlmError, ModelClient, ResponsesClient, ResponsesConfig};
use hermes_protocol::{AssistantMessage, FinishReason, Message};
use hermes_testkit::{MockProvider, MockResponse, fixture_path};
use serde_json::{Value, json};

async fn replay(resp: MockResponse) -> (Result<AssistantMessage, LlmError>, MockProvider) {
    let mock = MockProvider::start().await;
    mock.push(resp);
    let mut cfg = ResponsesConfig::new(mock.base_url(), "gpt-5");
    cfg.api_key = Some("sk-test-0123456789abcdef".to_string());
    let c = ResponsesClient::new(cfg).unwrap();
    let r = match c.stream(&request(vec![Message::user("hi")])).await {
        Ok(s) => collect(s).await.map(|o| {
            assert_eq!(o.completed_events, 1);
            assert_eq!(o.streamed_text, o.message.text);
            o.message
        }),
        Err(e) => Err(e),
    };
    (r, mock)
}

async fn all_splits(name: &str) -> Result<AssistantMessage, LlmError> {
    let mut first: Option<Result<AssistantMessage, LlmError>> = None;
    for plan in [
        None,
        Some(vec![1usize]),
        Some(vec![7, 3, 13]),
        Some(vec![100, 9]),
    ] {
        let mut resp = MockResponse::sse_fixture(fixture_path(&format!("openai_responses/{name}")));
        if let Some(p) = plan.clone() {
            resp = resp.chunked(p);
        }
        let r = replay(resp).await.0;
        match &first {
            None => first = Some(r),
            Some(Ok(f)) => assert_eq!(r.as_ref().unwrap(), f, "{name} split {plan:?}"),
            Some(Err(f)) => assert_eq!(r.unwrap_err().class, f.class, "{name} split {plan:?}"),
        }
    }
    first.unwrap()
}

#[tokio::test]
async fn stream_text() {
    let m = all_splits("stream_text.sse").await.unwrap();
    assert_eq!(m.text, "`arm64` (Apple Silicon).");
    assert_eq!(m.finish_reason, Some(FinishReason::Stop));
    assert!(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
}

#[tokio::test]
async fn stream_reasoning_then_function_call_keeps_encrypted_reasoning() {
    let m = all_splits("stream_reasoning_then_function_call.sse")
        .await
        .unwrap();
    assert_eq!(m.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].name, "calculator");
    assert!(m.tool_calls[0].id.starts_with("call_"));
    serde_json::from_str::<Value>(&m.tool_calls[0].arguments).unwrap();
    assert!(
        m.reasoning
            .as_ref()
            .unwrap()
            .text
            .starts_with("**Calculating step-by-step")
    );
    // The next request carries the reasoning item before the call, then the output.
    let mut history = vec![Message::user("compute"), m.to_message()];
    history.push(Message::tool(
        m.tool_calls[0].id.clone(),
        "calculator",
        "57",
    ));
    let input = build_input(&history);
    assert_eq!(input[1]["type"], "reasoning");
    assert!(
        input[1]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAAAB")
    );
    assert!(input[1]["id"].as_str().unwrap().starts_with("rs_"));
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["call_id"], json!(m.tool_calls[0].id));
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["output"], "57");
}

#[tokio::test]
async fn stream_function_call_no_reasoning() {
    let m = all_splits("stream_function_call_no_reasoning.sse")
        .await
        .unwrap();
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].id, "call_Q6pW65MUgW9vF59BmItYGos3");
    assert_eq!(
        m.tool_calls[0].arguments,
        r#"{"a":19,"b":3,"op":"multiply"}"#
    );
    assert!(m.reasoning.is_none());
}

#[tokio::test]
async fn stream_reasoning_summary_with_rotating_ids() {
    let m = all_splits("stream_reasoning_summary_then_text.sse")
        .await
        .unwrap();
    assert!(m.text.starts_with("There are **3** letter"));
    assert_eq!(
        m.reasoning.as_ref().unwrap().text,
        "**Counting character occurrences**"
    );
    // No encrypted content was sent, so nothing to replay.
    assert!(m.reasoning.as_ref().unwrap().signature.is_none());
}

#[tokio::test]
async fn stream_error_insufficient_quota_is_billing() {
    let e = all_splits("stream_error_insufficient_quota.sse")
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Billing);
    assert!(e.message.contains("exceeded your current quota"));
}

#[tokio::test]
async fn nonstream_text_and_request_shape() {
    let (m, mock) = replay(MockResponse::json_fixture(
        200,
        fixture_path("openai_responses/nonstream_text.json"),
    ))
    .await;
    let m = m.unwrap();
    assert!(!m.text.is_empty());
    assert_eq!(m.finish_reason, Some(FinishReason::Stop));
    let req = &mock.captured()[0];
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(
        req.header("authorization"),
        Some("Bearer sk-test-0123456789abcdef")
    );
    assert_eq!(req.body["instructions"], "You are a test.");
    assert_eq!(req.body["store"], false);
    assert_eq!(
        req.body["input"][0],
        json!({"role": "user", "content": [{"type": "input_text", "text": "hi"}]})
    );
}

#[test]
fn composite_call_ids_send_the_call_part() {
    let mut a = Message::assistant("");
    a.tool_calls
        .push(hermes_protocol::ToolCall::new("call_7|fc_7", "t", "{}"));
    let input = build_input(&[
        Message::user("x"),
        a,
        Message::tool("call_7|fc_7", "t", "ok"),
    ]);
    assert_eq!(input[1]["call_id"], "call_7");
    assert_eq!(input[2]["call_id"], "call_7");
}
