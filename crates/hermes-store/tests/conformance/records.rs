//! Leases, cron runs, model choice, titles, concurrency and the health checks.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hermes_protocol::Message;
use hermes_store::{
    CronDelivery, CronRun, Lease, LeaseAttempt, NewSession, SessionStore, StoreError,
};

use super::Db;

fn session(store: &SessionStore, id: &str) {
    store
        .create_session(&NewSession {
            id: id.into(),
            source: "telegram".into(),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .unwrap();
}

fn acquired(a: LeaseAttempt) -> Lease {
    match a {
        LeaseAttempt::Acquired(l) => l,
        other => panic!("not acquired: {other:?}"),
    }
}

/// Two handles on one database behave like two processes.
pub fn one_lease_holder_at_a_time_across_handles_with_increasing_tokens(db: &Db) {
    let a = db.open();
    let b = db.open();
    let ttl = Duration::from_secs(30);
    let la = acquired(a.acquire_lease("s1", "proc-a", ttl).unwrap());
    match b.acquire_lease("s1", "proc-b", ttl).unwrap() {
        LeaseAttempt::Held {
            holder, expires_in, ..
        } => {
            assert_eq!(holder, "proc-a");
            assert!(expires_in <= ttl && expires_in > Duration::from_secs(25));
        }
        other => panic!("{other:?}"),
    }
    acquired(b.acquire_lease("s2", "proc-b", ttl).unwrap());
    let mut la2 = la.clone();
    assert!(a.renew_lease(&mut la2, ttl).unwrap());
    assert!(la2.expires_at >= la.expires_at);
    assert!(a.release_lease(&la2).unwrap());
    let lb = acquired(b.acquire_lease("s1", "proc-b", ttl).unwrap());
    assert!(lb.token > la.token, "fencing token increases");
    let mut stale = la.clone();
    assert!(!a.renew_lease(&mut stale, ttl).unwrap());
    assert!(!a.release_lease(&stale).unwrap());
}

pub fn an_expired_lease_is_taken_over_and_the_old_holder_fenced_off(db: &Db) {
    let a = db.open();
    let mut dead = acquired(
        a.acquire_lease("s1", "crashed", Duration::from_millis(20))
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(60));
    let next = acquired(
        a.acquire_lease("s1", "alive", Duration::from_secs(30))
            .unwrap(),
    );
    assert_eq!(next.token, dead.token + 1);
    assert!(a.break_lease("s1").unwrap());
    assert!(!a.break_lease("s1").unwrap());
    assert!(!a.renew_lease(&mut dead, Duration::from_secs(30)).unwrap());
    assert!(!a.release_lease(&dead).unwrap());
}

/// Eight handles race for one session's lease: exactly one wins.
pub fn concurrent_acquirers_get_one_lease(db: &Db) {
    let stores: Vec<SessionStore> = (0..8).map(|_| db.open()).collect();
    let barrier = Arc::new(std::sync::Barrier::new(stores.len()));
    let handles: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(i, store)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                store
                    .acquire_lease("contended", &format!("holder-{i}"), Duration::from_secs(30))
                    .unwrap()
            })
        })
        .collect();
    let won = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|a| matches!(a, LeaseAttempt::Acquired(_)))
        .count();
    assert_eq!(won, 1);
}

fn run(id: &str, job: &str, at: &str, status: &str) -> CronRun {
    CronRun {
        run_id: id.into(),
        job_id: job.into(),
        job_name: format!("job {job}"),
        due_at: Some(at.parse().unwrap()),
        started_at: at.parse().unwrap(),
        duration_ms: 1500,
        status: status.into(),
        error: (status == "failed").then(|| "model unreachable".into()),
        output_path: Some(format!("cron/output/{job}/x.md")),
        deliveries: vec![
            CronDelivery {
                target: "local".into(),
                ok: true,
                detail: "saved".into(),
            },
            CronDelivery {
                target: "telegram:1".into(),
                ok: false,
                detail: "HTTP 502 (after 3 attempts)".into(),
            },
        ],
        session_id: None,
    }
}

pub fn cron_runs_round_trip_newest_first_and_import_is_idempotent(db: &Db) {
    let store = db.open();
    let a = run("r1", "j1", "2026-01-01T07:00:00Z", "ok");
    let b = run("r2", "j2", "2026-01-01T08:00:00Z", "failed");
    let c = run("r3", "j1", "2026-01-02T07:00:00Z", "timeout");
    assert_eq!(
        store
            .record_cron_runs(&[a.clone(), b.clone(), c.clone()])
            .unwrap(),
        3
    );
    assert_eq!(store.record_cron_runs(&[a.clone(), b.clone()]).unwrap(), 0);
    assert_eq!(
        store.cron_runs(None, 10).unwrap(),
        vec![c.clone(), b.clone(), a.clone()]
    );
    assert_eq!(store.cron_runs(Some("j1"), 10).unwrap(), vec![c.clone(), a]);
    assert_eq!(store.cron_runs(None, 1).unwrap(), vec![c.clone()]);
    assert_eq!(store.latest_cron_runs().unwrap(), vec![c.clone(), b]);
    let manual = CronRun {
        run_id: "r4".into(),
        due_at: None,
        ..run("r4", "j3", "2026-01-03T07:00:00Z", "ok")
    };
    store.record_cron_run(&manual).unwrap();
    assert_eq!(store.cron_runs(Some("j3"), 5).unwrap(), vec![manual]);
}

pub fn a_model_choice_is_kept_with_the_session_and_can_be_cleared(db: &Db) {
    let store = db.open();
    session(&store, "s1");
    assert_eq!(store.model_choice("s1").unwrap(), None);
    let choice = r#"{"provider":"anthropic","model":"claude-x"}"#;
    store
        .set_model_choice("s1", "claude-x", "anthropic", Some(choice))
        .unwrap();
    assert_eq!(store.model_choice("s1").unwrap().as_deref(), Some(choice));
    let record = store.get_session("s1").unwrap().unwrap();
    assert_eq!(
        (record.model.as_str(), record.provider.as_str()),
        ("claude-x", "anthropic")
    );
    store
        .set_model_choice("s1", "first", "custom", None)
        .unwrap();
    assert_eq!(store.model_choice("s1").unwrap(), None);
    assert_eq!(store.model_choice("nope").unwrap(), None);
    assert!(matches!(
        store.set_model_choice("nope", "m", "p", None),
        Err(StoreError::SessionNotFound { .. })
    ));
}

pub fn repeated_titles_are_numbered(db: &Db) {
    let store = db.open();
    for id in ["a", "b", "c"] {
        session(&store, id);
    }
    assert_eq!(store.set_title_numbered("a", "Plans").unwrap(), "Plans");
    assert_eq!(store.set_title_numbered("b", "Plans").unwrap(), "Plans #2");
    assert_eq!(store.set_title_numbered("c", "Plans").unwrap(), "Plans #3");
    assert_eq!(store.set_title_numbered("a", "Plans").unwrap(), "Plans");
    assert!(matches!(
        store.set_title("c", "Plans"),
        Err(StoreError::TitleTaken { other, .. }) if other == "a"
    ));
    assert_eq!(store.find_session("Plans #2").unwrap().unwrap().id, "b");
    assert!(matches!(
        store.set_title_numbered("nope", "x"),
        Err(StoreError::SessionNotFound { .. })
    ));
}

/// Four threads on two handles append to one session at once: every acknowledged message is
/// stored exactly once, in a consistent count.
pub fn concurrent_appends_from_two_handles_all_commit_once(db: &Db) {
    let a = db.open();
    let b = db.open();
    session(&a, "s");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = if t % 2 == 0 { a.clone() } else { b.clone() };
            std::thread::spawn(move || {
                (0..25)
                    .map(|i| {
                        store
                            .append_message("s", &Message::user(format!("t{t} m{i}")), None)
                            .unwrap()
                    })
                    .collect::<Vec<i64>>()
            })
        })
        .collect();
    let mut acknowledged: Vec<i64> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    acknowledged.sort();
    let stored: Vec<i64> = a.load_messages("s").unwrap().iter().map(|m| m.id).collect();
    assert_eq!(stored, acknowledged);
    let mut texts: Vec<String> = a
        .load_messages("s")
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect();
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), 100);
    assert_eq!(a.get_session("s").unwrap().unwrap().message_count, 100);
}

pub fn compaction_replaces_the_active_tail_in_one_transaction(db: &Db) {
    let store = db.open();
    session(&store, "s1");
    let ids: Vec<i64> = (0..6)
        .map(|i| {
            store
                .append_message("s1", &Message::user(format!("needle{i} text")), None)
                .unwrap()
        })
        .collect();
    let new = vec![
        Message::user("summary of 2..4"),
        Message::user("needle5 text"),
    ];
    let new_ids = store.replace_active_from("s1", Some(ids[2]), &new).unwrap();
    assert_eq!(new_ids.len(), 2);
    let active: Vec<String> = store
        .load_messages("s1")
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(
        active,
        vec![
            "needle0 text",
            "needle1 text",
            "summary of 2..4",
            "needle5 text"
        ]
    );
    assert_eq!(store.load_all_messages("s1").unwrap().len(), 8);
    let rec = store.get_session("s1").unwrap().unwrap();
    assert_eq!((rec.message_count, rec.history_version), (4, 1));
    let hits = store
        .search(&hermes_store::SearchQuery::new("needle3"))
        .unwrap();
    assert!(
        hits.iter().any(|h| !h.active),
        "inactive message still found"
    );
    store.set_system_prompt("s1", "new prompt").unwrap();
    assert_eq!(
        store.get_session("s1").unwrap().unwrap().system_prompt,
        "new prompt"
    );
    assert!(store.set_system_prompt("nope", "x").is_err());
    assert!(store.replace_active_from("nope", None, &new).is_err());
}

pub fn health_checks_pass_on_a_new_store(db: &Db) {
    let store = db.open();
    session(&store, "s");
    store
        .append_message("s", &Message::user("hello"), None)
        .unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    assert!(store.schema_check().unwrap().is_current());
    assert!(store.search_index_check().unwrap().in_sync());
    store.write_probe().unwrap();
    assert_eq!(store.rebuild_search_index().unwrap(), 1);
    store.release_memory().unwrap();
    let stats = store.stats().unwrap();
    assert_eq!((stats.sessions, stats.messages), (1, 1));
    assert!(stats.db_bytes > 0);
    // The probe left nothing behind.
    assert_eq!(store.list_sessions(10, 0).unwrap().len(), 1);
    assert!(!store.location().contains("password"));
}

/// The blocking API works from plain threads and from an async runtime's worker thread
/// (where a PostgreSQL client must not start a runtime of its own).
pub fn a_store_is_usable_from_any_thread(db: &Db) {
    let store = db.open();
    session(&store, "s");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let inside = store.clone();
    let id = rt.block_on(async move {
        inside
            .append_message("s", &Message::user("from async"), None)
            .unwrap()
    });
    let from_thread = store.clone();
    let loaded = std::thread::spawn(move || from_thread.load_messages("s").unwrap())
        .join()
        .unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].id, id);
    let _: Option<DateTime<Utc>> = store.last_activity("s").unwrap();
    // Dropping the last handle inside an async context must not panic either.
    rt.block_on(async move { drop(store) });
}
