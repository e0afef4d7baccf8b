//! Gateway replicas on one store (issue 21 item 4): several `hermes gateway run` processes
//! on one PostgreSQL database (or one `state.db`) serve the same platforms without doubling
//! or losing a message.
//!
//! - Each process is a [`Replica`] with an id (`<host>:<pid>:<random>`) and a named lease
//!   `replica:<id>` in the store, renewed every third of [`REPLICA_TTL`]; a replica whose
//!   lease expired is dead.
//! - Every inbound message with a platform message id is claimed in the store before it is
//!   queued (scope [`INBOUND`], key [`inbound_key`], the message as the payload): a second
//!   delivery — to another replica, or to this one after a restart — finds the claim and is
//!   dropped. The claim is marked done when the turn that took the message ended.
//! - An open claim whose holder is dead is adopted by a live replica ([`Replica::orphans`],
//!   [`Replica::adopt`]), which runs the message from its payload: an acknowledged message
//!   is not lost with the process that acknowledged it (it may run a second time only when
//!   its first turn was cut mid-way by the crash, and it is then answered once).
//! - Single-connection platforms (a bot token allows one long-polling or socket
//!   connection) are held by one replica at a time under a leader lease
//!   `leader:<platform>` ([`leader_name`]).

use crate::runner::observe::ConnectionState;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_store::{ClaimRecord, Lease, LeaseAttempt, SessionStore, StoreError};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::platform::{InboundMessage, PlatformAdapter};

/// How long a replica's (and a leader's) lease lasts without a heartbeat.
pub const REPLICA_TTL: Duration = Duration::from_secs(15);
/// Claim scope of inbound messages.
pub const INBOUND: &str = "inbound";
/// How long done claims are kept (a platform redelivering later than this is not caught).
pub const KEEP_DONE: Duration = Duration::from_secs(7 * 24 * 3600);
/// Name prefix of replica leases.
pub const REPLICA_PREFIX: &str = "replica:";
/// Name prefix of leader leases.
pub const LEADER_PREFIX: &str = "leader:";

/// The de-duplication key of `msg`: `<platform>:<chat>:<message id>`; `None` when the
/// platform gave no message id (such messages cannot be recognised when repeated).
pub fn inbound_key(msg: &InboundMessage) -> Option<String> {
    let id = msg.message_id.as_deref().filter(|s| !s.is_empty())?;
    Some(format!(
        "{}:{}:{id}",
        msg.source.platform,
        msg.source.chat_id.as_deref().unwrap_or("")
    ))
}

/// The leader lease name of `platform`.
pub fn leader_name(platform: &str) -> String {
    format!("{LEADER_PREFIX}{platform}")
}

/// This process as one of the gateway replicas on a store. Blocking methods (they call the
/// store); async callers use `spawn_blocking`.
#[derive(Debug)]
pub struct Replica {
    id: String,
    store: Arc<SessionStore>,
    lease: Mutex<Option<Lease>>,
}

impl Replica {
    /// A replica of this process on `store` (not yet registered: [`Replica::beat`]).
    pub fn new(store: Arc<SessionStore>) -> Replica {
        let host = hostname();
        let suffix: u32 = rand::random();
        Replica {
            id: format!("{host}:{}:{suffix:08x}", std::process::id()),
            store,
            lease: Mutex::new(None),
        }
    }

    /// The replica id (`<host>:<pid>:<random>`), the holder of its claims.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn lease_name(&self) -> String {
        format!("{REPLICA_PREFIX}{}", self.id)
    }

    /// Registers or renews this replica's lease (the heartbeat). A lease lost while the
    /// process was stalled is taken again.
    ///
    /// Errors: the store's.
    pub fn beat(&self) -> Result<(), StoreError> {
        let mut held = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lease) = held.as_mut()
            && self.store.renew_lease(lease, REPLICA_TTL)?
        {
            return Ok(());
        }
        match self
            .store
            .acquire_lease(&self.lease_name(), &self.id, REPLICA_TTL)?
        {
            LeaseAttempt::Acquired(lease) => *held = Some(lease),
            LeaseAttempt::Held { holder, .. } => {
                // Cannot happen with a unique id; said rather than hidden.
                tracing::warn!(replica = %self.id, holder, "replica lease held by another holder");
            }
        }
        Ok(())
    }

    /// Gives the replica lease back (a clean stop: its open claims may be adopted at once).
    pub fn leave(&self) {
        let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(lease) = lease
            && let Err(e) = self.store.release_lease(&lease)
        {
            tracing::warn!(error = %e, "could not release the replica lease (it expires)");
        }
    }

    /// The ids of the replicas whose lease has not expired.
    ///
    /// Errors: the store's.
    pub fn live_replicas(&self) -> Result<HashSet<String>, StoreError> {
        let now = unix_now();
        Ok(self
            .store
            .leases(REPLICA_PREFIX)?
            .into_iter()
            .filter(|l| l.expires_at > now)
            .map(|l| l.holder)
            .collect())
    }

    /// Claims `msg` for this replica. `Ok(true)`: it is new here and everywhere; `Ok(false)`:
    /// a replica (this one included) took it before. Messages without a key are always new.
    ///
    /// Errors: the store's.
    pub fn claim(&self, msg: &InboundMessage) -> Result<bool, StoreError> {
        let Some(key) = inbound_key(msg) else {
            return Ok(true);
        };
        let payload = serde_json::to_string(msg).ok();
        self.store
            .claim(INBOUND, &key, &self.id, payload.as_deref())
    }

    /// Marks the claims of `keys` done.
    pub fn finish(&self, keys: &[String]) {
        for key in keys {
            if let Err(e) = self.store.finish_claim(INBOUND, key) {
                tracing::warn!(key, error = %e, "could not mark a message done");
            }
        }
    }

    /// Withdraws this replica's claims of `keys` (messages saved for the next start, which
    /// claims them again).
    pub fn release(&self, keys: &[String]) {
        for key in keys {
            if let Err(e) = self.store.release_claim(INBOUND, key, &self.id) {
                tracing::warn!(key, error = %e, "could not withdraw a message claim");
            }
        }
    }

    /// Open inbound claims of dead replicas (at most `limit`, oldest first).
    ///
    /// Errors: the store's.
    pub fn orphans(&self, limit: usize) -> Result<Vec<ClaimRecord>, StoreError> {
        let live = self.live_replicas()?;
        Ok(self
            .store
            .open_claims(INBOUND, limit)?
            .into_iter()
            .filter(|c| c.holder != self.id && !live.contains(&c.holder))
            .collect())
    }

    /// Takes `orphan` over; the message to run when this replica won it (another may adopt
    /// the same claim at once: exactly one wins). A payload that is not a message is marked
    /// done and reported.
    ///
    /// Errors: the store's.
    pub fn adopt(&self, orphan: &ClaimRecord) -> Result<Option<InboundMessage>, StoreError> {
        if !self
            .store
            .adopt_claim(INBOUND, &orphan.key, &orphan.holder, &self.id)?
        {
            return Ok(None);
        }
        let msg = orphan
            .payload
            .as_deref()
            .and_then(|p| serde_json::from_str::<InboundMessage>(p).ok());
        if msg.is_none() {
            tracing::error!(key = %orphan.key, "an adopted message has no readable payload; dropped");
            self.store.finish_claim(INBOUND, &orphan.key)?;
        }
        Ok(msg)
    }

    /// Deletes done claims older than [`KEEP_DONE`]; returns how many.
    ///
    /// Errors: the store's.
    pub fn prune(&self) -> Result<usize, StoreError> {
        self.store
            .prune_claims(unix_now() - KEEP_DONE.as_secs_f64())
    }
}

/// Runs `adapter` (a single-connection platform) whenever this replica (`holder`) holds its
/// leader lease `leader:<platform>`, until `cancel`: the lease (lasting `ttl`, the gateway
/// uses [`REPLICA_TTL`]) is tried every third of `ttl`; while held it is renewed at that
/// pace, and when a renewal fails the adapter is stopped (another replica takes over once
/// the lease expires). A replica that dies stops renewing, so the connection moves to a live
/// one within `ttl` and a third. `report` is told the connection's state as it changes
/// (running while held, standby while another replica holds it, failed when the adapter
/// stopped with an error).
pub async fn run_as_leader(
    adapter: Arc<dyn PlatformAdapter>,
    inbound: mpsc::Sender<InboundMessage>,
    cancel: CancellationToken,
    store: Arc<SessionStore>,
    holder: String,
    ttl: Duration,
    report: impl Fn(ConnectionState) + Send,
) {
    let name = leader_name(adapter.name());
    let step = ttl / 3;
    let mut announced_follower = false;
    loop {
        let (s, n, h) = (store.clone(), name.clone(), holder.clone());
        let attempt = tokio::task::spawn_blocking(move || s.acquire_lease(&n, &h, ttl)).await;
        match attempt {
            Ok(Ok(LeaseAttempt::Acquired(lease))) => {
                tracing::info!(
                    platform = adapter.name(),
                    "this replica holds the platform connection"
                );
                announced_follower = false;
                report(ConnectionState::Running);
                let run = cancel.child_token();
                // The heartbeat runs in this task, beside the connection: whatever ends this
                // task (the process dying included) ends the renewals too.
                let beat = renew_until_lost(store.clone(), lease.clone(), run.clone(), ttl);
                let work = async {
                    let failed = adapter.run(inbound.clone(), run.clone()).await.err();
                    if let Some(e) = &failed {
                        tracing::error!(platform = adapter.name(), error = %e, "platform adapter stopped");
                    }
                    run.cancel();
                    failed.is_some()
                };
                let (failed, ()) = tokio::join!(work, beat);
                report(if failed {
                    ConnectionState::Failed
                } else {
                    ConnectionState::Standby
                });
                let s = store.clone();
                let _ = tokio::task::spawn_blocking(move || s.release_lease(&lease)).await;
            }
            Ok(Ok(LeaseAttempt::Held { holder: leader, .. })) => {
                if !announced_follower {
                    tracing::info!(
                        platform = adapter.name(),
                        leader,
                        "another replica holds the platform connection"
                    );
                    announced_follower = true;
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(platform = adapter.name(), error = %e, "leader lease failed")
            }
            Err(e) => {
                tracing::warn!(platform = adapter.name(), error = %e, "leader lease task failed")
            }
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(step) => {}
        }
    }
}

/// Renews `lease` (lasting `ttl`) every third of `ttl`; cancels `lost` when it is no longer
/// held or the store stopped answering for longer than the lease lasts.
async fn renew_until_lost(
    store: Arc<SessionStore>,
    mut lease: Lease,
    lost: CancellationToken,
    ttl: Duration,
) {
    let mut last_ok = std::time::Instant::now();
    loop {
        tokio::select! {
            () = lost.cancelled() => return,
            () = tokio::time::sleep(ttl / 3) => {}
        }
        let s = store.clone();
        let mut l = lease.clone();
        let renewed =
            tokio::task::spawn_blocking(move || s.renew_lease(&mut l, ttl).map(|ok| (ok, l))).await;
        match renewed {
            Ok(Ok((true, l))) => {
                lease = l;
                last_ok = std::time::Instant::now();
            }
            Ok(Ok((false, _))) => {
                tracing::warn!(lease = %lease.session_id, "leader lease lost; stopping the platform connection");
                lost.cancel();
                return;
            }
            _ if last_ok.elapsed() >= ttl => {
                tracing::warn!(lease = %lease.session_id, "leader lease not renewed in time; stopping the platform connection");
                lost.cancel();
                return;
            }
            _ => {}
        }
    }
}

/// Unix seconds now.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_string())
}
