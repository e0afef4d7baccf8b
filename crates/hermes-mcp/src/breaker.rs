//! Per-server circuit breaker (FEATURES §11): 3 consecutive failures open it, calls then fail
//! fast; after 60 s one half-open probe is let through; a success closes it, a failure
//! re-opens it for another cooldown. Time is `tokio::time::Instant`, so tests use paused time.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Consecutive failures that open the breaker (FEATURES §11).
pub const FAILURE_THRESHOLD: u32 = 3;
/// Time an open breaker waits before a half-open probe (FEATURES §11).
pub const COOLDOWN: Duration = Duration::from_secs(60);

/// What the breaker currently says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls fail fast until the cooldown ends; `retry_in` is the time left.
    Open {
        /// Time until a probe is allowed.
        retry_in: Duration,
    },
    /// One probe call is in flight; others fail fast.
    HalfOpen,
}

#[derive(Debug)]
struct Inner {
    failures: u32,
    opened_at: Option<Instant>,
    probing: bool,
}

/// A circuit breaker shared by every tool of one server.
#[derive(Debug)]
pub struct Breaker {
    inner: Mutex<Inner>,
    threshold: u32,
    cooldown: Duration,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker::new(FAILURE_THRESHOLD, COOLDOWN)
    }
}

impl Breaker {
    /// A closed breaker opening after `threshold` consecutive failures for `cooldown`.
    pub fn new(threshold: u32, cooldown: Duration) -> Breaker {
        Breaker {
            inner: Mutex::new(Inner {
                failures: 0,
                opened_at: None,
                probing: false,
            }),
            threshold: threshold.max(1),
            cooldown,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current state (no side effects).
    pub fn state(&self) -> BreakerState {
        let inner = self.lock();
        match inner.opened_at {
            None => BreakerState::Closed,
            Some(_) if inner.probing => BreakerState::HalfOpen,
            Some(at) => BreakerState::Open {
                retry_in: self.cooldown.saturating_sub(at.elapsed()),
            },
        }
    }

    /// Asks to make a call. `Ok(())` lets it through (when the cooldown is over this call
    /// becomes the half-open probe); `Err(retry_in)` means fail fast.
    pub fn try_acquire(&self) -> Result<(), Duration> {
        let mut inner = self.lock();
        let Some(at) = inner.opened_at else {
            return Ok(());
        };
        if inner.probing {
            return Err(self.cooldown);
        }
        let elapsed = at.elapsed();
        if elapsed >= self.cooldown {
            inner.probing = true;
            Ok(())
        } else {
            Err(self.cooldown - elapsed)
        }
    }

    /// Records a successful call: closes the breaker.
    pub fn record_success(&self) {
        let mut inner = self.lock();
        inner.failures = 0;
        inner.opened_at = None;
        inner.probing = false;
    }

    /// Records a failed call (transport error, crash, timeout — not a tool's own `isError`).
    pub fn record_failure(&self) {
        let mut inner = self.lock();
        inner.failures = inner.failures.saturating_add(1);
        if inner.probing || inner.failures >= self.threshold {
            inner.opened_at = Some(Instant::now());
            inner.probing = false;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn opens_after_three_probes_after_cooldown_and_closes_on_success() {
        let b = Breaker::default();
        for _ in 0..2 {
            assert!(b.try_acquire().is_ok());
            b.record_failure();
        }
        assert_eq!(b.state(), BreakerState::Closed);
        b.record_failure();
        assert!(matches!(b.state(), BreakerState::Open { .. }));
        assert!(b.try_acquire().is_err());
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(b.try_acquire().is_err());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(b.try_acquire().is_ok(), "half-open probe");
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.try_acquire().is_err(), "only one probe at a time");
        b.record_failure();
        assert!(
            matches!(b.state(), BreakerState::Open { .. }),
            "failed probe re-opens"
        );
        tokio::time::advance(COOLDOWN).await;
        assert!(b.try_acquire().is_ok());
        b.record_success();
        assert_eq!(b.state(), BreakerState::Closed);
        assert!(b.try_acquire().is_ok());
    }
}
