//! Typed provider errors and their classes (FEATURES §2; `vectors/error_classifier.json`).

use std::time::Duration;

/// The class of a provider failure, which decides the recovery (FEATURES §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// 401/403: bad or missing key (401 rotates credential, both fall back).
    Auth,
    /// The key can never work (revoked account); stop and tell the user.
    AuthPermanent,
    /// Out of credits/quota.
    Billing,
    /// 429: too many requests.
    RateLimit,
    /// 503/529: the provider is overloaded.
    Overloaded,
    /// 5xx.
    ServerError,
    /// Connection dropped, reset or timed out.
    Timeout,
    /// The prompt does not fit the context window.
    ContextOverflow,
    /// 413.
    PayloadTooLarge,
    /// 404 / unknown model.
    ModelNotFound,
    /// 400 with a malformed request.
    FormatError,
    /// Refused by content policy.
    ContentPolicy,
    /// A thinking-block signature was rejected.
    ThinkingSignature,
    /// TLS certificate verification failed.
    SslCertVerification,
    /// Anything else.
    Unknown,
}

/// A failed model call, classified.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    /// The class (decides retry / rotate / fallback / compress).
    pub class: ErrorClass,
    /// HTTP status, or the status implied by an in-stream error (case C08: 400).
    pub status: Option<u16>,
    /// Human-readable message including the provider's own text (secrets redacted).
    pub message: String,
    /// Provider-requested wait (`Retry-After`), capped at 600 s by the caller.
    pub retry_after: Option<Duration>,
}
