//! Pairing files are changed under a cross-process lock (issue 7): two store handles on the
//! same directory — the gateway issuing codes and `hermes pairing approve` in another
//! process — interleave without losing each other's writes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_gateway::auth::{CodeRequest, PairingStore};

const ROUNDS: usize = 40;

#[test]
fn two_handles_interleaving_requests_and_approvals_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pairing");
    let workers: Vec<_> = (0..2)
        .map(|t| {
            // Each thread has its own handle, as each process would.
            let store = PairingStore::new(&path);
            std::thread::spawn(move || {
                for i in 0..ROUNDS {
                    let user = format!("{t}-{i}");
                    let now = 1_000_000;
                    let code = match store.request_code("telegram", &user, None, now).unwrap() {
                        CodeRequest::Issued(code) => code,
                        other => panic!("user {user}: expected a code, got {other:?}"),
                    };
                    let approved = store.approve("telegram", &code, now).unwrap();
                    assert_eq!(approved.user_id, user);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let store = PairingStore::new(&path);
    let overview = store.overview(1_000_000).unwrap();
    assert_eq!(overview.approved.len(), 2 * ROUNDS, "every approval kept");
    assert!(overview.pending.is_empty(), "{:?}", overview.pending);
    for t in 0..2 {
        for i in 0..ROUNDS {
            assert!(store.is_approved("telegram", &format!("{t}-{i}")).unwrap());
        }
    }
}
