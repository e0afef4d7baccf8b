//! Server-initiated sampling (`sampling/createMessage`, MCP 2025-11-25 "Client Features →
//! Sampling"): served by the session's model through a [`Sampler`] the front end provides,
//! on unless a server is configured `sampling: false`, with caps on output tokens and on the
//! rate ([`SamplingCaps`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

/// Default largest `maxTokens` a server may ask for; larger requests are lowered to it.
pub const MAX_SAMPLING_TOKENS: u64 = 4_096;
/// Default most sampling requests one server may make per [`SAMPLING_WINDOW`].
pub const MAX_SAMPLING_REQUESTS: usize = 10;
/// The rate window of [`SamplingCaps::max_rpm`]: one minute.
pub const SAMPLING_WINDOW: Duration = Duration::from_secs(60);

/// The limits one server's sampling requests are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingCaps {
    /// Largest `maxTokens` granted (output tokens); default [`MAX_SAMPLING_TOKENS`].
    pub max_tokens_cap: u64,
    /// Most requests per minute; default [`MAX_SAMPLING_REQUESTS`].
    pub max_rpm: usize,
}

impl Default for SamplingCaps {
    fn default() -> SamplingCaps {
        SamplingCaps {
            max_tokens_cap: MAX_SAMPLING_TOKENS,
            max_rpm: MAX_SAMPLING_REQUESTS,
        }
    }
}

/// `mcp_servers.<name>.sampling` as written: `true`/`false`, or a table
/// `{enabled, max_tokens_cap, max_rpm}`. Absent means on with the default caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SamplingConfig {
    /// `sampling: true` / `sampling: false`.
    Switch(bool),
    /// `sampling: {enabled: true, max_tokens_cap: 1024, max_rpm: 5}`.
    Table(SamplingTable),
}

/// The table form of [`SamplingConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingTable {
    /// Serve sampling at all (default true).
    pub enabled: bool,
    /// See [`SamplingCaps::max_tokens_cap`].
    pub max_tokens_cap: u64,
    /// See [`SamplingCaps::max_rpm`].
    pub max_rpm: usize,
}

impl Default for SamplingTable {
    fn default() -> SamplingTable {
        let caps = SamplingCaps::default();
        SamplingTable {
            enabled: true,
            max_tokens_cap: caps.max_tokens_cap,
            max_rpm: caps.max_rpm,
        }
    }
}

impl Default for SamplingConfig {
    fn default() -> SamplingConfig {
        SamplingConfig::Switch(true)
    }
}

impl SamplingConfig {
    /// The caps when sampling is on, `None` when it is off.
    pub fn caps(&self) -> Option<SamplingCaps> {
        match self {
            SamplingConfig::Switch(true) => Some(SamplingCaps::default()),
            SamplingConfig::Switch(false) => None,
            SamplingConfig::Table(t) => t.enabled.then_some(SamplingCaps {
                max_tokens_cap: t.max_tokens_cap,
                max_rpm: t.max_rpm,
            }),
        }
    }
}

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
    caps: SamplingCaps,
    recent: Mutex<VecDeque<Instant>>,
}

impl SamplingGate {
    /// A gate with no requests made yet.
    pub fn new(sampler: Arc<dyn Sampler>, caps: SamplingCaps) -> SamplingGate {
        SamplingGate {
            sampler,
            caps,
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
            if recent.len() >= self.caps.max_rpm {
                return Err(format!(
                    "sampling rate limit: at most {} requests per {} s",
                    self.caps.max_rpm,
                    SAMPLING_WINDOW.as_secs()
                ));
            }
            recent.push_back(now);
        }
        let asked = request
            .get("maxTokens")
            .and_then(Value::as_u64)
            .unwrap_or(self.caps.max_tokens_cap);
        request["maxTokens"] = Value::from(asked.min(self.caps.max_tokens_cap));
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
        let gate = SamplingGate::new(Arc::new(Echo), SamplingCaps::default());
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

    #[test]
    fn config_forms() {
        let read = |y: &str| yaml_serde::from_str::<SamplingConfig>(y).unwrap().caps();
        assert_eq!(read("true"), Some(SamplingCaps::default()));
        assert_eq!(read("false"), None);
        assert_eq!(read("{enabled: false}"), None);
        assert_eq!(
            read("{max_tokens_cap: 100, max_rpm: 2}"),
            Some(SamplingCaps {
                max_tokens_cap: 100,
                max_rpm: 2
            })
        );
        assert!(yaml_serde::from_str::<SamplingConfig>("{max_rpn: 2}").is_err());
    }
}
