//! What the turn loop does after a failed model call (FEATURES §2 recovery table): the
//! [`RecoveryPolicy`] turns a classified [`LlmError`] plus the turn's attempt counters into one
//! [`RecoveryAction`], and [`FallbackChain`] holds `fallback_providers` with the turn-scoped
//! position (the primary is tried again on the next turn).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorClass, LlmError};
use crate::retry::{API_RETRY_BASE, API_RETRY_MAX, backoff_delay};

/// One `fallback_providers` entry of config.yaml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FallbackTarget {
    /// Provider id or alias.
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Base URL override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// The next step after a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum RecoveryAction {
    /// Sleep (interruptibly) for this long, then send the same request again.
    Retry {
        /// How long to wait.
        wait: Duration,
        /// Rebuild the HTTP connection first (timeouts).
        rebuild_connection: bool,
    },
    /// Use the next key of the credential pool and retry at once.
    RotateCredential,
    /// Compress the history, then retry (context overflow / payload too large).
    Compress,
    /// Retry once with thinking blocks removed from the API copy (bad signature).
    StripThinking,
    /// Switch to the next fallback provider for the rest of this turn.
    Fallback(FallbackTarget),
    /// Give up; the error goes to the user.
    Stop,
}

/// Counters of one turn, owned by the loop and reset with [`RecoveryPolicy::reset_turn`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnRecovery {
    /// Retries spent on the current provider.
    pub retries: u32,
    /// Compressions done this turn.
    pub compressions: u32,
    /// Credential rotations done on the current provider.
    pub rotations: u32,
    /// Whether thinking was already stripped once.
    pub stripped_thinking: bool,
    /// Index of the next fallback to try.
    pub next_fallback: usize,
}

/// The recovery rules plus the configured fallback chain.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryPolicy {
    /// `agent.api_max_retries` (default 3).
    pub max_retries: u32,
    /// How many keys the current provider's pool has beyond the one in use (set by the loop;
    /// cleared on a fallback, whose provider has its own pool).
    pub spare_credentials: u32,
    /// Compressions allowed per turn (default 2).
    pub max_compressions: u32,
    /// `fallback_providers`, in order.
    pub fallbacks: Vec<FallbackTarget>,
    /// First backoff delay (FEATURES §2: 2 s for API errors); doubled per retry.
    pub retry_base: Duration,
    /// Largest backoff delay before jitter (60 s).
    pub retry_max: Duration,
    /// The turn's counters.
    pub turn: TurnRecovery,
}

impl RecoveryPolicy {
    /// A policy with `max_retries` and `fallbacks`, no spare keys, 2 compressions per turn,
    /// backoff 2 s / 60 s.
    pub fn new(max_retries: u32, fallbacks: Vec<FallbackTarget>) -> RecoveryPolicy {
        RecoveryPolicy {
            max_retries,
            spare_credentials: 0,
            max_compressions: 2,
            fallbacks,
            retry_base: API_RETRY_BASE,
            retry_max: API_RETRY_MAX,
            turn: TurnRecovery::default(),
        }
    }

    /// Starts a new turn: counters cleared, the primary provider first again with
    /// `spare_credentials` spare keys.
    pub fn reset_turn(&mut self, spare_credentials: u32) {
        self.turn = TurnRecovery::default();
        self.spare_credentials = spare_credentials;
    }

    /// Records a successful call (the retry budget of the provider starts over).
    pub fn on_success(&mut self) {
        self.turn.retries = 0;
    }

    /// Decides the next step for `err` (FEATURES §2): rotate first where the class allows and
    /// a spare key exists; compress / strip thinking where the class says so; retry retryable
    /// classes up to `max_retries` (Retry-After wins, else jittered backoff 2 s/60 s); then the
    /// next fallback where the class allows (exhausted retries of rate_limit/overloaded/
    /// server_error also fall back); else stop. `connection_failed` is never retried (the
    /// address will not answer after a backoff): it falls back at once, else stops.
    /// `auth_permanent` and `ssl_cert_verification` always stop.
    pub fn decide(&mut self, err: &LlmError) -> RecoveryAction {
        let class = err.class;
        if matches!(
            class,
            ErrorClass::AuthPermanent | ErrorClass::SslCertVerification
        ) {
            return RecoveryAction::Stop;
        }
        if err.rotate_credential() && self.turn.rotations < self.spare_credentials {
            self.turn.rotations += 1;
            return RecoveryAction::RotateCredential;
        }
        if class == ErrorClass::ThinkingSignature && !self.turn.stripped_thinking {
            self.turn.stripped_thinking = true;
            return RecoveryAction::StripThinking;
        }
        if class.should_compress() {
            if self.turn.compressions < self.max_compressions {
                self.turn.compressions += 1;
                return RecoveryAction::Compress;
            }
            return self.fallback_or_stop();
        }
        let retry_first = matches!(
            class,
            ErrorClass::RateLimit
                | ErrorClass::Overloaded
                | ErrorClass::ServerError
                | ErrorClass::Timeout
                | ErrorClass::Unknown
        );
        if retry_first && self.turn.retries < self.max_retries {
            self.turn.retries += 1;
            let wait = err.retry_after.unwrap_or_else(|| {
                backoff_delay(self.turn.retries, self.retry_base, self.retry_max)
            });
            return RecoveryAction::Retry {
                wait,
                rebuild_connection: class == ErrorClass::Timeout,
            };
        }
        if err.fallback() || retry_first {
            return self.fallback_or_stop();
        }
        RecoveryAction::Stop
    }

    fn fallback_or_stop(&mut self) -> RecoveryAction {
        match self.fallbacks.get(self.turn.next_fallback) {
            Some(t) => {
                self.turn.next_fallback += 1;
                self.turn.retries = 0;
                self.turn.rotations = 0;
                // The fallback provider has its own pool; the loop sets its spare count.
                self.spare_credentials = 0;
                RecoveryAction::Fallback(t.clone())
            }
            None => RecoveryAction::Stop,
        }
    }
}

/// The status line for a retry, e.g. "rate limited, retrying in 7 s (2/3)": what went wrong in
/// a few words (from the error class), the wait rounded up to whole seconds, and the retry
/// number out of `agent.api_max_retries` (issue 3, FEATURES §2). A provider silent past
/// `model.stream_idle_timeout` reads "no data from the provider" (it is a `timeout`-class
/// error like a dropped connection, but the network is fine; issue 20). Classes without a
/// phrase of their own read "request failed (<class>)".
pub fn retry_status(err: &LlmError, wait: Duration, attempt: u32, max: u32) -> String {
    let what = match err.class {
        ErrorClass::RateLimit => "rate limited".to_string(),
        ErrorClass::Overloaded => "provider overloaded".to_string(),
        ErrorClass::Timeout
            if err
                .message
                .starts_with(crate::transport::IDLE_MESSAGE_PREFIX) =>
        {
            "no data from the provider".to_string()
        }
        ErrorClass::Timeout => "network error".to_string(),
        ErrorClass::ServerError => "provider error".to_string(),
        other => format!("request failed ({})", other.as_str()),
    };
    format!(
        "{what}, retrying in {} s ({attempt}/{max})",
        wait.as_secs_f64().ceil() as u64
    )
}
