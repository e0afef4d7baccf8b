//! Subagent sessions (`delegate_task`, FEATURES §4): linked to their parent, never the latest
//! session, hidden from the session list, not counted twice in the store totals.

use hermes_protocol::{Message, Usage};
use hermes_store::{NewSession, SUBAGENT_SOURCE, UsageRecord};

use super::Db;

fn session(id: &str, source: &str, parent: Option<&str>) -> NewSession {
    NewSession {
        id: id.into(),
        source: source.into(),
        model: "m".into(),
        provider: "p".into(),
        parent_session_id: parent.map(str::to_string),
        ..NewSession::default()
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

pub fn subagent_sessions_are_linked_but_never_the_latest_or_listed(db: &Db) {
    let store = db.open();
    store
        .create_session(&session("20260101_000000_aaaaaa", "cli", None))
        .unwrap();
    store.set_title("20260101_000000_aaaaaa", "parent").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let child = "20260101_000001_bbbbbb";
    store
        .create_session(&session(
            child,
            SUBAGENT_SOURCE,
            Some("20260101_000000_aaaaaa"),
        ))
        .unwrap();
    store.set_title(child, "find the bug").unwrap();
    store
        .append_message(child, &Message::user("find the bug"), None)
        .unwrap();

    for source in [None, Some("cli")] {
        let latest = store.latest_session(source).unwrap().unwrap();
        assert_eq!(latest.id, "20260101_000000_aaaaaa", "source {source:?}");
    }
    assert_eq!(
        store
            .latest_session(Some(SUBAGENT_SOURCE))
            .unwrap()
            .unwrap()
            .id,
        child
    );
    let listed: Vec<String> = store
        .list_sessions(10, 0)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec!["20260101_000000_aaaaaa".to_string()]);

    let children = store.child_sessions("20260101_000000_aaaaaa").unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].id, child);
    assert_eq!(
        children[0].parent_session_id.as_deref(),
        Some("20260101_000000_aaaaaa")
    );
    assert_eq!(
        store.subagent_parent(child).unwrap().as_deref(),
        Some("20260101_000000_aaaaaa")
    );
    assert_eq!(
        store.subagent_parent("20260101_000000_aaaaaa").unwrap(),
        None
    );
    assert_eq!(store.subagent_parent("nope").unwrap(), None);

    // By id a child is found; its title does not shadow a conversation's.
    assert_eq!(store.find_session(child).unwrap().unwrap().id, child);
    assert!(store.find_session("find the bug").unwrap().is_none());
}

pub fn stats_do_not_count_a_childs_tokens_twice(db: &Db) {
    let store = db.open();
    store.create_session(&session("p1", "cli", None)).unwrap();
    store
        .create_session(&session("c1", SUBAGENT_SOURCE, Some("p1")))
        .unwrap();
    // The child's calls are recorded in its own session and added to the parent's.
    store
        .add_usage("c1", &UsageRecord::new("m", "p", &usage(100, 10), None))
        .unwrap();
    store
        .add_usage("p1", &UsageRecord::new("m", "p", &usage(100, 10), None))
        .unwrap();
    store
        .add_usage("p1", &UsageRecord::new("m", "p", &usage(5, 5), None))
        .unwrap();
    assert_eq!(store.stats().unwrap().total_tokens, 120);
}
