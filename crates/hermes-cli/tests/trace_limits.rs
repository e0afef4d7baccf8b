//! Span attributes a hostile model chooses stay bounded (issue 24 §1): a tool call id of
//! 256 KiB reaches the collector cut to 128 bytes, so its span (and the batch holding it)
//! stays small enough for a collector to take. Checked against the loopback OTLP receiver of
//! `tests/otlp/receiver.py` (`HERMES_OTLP_PYTHON`; skipped without it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

use common::{Env, stdout};
use hermes_testkit::MockResponse;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_tool_call_id_is_cut_in_its_span() {
    let Some(python) = std::env::var("HERMES_OTLP_PYTHON")
        .ok()
        .filter(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("skipped: HERMES_OTLP_PYTHON not set (.ci/run installs opentelemetry-proto)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let spans_file = dir.path().join("spans.jsonl");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp/receiver.py");
    let mut receiver = Command::new(python)
        .args([script, "0", spans_file.to_str().unwrap(), "accept"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(receiver.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the receiver prints its port");

    let env = Env::with_config("").await;
    std::fs::write(env.cwd.path().join("a.txt"), "alpha").unwrap();
    let id = format!("call_{}", "7".repeat(1 << 18));
    env.mock.push(MockResponse::tool_calls(&[(
        id.as_str(),
        "read_file",
        r#"{"path":"a.txt"}"#,
    )]));
    env.mock.push(MockResponse::text("read it: medlar-4"));
    let out = env
        .run_env(
            &["chat", "-q", "read a.txt"],
            &[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            )],
        )
        .await;
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(stdout(&out).contains("medlar-4"));
    let spans: Vec<Value> = std::fs::read_to_string(&spans_file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool read_file")
        .unwrap_or_else(|| panic!("no tool span among {} spans", spans.len()));
    let shown = tool["attributes"]["gen_ai.tool.call.id"].as_str().unwrap();
    assert_eq!(shown.len(), 128, "{} bytes", shown.len());
    assert!(id.starts_with(shown));
}

/// With content capture on, a user message longer than the 16 KiB attribute limit still
/// gives `gen_ai.input.messages` as JSON that parses: the newest message keeps the start
/// of its text that fits, instead of the JSON being cut mid-string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_message_is_captured_as_json_that_parses() {
    let Some(python) = std::env::var("HERMES_OTLP_PYTHON")
        .ok()
        .filter(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("skipped: HERMES_OTLP_PYTHON not set (.ci/run installs opentelemetry-proto)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let spans_file = dir.path().join("spans.jsonl");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp/receiver.py");
    let mut receiver = Command::new(python)
        .args([script, "0", spans_file.to_str().unwrap(), "accept"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(receiver.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the receiver prints its port");

    let env = Env::with_config("observability:\n  capture_content: true\n").await;
    env.mock.push(MockResponse::text("long one: sorb-2"));
    let question = format!("quince-start {} \"é\" end", "long text ".repeat(3000));
    let out = env
        .run_env(
            &["chat", "-q", &question],
            &[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            )],
        )
        .await;
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let spans: Vec<Value> = std::fs::read_to_string(&spans_file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let chat = spans
        .iter()
        .find(|s| s["name"] == "chat mock-model")
        .unwrap_or_else(|| panic!("no chat span among {} spans", spans.len()));
    let input = chat["attributes"]["gen_ai.input.messages"]
        .as_str()
        .unwrap();
    assert!(input.len() <= 16 * 1024 + 3, "{} bytes", input.len());
    let parsed: Value = serde_json::from_str(input).expect("input messages are JSON");
    let content = parsed[0]["content"].as_str().unwrap();
    assert!(
        content.starts_with("quince-start long text"),
        "{content:.80}"
    );
    assert!(content.ends_with('…'), "{content:.80}");
}
