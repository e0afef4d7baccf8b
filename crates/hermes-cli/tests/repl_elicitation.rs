//! MCP elicitation answered by the user at a terminal (FEATURES §11): on a pty, the model
//! calls the scripted server's `ask_user` tool, the server sends `elicitation/create`, hermes
//! shows the question and the server receives the user's answer (it returns it as the tool
//! result the model sees). In the REPL the user types `y`, a name and Enter for the
//! defaulted age; `chat -q` on a terminal asks too, and `n` declines.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use hermes_testkit::MockResponse;

/// Generous bound that only catches a REPL that never shows what is awaited.
const BOUND: Duration = Duration::from_secs(60);

/// Reads the terminal until `want` appeared after what was already `seen`, answering
/// cursor-position queries on the way.
fn read_until(master: &mut std::fs::File, seen: &mut String, want: &str) {
    let start = seen.len();
    let mut buf = [0u8; 4096];
    while !seen[start..].contains(want) {
        let n = master.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "terminal closed while waiting for {want:?}: {seen:?}"
        );
        let chunk = String::from_utf8_lossy(&buf[..n]).into_owned();
        for _ in 0..chunk.matches("\x1b[6n").count() {
            master.write_all(b"\x1b[1;1R").unwrap();
        }
        seen.push_str(&chunk);
    }
}

fn demo_env_config() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hermes-mcp/tests/fixtures/scripted_server.py");
    format!(
        "mcp_servers:\n  demo:\n    command: python3\n    args: ['{}']\n",
        script.display()
    )
}

fn tool_results(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_repl_user_answers_an_mcp_elicitation() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is missing (the scripted MCP server is a Python script)");
        return;
    }
    let env = common::Env::with_config(&demo_env_config()).await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "mcp__demo__ask_user",
        "{}",
    )]));
    env.mock.push(MockResponse::text("Hello Ada."));

    let (mut child, master) = common::spawn_on_pty(&env, &[]);
    let mut master = master;
    let talk = tokio::task::spawn_blocking(move || {
        let mut seen = String::new();
        read_until(&mut master, &mut seen, "\x1b[6n");
        master.write_all(b"who am I?\r").unwrap();
        read_until(&mut master, &mut seen, "answer? [y]es");
        master.write_all(b"y\n").unwrap();
        read_until(&mut master, &mut seen, "Name (required): ");
        master.write_all(b"Ada\n").unwrap();
        read_until(&mut master, &mut seen, "age (whole number) [30]: ");
        master.write_all(b"\n").unwrap();
        read_until(&mut master, &mut seen, "Hello Ada.");
        (master, seen)
    });
    let (master, seen) = tokio::time::timeout(BOUND, talk)
        .await
        .expect("the REPL never got through the elicitation")
        .unwrap();
    assert!(
        seen.contains("MCP server `demo` asks: Who are you?"),
        "{seen:?}"
    );
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    assert_eq!(
        results,
        [r#"{"action": "accept", "content": {"age": 30, "name": "Ada"}}"#]
    );
    let _ = child.kill();
    let _ = child.wait();
    drop(master);
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_q_on_a_terminal_asks_and_no_declines() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is missing (the scripted MCP server is a Python script)");
        return;
    }
    let env = common::Env::with_config(&demo_env_config()).await;
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "mcp__demo__ask_user",
        "{}",
    )]));
    env.mock
        .push(MockResponse::text("You would rather not say."));
    let (mut child, mut master) = common::spawn_on_pty(&env, &["chat", "-q", "who am I?"]);
    let talk = tokio::task::spawn_blocking(move || {
        let mut seen = String::new();
        read_until(&mut master, &mut seen, "answer? [y]es");
        master.write_all(b"n\n").unwrap();
        read_until(&mut master, &mut seen, "You would rather not say.");
        (master, seen)
    });
    let (master, seen) = tokio::time::timeout(BOUND, talk)
        .await
        .expect("chat -q never got through the elicitation")
        .unwrap();
    assert!(
        seen.contains("MCP server `demo` asks: Who are you?"),
        "{seen:?}"
    );
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_results(&requests[1]), [r#"{"action": "decline"}"#]);
    let _ = child.wait();
    drop(master);
}
