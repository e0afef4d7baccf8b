#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! Case C21: another process holds the write lock for 3 s while this one writes.
//!
//! The second process is this test binary itself, re-run with only the ignored helper test
//! `lock_holder_process` selected and the database path in an environment variable.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hermes_protocol::Message;
use hermes_store::{NewSession, SessionStore};

const DB_ENV: &str = "HERMES_STORE_TEST_LOCK_DB";
const READY_ENV: &str = "HERMES_STORE_TEST_LOCK_READY";
const HOLD: Duration = Duration::from_secs(3);

/// Only does something when started by [`spawn_holder`]: takes the write lock
/// (`BEGIN IMMEDIATE`), signals through the ready file, holds it for 3 s, then commits.
#[test]
#[ignore = "helper process for case_c21; does nothing when run directly"]
fn lock_holder_process() {
    let (Ok(db), Ok(ready)) = (std::env::var(DB_ENV), std::env::var(READY_ENV)) else {
        return;
    };
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    conn.execute("UPDATE sessions SET title = 'held' WHERE id = 'pre'", [])
        .unwrap();
    std::fs::write(&ready, "locked").unwrap();
    std::thread::sleep(HOLD);
    conn.execute_batch("COMMIT").unwrap();
}

fn spawn_holder(db: &Path, ready: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "lock_holder_process",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(DB_ENV, db)
        .env(READY_ENV, ready)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (bounded, to detect a hang) until the holder says it has the lock.
fn wait_until_locked(child: &mut Child, ready: &Path) {
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "holder exited before locking"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "holder never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.into(),
        source: "gateway:telegram".into(),
        model: "m".into(),
        provider: "p".into(),
        ..NewSession::default()
    }
}

fn lock_is_held(db: &Path) -> bool {
    let probe = rusqlite::Connection::open(db).unwrap();
    probe.busy_timeout(Duration::ZERO).unwrap();
    let held = probe.execute_batch("BEGIN IMMEDIATE").is_err();
    if !held {
        probe.execute_batch("ROLLBACK").unwrap();
    }
    held
}

#[test]
fn case_c21_write_waits_out_a_lock_held_by_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let ready = dir.path().join("ready");
    let store = SessionStore::open(&db).unwrap();
    store.create_session(&session("pre")).unwrap();
    // A second handle with a budget shorter than the lock, to see the visible failure.
    let impatient = SessionStore::open(&db)
        .unwrap()
        .with_retry_budget(Duration::from_millis(300));

    let mut holder = spawn_holder(&db, &ready);
    wait_until_locked(&mut holder, &ready);
    assert!(
        lock_is_held(&db),
        "the other process must hold the write lock"
    );

    // A short budget gives up with a typed, visible error instead of silently dropping.
    let err = impatient.create_session(&session("early")).unwrap_err();
    assert!(err.is_busy(), "{err}");
    assert!(err.to_string().contains("locked"), "{err}");

    // The default budget outlasts the 3 s lock: proc_B_write_succeeds_after_lock_released.
    store
        .create_session(&session("20260101_120000_c21c21"))
        .unwrap();
    assert!(holder.wait().unwrap().success(), "holder process failed");

    // session_row_exists, and the holder's own write was not lost either.
    let rec = store.get_session("20260101_120000_c21c21").unwrap();
    assert!(rec.is_some());
    assert_eq!(
        store.get_session("pre").unwrap().unwrap().title.as_deref(),
        Some("held")
    );

    // persistence_disabled == false: both handles keep working after the busy period.
    impatient.create_session(&session("early")).unwrap();
    assert!(impatient.get_session("early").unwrap().is_some());
    let id = store
        .append_message(
            "20260101_120000_c21c21",
            &Message::user("still saving"),
            None,
        )
        .unwrap();
    assert!(id > 0);
    // Idempotent creation (INSERT OR IGNORE) after the fact.
    store
        .create_session(&session("20260101_120000_c21c21"))
        .unwrap();
    assert_eq!(
        store.load_messages("20260101_120000_c21c21").unwrap().len(),
        1
    );
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn writes_from_threads_sharing_one_file_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let main = SessionStore::open(&db).unwrap();
    main.create_session(&session("shared")).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let store = SessionStore::open(&db).unwrap();
                for i in 0..25 {
                    store
                        .append_message("shared", &Message::user(format!("t{t} m{i}")), None)
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(main.load_messages("shared").unwrap().len(), 100);
    assert_eq!(
        main.get_session("shared").unwrap().unwrap().message_count,
        100
    );
}

/// Whether this process holds a POSIX lock on `db`, as the kernel lists it for every other
/// process in `/proc/locks` (`<n>: POSIX ADVISORY READ <pid> <major:minor:inode> <start> <end>`).
fn process_holds_a_lock_on(db: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let inode = format!(":{} ", std::fs::metadata(db).unwrap().ino());
    let pid = format!(" {} ", std::process::id());
    std::fs::read_to_string("/proc/locks")
        .unwrap()
        .lines()
        .any(|l| l.contains("POSIX") && l.contains(&pid) && l.contains(&inode))
}

/// Opening a second store on the same file in one process (the gateway opens one per front
/// end) must not drop the first one's locks: POSIX advisory locks belong to the process, and
/// any `close()` of the file by the process releases them all, whatever descriptor they were
/// taken through. Without its SHARED lock on the database file, another process takes itself
/// for the last connection: SQLite 3.40 (the `sqlite3` shell, Python's `sqlite3` on Debian
/// 12, hence Python Hermes) then checkpoints and deletes the WAL when it closes, and every
/// later write of the open stores goes into the deleted file — lost, and invisible to every
/// other process (session leases included).
#[test]
fn a_second_store_in_the_process_keeps_the_first_ones_locks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let first = SessionStore::open(&db).unwrap();
    first.create_session(&session("kept")).unwrap();
    assert!(process_holds_a_lock_on(&db), "an open store holds a lock");
    let second = SessionStore::open(&db).unwrap();
    assert!(
        process_holds_a_lock_on(&db),
        "opening a second store released the process's lock on the database"
    );
    second
        .append_message("kept", &Message::user("from the second store"), None)
        .unwrap();
    drop(second);
    assert!(process_holds_a_lock_on(&db));
    assert_eq!(first.load_messages("kept").unwrap().len(), 1);
}
