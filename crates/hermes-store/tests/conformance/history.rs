//! Optimistic concurrency on a session's history (issue 7 item 4): checked writes are
//! refused, with nothing written, once `/undo`, `/new` or compression moved the version on —
//! also when the other writer is a second connection (another process).

use hermes_protocol::Message;
use hermes_store::{NewSession, SessionStore, StoreError};

use super::Db;

fn session(store: &SessionStore, id: &str) {
    store
        .create_session(&NewSession {
            id: id.into(),
            source: "telegram".into(),
            session_key: Some("agent:main:telegram:dm:5".into()),
            title: None,
            model: "m".into(),
            provider: "p".into(),
            system_prompt: "sys".into(),
            parent_session_id: None,
            cwd: None,
        })
        .unwrap();
}

fn texts(store: &SessionStore, id: &str) -> Vec<String> {
    store
        .load_messages(id)
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect()
}

fn version(store: &SessionStore, id: &str) -> u64 {
    store.get_session(id).unwrap().unwrap().history_version
}

pub fn checked_writes_succeed_at_the_current_version_and_report_the_new_one(db: &Db) {
    let store = db.open();
    session(&store, "s");
    let a = store
        .append_message_checked("s", &Message::user("one"), None, 0)
        .unwrap();
    store
        .append_message_checked("s", &Message::assistant("1"), None, 0)
        .unwrap();
    assert_eq!(version(&store, "s"), 0, "appending keeps the version");
    let (ids, v) = store
        .replace_active_checked("s", Some(a), &[Message::user("summary")], 0)
        .unwrap();
    assert_eq!((ids.len(), v, version(&store, "s")), (1, 1, 1));
    assert_eq!(
        store.deactivate_messages_checked("s", ids[0], 1).unwrap(),
        2
    );
    assert_eq!(texts(&store, "s"), Vec::<String>::new());
    // Nothing active from there on: no change, same version.
    assert_eq!(
        store.deactivate_messages_checked("s", ids[0], 2).unwrap(),
        2
    );
}

pub fn a_change_from_another_connection_refuses_every_checked_write(db: &Db) {
    let gateway = db.open();
    let other = db.open();
    session(&gateway, "s");
    gateway
        .append_message_checked("s", &Message::user("one"), None, 0)
        .unwrap();
    let two = gateway
        .append_message_checked("s", &Message::user("two"), None, 0)
        .unwrap();
    // Another process undoes "two" while the gateway's turn still believes in version 0.
    other.deactivate_messages_from("s", two).unwrap();
    let refused = gateway
        .append_message_checked("s", &Message::assistant("answer to two"), None, 0)
        .unwrap_err();
    assert!(
        matches!(
            refused,
            StoreError::HistoryChanged {
                ref id,
                expected: 0,
                found: 1
            } if id == "s"
        ),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("changed elsewhere"),
        "{refused}"
    );
    assert!(matches!(
        gateway.replace_active_checked("s", None, &[Message::user("x")], 0),
        Err(StoreError::HistoryChanged { .. })
    ));
    assert!(matches!(
        gateway.deactivate_messages_checked("s", two, 0),
        Err(StoreError::HistoryChanged { .. })
    ));
    assert_eq!(texts(&gateway, "s"), vec!["one"], "nothing was written");
    assert_eq!(gateway.get_session("s").unwrap().unwrap().message_count, 1);
    // At the version it reloads, the gateway writes again.
    gateway
        .append_message_checked("s", &Message::user("three"), None, 1)
        .unwrap();
    assert_eq!(texts(&gateway, "s"), vec!["one", "three"]);
}

pub fn ending_a_session_moves_its_version_on(db: &Db) {
    let store = db.open();
    session(&store, "s");
    store.end_session("s", "user_reset").unwrap();
    assert_eq!(version(&store, "s"), 1);
    assert!(matches!(
        store.append_message_checked("s", &Message::user("late"), None, 0),
        Err(StoreError::HistoryChanged { .. })
    ));
    assert!(matches!(
        store.append_message_checked("nope", &Message::user("x"), None, 0),
        Err(StoreError::SessionNotFound { .. })
    ));
}

pub fn a_reply_and_its_usage_commit_together_or_not_at_all(db: &Db) {
    use hermes_protocol::Usage;
    use hermes_store::UsageRecord;
    let store = db.open();
    session(&store, "s");
    store
        .append_message_checked("s", &Message::user("one"), None, 0)
        .unwrap();
    let usage = Usage {
        input_tokens: 120,
        output_tokens: 7,
        ..Usage::default()
    };
    let record = UsageRecord {
        model: "m",
        provider: "p",
        base_url: "http://p.example/v1",
        usage: &usage,
        cost_usd: Some(0.25),
    };
    let id = store
        .append_message_with_usage_checked("s", &Message::assistant("1"), &record, 0)
        .unwrap();
    let stored = store.load_messages("s").unwrap();
    assert_eq!(stored.last().map(|m| m.id), Some(id));
    assert_eq!(texts(&store, "s"), ["one", "1"]);
    let s = store.get_session("s").unwrap().unwrap();
    assert_eq!(
        (s.message_count, s.input_tokens, s.output_tokens),
        (2, 120, 7)
    );
    assert_eq!(s.cost_usd, Some(0.25));
    let rows = store.usage_by_model("s").unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].calls, rows[0].usage.input_tokens), (1, 120));

    // Another writer moves the history on: the reply is refused and its tokens are not
    // counted either (one transaction).
    store.deactivate_messages_checked("s", id, 0).unwrap();
    let refused =
        store.append_message_with_usage_checked("s", &Message::assistant("2"), &record, 0);
    assert!(matches!(refused, Err(StoreError::HistoryChanged { .. })));
    let s = store.get_session("s").unwrap().unwrap();
    assert_eq!((s.input_tokens, s.output_tokens), (120, 7));
    assert_eq!(store.usage_by_model("s").unwrap()[0].calls, 1);
    assert_eq!(texts(&store, "s"), ["one"]);
    assert!(matches!(
        store.append_message_with_usage_checked("nope", &Message::assistant("x"), &record, 0),
        Err(StoreError::SessionNotFound { .. })
    ));
}

/// The trace id of the turn that wrote a message (issue 24 §1) is kept beside it in
/// `hermes_messages` and read back with it, by any handle; messages written without one, or
/// by the untraced writes, have none; a refused write stores no trace id either.
pub fn trace_ids_are_stored_with_their_messages(db: &Db) {
    use hermes_protocol::{ContentPart, Reasoning, Usage};
    use hermes_store::UsageRecord;
    let store = db.open();
    session(&store, "s");
    let turn = "4bf92f3577b34da6a3ce929d0e0e4736";
    let other = "0af7651916cd43dd8448eb211c80319c";
    let user = store
        .append_message_traced("s", &Message::user("one"), Some(turn), None, 0)
        .unwrap();
    let usage = Usage {
        input_tokens: 9,
        output_tokens: 2,
        ..Usage::default()
    };
    let record = UsageRecord::new("m", "p", &usage, None);
    // A reply whose content and reasoning also need `hermes_messages`.
    let mut reply = Message::assistant("look");
    reply.content.push(ContentPart::Image {
        url: "https://example.com/a.png".into(),
    });
    reply.reasoning = Some(Reasoning {
        text: "thinking".into(),
        signature: Some("sig".into()),
    });
    store
        .append_message_traced("s", &reply, Some(turn), Some(&record), 0)
        .unwrap();
    store
        .append_message_checked("s", &Message::user("untraced"), None, 0)
        .unwrap();
    store
        .append_message_traced("s", &Message::user("two"), Some(other), None, 0)
        .unwrap();
    assert_eq!(store.get_session("s").unwrap().unwrap().input_tokens, 9);

    let again = db.open();
    let stored = again.load_messages("s").unwrap();
    let ids: Vec<Option<&str>> = stored.iter().map(|m| m.trace_id.as_deref()).collect();
    assert_eq!(ids, [Some(turn), Some(turn), None, Some(other)]);
    assert_eq!(stored[1].message, reply, "the message itself is unchanged");
    assert_eq!(stored[0].id, user);

    // Compaction stores each replacement with the trace id given for it.
    let (new_ids, v) = again
        .replace_active_traced(
            "s",
            Some(stored[2].id),
            &[Message::user("summary"), Message::user("two")],
            &[Some(turn.to_string())],
            0,
        )
        .unwrap();
    assert_eq!((new_ids.len(), v), (2, 1));
    let active = store.load_messages("s").unwrap();
    let ids: Vec<Option<&str>> = active.iter().map(|m| m.trace_id.as_deref()).collect();
    assert_eq!(ids, [Some(turn), Some(turn), Some(turn), None]);
    // The replaced rows keep theirs.
    let all = store.load_all_messages("s").unwrap();
    assert_eq!(
        all.iter()
            .filter(|m| !m.active)
            .map(|m| m.trace_id.as_deref())
            .collect::<Vec<_>>(),
        [None, Some(other)]
    );

    // Refused at a stale version: nothing written.
    let refused = store.append_message_traced("s", &Message::user("late"), Some(other), None, 0);
    assert!(matches!(refused, Err(StoreError::HistoryChanged { .. })));
    assert_eq!(store.load_all_messages("s").unwrap().len(), all.len());

    // The JSON export carries the trace id of the messages that have one.
    let json: serde_json::Value = serde_json::from_str(
        &store
            .export_session("s", hermes_store::Format::Json)
            .unwrap(),
    )
    .unwrap();
    let exported: Vec<Option<&str>> = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.get("trace_id").and_then(serde_json::Value::as_str))
        .collect();
    assert_eq!(
        exported,
        all.iter()
            .map(|m| m.trace_id.as_deref())
            .collect::<Vec<_>>()
    );

    // The Markdown export names each trace once, under the first message of its run.
    let md = store
        .export_session("s", hermes_store::Format::Markdown)
        .unwrap();
    let marks: Vec<&str> = md
        .lines()
        .filter_map(|l| l.strip_prefix("*trace `"))
        .filter_map(|l| l.strip_suffix("`*"))
        .collect();
    let mut runs: Vec<&str> = Vec::new();
    let mut last = None;
    for id in all.iter().map(|m| m.trace_id.as_deref()) {
        if let Some(id) = id
            && last != Some(id)
        {
            runs.push(id);
        }
        last = id;
    }
    assert_eq!(marks, runs);
    assert!(marks.contains(&turn) && marks.contains(&other), "{md}");
}
