//! Reconnecting in the background (FEATURES §11 "Reconnect with backoff"): each enabled server
//! has a supervisor task that notices a lost connection (the child exited, the transport
//! closed, or the first start failed) and reconnects with jittered exponential backoff —
//! [`BACKOFF_BASE`] doubling per failed attempt up to [`BACKOFF_CAP`], each delay drawn from
//! its upper half — so tools come back without waiting for the model to call one. The
//! supervisor holds only a weak reference: dropping the last [`crate::McpManager`] (or
//! [`McpServer::shutdown`]) ends it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rand::Rng;

use crate::server::{McpServer, ServerState};

/// First reconnect delay.
pub const BACKOFF_BASE: Duration = Duration::from_secs(1);
/// Longest reconnect delay.
pub const BACKOFF_CAP: Duration = Duration::from_secs(60);
/// How often the supervisor checks that the connection is still alive.
pub const LIVENESS_CHECK: Duration = Duration::from_millis(500);

/// Jittered exponential backoff: attempt n waits a random time in
/// `[d/2, d]` with `d = min(BACKOFF_CAP, BACKOFF_BASE · 2ⁿ)`.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    attempt: u32,
}

impl Backoff {
    /// The ceiling `d` of the next delay (before jitter).
    pub fn ceiling(&self) -> Duration {
        let factor = 1u32.checked_shl(self.attempt.min(16)).unwrap_or(u32::MAX);
        BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_CAP)
    }

    /// The next delay, and counts one more attempt.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.ceiling();
        self.attempt = self.attempt.saturating_add(1);
        d.mul_f64(rand::rng().random_range(0.5..=1.0))
    }

    /// After a success: the next failure starts again at [`BACKOFF_BASE`].
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

/// Starts the supervisor of `server` (once, after its first connect attempt).
pub(crate) fn spawn_supervisor(server: &Arc<McpServer>) {
    let weak = Arc::downgrade(server);
    let stop = server.stop_token();
    tokio::spawn(async move {
        let _ = supervise(weak, stop).await;
    });
}

/// The supervisor loop; `None` when the server is gone, `Some` when stopped.
async fn supervise(weak: Weak<McpServer>, stop: tokio_util::sync::CancellationToken) -> Option<()> {
    let mut backoff = Backoff::default();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Some(()),
            _ = tokio::time::sleep(LIVENESS_CHECK) => {}
        }
        if check(&weak).await? {
            backoff.reset();
            continue;
        }
        let delay = backoff.next_delay();
        tokio::select! {
            _ = stop.cancelled() => return Some(()),
            _ = tokio::time::sleep(delay) => {}
        }
        let server = weak.upgrade()?;
        if server.is_alive().await {
            backoff.reset();
            continue;
        }
        match server.connect().await {
            Ok(()) => {
                tracing::info!(server = %server.name(), "MCP server reconnected");
                backoff.reset();
            }
            Err(e) => {
                tracing::warn!(server = %server.name(), error = %e, retry_in = ?backoff.ceiling(), "MCP reconnect failed");
            }
        }
    }
}

/// `Some(true)` when the connection is alive; `Some(false)` after marking a lost one failed;
/// `None` when the server is gone.
async fn check(weak: &Weak<McpServer>) -> Option<bool> {
    let server = weak.upgrade()?;
    if server.is_alive().await {
        return Some(true);
    }
    if matches!(server.state(), ServerState::Ready) {
        tracing::warn!(server = %server.name(), "MCP server connection lost; reconnecting");
        server.mark_lost().await;
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_stay_jittered_and_capped() {
        let mut b = Backoff::default();
        let mut ceilings = Vec::new();
        for _ in 0..10 {
            let ceiling = b.ceiling();
            let d = b.next_delay();
            assert!(
                d >= ceiling / 2 && d <= ceiling,
                "{d:?} outside [{ceiling:?}/2, {ceiling:?}]"
            );
            ceilings.push(ceiling.as_secs());
        }
        assert_eq!(ceilings, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        b.reset();
        assert_eq!(b.ceiling(), BACKOFF_BASE);
        for _ in 0..100 {
            b.next_delay();
        }
        assert_eq!(b.ceiling(), BACKOFF_CAP);
    }
}
