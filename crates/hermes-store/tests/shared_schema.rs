//! The shared `state.db` (issue 17 item 1) without Python installed: a new file has exactly
//! the schema of the committed file made by the real Python Hermes 0.19.0
//! (`tests/fixtures/python-home/state.db`, made by `make_python_state_db.py`); hermes reads
//! that file's sessions and messages, searches them and continues them; files of another
//! version are used or refused as documented; bad files are refused unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use hermes_protocol::{ContentPart, FinishReason, Message, Reasoning, Role, ToolCall, Usage};
use hermes_store::{Format, NewSession, SCHEMA_VERSION, SearchQuery, SessionStore, StoreError};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A private copy of the Python-made fixture.
fn python_home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    std::fs::copy(fixture("python-home/state.db"), &db).unwrap();
    (dir, db)
}

/// `(type, name, sql)` of every schema object, hermes' own tables left out.
fn schema_of(db: &Path) -> Vec<(String, String, Option<String>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut rows: Vec<(String, String, Option<String>)> = conn
        .prepare("SELECT type, name, sql FROM sqlite_master WHERE tbl_name NOT LIKE 'hermes_%'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.sort();
    rows
}

#[test]
fn a_new_file_has_exactly_pythons_v22_schema() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let store = SessionStore::open(&db).unwrap();
    assert_eq!(store.schema_version().unwrap(), 22);
    assert_eq!(SCHEMA_VERSION, 22);
    let report = store.schema_check().unwrap();
    assert!(report.is_current(), "{report:?}");
    drop(store);
    assert_eq!(schema_of(&db), schema_of(&fixture("python-home/state.db")));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let versions: Vec<i64> = conn
        .prepare("SELECT version FROM schema_version")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(versions, vec![22]);
}

#[test]
fn python_sessions_are_listed_read_and_exported() {
    let (_dir, db) = python_home();
    let store = SessionStore::open(&db).unwrap();
    let list = store.list_sessions(10, 0).unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "20260522_120000_0a0b0c",
            "20260521_090000_d4e5f6",
            "20260520_101500_a1b2c3"
        ]
    );
    let cli = store
        .get_session("20260520_101500_a1b2c3")
        .unwrap()
        .unwrap();
    assert_eq!(cli.source, "cli");
    assert_eq!(cli.title.as_deref(), Some("Quarterly report hunt"));
    assert_eq!(cli.model, "anthropic/claude-sonnet-4");
    assert_eq!(cli.provider, "openrouter");
    assert_eq!(cli.system_prompt, "You are Hermes, a helpful assistant.");
    assert_eq!((cli.message_count, cli.tool_call_count), (4, 1));
    assert_eq!(
        (cli.input_tokens, cli.output_tokens, cli.cache_read_tokens),
        (1200, 85, 300)
    );
    assert_eq!(cli.cost_usd, Some(0.0049));
    assert_eq!(cli.end_reason.as_deref(), Some("user_exit"));
    assert_eq!(cli.cwd.as_deref(), Some("/home/user/project"));
    assert_eq!(
        cli.preview.as_deref(),
        Some("where is the quarterly report?")
    );
    assert_eq!(cli.history_version, 0);

    let messages = store.load_messages(&cli.id).unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(
        messages[0].message,
        Message::user("where is the quarterly report?")
    );
    assert_eq!(messages[0].timestamp.timestamp(), 1_780_000_000);
    let call = &messages[1].message;
    assert_eq!(call.role, Role::Assistant);
    assert!(call.content.is_empty());
    assert_eq!(
        call.tool_calls,
        vec![ToolCall::new(
            "call_abc123",
            "search_files",
            r#"{"pattern": "quarterly*.pdf"}"#
        )]
    );
    assert_eq!(call.finish_reason, Some(FinishReason::ToolCalls));
    let result = &messages[2].message;
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.tool_call_id.as_deref(), Some("call_abc123"));
    assert_eq!(result.tool_name.as_deref(), Some("search_files"));
    assert_eq!(result.text(), "reports/quarterly-2026-q1.pdf");
    let answer = &messages[3].message;
    assert_eq!(
        answer.reasoning,
        Some(Reasoning {
            text: "The search found one file.".into(),
            signature: None
        })
    );
    let usage = store.usage_by_model(&cli.id).unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].calls, 2);
    assert_eq!(usage[0].usage.input_tokens, 1200);

    // The gateway session: its key and its list-of-parts content.
    let tg = store
        .latest_session_for_key("agent:main:telegram:dm:424242")
        .unwrap()
        .unwrap();
    assert_eq!(tg.id, "20260522_120000_0a0b0c");
    assert_eq!(tg.source, "telegram");
    assert_eq!(tg.preview.as_deref(), Some("what is in this picture?"));
    let first = &store.load_messages(&tg.id).unwrap()[0].message;
    assert_eq!(
        first.content,
        vec![
            ContentPart::Text {
                text: "what is in this picture?".into()
            },
            ContentPart::Image {
                url: "https://example.com/cat.png".into()
            }
        ]
    );
    assert_eq!(store.count_session_keys().unwrap(), 1);

    let md = store.export_session(&cli.id, Format::Markdown).unwrap();
    assert!(md.contains("# Quarterly report hunt"), "{md}");
    assert!(md.contains("`search_files` (call_abc123)"), "{md}");
    let json = store.export_session(&tg.id, Format::Json).unwrap();
    assert!(json.contains("https://example.com/cat.png"), "{json}");
    assert_eq!(
        store
            .find_session("Quarterly report hunt")
            .unwrap()
            .unwrap()
            .id,
        cli.id
    );
    assert_eq!(
        store.latest_session(Some("cli")).unwrap().unwrap().id,
        "20260521_090000_d4e5f6"
    );
}

#[test]
fn python_messages_are_found_by_word_cjk_and_tool_search() {
    let (_dir, db) = python_home();
    let store = SessionStore::open(&db).unwrap();
    let texts = |q: &str| -> Vec<i64> {
        let mut ids: Vec<i64> = store
            .search(&SearchQuery::new(q))
            .unwrap()
            .iter()
            .map(|h| h.message_id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(texts("quarterly"), vec![1, 2, 3, 4]);
    assert_eq!(texts("search_files"), vec![2, 3]);
    // A CJK substring inside a longer run of ideographs, and Japanese text.
    assert_eq!(texts("笔记本"), vec![5]);
    assert_eq!(texts("会議室"), vec![6]);
    assert_eq!(texts("会议 OR 会議"), vec![5, 6]);
    assert_eq!(texts("picture"), vec![7]);
    let hit = &store.search(&SearchQuery::new("sofa")).unwrap()[0];
    assert_eq!(hit.session_id, "20260522_120000_0a0b0c");
    assert!(hit.snippet.contains(">>>sofa<<<"), "{}", hit.snippet);
}

#[test]
fn a_python_session_is_continued_with_complete_rows() {
    let (_dir, db) = python_home();
    let store = SessionStore::open(&db).unwrap();
    let id = "20260521_090000_d4e5f6";
    let v = store.get_session(id).unwrap().unwrap().history_version;
    store
        .append_message_checked(id, &Message::user("谢谢，还有充电器呢？"), None, v)
        .unwrap();
    let mut reply = Message::assistant("充电器在抽屉里。");
    reply.finish_reason = Some(FinishReason::Stop);
    let usage = Usage {
        input_tokens: 40,
        output_tokens: 9,
        ..Usage::default()
    };
    store
        .append_message_with_usage_checked(
            id,
            &reply,
            &hermes_store::UsageRecord {
                model: "qwen/qwen3-coder",
                provider: "openrouter",
                base_url: "https://openrouter.ai/api/v1",
                usage: &usage,
                cost_usd: Some(0.001),
            },
            v,
        )
        .unwrap();
    let rec = store.get_session(id).unwrap().unwrap();
    assert_eq!(rec.message_count, 4);
    assert_eq!(rec.input_tokens, 40);
    assert_eq!(rec.provider, "openrouter");
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (role, content, active, finish): (String, String, i64, String) = conn
        .query_row(
            "SELECT role, content, active, finish_reason FROM messages \
             WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        (role.as_str(), content.as_str(), active),
        ("assistant", "充电器在抽屉里。", 1)
    );
    assert_eq!(finish, "stop");
    let (calls, cost): (i64, f64) = conn
        .query_row(
            "SELECT api_call_count, estimated_cost_usd FROM sessions WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(calls, 1);
    assert!((cost - 0.001).abs() < 1e-12);
    let trigram: i64 = conn
        .query_row(
            "SELECT count(*) FROM messages_fts_trigram WHERE content LIKE '%抽屉%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(trigram, 1, "Python's trigger indexed hermes' row");
}

/// Everything hermes' message model holds survives the trip through Python's columns (and
/// `hermes_messages` for what they cannot hold), and Python's own columns read as Python
/// wrote them.
#[test]
fn messages_round_trip_through_pythons_columns() {
    let store = SessionStore::open_in_memory().unwrap();
    store
        .create_session(&NewSession {
            id: "s".into(),
            source: "cli".into(),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .unwrap();
    let mut call = Message::assistant("let me look");
    call.tool_calls = vec![
        ToolCall::new("call_7|fc_7", "read_file", r#"{"path":"a.rs"}"#),
        ToolCall::new("call_8", "terminal", "  "),
    ];
    call.reasoning = Some(Reasoning {
        text: "thinking".into(),
        signature: Some("c2lnbmF0dXJl".into()),
    });
    call.finish_reason = Some(FinishReason::Other("pause_turn".into()));
    let mut parts = Message::user("first");
    parts.content.push(ContentPart::Text {
        text: "second".into(),
    });
    parts.content.push(ContentPart::Image {
        url: "data:image/png;base64,AAAA".into(),
    });
    let mut empty_reasoning = Message::assistant("ok");
    empty_reasoning.reasoning = Some(Reasoning {
        text: String::new(),
        signature: Some("redacted".into()),
    });
    let all = vec![
        Message::system("sys"),
        call,
        Message::tool("call_7|fc_7", "read_file", "fn main() {}"),
        parts,
        empty_reasoning,
        Message::assistant(""),
    ];
    for m in &all {
        store.append_message("s", m, Some(3)).unwrap();
    }
    let back: Vec<Message> = store
        .load_messages("s")
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(back, all);
    assert_eq!(store.get_session("s").unwrap().unwrap().tool_call_count, 2);
}

#[test]
fn an_unknown_newer_version_is_used_when_its_columns_are_there_and_not_altered() {
    let (_dir, db) = python_home();
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "UPDATE schema_version SET version = 27; \
             ALTER TABLE sessions ADD COLUMN future_column TEXT; \
             CREATE TABLE future_table (x);",
        )
        .unwrap();
    }
    let store = SessionStore::open(&db).unwrap();
    assert_eq!(store.schema_version().unwrap(), 27);
    assert!(!store.schema_check().unwrap().is_current());
    assert_eq!(store.list_sessions(10, 0).unwrap().len(), 3);
    store
        .append_message("20260521_090000_d4e5f6", &Message::user("more"), None)
        .unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let v: i64 = conn
        .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 27, "the version is left as it is");
    conn.query_row("SELECT count(future_column) FROM sessions", [], |r| {
        r.get::<_, i64>(0)
    })
    .unwrap();
    conn.query_row("SELECT count(*) FROM future_table", [], |r| {
        r.get::<_, i64>(0)
    })
    .unwrap();
}

#[test]
fn a_version_without_a_needed_column_is_refused_naming_both_versions_and_left_alone() {
    let (_dir, db) = python_home();
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "UPDATE schema_version SET version = 30; \
             ALTER TABLE messages DROP COLUMN reasoning_content;",
        )
        .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let err = SessionStore::open(&db).unwrap_err();
    assert!(matches!(err, StoreError::SchemaMismatch { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("schema version 30"), "{text}");
    assert!(text.contains("version 22"), "{text}");
    assert!(text.contains("messages.reasoning_content"), "{text}");
    assert!(text.contains("state.db"), "{text}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file was changed");
}

#[test]
fn a_truncated_file_is_refused_naming_it_and_left_alone() {
    let (_dir, db) = python_home();
    let bytes = std::fs::read(&db).unwrap();
    std::fs::write(&db, &bytes[..bytes.len() / 2]).unwrap();
    let err = SessionStore::open(&db).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, StoreError::NotASessionStore { .. }),
        "{err:?}"
    );
    assert!(text.contains(&db.display().to_string()), "{text}");
    assert!(text.contains("cut short"), "{text}");
    assert_eq!(std::fs::read(&db).unwrap(), &bytes[..bytes.len() / 2]);
    assert!(!Path::new(&format!("{}-wal", db.display())).exists());
}

#[test]
fn a_foreign_sqlite_file_or_a_text_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE invoices (id INTEGER, total REAL); INSERT INTO invoices VALUES (1, 2.5);",
        )
        .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let err = SessionStore::open(&db).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("another program"), "{text}");
    assert!(text.contains("invoices"), "{text}");
    assert!(text.contains(&db.display().to_string()), "{text}");
    assert_eq!(std::fs::read(&db).unwrap(), before);

    std::fs::write(
        &db,
        "not a database at all, just some text that is long enough to fill a header. ........",
    )
    .unwrap();
    let err = SessionStore::open(&db).unwrap_err();
    assert!(err.to_string().contains("not an SQLite database"), "{err}");
}

#[test]
fn the_write_probe_writes_nothing_and_reports_a_read_only_file() {
    let (_dir, db) = python_home();
    let store = SessionStore::open(&db).unwrap();
    let before = store.stats().unwrap();
    store.write_probe().unwrap();
    let after = store.stats().unwrap();
    assert_eq!(
        (before.sessions, before.messages),
        (after.sessions, after.messages)
    );
    assert_eq!(store.list_sessions(10, 0).unwrap().len(), 3);
    drop(store);

    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'disk says no'); END;",
    )
    .unwrap();
    drop(conn);
    let store = SessionStore::open(&db).unwrap();
    let err = store.write_probe().unwrap_err();
    assert!(err.to_string().contains("disk says no"), "{err}");
    // A real append fails loudly the same way: an error, nothing stored.
    let err = store
        .append_message("20260521_090000_d4e5f6", &Message::user("lost?"), None)
        .unwrap_err();
    assert!(err.to_string().contains("append_message"), "{err}");
    assert_eq!(
        store.load_messages("20260521_090000_d4e5f6").unwrap().len(),
        2
    );
}

#[test]
fn titles_are_unique_as_in_python() {
    let (_dir, db) = python_home();
    let store = SessionStore::open(&db).unwrap();
    let err = store
        .set_title("20260521_090000_d4e5f6", "Quarterly report hunt")
        .unwrap_err();
    assert!(matches!(err, StoreError::TitleTaken { .. }), "{err:?}");
    assert_eq!(
        store
            .set_title_numbered("20260521_090000_d4e5f6", "Quarterly report hunt")
            .unwrap(),
        "Quarterly report hunt #2"
    );
}

/// A gateway chat reaches the same session in both programs: hermes follows Python's
/// routing entry, and a session hermes starts for the chat (`/new`) moves that entry.
#[test]
fn gateway_routing_is_followed_and_moved() {
    let (_dir, db) = python_home();
    let key = "agent:main:telegram:dm:424242";
    let store = SessionStore::open(&db).unwrap();
    assert_eq!(
        store.route_session(key).unwrap().as_deref(),
        Some("20260522_120000_0a0b0c")
    );
    assert_eq!(
        store.route_session("agent:main:telegram:dm:1").unwrap(),
        None
    );
    store
        .create_session(&NewSession {
            id: "20260601_000000_111111".into(),
            source: "telegram".into(),
            session_key: Some(key.into()),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .unwrap();
    assert_eq!(
        store.route_session(key).unwrap().as_deref(),
        Some("20260601_000000_111111")
    );
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let entry: String = conn
        .query_row(
            "SELECT entry_json FROM gateway_routing WHERE session_key = ?1",
            [key],
            |r| r.get(0),
        )
        .unwrap();
    let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
    assert_eq!(entry["session_id"], "20260601_000000_111111");
    assert_eq!(
        entry["platform"], "telegram",
        "the rest of the entry is kept"
    );
    assert_eq!(entry["created_at"], "2026-05-22T12:00:00");
}
