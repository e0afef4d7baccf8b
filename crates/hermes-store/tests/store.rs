#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! What only the SQLite store has: the file, WAL, checkpoints, reopening migrations, memory
//! release. The behaviour both stores share is in `conformance/`.

use hermes_protocol::Message;
use hermes_store::{NewSession, SCHEMA_VERSION, SessionStore};

fn new_session(id: &str, source: &str) -> NewSession {
    NewSession {
        id: id.into(),
        source: source.into(),
        session_key: None,
        title: None,
        model: "gpt-test".into(),
        provider: "openrouter".into(),
        system_prompt: "You are hermes.\n\nBe brief.  ".into(),
        parent_session_id: None,
        cwd: Some("/tmp/project".into()),
    }
}

#[test]
fn store_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SessionStore>();
}

#[test]
fn open_creates_parent_dirs_and_uses_wal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/home/state.db");
    let store = SessionStore::open(&path).unwrap();
    assert!(path.exists());
    assert_eq!(store.journal_mode().unwrap(), "wal");
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn migrations_are_idempotent_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let store = SessionStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        store.create_session(&new_session("a", "cli")).unwrap();
    }
    for _ in 0..2 {
        let store = SessionStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert!(store.get_session("a").unwrap().is_some());
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }
}

#[test]
fn many_writes_pass_the_checkpoint_interval() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let store = SessionStore::open(&path).unwrap();
        store.create_session(&new_session("s", "cli")).unwrap();
        for i in 0..120 {
            store
                .append_message("s", &Message::user(format!("message {i}")), None)
                .unwrap();
        }
    }
    // Drop ran a truncating checkpoint: the WAL file is empty or gone.
    let wal = dir.path().join("state.db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
    let store = SessionStore::open(&path).unwrap();
    assert_eq!(store.load_messages("s").unwrap().len(), 120);
    let stats = store.stats().unwrap();
    assert_eq!(stats.active_messages, 120);
    assert!(stats.db_bytes > 0);
}

#[test]
fn released_memory_is_read_back_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path().join("state.db")).unwrap();
    store.create_session(&new_session("s", "telegram")).unwrap();
    for i in 0..200 {
        store
            .append_message(
                "s",
                &Message::user(format!("message {i} {}", "x".repeat(400))),
                None,
            )
            .unwrap();
    }
    let before = store.load_messages("s").unwrap();
    store.release_memory().unwrap();
    assert_eq!(store.load_messages("s").unwrap(), before);
    store
        .append_message("s", &Message::user("after"), None)
        .unwrap();
    assert_eq!(store.load_messages("s").unwrap().len(), 201);
}

/// A file written by a hermes from before trace ids (its `hermes_messages` without
/// `trace_id`) opens, gains the column with every row kept, and stores trace ids from then on;
/// Python's `messages` table is not touched.
#[test]
fn an_old_file_without_the_trace_id_column_gains_it_on_open() {
    use hermes_protocol::ContentPart;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut multi = Message::user("see");
    multi.content.push(ContentPart::Image {
        url: "https://example.com/x.png".into(),
    });
    {
        let store = SessionStore::open(&path).unwrap();
        store.create_session(&new_session("s1", "cli")).unwrap();
        store.append_message("s1", &multi, None).unwrap();
    }
    let messages_sql = |conn: &rusqlite::Connection| -> String {
        conn.query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'messages'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let columns = |conn: &rusqlite::Connection| -> Vec<String> {
        conn.prepare("SELECT name FROM pragma_table_info('hermes_messages')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let python_messages = {
        // The table as the earlier build created it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE hermes_messages_old (message_id INTEGER PRIMARY KEY, \
             content_parts TEXT, reasoning_signature TEXT);
             INSERT INTO hermes_messages_old SELECT message_id, content_parts, \
             reasoning_signature FROM hermes_messages;
             DROP TABLE hermes_messages;
             ALTER TABLE hermes_messages_old RENAME TO hermes_messages;",
        )
        .unwrap();
        assert_eq!(
            columns(&conn),
            ["message_id", "content_parts", "reasoning_signature"]
        );
        messages_sql(&conn)
    };

    let store = SessionStore::open(&path).unwrap();
    assert!(store.schema_check().unwrap().is_current());
    let old = store.load_messages("s1").unwrap();
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].message, multi, "the old row's parts are kept");
    assert_eq!(old[0].trace_id, None);
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    store
        .append_message_traced("s1", &Message::assistant("ok"), Some(trace), None, 0)
        .unwrap();
    drop(store);

    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        columns(&conn),
        [
            "message_id",
            "content_parts",
            "reasoning_signature",
            "trace_id"
        ]
    );
    assert_eq!(messages_sql(&conn), python_messages, "messages unchanged");
    drop(conn);
    let store = SessionStore::open(&path).unwrap();
    let ids: Vec<Option<String>> = store
        .load_messages("s1")
        .unwrap()
        .into_iter()
        .map(|m| m.trace_id)
        .collect();
    assert_eq!(ids, [None, Some(trace.to_string())]);
}
