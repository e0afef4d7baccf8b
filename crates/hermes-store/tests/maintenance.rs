//! Search index check and rebuild (`hermes doctor --fix`, issue 9 item 2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_protocol::Message;
use hermes_store::{NewSession, SearchQuery, SessionStore};

fn store_with_messages() -> (tempfile::TempDir, SessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path().join("state.db")).unwrap();
    store
        .create_session(&NewSession {
            id: "s1".into(),
            source: "cli".into(),
            session_key: None,
            title: None,
            model: "m".into(),
            provider: "p".into(),
            system_prompt: String::new(),
            parent_session_id: None,
            cwd: None,
        })
        .unwrap();
    store
        .append_message("s1", &Message::user("the quarterly report is late"), None)
        .unwrap();
    store
        .append_message("s1", &Message::user("笔记本 is on the desk"), None)
        .unwrap();
    (dir, store)
}

#[test]
fn a_fresh_store_is_in_sync_and_a_damaged_index_is_found_and_rebuilt() {
    let (dir, store) = store_with_messages();
    assert!(store.search_index_check().unwrap().in_sync());

    // Damage the word index behind the store's back: one row gone, one stray row.
    {
        let conn = rusqlite::Connection::open(dir.path().join("state.db")).unwrap();
        conn.execute_batch(
            "DELETE FROM messages_fts WHERE rowid = (SELECT min(id) FROM messages);
             INSERT INTO messages_fts(rowid, content) VALUES (9999, 'ghost');
             DELETE FROM messages_fts_trigram;",
        )
        .unwrap();
    }
    let report = store.search_index_check().unwrap();
    assert_eq!((report.missing, report.orphaned), (1, 1));
    assert!(
        store
            .search(&SearchQuery::new("quarterly"))
            .unwrap()
            .is_empty()
    );

    assert_eq!(store.rebuild_search_index().unwrap(), 2);
    assert!(store.search_index_check().unwrap().in_sync());
    assert_eq!(
        store.search(&SearchQuery::new("quarterly")).unwrap().len(),
        1
    );
    assert!(store.search(&SearchQuery::new("ghost")).unwrap().is_empty());
    // The CJK substring index is refilled too.
    assert_eq!(store.search(&SearchQuery::new("笔记")).unwrap().len(), 1);
}
