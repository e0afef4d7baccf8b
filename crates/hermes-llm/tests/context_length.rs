//! The context-length chain (FEATURES §2): config override → provider metadata (`/props`,
//! `/models`) → built-in table → 128k, with metadata cached on disk for 24 h.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_llm::context_length::{
    CACHE_TTL, ContextSource, DEFAULT_CONTEXT_LENGTH, models_context_length,
    resolve_context_length, table_context_length,
};
use hermes_llm::runtime::{ApiMode, Runtime};
use hermes_testkit::MockProvider;
use serde_json::json;

fn runtime(base_url: &str, model: &str, mode: ApiMode) -> Runtime {
    Runtime {
        provider: "custom".to_string(),
        api_mode: mode,
        base_url: base_url.to_string(),
        model: model.to_string(),
        api_key: Some("sk-test-0123456789abcdef".to_string()),
        context_window: None,
        trace: Vec::new(),
    }
}

const NOW: u64 = 1_750_000_000;

#[tokio::test]
async fn config_override_wins_without_a_request() {
    let mock = MockProvider::start().await;
    let mut rt = runtime(&mock.base_url(), "mock-model", ApiMode::ChatCompletions);
    rt.context_window = Some(32_000);
    let got = resolve_context_length(&rt, None, NOW).await;
    assert_eq!((got.tokens, got.source), (32_000, ContextSource::Config));
    assert!(mock.captured().is_empty());
}

#[tokio::test]
async fn openrouter_style_models_metadata_is_used_and_cached() {
    let mock = MockProvider::start().await;
    mock.set_models(json!({"data": [
        {"id": "other/model", "context_length": 8192},
        {"id": "anthropic/claude-sonnet-4", "context_length": 1_000_000,
            "top_provider": {"context_length": 200_000}},
    ]}));
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache/context_lengths.json");
    let rt = runtime(
        &mock.base_url(),
        "anthropic/claude-sonnet-4",
        ApiMode::ChatCompletions,
    );
    let got = resolve_context_length(&rt, Some(&cache), NOW).await;
    assert_eq!(
        (got.tokens, got.source),
        (1_000_000, ContextSource::Metadata)
    );
    let asked = mock.captured().len();
    assert_eq!(
        mock.captured().last().unwrap().header("authorization"),
        Some("Bearer sk-test-0123456789abcdef")
    );

    // Within the TTL the cache answers without a request; after it, the provider is asked.
    let got = resolve_context_length(&rt, Some(&cache), NOW + 60).await;
    assert_eq!((got.tokens, got.source), (1_000_000, ContextSource::Cache));
    assert_eq!(mock.captured().len(), asked);
    let later = NOW + CACHE_TTL.as_secs() + 1;
    let got = resolve_context_length(&rt, Some(&cache), later).await;
    assert_eq!(got.source, ContextSource::Metadata);
    assert!(mock.captured().len() > asked);
}

#[tokio::test]
async fn llama_cpp_props_n_ctx_wins_over_the_training_context() {
    let mock = MockProvider::start().await;
    mock.set_models(json!({"object": "list", "data": [
        {"id": "/models/qwen3-8b.gguf", "meta": {"n_ctx_train": 40960}}]}));
    let rt = runtime(&mock.base_url(), "default", ApiMode::ChatCompletions);
    // Single-model server: the only entry is used whatever the configured name.
    let got = resolve_context_length(&rt, None, NOW).await;
    assert_eq!((got.tokens, got.source), (40_960, ContextSource::Metadata));
    mock.set_props(json!({"default_generation_settings": {"n_ctx": 8192}}));
    let got = resolve_context_length(&rt, None, NOW).await;
    assert_eq!((got.tokens, got.source), (8_192, ContextSource::Metadata));
}

#[tokio::test]
async fn silent_or_unreachable_providers_fall_back_to_the_table_then_128k() {
    let mock = MockProvider::start().await; // default /models entry has no size
    let rt = runtime(&mock.base_url(), "gpt-4o-mini", ApiMode::ChatCompletions);
    let got = resolve_context_length(&rt, None, NOW).await;
    assert_eq!((got.tokens, got.source), (128_000, ContextSource::Table));

    let rt = runtime(
        "http://127.0.0.1:9/v1",
        "my-own-finetune",
        ApiMode::ChatCompletions,
    );
    let got = resolve_context_length(&rt, None, NOW).await;
    assert_eq!(
        (got.tokens, got.source),
        (DEFAULT_CONTEXT_LENGTH, ContextSource::Default)
    );

    // Anthropic is not asked: the table answers.
    let rt = runtime(
        &mock.base_url(),
        "claude-sonnet-4-5",
        ApiMode::AnthropicMessages,
    );
    let before = mock.captured().len();
    let got = resolve_context_length(&rt, None, NOW).await;
    assert_eq!((got.tokens, got.source), (200_000, ContextSource::Table));
    assert_eq!(mock.captured().len(), before);
}

#[test]
fn table_and_model_list_fields() {
    assert_eq!(table_context_length("openai/gpt-4.1-mini"), Some(1_047_576));
    assert_eq!(table_context_length("o4-mini"), Some(200_000));
    assert_eq!(table_context_length("nobody-knows"), None);
    let vllm = json!({"data": [{"id": "m", "max_model_len": 32768}]});
    assert_eq!(models_context_length(&vllm, "m"), Some(32_768));
    let groq = json!({"data": [{"id": "a"}, {"id": "m", "context_window": 131072}]});
    assert_eq!(models_context_length(&groq, "m"), Some(131_072));
    assert_eq!(models_context_length(&groq, "zzz"), None);
}
