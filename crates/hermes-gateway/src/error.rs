//! Errors of platform adapters.

use std::time::Duration;

/// Why a platform call failed. Every variant names the platform so logs say where.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// Bad or missing credentials (HTTP 401/403, a rejected websocket identify).
    #[error("{platform}: authentication failed: {detail}")]
    Auth {
        /// Platform name (`telegram`, `discord`, …).
        platform: String,
        /// What the platform said.
        detail: String,
    },
    /// The platform asked us to slow down; retry after the given delay.
    #[error("{platform}: rate limited, retry after {} ms", retry_after.as_millis())]
    RateLimited {
        /// Platform name.
        platform: String,
        /// How long to wait before the next call.
        retry_after: Duration,
    },
    /// The platform rejected this request (bad markup, unknown chat, message too long).
    #[error("{platform}: request rejected: {detail}")]
    Rejected {
        /// Platform name.
        platform: String,
        /// What the platform said.
        detail: String,
    },
    /// Network failure, timeout, 5xx, a dropped websocket: worth retrying with backoff.
    #[error("{platform}: connection problem: {detail}")]
    Transport {
        /// Platform name.
        platform: String,
        /// What went wrong.
        detail: String,
    },
    /// The platform answered something we cannot read (not JSON, missing fields).
    #[error("{platform}: unexpected response: {detail}")]
    Protocol {
        /// Platform name.
        platform: String,
        /// What was wrong with it.
        detail: String,
    },
    /// The adapter cannot do this (for example editing on a platform without edits).
    #[error("{platform}: not supported: {what}")]
    Unsupported {
        /// Platform name.
        platform: String,
        /// The operation.
        what: String,
    },
}

impl PlatformError {
    /// [`PlatformError::Transport`] of `platform` (network failure, timeout, 5xx, a dropped
    /// websocket) with `detail`.
    pub fn transport(platform: &str, detail: impl std::fmt::Display) -> PlatformError {
        PlatformError::Transport {
            platform: platform.to_string(),
            detail: detail.to_string(),
        }
    }

    /// [`PlatformError::Protocol`] of `platform` (an answer we cannot read) with `detail`.
    pub fn protocol(platform: &str, detail: impl std::fmt::Display) -> PlatformError {
        PlatformError::Protocol {
            platform: platform.to_string(),
            detail: detail.to_string(),
        }
    }

    /// True for errors a caller may retry after a delay (transport problems, rate limits).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            PlatformError::Transport { .. } | PlatformError::RateLimited { .. }
        )
    }
}
