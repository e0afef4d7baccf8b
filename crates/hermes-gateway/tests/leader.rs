#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! Single-connection platforms on several replicas (issue 21 item 4): under the leader lease
//! `leader:<platform>` one replica at a time holds the platform's connection, and when that
//! replica dies (stops renewing without releasing) a live one takes the connection over
//! within the lease's lifetime. Three leader loops on one store stand for three replicas; the
//! adapter counts how many of its connections are open at once.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hermes_gateway::replica::{leader_name, run_as_leader};
use hermes_gateway::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformError, PlatformLimits,
    SentMessage,
};
use hermes_store::SessionStore;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A single-connection platform whose `run` holds one "connection" until cancelled.
#[derive(Default)]
struct OneConnection {
    open: AtomicUsize,
    most_at_once: AtomicUsize,
    runs: AtomicUsize,
}

/// Closes a counted connection when its `run` ends or is dropped (its task aborted).
struct Open<'a>(&'a AtomicUsize);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for OneConnection {
    fn name(&self) -> &str {
        "solo"
    }
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: 4096,
            length_unit: LengthUnit::Chars,
            markup: Markup::Plain,
            supports_edit: false,
        }
    }
    async fn run(
        &self,
        _inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let now = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        let _open = Open(&self.open);
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        self.runs.fetch_add(1, Ordering::SeqCst);
        cancel.cancelled().await;
        Ok(())
    }
    async fn send(&self, _t: &ChatTarget, _text: &str) -> Result<SentMessage, PlatformError> {
        Ok(SentMessage {
            message_id: "m".into(),
        })
    }
    async fn edit(&self, _t: &ChatTarget, _m: &SentMessage, _x: &str) -> Result<(), PlatformError> {
        Ok(())
    }
    async fn send_file(
        &self,
        _t: &ChatTarget,
        _p: &Path,
        _c: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        Ok(SentMessage {
            message_id: "f".into(),
        })
    }
    async fn typing(&self, _t: &ChatTarget) -> Result<(), PlatformError> {
        Ok(())
    }
    fn single_connection(&self) -> bool {
        true
    }
}

fn leader_of(store: &SessionStore) -> Option<String> {
    store
        .leases(&leader_name("solo"))
        .unwrap()
        .into_iter()
        .find(|l| l.session_id == leader_name("solo"))
        .map(|l| l.holder)
}

async fn wait_until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < within, "{what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_replica_holds_the_connection_and_a_live_one_takes_over_from_a_dead_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SessionStore::open(dir.path().join("state.db")).unwrap());
    let adapter = Arc::new(OneConnection::default());
    let ttl = Duration::from_millis(900);
    let (tx, _rx) = mpsc::channel(8);
    let cancel = CancellationToken::new();
    let mut replicas = Vec::new();
    for i in 0..3 {
        let task = tokio::spawn(run_as_leader(
            adapter.clone(),
            tx.clone(),
            cancel.child_token(),
            store.clone(),
            format!("replica-{i}"),
            ttl,
            |_| {},
        ));
        replicas.push(task);
    }
    wait_until("a leader connects", ttl * 3, || {
        adapter.open.load(Ordering::SeqCst) == 1
    })
    .await;
    // Several renewals later there is still exactly one connection, held by the leader.
    tokio::time::sleep(ttl * 2).await;
    assert_eq!(adapter.open.load(Ordering::SeqCst), 1);
    assert_eq!(
        adapter.runs.load(Ordering::SeqCst),
        1,
        "no reconnect while held"
    );
    let first = leader_of(&store).expect("the leader's lease is in the store");

    // The leader's process dies: its loop stops, its lease is neither renewed nor released.
    let dead: usize = first.trim_start_matches("replica-").parse().unwrap();
    let killed = replicas.remove(dead);
    killed.abort();
    let _ = killed.await;
    wait_until("the dead leader's connection is gone", ttl, || {
        adapter.open.load(Ordering::SeqCst) == 0
    })
    .await;
    // A live replica takes the connection over once the lease expires (lease + one try).
    wait_until("a live replica takes over", ttl * 2 + ttl / 2, || {
        adapter.open.load(Ordering::SeqCst) == 1
    })
    .await;
    let second = leader_of(&store).unwrap();
    assert_ne!(second, first, "the dead replica is not the leader");
    tokio::time::sleep(ttl).await;
    assert_eq!(
        adapter.most_at_once.load(Ordering::SeqCst),
        1,
        "never two connections at once"
    );
    assert_eq!(adapter.runs.load(Ordering::SeqCst), 2);

    // Stopping the gateway releases the lease.
    cancel.cancel();
    for task in replicas {
        let _ = task.await;
    }
    assert_eq!(adapter.open.load(Ordering::SeqCst), 0);
}
