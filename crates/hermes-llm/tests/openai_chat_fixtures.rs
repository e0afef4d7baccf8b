//! Replays every recorded Chat Completions response body (openai_chat/ and llamacpp/) through
//! the mock provider and the real client, whole and split at odd byte boundaries.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{call, client, request};
use hermes_llm::{ErrorClass, LlmError};
use hermes_protocol::{FinishReason, Message, ToolCall};
use hermes_testkit::{MockProvider, MockResponse, fixture_path};

enum Source {
    Sse,
    Json(u16),
    /// llamacpp: status and headers from `<name>.headers.txt`.
    Recording,
}

struct Ok_ {
    text_prefix: &'static str,
    text_chars: Option<usize>,
    calls: &'static [(&'static str, &'static str, &'static str)],
    finish: Option<FinishReason>,
    usage: Option<(u64, u64)>,
}

enum Expect {
    Ok(Ok_),
    Err(ErrorClass, Option<u16>, &'static str),
}

fn ok(text_prefix: &'static str, finish: FinishReason, usage: Option<(u64, u64)>) -> Expect {
    Expect::Ok(Ok_ {
        text_prefix,
        text_chars: None,
        calls: &[],
        finish: Some(finish),
        usage,
    })
}

fn calls(
    calls: &'static [(&'static str, &'static str, &'static str)],
    usage: Option<(u64, u64)>,
) -> Expect {
    Expect::Ok(Ok_ {
        text_prefix: "",
        text_chars: Some(0),
        calls,
        finish: Some(FinishReason::ToolCalls),
        usage,
    })
}

fn table() -> Vec<(&'static str, Source, Expect)> {
    use FinishReason::{Length, Stop};
    use Source::*;
    vec![
        // openai_chat streams
        (
            "openai_chat/stream_finish_length.sse",
            Sse,
            ok("{\"", Length, Some((79, 1))),
        ),
        (
            "openai_chat/stream_logprobs.sse",
            Sse,
            ok("Foo!", Stop, Some((9, 2))),
        ),
        (
            "openai_chat/stream_multiple_choices_n3.sse",
            Sse,
            ok(
                r#"{"city":"San Francisco","temperature":65,"units":"f"}"#,
                Stop,
                Some((79, 42)),
            ),
        ),
        (
            "openai_chat/stream_refusal.sse",
            Sse,
            ok(
                "I'm sorry, I can't assist with that request.",
                Stop,
                Some((79, 11)),
            ),
        ),
        (
            "openai_chat/stream_text_gpt41_obfuscation.sse",
            Sse,
            Expect::Ok(Ok_ {
                text_prefix: "**Holiday Name:** Harmony Day\n\n**Date:**",
                text_chars: Some(1724),
                calls: &[],
                finish: Some(Stop),
                usage: Some((16, 300)),
            }),
        ),
        (
            "openai_chat/stream_text_with_usage.sse",
            Sse,
            ok(
                "I'm unable to provide real-time weather updates.",
                Stop,
                Some((14, 30)),
            ),
        ),
        (
            "openai_chat/stream_tool_call_single.sse",
            Sse,
            calls(
                &[(
                    "call_4XzlGBLtUe9dy3GVNV4jhq7h",
                    "get_weather",
                    r#"{"city":"New York City"}"#,
                )],
                Some((44, 16)),
            ),
        ),
        (
            "openai_chat/stream_tool_call_strict.sse",
            Sse,
            calls(
                &[(
                    "call_CTf1nWJLqSeRgDqaCG27xZ74",
                    "get_weather",
                    r#"{"city":"San Francisco","state":"CA"}"#,
                )],
                Some((48, 19)),
            ),
        ),
        (
            "openai_chat/stream_tool_calls_parallel.sse",
            Sse,
            calls(
                &[
                    (
                        "call_JMW1whyEaYG438VE1OIflxA2",
                        "GetWeatherArgs",
                        r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#,
                    ),
                    (
                        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                        "get_stock_price",
                        r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#,
                    ),
                ],
                Some((149, 60)),
            ),
        ),
        // openai_chat non-streamed bodies
        (
            "openai_chat/nonstream_finish_length.json",
            Json(200),
            ok("{\"", Length, Some((79, 1))),
        ),
        (
            "openai_chat/nonstream_multiple_choices_n3.json",
            Json(200),
            ok(
                r#"{"city":"San Francisco","temperature":64,"units":"f"}"#,
                Stop,
                Some((79, 44)),
            ),
        ),
        (
            "openai_chat/nonstream_refusal.json",
            Json(200),
            ok(
                "I'm very sorry, but I can't assist with that.",
                Stop,
                Some((79, 12)),
            ),
        ),
        (
            "openai_chat/nonstream_text.json",
            Json(200),
            ok(
                "I'm unable to provide real-time weather updates.",
                Stop,
                Some((14, 37)),
            ),
        ),
        (
            "openai_chat/nonstream_text_gpt41.json",
            Json(200),
            ok("**Holiday Name:** Galaxy Day", Stop, Some((16, 363))),
        ),
        (
            "openai_chat/nonstream_tool_call.json",
            Json(200),
            calls(
                &[(
                    "call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
                    "GetWeatherArgs",
                    r#"{"city":"Edinburgh","country":"UK","units":"c"}"#,
                )],
                Some((76, 24)),
            ),
        ),
        (
            "openai_chat/nonstream_tool_calls_parallel.json",
            Json(200),
            calls(
                &[
                    (
                        "call_fdNz3vOBKYgOIpMdWotB9MjY",
                        "GetWeatherArgs",
                        r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#,
                    ),
                    (
                        "call_h1DWI1POMJLb0KwIyQHWXD4p",
                        "get_stock_price",
                        r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#,
                    ),
                ],
                Some((149, 60)),
            ),
        ),
        // openai_chat errors (status in the file name)
        (
            "openai_chat/error_400_context_length_exceeded.json",
            Json(400),
            Expect::Err(
                ErrorClass::ContextOverflow,
                Some(400),
                "maximum context length",
            ),
        ),
        (
            "openai_chat/error_400_context_length_exceeded_compact.json",
            Json(400),
            Expect::Err(
                ErrorClass::ContextOverflow,
                Some(400),
                "maximum context length",
            ),
        ),
        (
            "openai_chat/error_400_context_length_exceeded_with_completion.json",
            Json(400),
            Expect::Err(
                ErrorClass::ContextOverflow,
                Some(400),
                "3130 in the messages",
            ),
        ),
        (
            "openai_chat/error_429_insufficient_quota.json",
            Json(429),
            Expect::Err(
                ErrorClass::Billing,
                Some(429),
                "exceeded your current quota",
            ),
        ),
        (
            "openai_chat/error_429_rate_limit_tokens.json",
            Json(429),
            Expect::Err(ErrorClass::RateLimit, Some(429), "tokens per min"),
        ),
        // llama-cpp-python recordings
        (
            "llamacpp/stream_text.sse",
            Recording,
            ok(
                "Hello, welcome to my little corner of the world.",
                Stop,
                None,
            ),
        ),
        (
            "llamacpp/stream_text_include_usage.sse",
            Recording,
            ok(
                "Hello, welcome to my little corner of the world.",
                Stop,
                None,
            ),
        ),
        (
            "llamacpp/stream_finish_length.sse",
            Recording,
            ok("In the depths of the", Length, None),
        ),
        (
            "llamacpp/fc_stream_text_no_tools.sse",
            Recording,
            ok("Awesome, welcome to the city of Elysium!", Stop, None),
        ),
        (
            "llamacpp/fc_stream_tool_choice_forced.sse",
            Recording,
            calls(
                &[(
                    "call__0_get_weather_cmpl-b5cf2a40-a94d-49da-8f79-645d5795a125",
                    "get_weather",
                    r#"{ "city": "Paris" }"#,
                )],
                None,
            ),
        ),
        (
            "llamacpp/fc_stream_tools_auto_unsupported_empty_body.sse",
            Recording,
            Expect::Err(ErrorClass::FormatError, None, "empty body"),
        ),
        (
            "llamacpp/error_context_window_stream_empty_body.sse",
            Recording,
            Expect::Err(ErrorClass::FormatError, None, "empty body"),
        ),
        (
            "llamacpp/nonstream_text.json",
            Recording,
            ok(
                "Hello, welcome to my little corner of the world!",
                Stop,
                Some((36, 11)),
            ),
        ),
        (
            "llamacpp/nonstream_finish_length.json",
            Recording,
            ok("In the depths of the", Length, Some((26, 5))),
        ),
        (
            "llamacpp/nonstream_tools_default_format.json",
            Recording,
            ok("Paris, the City of Light.", Length, Some((37, 64))),
        ),
        (
            "llamacpp/quirk_missing_messages_accepted.json",
            Recording,
            ok("I've always been passionate", Length, Some((4, 5))),
        ),
        (
            "llamacpp/fc_nonstream_tools_auto.json",
            Recording,
            calls(
                &[(
                    "call__0_get_weather_cmpl-6ae740de-007e-4ddc-b7f0-ea92683e06c7",
                    "get_weather",
                    r#"{ "city": "Paris" }"#,
                )],
                Some((23, 8)),
            ),
        ),
        (
            "llamacpp/fc_nonstream_tool_choice_forced.json",
            Recording,
            calls(
                &[(
                    "call__0_get_weather_cmpl-097a17dd-544f-4947-ad2f-d4b560026154",
                    "get_weather",
                    r#"{ "city": "Paris" }"#,
                )],
                Some((23, 8)),
            ),
        ),
        (
            "llamacpp/fc_nonstream_after_tool_result.json",
            Recording,
            calls(
                &[(
                    "call__0_get_weather_cmpl-47d453a0-3ea2-4cb4-80e7-55a6a57b16ed",
                    "get_weather",
                    r#"{"city":"Paris"}"#,
                )],
                Some((64, 7)),
            ),
        ),
        (
            "llamacpp/error_400_context_window.json",
            Recording,
            Expect::Err(
                ErrorClass::ContextOverflow,
                Some(400),
                "maximum context length is 2048",
            ),
        ),
        (
            "llamacpp/error_500_validation_bad_messages_type.json",
            Recording,
            Expect::Err(ErrorClass::ServerError, Some(500), "validation error"),
        ),
        (
            "llamacpp/fc_error_500_assistant_content_null.json",
            Recording,
            Expect::Err(ErrorClass::ServerError, Some(500), "validation errors"),
        ),
    ]
}

fn response(rel: &str, source: &Source) -> MockResponse {
    match source {
        Source::Sse => MockResponse::sse_fixture(fixture_path(rel)),
        Source::Json(status) => MockResponse::json_fixture(*status, fixture_path(rel)),
        Source::Recording => {
            let stem = rel.rsplit_once('.').unwrap().0;
            MockResponse::from_recording(
                fixture_path(&format!("{stem}.headers.txt")),
                fixture_path(rel),
            )
        }
    }
}

fn check(rel: &str, split: &str, expect: &Expect, got: &Result<common::Outcome, LlmError>) {
    let ctx = format!("{rel} ({split})");
    match (expect, got) {
        (Expect::Ok(e), Ok(o)) => {
            let m = &o.message;
            assert!(
                m.text.starts_with(e.text_prefix),
                "{ctx}: text {:?}",
                m.text
            );
            if let Some(n) = e.text_chars {
                assert_eq!(m.text.chars().count(), n, "{ctx}: text length");
            }
            assert_eq!(
                o.streamed_text, m.text,
                "{ctx}: streamed deltas differ from final text"
            );
            let want: Vec<ToolCall> = e
                .calls
                .iter()
                .map(|(id, name, args)| ToolCall::new(*id, *name, *args))
                .collect();
            assert_eq!(m.tool_calls, want, "{ctx}: tool calls");
            assert_eq!(m.finish_reason, e.finish, "{ctx}: finish");
            let usage = (m.usage.input_tokens, m.usage.output_tokens);
            assert_eq!(usage, e.usage.unwrap_or((0, 0)), "{ctx}: usage");
            assert_eq!(o.completed_events, 1, "{ctx}");
            assert!(!m.text.contains("<tool_call>"), "{ctx}");
        }
        (Expect::Err(class, status, needle), Err(err)) => {
            assert_eq!(err.class, *class, "{ctx}: {err:?}");
            assert_eq!(err.status, *status, "{ctx}: {err:?}");
            assert!(
                err.message.contains(needle),
                "{ctx}: message {:?}",
                err.message
            );
        }
        (Expect::Ok(_), Err(e)) => panic!("{ctx}: expected success, got {e:?}"),
        (Expect::Err(..), Ok(o)) => panic!("{ctx}: expected an error, got {:?}", o.message),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_decodes_whole_and_split() {
    let mock = MockProvider::start().await;
    let client = client(&mock.base_url());
    let req = request(vec![Message::user("hi")]);
    let splits: Vec<(&str, Option<Vec<usize>>)> = vec![
        ("whole", None),
        ("1,7,3,13", Some(vec![1, 7, 3, 13])),
        ("every 5", Some(vec![5])),
        ("every 64", Some(vec![64])),
    ];
    let mut count = 0;
    for (rel, source, expect) in table() {
        for (label, sizes) in &splits {
            let mut resp = response(rel, &source);
            if let Some(s) = sizes {
                resp = resp.chunked(s.clone());
            }
            mock.push(resp);
            let got = call(&client, &req).await;
            check(rel, label, &expect, &got);
            count += 1;
        }
    }
    assert_eq!(mock.requests().len(), count);
}

#[test]
fn table_covers_every_response_body() {
    let listed: std::collections::BTreeSet<String> =
        table().iter().map(|(rel, _, _)| rel.to_string()).collect();
    for dir in ["openai_chat", "llamacpp"] {
        for entry in std::fs::read_dir(fixture_path(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let is_body = (name.ends_with(".sse") || name.ends_with(".json"))
                && !name.ends_with(".request.json")
                && name != "models.json";
            if is_body {
                assert!(
                    listed.contains(&format!("{dir}/{name}")),
                    "fixture {dir}/{name} not replayed"
                );
            }
        }
    }
}

#[tokio::test]
async fn refusal_adds_a_diagnostic() {
    let mock = MockProvider::start().await;
    mock.push(MockResponse::sse_fixture(fixture_path(
        "openai_chat/stream_refusal.sse",
    )));
    let out = call(
        &client(&mock.base_url()),
        &request(vec![Message::user("x")]),
    )
    .await
    .unwrap();
    assert!(
        out.message
            .diagnostics
            .iter()
            .any(|d| d.contains("refused"))
    );
}

#[tokio::test]
async fn empty_stream_near_the_context_window_is_context_overflow() {
    // The recorded request that produced the empty body: a ~3000-word prompt, n_ctx 2048.
    let recorded: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_path(
            "llamacpp/error_context_window_stream_empty_body.request.json",
        ))
        .unwrap(),
    )
    .unwrap();
    let messages: Vec<Message> = recorded["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| Message::user(m["content"].as_str().unwrap()))
        .collect();
    let mock = MockProvider::start().await;
    mock.push(MockResponse::from_recording(
        fixture_path("llamacpp/error_context_window_stream_empty_body.headers.txt"),
        fixture_path("llamacpp/error_context_window_stream_empty_body.sse"),
    ));
    let mut cfg = hermes_llm::OpenAiChatConfig::new(mock.base_url(), "smollm2-135m");
    cfg.context_window = Some(2048);
    let client = hermes_llm::OpenAiChatClient::new(cfg).unwrap();
    let err = call(&client, &request(messages)).await.unwrap_err();
    assert_eq!(err.class, ErrorClass::ContextOverflow, "{err:?}");
    assert!(err.should_compress());
}

#[tokio::test]
async fn assistant_tool_call_history_is_sent_with_empty_string_content() {
    // llama-cpp-python answers HTTP 500 to `content: null` (fc_error_500_assistant_content_null)
    // and 200 to `content: ""` (fc_nonstream_after_tool_result). Send the latter's history.
    let mock = MockProvider::start().await;
    mock.push(MockResponse::from_recording(
        fixture_path("llamacpp/fc_nonstream_after_tool_result.headers.txt"),
        fixture_path("llamacpp/fc_nonstream_after_tool_result.json"),
    ));
    let mut assistant = Message::assistant("");
    assistant.tool_calls.push(ToolCall::new(
        "call_1",
        "get_weather",
        r#"{"city": "Paris"}"#,
    ));
    let history = vec![
        Message::user("What is the weather in Paris?"),
        assistant,
        Message::tool(
            "call_1",
            "get_weather",
            r#"{"temp_c": 18, "sky": "cloudy"}"#,
        ),
    ];
    let out = call(&client(&mock.base_url()), &request(history))
        .await
        .unwrap();
    assert_eq!(out.message.tool_calls.len(), 1);
    let sent = &mock.requests()[0];
    let msgs = sent["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(
        msgs[2]["content"],
        serde_json::json!(""),
        "content must be \"\" not null"
    );
    assert_eq!(msgs[2]["tool_calls"][0]["type"], "function");
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], "call_1");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    // The recorded failing request differs exactly in that field.
    let failing: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_path(
            "llamacpp/fc_error_500_assistant_content_null.request.json",
        ))
        .unwrap(),
    )
    .unwrap();
    assert!(failing["messages"][1]["content"].is_null());
    assert_eq!(failing["messages"][1]["tool_calls"], msgs[2]["tool_calls"]);
    hermes_testkit::assert_request_invariants(&mock.requests());
    let auth = mock.captured()[0]
        .header("authorization")
        .map(str::to_string);
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-0123456789abcdef"));
}

#[tokio::test]
async fn models_endpoint_lists_recorded_models() {
    let mock = MockProvider::start().await;
    let body: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_path("llamacpp/models.json")).unwrap(),
    )
    .unwrap();
    mock.set_models(body);
    let ids = client(&mock.base_url()).list_models().await.unwrap();
    assert_eq!(ids, vec!["smollm2-135m".to_string()]);
}

#[tokio::test]
async fn cancel_while_hanging_ends_the_stream() {
    let mock = MockProvider::start().await;
    mock.push(
        MockResponse::from_bytes(
            200,
            vec![("content-type".into(), "text/event-stream".into())],
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n",
        )
        .hang(),
    );
    let client = client(&mock.base_url());
    let req = request(vec![Message::user("x")]);
    let mut stream = hermes_llm::ModelClient::stream(&client, &req)
        .await
        .unwrap();
    use futures::StreamExt;
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first, hermes_llm::StreamEvent::TextDelta("partial".into()));
    req.cancel.cancel();
    let rest = tokio::time::timeout(std::time::Duration::from_secs(30), stream.next())
        .await
        .expect("stream did not end after cancel");
    assert!(rest.is_none());
}
