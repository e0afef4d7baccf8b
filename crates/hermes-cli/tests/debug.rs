//! `hermes debug session` and `hermes debug prompt` (issue 24 item 4) through the binary: a
//! session made by a real `chat -q` turn against the mock provider (a failed call retried, two
//! tool calls, an answer) shows every stored message with its token count, each model call's
//! request size, the tool results' timings, the retry from errors.log and the usage per model;
//! a secret in a message never reaches the output whole; an unknown id fails in one line; the
//! prompt's layers add up to its total in text and JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

const SECRET: &str = "sk-proj-Zq8RkTn4VwXy2LmPa9BcDe7FgHiJk";

/// A session made by one turn: a 503 (retried), `read_file` and `search_files` calls, an
/// answer. Returns its id.
async fn session_with_tools(env: &Env) -> String {
    std::fs::write(env.cwd.path().join("notes.txt"), "the notes say hello\n").unwrap();
    env.mock.push(MockResponse::from_bytes(
        503,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"overloaded, try again"}}"#,
    ));
    env.mock.push(MockResponse::tool_calls(&[
        ("call_read", "read_file", r#"{"path":"notes.txt"}"#),
        ("call_find", "search_files", r#"{"pattern":"hello"}"#),
    ]));
    env.mock.push(MockResponse::text("The notes say hello."));
    let question = format!("Read notes.txt; my key is {SECRET}, keep it safe");
    env.run_ok(&["chat", "-q", &question]).await;
    let store = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
    let sessions = store.list_sessions(10, 0).unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    sessions[0].id.clone()
}

#[tokio::test]
async fn debug_session_shows_every_message_with_tokens_calls_tools_and_retries() {
    let env = Env::new().await;
    let id = session_with_tools(&env).await;
    let store = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
    let stored = store.load_all_messages(&id).unwrap();
    assert_eq!(
        stored.len(),
        5,
        "user, assistant, 2 tool results, assistant"
    );

    // A unique prefix works as with `hermes sessions`.
    let prefix = &id[..id.len() - 2];
    let out = env
        .run_ok(&["debug", "session", prefix, "--show-tokens"])
        .await;
    let text = stdout(&out);
    assert!(
        stderr(&out).trim().is_empty(),
        "nothing logged: {}",
        stderr(&out)
    );
    assert!(text.contains(&id), "{text}");
    for part in [
        "Messages",
        "tokens",
        "→ read_file, search_files",
        "← read_file",
        "← search_files",
        "Model calls",
        "Tool timings",
        "tool durations are not stored",
        "Retries and errors",
        "Usage by model",
        "mock-model",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    assert!(!text.contains(SECRET), "the key is shown whole: {text}");

    // The same numbers as JSON: every message with an estimated token count.
    let json: serde_json::Value = serde_json::from_str(&stdout(
        &env.run_ok(&["debug", "session", &id, "--show-tokens", "--json"])
            .await,
    ))
    .unwrap();
    let messages = json["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5, "{json}");
    let estimator = hermes_context::TokenEstimator::new();
    for (m, s) in messages.iter().zip(&stored) {
        assert_eq!(
            m["tokens"].as_u64().unwrap(),
            estimator.estimate_message(&s.message),
            "{m}"
        );
        assert!(!m["preview"].as_str().unwrap().contains(SECRET), "{m}");
        // Each message's row of the table carries its token count.
        let row = format!(
            "{}  {}",
            m["index"],
            s.timestamp
                .with_timezone(&chrono::Local)
                .format("%H:%M:%S%.3f")
        );
        let line = text.lines().find(|l| l.trim_start().starts_with(&row));
        let line = line.unwrap_or_else(|| panic!("no row {row}: {text}"));
        assert!(line.contains(&format!(" {} ", m["tokens"])), "{line}");
    }
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);

    // Two model calls; the second one's request holds the first four messages.
    let calls = json["model_calls"]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{json}");
    let record = store.get_session(&id).unwrap().unwrap();
    let first: Vec<hermes_protocol::Message> =
        stored[..4].iter().map(|m| m.message.clone()).collect();
    assert_eq!(calls[1]["request_messages"], 4);
    assert_eq!(
        calls[1]["request_tokens"].as_u64().unwrap(),
        estimator.estimate_request(&record.system_prompt, &first, &[])
    );
    assert!(
        calls[1]["request_bytes"].as_u64().unwrap() > calls[0]["request_bytes"].as_u64().unwrap()
    );
    // Tool results paired with the message that asked for them.
    let tools = json["tool_timings"]["calls"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read_file", "search_files"]);
    assert_eq!(json["tool_timings"]["stored"], false);
    assert!(tools.iter().all(|t| t["elapsed_ms"].as_i64().unwrap() >= 0));
    // The failed call's retry, from errors.log.
    let events = json["log_events"]["events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["kind"] == "retry"),
        "no retry found: {json}\n{}",
        std::fs::read_to_string(env.home.home().logs_dir().join("errors.log")).unwrap_or_default()
    );
    // Usage per model as the store keeps it.
    let usage = json["usage_by_model"].as_array().unwrap();
    assert_eq!(usage.len(), 1, "{json}");
    assert_eq!(usage[0]["model"], "mock-model");
    assert_eq!(usage[0]["calls"], 2);

    // Without --show-tokens, no token column for messages.
    let plain: serde_json::Value = serde_json::from_str(&stdout(
        &env.run_ok(&["debug", "session", &id, "--json"]).await,
    ))
    .unwrap();
    assert!(plain["messages"][0].get("tokens").is_none());
}

#[tokio::test]
async fn debug_session_of_an_unknown_id_fails_in_one_line() {
    let env = Env::new().await;
    let out = env
        .run(&["debug", "session", "20991231_235959_abcdef"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no session matches"), "{err}");
    let out = env.run(&["debug", "prompt", "--session", "nope"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
}

/// Escape sequences in stored text (the user's message, the model's reply and the tool name
/// it made up) are shown in caret notation: `debug session` cannot set the terminal's title
/// or clear its screen.
#[tokio::test]
async fn debug_session_shows_escape_sequences_instead_of_sending_them() {
    let env = Env::new().await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_x",
        "evil\u{1b}]0;tool-title\u{7}",
        "{}",
    )]));
    env.mock.push(MockResponse::text(
        "done \u{1b}[2J\u{1b}]52;c;Y2xpcA==\u{7} cleared",
    ));
    env.run_ok(&["chat", "-q", "hi \u{1b}]0;user-title\u{7} there"])
        .await;
    let store = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
    let id = store.list_sessions(1, 0).unwrap().remove(0).id;
    let out = env.run_ok(&["debug", "session", &id]).await;
    let text = stdout(&out);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("hi ^[]0;user-title^G there"), "{text}");
    assert!(
        text.contains("done ^[[2J^[]52;c;Y2xpcA==^G cleared"),
        "{text}"
    );
    assert!(text.contains("evil^[]0;tool-title^G"), "{text}");
}

/// A row whose `tool_calls` column is not JSON (another program wrote it, or a hand edit):
/// `debug session` still shows the other messages and names the broken row with its column
/// and reason, in text and in JSON, instead of failing as a whole.
#[tokio::test]
async fn debug_session_names_an_unreadable_row_and_shows_the_rest() {
    let env = Env::new().await;
    let id = session_with_tools(&env).await;
    let path = env.home.home().state_db();
    let broken: i64 = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let row: i64 = conn
            .query_row(
                "SELECT id FROM messages WHERE session_id = ?1 AND tool_calls IS NOT NULL \
                 AND tool_calls != '' ORDER BY id LIMIT 1",
                [&id],
                |r| r.get(0),
            )
            .unwrap();
        conn.execute(
            "UPDATE messages SET tool_calls = '[{\"id\": broken' WHERE id = ?1",
            [row],
        )
        .unwrap();
        row
    };
    let out = env.run_ok(&["debug", "session", &id]).await;
    let text = stdout(&out);
    assert!(
        text.contains("1 stored row(s) cannot be read and are not shown above"),
        "{text}"
    );
    assert!(
        text.contains(&format!("message {broken} (tool_calls): ")),
        "{text}"
    );
    assert!(
        text.contains("The notes say hello."),
        "the rest is shown: {text}"
    );

    let out = env.run_ok(&["debug", "session", &id, "--json"]).await;
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let unreadable = json["unreadable_messages"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1, "{json}");
    assert_eq!(unreadable[0]["id"], broken);
    assert_eq!(unreadable[0]["column"], "tool_calls");
    assert!(
        json["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["id"] != broken),
        "{json}"
    );
}

/// A stored session's model (anyone's `/model` words in a gateway chat) with escape
/// sequences: `debug prompt --session` shows them in caret notation.
#[tokio::test]
async fn debug_prompt_shows_escape_sequences_of_a_stored_model() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("Hi."));
    env.run_ok(&["chat", "-q", "hello"]).await;
    let store = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
    let id = store.list_sessions(1, 0).unwrap().remove(0).id;
    drop(store);
    let conn = rusqlite::Connection::open(env.home.home().state_db()).unwrap();
    conn.execute(
        "UPDATE sessions SET model = 'm\u{1b}]0;model-title\u{7}' WHERE id = ?1",
        [&id],
    )
    .unwrap();
    drop(conn);
    let text = stdout(&env.run_ok(&["debug", "prompt", "--session", &id]).await);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("m^[]0;model-title^G on "), "{text}");
}

/// The layers of `debug prompt --json`, as (name, bytes, tokens), and the totals.
fn layers(json: &serde_json::Value) -> (Vec<(String, u64, u64)>, u64, u64) {
    let prompt = &json["system_prompt"];
    let layers = prompt["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_string(),
                l["bytes"].as_u64().unwrap(),
                l["tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    (
        layers,
        prompt["bytes"].as_u64().unwrap(),
        prompt["tokens"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn debug_prompt_lists_the_layers_and_they_add_up() {
    let env = Env::new().await;
    std::fs::write(
        env.cwd.path().join("AGENTS.md"),
        "# Project\n\nUse tabs in this project.\n",
    )
    .unwrap();
    let out = env.run_ok(&["debug", "prompt"]).await;
    assert!(
        stderr(&out).trim().is_empty(),
        "nothing logged: {}",
        stderr(&out)
    );
    let text = stdout(&out);
    for part in [
        "System prompt layer",
        "identity",
        "tool_guidance",
        "context_files",
        "metadata",
        "Tool schemas",
        "read_file",
        "tool schemas (",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }

    let json: serde_json::Value =
        serde_json::from_str(&stdout(&env.run_ok(&["debug", "prompt", "--json"]).await)).unwrap();
    let (layers_now, bytes, tokens) = layers(&json);
    assert!(layers_now.len() >= 4, "{json}");
    assert_eq!(layers_now[0].0, "identity");
    assert_eq!(layers_now.iter().map(|l| l.1).sum::<u64>(), bytes, "{json}");
    assert_eq!(
        layers_now.iter().map(|l| l.2).sum::<u64>(),
        tokens,
        "{json}"
    );
    // Each layer's row in the table shows the JSON's numbers.
    for (name, b, t) in &layers_now {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[1..3], [b.to_string(), t.to_string()], "{line}");
    }
    // The tool schemas' share: the same numbers `prompt-size` gives.
    let size: serde_json::Value =
        serde_json::from_str(&stdout(&env.run_ok(&["prompt-size", "--json"]).await)).unwrap();
    assert_eq!(json["tools"]["bytes"], size["tools"]["bytes"]);
    assert_eq!(json["tools"]["tokens"], size["tools"]["tokens"]);
    assert_eq!(
        json["system_prompt"]["bytes"],
        size["system_prompt"]["bytes"]
    );
    assert_eq!(
        json["total"]["bytes"].as_u64().unwrap(),
        bytes + json["tools"]["bytes"].as_u64().unwrap()
    );
    let share = json["tools"]["share_of_bytes"].as_f64().unwrap();
    assert!(share > 0.0 && share < 1.0, "{json}");
}

#[tokio::test]
async fn debug_prompt_of_a_session_splits_its_stored_prompt() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("Hi."));
    env.run_ok(&["chat", "-q", "hello"]).await;
    let store = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
    let record = store.list_sessions(1, 0).unwrap().remove(0);

    let json: serde_json::Value = serde_json::from_str(&stdout(
        &env.run_ok(&["debug", "prompt", "--session", &record.id, "--json"])
            .await,
    ))
    .unwrap();
    assert_eq!(json["prompt"]["session_id"], record.id.as_str());
    assert_eq!(json["prompt"]["split_into_layers"], true, "{json}");
    let (split, bytes, _) = layers(&json);
    assert_eq!(bytes, record.system_prompt.len() as u64);
    assert_eq!(split.iter().map(|l| l.1).sum::<u64>(), bytes);
    assert_eq!(split[0].0, "identity");

    // A prompt written by something else entirely: one block with its totals.
    let conn = rusqlite::Connection::open(env.home.home().state_db()).unwrap();
    conn.execute(
        "UPDATE sessions SET system_prompt = 'You are a pirate.' WHERE id = ?1",
        [&record.id],
    )
    .unwrap();
    drop(conn);
    let out = env
        .run_ok(&["debug", "prompt", "--session", &record.id])
        .await;
    let text = stdout(&out);
    assert!(text.contains("shown as one block"), "{text}");
    assert!(text.contains("stored prompt"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&stdout(
        &env.run_ok(&["debug", "prompt", "--session", &record.id, "--json"])
            .await,
    ))
    .unwrap();
    let (block, bytes, tokens) = layers(&json);
    assert_eq!(block.len(), 1);
    assert_eq!((block[0].1, block[0].2), (17, 5));
    assert_eq!((bytes, tokens), (17, 5));
}
