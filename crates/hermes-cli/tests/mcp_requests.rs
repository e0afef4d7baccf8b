//! What hermes answers when an MCP server asks something during a turn, and what happens to
//! MCP children when hermes is told to stop — end to end with the mock provider and the
//! scripted stdio server of hermes-mcp's tests (a Python script; skipped with a reason when
//! python3 is missing): sampling served by the session's model with the token cap, sampling
//! off by config, elicitation declined without a terminal, SIGTERM ends a server that
//! ignores the end of its stdin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::driver::{hermes_command, wait_bounded};
use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;
use serde_json::Value;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../hermes-mcp/tests/fixtures/scripted_server.py")
}

fn no_python() -> bool {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: python3 is missing (the scripted MCP server is a Python script)");
        return true;
    }
    false
}

/// config.yaml lines for the scripted server `demo` with `flags` and `extra` settings.
fn demo_server(flags: &[&str], extra: &str) -> String {
    let mut args = vec![format!("'{}'", script().display())];
    args.extend(flags.iter().map(|f| format!("'{f}'")));
    format!(
        "mcp_servers:\n  demo:\n    command: python3\n    args: [{}]\n{extra}",
        args.join(", ")
    )
}

/// The tool results the model saw in `request`.
fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn sampling_request_is_answered_by_the_session_model_with_the_cap() {
    if no_python() {
        return;
    }
    let env = Env::with_config(&demo_server(&[], "")).await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "mcp__demo__sample",
        r#"{"text":"what is 6*7?"}"#,
    )]));
    // The sampling request reaches the same model; its answer goes back to the server.
    env.mock.push(MockResponse::text("forty-two"));
    env.mock
        .push(MockResponse::text("The server's model says forty-two."));
    let out = env.run(&["chat", "-q", "ask the server"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "The server's model says forty-two.");
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let sampling = &requests[1];
    let messages = sampling["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "what is 6*7?",
        "{sampling}"
    );
    assert!(
        sampling["tools"].as_array().is_none_or(|t| t.is_empty()),
        "sampling offers no tools: {sampling}"
    );
    let cap = sampling["max_tokens"]
        .as_u64()
        .or(sampling["max_completion_tokens"].as_u64());
    assert_eq!(cap, Some(4096), "100000 asked, capped: {sampling}");
    assert_eq!(tool_results(&requests[2]), ["sampled: forty-two"]);
}

#[tokio::test]
async fn sampling_off_by_config_never_reaches_the_model() {
    if no_python() {
        return;
    }
    let env = Env::with_config(&demo_server(&[], "    sampling: false\n")).await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "mcp__demo__sample",
        r#"{"text":"x"}"#,
    )]));
    env.mock.push(MockResponse::text("Sampling is off."));
    let out = env.run(&["chat", "-q", "ask the server"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2, "no sampling call: {requests:#?}");
    let results = tool_results(&requests[1]);
    assert!(
        results[0].starts_with("sampling error:") && results[0].contains("turned off"),
        "{results:?}"
    );
}

#[tokio::test]
async fn elicitation_is_declined_without_a_terminal() {
    if no_python() {
        return;
    }
    let env = Env::with_config(&demo_server(&[], "")).await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "mcp__demo__ask_user",
        "{}",
    )]));
    env.mock.push(MockResponse::text("Nobody answered."));
    let out = env.run(&["chat", "-q", "who am I?"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = env.mock.requests();
    let results = tool_results(&requests[1]);
    assert_eq!(results, [r#"{"action": "decline"}"#]);
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Running and not a zombie.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_tool_call_ends_hermes_and_its_mcp_server() {
    if no_python() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let pidfile = scratch.path().join("pids");
    let p = pidfile.display().to_string();
    // --linger: the server outlives the end of its stdin, so only hermes can end it.
    let env = Env::with_config(&demo_server(&["--linger", "--pidfile", &p], "")).await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "mcp__demo__hang",
        "{}",
    )]));
    let mut cmd = hermes_command(env.home.path(), env.cwd.path(), &["chat", "-q", "wait"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let started = Instant::now();
    // The hang tool is running once the model's tool call was served and the server started.
    while env.mock.requests().is_empty() || pids(&pidfile).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the turn never reached the MCP tool"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let server = pids(&pidfile)[0];
    assert!(running(server));
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = wait_bounded(child, Duration::from_secs(60), "chat -q after SIGTERM");
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let gone_by = Instant::now() + Duration::from_secs(30);
    while running(server) {
        assert!(
            Instant::now() < gone_by,
            "MCP server {server} outlived hermes"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
