#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! `hermes sessiondb migrate` (SQLite → PostgreSQL, `PgStore::import_sqlite`) on a real
//! server (`HERMES_TEST_PG_DSN`; skipped, saying so, without it): everything copies and reads
//! back the same through the store API, a non-empty target is refused without merge, an
//! interrupted import resumes, and a merge keeps the target's sessions.

use std::path::Path;

use hermes_protocol::{ContentPart, Message, Reasoning, ToolCall, Usage};
use hermes_store::{
    CronDelivery, CronRun, NewSession, PgOptions, PgStore, SUBAGENT_SOURCE, SearchQuery,
    SessionStore, StoreError, UsageRecord,
};

fn dsn() -> Option<String> {
    let dsn = std::env::var("HERMES_TEST_PG_DSN")
        .ok()
        .filter(|v| !v.is_empty());
    if dsn.is_none() {
        eprintln!("skipped: HERMES_TEST_PG_DSN is not set");
    }
    dsn
}

fn schema() -> String {
    format!(
        "import_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn new(id: &str, source: &str, title: Option<&str>, parent: Option<&str>) -> NewSession {
    NewSession {
        id: id.into(),
        source: source.into(),
        session_key: (source == "telegram").then(|| "agent:main:telegram:dm:7".into()),
        title: title.map(String::from),
        model: "gpt-test".into(),
        provider: "openrouter".into(),
        system_prompt: "You are hermes.\n\n  ".into(),
        parent_session_id: parent.map(String::from),
        cwd: Some("/tmp/p".into()),
    }
}

/// A SQLite home with every kind of row the import copies.
fn source(path: &Path) -> SessionStore {
    let s = SessionStore::open(path).unwrap();
    s.create_session(&new("s-cli", "cli", Some("Plans"), None))
        .unwrap();
    s.create_session(&new("s-tg", "telegram", None, None))
        .unwrap();
    s.create_session(&new("s-child", SUBAGENT_SOURCE, None, Some("s-cli")))
        .unwrap();
    let first = s
        .append_message("s-cli", &Message::user("needle one"), Some(3))
        .unwrap();
    let mut reply = Message::assistant("Looking.");
    reply.tool_calls = vec![ToolCall::new("c1", "read_file", r#"{"path":"a.rs"}"#)];
    reply.reasoning = Some(Reasoning {
        text: "think".into(),
        signature: Some("sig==".into()),
    });
    s.append_message("s-cli", &reply, None).unwrap();
    s.append_message(
        "s-cli",
        &Message::tool("c1", "read_file", "fn main() {}"),
        None,
    )
    .unwrap();
    s.replace_active_from("s-cli", Some(first), &[Message::user("summary needle")])
        .unwrap();
    let mut image = Message::user("look");
    image.content.push(ContentPart::Image {
        url: "data:image/png;base64,AAAA".into(),
    });
    s.append_message("s-tg", &image, None).unwrap();
    // A turn's trace id, alone and beside content parts (`hermes_messages`).
    s.append_message_traced("s-tg", &Message::assistant("seen"), Some(TRACE), None, 0)
        .unwrap();
    s.append_message_traced("s-tg", &image, Some(TRACE), None, 0)
        .unwrap();
    s.append_message("s-child", &Message::user("我的笔记本"), None)
        .unwrap();
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 5,
        cache_write_tokens: 1,
        reasoning_tokens: 2,
    };
    s.add_usage(
        "s-cli",
        &UsageRecord::new("gpt-test", "openrouter", &usage, Some(0.5)),
    )
    .unwrap();
    s.add_usage(
        "s-cli",
        &UsageRecord::new("other", "anthropic", &usage, None),
    )
    .unwrap();
    s.set_model_choice(
        "s-tg",
        "claude-x",
        "anthropic",
        Some(r#"{"model":"claude-x"}"#),
    )
    .unwrap();
    s.end_session("s-tg", "user_exit").unwrap();
    s.record_cron_run(&CronRun {
        run_id: "r1".into(),
        job_id: "j1".into(),
        job_name: "daily".into(),
        due_at: Some("2026-01-01T07:00:00Z".parse().unwrap()),
        started_at: "2026-01-01T07:00:01Z".parse().unwrap(),
        duration_ms: 1200,
        status: "ok".into(),
        error: None,
        output_path: Some("cron/output/j1/a.md".into()),
        deliveries: vec![CronDelivery {
            target: "local".into(),
            ok: true,
            detail: "saved".into(),
        }],
        session_id: Some("s-cli".into()),
    })
    .unwrap();
    s
}

const IDS: [&str; 3] = ["s-cli", "s-tg", "s-child"];

/// The trace id the source's traced messages carry.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn assert_same(src: &SessionStore, pg: &SessionStore) {
    for id in IDS {
        assert_eq!(
            src.get_session(id).unwrap(),
            pg.get_session(id).unwrap(),
            "{id}"
        );
        assert_eq!(
            src.load_all_messages(id).unwrap(),
            pg.load_all_messages(id).unwrap(),
            "{id}"
        );
        assert_eq!(
            src.usage_by_model(id).unwrap(),
            pg.usage_by_model(id).unwrap()
        );
        assert_eq!(src.model_choice(id).unwrap(), pg.model_choice(id).unwrap());
    }
    assert_eq!(
        src.child_sessions("s-cli").unwrap(),
        pg.child_sessions("s-cli").unwrap()
    );
    assert_eq!(
        src.cron_runs(None, 10).unwrap(),
        pg.cron_runs(None, 10).unwrap()
    );
    assert_eq!(
        src.list_sessions(10, 0).unwrap(),
        pg.list_sessions(10, 0).unwrap()
    );
    for q in ["needle", "笔记", "read_file"] {
        let ids = |s: &SessionStore| {
            let mut v: Vec<i64> = s
                .search(&SearchQuery::new(q))
                .unwrap()
                .iter()
                .map(|h| h.message_id)
                .collect();
            v.sort();
            v
        };
        assert_eq!(ids(src), ids(pg), "search {q}");
    }
}

fn raw(dsn: &str, sql: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client.batch_execute(sql).await.unwrap();
    });
}

#[test]
fn an_import_copies_everything_refuses_a_second_and_resumes_after_an_interruption() {
    let Some(dsn) = dsn() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let src = source(&path);
    let schema = schema();
    let options = PgOptions::new(dsn.clone()).with_schema(schema.clone());
    let target = PgStore::open(&options).unwrap();
    let mut lines = Vec::new();
    let report = target
        .import_sqlite(&path, false, &mut |l| lines.push(l.to_string()))
        .unwrap();
    assert!(!report.resumed);
    assert_eq!(
        (
            report.source_sessions,
            report.sessions_copied,
            report.sessions_skipped
        ),
        (3, 3, 0)
    );
    let messages = src.stats().unwrap().messages;
    assert_eq!(
        (report.messages, report.verified_messages),
        (messages, messages)
    );
    assert_eq!((report.usage_rows, report.cron_runs), (2, 1));
    assert!(lines.iter().any(|l| l.contains("verified")), "{lines:?}");
    let pg = SessionStore::from_backend(PgStore::open(&options).unwrap());
    assert_same(&src, &pg);
    let traced = pg
        .load_messages("s-tg")
        .unwrap()
        .iter()
        .filter(|m| m.trace_id.as_deref() == Some(TRACE))
        .count();
    assert_eq!(traced, 2, "trace ids are copied");
    // New messages get ids after the imported ones.
    pg.create_session(&new("pg-only", "cli", None, None))
        .unwrap();
    let next = pg
        .append_message("pg-only", &Message::user("after the import"), None)
        .unwrap();
    assert!(
        pg.load_all_messages("s-cli")
            .unwrap()
            .iter()
            .all(|m| m.id < next)
    );
    assert!(pg.delete_session("pg-only").unwrap());

    // The target has sessions now: a second run is refused without --merge.
    let err = target.import_sqlite(&path, false, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&err, StoreError::Import { detail } if detail.contains("--merge")),
        "{err}"
    );

    // An interruption after the sessions went in: two sessions not copied yet.
    raw(
        &dsn,
        &format!(
            "SET search_path = {schema}, public;
             UPDATE hermes_import_runs SET finished_at = NULL;
             UPDATE hermes_import_sessions SET done_at = NULL, messages = NULL
                 WHERE session_id IN ('s-cli', 's-child');
             DELETE FROM hermes_messages WHERE message_id IN
                 (SELECT id FROM messages WHERE session_id IN ('s-cli', 's-child'));
             DELETE FROM messages WHERE session_id IN ('s-cli', 's-child');
             DELETE FROM session_model_usage WHERE session_id = 's-cli';"
        ),
    );
    let report = target.import_sqlite(&path, false, &mut |_| {}).unwrap();
    assert!(report.resumed);
    assert_eq!((report.sessions_copied, report.usage_rows), (2, 2));
    assert_same(&src, &pg);
}

#[test]
fn a_merge_keeps_the_targets_sessions_and_renumbers_what_it_adds() {
    let Some(dsn) = dsn() else { return };
    let options = PgOptions::new(dsn).with_schema(schema());
    let pg = SessionStore::from_backend(PgStore::open(&options).unwrap());
    pg.create_session(&new("s-cli", "cli", Some("Plans"), None))
        .unwrap();
    let kept = pg
        .append_message("s-cli", &Message::user("the target's own"), None)
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let src = SessionStore::open(&path).unwrap();
    src.create_session(&new("s-cli", "cli", None, None))
        .unwrap();
    src.append_message("s-cli", &Message::user("source copy"), None)
        .unwrap();
    src.create_session(&new("s-new", "cli", Some("Plans"), None))
        .unwrap();
    for i in 0..3 {
        src.append_message("s-new", &Message::user(format!("m{i}")), None)
            .unwrap();
    }

    let target = PgStore::open(&options).unwrap();
    let err = target.import_sqlite(&path, false, &mut |_| {}).unwrap_err();
    assert!(matches!(err, StoreError::Import { .. }), "{err}");
    let report = target.import_sqlite(&path, true, &mut |_| {}).unwrap();
    assert_eq!((report.sessions_copied, report.sessions_skipped), (1, 1));
    assert_eq!(report.verified_messages, 3);
    let own: Vec<String> = pg
        .load_messages("s-cli")
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(own, vec!["the target's own"]);
    let added = pg.get_session("s-new").unwrap().unwrap();
    assert_eq!(added.title.as_deref(), Some("Plans #2"));
    let texts: Vec<String> = pg
        .load_messages("s-new")
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(texts, vec!["m0", "m1", "m2"]);
    assert!(
        pg.load_messages("s-new")
            .unwrap()
            .iter()
            .all(|m| m.id > kept)
    );
}
