//! Flood control: a token bucket that spaces the lines we send.
//!
//! IRC servers disconnect ("Excess Flood") or delay clients that send too fast; RFC 1459
//! §8.10 describes the classic server rule (a penalty of about 2 s per message above a burst),
//! and clients keep well inside it. The bucket holds `burst` tokens, one line takes one, and a
//! token comes back every `interval` — by default a burst of 4, then one line a second.

use std::time::Duration;

use tokio::time::Instant;

/// A token bucket over tokio's clock (so tests can use paused time).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    burst: u32,
    interval: Duration,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens (at least 1) refilled one per `interval` (a zero
    /// interval turns flood control off).
    pub fn new(burst: u32, interval: Duration) -> TokenBucket {
        let burst = burst.max(1);
        TokenBucket {
            burst,
            interval,
            tokens: f64::from(burst),
            last: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        if self.interval.is_zero() {
            self.tokens = f64::from(self.burst);
        } else {
            let earned = now.saturating_duration_since(self.last).as_secs_f64()
                / self.interval.as_secs_f64();
            self.tokens = (self.tokens + earned).min(f64::from(self.burst));
        }
        self.last = now;
    }

    /// How long until a token is available (zero when one is).
    pub fn wait_time(&mut self, now: Instant) -> Duration {
        self.refill(now);
        if self.tokens >= 1.0 {
            Duration::ZERO
        } else {
            self.interval.mul_f64(1.0 - self.tokens)
        }
    }

    /// Takes a token (call after [`TokenBucket::wait_time`] returned zero; taking from an
    /// empty bucket goes into debt, which later waits repay).
    pub fn take(&mut self, now: Instant) {
        self.refill(now);
        self.tokens -= 1.0;
    }

    /// Waits until a token is available, then takes it.
    pub async fn acquire(&mut self) {
        loop {
            let wait = self.wait_time(Instant::now());
            if wait.is_zero() {
                break;
            }
            tokio::time::sleep(wait).await;
        }
        self.take(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_then_one_line_per_interval() {
        let start = Instant::now();
        let mut b = TokenBucket::new(4, Duration::from_secs(1));
        let mut times = Vec::new();
        for _ in 0..7 {
            b.acquire().await;
            times.push(start.elapsed());
        }
        let secs: Vec<u64> = times.iter().map(|d| d.as_millis() as u64).collect();
        assert_eq!(secs, vec![0, 0, 0, 0, 1000, 2000, 3000]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_bucket_refills_up_to_the_burst() {
        let mut b = TokenBucket::new(2, Duration::from_millis(500));
        b.acquire().await;
        b.acquire().await;
        tokio::time::advance(Duration::from_secs(60)).await;
        let t = Instant::now();
        b.acquire().await;
        b.acquire().await;
        assert_eq!(t.elapsed(), Duration::ZERO);
        b.acquire().await;
        assert_eq!(t.elapsed(), Duration::from_millis(500));
    }

    #[test]
    fn zero_interval_means_no_limit() {
        let mut b = TokenBucket::new(1, Duration::ZERO);
        let now = Instant::now();
        for _ in 0..100 {
            assert_eq!(b.wait_time(now), Duration::ZERO);
            b.take(now);
        }
    }
}
