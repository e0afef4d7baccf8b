//! What a running gateway reports of itself (issue 24 §2–3): its sessions by lifecycle
//! state, the messages waiting, the platforms' connection state — for `/_status` and the
//! gauges of `/metrics`.

use std::collections::BTreeMap;

use hermes_telemetry::SessionLifecycle;
use serde::Serialize;

use super::{Gateway, Job, lock};

/// A platform adapter's task as the gateway sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionState {
    /// The adapter's task runs (it reconnects by itself after network errors).
    Running,
    /// Another replica holds the platform's single connection; this one waits to take over.
    Standby,
    /// The adapter's task ended with an error (see the gateway log).
    Failed,
    /// The adapter's task ended (shutdown).
    Stopped,
}

/// One platform's line of the runtime status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformConnection {
    /// Platform name.
    pub name: String,
    /// Its state.
    pub state: ConnectionState,
}

/// Sessions of this gateway by lifecycle state ([`SessionLifecycle`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SessionCounts {
    /// A turn or command runs (the agent is checked out of the cache).
    pub active: u64,
    /// In memory, waiting for the next message.
    pub idle: u64,
    /// Conversations with a stored session and no agent in memory (routed session keys
    /// of the store minus the two above; on a shared store this counts other replicas'
    /// conversations too).
    pub released: u64,
}

/// The gateway's view of itself at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeStatus {
    /// Agents in memory (active + idle).
    pub live_agents: u64,
    /// Sessions by lifecycle state.
    pub sessions: SessionCounts,
    /// Messages waiting for their session's turn, by platform.
    pub queue_depth: BTreeMap<String, u64>,
    /// Each platform adapter's state.
    pub platforms: Vec<PlatformConnection>,
}

impl Gateway {
    /// The gateway's sessions, queue and platforms now. Reads the store (the number of
    /// routed session keys): blocking, call it from a blocking thread.
    pub fn runtime_status(&self) -> RuntimeStatus {
        let inner = &self.inner;
        let mut queue_depth: BTreeMap<String, u64> = inner
            .adapters
            .keys()
            .map(|name| (name.clone(), 0))
            .collect();
        let mut active = 0u64;
        {
            let sessions = lock(&inner.sessions);
            for state in sessions.values() {
                if state.cancel.is_some() {
                    active += 1;
                }
                for job in &state.queue {
                    let (Job::Message(m) | Job::Command(_, m)) = job;
                    *queue_depth.entry(m.source.platform.clone()).or_default() += 1;
                }
            }
        }
        let idle = inner.cache.len() as u64;
        let routed = match inner.store.count_session_keys() {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(error = %e, "status: could not count the routed sessions");
                0
            }
        };
        let platforms = {
            let states = lock(&inner.connections);
            inner
                .adapters
                .keys()
                .map(|name| PlatformConnection {
                    name: name.clone(),
                    state: states
                        .get(name)
                        .copied()
                        .unwrap_or(ConnectionState::Stopped),
                })
                .collect()
        };
        RuntimeStatus {
            live_agents: active + idle,
            sessions: SessionCounts {
                active,
                idle,
                released: routed.saturating_sub(active + idle),
            },
            queue_depth,
            platforms,
        }
    }

    /// Sets the gateway's gauges of [`hermes_telemetry::metrics`] from `status` (called
    /// just before `/metrics` is rendered).
    pub fn publish_gauges(status: &RuntimeStatus) {
        let metrics = hermes_telemetry::metrics();
        let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        metrics.set_live_agents(as_i64(status.live_agents));
        metrics.set_sessions(&[
            (SessionLifecycle::Active, as_i64(status.sessions.active)),
            (SessionLifecycle::Idle, as_i64(status.sessions.idle)),
            (SessionLifecycle::Released, as_i64(status.sessions.released)),
        ]);
        metrics.set_queue_depth(
            status
                .queue_depth
                .iter()
                .map(|(platform, n)| (platform.as_str(), as_i64(*n))),
        );
    }

    /// Records the state of `platform`'s adapter task.
    pub(crate) fn set_connection(&self, platform: &str, state: ConnectionState) {
        lock(&self.inner.connections).insert(platform.to_string(), state);
    }
}
