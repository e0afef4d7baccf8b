//! Time sources for the scheduler: the wall clock in production, and a clock that follows
//! tokio's (pausable) time in tests, so a test can advance hours without waiting.

use chrono::{DateTime, Utc};

/// Where the scheduler reads "now".
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The system wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// `start` plus the tokio time elapsed since this clock was made. Under
/// `tokio::time::pause()` it moves only when the test advances time (or the runtime
/// auto-advances past sleeps), which makes scheduler tests exact and instant.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: DateTime<Utc>,
    anchor: tokio::time::Instant,
}

impl TokioClock {
    /// A clock that reads `start` now.
    pub fn starting_at(start: DateTime<Utc>) -> TokioClock {
        TokioClock {
            start,
            anchor: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now().duration_since(self.anchor);
        self.start + chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::zero())
    }
}
