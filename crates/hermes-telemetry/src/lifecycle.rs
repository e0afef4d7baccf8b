//! The session lifecycle (seed 004 §2, issue 24 §3), as the gateway and the API server see a
//! conversation:
//!
//! ```text
//! created ──▶ active ◀──▶ idle ──▶ released ──▶ resumed ──▶ active
//!               │           │         │
//!               └───────────┴─────────┴──▶ ended
//! ```
//!
//! - **created**: a new session got its agent (no stored history yet);
//! - **active**: the agent runs a turn;
//! - **idle**: the turn ended and the agent waits in memory for the next message;
//! - **released**: the agent was dropped from memory (cache eviction, idle release); the
//!   session lives on in the store;
//! - **resumed**: a released session got an agent again, rebuilt from the store (the time it
//!   took is `hermes_session_resume_duration_seconds`); it is active next;
//! - **ended**: the session was closed (`/new`, `/reset`, the reset policy); its key routes
//!   to a new session from then on.

use serde::Serialize;

/// One state of a session's lifecycle (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionLifecycle {
    /// A new session got its agent.
    Created,
    /// A turn runs.
    Active,
    /// In memory, waiting for a message.
    Idle,
    /// Out of memory, kept in the store.
    Released,
    /// Brought back from the store.
    Resumed,
    /// Closed; its key routes to a new session.
    Ended,
}

impl SessionLifecycle {
    /// Every state, in lifecycle order.
    pub const ALL: [SessionLifecycle; 6] = [
        SessionLifecycle::Created,
        SessionLifecycle::Active,
        SessionLifecycle::Idle,
        SessionLifecycle::Released,
        SessionLifecycle::Resumed,
        SessionLifecycle::Ended,
    ];

    /// The snake_case name used in metrics labels and `/_status`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionLifecycle::Created => "created",
            SessionLifecycle::Active => "active",
            SessionLifecycle::Idle => "idle",
            SessionLifecycle::Released => "released",
            SessionLifecycle::Resumed => "resumed",
            SessionLifecycle::Ended => "ended",
        }
    }
}

impl std::fmt::Display for SessionLifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
