//! Reconnect and retry delays shared by the HTTP-based adapters: exponential, capped and
//! jittered ("full jitter" between half and all of the step), on tokio time so tests can use
//! paused time.

use std::time::Duration;

use rand::Rng;
use tokio_util::sync::CancellationToken;

/// Exponential backoff: the n-th delay (n from 0) is `min(max, base * 2^n)` scaled by a
/// random factor in `[0.5, 1.0]`, so many clients that failed together do not retry together.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    attempt: u32,
}

impl Backoff {
    /// A backoff starting at `base` and never waiting longer than `max`.
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff {
            base,
            max: max.max(base),
            attempt: 0,
        }
    }

    /// The upper bound of the next delay before jitter (for logs and tests).
    pub fn ceiling(&self) -> Duration {
        let factor = 2u32.saturating_pow(self.attempt.min(20));
        self.base.saturating_mul(factor).min(self.max)
    }

    /// The next delay; every call doubles the ceiling until it reaches the cap.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self.ceiling();
        self.attempt = self.attempt.saturating_add(1);
        let scale: f64 = rand::rng().random_range(0.5..=1.0);
        ceiling.mul_f64(scale)
    }

    /// How many delays were handed out since the last reset.
    pub fn attempts(&self) -> u32 {
        self.attempt
    }

    /// Back to the first step (after a success).
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

/// Sleeps for `delay` unless `cancel` fires first; returns `false` when cancelled.
pub async fn sleep_or_cancel(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = cancel.cancelled() => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_to_the_cap_and_stay_jittered_below_the_ceiling() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1000));
        let mut ceilings = Vec::new();
        for _ in 0..8 {
            let ceiling = b.ceiling();
            let d = b.next_delay();
            assert!(
                d <= ceiling && d >= ceiling / 2,
                "{d:?} outside [{ceiling:?}/2, {ceiling:?}]"
            );
            ceilings.push(ceiling.as_millis());
        }
        assert_eq!(ceilings, vec![100, 200, 400, 800, 1000, 1000, 1000, 1000]);
        b.reset();
        assert_eq!(b.ceiling(), Duration::from_millis(100));
        assert_eq!(b.attempts(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn cancelled_sleep_returns_false() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(!sleep_or_cancel(Duration::from_secs(3600), &cancel).await);
        let live = CancellationToken::new();
        assert!(sleep_or_cancel(Duration::from_secs(3600), &live).await);
    }
}
