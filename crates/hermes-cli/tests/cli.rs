//! End-to-end tests of the `hermes` binary on a temporary HERMES_HOME against the mock
//! provider (no network, no keys).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, hermes, stderr, stdout};
use hermes_testkit::{MockProvider, MockResponse, TempHome};
use serde_json::Value;
use std::time::Duration;

#[tokio::test]
async fn one_shot_answer_on_stdout_progress_on_stderr() {
    let env = Env::new().await;
    std::fs::write(env.cwd.path().join("todo.txt"), "water plants\n").unwrap();
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "read_file",
        r#"{"path":"todo.txt"}"#,
    )]));
    env.mock
        .push(MockResponse::text("You need to water the plants."));
    let out = env.run(&["chat", "-q", "what is on my todo list?"]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "You need to water the plants.");
    assert!(
        stderr(&out).contains("▸ 📖 read_file todo.txt"),
        "stderr: {}",
        stderr(&out)
    );
    hermes_testkit::assert_request_invariants(&env.mock.requests());

    // The session is stored and can be listed, searched, shown and exported.
    let list = env.run(&["sessions", "list"]).await;
    assert!(
        stdout(&list).contains("what is on my todo list?"),
        "{}",
        stdout(&list)
    );
    let search = env.run(&["sessions", "search", "plants"]).await;
    assert!(stdout(&search).contains("water"), "{}", stdout(&search));
    // The first row under the header.
    let id = stdout(&list)
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let show = env.run(&["sessions", "show", &id]).await;
    assert!(stdout(&show).contains("→ read_file"), "{}", stdout(&show));
    let export = env
        .run(&["sessions", "export", &id, "--format", "json"])
        .await;
    let parsed: Value = serde_json::from_str(&stdout(&export)).expect("export is JSON");
    assert!(parsed.to_string().contains("water the plants"));
}

#[tokio::test]
async fn json_mode_writes_one_event_per_line() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("Paris."));
    let out = env
        .run(&["chat", "-q", "capital of France?", "--json"])
        .await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(events.first().unwrap()["type"], "turn_started");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn_finished");
    assert_eq!(last["outcome"], "completed");
    assert_eq!(last["final_text"], "Paris.");
    assert!(last["usage"]["output_tokens"].as_u64().is_some());
    assert!(events.iter().any(|e| e["type"] == "text_delta"));
}

#[tokio::test]
async fn provider_failure_exits_non_zero_with_the_reason() {
    let env = Env::new().await;
    env.mock.push(MockResponse::from_bytes(
        401,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"Invalid API key provided: sk-abc123def456ghi789jkl"}}"#,
    ));
    let out = env.run(&["chat", "-q", "hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("Invalid API key"), "{err}");
    assert!(
        !err.contains("sk-abc123def456ghi789jkl"),
        "keys are redacted: {err}"
    );
}

#[tokio::test]
async fn continue_resumes_the_latest_session_with_its_history() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("Nice to meet you, Ada."));
    env.mock.push(MockResponse::text("Your name is Ada."));
    let first = env.run(&["chat", "-q", "my name is Ada"]).await;
    assert!(first.status.success(), "{}", stderr(&first));
    let second = env.run(&["-c", "chat", "-q", "what is my name?"]).await;
    assert!(second.status.success(), "{}", stderr(&second));
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    let msgs = requests[1]["messages"].as_array().unwrap();
    let texts: Vec<&str> = msgs.iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(texts.contains(&"my name is Ada"), "{texts:?}");
    assert_eq!(
        requests[0]["messages"][0], requests[1]["messages"][0],
        "same stored system prompt"
    );
}

#[tokio::test]
async fn max_turns_flag_limits_the_loop() {
    let env = Env::new().await;
    env.mock.push(MockResponse::tool_calls(&[(
        "c1",
        "search_files",
        r#"{"pattern":"x"}"#,
    )]));
    env.mock.push(MockResponse::text("Stopped after one step."));
    let out = env.run(&["chat", "-q", "search", "--max-turns", "1"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Stopped after one step.");
    assert_eq!(env.mock.requests().len(), 2);
    assert_eq!(env.mock.requests()[1]["tool_choice"], "none");
}

#[tokio::test]
async fn nothing_configured_says_how_to_configure() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = hermes(home.path(), cwd.path(), &["chat", "-q", "hi"]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("no model provider is configured"), "{err}");
    assert!(err.contains("hermes model pull"), "{err}");
}

#[tokio::test]
async fn broken_config_reports_line_and_column() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(home.home().config_file(), "agent:\n  max_turns: lots\n").unwrap();
    let out = hermes(home.path(), cwd.path(), &["config", "check"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
    let out = hermes(home.path(), cwd.path(), &["chat", "-q", "hi"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
}

/// Issue 20 item 10: `config check` suggests the known key an unknown one is a near miss of.
#[tokio::test]
async fn config_check_names_the_near_miss_of_an_unknown_key() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        home.home().config_file(),
        "toolset: [web]
",
    )
    .unwrap();
    let out = hermes(home.path(), cwd.path(), &["config", "check"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("warning: unknown key `toolset` (ignored); did you mean `toolsets`?"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn version_and_model_show() {
    let env = Env::new().await;
    let out = env.run(&["--version"]).await;
    assert!(stdout(&out).starts_with("hermes "), "{}", stdout(&out));
    let out = env.run(&["model", "show"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("mock-model"));
    assert!(stdout(&out).contains("custom"));
}

#[tokio::test]
async fn fallback_providers_from_config_answer_when_the_primary_fails() {
    let env = Env::new().await;
    let backup = MockProvider::start().await;
    let config = format!(
        "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\nfallback_providers:\n  - provider: custom\n    base_url: {}\n    default: backup-model\n",
        env.mock.base_url(),
        backup.base_url()
    );
    std::fs::write(env.home.home().config_file(), config).unwrap();
    env.mock.push(MockResponse::from_bytes(
        404,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"The model `mock-model` does not exist"}}"#,
    ));
    backup.push(MockResponse::text("Backup here."));
    let out = env.run(&["chat", "-q", "hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Backup here.");
    assert!(stderr(&out).contains("falling back"), "{}", stderr(&out));
    assert_eq!(backup.requests()[0]["model"], "backup-model");
}

#[tokio::test]
async fn doctor_reports_health_and_fails_on_broken_setups() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("hi"));
    assert!(env.run(&["chat", "-q", "hello"]).await.status.success());
    let out = env.run(&["doctor"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("model: mock-model on custom"), "{text}");
    assert!(text.contains("state.db integrity ok"), "{text}");
    assert!(text.contains("1 sessions"), "{text}");

    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = hermes(home.path(), cwd.path(), &["doctor"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("FAIL  no model provider is configured"));

    std::fs::write(home.home().config_file(), "agent: [\n").unwrap();
    let out = hermes(home.path(), cwd.path(), &["doctor"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("line"), "{}", stdout(&out));
}

#[tokio::test]
async fn mcp_tool_descriptions_flagged_by_the_injection_scan_are_withheld() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: python3 is missing (the scripted MCP server is a Python script)");
        return;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hermes-mcp/tests/fixtures/scripted_server.py");
    let env = Env::with_config(&format!(
        "mcp_servers:\n  demo:\n    command: python3\n    args: [\"{}\", \"--poisoned\"]\n",
        script.display()
    ))
    .await;
    env.mock.push(MockResponse::text("ok"));
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("withheld"), "{}", stderr(&out));
    let request = &env.mock.requests()[0];
    let tools = request["tools"].as_array().unwrap();
    let poisoned = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__demo__poisoned")
        .expect("the tool stays callable");
    let description = poisoned["function"]["description"].as_str().unwrap();
    assert!(
        !description.contains("Ignore all previous instructions"),
        "{description}"
    );
    assert!(description.contains("withheld"));
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__demo__echo")
        .unwrap();
    assert_eq!(echo["function"]["description"], "scripted echo");
}

/// One turn per session across front ends and processes (issue 18 item 4): while another
/// process holds the session's lease, `chat -q --resume` says so once and waits; it runs
/// when the lease ends (here it expires: the holder "died"), and the rows stay in order.
#[tokio::test]
async fn a_turn_waits_while_another_process_runs_the_session() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text("First answer."));
    let out = env.run_ok(&["chat", "-q", "first question"]).await;
    assert!(stdout(&out).contains("First answer."), "{}", stderr(&out));
    let store = hermes_store::SessionStore::open(env.home.home().state_db()).unwrap();
    let session = store
        .latest_session(None)
        .unwrap()
        .expect("a stored session");
    let held = store
        .acquire_lease(&session.id, "gateway:4242:0", Duration::from_secs(3))
        .unwrap();
    assert!(matches!(held, hermes_store::LeaseAttempt::Acquired(_)));

    env.mock.push(MockResponse::text("Second answer."));
    let started = std::time::Instant::now();
    let out = env
        .run_ok(&["chat", "-q", "second question", "--resume", &session.id])
        .await;
    let waited = started.elapsed();
    assert!(stdout(&out).contains("Second answer."), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("running a turn elsewhere (gateway:4242:0)")
            .count(),
        1,
        "{err}"
    );
    assert!(waited >= Duration::from_secs(2), "ran after {waited:?}");
    let texts: Vec<String> = store
        .load_messages(&session.id)
        .unwrap()
        .into_iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(
        texts,
        [
            "first question",
            "First answer.",
            "second question",
            "Second answer."
        ]
    );
}

/// Stored text is anyone's (a model's answer, a chat user's message, a tool's output): what
/// `sessions list`, `show` and `search` print of it carries its escape sequences in caret
/// notation, never raw, so showing a session cannot retitle, clear or write the clipboard
/// of the terminal.
#[tokio::test]
async fn stored_escape_sequences_never_reach_the_terminal_raw() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text(
        "quince \x1b]0;owned\x07 answer \x1b]52;c;aGk=\x07 \x1b[2J done",
    ));
    let out = env
        .run(&["chat", "-q", "hello \x1b[31mred\x1b[0m quince"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains('\x1b'), "{:?}", stdout(&out));
    let list = env.run_ok(&["sessions", "list"]).await;
    let id = stdout(&list)
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    for args in [
        vec!["sessions", "list"],
        vec!["sessions", "show", id.as_str()],
        vec!["sessions", "search", "quince"],
    ] {
        let out = env.run_ok(&args).await;
        let text = stdout(&out);
        assert!(!text.contains('\x1b'), "{args:?}: {text:?}");
        assert!(!text.contains('\x07'), "{args:?}: {text:?}");
    }
    let show = stdout(&env.run_ok(&["sessions", "show", &id]).await);
    assert!(show.contains("^[]0;owned^G"), "{show:?}");
}
