#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! The per-message writes reuse prepared statements (issue 6: the INSERT with its FTS
//! triggers was compiled again for every message). A cached statement must stay correct when
//! another process changes the schema of the same file between two writes.

use hermes_protocol::{Message, ToolCall, Usage};
use hermes_store::{NewSession, SearchQuery, SessionStore, UsageRecord};

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.into(),
        source: "cli".into(),
        model: "m".into(),
        provider: "p".into(),
        ..NewSession::default()
    }
}

#[test]
fn cached_writes_survive_a_schema_change_by_another_connection() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let store = SessionStore::open(&db).unwrap();
    store.create_session(&session("s1")).unwrap();
    store
        .append_message("s1", &Message::user("first zebra"), None)
        .unwrap();
    let v = store.get_session("s1").unwrap().unwrap().history_version;
    store
        .append_message_checked("s1", &Message::assistant("first answer"), None, v)
        .unwrap();
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 2,
        ..Usage::default()
    };
    store
        .add_usage("s1", &UsageRecord::new("m", "p", &usage, Some(0.5)))
        .unwrap();

    // Another process adds a table and an index: every prepared statement of `store` is now
    // stale and must be recompiled by SQLite, not fail or write the wrong columns.
    let other = rusqlite::Connection::open(&db).unwrap();
    other
        .execute_batch("CREATE TABLE extra (x INTEGER); CREATE INDEX extra_x ON extra(x);")
        .unwrap();
    drop(other);

    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new(
        "c1",
        "read_file",
        r#"{"path":"giraffe.txt"}"#,
    )];
    store
        .append_message("s1", &Message::user("second zebra"), None)
        .unwrap();
    store.append_message_checked("s1", &call, None, v).unwrap();
    store
        .add_usage("s1", &UsageRecord::new("m", "p", &usage, Some(0.5)))
        .unwrap();

    let messages = store.load_messages("s1").unwrap();
    let texts: Vec<String> = messages.iter().map(|m| m.message.text()).collect();
    assert_eq!(
        texts,
        ["first zebra", "first answer", "second zebra", ""],
        "every write landed once, in order"
    );
    assert_eq!(messages[3].message.tool_calls[0].name, "read_file");
    let s = store.get_session("s1").unwrap().unwrap();
    assert_eq!(s.message_count, 4);
    assert_eq!(s.tool_call_count, 1);
    assert_eq!(s.input_tokens, 20);
    assert_eq!(s.cost_usd, Some(1.0));
    let usage_rows = store.usage_by_model("s1").unwrap();
    assert_eq!(usage_rows.len(), 1);
    assert_eq!(usage_rows[0].calls, 2);
    // The FTS triggers ran for the writes after the schema change too.
    assert_eq!(store.search(&SearchQuery::new("zebra")).unwrap().len(), 2);
    assert_eq!(store.search(&SearchQuery::new("giraffe")).unwrap().len(), 1);
}
