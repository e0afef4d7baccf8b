//! Named tests for the provider wire-format cases C01, C03, C04, C07, C08, C13
//! (`shared/cases/cases.json`), each asserting the case's `expected` values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{call, client, read_case, request};
use hermes_llm::ErrorClass;
use hermes_protocol::{FinishReason, Message};
use hermes_testkit::{MockProvider, MockResponse};

fn json_200(body: impl Into<bytes::Bytes>) -> MockResponse {
    MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "application/json".into())],
        body,
    )
}

/// Serves `response` (whole and split in 1/3/7-byte chunks) and returns every outcome.
async fn serve_all(
    response: MockResponse,
) -> (Vec<Result<common::Outcome, hermes_llm::LlmError>>, usize) {
    let mock = MockProvider::start().await;
    let client = client(&mock.base_url());
    let req = request(vec![Message::user("go")]);
    let mut out = Vec::new();
    for sizes in [None, Some(vec![1]), Some(vec![3, 7])] {
        let r = match sizes {
            Some(s) => response.clone().chunked(s),
            None => response.clone(),
        };
        mock.push(r);
        out.push(call(&client, &req).await);
    }
    let n = mock.requests().len();
    (out, n)
}

#[tokio::test]
async fn case_c01_usage_only_final_chunk_is_not_a_dropped_stream() {
    let case = read_case("C01");
    let exp = &case["expected"];
    let (outs, requests) = serve_all(MockResponse::sse(
        case["trigger"].as_str().unwrap().to_string(),
    ))
    .await;
    assert_eq!(
        requests, 3,
        "continuation_requests must be 0 (one request per call)"
    );
    for o in outs {
        let o = o.unwrap();
        assert_eq!(o.message.text, exp["assistant_text"].as_str().unwrap());
        assert_eq!(
            o.message.finish_reason.as_ref().map(FinishReason::as_str),
            exp["finish_reason"].as_str()
        );
        let u = o.message.usage;
        assert_eq!(
            u.input_tokens,
            exp["usage"]["prompt_tokens"].as_u64().unwrap()
        );
        assert_eq!(
            u.output_tokens,
            exp["usage"]["completion_tokens"].as_u64().unwrap()
        );
        assert_eq!(
            u.input_tokens + u.output_tokens,
            exp["usage"]["total_tokens"].as_u64().unwrap()
        );
        assert_eq!(
            o.completed_events as u64,
            exp["assistant_messages_persisted"].as_u64().unwrap()
        );
    }
}

#[tokio::test]
async fn case_c03_truncated_tool_call_keeps_length_and_verbatim_arguments() {
    let case = read_case("C03");
    let trigger = case["trigger"].as_str().unwrap();
    let wire: serde_json::Value = serde_json::from_str(trigger).unwrap();
    let wire_args = wire["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap()
        .to_string();
    // Non-streamed and streamed shapes of the same truncated answer.
    let chunk = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_w",
        "type":"function","function":{"name":"write_file","arguments":wire_args}}]},"finish_reason":"length"}]});
    let streamed = format!("data: {chunk}\n\ndata: [DONE]\n\n");
    for response in [json_200(trigger.to_string()), MockResponse::sse(streamed)] {
        let (outs, _) = serve_all(response).await;
        for o in outs {
            let m = o.unwrap().message;
            assert_eq!(m.finish_reason, Some(FinishReason::Length));
            assert_eq!(m.tool_calls.len(), 1);
            assert_eq!(m.tool_calls[0].name, "write_file");
            // Kept verbatim: never repaired to {} (expected: file_written false, tools_executed 0
            // is the agent loop's job, which refuses unparseable arguments).
            assert_eq!(m.tool_calls[0].arguments, wire_args);
            assert!(serde_json::from_str::<serde_json::Value>(&m.tool_calls[0].arguments).is_err());
        }
    }
    assert_eq!(case["expected"]["tools_executed"], 0);
}

#[tokio::test]
async fn case_c04_empty_or_absent_arguments_become_empty_object() {
    let case = read_case("C04");
    let exp = &case["expected"];
    let call_obj = |id: &str, args: &str| serde_json::json!({"id": id, "type": "function", "function": {"name": "skills_list", "arguments": args}});
    let body = |c: serde_json::Value| {
        json_200(
            serde_json::json!({"choices":[{"index":0,"finish_reason":"tool_calls",
                "message":{"role":"assistant","content":null,"tool_calls":[c]}}]})
            .to_string(),
        )
    };
    // (2) vLLM hermes parser: no arguments field at all, streamed.
    let vllm = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"skills_list\"}}]}}]}\n\n\
                data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    let shapes = [
        ("call_1", body(call_obj("call_1", ""))),
        ("call_2", MockResponse::sse(vllm)),
        ("call_3", body(call_obj("call_3", "  \n"))),
    ];
    for (id, response) in shapes {
        let (outs, _) = serve_all(response).await;
        for o in outs {
            let m = o.unwrap().message;
            assert_eq!(m.tool_calls.len(), 1, "{id}");
            let c = &m.tool_calls[0];
            assert_eq!((c.id.as_str(), c.name.as_str()), (id, "skills_list"));
            assert_eq!(
                c.arguments,
                exp["stored_arguments_string"].as_str().unwrap(),
                "{id}"
            );
            let parsed: serde_json::Value = serde_json::from_str(&c.arguments).unwrap();
            assert_eq!(parsed, exp["parsed_arguments"]);
        }
    }
}

#[tokio::test]
async fn case_c07_comment_keepalives_are_ignored() {
    let case = read_case("C07");
    let exp = &case["expected"];
    let trigger = case["trigger"].as_str().unwrap().to_string();
    // Also without the space after `data:` and with event:/id:/retry: fields.
    let variant = format!("retry: 1000\nid: 7\n{}", trigger.replace("data: ", "data:"));
    for body in [trigger, variant] {
        let (outs, _) = serve_all(MockResponse::sse(body)).await;
        for o in outs {
            let m = o.unwrap().message;
            assert_eq!(m.text, exp["assistant_text"].as_str().unwrap());
            assert_eq!(
                m.finish_reason.as_ref().map(FinishReason::as_str),
                exp["finish_reason"].as_str()
            );
            assert_eq!(
                m.diagnostics.len() as u64,
                exp["parse_errors"].as_u64().unwrap(),
                "{:?}",
                m.diagnostics
            );
        }
    }
}

fn c08_variants() -> (String, String) {
    let case = read_case("C08");
    let trigger = case["trigger"].as_str().unwrap();
    let (a, b) = trigger.split_once("--- variant B ---").unwrap();
    let body = |part: &str| part.trim_start().split_once("\n\n").unwrap().1.to_string();
    (body(a), body(b))
}

#[tokio::test]
async fn case_c08_error_inside_200_stream_is_classified_from_its_content() {
    let case = read_case("C08");
    let exp = &case["expected"];
    let (variant_a, _) = c08_variants();
    let (outs, requests) = serve_all(MockResponse::sse(variant_a)).await;
    assert_eq!(
        requests, 3,
        "identical_retries must be 0: the adapter itself never resends"
    );
    for o in outs {
        let err = o.unwrap_err();
        assert_eq!(err.status, exp["status"].as_u64().map(|s| s as u16));
        assert!(
            err.message
                .contains(exp["message_contains"].as_str().unwrap()),
            "{}",
            err.message
        );
        assert_eq!(err.class.as_str(), exp["classified_as"].as_str().unwrap());
        assert_eq!(err.class, ErrorClass::ContextOverflow);
        assert!(
            err.should_compress(),
            "context overflow compresses instead of resending unchanged"
        );
    }
}

#[tokio::test]
async fn case_c08_variant_b_done_only_stream_is_an_error_not_an_empty_answer() {
    let (_, variant_b) = c08_variants();
    assert_eq!(variant_b.trim(), "data: [DONE]");
    for body in [variant_b.clone(), format!("{}\n", variant_b)] {
        let (outs, _) = serve_all(MockResponse::sse(body)).await;
        for o in outs {
            let err = o.expect_err("a [DONE]-only stream must not be a silent empty success");
            assert!(err.message.contains("empty"), "{}", err.message);
            assert!(!err.retryable() || err.class == ErrorClass::ContextOverflow);
        }
    }
}

#[tokio::test]
async fn case_c13_hermes_markup_in_content_is_stripped_not_executed() {
    let case = read_case("C13");
    let exp = &case["expected"];
    let trigger = case["trigger"].as_str().unwrap().to_string();
    // The same content streamed with the tag split across deltas.
    let content = "Let me look.<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.md\"}}\n</tool_call>";
    let mut streamed = String::new();
    for piece in [
        &content[..14],
        &content[14..17],
        &content[17..40],
        &content[40..],
    ] {
        let chunk = serde_json::json!({"choices":[{"index":0,"delta":{"content":piece},"finish_reason":null}]});
        streamed.push_str(&format!("data: {chunk}\n\n"));
    }
    streamed.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    let mut req = request(vec![Message::user("read notes.md")]);
    req.tools.push(hermes_protocol::ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    });
    for response in [json_200(trigger), MockResponse::sse(streamed)] {
        let mock = MockProvider::start().await;
        let client = client(&mock.base_url());
        for sizes in [None, Some(vec![2, 5])] {
            mock.push(match sizes {
                Some(s) => response.clone().chunked(s),
                None => response.clone(),
            });
            let o = call(&client, &req).await.unwrap();
            let m = &o.message;
            assert_eq!(
                m.tool_calls.len() as u64,
                exp["tools_executed_by_default"].as_u64().unwrap()
            );
            assert_eq!(
                m.text.contains("<tool_call>"),
                exp["user_visible_text_contains_<tool_call>"]
                    .as_bool()
                    .unwrap()
            );
            assert!(
                !o.streamed_text.contains("<tool_call"),
                "{:?}",
                o.streamed_text
            );
            assert!(!o.streamed_text.contains("read_file"));
            assert_eq!(
                !m.diagnostics.is_empty(),
                exp["diagnostic_emitted"].as_bool().unwrap()
            );
            assert!(
                m.diagnostics
                    .iter()
                    .any(|d| d.contains("--tool-call-parser hermes") && d.contains("--jinja"))
            );
        }
        assert_eq!(mock.requests()[0]["tools"][0]["type"], "function");
    }
}
