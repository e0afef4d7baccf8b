//! Reconnect and retry delays for the platform adapters: exponential backoff, capped, with jitter so
//! that many gateways restarting together do not reconnect in lockstep.

use std::time::Duration;

use rand::Rng;

/// Exponential backoff with "equal jitter": attempt `n` waits a random time in
/// `[d/2, d]` where `d = min(max, initial · 2ⁿ)`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    attempt: u32,
}

impl Backoff {
    /// A backoff starting at `initial` and never waiting longer than `max`.
    pub(crate) fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max: max.max(initial),
            attempt: 0,
        }
    }

    /// The delay before the next attempt; each call doubles the ceiling up to `max`.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let factor = 2u32.saturating_pow(self.attempt.min(20));
        let ceiling = self.initial.saturating_mul(factor).min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        let half = ceiling / 2;
        let spread = u64::try_from((ceiling - half).as_millis()).unwrap_or(u64::MAX);
        let extra = if spread == 0 {
            0
        } else {
            rand::rng().random_range(0..=spread)
        };
        half + Duration::from_millis(extra)
    }

    /// Back to the initial delay (after a connection that worked).
    #[cfg_attr(
        not(any(
            feature = "discord",
            feature = "slack",
            feature = "telegram",
            feature = "irc",
            feature = "matrix",
            feature = "signal",
            feature = "mattermost",
            feature = "homeassistant"
        )),
        allow(dead_code)
    )]
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
    }
}

/// Sleeps for `delay` unless `cancel` fires first; returns `false` when cancelled.
#[cfg(any(
    feature = "telegram",
    feature = "irc",
    feature = "matrix",
    feature = "signal",
    feature = "mattermost",
    feature = "homeassistant"
))]
pub(crate) async fn sleep_or_cancel(
    delay: Duration,
    cancel: &tokio_util::sync::CancellationToken,
) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = cancel.cancelled() => false,
    }
}

/// A random fraction of `d` (used for Discord's first heartbeat, which must be jittered).
#[cfg_attr(not(feature = "discord"), allow(dead_code))]
pub(crate) fn jitter(d: Duration) -> Duration {
    d.mul_f64(rand::rng().random_range(0.0..1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_stay_within_bounds_and_reset() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let expected_ceilings = [100u64, 200, 400, 800, 1600, 2000, 2000, 2000];
        for ceiling in expected_ceilings {
            let d = b.next_delay().as_millis() as u64;
            assert!(
                d >= ceiling / 2 && d <= ceiling,
                "{d} ms outside [{}, {ceiling}]",
                ceiling / 2
            );
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }

    #[test]
    fn many_attempts_do_not_overflow() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        for _ in 0..200 {
            assert!(b.next_delay() <= Duration::from_secs(60));
        }
    }

    #[cfg(feature = "telegram")]
    #[tokio::test(start_paused = true)]
    async fn cancelled_sleep_returns_false() {
        let cancel = tokio_util::sync::CancellationToken::new();
        cancel.cancel();
        assert!(!sleep_or_cancel(Duration::from_secs(3600), &cancel).await);
        let live = tokio_util::sync::CancellationToken::new();
        assert!(sleep_or_cancel(Duration::from_secs(3600), &live).await);
    }

    #[test]
    fn jitter_is_below_the_interval() {
        for _ in 0..100 {
            assert!(jitter(Duration::from_secs(41)) < Duration::from_secs(41));
        }
    }
}
