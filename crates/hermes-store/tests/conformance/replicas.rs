//! What gateway replicas on one store rely on (issue 21 item 4): claims (inbound
//! de-duplication, cron fires), the listing of named leases, and the fencing of a holder
//! whose lease was taken over.

use std::sync::Arc;
use std::time::Duration;

use hermes_protocol::Message;
use hermes_store::{Lease, LeaseAttempt, NewSession, SessionStore, StoreError};

use super::Db;

fn acquired(a: LeaseAttempt) -> Lease {
    match a {
        LeaseAttempt::Acquired(l) => l,
        other => panic!("not acquired: {other:?}"),
    }
}

/// Runs `attempt` on `n` handles (as `n` processes) released at once; how many returned true.
fn race(db: &Db, n: usize, attempt: fn(usize, SessionStore) -> bool) -> usize {
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (barrier, store) = (barrier.clone(), db.open());
            std::thread::spawn(move || {
                barrier.wait();
                attempt(i, store)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|won| *won)
        .count()
}

/// A message delivered to two replicas at once is claimed by exactly one of them; a claim
/// is found again after a reopen (a restart), done or not.
pub fn an_inbound_message_is_claimed_once_across_handles(db: &Db) {
    let won = race(db, 6, |i, store| {
        store
            .claim("inbound", "telegram:42:1001", &format!("r{i}"), Some("{}"))
            .unwrap()
    });
    assert_eq!(won, 1, "exactly one replica takes the message");

    let again = db.open();
    assert!(
        !again
            .claim("inbound", "telegram:42:1001", "r9", None)
            .unwrap()
    );
    let claim = again
        .get_claim("inbound", "telegram:42:1001")
        .unwrap()
        .unwrap();
    assert!(claim.done_at.is_none());
    assert_eq!(claim.payload.as_deref(), Some("{}"));
    // Scopes are separate: the same key in another scope is a new claim.
    assert!(again.claim("cron", "telegram:42:1001", "r9", None).unwrap());
}

/// Open claims are listed oldest first; done ones are not, and lose their payload; a
/// withdrawn claim can be made again; only the holder withdraws.
pub fn claims_are_finished_listed_and_withdrawn(db: &Db) {
    let s = db.open();
    assert!(s.claim("inbound", "k1", "a", Some("one")).unwrap());
    std::thread::sleep(Duration::from_millis(5));
    assert!(s.claim("inbound", "k2", "a", Some("two")).unwrap());
    std::thread::sleep(Duration::from_millis(5));
    assert!(s.claim("inbound", "k3", "b", None).unwrap());
    let open: Vec<String> = s
        .open_claims("inbound", 10)
        .unwrap()
        .into_iter()
        .map(|c| c.key)
        .collect();
    assert_eq!(open, ["k1", "k2", "k3"]);
    assert_eq!(s.open_claims("inbound", 2).unwrap().len(), 2);

    assert!(s.finish_claim("inbound", "k1").unwrap());
    assert!(!s.finish_claim("inbound", "k1").unwrap(), "finished once");
    let done = s.get_claim("inbound", "k1").unwrap().unwrap();
    assert!(done.done_at.is_some());
    assert_eq!(done.payload, None);
    assert!(
        !s.claim("inbound", "k1", "c", None).unwrap(),
        "a done claim still dedups"
    );

    assert!(
        !s.release_claim("inbound", "k2", "b").unwrap(),
        "not b's claim"
    );
    assert!(s.release_claim("inbound", "k2", "a").unwrap());
    assert!(s.get_claim("inbound", "k2").unwrap().is_none());
    assert!(
        s.claim("inbound", "k2", "c", None).unwrap(),
        "claimable again"
    );

    let open: Vec<String> = s
        .open_claims("inbound", 10)
        .unwrap()
        .into_iter()
        .map(|c| c.key)
        .collect();
    assert_eq!(open, ["k3", "k2"]);
    assert!(s.open_claims("cron", 10).unwrap().is_empty());
}

/// A dead holder's open claim is adopted by exactly one of several replicas at once; a
/// done claim cannot be adopted; old done claims are pruned, open ones never.
pub fn an_orphaned_claim_is_adopted_once_and_old_done_claims_are_pruned(db: &Db) {
    let s = db.open();
    assert!(s.claim("inbound", "orphan", "dead", Some("msg")).unwrap());
    let won = race(db, 4, |i, store| {
        store
            .adopt_claim("inbound", "orphan", "dead", &format!("live{i}"))
            .unwrap()
    });
    assert_eq!(won, 1);
    let adopted = s.get_claim("inbound", "orphan").unwrap().unwrap();
    assert!(adopted.holder.starts_with("live"));
    assert_eq!(
        adopted.payload.as_deref(),
        Some("msg"),
        "the payload goes along"
    );

    assert!(s.claim("inbound", "finished", "dead", None).unwrap());
    assert!(s.finish_claim("inbound", "finished").unwrap());
    assert!(
        !s.adopt_claim("inbound", "finished", "dead", "live")
            .unwrap()
    );

    let future = 4_000_000_000.0;
    assert_eq!(s.prune_claims(future).unwrap(), 1, "only the done claim");
    assert!(s.get_claim("inbound", "finished").unwrap().is_none());
    assert!(s.get_claim("inbound", "orphan").unwrap().is_some());
    assert_eq!(s.prune_claims(0.0).unwrap(), 0);
}

/// Named leases (`replica:…`, `leader:…`) are listed by prefix with their holders; released
/// ones are not; `_` and `%` in a prefix are literal.
pub fn named_leases_are_listed_by_prefix(db: &Db) {
    let s = db.open();
    let ttl = Duration::from_secs(30);
    let a = acquired(
        s.acquire_lease("replica:host-a:1:aa", "host-a:1:aa", ttl)
            .unwrap(),
    );
    acquired(
        s.acquire_lease("replica:host-b:2:bb", "host-b:2:bb", ttl)
            .unwrap(),
    );
    acquired(
        s.acquire_lease("leader:telegram", "host-a:1:aa", ttl)
            .unwrap(),
    );
    acquired(s.acquire_lease("replicaXsession", "x", ttl).unwrap());
    let names = |prefix: &str| -> Vec<String> {
        s.leases(prefix)
            .unwrap()
            .into_iter()
            .map(|l| l.session_id)
            .collect()
    };
    assert_eq!(
        names("replica:"),
        ["replica:host-a:1:aa", "replica:host-b:2:bb"]
    );
    assert_eq!(names("leader:"), ["leader:telegram"]);
    assert_eq!(
        names("replica_"),
        Vec::<String>::new(),
        "`_` is not a wildcard"
    );
    let leader = &s.leases("leader:").unwrap()[0];
    assert_eq!(leader.holder, "host-a:1:aa");
    assert!(s.release_lease(&a).unwrap());
    assert_eq!(names("replica:"), ["replica:host-b:2:bb"]);
    assert_eq!(names("").len(), 3);
}

/// Taking over an expired lease fences the old holder off: its next checked write fails
/// with `HistoryChanged` (it would have interleaved with the new holder's turn), while the
/// new holder, which reloads, writes on. A lease handed over after a release changes
/// nothing.
pub fn a_taken_over_holder_cannot_write_into_the_session(db: &Db) {
    let s = db.open();
    s.create_session(&NewSession {
        id: "fenced".into(),
        source: "telegram".into(),
        model: "m".into(),
        provider: "p".into(),
        ..NewSession::default()
    })
    .unwrap();
    let version = |id: &str| s.get_session(id).unwrap().unwrap().history_version;

    // A clean hand-over keeps the version: the next holder's writes go on.
    let first = acquired(
        s.acquire_lease("fenced", "replica-a", Duration::from_secs(30))
            .unwrap(),
    );
    let v0 = version("fenced");
    s.append_message_checked("fenced", &Message::user("one"), None, v0)
        .unwrap();
    assert!(s.release_lease(&first).unwrap());
    acquired(
        s.acquire_lease("fenced", "replica-b", Duration::from_millis(20))
            .unwrap(),
    );
    assert_eq!(version("fenced"), v0);

    // replica-b stalls past its lease; replica-c takes the session over.
    std::thread::sleep(Duration::from_millis(60));
    acquired(
        s.acquire_lease("fenced", "replica-c", Duration::from_secs(30))
            .unwrap(),
    );
    let v1 = version("fenced");
    assert!(v1 > v0, "a takeover moves the history version on");
    match s.append_message_checked("fenced", &Message::user("stale"), None, v0) {
        Err(StoreError::HistoryChanged { .. }) => {}
        other => panic!("the fenced-off holder wrote: {other:?}"),
    }
    s.append_message_checked("fenced", &Message::user("two"), None, v1)
        .unwrap();
    let texts: Vec<String> = s
        .load_messages("fenced")
        .unwrap()
        .into_iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(texts, ["one", "two"]);

    // Breaking a lease fences its holder off too; a named lease that is no session is fine.
    let v2 = version("fenced");
    assert!(s.break_lease("fenced").unwrap());
    assert!(version("fenced") > v2);
    let leader = acquired(
        s.acquire_lease("leader:slack", "a", Duration::from_millis(10))
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(30));
    acquired(
        s.acquire_lease("leader:slack", "b", Duration::from_secs(30))
            .unwrap(),
    );
    assert!(s.get_session("leader:slack").unwrap().is_none());
    let _ = leader;
}

/// Shared documents: created once, replaced only from the version read (a writer that lost
/// the race is told, not silently overwritten), seen by every handle.
pub fn documents_are_replaced_only_from_the_version_read(db: &Db) {
    let a = db.open();
    let b = db.open();
    assert_eq!(a.document("pairing", "state").unwrap(), None);
    assert!(
        a.put_document("pairing", "state", "{\"v\":1}", None)
            .unwrap()
    );
    assert!(
        !b.put_document("pairing", "state", "{\"v\":\"b\"}", None)
            .unwrap(),
        "exists"
    );
    let seen = b.document("pairing", "state").unwrap().unwrap();
    assert_eq!((seen.body.as_str(), seen.version), ("{\"v\":1}", 1));
    assert!(
        b.put_document("pairing", "state", "{\"v\":2}", Some(1))
            .unwrap()
    );
    assert!(
        !a.put_document("pairing", "state", "{\"v\":\"stale\"}", Some(1))
            .unwrap()
    );
    let now = a.document("pairing", "state").unwrap().unwrap();
    assert_eq!((now.body.as_str(), now.version), ("{\"v\":2}", 2));
    // Scopes and names are separate documents.
    assert_eq!(a.document("pairing", "other").unwrap(), None);
    assert_eq!(a.document("other", "state").unwrap(), None);
}

/// Eight handles each add themselves to one document with read, change, compare-and-replace
/// (retrying when they lose the race): every addition lands.
pub fn concurrent_document_updates_all_land(db: &Db) {
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (barrier, store) = (barrier.clone(), db.open());
            std::thread::spawn(move || {
                barrier.wait();
                loop {
                    let current = store.document("t", "list").unwrap();
                    let mut items: Vec<String> = current
                        .as_ref()
                        .map(|d| serde_json::from_str(&d.body).unwrap())
                        .unwrap_or_default();
                    items.push(format!("h{i}"));
                    let body = serde_json::to_string(&items).unwrap();
                    if store
                        .put_document("t", "list", &body, current.map(|d| d.version))
                        .unwrap()
                    {
                        break;
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let doc = db.open().document("t", "list").unwrap().unwrap();
    let mut items: Vec<String> = serde_json::from_str(&doc.body).unwrap();
    items.sort();
    assert_eq!(items, (0..8).map(|i| format!("h{i}")).collect::<Vec<_>>());
    assert_eq!(doc.version, 8);
}
