//! Recovery decisions per error class, credential pools and the fallback chain (FEATURES §2;
//! case C10).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::read_case;
use hermes_llm::credentials::{AUTH_COOLDOWN, CredentialPool, LIMIT_COOLDOWN, PoolStrategy};
use hermes_llm::fallback::{FallbackTarget, RecoveryAction, RecoveryPolicy, retry_status};
use hermes_llm::{ErrorClass, LlmError};
use reqwest::header::{HeaderMap, HeaderValue};

fn fb(model: &str) -> FallbackTarget {
    FallbackTarget {
        provider: "openrouter".into(),
        model: model.into(),
        base_url: None,
    }
}

#[test]
fn case_c10_retry_after_and_529_backoff() {
    let case = read_case("C10");
    let exp = &case["expected"];
    let mut h = HeaderMap::new();
    h.insert("retry-after", HeaderValue::from_static("7"));
    let e429 = LlmError::from_http(
        429,
        &h,
        r#"{"error":{"type":"rate_limit_error","message":"slow down"}}"#,
    );
    let mut p = RecoveryPolicy::new(3, Vec::new());
    assert_eq!(exp["429"]["retry"], true);
    let wait = exp["429"]["wait_seconds"].as_u64().unwrap();
    assert_eq!(
        p.decide(&e429),
        RecoveryAction::Retry {
            wait: Duration::from_secs(wait),
            rebuild_connection: false
        }
    );
    assert_eq!(
        retry_status(&e429, Duration::from_secs(7), 1, 3),
        "rate limited, retrying in 7 s (1/3)"
    );
    let e529 = LlmError::from_http(
        529,
        &HeaderMap::new(),
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    assert_eq!(e529.class, ErrorClass::Overloaded);
    let mut p = RecoveryPolicy::new(3, Vec::new());
    for attempt in 1..=3u32 {
        let RecoveryAction::Retry { wait, .. } = p.decide(&e529) else {
            panic!("529 must retry")
        };
        let floor = Duration::from_secs(2u64 << (attempt - 1));
        assert!(
            wait >= floor && wait <= floor.mul_f64(1.5),
            "attempt {attempt}: {wait:?}"
        );
    }
    assert_eq!(
        p.decide(&e529),
        RecoveryAction::Stop,
        "after 3 retries with no fallback"
    );
    // The cap: a huge Retry-After is clipped to 600 s.
    h.insert("retry-after", HeaderValue::from_static("100000"));
    let e = LlmError::from_http(429, &h, "slow down");
    assert_eq!(
        e.retry_after,
        Some(Duration::from_secs(
            exp["retry_after_cap_seconds"].as_u64().unwrap()
        ))
    );
}

#[test]
fn three_529s_then_success_resets_budget() {
    let e = LlmError::new(ErrorClass::Overloaded, Some(529), "Overloaded");
    let mut p = RecoveryPolicy::new(3, Vec::new());
    for _ in 0..3 {
        assert!(matches!(p.decide(&e), RecoveryAction::Retry { .. }));
    }
    p.on_success();
    assert!(matches!(p.decide(&e), RecoveryAction::Retry { .. }));
}

#[test]
fn persistent_401_rotates_then_falls_back() {
    let e = LlmError::new(ErrorClass::Auth, Some(401), "invalid x-api-key");
    let mut p = RecoveryPolicy::new(3, vec![fb("backup")]);
    p.spare_credentials = 1;
    assert_eq!(p.decide(&e), RecoveryAction::RotateCredential);
    assert_eq!(p.decide(&e), RecoveryAction::Fallback(fb("backup")));
    assert_eq!(p.decide(&e), RecoveryAction::Stop);
    // 403 never rotates.
    let mut p = RecoveryPolicy::new(3, vec![fb("backup")]);
    p.spare_credentials = 1;
    let e403 = LlmError::new(ErrorClass::Auth, Some(403), "forbidden");
    assert_eq!(p.decide(&e403), RecoveryAction::Fallback(fb("backup")));
}

#[test]
fn model_not_found_falls_back_and_next_turn_tries_primary() {
    let e = LlmError::new(ErrorClass::ModelNotFound, Some(404), "model not found");
    let mut p = RecoveryPolicy::new(3, vec![fb("a"), fb("b")]);
    assert_eq!(p.decide(&e), RecoveryAction::Fallback(fb("a")));
    assert_eq!(p.decide(&e), RecoveryAction::Fallback(fb("b")));
    assert_eq!(p.decide(&e), RecoveryAction::Stop);
    p.reset_turn(0);
    assert_eq!(
        p.decide(&e),
        RecoveryAction::Fallback(fb("a")),
        "chain starts over next turn"
    );
}

#[test]
fn overflow_compresses_signature_strips_permanent_stops() {
    let mut p = RecoveryPolicy::new(3, Vec::new());
    let over = LlmError::new(ErrorClass::ContextOverflow, Some(400), "prompt is too long");
    assert_eq!(p.decide(&over), RecoveryAction::Compress);
    assert_eq!(p.decide(&over), RecoveryAction::Compress);
    assert_eq!(p.decide(&over), RecoveryAction::Stop);
    let sig = LlmError::new(
        ErrorClass::ThinkingSignature,
        Some(400),
        "Invalid signature in thinking block",
    );
    assert_eq!(p.decide(&sig), RecoveryAction::StripThinking);
    assert_eq!(p.decide(&sig), RecoveryAction::Stop);
    let perm = LlmError::new(ErrorClass::AuthPermanent, Some(403), "account deactivated");
    assert_eq!(
        RecoveryPolicy::new(3, vec![fb("x")]).decide(&perm),
        RecoveryAction::Stop
    );
    let timeout = LlmError::new(ErrorClass::Timeout, None, "connection reset");
    assert!(matches!(
        p.decide(&timeout),
        RecoveryAction::Retry {
            rebuild_connection: true,
            ..
        }
    ));
}

fn pool(strategy: PoolStrategy) -> CredentialPool {
    let mut p = CredentialPool::new("anthropic", strategy);
    p.add("a", "sk-ant-aaaaaaaaaaaaaaaa");
    p.add("b", "sk-ant-bbbbbbbbbbbbbbbb");
    p.add("c", "sk-ant-cccccccccccccccc");
    p
}

#[test]
fn pool_strategies() {
    let mut p = pool(PoolStrategy::FillFirst);
    assert_eq!(p.acquire(0).unwrap().0, 0);
    assert_eq!(p.acquire(0).unwrap().0, 0);
    let mut p = pool(PoolStrategy::RoundRobin);
    let order: Vec<usize> = (0..4).map(|_| p.acquire(0).unwrap().0).collect();
    assert_eq!(order, [0, 1, 2, 0]);
    let mut p = pool(PoolStrategy::LeastUsed);
    p.credentials[0].uses = 5;
    p.credentials[1].uses = 2;
    p.credentials[2].uses = 9;
    assert_eq!(p.acquire(0).unwrap().0, 1);
    assert_eq!(
        PoolStrategy::parse("least_used"),
        Some(PoolStrategy::LeastUsed)
    );
    // Python's `random`: any key not cooling down, each in turn sooner or later.
    let mut p = pool(PoolStrategy::Random);
    let e401 = LlmError::new(ErrorClass::Auth, Some(401), "bad key");
    p.report_failure(1, &e401, 0);
    let mut seen = [0u32; 3];
    for _ in 0..200 {
        seen[p.acquire(0).unwrap().0] += 1;
    }
    assert_eq!(seen[1], 0, "a key cooling down is not chosen: {seen:?}");
    assert!(seen[0] > 0 && seen[2] > 0, "{seen:?}");
    assert_eq!(PoolStrategy::parse(" Random "), Some(PoolStrategy::Random));
}

#[test]
fn cooldowns_401_429_with_and_without_reset_time() {
    let mut p = pool(PoolStrategy::FillFirst);
    let now = 1_000_000;
    let (a, _) = p.acquire(now).unwrap();
    let e401 = LlmError::new(ErrorClass::Auth, Some(401), "bad key");
    assert_eq!(p.report_failure(a, &e401, now), Some(AUTH_COOLDOWN));
    let (b, key) = p.acquire(now).unwrap();
    assert_eq!(
        (b, key.as_str()),
        (1, "sk-ant-bbbbbbbbbbbbbbbb"),
        "401 on key A rotates to key B"
    );
    let e429 = LlmError::new(ErrorClass::RateLimit, Some(429), "slow");
    assert_eq!(p.report_failure(b, &e429, now), Some(LIMIT_COOLDOWN));
    let mut e402 = LlmError::new(ErrorClass::Billing, Some(402), "credits");
    e402.retry_after = Some(Duration::from_secs(120));
    let (c, _) = p.acquire(now).unwrap();
    assert_eq!(
        p.report_failure(c, &e402, now),
        Some(Duration::from_secs(120))
    );
    assert!(p.acquire(now + 10).is_none(), "every key cooling down");
    assert_eq!(
        p.acquire(now + 121).unwrap().0,
        2,
        "provider reset time honoured"
    );
    assert_eq!(p.acquire(now + 301).unwrap().0, 0, "401 cooldown is 5 min");
    let server = LlmError::new(ErrorClass::ServerError, Some(500), "boom");
    assert_eq!(p.report_failure(0, &server, now), None);
}

#[test]
fn pool_persists_and_debug_redacts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credential_pool.json");
    let mut p = pool(PoolStrategy::RoundRobin);
    p.acquire(5).unwrap();
    CredentialPool::save(&path, std::slice::from_ref(&p)).unwrap();
    let back = CredentialPool::load(&path).unwrap();
    // auth.json (Python's format) keeps the keys, labels and order; the strategy is kept in
    // hermes' own file beside it; use counts live in the state file, not here.
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].provider, p.provider);
    assert_eq!(back[0].strategy, p.strategy);
    let pairs = |q: &CredentialPool| -> Vec<(String, String)> {
        q.credentials
            .iter()
            .map(|c| (c.label.clone(), c.key.clone()))
            .collect()
    };
    assert_eq!(pairs(&back[0]), pairs(&p));
    assert!(
        CredentialPool::load(&dir.path().join("none.json"))
            .unwrap()
            .is_empty()
    );
    assert!(p.remove("b"));
    assert!(!format!("{p:?}").contains("aaaaaaaaaaaa"));
}
