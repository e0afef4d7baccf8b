//! A `state.db` of hermes' own earlier schema (`PRAGMA user_version` 4, written by the build
//! at commit 975e696: `tests/fixtures/legacy-v4/`, made by `make_legacy_fixture.rs`) is
//! backed up and migrated into the shared schema on first open; every session, message,
//! usage row, cron run and search hit survives (issue 17 item 1).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use hermes_protocol::{ContentPart, FinishReason, Message, Reasoning, Role, ToolCall};
use hermes_store::{SearchQuery, SessionStore};

fn legacy_home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy-v4/state.db"),
        &db,
    )
    .unwrap();
    (dir, db)
}

fn backups(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("state.db.bak-v4-"))
        .collect()
}

const A: &str = "20260101_080000_aaaaaa";
const B: &str = "20260102_090000_bbbbbb";
const C: &str = "20260102_090500_cccccc";

#[test]
fn a_v4_file_is_backed_up_then_migrated_keeping_everything() {
    let (dir, db) = legacy_home();
    let original = std::fs::read(&db).unwrap();
    let store = SessionStore::open(&db).unwrap();
    assert_eq!(store.schema_version().unwrap(), 22);
    assert!(store.schema_check().unwrap().is_current());
    assert_eq!(store.integrity_check().unwrap(), "ok");

    // The backup is the old file, still readable as the old schema.
    let copies = backups(dir.path());
    assert_eq!(copies.len(), 1, "{copies:?}");
    let old = rusqlite::Connection::open(&copies[0]).unwrap();
    let v: i64 = old
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 4);
    let n: i64 = old
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 8);
    assert!(!original.is_empty());

    // Sessions: the conversation list, titles (made unique), counts, tokens, cost.
    let list: Vec<String> = store
        .list_sessions(10, 0)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(list, [B, A], "the subagent session stays out of the list");
    let a = store.get_session(A).unwrap().unwrap();
    assert_eq!(
        a.title.as_deref(),
        Some("Legacy notes (20260101_080000_aaaaaa)")
    );
    assert_eq!(
        (a.model.as_str(), a.provider.as_str()),
        ("anthropic/claude-sonnet-4", "openrouter")
    );
    assert_eq!(a.system_prompt, "You are hermes.\n\nBe brief.");
    assert_eq!((a.message_count, a.tool_call_count), (4, 1));
    assert_eq!(
        (a.input_tokens, a.output_tokens, a.cache_read_tokens),
        (2000, 100, 400)
    );
    assert_eq!(a.cost_usd, Some(0.012));
    assert_eq!(a.history_version, 1, "the undo's version bump is kept");
    assert_eq!(
        store.model_choice(A).unwrap().as_deref(),
        Some(r#"{"model":"x"}"#)
    );
    let b = store.get_session(B).unwrap().unwrap();
    assert_eq!(b.title.as_deref(), Some("Legacy notes"));
    assert_eq!(b.end_reason.as_deref(), Some("user_exit"));
    assert_eq!(b.source, "telegram");
    let children = store.child_sessions(A).unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].id, C);
    assert_eq!(store.subagent_parent(C).unwrap().as_deref(), Some(A));

    // Messages, exactly, with their row ids.
    let all = store.load_all_messages(A).unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(
        all[0].message,
        Message::user("remind me about the zebra migration")
    );
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new(
        "call_1|fc_1",
        "read_file",
        r#"{"path":"notes/zebra.md"}"#,
    )];
    call.finish_reason = Some(FinishReason::ToolCalls);
    assert_eq!(all[1].message, call);
    assert_eq!(
        all[2].message,
        Message::tool("call_1|fc_1", "read_file", "zebra: move on Friday")
    );
    assert_eq!(
        all[3].message.reasoning,
        Some(Reasoning {
            text: "The note says Friday.".into(),
            signature: Some("sig-123".into())
        })
    );
    assert!(!all[4].active);
    assert_eq!(store.load_messages(A).unwrap().len(), 4);
    let image = &store.load_messages(B).unwrap()[1].message;
    assert_eq!(image.role, Role::User);
    assert_eq!(
        image.content[1],
        ContentPart::Image {
            url: "data:image/png;base64,iVBORw0KGgo=".into()
        }
    );
    let ids_before: Vec<i64> = old
        .prepare("SELECT id FROM messages ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let ids_after: Vec<i64> = conn
        .prepare("SELECT id FROM messages ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ids_before, ids_after);

    // Usage rows per model, cron runs, search hits (words, tools, CJK, inactive).
    let usage = store.usage_by_model(A).unwrap();
    assert_eq!(usage.len(), 2);
    assert_eq!(usage[0].model, "anthropic/claude-sonnet-4");
    assert_eq!(usage[0].cost_usd, Some(0.012));
    assert_eq!(usage[1].cost_usd, None);
    assert_eq!(usage[1].usage.input_tokens, 1000);
    let runs = store.cron_runs(None, 10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].job_name, "daily digest");
    assert_eq!(runs[0].deliveries[0].detail, "saved");
    let hits = |q: &str| store.search(&SearchQuery::new(q)).unwrap().len();
    assert_eq!(hits("zebra"), 4);
    assert_eq!(hits("read_file"), 2);
    assert_eq!(hits("笔记"), 1);
    assert_eq!(hits("giraffe"), 1);
    assert_eq!(store.search_index_check().unwrap().missing, 0);

    // Old tables are gone; the second open migrates nothing and backs up nothing.
    let legacy: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('messages_trgm', 'session_usage', \
             'cron_runs', 'hermes_legacy_sessions')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(legacy, 0);
    drop(store);
    drop(SessionStore::open(&db).unwrap());
    assert_eq!(backups(dir.path()).len(), 1);
}

/// A legacy file a Python Hermes had opened (it adds its tables, indexes and triggers next to
/// hermes' old ones) still migrates.
#[test]
fn a_v4_file_that_python_touched_still_migrates() {
    let (_dir, db) = legacy_home();
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES (22);
             CREATE INDEX idx_sessions_source ON sessions(source);
             CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
             INSERT INTO state_meta VALUES ('k', 'v');
             CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
                 INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
             END;",
        )
        .unwrap();
    }
    let store = SessionStore::open(&db).unwrap();
    assert!(store.schema_check().unwrap().is_current());
    assert_eq!(store.load_all_messages(A).unwrap().len(), 5);
    assert_eq!(store.search(&SearchQuery::new("zebra")).unwrap().len(), 4);
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let kept: String = conn
        .query_row("SELECT value FROM state_meta WHERE key = 'k'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(kept, "v");
    let on: String = conn
        .query_row(
            "SELECT tbl_name FROM sqlite_master WHERE name = 'idx_sessions_source'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(on, "sessions");
}
