//! Both programs on one `state.db`, against the real Python Hermes 0.19.0 (issue 17 item 1):
//! Python writes → hermes reads, searches and continues → Python reads hermes' rows; hermes
//! creates the file → Python opens it without migrating and continues a hermes session →
//! hermes reads that; and Python's own `hermes sessions list` shows a hermes session.
//!
//! Needs `HERMES_PYTHON_HERMES` (the venv that `scripts/python-hermes.sh` prints); without it
//! each test prints why it is skipped and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use hermes_protocol::{FinishReason, Message, ToolCall, Usage};
use hermes_store::{NewSession, SearchQuery, SessionStore, UsageRecord};
use serde_json::Value;

fn venv() -> Option<PathBuf> {
    match std::env::var_os("HERMES_PYTHON_HERMES") {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            eprintln!(
                "skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh installs \
                 Python Hermes 0.19.0 and prints the venv; .ci/run sets it)"
            );
            None
        }
    }
}

/// Runs `code` with the venv's Python, `HERMES_HOME` = `home`; returns its last stdout line
/// as JSON.
fn python(venv: &Path, home: &Path, code: &str) -> Value {
    let out = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(code)
        .env("HERMES_HOME", home)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

const PY_PRELUDE: &str = r#"
import json, os
from pathlib import Path
from hermes_state import SessionDB
db = SessionDB(db_path=Path(os.environ["HERMES_HOME"]) / "state.db")
"#;

#[test]
fn python_then_hermes_then_python() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("state.db");
    python(
        &venv,
        home.path(),
        &format!(
            "{PY_PRELUDE}
db.create_session('py_1', 'cli', model='openai/gpt-5', system_prompt='You are Hermes.')
db.set_session_title('py_1', 'Python started this')
db.append_message('py_1', 'user', content='find the platypus invoice')
db.append_message('py_1', 'assistant', content=None, tool_calls=[{{'id': 'call_p1', 'type': 'function',
    'function': {{'name': 'search_files', 'arguments': json.dumps({{'q': 'platypus'}})}}}}], finish_reason='tool_calls')
db.append_message('py_1', 'tool', content='invoices/platypus.pdf', tool_call_id='call_p1', tool_name='search_files')
db.append_message('py_1', 'assistant', content='找到了：鸭嘴兽发票', finish_reason='stop')
db.update_token_counts('py_1', input_tokens=100, output_tokens=20, model='openai/gpt-5', billing_provider='openrouter', api_call_count=1)
db.close()
print(json.dumps({{'ok': True}}))
"
        ),
    );

    // hermes lists, reads, searches and continues Python's session, and starts its own.
    let store = SessionStore::open(&db).unwrap();
    let py = store.find_session("Python started this").unwrap().unwrap();
    assert_eq!(py.id, "py_1");
    assert_eq!(py.message_count, 4);
    let msgs = store.load_messages("py_1").unwrap();
    assert_eq!(msgs[1].message.tool_calls[0].name, "search_files");
    assert_eq!(msgs[1].message.tool_calls[0].id, "call_p1");
    assert_eq!(
        store.search(&SearchQuery::new("platypus")).unwrap().len(),
        3
    );
    assert_eq!(store.search(&SearchQuery::new("鸭嘴兽")).unwrap().len(), 1);
    let v = py.history_version;
    store
        .append_message_checked("py_1", &Message::user("and the wombat receipt?"), None, v)
        .unwrap();
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new(
        "call_h1",
        "read_file",
        r#"{"path":"wombat.txt"}"#,
    )];
    call.finish_reason = Some(FinishReason::ToolCalls);
    let usage = Usage {
        input_tokens: 50,
        output_tokens: 7,
        ..Usage::default()
    };
    let record = UsageRecord {
        model: "openai/gpt-5",
        provider: "openrouter",
        base_url: "https://openrouter.ai/api/v1",
        usage: &usage,
        cost_usd: Some(0.002),
    };
    store
        .append_message_with_usage_checked("py_1", &call, &record, v)
        .unwrap();
    store
        .append_message(
            "py_1",
            &Message::tool("call_h1", "read_file", "wombat receipt: $12"),
            None,
        )
        .unwrap();
    store
        .create_session(&NewSession {
            id: "20260601_100000_abcdef".into(),
            source: "cli".into(),
            model: "anthropic/claude-sonnet-4".into(),
            provider: "openrouter".into(),
            system_prompt: "You are hermes.".into(),
            cwd: Some("/tmp/work".into()),
            ..NewSession::default()
        })
        .unwrap();
    let h = "20260601_100000_abcdef";
    store
        .append_message(h, &Message::user("hello from the echidna"), None)
        .unwrap();
    let mut answer = Message::assistant("Hi echidna!");
    answer.finish_reason = Some(FinishReason::Stop);
    store
        .append_message_with_usage_checked(h, &answer, &record, 0)
        .unwrap();
    store.set_title(h, "hermes made this").unwrap();
    drop(store);

    // Python reads hermes' rows.
    let seen = python(
        &venv,
        home.path(),
        &format!(
            "{PY_PRELUDE}
conv = db.get_messages_as_conversation('py_1')
s = db.get_session('20260601_100000_abcdef')
hconv = db.get_messages_as_conversation('20260601_100000_abcdef')
listed = [r['id'] for r in db.list_sessions_rich(limit=20)]
hits = [r['session_id'] for r in db.search_messages('wombat')]
ehits = [r['session_id'] for r in db.search_messages('echidna')]
print(json.dumps({{'conv': conv, 'session': s, 'hconv': hconv, 'listed': listed,
                   'hits': hits, 'ehits': ehits, 'py': db.get_session('py_1')}}, default=str))
"
        ),
    );
    let conv = seen["conv"].as_array().unwrap();
    assert_eq!(conv.len(), 7, "{conv:?}");
    assert_eq!(conv[4]["role"], "user");
    assert_eq!(conv[4]["content"], "and the wombat receipt?");
    assert_eq!(conv[5]["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(conv[5]["tool_calls"][0]["id"], "call_h1");
    assert_eq!(conv[5]["finish_reason"], "tool_calls");
    assert_eq!(conv[6]["tool_call_id"], "call_h1");
    assert_eq!(conv[6]["tool_name"], "read_file");
    let py = &seen["py"];
    assert_eq!(py["message_count"], 7);
    assert_eq!(py["tool_call_count"], 2);
    assert_eq!(py["input_tokens"], 150);
    // The endpoint of hermes' call is recorded where Python records its own.
    assert_eq!(
        py["billing_base_url"], "https://openrouter.ai/api/v1",
        "{py}"
    );
    let s = &seen["session"];
    for (k, want) in [
        ("source", "cli"),
        ("model", "anthropic/claude-sonnet-4"),
        ("system_prompt", "You are hermes."),
        ("title", "hermes made this"),
        ("billing_provider", "openrouter"),
        ("cwd", "/tmp/work"),
    ] {
        assert_eq!(s[k], want, "{k}: {s}");
    }
    assert_eq!(s["message_count"], 2);
    assert_eq!(s["input_tokens"], 50);
    assert_eq!(s["api_call_count"], 1);
    assert!(s["started_at"].as_f64().unwrap() > 1.7e9);
    assert!((s["estimated_cost_usd"].as_f64().unwrap() - 0.002).abs() < 1e-9);
    assert_eq!(seen["hconv"][1]["content"], "Hi echidna!");
    let listed: Vec<&str> = seen["listed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        listed.contains(&"py_1") && listed.contains(&h),
        "{listed:?}"
    );
    assert!(
        seen["hits"].as_array().unwrap().iter().any(|x| x == "py_1"),
        "{seen}"
    );
    assert!(
        seen["ehits"].as_array().unwrap().iter().any(|x| x == h),
        "{seen}"
    );

    // After Python opened (and "migrated") the file, hermes' own rows are still there.
    let store = SessionStore::open(&db).unwrap();
    assert!(store.schema_check().unwrap().is_current());
    assert_eq!(store.load_messages(h).unwrap().len(), 2);
    assert_eq!(store.usage_by_model(h).unwrap()[0].cost_usd, Some(0.002));
}

#[test]
fn hermes_then_python_then_hermes() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("state.db");
    let id = "20260602_110000_fedcba";
    {
        let store = SessionStore::open(&db).unwrap();
        store
            .create_session(&NewSession {
                id: id.into(),
                source: "telegram".into(),
                session_key: Some("agent:main:telegram:dm:777".into()),
                model: "m1".into(),
                provider: "openrouter".into(),
                system_prompt: "sys".into(),
                ..NewSession::default()
            })
            .unwrap();
        store
            .append_message(id, &Message::user("ping from telegram"), None)
            .unwrap();
        store
            .set_model_choice(id, "m1", "openrouter", Some("choice"))
            .unwrap();
        let v = store.get_session(id).unwrap().unwrap().history_version;
        store.end_session(id, "agent_close").unwrap();
        assert_eq!(
            store.get_session(id).unwrap().unwrap().history_version,
            v + 1
        );
    }
    let before: Vec<(String, Option<String>)> = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.prepare("SELECT name, sql FROM sqlite_master ORDER BY name")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let seen = python(
        &venv,
        home.path(),
        &format!(
            "{PY_PRELUDE}
peer = db.find_latest_gateway_session_for_peer(source='telegram', session_key='agent:main:telegram:dm:777')
db.append_message('{id}', 'assistant', content='pong from python', finish_reason='stop')
v = db._conn.execute('SELECT version FROM schema_version').fetchall()
print(json.dumps({{'peer': peer['id'] if peer else None, 'versions': [r[0] for r in v]}}))
"
        ),
    );
    assert_eq!(
        seen["peer"], id,
        "Python's gateway finds hermes' session by its key"
    );
    assert_eq!(seen["versions"], serde_json::json!([22]));
    let after: Vec<(String, Option<String>)> = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.prepare("SELECT name, sql FROM sqlite_master ORDER BY name")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(
        before, after,
        "Python changed the schema of a file hermes made"
    );
    let store = SessionStore::open(&db).unwrap();
    let msgs = store.load_messages(id).unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1].message.text(), "pong from python");
    assert_eq!(store.model_choice(id).unwrap().as_deref(), Some("choice"));
    assert_eq!(store.get_session(id).unwrap().unwrap().message_count, 2);
}

#[test]
fn pythons_cli_lists_a_hermes_session() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    {
        let store = SessionStore::open(home.path().join("state.db")).unwrap();
        store
            .create_session(&NewSession {
                id: "20260603_120000_c0ffee".into(),
                source: "cli".into(),
                model: "m".into(),
                provider: "openrouter".into(),
                ..NewSession::default()
            })
            .unwrap();
        store
            .append_message(
                "20260603_120000_c0ffee",
                &Message::user("list me from python"),
                None,
            )
            .unwrap();
    }
    let out = Command::new(venv.join("bin/hermes"))
        .args(["sessions", "list"])
        .env("HERMES_HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("20260603_120000_c0ffee"), "{text}");
    assert!(text.contains("list me from python"), "{text}");
}

#[test]
fn a_gateway_chat_continues_across_the_switch() {
    let Some(venv) = venv() else { return };
    let home = tempfile::tempdir().unwrap();
    let key = "agent:main:telegram:dm:9001";
    // Python's gateway session store (routing entry in state.db, scoped by sessions dir).
    let code = format!(
        "{PY_PRELUDE}
from gateway.session import SessionStore as GwStore, SessionSource
from gateway.config import GatewayConfig, Platform
gw = GwStore(Path(os.environ['HERMES_HOME']) / 'sessions', GatewayConfig())
gw._db = db
src = SessionSource(platform=Platform.TELEGRAM, chat_id='9001', chat_type='dm', user_id='9001')
e = gw.get_or_create_session(src)
db.create_session(e.session_id, 'telegram', session_key=e.session_key, model='m')
db.append_message(e.session_id, 'user', content='hello from python telegram')
print(json.dumps({{'key': e.session_key, 'id': e.session_id}}))
"
    );
    let first = python(&venv, home.path(), &code);
    assert_eq!(first["key"], key);
    let py_id = first["id"].as_str().unwrap().to_string();
    let store = SessionStore::open(home.path().join("state.db")).unwrap();
    assert_eq!(
        store.route_session(key).unwrap().as_deref(),
        Some(py_id.as_str())
    );
    // hermes starts a new conversation in that chat (`/new`).
    store
        .create_session(&NewSession {
            id: "20260604_130000_0d0d0d".into(),
            source: "telegram".into(),
            session_key: Some(key.into()),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .unwrap();
    drop(store);
    let again = python(
        &venv,
        home.path(),
        &format!(
            "{PY_PRELUDE}
from gateway.session import SessionStore as GwStore, SessionSource
from gateway.config import GatewayConfig, Platform
gw = GwStore(Path(os.environ['HERMES_HOME']) / 'sessions', GatewayConfig())
gw._db = db
src = SessionSource(platform=Platform.TELEGRAM, chat_id='9001', chat_type='dm', user_id='9001')
print(json.dumps({{'id': gw.get_or_create_session(src).session_id}}))
"
        ),
    );
    assert_eq!(again["id"], "20260604_130000_0d0d0d", "{again}");
}
