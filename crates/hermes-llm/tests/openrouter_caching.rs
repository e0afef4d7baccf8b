//! Prompt caching for Claude models through OpenRouter (FEATURES §5 `system_and_3`): the
//! Chat Completions adapter puts `cache_control` on content parts of the system message and
//! the last 3 messages, with the TTL of `prompt_caching.cache_ttl`, and the bytes of the
//! cached prefix do not change from one turn to the next.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{collect, request};
use hermes_llm::runtime::{ApiMode, Runtime};
use hermes_llm::{ClientOptions, build_client_with};
use hermes_protocol::config::Config;
use hermes_protocol::{Message, ToolCall, ToolSpec};
use hermes_testkit::{MockProvider, MockResponse};
use serde_json::{Value, json};

fn runtime(base_url: &str, provider: &str, model: &str) -> Runtime {
    Runtime {
        provider: provider.to_string(),
        api_mode: ApiMode::ChatCompletions,
        base_url: base_url.to_string(),
        model: model.to_string(),
        api_key: Some("sk-or-test-0123456789".to_string()),
        context_window: None,
        trace: Vec::new(),
    }
}

fn options(yaml: &str) -> ClientOptions {
    let config = Config::parse(yaml, Path::new("config.yaml"))
        .unwrap()
        .config;
    let (opts, warnings) = ClientOptions::from_config(&config);
    assert!(warnings.is_empty(), "{warnings:?}");
    opts
}

fn strip_cache(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), strip_cache(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_cache).collect()),
        other => other.clone(),
    }
}

/// (message index, part index) of every `cache_control` marker, and the markers themselves.
fn markers(body: &Value) -> Vec<(usize, usize, Value)> {
    let mut out = Vec::new();
    for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        if let Some(parts) = m["content"].as_array() {
            for (j, p) in parts.iter().enumerate() {
                if let Some(c) = p.get("cache_control") {
                    out.push((i, j, c.clone()));
                }
            }
        }
        assert!(m.get("cache_control").is_none(), "marker outside a part");
    }
    out
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

/// Runs three turns (user → tool call → tool result → answer), two calls per turn, through a
/// client built for `rt`; returns every request body the mock received.
async fn three_turns(mock: &MockProvider, rt: &Runtime, opts: &ClientOptions) -> Vec<Value> {
    let client = build_client_with(rt, opts).unwrap();
    let mut history = Vec::new();
    for turn in 0..3 {
        history.push(Message::user(format!("question {turn}")));
        let id = format!("call_{turn}");
        mock.push(MockResponse::tool_calls(&[(
            &id,
            "read_file",
            r#"{"path":"a.txt"}"#,
        )]));
        let mut req = request(history.clone());
        req.tools = tools();
        collect(client.stream(&req).await.unwrap()).await.unwrap();
        let mut call = Message::assistant("");
        call.tool_calls.push(ToolCall::new(
            id.clone(),
            "read_file",
            r#"{"path":"a.txt"}"#,
        ));
        history.push(call);
        history.push(Message::tool(id, "read_file", format!("contents {turn}")));
        mock.push(MockResponse::text(&format!("answer {turn}")));
        let mut req = request(history.clone());
        req.tools = tools();
        collect(client.stream(&req).await.unwrap()).await.unwrap();
        history.push(Message::assistant(format!("answer {turn}")));
    }
    mock.requests()
}

#[tokio::test]
async fn claude_through_openrouter_gets_system_and_3_markers_with_a_stable_prefix() {
    let mock = MockProvider::start().await;
    let rt = runtime(&mock.base_url(), "openrouter", "anthropic/claude-sonnet-4");
    let opts = options("prompt_caching:\n  cache_ttl: 1h\n");
    let bodies = three_turns(&mock, &rt, &opts).await;
    assert_eq!(bodies.len(), 6);
    let one_hour = json!({"type": "ephemeral", "ttl": "1h"});
    for body in &bodies {
        let messages = body["messages"].as_array().unwrap();
        // The system prompt is a part array whose last part carries the marker.
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[0]["content"][0]["text"], "You are a test.");
        assert_eq!(messages[0]["content"][0]["cache_control"], one_hour);
        let marks = markers(body);
        assert!(marks.iter().all(|(_, _, m)| *m == one_hour));
        // System + the last 3 messages that have a non-empty part (assistant tool calls with
        // no text cannot carry a marker and are skipped).
        let carriers: Vec<usize> = messages
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, m)| m["content"].as_array().is_some_and(|p| !p.is_empty()))
            .map(|(i, _)| i)
            .collect();
        let expected: Vec<usize> = std::iter::once(0)
            .chain(carriers.iter().rev().take(3).rev().copied())
            .collect();
        let got: Vec<usize> = marks.iter().map(|(i, _, _)| *i).collect();
        assert_eq!(got, expected, "markers of {body}");
        for (i, j, _) in &marks {
            assert_eq!(*j, messages[*i]["content"].as_array().unwrap().len() - 1);
        }
        assert!(marks.len() <= 4, "at most 4 breakpoints");
        // Tool-call assistants keep `content: ""`.
        for m in messages.iter().filter(|m| m.get("tool_calls").is_some()) {
            assert_eq!(m["content"], "");
        }
    }
    // Without the markers, every message of a request has the same bytes in the next one.
    for pair in bodies.windows(2) {
        let a = strip_cache(&pair[0]["messages"]);
        let b = strip_cache(&pair[1]["messages"]);
        let (a, b) = (a.as_array().unwrap(), b.as_array().unwrap());
        assert!(b.len() > a.len());
        for (x, y) in a.iter().zip(b) {
            assert_eq!(
                serde_json::to_string(x).unwrap(),
                serde_json::to_string(y).unwrap()
            );
        }
        assert_eq!(pair[0]["tools"], pair[1]["tools"]);
    }
    // OpenRouter attribution headers are sent.
    let captured = mock.captured();
    assert_eq!(captured[0].header("x-title"), Some("hermes"));
}

#[tokio::test]
async fn default_ttl_is_five_minutes_and_other_models_get_no_markers() {
    let mock = MockProvider::start().await;
    let rt = runtime(&mock.base_url(), "openrouter", "anthropic/claude-3.5-haiku");
    let bodies = three_turns(&mock, &rt, &options("")).await;
    let marks = markers(&bodies[5]);
    assert_eq!(marks.len(), 4);
    assert!(
        marks
            .iter()
            .all(|(_, _, m)| *m == json!({"type": "ephemeral"}))
    );

    let mock = MockProvider::start().await;
    let rt = runtime(&mock.base_url(), "openrouter", "openai/gpt-4.1");
    let bodies = three_turns(&mock, &rt, &options("prompt_caching:\n  cache_ttl: 1h\n")).await;
    for body in &bodies {
        assert!(markers(body).is_empty());
        // Plain string contents, as before.
        assert_eq!(body["messages"][0]["content"], "You are a test.");
    }
}

#[test]
fn a_bad_cache_ttl_is_reported_and_falls_back_to_five_minutes() {
    let config = Config::parse("prompt_caching:\n  cache_ttl: 2h\n", Path::new("c.yaml"))
        .unwrap()
        .config;
    let (opts, warnings) = ClientOptions::from_config(&config);
    assert_eq!(opts, ClientOptions::default());
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("prompt_caching.cache_ttl `2h`"));
}
