//! Sessions, messages, durability, migrations, undo, usage and export.

use hermes_protocol::{
    ContentPart, FinishReason, Message, Reasoning, Role, ToolCall, Usage, new_session_id,
};
use hermes_store::{Format, NewSession, StoreError, UsageRecord};

use super::Db;

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

fn assistant_with_everything() -> Message {
    let mut m = Message::assistant("Let me look.");
    m.tool_calls = vec![
        ToolCall::new("call_1|fc_1", "read_file", r#"{"path":"src/main.rs"}"#),
        ToolCall::new("call_2", "terminal", ""),
    ];
    m.reasoning = Some(Reasoning {
        text: "The user wants the file.".into(),
        signature: Some("sig==".into()),
    });
    m.finish_reason = Some(FinishReason::Other("end_turn".into()));
    m
}

pub fn create_session_is_idempotent_and_keeps_the_prompt_byte_for_byte(db: &Db) {
    let store = db.open();
    let id = new_session_id();
    store.create_session(&new_session(&id, "cli")).unwrap();
    let mut again = new_session(&id, "cron");
    again.system_prompt = "different".into();
    store.create_session(&again).unwrap();
    let rec = store.get_session(&id).unwrap().unwrap();
    assert_eq!(rec.source, "cli");
    assert_eq!(rec.system_prompt, "You are hermes.\n\nBe brief.  ");
    assert_eq!(rec.cwd.as_deref(), Some("/tmp/project"));
    assert_eq!(rec.message_count, 0);
    assert_eq!(store.stats().unwrap().sessions, 1);
}

pub fn message_roundtrip_keeps_tool_calls_reasoning_and_ids(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("s", "cli")).unwrap();
    let user = Message::user("read main.rs");
    let assistant = assistant_with_everything();
    let tool = Message::tool("call_1|fc_1", "read_file", "fn main() {}");
    let mut multi = Message::user("look at this");
    multi.content.push(ContentPart::Image {
        url: "https://example.invalid/a.png".into(),
    });
    let empty = Message::assistant("");
    let mut ids = Vec::new();
    for m in [&user, &assistant, &tool, &multi, &empty] {
        ids.push(store.append_message("s", m, Some(12)).unwrap());
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let loaded = store.load_messages("s").unwrap();
    let messages: Vec<Message> = loaded.iter().map(|m| m.message.clone()).collect();
    assert_eq!(messages, vec![user, assistant, tool, multi, empty]);
    assert_eq!(loaded.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    assert!(loaded.iter().all(|m| m.active));
    let rec = store.get_session("s").unwrap().unwrap();
    assert_eq!(rec.message_count, 5);
    assert_eq!(rec.tool_call_count, 2);
    assert_eq!(rec.preview.as_deref(), Some("read main.rs"));
}

pub fn tool_call_arguments_are_stored_verbatim(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("s", "cli")).unwrap();
    let mut m = Message::assistant("");
    // Not valid JSON: the model's text is kept as written (ARCHITECTURE §3).
    m.tool_calls = vec![ToolCall::new("c", "shell", "{\"cmd\": \"ls\"")];
    store.append_message("s", &m, None).unwrap();
    let back = &store.load_messages("s").unwrap()[0].message;
    assert_eq!(back.tool_calls[0].arguments, "{\"cmd\": \"ls\"");
}

pub fn appending_to_an_unknown_session_is_an_error_and_writes_nothing(db: &Db) {
    let store = db.open();
    let err = store
        .append_message("nope", &Message::user("hi"), None)
        .unwrap_err();
    assert!(matches!(err, StoreError::SessionNotFound { ref id } if id == "nope"));
    assert_eq!(store.stats().unwrap().messages, 0);
}

pub fn messages_survive_reopen_because_each_is_committed(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("s", "cli")).unwrap();
    store
        .append_message("s", &Message::user("first"), None)
        .unwrap();
    store
        .append_message("s", &assistant_with_everything(), None)
        .unwrap();
    // A second handle (another process in real life) sees both while the first is still open.
    let other = db.open();
    assert_eq!(other.load_messages("s").unwrap().len(), 2);
    drop(other);
    std::mem::forget(store); // like a crash: no clean close, no checkpoint
    let reopened = db.open();
    let loaded = reopened.load_messages("s").unwrap();
    assert_eq!(loaded.len(), 2);
    assert_eq!(loaded[1].message, assistant_with_everything());
}

pub fn deactivate_hides_messages_from_load_but_keeps_them(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("s", "cli")).unwrap();
    let mut ids = Vec::new();
    for text in ["one", "two", "three", "four"] {
        ids.push(
            store
                .append_message("s", &Message::user(text), None)
                .unwrap(),
        );
    }
    assert_eq!(store.deactivate_messages_from("s", ids[2]).unwrap(), 2);
    let active: Vec<String> = store
        .load_messages("s")
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(active, vec!["one", "two"]);
    let all = store.load_all_messages("s").unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all.iter().filter(|m| !m.active).count(), 2);
    let rec = store.get_session("s").unwrap().unwrap();
    assert_eq!(rec.message_count, 2);
    assert_eq!(rec.history_version, 1);
    // Nothing left to deactivate: no change, no version bump.
    assert_eq!(store.deactivate_messages_from("s", ids[3]).unwrap(), 0);
    assert_eq!(store.get_session("s").unwrap().unwrap().history_version, 1);
    // New messages after an undo are active and come after the old ones.
    let new_id = store
        .append_message("s", &Message::user("retry"), None)
        .unwrap();
    assert!(new_id > ids[3]);
    assert_eq!(store.load_messages("s").unwrap().len(), 3);
    assert!(matches!(
        store.deactivate_messages_from("missing", 1),
        Err(StoreError::SessionNotFound { .. })
    ));
}

pub fn usage_accumulates_per_session_and_per_model(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("s", "cli")).unwrap();
    let u = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 50,
        cache_write_tokens: 5,
        reasoning_tokens: 3,
    };
    store
        .add_usage("s", &UsageRecord::new("gpt-test", "openrouter", &u, None))
        .unwrap();
    let rec = store.get_session("s").unwrap().unwrap();
    assert_eq!(rec.cost_usd, None);
    store
        .add_usage(
            "s",
            &UsageRecord::new("gpt-test", "openrouter", &u, Some(0.25)),
        )
        .unwrap();
    store
        .add_usage("s", &UsageRecord::new("small", "local", &u, Some(0.0)))
        .unwrap();
    let rec = store.get_session("s").unwrap().unwrap();
    assert_eq!(rec.input_tokens, 300);
    assert_eq!(rec.output_tokens, 60);
    assert_eq!(rec.cache_read_tokens, 150);
    assert_eq!(rec.cache_write_tokens, 15);
    assert_eq!(rec.reasoning_tokens, 9);
    assert_eq!(rec.cost_usd, Some(0.25));
    let per_model = store.usage_by_model("s").unwrap();
    assert_eq!(per_model.len(), 2);
    assert_eq!(per_model[0].model, "gpt-test");
    assert_eq!(per_model[0].calls, 2);
    assert_eq!(per_model[0].usage.input_tokens, 200);
    assert_eq!(per_model[0].cost_usd, Some(0.25));
    assert_eq!(per_model[1].model, "small");
    assert!(
        store
            .add_usage("x", &UsageRecord::new("m", "p", &u, None))
            .is_err()
    );
}

pub fn find_latest_list_title_end_delete(db: &Db) {
    let store = db.open();
    for (id, source) in [
        ("20260101_100000_aaaaaa", "cli"),
        ("20260101_110000_bbbbbb", "gateway:telegram"),
        ("20260102_090000_cccccc", "cli"),
    ] {
        store.create_session(&new_session(id, source)).unwrap();
        store
            .append_message(id, &Message::user(format!("hello  from\n{id}")), None)
            .unwrap();
    }
    store
        .set_title("20260101_110000_bbbbbb", "Telegram chat")
        .unwrap();
    assert!(matches!(
        store.set_title("zzz", "t"),
        Err(StoreError::SessionNotFound { .. })
    ));

    let find = |k: &str| store.find_session(k).unwrap().map(|s| s.id);
    assert_eq!(
        find("20260101_100000_aaaaaa").as_deref(),
        Some("20260101_100000_aaaaaa")
    );
    assert_eq!(
        find("Telegram chat").as_deref(),
        Some("20260101_110000_bbbbbb")
    );
    assert_eq!(find("20260102").as_deref(), Some("20260102_090000_cccccc"));
    assert_eq!(find("20260101"), None, "ambiguous prefix");
    assert_eq!(find("nothing"), None);
    assert_eq!(find(""), None);

    let latest = store.latest_session(None).unwrap().unwrap();
    assert_eq!(latest.id, "20260102_090000_cccccc");
    let latest_gw = store
        .latest_session(Some("gateway:telegram"))
        .unwrap()
        .unwrap();
    assert_eq!(latest_gw.id, "20260101_110000_bbbbbb");
    assert!(store.latest_session(Some("cron")).unwrap().is_none());

    let list = store.list_sessions(10, 0).unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0].id, "20260102_090000_cccccc");
    assert_eq!(list[2].id, "20260101_100000_aaaaaa");
    assert_eq!(list[0].message_count, 1);
    assert_eq!(
        list[0].preview.as_deref(),
        Some("hello from 20260102_090000_cccccc")
    );
    let page = store.list_sessions(1, 1).unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, "20260101_110000_bbbbbb");

    store
        .end_session("20260101_100000_aaaaaa", "user_exit")
        .unwrap();
    let ended = store
        .get_session("20260101_100000_aaaaaa")
        .unwrap()
        .unwrap();
    assert!(ended.ended_at.is_some());
    assert_eq!(ended.end_reason.as_deref(), Some("user_exit"));

    assert!(store.delete_session("20260101_100000_aaaaaa").unwrap());
    assert!(!store.delete_session("20260101_100000_aaaaaa").unwrap());
    assert!(
        store
            .get_session("20260101_100000_aaaaaa")
            .unwrap()
            .is_none()
    );
    assert_eq!(store.stats().unwrap().messages, 2);
    assert!(
        store
            .search(&hermes_store::SearchQuery::new("aaaaaa"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

pub fn export_markdown_and_json(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("s", "cli")).unwrap();
    store.set_title("s", "Reading files").unwrap();
    store
        .append_message("s", &Message::user("read main.rs"), None)
        .unwrap();
    store
        .append_message("s", &assistant_with_everything(), None)
        .unwrap();
    store
        .append_message(
            "s",
            &Message::tool("call_1|fc_1", "read_file", "fn main() {}"),
            None,
        )
        .unwrap();

    let md = store.export_session("s", Format::Markdown).unwrap();
    assert!(md.starts_with("# Reading files\n"));
    assert!(md.contains("## user\n\nread main.rs"));
    assert!(md.contains("`read_file` (call_1|fc_1)"));
    assert!(md.contains("## tool `read_file`"));
    assert!(md.contains("> The user wants the file."));

    let json: serde_json::Value =
        serde_json::from_str(&store.export_session("s", Format::Json).unwrap()).unwrap();
    assert_eq!(json["session"]["id"], "s");
    assert_eq!(json["messages"].as_array().unwrap().len(), 3);
    let back: Message = serde_json::from_value(json["messages"][1]["message"].clone()).unwrap();
    assert_eq!(back, assistant_with_everything());
    assert_eq!(back.role, Role::Assistant);

    assert!(matches!(
        store.export_session("missing", Format::Json),
        Err(StoreError::SessionNotFound { .. })
    ));
}

pub fn prune_and_session_key_lookup(db: &Db) {
    let store = db.open();
    let mut keyed = new_session("old", "gateway:telegram");
    keyed.session_key = Some("telegram:42:7".into());
    store.create_session(&keyed).unwrap();
    store
        .append_message("old", &Message::user("ancient history"), None)
        .unwrap();
    assert_eq!(
        store
            .latest_session_for_key("telegram:42:7")
            .unwrap()
            .unwrap()
            .id,
        "old"
    );
    assert!(store.latest_session_for_key("other").unwrap().is_none());
    // Nothing started before a cutoff in the past.
    let past = chrono::Utc::now() - chrono::Duration::days(90);
    assert_eq!(store.prune_sessions(past).unwrap(), 0);
    let future = chrono::Utc::now() + chrono::Duration::seconds(5);
    store.create_session(&new_session("newer", "cli")).unwrap();
    assert_eq!(store.prune_sessions(future).unwrap(), 2);
    let stats = store.stats().unwrap();
    assert_eq!((stats.sessions, stats.messages), (0, 0));
    assert!(
        store
            .search(&hermes_store::SearchQuery::new("ancient"))
            .unwrap()
            .is_empty()
    );
}

/// Python's soft-hide (`archived = 1`, its `sessions archive`): an archived session is left
/// out of the list, of "the latest" (`-c`) and of prune, and is still found by id.
pub fn archived_sessions_are_hidden_but_kept(db: &Db) {
    let store = db.open();
    store
        .create_session(&new_session("visible", "cli"))
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    store.create_session(&new_session("hidden", "cli")).unwrap();
    store.set_archived("hidden", true).unwrap();
    let listed: Vec<String> = store
        .list_sessions(10, 0)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec!["visible".to_string()]);
    assert_eq!(store.latest_session(None).unwrap().unwrap().id, "visible");
    assert_eq!(
        store.latest_session(Some("cli")).unwrap().unwrap().id,
        "visible"
    );
    assert!(store.find_session("hidden").unwrap().is_some());
    let future = chrono::Utc::now() + chrono::Duration::seconds(5);
    assert_eq!(store.prune_sessions(future).unwrap(), 1);
    assert!(
        store.get_session("hidden").unwrap().is_some(),
        "prune keeps it"
    );
    store.set_archived("hidden", false).unwrap();
    assert_eq!(store.latest_session(None).unwrap().unwrap().id, "hidden");
    assert!(matches!(
        store.set_archived("nope", true),
        Err(StoreError::SessionNotFound { .. })
    ));
}

pub fn routed_key_count_and_last_activity(db: &Db) {
    let store = db.open();
    for (id, key) in [
        ("a", Some("k1")),
        ("b", Some("k1")),
        ("c", Some("k2")),
        ("d", None),
    ] {
        let mut s = new_session(id, "telegram");
        s.session_key = key.map(String::from);
        store.create_session(&s).unwrap();
    }
    assert_eq!(store.count_session_keys().unwrap(), 2);
    assert_eq!(store.last_activity("a").unwrap(), None);
    let before = chrono::Utc::now() - chrono::Duration::seconds(1);
    let id = store
        .append_message("a", &Message::user("hi"), None)
        .unwrap();
    let t = store.last_activity("a").unwrap().unwrap();
    assert!(t >= before, "{t}");
    store.deactivate_messages_from("a", id).unwrap();
    assert_eq!(store.last_activity("a").unwrap(), None);
    assert_eq!(store.last_activity("missing").unwrap(), None);
}

pub fn a_gateway_peer_is_recorded_on_its_session(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("g1", "cli")).unwrap();
    let peer = hermes_store::GatewayPeer {
        source: "telegram".into(),
        session_key: "agent:main:telegram:dm:42".into(),
        user_id: Some("42".into()),
        chat_id: Some("42".into()),
        chat_type: Some("dm".into()),
        ..Default::default()
    };
    assert!(store.record_gateway_peer("g1", &peer).unwrap());
    let rec = store
        .latest_session_for_key("agent:main:telegram:dm:42")
        .unwrap()
        .expect("the peer's key finds the session");
    assert_eq!(rec.id, "g1");
    assert_eq!(rec.source, "telegram");
    assert_eq!(store.gateway_peer("g1").unwrap(), Some(peer.clone()));
    let named = hermes_store::GatewayPeer {
        display_name: Some("Ann's DM".into()),
        origin_json: Some(r#"{"platform":"telegram","chat_id":"42"}"#.into()),
        ..peer.clone()
    };
    assert!(store.record_gateway_peer("g1", &named).unwrap());
    // A later record without a name keeps the one recorded.
    assert!(store.record_gateway_peer("g1", &peer).unwrap());
    assert_eq!(store.gateway_peer("g1").unwrap(), Some(named));
    assert_eq!(store.gateway_peer("missing").unwrap(), None);
    store.create_session(&new_session("cli1", "cli")).unwrap();
    assert_eq!(store.gateway_peer("cli1").unwrap(), None, "no session key");
    assert!(!store.record_gateway_peer("missing", &peer).unwrap());
    let keyless = hermes_store::GatewayPeer {
        session_key: String::new(),
        ..peer.clone()
    };
    assert!(!store.record_gateway_peer("g1", &keyless).unwrap());
}

/// A row whose `tool_calls` is not JSON (another program wrote it): the strict loads refuse
/// the session naming the row and column (a resume never continues without it); the
/// tolerant load returns every other row and that row's error in its place.
pub fn an_unreadable_row_fails_the_load_and_is_named_by_the_tolerant_one(db: &Db) {
    let store = db.open();
    store.create_session(&new_session("s", "cli")).unwrap();
    let first = store
        .append_message("s", &Message::user("read main.rs"), None)
        .unwrap();
    let broken = store
        .append_message("s", &assistant_with_everything(), None)
        .unwrap();
    let last = store
        .append_message(
            "s",
            &Message::tool("call_1", "read_file", "fn main() {}"),
            None,
        )
        .unwrap();
    db.sql(&format!(
        "UPDATE messages SET tool_calls = '[{{\"id\": broken' WHERE id = {broken}"
    ));
    let store = db.open();
    for strict in [store.load_messages("s"), store.load_all_messages("s")] {
        match strict {
            Err(StoreError::Corrupt {
                what, message_id, ..
            }) => assert_eq!((what, message_id), ("tool_calls", broken)),
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }
    let rows = store.load_all_messages_tolerant("s").unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].as_ref().unwrap().id, first);
    assert!(
        matches!(&rows[1], Err(StoreError::Corrupt { what: "tool_calls", message_id, .. }) if *message_id == broken),
        "{:?}",
        rows[1]
    );
    assert_eq!(rows[2].as_ref().unwrap().id, last);
    assert!(
        store
            .load_all_messages_tolerant("missing")
            .unwrap()
            .is_empty()
    );
}
