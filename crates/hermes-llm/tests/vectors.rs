//! Vector tests: error classifier, backoff ranges, secret redaction
//! (`shared/vectors/error_classifier.json`, `numeric_policies.json`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hermes_llm::{LlmError, backoff_delay, classify, redact_secrets};

fn vector(name: &str) -> serde_json::Value {
    let path = hermes_testkit::shared_path(&format!("vectors/{name}"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn error_classifier_vectors() {
    let v = vector("error_classifier.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 18);
    for case in cases {
        let status = case["status"].as_u64().map(|s| s as u16);
        let message = case["message"].as_str().unwrap();
        let class = classify(status, message);
        assert_eq!(
            class.as_str(),
            case["class"].as_str().unwrap(),
            "case {case}"
        );
        let err = LlmError::new(class, status, message);
        assert_eq!(
            err.retryable(),
            case["retryable"].as_bool().unwrap(),
            "retryable, case {case}"
        );
        assert_eq!(
            err.should_compress(),
            case["compress"].as_bool().unwrap(),
            "compress, case {case}"
        );
        assert_eq!(
            err.rotate_credential(),
            case["rotate_credential"].as_bool().unwrap(),
            "rotate_credential, case {case}"
        );
        assert_eq!(
            err.fallback(),
            case["fallback"].as_bool().unwrap(),
            "fallback, case {case}"
        );
    }
}

#[test]
fn backoff_stays_in_vector_ranges() {
    let v = vector("numeric_policies.json");
    let b = &v["backoff_range_seconds"];
    let base = Duration::from_secs(b["base"].as_u64().unwrap());
    let max = Duration::from_secs(b["max"].as_u64().unwrap());
    for case in b["cases"].as_array().unwrap() {
        let attempt = case[0].as_u64().unwrap() as u32;
        let lo = case[1].as_f64().unwrap();
        let hi = case[2].as_f64().unwrap();
        let mut seen_above_floor = false;
        for _ in 0..500 {
            let d = backoff_delay(attempt, base, max).as_secs_f64();
            assert!(
                d >= lo - 1e-9 && d <= hi + 1e-9,
                "attempt {attempt}: {d} not in [{lo}, {hi}]"
            );
            seen_above_floor |= d > lo;
        }
        assert!(seen_above_floor, "attempt {attempt}: no jitter observed");
    }
    assert!(backoff_delay(0, base, max) >= base);
}

#[test]
fn redaction_vectors() {
    let v = vector("numeric_policies.json");
    for pair in v["redaction"].as_array().unwrap() {
        let input = pair[0].as_str().unwrap();
        let want = pair[1].as_str().unwrap();
        assert_eq!(redact_secrets(input), want, "input {input}");
    }
}

#[test]
fn http_errors_redact_keys_in_provider_messages() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz1234567890.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let err = LlmError::from_http(401, &reqwest::header::HeaderMap::new(), body);
    assert_eq!(err.class, hermes_llm::ErrorClass::Auth);
    assert!(err.message.contains("sk-pro...7890"), "{}", err.message);
    assert!(!err.message.contains("abcdefghijklmnop"));
}
