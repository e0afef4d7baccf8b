//! Session routing (issue 7 part 2): session key → stored session, and the bounded cache of
//! live agents.
//!
//! The key→session mapping is persisted in `state.db` itself: every session an agent creates
//! for the gateway carries its session key (`sessions.session_key`), and a key routes to the
//! newest session with that key. `/new` and resets therefore re-route by creating a session,
//! and a restarted gateway continues every conversation. The file is shared with Python
//! Hermes: its `gateway_routing` entries are followed when newer, and a new session moves
//! them (`hermes_store` `gateway.rs`), so a chat continues across a switch of program.
//!
//! Live agents sit in an LRU keyed by session key and checked against the factory's config
//! signature; an evicted agent is dropped and later rebuilt from the store.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use hermes_agent::Agent;
use hermes_store::SessionStore;
use lru::LruCache;

use crate::runner::approval::ApprovalSlot;

/// The stored session a key routes to: the newest session carrying the key, or Python
/// Hermes' routing entry for it when that is newer ([`SessionStore::route_session`]).
pub fn routed_session(
    store: &SessionStore,
    session_key: &str,
) -> Result<Option<String>, hermes_store::StoreError> {
    store.route_session(session_key)
}

/// A live agent with what the runner knows about it.
pub struct CachedAgent {
    /// The agent (one session at a time).
    pub agent: Agent,
    /// [`crate::AgentFactory::config_signature`] when it was built.
    pub signature: String,
    /// The session's `history_version` after the agent last touched it; a different stored
    /// value means someone else changed the history (optimistic concurrency, FEATURES §1).
    pub history_version: u64,
    /// Time of the last message handled (for the reset policy).
    pub last_active: DateTime<Utc>,
    /// Where this agent's approval questions are answered.
    pub approval: Arc<ApprovalSlot>,
    /// The chat's `/model` choice the agent runs on (`None`: the configured model).
    pub model_choice: Option<hermes_llm::ModelChoice>,
    /// The session whose row last got this chat's user and chat columns (Python's gateway
    /// peer, [`hermes_store::GatewayPeer`]); empty before the first record.
    pub peer_session: String,
    /// Fencing token of the session lease of this agent's last turn (0: none yet): when the
    /// next lease shows another holder ran a turn in between
    /// ([`hermes_agent::lease::TurnLease::others_ran_since`]), the history is reloaded first.
    pub lease_token: i64,
}

/// Bounded LRU of idle agents, keyed by session key (ARCHITECTURE §6).
pub struct AgentCache {
    inner: Mutex<LruCache<String, CachedAgent>>,
}

impl AgentCache {
    /// A cache holding at most `capacity` agents (at least one).
    pub fn new(capacity: usize) -> AgentCache {
        let cap = NonZeroUsize::new(capacity.max(1)).unwrap_or(NonZeroUsize::MIN);
        AgentCache {
            inner: Mutex::new(LruCache::new(cap)),
        }
    }

    /// Takes the agent of `key` out of the cache when it was built with `signature`; an
    /// agent built from another configuration is dropped.
    pub fn take(&self, key: &str, signature: &str) -> Option<CachedAgent> {
        let taken = self.inner.lock().ok()?.pop(key)?;
        if taken.signature == signature {
            return Some(taken);
        }
        released(1);
        None
    }

    /// Returns an agent to the cache; the least recently used one is dropped when full.
    pub fn put(&self, key: String, agent: CachedAgent) {
        let evicted = match self.inner.lock() {
            Ok(mut cache) => cache.push(key, agent),
            Err(_) => None,
        };
        // Dropped outside the lock: dropping an agent may stop its MCP servers.
        if evicted.is_some() {
            released(1);
        }
        drop(evicted);
    }

    /// Agents held now.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Whether no agent is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every cached agent.
    pub fn clear(&self) {
        let all: Vec<CachedAgent> = match self.inner.lock() {
            Ok(mut cache) => {
                let mut out = Vec::new();
                while let Some((_, v)) = cache.pop_lru() {
                    out.push(v);
                }
                out
            }
            Err(_) => Vec::new(),
        };
        released(all.len());
        drop(all);
    }
}

/// `count` agents left memory; their sessions live on in the store.
fn released(count: usize) {
    let metrics = hermes_telemetry::metrics();
    for _ in 0..count {
        metrics.session_transition(hermes_telemetry::SessionLifecycle::Released);
    }
}
