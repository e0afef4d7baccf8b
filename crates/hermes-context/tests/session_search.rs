#![allow(clippy::unwrap_used, clippy::expect_used)]
//! session_search: discovery with context, CJK substrings, lineage dedupe, scroll, read,
//! browse, and the tool wrapper.

use std::sync::Arc;

use hermes_context::SessionSearchTool;
use hermes_protocol::{HermesHome, Message};
use hermes_store::{NewSession, SessionStore};
use hermes_tools::{Tool, ToolContext};
use serde_json::json;

fn session(
    store: &SessionStore,
    id: &str,
    parent: Option<&str>,
    title: &str,
    msgs: &[&str],
) -> Vec<i64> {
    store
        .create_session(&NewSession {
            id: id.into(),
            source: "cli".into(),
            title: Some(title.into()),
            parent_session_id: parent.map(str::to_string),
            ..NewSession::default()
        })
        .unwrap();
    msgs.iter()
        .enumerate()
        .map(|(i, t)| {
            let m = if i % 2 == 0 {
                Message::user(*t)
            } else {
                Message::assistant(*t)
            };
            store.append_message(id, &m, None).unwrap()
        })
        .collect()
}

fn fixture() -> (Arc<SessionStore>, Vec<i64>) {
    let store = Arc::new(SessionStore::open_in_memory().unwrap());
    let ids = session(
        &store,
        "20260101_000000_aaaaaa",
        None,
        "Postgres tuning",
        &[
            "hello",
            "hi",
            "the replica lag was caused by vacuum",
            "noted",
            "我的笔记本坏了",
            "ok",
            "bye",
        ],
    );
    session(
        &store,
        "20260102_000000_bbbbbb",
        Some("20260101_000000_aaaaaa"),
        "Postgres tuning (continued)",
        &["more about replica lag", "sure"],
    );
    session(
        &store,
        "20260103_000000_cccccc",
        None,
        "Unrelated",
        &["replica of a painting"],
    );
    (store, ids)
}

#[test]
fn discovery_returns_sessions_with_context_one_per_lineage() {
    let (store, ids) = fixture();
    let t = SessionSearchTool::new(store);
    let v = t.search("replica lag", 5).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{v}");
    let r = &results[0];
    assert!(r["title"].as_str().unwrap().starts_with("Postgres tuning"));
    assert!(r["snippet"].as_str().unwrap().contains(">>>"), "{r}");
    assert!(!r["messages"].as_array().unwrap().is_empty());
    let v = t.search("vacuum", 5).unwrap();
    let msgs = v["results"][0]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5); // 2 each side of the hit
    assert_eq!(msgs[2]["id"], ids[2]);
    assert_eq!(
        v["results"][0]["date"],
        chrono::Utc::now().format("%Y-%m-%d").to_string()
    );
}

#[test]
fn cjk_substring_is_found() {
    let (store, ids) = fixture();
    let t = SessionSearchTool::new(store);
    let v = t.search("笔记", 5).unwrap();
    assert_eq!(v["count"], 1, "{v}");
    assert_eq!(v["results"][0]["message_id"], ids[4]);
}

#[test]
fn scroll_read_browse() {
    let (store, ids) = fixture();
    let t = SessionSearchTool::new(store);
    let s = t.scroll("20260101_000000_aaaaaa", ids[0], 1).unwrap();
    assert_eq!(s["messages"].as_array().unwrap().len(), 2);
    assert!(t.scroll("20260101_000000_aaaaaa", 999_999, 1).is_err());
    let r = t.read("20260101_000000_aaaaaa").unwrap();
    assert_eq!(r["message_count"], 7);
    assert_eq!(r["omitted_middle_messages"], 0);
    assert!(t.read("nope").is_err());
    let b = t.browse(10).unwrap();
    assert_eq!(b["count"], 3);
}

#[tokio::test]
async fn tool_call_modes_and_errors() {
    let (store, _) = fixture();
    let t = SessionSearchTool::new(store);
    let tmp = tempfile::tempdir().unwrap();
    let ctx = ToolContext::for_tests(tmp.path(), HermesHome::new(tmp.path()));
    let out = t.call(json!({"query": "vacuum"}), &ctx).await;
    assert!(
        !out.is_error && out.content.contains("vacuum"),
        "{}",
        out.content
    );
    let out = t.call(json!({"mode": "search"}), &ctx).await;
    assert!(out.is_error && out.content.contains("query"));
    let out = t.call(json!({"mode": "browse", "limit": 1}), &ctx).await;
    assert!(out.content.contains("\"count\":1"), "{}", out.content);
    let out = t.call(json!({"mode": "dance"}), &ctx).await;
    assert!(out.is_error);
}

#[test]
fn subagent_sessions_are_marked_and_not_browsed() {
    let store = Arc::new(SessionStore::open_in_memory().unwrap());
    session(
        &store,
        "20260102_000000_aaaaaa",
        None,
        "Fix the build",
        &["please fix the build", "on it"],
    );
    store
        .create_session(&NewSession {
            id: "20260102_000001_bbbbbb".into(),
            source: hermes_store::SUBAGENT_SOURCE.into(),
            title: Some("look for zanzibar".into()),
            parent_session_id: Some("20260102_000000_aaaaaa".into()),
            ..NewSession::default()
        })
        .unwrap();
    store
        .append_message(
            "20260102_000001_bbbbbb",
            &Message::user("look for zanzibar in the logs"),
            None,
        )
        .unwrap();
    let tool = SessionSearchTool::new(store);
    let found = tool.search("zanzibar", 5).unwrap();
    assert_eq!(found["count"], 1);
    assert_eq!(found["results"][0]["session_id"], "20260102_000001_bbbbbb");
    assert_eq!(found["results"][0]["subagent_of"], "20260102_000000_aaaaaa");
    let read = tool.read("20260102_000001_bbbbbb").unwrap();
    assert_eq!(read["subagent_of"], "20260102_000000_aaaaaa");
    let parent = tool.read("20260102_000000_aaaaaa").unwrap();
    assert!(parent.get("subagent_of").is_none());
    let browsed = tool.browse(10).unwrap();
    assert_eq!(browsed["count"], 1);
    assert_eq!(
        browsed["sessions"][0]["session_id"],
        "20260102_000000_aaaaaa"
    );
}
