#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! Search on SQLite's own tables (Python Hermes' trigram index); the search behaviour both
//! stores share is in `conformance/search.rs`.

use hermes_protocol::{Message, ToolCall};
use hermes_store::{NewSession, SearchQuery, SessionStore};

fn ids(store: &SessionStore, q: SearchQuery) -> Vec<i64> {
    let mut v: Vec<i64> = store
        .search(&q)
        .unwrap()
        .iter()
        .map(|h| h.message_id)
        .collect();
    v.sort();
    v
}

/// The trigram index is Python Hermes' (`messages_fts_trigram`, filled by its triggers for
/// every message), and CJK search finds every kind of CJK text in it, including
/// supplementary-plane ideographs and tool arguments.
#[test]
fn cjk_search_finds_every_kind_of_cjk_text_through_pythons_trigram_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SessionStore::open(&path).unwrap();
    store
        .create_session(&NewSession {
            id: "s".into(),
            source: "cli".into(),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .unwrap();
    store
        .append_message("s", &Message::user("plain ascii words"), None)
        .unwrap();
    let rare = store
        .append_message("s", &Message::user("ext-B 𠀀𠀁𠀂 ideographs"), None)
        .unwrap();
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new(
        "c1",
        "write_file",
        r#"{"path":"notes.md","content":"会议记录"}"#,
    )];
    let args = store.append_message("s", &call, None).unwrap();
    let kana = store
        .append_message("s", &Message::user("ｶﾀｶﾅ half width"), None)
        .unwrap();

    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut rows: Vec<i64> = conn
        .prepare("SELECT rowid FROM messages_fts_trigram ORDER BY rowid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.sort();
    assert_eq!(rows, vec![rare - 1, rare, args, kana]);

    assert_eq!(ids(&store, SearchQuery::new("𠀁")), vec![rare]);
    assert_eq!(ids(&store, SearchQuery::new("记录")), vec![args]);
    assert_eq!(ids(&store, SearchQuery::new("ｶﾀｶ")), vec![kana]);
    // A non-CJK OR-group is answered by the word index alone.
    let plain = ids(&store, SearchQuery::new("记录 OR plain"));
    assert_eq!(plain.len(), 2, "{plain:?}");
}
