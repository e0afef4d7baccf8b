//! Replays every recorded Anthropic Messages response (`fixtures/providers/anthropic/`) through
//! the mock provider and the real client, whole and split at odd byte boundaries; cases C05,
//! C11; request shaping and `system_and_3` prompt-cache markers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{collect, read_case, request};
use hermes_llm::anthropic::{AnthropicClient, AnthropicConfig, CacheTtl, build_body};
use hermes_llm::{ErrorClass, LlmError, ModelClient};
use hermes_protocol::{AssistantMessage, FinishReason, Message, ToolCall, ToolSpec};
use hermes_testkit::{MockProvider, MockResponse, fixture_path};
use serde_json::{Value, json};

fn client(base_url: &str) -> AnthropicClient {
    let mut cfg = AnthropicConfig::new(base_url, "claude-sonnet-4-5");
    cfg.api_key = Some("sk-ant-test-0123456789abcdef".to_string());
    AnthropicClient::new(cfg).unwrap()
}

async fn replay(resp: MockResponse) -> (Result<AssistantMessage, LlmError>, MockProvider) {
    let mock = MockProvider::start().await;
    mock.push(resp);
    let c = client(&mock.base_url());
    let r = match c.stream(&request(vec![Message::user("hi")])).await {
        Ok(s) => collect(s).await.map(|o| {
            assert_eq!(o.completed_events, 1);
            assert_eq!(o.streamed_text, o.message.text, "deltas add up to the text");
            o.message
        }),
        Err(e) => Err(e),
    };
    (r, mock)
}

/// Every split plan a fixture is replayed with.
fn plans() -> Vec<Option<Vec<usize>>> {
    vec![None, Some(vec![1]), Some(vec![7, 3, 13]), Some(vec![64, 5])]
}

async fn sse_all_splits(name: &str) -> AssistantMessage {
    let mut first: Option<AssistantMessage> = None;
    for plan in plans() {
        let mut resp = MockResponse::sse_fixture(fixture_path(&format!("anthropic/{name}")));
        if let Some(p) = plan.clone() {
            resp = resp.chunked(p);
        }
        let (r, _mock) = replay(resp).await;
        let m = r.unwrap_or_else(|e| panic!("{name} with plan {plan:?}: {e}"));
        if let Some(f) = &first {
            assert_eq!(&m, f, "{name}: split {plan:?} decodes the same");
        } else {
            first = Some(m);
        }
    }
    first.unwrap()
}

#[tokio::test]
async fn stream_text_basic() {
    let m = sse_all_splits("stream_text_basic.sse").await;
    assert_eq!(m.text, "Hello there!");
    assert_eq!(m.finish_reason, Some(FinishReason::Stop));
    assert_eq!((m.usage.input_tokens, m.usage.output_tokens), (11, 6));
    assert!(m.reasoning.is_none() && m.tool_calls.is_empty());
}

#[tokio::test]
async fn stream_text_sonnet45_and_input_tokens_in_message_delta() {
    let m = sse_all_splits("stream_text_sonnet45.sse").await;
    assert!(m.text.starts_with("Hello! I'm doing well"));
    assert_eq!((m.usage.input_tokens, m.usage.output_tokens), (12, 30));
    let m = sse_all_splits("stream_message_delta_input_tokens.sse").await;
    assert_eq!(m.text, "pong");
    assert_eq!((m.usage.input_tokens, m.usage.output_tokens), (61, 2));
}

#[tokio::test]
async fn stream_text_then_tool_use() {
    let m = sse_all_splits("stream_text_then_tool_use.sse").await;
    assert_eq!(m.text, "I'll check the current weather in Paris for you.");
    assert_eq!(
        m.tool_calls,
        vec![ToolCall::new(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "get_weather",
            r#"{"location": "Paris"}"#
        )]
    );
    assert_eq!(m.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(m.usage.input_tokens, 377);
}

#[tokio::test]
async fn stream_json_tool_with_pings() {
    let m = sse_all_splits("stream_json_tool_with_pings.sse").await;
    assert_eq!(m.tool_calls.len(), 1);
    let args: Value = serde_json::from_str(&m.tool_calls[0].arguments).unwrap();
    assert_eq!(args["elements"][0]["temperature"], 58);
    assert_eq!(m.usage.output_tokens, 47);
}

#[tokio::test]
async fn stream_truncated_tool_use_keeps_cut_arguments_with_length() {
    let m = sse_all_splits("stream_tool_use_truncated_max_tokens.sse").await;
    assert_eq!(m.finish_reason, Some(FinishReason::Length));
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].name, "make_file");
    assert!(serde_json::from_str::<Value>(&m.tool_calls[0].arguments).is_err());
    assert!(m.diagnostics.iter().any(|d| d.contains("incomplete JSON")));
}

#[tokio::test]
async fn stream_refusal_maps_to_content_filter() {
    let m = sse_all_splits("stream_refusal_sdk_fixture.sse").await;
    assert_eq!(m.finish_reason, Some(FinishReason::ContentFilter));
    assert!(m.text.is_empty());
}

#[tokio::test]
async fn stream_thinking_signature_is_kept_for_replay() {
    let m = sse_all_splits("stream_thinking_signature.sse").await;
    assert_eq!(m.text, "925 ÷ 5 = 185");
    let r = m.reasoning.clone().unwrap();
    assert!(!r.text.is_empty());
    let blocks = replayed_assistant_blocks(&m);
    assert_eq!(blocks[0]["type"], "thinking");
    assert!(
        blocks[0]["signature"]
            .as_str()
            .unwrap()
            .starts_with("EvQBCkYICxgC")
    );
    assert_eq!(blocks[1], json!({"type": "text", "text": "925 ÷ 5 = 185"}));
}

#[tokio::test]
async fn stream_error_overloaded_inside_200() {
    for plan in plans() {
        let mut resp =
            MockResponse::sse_fixture(fixture_path("anthropic/stream_error_overloaded.sse"));
        if let Some(p) = plan {
            resp = resp.chunked(p);
        }
        let e = replay(resp).await.0.unwrap_err();
        assert_eq!(e.class, ErrorClass::Overloaded);
        assert_eq!(e.status, Some(529));
        assert!(e.retryable());
    }
}

#[tokio::test]
async fn nonstream_bodies() {
    let (m, _) = replay(MockResponse::json_fixture(
        200,
        fixture_path("anthropic/nonstream_text.json"),
    ))
    .await;
    let m = m.unwrap();
    assert!(m.text.starts_with("Hello! I'm doing well"));
    assert_eq!((m.usage.input_tokens, m.usage.output_tokens), (12, 29));
    let (m, _) = replay(MockResponse::json_fixture(
        200,
        fixture_path("anthropic/nonstream_text_and_tool_use.json"),
    ))
    .await;
    let m = m.unwrap();
    assert_eq!(
        m.tool_calls,
        vec![ToolCall::new(
            "toolu_01LRmxn9vGM1d2DZSDBowdZ1",
            "updateIssueList",
            "{}"
        )]
    );
    assert_eq!(m.finish_reason, Some(FinishReason::ToolCalls));
    let (m, _) = replay(MockResponse::json_fixture(
        200,
        fixture_path("anthropic/nonstream_thinking.json"),
    ))
    .await;
    let m = m.unwrap();
    assert_eq!(m.reasoning.as_ref().unwrap().text, "925 divided by 5 = 185");
    assert_eq!(m.text, "925 ÷ 5 = 185");
    let raw: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_path("anthropic/nonstream_thinking.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(replayed_assistant_blocks(&m)[0], raw["content"][0]);
}

#[tokio::test]
async fn error_bodies_are_classified() {
    let cases = [
        (
            "error_400_prompt_too_long.json",
            400,
            ErrorClass::ContextOverflow,
        ),
        ("error_429_rate_limit.json", 429, ErrorClass::RateLimit),
        ("error_500_api_error.json", 500, ErrorClass::ServerError),
        ("error_529_overloaded.json", 529, ErrorClass::Overloaded),
    ];
    for (file, status, class) in cases {
        let mut resp =
            MockResponse::json_fixture(status, fixture_path(&format!("anthropic/{file}")));
        if status == 429 {
            resp.headers
                .push(("retry-after".to_string(), "7".to_string()));
        }
        let e = replay(resp).await.0.unwrap_err();
        assert_eq!((e.class, e.status), (class, Some(status)), "{file}");
        if status == 429 {
            assert_eq!(e.retry_after, Some(std::time::Duration::from_secs(7)));
        }
    }
}

#[tokio::test]
async fn request_headers_and_endpoint() {
    let (_, mock) = replay(MockResponse::sse_fixture(fixture_path(
        "anthropic/stream_text_basic.sse",
    )))
    .await;
    let req = &mock.captured()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(
        req.header("x-api-key"),
        Some("sk-ant-test-0123456789abcdef")
    );
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.body["stream"], true);
    assert!(
        req.body["max_tokens"].as_u64().unwrap() > 0,
        "max_tokens always sent"
    );
    assert_eq!(req.body["system"][0]["text"], "You are a test.");
    assert_eq!(
        hermes_llm::anthropic::messages_endpoint("https://api.minimax.io/anthropic"),
        "https://api.minimax.io/anthropic/v1/messages"
    );
}

/// The content blocks the adapter would send for `m` as the latest assistant turn.
fn replayed_assistant_blocks(m: &AssistantMessage) -> Vec<Value> {
    let msgs =
        hermes_llm::anthropic::request::build_messages(&[Message::user("q"), m.to_message()]);
    msgs[1]["content"].as_array().unwrap().clone()
}

fn feed(sse: &str) -> AssistantMessage {
    use hermes_llm::sse::NamedEventDecoder;
    let mut dec = hermes_llm::anthropic::AnthropicDecoder::new();
    let mut out = None;
    for ev in sse.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let mut name = "";
        let mut data = "";
        for line in ev.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = n;
            } else if let Some(d) = line.strip_prefix("data: ") {
                data = d;
            }
        }
        dec.push_event(name, data).unwrap();
    }
    for e in dec.finish().unwrap() {
        if let hermes_llm::StreamEvent::Completed(m) = e {
            out = Some(m);
        }
    }
    out.unwrap()
}

#[test]
fn case_c05_zero_argument_tool_use() {
    let case = read_case("C05");
    let trigger = case["trigger"].as_str().unwrap();
    let start = r#"event: message_start
data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}

"#;
    let m = feed(&format!(
        "{start}{trigger}\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    ));
    let exp = &case["expected"];
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].id, exp["tool_use"]["id"].as_str().unwrap());
    assert_eq!(
        m.tool_calls[0].name,
        exp["tool_use"]["name"].as_str().unwrap()
    );
    assert_eq!(
        m.tool_calls[0].arguments,
        exp["replay_arguments"].as_str().unwrap()
    );
    assert_eq!(m.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(exp["stop_reason"], "tool_use");
    // Replaying the stored call gives the expected tool_use input.
    let blocks = replayed_assistant_blocks(&m);
    assert_eq!(blocks[0]["input"], exp["tool_use"]["input"]);
    assert_eq!(blocks[0]["id"], exp["tool_use"]["id"]);
}

#[test]
fn case_c11_interleaved_thinking_replayed_in_original_order() {
    let case = read_case("C11");
    let ev = |i: u32, block: Value, deltas: &[Value]| {
        let mut s = format!(
            "event: content_block_start\ndata: {}\n\n",
            json!({"type":"content_block_start","index":i,"content_block":block})
        );
        for d in deltas {
            s.push_str(&format!(
                "event: content_block_delta\ndata: {}\n\n",
                json!({"type":"content_block_delta","index":i,"delta":d})
            ));
        }
        s.push_str(&format!(
            "event: content_block_stop\ndata: {}\n\n",
            json!({"type":"content_block_stop","index":i})
        ));
        s
    };
    let think = |i, sig: &str| {
        ev(
            i,
            json!({"type":"thinking","thinking":"","signature":""}),
            &[
                json!({"type":"thinking_delta","thinking":"let me look"}),
                json!({"type":"signature_delta","signature":sig}),
            ],
        )
    };
    let tool = |i, id: &str, path: &str| {
        ev(
            i,
            json!({"type":"tool_use","id":id,"name":"read_file","input":{}}),
            &[json!({"type":"input_json_delta","partial_json":format!("{{\"path\":\"{path}\"}}")})],
        )
    };
    let sse = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":9}}}}}}\n\n{}{}{}{}event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"tool_use\"}},\"usage\":{{\"output_tokens\":40}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
        think(0, "SIG_A"),
        tool(1, "toolu_A", "x"),
        think(2, "SIG_B"),
        tool(3, "toolu_B", "y")
    );
    let m = feed(&sse);
    assert_eq!(m.tool_calls.len(), 2);
    // Store and reload the message as the agent would (JSON round trip).
    let stored: Message =
        serde_json::from_str(&serde_json::to_string(&m.to_message()).unwrap()).unwrap();
    let history = vec![
        Message::user("read x and y"),
        stored,
        Message::tool("toolu_A", "read_file", "X"),
        Message::tool("toolu_B", "read_file", "Y"),
    ];
    let msgs = hermes_llm::anthropic::request::build_messages(&history);
    let order: Vec<String> = msgs[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| match b["type"].as_str().unwrap() {
            "thinking" => format!("thinking:{}", b["signature"].as_str().unwrap()),
            "tool_use" => format!("tool_use:{}", b["id"].as_str().unwrap()),
            other => other.to_string(),
        })
        .collect();
    let expected: Vec<String> = case["expected"]["replayed_block_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(order, expected);
    // Both results follow in one user message, paired by id.
    assert_eq!(msgs[2]["role"], "user");
    let ids: Vec<&str> = msgs[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["toolu_A", "toolu_B"]);
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".to_string(),
        description: "Read a file".to_string(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
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

fn markers(body: &Value) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (j, b) in m["content"].as_array().unwrap().iter().enumerate() {
            if b.get("cache_control").is_some() {
                out.push((i, j));
            }
        }
    }
    out
}

#[test]
fn system_and_3_markers_and_stable_prefix_over_turns() {
    let opts = hermes_llm::anthropic::BodyOptions {
        default_max_tokens: 4096,
        cache: Some(CacheTtl::OneHour),
        thinking_budget: None,
    };
    let mut history = vec![Message::user("turn one")];
    let mut bodies = Vec::new();
    for turn in 0..3 {
        let mut req = request(history.clone());
        req.tools = tools();
        bodies.push(build_body(&req, "claude-sonnet-4-5", &opts));
        let mut call = Message::assistant("");
        call.tool_calls.push(ToolCall::new(
            format!("toolu_{turn}"),
            "read_file",
            r#"{"path":"a"}"#,
        ));
        history.push(call);
        history.push(Message::tool(
            format!("toolu_{turn}"),
            "read_file",
            "contents",
        ));
        history.push(Message::assistant(format!("answer {turn}")));
        history.push(Message::user(format!("turn {}", turn + 2)));
    }
    for body in &bodies {
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        let n = body["messages"].as_array().unwrap().len();
        let m = markers(body);
        assert_eq!(m.len(), n.min(3), "system + up to 3 message markers");
        // Markers sit on the last 3 messages, on their last block.
        for (k, (i, j)) in m.iter().rev().enumerate() {
            assert_eq!(*i, n - 1 - k);
            assert_eq!(
                *j,
                body["messages"][*i]["content"].as_array().unwrap().len() - 1
            );
        }
    }
    // Without markers, each turn's messages are a byte-identical prefix of the next turn's.
    for pair in bodies.windows(2) {
        let a = strip_cache(&pair[0]["messages"]);
        let b = strip_cache(&pair[1]["messages"]);
        let (a, b) = (a.as_array().unwrap(), b.as_array().unwrap());
        for (x, y) in a.iter().zip(b.iter()) {
            assert_eq!(
                serde_json::to_string(x).unwrap(),
                serde_json::to_string(y).unwrap()
            );
        }
        assert_eq!(
            serde_json::to_string(&pair[0]["system"]).unwrap(),
            serde_json::to_string(&pair[1]["system"]).unwrap()
        );
        assert_eq!(pair[0]["tools"], pair[1]["tools"]);
    }
    // Alternation holds and the first turn-two message is the assistant tool call.
    let last = bodies.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    for w in last.windows(2) {
        assert_ne!(w[0]["role"], w[1]["role"]);
    }
    assert_eq!(last[1]["content"][0]["type"], "tool_use");
    // 5m TTL is the plain ephemeral marker.
    assert_eq!(
        CacheTtl::parse("5m").unwrap().marker(),
        json!({"type": "ephemeral"})
    );
}

#[test]
fn pairing_is_repaired_and_empty_text_never_sent() {
    let mut call = Message::assistant("");
    call.tool_calls
        .push(ToolCall::new("toolu_1", "read_file", ""));
    let history = vec![
        Message::user("go"),
        call,
        // no result for toolu_1; an orphan result for an unknown id
        Message::tool("toolu_zz", "read_file", "stray"),
        Message::user(""),
    ];
    let msgs = hermes_llm::anthropic::request::build_messages(&history);
    assert_eq!(msgs.len(), 3);
    assert_eq!(
        msgs[1]["content"],
        json!([{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}])
    );
    let user = msgs[2]["content"].as_array().unwrap();
    assert_eq!(user[0]["type"], "tool_result");
    assert_eq!(user[0]["tool_use_id"], "toolu_1");
    assert_eq!(user[0]["is_error"], true);
    assert!(
        user.iter()
            .skip(1)
            .all(|b| b["type"] == "text" && !b["text"].as_str().unwrap().is_empty())
    );
    assert!(user[1]["text"].as_str().unwrap().contains("stray"));
}

#[test]
fn thinking_budget_raises_max_tokens_and_drops_temperature() {
    let opts = hermes_llm::anthropic::BodyOptions {
        default_max_tokens: 1024,
        cache: None,
        thinking_budget: Some(2048),
    };
    let mut req = request(vec![Message::user("x")]);
    req.temperature = Some(0.5);
    let body = build_body(&req, "claude-sonnet-4-5", &opts);
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
    assert!(body["max_tokens"].as_u64().unwrap() > 2048);
    assert!(body.get("temperature").is_none());
    assert!(body["system"][0].get("cache_control").is_none());
}
