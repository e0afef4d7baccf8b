//! Full-text search: words, tool names/arguments, CJK substrings, filters, inactive messages.

use hermes_protocol::{Message, Role, ToolCall};
use hermes_store::{NewSession, SearchQuery, SessionStore};

use super::Db;

fn store_with(db: &Db, ids: &[&str]) -> SessionStore {
    let store = db.open();
    for id in ids {
        store
            .create_session(&NewSession {
                id: (*id).into(),
                source: "cli".into(),
                model: "m".into(),
                provider: "p".into(),
                ..NewSession::default()
            })
            .unwrap();
    }
    store
}

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

pub fn cjk_substring_is_found_through_the_trigram_index(db: &Db) {
    let store = store_with(db, &["s"]);
    let hit = store
        .append_message("s", &Message::user("我的笔记本在桌子上"), None)
        .unwrap();
    store
        .append_message("s", &Message::user("记录一下"), None)
        .unwrap();
    store
        .append_message("s", &Message::user("notebook"), None)
        .unwrap();
    let hits = store.search(&SearchQuery::new("笔记")).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].message_id, hit);
    assert!(
        hits[0].snippet.contains(">>>笔记<<<"),
        "{}",
        hits[0].snippet
    );
    // Three or more chars use the trigram index proper.
    assert_eq!(ids(&store, SearchQuery::new("笔记本在")), vec![hit]);
    // Japanese and Korean too.
    let ja = store
        .append_message("s", &Message::user("東京タワーに行きました"), None)
        .unwrap();
    let ko = store
        .append_message("s", &Message::user("오늘 회의록을 정리했다"), None)
        .unwrap();
    assert_eq!(ids(&store, SearchQuery::new("タワー")), vec![ja]);
    assert_eq!(ids(&store, SearchQuery::new("회의록")), vec![ko]);
}

pub fn cjk_query_keeps_not_and_or_meaning(db: &Db) {
    let store = store_with(db, &["s"]);
    let a = store
        .append_message("s", &Message::user("笔记本 draft"), None)
        .unwrap();
    let b = store
        .append_message("s", &Message::user("我的笔记本"), None)
        .unwrap();
    let c = store
        .append_message("s", &Message::user("plain words"), None)
        .unwrap();
    assert_eq!(ids(&store, SearchQuery::new("笔记 NOT draft")), vec![b]);
    assert_eq!(
        ids(&store, SearchQuery::new("笔记 OR plain")),
        vec![a, b, c]
    );
    assert_eq!(ids(&store, SearchQuery::new("笔记 draft")), vec![a]);
}

pub fn tool_names_and_arguments_are_searchable(db: &Db) {
    let store = store_with(db, &["s"]);
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new(
        "c1",
        "read_file",
        r#"{"path":"crates/hermes-store/src/schema.rs"}"#,
    )];
    let call_id = store.append_message("s", &call, None).unwrap();
    let result_id = store
        .append_message("s", &Message::tool("c1", "web_search", "no results"), None)
        .unwrap();
    assert_eq!(ids(&store, SearchQuery::new("read_file")), vec![call_id]);
    assert_eq!(ids(&store, SearchQuery::new("schema.rs")), vec![call_id]);
    assert_eq!(ids(&store, SearchQuery::new("web_search")), vec![result_id]);
}

pub fn filters_by_session_and_role_and_limits(db: &Db) {
    let store = store_with(db, &["a", "b"]);
    let a_user = store
        .append_message("a", &Message::user("rust borrow checker"), None)
        .unwrap();
    let a_asst = store
        .append_message("a", &Message::assistant("the borrow checker says"), None)
        .unwrap();
    let b_user = store
        .append_message("b", &Message::user("borrow money"), None)
        .unwrap();
    assert_eq!(
        ids(&store, SearchQuery::new("borrow")),
        vec![a_user, a_asst, b_user]
    );
    let mut q = SearchQuery::new("borrow");
    q.session_id = Some("a".into());
    assert_eq!(ids(&store, q.clone()), vec![a_user, a_asst]);
    q.role = Some(Role::Assistant);
    assert_eq!(ids(&store, q), vec![a_asst]);
    let mut q = SearchQuery::new("borrow");
    q.limit = 2;
    assert_eq!(store.search(&q).unwrap().len(), 2);
    // Substring hits respect the filters as well.
    let cjk = store
        .append_message("b", &Message::user("借钱的笔记"), None)
        .unwrap();
    let mut q = SearchQuery::new("笔记");
    q.session_id = Some("a".into());
    assert!(ids(&store, q.clone()).is_empty());
    q.session_id = Some("b".into());
    assert_eq!(ids(&store, q), vec![cjk]);
}

pub fn hits_carry_session_metadata_snippet_and_rank(db: &Db) {
    let store = store_with(db, &["s"]);
    store.set_title("s", "Borrowing").unwrap();
    store
        .append_message(
            "s",
            &Message::user("a long sentence about the borrow checker in rust"),
            None,
        )
        .unwrap();
    store
        .append_message("s", &Message::user("borrow borrow borrow"), None)
        .unwrap();
    let hits = store.search(&SearchQuery::new("borrow")).unwrap();
    assert_eq!(hits.len(), 2);
    assert!(hits[0].rank <= hits[1].rank, "best first");
    assert!(hits.iter().all(|h| h.rank < 0.0), "bm25 ranks are negative");
    assert_eq!(hits[0].session_title.as_deref(), Some("Borrowing"));
    assert_eq!(hits[0].role, Role::User);
    assert!(hits.iter().all(|h| h.snippet.contains(">>>borrow<<<")));
}

pub fn inactive_messages_stay_searchable_and_are_flagged(db: &Db) {
    let store = store_with(db, &["s"]);
    let keep = store
        .append_message("s", &Message::user("zebra one"), None)
        .unwrap();
    let gone = store
        .append_message("s", &Message::user("zebra two"), None)
        .unwrap();
    store.deactivate_messages_from("s", gone).unwrap();
    let hits = store.search(&SearchQuery::new("zebra")).unwrap();
    assert_eq!(hits.len(), 2);
    let flag = |id: i64| hits.iter().find(|h| h.message_id == id).unwrap().active;
    assert!(flag(keep));
    assert!(!flag(gone));
}

/// A term matching more than 5,000 messages is ranked over its newest 5,000 matches only
/// (`RANK_WINDOW` in search.rs, issue 6 FTS p99): the best-scoring old match falls out,
/// the best-scoring match inside the window comes first, and filters see the same window.
pub fn a_frequent_term_is_ranked_over_its_newest_matches(db: &Db) {
    let store = store_with(db, &["s"]);
    let strong = "beacon beacon beacon";
    let oldest = store
        .append_message("s", &Message::user(strong), None)
        .unwrap();
    let filler = "beacon and a long tail of other words that lowers its score for this term";
    let mut newest_strong = 0;
    for i in 0..5_000 {
        let text = if i == 2_500 { strong } else { filler };
        let id = store
            .append_message("s", &Message::user(text), None)
            .unwrap();
        if i == 2_500 {
            newest_strong = id;
        }
    }
    let hits = store.search(&SearchQuery::new("beacon")).unwrap();
    assert_eq!(hits.len(), 20);
    assert_eq!(hits[0].message_id, newest_strong);
    assert!(hits.iter().all(|h| h.message_id != oldest));
    assert!(
        hits[0].snippet.contains(">>>beacon<<<"),
        "{}",
        hits[0].snippet
    );

    let mut q = SearchQuery::new("beacon");
    q.session_id = Some("s".into());
    q.role = Some(Role::User);
    let filtered = store.search(&q).unwrap();
    assert_eq!(filtered[0].message_id, newest_strong);
    assert!(filtered.iter().all(|h| h.message_id != oldest));

    // With fewer matches than the window, every match is ranked: a narrower query reaches
    // the oldest message again.
    let narrow = ids(&store, SearchQuery::new("beacon NOT tail"));
    assert_eq!(narrow, vec![oldest, newest_strong]);
}

/// Whatever a user or model types is a valid query on every backend: FTS5 syntax, tsquery
/// syntax, quotes, operators and punctuation never make search fail.
pub fn any_user_text_is_a_valid_query(db: &Db) {
    let store = store_with(db, &["s"]);
    let id = store
        .append_message(
            "s",
            &Message::user("note-book P2.2 it's a C++ thing: done!"),
            None,
        )
        .unwrap();
    for q in [
        "note-book",
        "\"note-book\"",
        "P2.2",
        "it's",
        "C++",
        "a & b | !c",
        "foo:* <-> bar",
        "NOT",
        "OR OR",
        "(((",
        "\"unbalanced",
        "content:foo",
        "NEAR(a b)",
        "*",
        "'quoted'",
        "\\",
        "%_",
        "done*",
        "笔'记",
    ] {
        store
            .search(&SearchQuery::new(q))
            .unwrap_or_else(|e| panic!("query {q:?}: {e}"));
    }
    assert_eq!(ids(&store, SearchQuery::new("note-book")), vec![id]);
    assert_eq!(ids(&store, SearchQuery::new("don*")), vec![id]);
    assert_eq!(ids(&store, SearchQuery::new("\"P2.2\"")), vec![id]);
    assert!(ids(&store, SearchQuery::new("note-book NOT thing")).is_empty());
}
