//! The store lease a front end holds while it runs a turn on a session (issue 18 §4), so a
//! session runs one turn at a time across front ends (the terminal, the API server, chat
//! platforms, webhook) and across processes and replicas sharing one store
//! ([`hermes_store::SessionBackend::acquire_lease`]). Taking over an expired lease fences
//! the old holder off: its next checked write fails (`leases.rs` of `hermes-store`).
//!
//! A [`TurnLease`] renews itself every third of [`LEASE_TTL`] while held; a process that
//! dies stops renewing and its lease expires. The API answers a busy session at once (409);
//! chat front ends and the terminal wait their turn ([`TurnLease::acquire_waiting`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hermes_store::{Lease, LeaseAttempt, SessionStore};
use tokio_util::sync::CancellationToken;

/// How long a lease lasts without a heartbeat.
pub const LEASE_TTL: Duration = Duration::from_secs(30);
/// Pause between two attempts of [`TurnLease::acquire_waiting`].
const WAIT_STEP: Duration = Duration::from_millis(200);

/// Why no lease was obtained.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LeaseError {
    /// Another holder runs a turn on the session.
    #[error("session {session} is running a turn elsewhere ({holder})")]
    Busy {
        /// The session.
        session: String,
        /// The other holder's id.
        holder: String,
        /// When the other lease expires unless renewed.
        expires_in: Duration,
    },
    /// Waiting was cancelled.
    #[error("cancelled while waiting for session {0}")]
    Cancelled(String),
    /// The store failed.
    #[error("session lease: {0}")]
    Store(String),
}

/// A unique holder id for one turn of `front_end` in this process:
/// `<front_end>:<host>:pid<N>:<sequence>` ([`hermes_protocol::owner`]: a holder that was
/// killed is recognised as gone by the next process on the same machine).
pub fn holder_id(front_end: &str) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    format!(
        "{front_end}:{}:{}",
        hermes_protocol::owner::this_process(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// A held session lease; released by [`TurnLease::release`] (or, as a fallback, on drop).
pub struct TurnLease {
    store: Arc<SessionStore>,
    lease: Option<Lease>,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for TurnLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnLease")
            .field("lease", &self.lease)
            .finish()
    }
}

/// One acquisition attempt of `session`'s lease for `holder`.
async fn try_once(
    store: &Arc<SessionStore>,
    session: &str,
    holder: String,
) -> Result<LeaseAttempt, LeaseError> {
    let (s, sid) = (store.clone(), session.to_string());
    tokio::task::spawn_blocking(move || s.acquire_lease(&sid, &holder, LEASE_TTL))
        .await
        .map_err(|e| LeaseError::Store(e.to_string()))?
        .map_err(|e| LeaseError::Store(e.to_string()))
}

impl TurnLease {
    /// Takes the lease of `session` now.
    ///
    /// Errors: [`LeaseError::Busy`] when another holder has it, [`LeaseError::Store`].
    pub async fn try_acquire(
        store: &Arc<SessionStore>,
        session: &str,
        front_end: &str,
    ) -> Result<TurnLease, LeaseError> {
        let mut attempt = try_once(store, session, holder_id(front_end)).await?;
        // A holder process of this machine that no longer runs (`kill -9`, a crash) holds
        // nothing: end exactly its lease (holder and token, so a lease someone took since is
        // untouched), then try again.
        if let LeaseAttempt::Held { holder, token, .. } = &attempt
            && hermes_protocol::owner::owner_is_gone(holder)
        {
            tracing::info!(
                session,
                holder,
                "the session's lease holder is gone; taking over"
            );
            let dead = Lease {
                session_id: session.to_string(),
                holder: holder.clone(),
                token: *token,
                expires_at: 0.0,
            };
            let s = store.clone();
            let _ = tokio::task::spawn_blocking(move || s.release_lease(&dead)).await;
            attempt = try_once(store, session, holder_id(front_end)).await?;
        }
        match attempt {
            LeaseAttempt::Acquired(lease) => Ok(TurnLease::start(store.clone(), lease)),
            LeaseAttempt::Held {
                holder, expires_in, ..
            } => Err(LeaseError::Busy {
                session: session.to_string(),
                holder,
                expires_in,
            }),
        }
    }

    /// Waits until the lease of `session` is free (or the other holder's expires), then
    /// takes it. Returns the lease and whether it had to wait (the session's history may
    /// have changed meanwhile).
    ///
    /// Errors: [`LeaseError::Cancelled`] when `cancel` fires first, [`LeaseError::Store`].
    pub async fn acquire_waiting(
        store: &Arc<SessionStore>,
        session: &str,
        front_end: &str,
        cancel: &CancellationToken,
    ) -> Result<(TurnLease, bool), LeaseError> {
        let mut waited = false;
        loop {
            match TurnLease::try_acquire(store, session, front_end).await {
                Ok(l) => return Ok((l, waited)),
                Err(LeaseError::Busy { holder, .. }) => {
                    if !waited {
                        tracing::info!(session, holder, "session busy elsewhere; waiting");
                    }
                    waited = true;
                    tokio::select! {
                        _ = cancel.cancelled() => {
                            return Err(LeaseError::Cancelled(session.to_string()));
                        }
                        _ = tokio::time::sleep(WAIT_STEP) => {}
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn start(store: Arc<SessionStore>, lease: Lease) -> TurnLease {
        let s = store.clone();
        let mut mine = lease.clone();
        let heartbeat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE_TTL / 3).await;
                let s = s.clone();
                let mut l = mine.clone();
                let renewed = tokio::task::spawn_blocking(move || {
                    s.renew_lease(&mut l, LEASE_TTL).map(|ok| (ok, l))
                })
                .await;
                match renewed {
                    Ok(Ok((true, l))) => mine = l,
                    Ok(Ok((false, _))) => {
                        tracing::warn!(
                            session = %mine.session_id,
                            "session lease was taken over (expired); the turn keeps running"
                        );
                        return;
                    }
                    Ok(Err(e)) => tracing::warn!(error = %e, "session lease renewal failed"),
                    Err(_) => return,
                }
            }
        });
        TurnLease {
            store,
            lease: Some(lease),
            heartbeat,
        }
    }

    /// The fencing token of this lease.
    pub fn token(&self) -> i64 {
        self.lease.as_ref().map_or(0, |l| l.token)
    }

    /// Whether another holder ran a turn on the session since the caller's lease with token
    /// `last` (0: none yet, nothing to compare): tokens grow by one per acquisition, so any
    /// token but `last + 1` means someone else held the session in between and the caller's
    /// copy of the history may be stale.
    pub fn others_ran_since(&self, last: i64) -> bool {
        last != 0 && self.token() != last + 1
    }

    /// Gives the lease back and waits until the store recorded it.
    pub async fn release(mut self) {
        self.heartbeat.abort();
        if let Some(lease) = self.lease.take() {
            let store = self.store.clone();
            let done = tokio::task::spawn_blocking(move || store.release_lease(&lease)).await;
            if let Ok(Err(e)) = done {
                tracing::warn!(error = %e, "session lease release failed (it expires on its own)");
            }
        }
    }
}

impl Drop for TurnLease {
    fn drop(&mut self) {
        self.heartbeat.abort();
        if let Some(lease) = self.lease.take() {
            let store = self.store.clone();
            let release = move || {
                if let Err(e) = store.release_lease(&lease) {
                    tracing::warn!(error = %e, "session lease release failed (it expires on its own)");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(h) => {
                    h.spawn_blocking(release);
                }
                Err(_) => release(),
            }
        }
    }
}
