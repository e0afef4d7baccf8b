//! Shared state of the API server: the agent factory, the store, settings, and the turn
//! slots (one turn per session, a global cap).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use hermes_store::SessionStore;
use hermes_tools::{Approval, Approver, FixedApprover};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::api::error::ApiFailure;
use crate::api::settings::ApiSettings;
use crate::factory::AgentFactory;
use crate::idle::{Activity, BusyGuard};

/// Everything the API routes share. Cheap to clone.
#[derive(Clone)]
pub struct ApiState {
    pub(crate) inner: Arc<Inner>,
    pub(crate) approver: Arc<dyn Approver>,
    /// Running turns, for the idle memory release ([`crate::idle`]).
    pub(crate) activity: Activity,
    /// Serves `/metrics` and `/_status` when set ([`crate::observe`]).
    pub(crate) observer: Option<Arc<dyn crate::observe::Observer>>,
}

pub(crate) struct Inner {
    pub factory: Arc<dyn AgentFactory>,
    pub store: Arc<SessionStore>,
    pub settings: ApiSettings,
    /// Sessions with a running turn.
    busy: Mutex<HashSet<String>>,
    permits: Arc<Semaphore>,
    /// Cancelled when the server shuts down: every running turn is interrupted.
    pub shutdown: CancellationToken,
}

impl ApiState {
    /// State for a server whose agents come from `factory` and whose sessions live in
    /// `store`. Dangerous commands are denied (an HTTP client cannot be asked mid-turn);
    /// [`ApiState::with_approver`] changes that.
    pub fn new(
        factory: Arc<dyn AgentFactory>,
        store: Arc<SessionStore>,
        settings: ApiSettings,
    ) -> ApiState {
        let cap = settings.max_concurrent_turns.max(1);
        ApiState {
            inner: Arc::new(Inner {
                factory,
                store,
                settings,
                busy: Mutex::new(HashSet::new()),
                permits: Arc::new(Semaphore::new(cap)),
                shutdown: CancellationToken::new(),
            }),
            approver: Arc::new(FixedApprover(Approval::Deny)),
            activity: Activity::new(),
            observer: None,
        }
    }

    /// Replaces the approver handed to agents (for example `--yolo` semantics chosen by the
    /// front end).
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> ApiState {
        self.approver = approver;
        self
    }

    /// Reports running turns to `activity` (the gateway's, when both run in one process:
    /// [`crate::Gateway::activity`]) instead of a handle of its own.
    pub fn with_activity(mut self, activity: Activity) -> ApiState {
        self.activity = activity;
        self
    }

    /// Serves `GET /metrics` and `GET /_status` from `observer`, behind the API key like
    /// every other route (without it both answer 404).
    pub fn with_observer(mut self, observer: Arc<dyn crate::observe::Observer>) -> ApiState {
        self.observer = Some(observer);
        self
    }

    /// The settings the server runs with.
    pub fn settings(&self) -> &ApiSettings {
        &self.inner.settings
    }

    /// Interrupts every running turn (the server's shutdown path calls this).
    pub fn interrupt_all(&self) {
        self.inner.shutdown.cancel();
    }

    /// Takes a global turn permit (429 when the cap is reached).
    pub(crate) fn turn_permit(&self) -> Result<OwnedSemaphorePermit, ApiFailure> {
        self.inner
            .permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiFailure::too_many_turns(self.inner.settings.max_concurrent_turns))
    }

    /// Marks `session` busy until the returned guard drops (409 when it already is).
    pub(crate) fn claim_session(&self, session: &str) -> Result<SessionClaim, ApiFailure> {
        let mut busy = self
            .inner
            .busy
            .lock()
            .map_err(|_| ApiFailure::store("turn registry poisoned"))?;
        if !busy.insert(session.to_string()) {
            return Err(ApiFailure::session_busy(session));
        }
        Ok(SessionClaim {
            state: self.inner.clone(),
            session: session.to_string(),
        })
    }
}

/// A session's turn slot; released on drop.
pub(crate) struct SessionClaim {
    state: Arc<Inner>,
    session: String,
}

impl Drop for SessionClaim {
    fn drop(&mut self) {
        if let Ok(mut busy) = self.state.busy.lock() {
            busy.remove(&self.session);
        }
    }
}

/// What a running turn holds; dropping it frees the session and the global permit.
pub(crate) struct TurnGuards {
    pub _claim: Option<SessionClaim>,
    /// The store lease of a named session (one turn across front ends and processes).
    pub lease: Option<crate::lease::TurnLease>,
    pub _permit: OwnedSemaphorePermit,
    pub _busy: BusyGuard,
}

impl TurnGuards {
    /// Releases everything, waiting until the store recorded the lease's release.
    pub(crate) async fn release(mut self) {
        if let Some(lease) = self.lease.take() {
            lease.release().await;
        }
    }
}
