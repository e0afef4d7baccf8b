//! Issue 20 item 10: an endpoint nothing listens on is not a timeout. A connection refused on
//! a closed loopback port is classed `connection_failed`: not retried (the address will not
//! start answering within a backoff), the fallback chain is tried at once, and the message
//! names the address and the cause in words a user can act on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{client, request};
use hermes_llm::fallback::{FallbackTarget, RecoveryAction, RecoveryPolicy};
use hermes_llm::{ErrorClass, ModelClient, classify};
use hermes_protocol::Message;

/// A loopback port that was just free and is now closed: connecting to it is refused.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    port
}

#[tokio::test]
async fn connection_refused_fails_fast_without_retries() {
    let base = format!("http://127.0.0.1:{}/v1", closed_port());
    let c = client(&base);
    let started = Instant::now();
    let err = match c.stream(&request(vec![Message::user("hi")])).await {
        Ok(_) => panic!("a closed port answered"),
        Err(e) => e,
    };
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a refused connect returns at once, took {:?}",
        started.elapsed()
    );
    assert_eq!(err.class, ErrorClass::ConnectionFailed, "{err}");
    assert!(!err.retryable(), "a refused connection is not retried");
    assert!(
        err.message.contains("connection refused"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains(&base),
        "names the address: {}",
        err.message
    );
    assert!(
        !err.message.contains("os error"),
        "no raw socket error text: {}",
        err.message
    );

    // Without a fallback the turn stops at once: no retry, no backoff.
    let mut policy = RecoveryPolicy::new(3, Vec::new());
    assert_eq!(policy.decide(&err), RecoveryAction::Stop);

    // With a fallback, it is tried next (fast failover), not after three retries.
    let target = FallbackTarget {
        provider: "openrouter".into(),
        model: "backup".into(),
        base_url: None,
    };
    let mut policy = RecoveryPolicy::new(3, vec![target.clone()]);
    assert_eq!(policy.decide(&err), RecoveryAction::Fallback(target));
}

#[test]
fn connect_failure_text_is_classed_apart_from_timeouts() {
    assert_eq!(
        classify(None, "tcp connect error: Connection refused (os error 111)"),
        ErrorClass::ConnectionFailed
    );
    assert_eq!(
        classify(None, "dns error: failed to lookup address information"),
        ErrorClass::ConnectionFailed
    );
    // A dropped or slow connection stays a retryable timeout.
    assert_eq!(
        classify(None, "Connection reset by peer"),
        ErrorClass::Timeout
    );
    assert_eq!(classify(None, "operation timed out"), ErrorClass::Timeout);
}
