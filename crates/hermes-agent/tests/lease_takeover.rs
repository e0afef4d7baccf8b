#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Session leases after a crash (issue 17 F11): a turn's lease whose holder process on this
//! machine is gone (killed with `kill -9`) is taken over at once instead of after its 30 s
//! expiry; a live holder's, or another machine's, still makes the session busy.

use std::sync::Arc;
use std::time::Duration;

use hermes_agent::lease::{LeaseError, TurnLease};
use hermes_store::{LeaseAttempt, SessionStore};

fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn host() -> String {
    hermes_protocol::owner::host_name()
}

fn hold(store: &SessionStore, session: &str, holder: &str) {
    match store
        .acquire_lease(session, holder, Duration::from_secs(30))
        .unwrap()
    {
        LeaseAttempt::Acquired(_) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_dead_local_holder_is_taken_over_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SessionStore::open(dir.path().join("state.db")).unwrap());
    let dead = format!("cli:{}:pid{}:0", host(), dead_pid());
    hold(&store, "s-dead", &dead);
    let lease = tokio::time::timeout(
        Duration::from_secs(5),
        TurnLease::try_acquire(&store, "s-dead", "cli"),
    )
    .await
    .expect("no wait for the lease to expire")
    .expect("the dead holder's lease is taken over");
    lease.release().await;

    // A live holder of this machine (this very process, another turn) keeps it.
    let live = format!("cli:{}:pid{}:999", host(), std::process::id());
    hold(&store, "s-live", &live);
    match TurnLease::try_acquire(&store, "s-live", "cli").await {
        Err(LeaseError::Busy { holder, .. }) => assert_eq!(holder, live),
        other => panic!("{other:?}"),
    }

    // Another machine's holder is never judged from here, whatever its pid.
    let remote = format!("api:some-other-host:pid{}:0", dead_pid());
    hold(&store, "s-remote", &remote);
    assert!(matches!(
        TurnLease::try_acquire(&store, "s-remote", "cli").await,
        Err(LeaseError::Busy { .. })
    ));
}
