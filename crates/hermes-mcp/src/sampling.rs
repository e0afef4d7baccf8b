//! Server-initiated sampling (`sampling/createMessage`, MCP 2025-11-25 "Client Features →
//! Sampling"): served by the session's model through a [`Sampler`] the front end provides,
//! only for servers configured `sampling: true`, with caps on output tokens and on the rate.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

/// Largest `maxTokens` a server may ask for; larger requests are lowered to this.
pub const MAX_SAMPLING_TOKENS: u64 = 4_096;
/// Most sampling requests one server may make per [`SAMPLING_WINDOW`].
pub const MAX_SAMPLING_REQUESTS: usize = 10;
/// The rate window of [`MAX_SAMPLING_REQUESTS`].
pub const SAMPLING_WINDOW: Duration = Duration::from_secs(60);

/// Answers a sampling request with the session's model.
#[async_trait::async_trait]
pub trait Sampler: Send + Sync {
    /// `request` is the `sampling/createMessage` params as JSON (`messages`, `systemPrompt`,
    /// `maxTokens`, …, already capped); returns the result JSON (`role`, `content`, `model`,
    /// `stopReason`).
    ///
    /// # Errors
    /// A reason sent back to the server.
    async fn sample(&self, request: Value) -> Result<Value, String>;
}

/// One server's caps in front of the session's [`Sampler`].
pub struct SamplingGate {
    sampler: Arc<dyn Sampler>,
    recent: Mutex<VecDeque<Instant>>,
}

impl SamplingGate {
    /// A gate with no requests made yet.
    pub fn new(sampler: Arc<dyn Sampler>) -> SamplingGate {
        SamplingGate {
            sampler,
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// Applies the caps, then asks the sampler.
    ///
    /// # Errors
    /// Rate limit exceeded, or the sampler's error.
    pub async fn sample(&self, mut request: Value) -> Result<Value, String> {
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            while recent
                .front()
                .is_some_and(|t| now.duration_since(*t) >= SAMPLING_WINDOW)
            {
                recent.pop_front();
            }
            if recent.len() >= MAX_SAMPLING_REQUESTS {
                return Err(format!(
                    "sampling rate limit: at most {MAX_SAMPLING_REQUESTS} requests per {} s",
                    SAMPLING_WINDOW.as_secs()
                ));
            }
            recent.push_back(now);
        }
        let asked = request
            .get("maxTokens")
            .and_then(Value::as_u64)
            .unwrap_or(MAX_SAMPLING_TOKENS);
        request["maxTokens"] = Value::from(asked.min(MAX_SAMPLING_TOKENS));
        self.sampler.sample(request).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Echo;
    #[async_trait::async_trait]
    impl Sampler for Echo {
        async fn sample(&self, request: Value) -> Result<Value, String> {
            Ok(request)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn caps_tokens_and_rate() {
        let gate = SamplingGate::new(Arc::new(Echo));
        let r = gate.sample(json!({"maxTokens": 100_000})).await.unwrap();
        assert_eq!(r["maxTokens"], 4_096);
        for _ in 1..MAX_SAMPLING_REQUESTS {
            gate.sample(json!({"maxTokens": 5})).await.unwrap();
        }
        assert!(
            gate.sample(json!({}))
                .await
                .unwrap_err()
                .contains("rate limit")
        );
        tokio::time::advance(SAMPLING_WINDOW).await;
        assert_eq!(
            gate.sample(json!({"maxTokens": 5})).await.unwrap()["maxTokens"],
            5
        );
    }
}
