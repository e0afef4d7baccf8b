//! Retry delays (FEATURES §2: `delay(attempt) = min(base·2^(attempt−1), max) + uniform(0,
//! 0.5·that)`; defaults in `vectors/numeric_policies.json` `backoff_range_seconds`).

use std::time::Duration;

use rand::Rng;

/// Default base delay of the generic backoff (5 s, `numeric_policies.json`).
pub const DEFAULT_BASE: Duration = Duration::from_secs(5);
/// Default cap of the generic backoff (120 s, `numeric_policies.json`).
pub const DEFAULT_MAX: Duration = Duration::from_secs(120);
/// Base delay used for API-error retries (2 s, FEATURES §2).
pub const API_RETRY_BASE: Duration = Duration::from_secs(2);
/// Cap used for API-error retries (60 s, FEATURES §2).
pub const API_RETRY_MAX: Duration = Duration::from_secs(60);
/// Jitter as a fraction of the exponential delay (0.5).
pub const JITTER_RATIO: f64 = 0.5;

/// The exponential part without jitter: `min(base·2^(attempt−1), max)`; attempts 0 and 1 give
/// `base` (capped by `max`).
pub fn backoff_floor(attempt: u32, base: Duration, max: Duration) -> Duration {
    let exp = attempt.saturating_sub(1).min(30);
    base.saturating_mul(1u32 << exp).min(max)
}

/// The delay before retry number `attempt` (1-based): [`backoff_floor`] plus a uniformly random
/// jitter in `[0, 0.5·floor]`. The result always lies in `[floor, 1.5·floor]`.
pub fn backoff_delay(attempt: u32, base: Duration, max: Duration) -> Duration {
    let floor = backoff_floor(attempt, base, max);
    let jitter = rand::rng().random_range(0.0..=JITTER_RATIO);
    floor + floor.mul_f64(jitter)
}
