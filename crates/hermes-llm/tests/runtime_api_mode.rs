//! api_mode detection from provider, base URL and model, and `build_client` for the Anthropic
//! and Responses adapters (FEATURES §2, ARCHITECTURE §5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{collect, request};
use hermes_llm::runtime::detect_api_mode;
use hermes_llm::{ApiMode, ResolveInputs, build_client, resolve};
use hermes_protocol::Message;
use hermes_testkit::{MockProvider, MockResponse, fixture_path};

fn inputs(provider: &str, model: &str, base_url: Option<&str>, key: (&str, &str)) -> ResolveInputs {
    ResolveInputs {
        provider: Some(provider.into()),
        model: Some(model.into()),
        base_url: base_url.map(str::to_string),
        env: [(key.0.to_string(), key.1.to_string())]
            .into_iter()
            .collect(),
        ..ResolveInputs::default()
    }
}

#[test]
fn detection_rules() {
    assert_eq!(
        detect_api_mode("https://api.anthropic.com", "claude-sonnet-4-5"),
        Some(ApiMode::AnthropicMessages)
    );
    assert_eq!(
        detect_api_mode("https://api.minimax.io/anthropic/", "MiniMax-M2"),
        Some(ApiMode::AnthropicMessages)
    );
    assert_eq!(
        detect_api_mode("https://api.openai.com/v1", "gpt-5.1"),
        Some(ApiMode::OpenAiResponses)
    );
    assert_eq!(
        detect_api_mode("https://api.openai.com/v1", "gpt-5.1-codex-max"),
        Some(ApiMode::OpenAiResponses)
    );
    assert_eq!(
        detect_api_mode("https://api.openai.com/v1", "gpt-4.1"),
        None
    );
    assert_eq!(
        detect_api_mode("https://openrouter.ai/api/v1", "openai/gpt-5"),
        None
    );
    assert_eq!(detect_api_mode("http://127.0.0.1:8080/v1", "gpt-5"), None);
}

#[test]
fn resolution_picks_the_mode() {
    let rt = resolve(&inputs(
        "openai",
        "gpt-5",
        None,
        ("OPENAI_API_KEY", "sk-aaaaaaaaaaaaaaaaaaaa"),
    ))
    .unwrap();
    assert_eq!(rt.api_mode, ApiMode::OpenAiResponses);
    assert!(
        rt.trace.iter().any(|l| l.contains("detected")),
        "{:?}",
        rt.trace
    );
    let rt = resolve(&inputs(
        "openai",
        "gpt-4.1",
        None,
        ("OPENAI_API_KEY", "sk-aaaaaaaaaaaaaaaaaaaa"),
    ))
    .unwrap();
    assert_eq!(rt.api_mode, ApiMode::ChatCompletions);
    let rt = resolve(&inputs(
        "claude",
        "claude-haiku-4-5",
        None,
        ("ANTHROPIC_API_KEY", "sk-ant-aaaaaaaaaaaaaaaa"),
    ))
    .unwrap();
    assert_eq!(
        (rt.provider.as_str(), rt.api_mode),
        ("anthropic", ApiMode::AnthropicMessages)
    );
    let mut custom = inputs(
        "custom",
        "MiniMax-M2",
        Some("https://api.minimax.io/anthropic"),
        ("X", "y"),
    );
    custom.config.api_key = Some("mm-key-0123456789".into());
    let rt = resolve(&custom).unwrap();
    assert_eq!(rt.api_mode, ApiMode::AnthropicMessages);
    assert!(
        !format!("{rt:?}").contains("0123456789"),
        "key redacted in Debug"
    );
}

#[tokio::test]
async fn build_client_talks_anthropic_and_responses() {
    let mock = MockProvider::start().await;
    mock.push(MockResponse::sse_fixture(fixture_path(
        "anthropic/stream_text_basic.sse",
    )));
    mock.push(MockResponse::sse_fixture(fixture_path(
        "openai_responses/stream_text.sse",
    )));
    let rt = resolve(&inputs(
        "anthropic",
        "claude-sonnet-4-5",
        Some(&mock.base_url()),
        ("ANTHROPIC_API_KEY", "sk-ant-aaaaaaaaaaaaaaaa"),
    ))
    .unwrap();
    let client = build_client(&rt).unwrap();
    let out = collect(
        client
            .stream(&request(vec![Message::user("hi")]))
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(out.message.text, "Hello there!");
    assert_eq!(client.provider(), "anthropic");
    let mut rt = resolve(&inputs(
        "openai",
        "gpt-5",
        Some(&mock.base_url()),
        ("OPENAI_API_KEY", "sk-aaaaaaaaaaaaaaaaaaaa"),
    ))
    .unwrap();
    rt.api_mode = ApiMode::OpenAiResponses; // a loopback URL is not api.openai.com
    let client = build_client(&rt).unwrap();
    let out = collect(
        client
            .stream(&request(vec![Message::user("hi")]))
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(out.message.text, "`arm64` (Apple Silicon).");
    let paths: Vec<String> = mock.captured().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/messages", "/v1/responses"]);
}
