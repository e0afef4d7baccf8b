//! Issue 18 §4 for chat front ends: while another process (a second store handle on the
//! same state.db) holds a session's lease, the gateway's next turn on that session waits;
//! once released it runs, on the history the other process wrote (no interleaved rows).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use hermes_store::{LeaseAttempt, SessionStore};
use hermes_testkit::MockResponse;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_turn_waits_for_a_session_running_in_another_process() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("first answer"));
    h.mock.push(MockResponse::text("second answer"));
    let (adapter, inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    let cancel = CancellationToken::new();
    let runner = tokio::spawn({
        let gw = gw.clone();
        let cancel = cancel.clone();
        async move { gw.run(cancel).await }
    });
    inject.send(dm("42", "hi")).await.unwrap();
    wait_until("the first reply", || adapter.texts().len() == 1).await;
    idle(&gw).await;
    let key = "agent:main:telegram:dm:42";
    let sid = h.store.latest_session_for_key(key).unwrap().unwrap().id;

    // "Another process" takes the session and writes a turn of its own.
    let other = SessionStore::open(h.home.home().state_db()).unwrap();
    let lease = match other
        .acquire_lease(&sid, "api_server:other", Duration::from_secs(30))
        .unwrap()
    {
        LeaseAttempt::Acquired(l) => l,
        held => panic!("{held:?}"),
    };
    other
        .append_message(&sid, &hermes_protocol::Message::user("from the API"), None)
        .unwrap();
    other
        .append_message(
            &sid,
            &hermes_protocol::Message::assistant("API answer"),
            None,
        )
        .unwrap();

    inject.send(dm("42", "second")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(h.mock.captured().len(), 1, "the turn waited for the lease");
    assert_eq!(adapter.texts().len(), 1);

    assert!(other.release_lease(&lease).unwrap());
    wait_until("the second reply", || adapter.texts().len() == 2).await;
    assert_eq!(adapter.texts()[1], "second answer");
    // The waiting turn saw the other process's rows; the stored order is whole turns.
    let users = request_users(&h.mock.requests()[1]);
    assert!(
        users.iter().any(|u| u.contains("from the API")),
        "{users:?}"
    );
    assert_eq!(h.user_texts(key), vec!["hi", "from the API", "second"]);
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(30), runner)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
