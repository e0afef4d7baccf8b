#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! The FTS query sanitizer: the shared vector file, case C19 and property tests.

use hermes_protocol::Message;
use hermes_store::{MAX_QUERY_CHARS, NewSession, SearchQuery, SessionStore, sanitize_fts_query};
use proptest::prelude::*;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared");

fn session(store: &SessionStore, id: &str) {
    store
        .create_session(&NewSession {
            id: id.into(),
            source: "cli".into(),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .unwrap();
}

#[test]
fn every_vector_in_fts_query_sanitizer_json() {
    let text =
        std::fs::read_to_string(format!("{SHARED}/vectors/fts_query_sanitizer.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    let store = SessionStore::open_in_memory().unwrap();
    session(&store, "s1");
    store
        .append_message("s1", &Message::user("some text"), None)
        .unwrap();
    for case in cases {
        let input = case[0].as_str().unwrap();
        let expected = case[1].as_str().unwrap();
        assert_eq!(
            sanitize_fts_query(input).trim(),
            expected.trim(),
            "input {input:?}"
        );
        // And the output is a valid query.
        store.search(&SearchQuery::new(input)).unwrap();
    }
}

fn case_c19() -> serde_json::Value {
    let text = std::fs::read_to_string(format!("{SHARED}/cases/cases.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let list = doc
        .as_array()
        .cloned()
        .unwrap_or_else(|| doc["cases"].as_array().unwrap().clone());
    list.into_iter().find(|c| c["id"] == "C19").unwrap()
}

#[test]
fn case_c19_hyphenated_term_with_cjk_and_or_finds_both_rows() {
    let case = case_c19();
    // The trigger is `MATCH '<query>'`; take the query between the first pair of quotes.
    let trigger = case["trigger"].as_str().unwrap();
    let query = trigger.split('\'').nth(1).unwrap();
    let expected = &case["expected"];
    assert_eq!(
        sanitize_fts_query(query),
        expected["sanitized_query"].as_str().unwrap()
    );

    let store = SessionStore::open_in_memory().unwrap();
    session(&store, "c19");
    let rows: Vec<&str> = expected["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    let mut ids = Vec::new();
    for row in &rows {
        ids.push(
            store
                .append_message("c19", &Message::assistant(*row), None)
                .unwrap(),
        );
    }
    store
        .append_message("c19", &Message::user("unrelated words"), None)
        .unwrap();
    let hits = store.search(&SearchQuery::new(query)).unwrap();
    let mut found: Vec<i64> = hits.iter().map(|h| h.message_id).collect();
    found.sort();
    assert_eq!(found, ids, "both rows and nothing else: {hits:?}");
}

#[test]
fn explicit_operators_are_kept_between_terms() {
    assert_eq!(sanitize_fts_query("cats AND dogs"), "cats AND dogs");
    assert_eq!(sanitize_fts_query("cats NOT dogs"), "cats NOT dogs");
    assert_eq!(sanitize_fts_query("cats OR OR dogs"), "cats OR dogs");
    assert_eq!(sanitize_fts_query("cats or dogs"), "cats or dogs");
}

#[test]
fn all_punctuation_query_returns_no_hits_not_an_error() {
    let store = SessionStore::open_in_memory().unwrap();
    session(&store, "s");
    store
        .append_message("s", &Message::user("hello - world"), None)
        .unwrap();
    assert_eq!(sanitize_fts_query("-- ** !! \" ( )"), "");
    assert!(
        store
            .search(&SearchQuery::new("-- ** !! \" ( )"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn operators_and_syntax_behave_as_documented_in_search() {
    let store = SessionStore::open_in_memory().unwrap();
    session(&store, "s");
    let a = store
        .append_message("s", &Message::user("cats and dogs"), None)
        .unwrap();
    let b = store
        .append_message("s", &Message::user("cats only"), None)
        .unwrap();
    let ids = |q: &str| {
        let mut v: Vec<i64> = store
            .search(&SearchQuery::new(q))
            .unwrap()
            .iter()
            .map(|h| h.message_id)
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids("cats NOT dogs"), vec![b]);
    assert_eq!(ids("cats AND dogs"), vec![a]);
    assert_eq!(ids("dogs OR only"), vec![a, b]);
    assert_eq!(ids("ca*"), vec![a, b]);
    assert_eq!(ids("content:cats"), Vec::<i64>::new());
    assert_eq!(ids("\"cats and\""), vec![a]);
}

fn fts_syntax_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\"".to_string()),
        Just("*".to_string()),
        Just(" OR ".to_string()),
        Just(" AND ".to_string()),
        Just(" NOT ".to_string()),
        Just("NEAR(".to_string()),
        Just(")".to_string()),
        Just("(".to_string()),
        Just(":".to_string()),
        Just("^".to_string()),
        Just("-".to_string()),
        Just("+".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("笔记".to_string()),
        Just("'".to_string()),
        Just(" ".to_string()),
        Just("\u{0}".to_string()),
        "[\\x00-\\x1f\\x7f]{1,2}",
        "[a-z0-9_.]{1,6}",
        "\\PC{1,4}",
    ];
    proptest::collection::vec(piece, 0..16).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_text_never_makes_search_fail(text in fts_syntax_string()) {
        let store = SessionStore::open_in_memory().unwrap();
        session(&store, "p");
        store.append_message("p", &Message::user("note-book 笔记本 snake_case P2.2 cats"), None).unwrap();
        let out = sanitize_fts_query(&text);
        prop_assert!(out.chars().count() <= MAX_QUERY_CHARS);
        prop_assert!(store.search(&SearchQuery::new(text.clone())).is_ok(), "query {:?} -> {:?}", text, out);
    }

    #[test]
    fn arbitrary_unicode_never_makes_search_fail(text in "\\PC{0,40}") {
        let store = SessionStore::open_in_memory().unwrap();
        session(&store, "p");
        store.append_message("p", &Message::user("hello world"), None).unwrap();
        prop_assert!(store.search(&SearchQuery::new(text.clone())).is_ok(), "query {:?}", text);
    }

    #[test]
    fn sanitizing_is_idempotent(text in fts_syntax_string()) {
        let once = sanitize_fts_query(&text);
        prop_assert_eq!(sanitize_fts_query(&once), once.clone());
    }

    #[test]
    fn long_input_is_capped(text in "[a-z -]{2000,3000}") {
        prop_assert!(sanitize_fts_query(&text).chars().count() <= MAX_QUERY_CHARS);
    }
}

#[test]
fn control_characters_never_make_search_fail() {
    let store = SessionStore::open_in_memory().unwrap();
    session(&store, "c");
    store
        .append_message("c", &Message::user("a b"), None)
        .unwrap();
    for q in [
        "\"a\u{0}b\"",
        "a\u{0}-b",
        "a\u{0}",
        "\u{0}\"",
        "a\u{1a}b",
        "x\u{7f}y*",
        "\u{0}OR a",
    ] {
        assert!(
            store.search(&SearchQuery::new(q)).is_ok(),
            "{q:?} -> {:?}",
            sanitize_fts_query(q)
        );
    }
}
