//! OpenRouter wraps an upstream provider's error in a generic body whose real text sits in
//! `error.metadata.raw` (issue 3 item 5); the classifier must decide on that text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_llm::{ErrorClass, classify};

/// An OpenRouter error body around `raw` (the upstream body, as a JSON string).
fn wrapped(code: u16, raw: &str) -> String {
    serde_json::json!({
        "error": {
            "message": "Provider returned error",
            "code": code,
            "metadata": {"raw": raw, "provider_name": "Anthropic"}
        },
        "user_id": "user_123"
    })
    .to_string()
}

#[test]
fn upstream_context_overflow_inside_metadata_raw() {
    let raw = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208000 tokens > 200000 maximum"}}"#;
    let body = wrapped(400, raw);
    assert_eq!(classify(Some(400), &body), ErrorClass::ContextOverflow);
    // Without the upstream text the same status says nothing about the context.
    let bare = r#"{"error":{"message":"Provider returned error","code":400}}"#;
    assert_ne!(classify(Some(400), bare), ErrorClass::ContextOverflow);
}

#[test]
fn upstream_rate_limit_inside_metadata_raw() {
    let raw = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    assert_eq!(
        classify(Some(429), &wrapped(429, raw)),
        ErrorClass::RateLimit
    );
}

#[test]
fn upstream_plain_text_raw_is_read_too() {
    let body = wrapped(
        400,
        "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens.",
    );
    assert_eq!(classify(Some(400), &body), ErrorClass::ContextOverflow);
}
