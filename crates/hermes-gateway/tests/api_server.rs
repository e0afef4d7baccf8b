//! The API server over real loopback HTTP, driven end to end with the mock model; responses
//! are parsed with the OpenAI types of `async-openai`.
#![cfg(feature = "api-server")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_common;

use std::time::Duration;

use api_common::{SYSTEM_PROMPT, Server, roles_and_texts, sse_data, stalling_answer};
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessageArgs, ChatCompletionRequestSystemMessageArgs,
    ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
    CreateChatCompletionResponse, CreateChatCompletionStreamResponse, FinishReason, Role,
};
use async_openai::types::models::ListModelResponse;
use hermes_testkit::MockResponse;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn user(text: &str) -> Value {
    json!({"model": "hermes-agent", "messages": [{"role": "user", "content": text}]})
}

#[tokio::test]
async fn non_streaming_answer_from_an_openai_client_request() {
    let server = Server::start(Some("sk-test")).await;
    server
        .mock
        .push(MockResponse::text("Paris is the capital."));
    // The request is built with the OpenAI client library's own request types.
    let request = CreateChatCompletionRequestArgs::default()
        .model("hermes-agent")
        .messages(vec![
            ChatCompletionRequestSystemMessageArgs::default()
                .content("Answer in one sentence.")
                .build()
                .unwrap()
                .into(),
            ChatCompletionRequestUserMessageArgs::default()
                .content("Hi there")
                .build()
                .unwrap()
                .into(),
            ChatCompletionRequestAssistantMessageArgs::default()
                .content("Hello! How can I help?")
                .build()
                .unwrap()
                .into(),
            ChatCompletionRequestUserMessageArgs::default()
                .content("What is the capital of France?")
                .build()
                .unwrap()
                .into(),
        ])
        .build()
        .unwrap();
    let resp = server
        .chat(serde_json::to_value(&request).unwrap(), None)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let session = resp
        .headers()
        .get("x-hermes-session-id")
        .expect("the session used is named")
        .to_str()
        .unwrap()
        .to_string();
    let parsed: CreateChatCompletionResponse = resp.json().await.unwrap();
    assert_eq!(parsed.object, "chat.completion");
    assert_eq!(parsed.model, "hermes-agent");
    assert_eq!(parsed.choices.len(), 1);
    let choice = &parsed.choices[0];
    assert_eq!(choice.message.role, Role::Assistant);
    assert_eq!(
        choice.message.content.as_deref(),
        Some("Paris is the capital.")
    );
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    let usage = parsed.usage.expect("usage is reported");
    assert_eq!(
        usage.total_tokens,
        usage.prompt_tokens + usage.completion_tokens
    );

    // The model saw the stored system prompt plus the request's system text (call time
    // only), then the earlier turns as history, then the new question.
    let sent = server.mock.requests();
    assert_eq!(sent.len(), 1);
    let msgs = roles_and_texts(&sent[0]);
    assert_eq!(msgs[0].0, "system");
    assert!(msgs[0].1.starts_with(SYSTEM_PROMPT), "{}", msgs[0].1);
    assert!(msgs[0].1.contains("Answer in one sentence."));
    let rest: Vec<(&str, &str)> = msgs[1..]
        .iter()
        .map(|(r, t)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        rest,
        vec![
            ("user", "Hi there"),
            ("assistant", "Hello! How can I help?"),
            ("user", "What is the capital of France?"),
        ]
    );
    // The system text is not stored; the session holds the replayed turns and the answer.
    let stored = server.store.load_messages(&session).unwrap();
    assert!(
        stored
            .iter()
            .all(|m| !m.message.text().contains("one sentence"))
    );
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[3].message.text(), "Paris is the capital.");
    let specs = server.factory.specs.lock().unwrap().clone();
    assert_eq!(specs[0].source, "api_server");
    assert_eq!(
        specs[0].ephemeral.as_deref(),
        Some("Answer in one sentence.")
    );
    server.stop().await;
}

#[tokio::test]
async fn sse_stream_parses_chunk_by_chunk_and_ends_with_done() {
    let server = Server::start(None).await;
    server
        .mock
        .push(MockResponse::text("Streaming works fine."));
    let mut body = user("stream please");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let resp = server.chat(body, None).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = resp.text().await.unwrap();
    let data = sse_data(&text);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{text}");
    let chunks: Vec<CreateChatCompletionStreamResponse> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect();
    assert!(chunks.iter().all(|c| c.object == "chat.completion.chunk"));
    assert!(
        chunks.iter().all(|c| c.id == chunks[0].id),
        "one id per stream"
    );
    assert_eq!(chunks[0].choices[0].delta.role, Some(Role::Assistant));
    let content: String = chunks
        .iter()
        .flat_map(|c| c.choices.iter())
        .filter_map(|ch| ch.delta.content.clone())
        .collect();
    assert_eq!(content, "Streaming works fine.");
    // Several deltas, not one blob: the mock sends the text in pieces.
    let pieces = chunks
        .iter()
        .filter(|c| {
            c.choices
                .first()
                .and_then(|ch| ch.delta.content.as_deref())
                .is_some_and(|t| !t.is_empty())
        })
        .count();
    assert!(pieces >= 2, "{pieces} content chunks");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish.choices[0].finish_reason, Some(FinishReason::Stop));
    let last = chunks.last().unwrap();
    assert!(last.choices.is_empty(), "usage chunk has no choices");
    assert!(last.usage.as_ref().unwrap().completion_tokens > 0);
    server.stop().await;
}

#[tokio::test]
async fn tool_calls_run_on_the_server_and_the_client_sees_the_final_text() {
    let server = Server::start(None).await;
    server
        .mock
        .push(MockResponse::tool_calls(&[("call_1", "clock", "{}")]));
    server.mock.push(MockResponse::text("It is noon."));
    let mut body = user("what time is it?");
    body["stream"] = json!(true);
    body["tools"] = json!([{"type": "function", "function": {"name": "client_tool"}}]);
    let resp = server.chat(body, None).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()
            .get("x-hermes-notice")
            .is_some_and(|v| v.to_str().unwrap().contains("ignored")),
        "client tools are ignored with a note"
    );
    let text = resp.text().await.unwrap();
    assert!(
        text.contains(": tool clock"),
        "tool progress as an SSE comment: {text}"
    );
    let content: String = sse_data(&text)
        .iter()
        .filter(|d| d.as_str() != "[DONE]")
        .map(|d| serde_json::from_str::<CreateChatCompletionStreamResponse>(d).unwrap())
        .flat_map(|c| c.choices)
        .filter_map(|ch| ch.delta.content)
        .collect();
    assert_eq!(content, "It is noon.");
    // The tool result went back to the model; the client's tool list did not.
    let sent = server.mock.requests();
    assert_eq!(sent.len(), 2);
    let second = roles_and_texts(&sent[1]);
    assert!(
        second
            .iter()
            .any(|(r, t)| r == "tool" && t.contains("12:00"))
    );
    let names: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["clock"]);
    server.stop().await;
}

#[tokio::test]
async fn session_header_continues_the_conversation() {
    let server = Server::start(Some("sk-test")).await;
    server
        .mock
        .push(MockResponse::text("Nice to meet you, Ada."));
    server.mock.push(MockResponse::text("Your name is Ada."));
    let first = server
        .chat(user("My name is Ada."), Some("chat-ada"))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["x-hermes-session-id"], "chat-ada");
    // The second request carries only the new question; history comes from the store.
    let second = server
        .chat(user("What is my name?"), Some("chat-ada"))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(second.headers()["x-hermes-session-id"], "chat-ada");
    let parsed: CreateChatCompletionResponse = second.json().await.unwrap();
    assert_eq!(
        parsed.choices[0].message.content.as_deref(),
        Some("Your name is Ada.")
    );
    let sent = server.mock.requests();
    let msgs = roles_and_texts(&sent[1]);
    let turns: Vec<(&str, &str)> = msgs[1..]
        .iter()
        .map(|(r, t)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        turns,
        vec![
            ("user", "My name is Ada."),
            ("assistant", "Nice to meet you, Ada."),
            ("user", "What is my name?"),
        ]
    );
    // Byte-stable system prompt across the two requests (prefix caching).
    assert_eq!(sent[0]["messages"][0], sent[1]["messages"][0]);
    // The first request created the session under the client's id; the second resumed it.
    let specs = server.factory.specs.lock().unwrap().clone();
    assert_eq!(specs[0].resume, None);
    assert_eq!(specs[1].resume.as_deref(), Some("chat-ada"));

    let resp = server
        .req(Method::GET, "/api/sessions/chat-ada/messages")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v: Value = resp.json().await.unwrap();
    let roles: Vec<&str> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "user", "assistant"]);
    assert_eq!(v["messages"][3]["content"], "Your name is Ada.");
    // Only one session exists: the placeholder made while adopting the id is gone.
    assert_eq!(server.store.list_sessions(10, 0).unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn wrong_or_missing_key_is_401_and_health_stays_open() {
    let server = Server::start(Some("sk-right")).await;
    for auth in [Some("Bearer sk-wrong"), Some("sk-right"), None] {
        let mut r = server
            .http
            .post(server.url("/v1/chat/completions"))
            .json(&user("hi"));
        if let Some(a) = auth {
            r = r.header("Authorization", a);
        }
        let resp = r.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], "invalid_api_key");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert!(v["error"]["message"].as_str().unwrap().contains("API key"));
    }
    for path in ["/v1/models", "/api/sessions"] {
        let resp = server.http.get(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    assert!(
        server.mock.requests().is_empty(),
        "nothing reached the model"
    );

    let health = server.http.get(server.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    assert_eq!(
        health.json::<Value>().await.unwrap(),
        json!({"status": "ok"})
    );

    let models = server.req(Method::GET, "/v1/models").send().await.unwrap();
    assert_eq!(models.status(), StatusCode::OK);
    let list: ListModelResponse = models.json().await.unwrap();
    assert_eq!(list.data.len(), 1);
    assert_eq!(list.data[0].id, "hermes-agent");
    server.stop().await;
}

#[tokio::test]
async fn unknown_session_messages_are_404() {
    let server = Server::start(None).await;
    let resp = server
        .req(Method::GET, "/api/sessions/no-such-session/messages")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "session_not_found");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-session")
    );
    server.stop().await;
}

#[tokio::test]
async fn sessions_can_be_created_listed_and_paged() {
    let server = Server::start(None).await;
    let mut ids = Vec::new();
    for title in ["first", "second"] {
        let resp = server
            .req(Method::POST, "/api/sessions")
            .json(&json!({"title": title}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::CREATED);
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["title"], title);
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    // No body at all is fine too.
    let resp = server
        .req(Method::POST, "/api/sessions")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);

    let page: Value = server
        .req(Method::GET, "/api/sessions?limit=2")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    assert_eq!(page["has_more"], true);
    let rest: Value = server
        .req(Method::GET, "/api/sessions?limit=2&offset=2")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rest["data"].as_array().unwrap().len(), 1);
    assert_eq!(rest["has_more"], false);
    let all: Vec<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["data"].as_array().unwrap())
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    for id in &ids {
        assert!(all.contains(id), "{id} listed");
    }
    let first = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["data"].as_array().unwrap())
        .find(|s| s["id"] == ids[0].as_str())
        .unwrap()
        .clone();
    assert_eq!(first["title"], "first");
    assert_eq!(first["source"], "api_server");

    // A created session continues through the header; its messages are readable.
    server.mock.push(MockResponse::text("ok"));
    let resp = server
        .chat(user("hello"), Some(&ids[0]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let msgs: Value = server
        .req(Method::GET, &format!("/api/sessions/{}/messages", ids[0]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(msgs["messages"].as_array().unwrap().len(), 2);

    let bad = server
        .req(Method::GET, "/api/sessions?limit=0")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    server.stop().await;
}

#[tokio::test]
async fn bad_requests_are_400_with_openai_errors() {
    let server = Server::start(None).await;
    let cases = [
        (json!({"messages": []}), "empty"),
        (
            json!({"messages": "hi"}),
            "not a valid chat completion request",
        ),
        (
            json!({"messages": [{"role": "assistant", "content": "x"}]}),
            "last message must be the user's",
        ),
    ];
    for (body, needle) in cases {
        let resp = server.chat(body.clone(), None).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{body}: {msg}");
    }
    let resp = server
        .chat(user("hi"), Some("bad id with spaces"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert!(server.mock.requests().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn second_request_on_a_busy_session_is_409() {
    let server = Server::start(None).await;
    server.mock.push(stalling_answer("Working on it"));
    let first = tokio::spawn(server.chat(user("long job"), Some("busy-1")).send());
    server.wait_model_requests(1).await;
    let resp = server
        .chat(user("are you done?"), Some("busy-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "session_busy");
    assert!(v["error"]["message"].as_str().unwrap().contains("busy-1"));
    // Another session is not blocked by it.
    server.mock.push(MockResponse::text("free"));
    let other = server
        .chat(user("hello"), Some("other-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    // Shutting down interrupts the stalled turn: the waiting client gets a 503.
    server.cancel.cancel();
    let first = tokio::time::timeout(Duration::from_secs(20), first)
        .await
        .expect("the stalled request ends on shutdown")
        .unwrap()
        .unwrap();
    assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        first.headers().get("retry-after").is_some(),
        "{:?}",
        first.headers()
    );
    server.stop().await;
}

#[tokio::test]
async fn global_turn_cap_gives_429() {
    let server = Server::start_with(None, 1).await;
    server.mock.push(stalling_answer("Working"));
    let _first = tokio::spawn(server.chat(user("long job"), None).send());
    server.wait_model_requests(1).await;
    let resp = server.chat(user("another"), None).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "too_many_concurrent_turns");
    server.stop().await;
}

#[tokio::test]
async fn client_disconnect_mid_stream_interrupts_the_turn() {
    let server = Server::start(None).await;
    server.mock.push(stalling_answer("Partial"));
    let mut body = user("first question");
    body["stream"] = json!(true);
    let mut resp = server.chat(body, Some("dc-1")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // Read until the first content arrives, then hang up.
    let mut seen = String::new();
    while !seen.contains("Partial") {
        let chunk = tokio::time::timeout(Duration::from_secs(20), resp.chunk())
            .await
            .expect("the partial answer arrives")
            .unwrap()
            .expect("stream still open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(resp);

    // The turn ends (interrupted) and frees the session; no hang.
    server.mock.push(MockResponse::text("Second answer."));
    let mut freed = None;
    for _ in 0..400 {
        let r = server
            .chat(user("second question"), Some("dc-1"))
            .send()
            .await
            .unwrap();
        if r.status() != StatusCode::CONFLICT {
            freed = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = freed.expect("the session was freed after the client left");
    assert_eq!(r.status(), StatusCode::OK);
    let parsed: CreateChatCompletionResponse = r.json().await.unwrap();
    assert_eq!(
        parsed.choices[0].message.content.as_deref(),
        Some("Second answer.")
    );
    // The interrupted turn left its user message and no answer; the next request's
    // history is valid.
    let sent = server.mock.requests();
    assert_eq!(sent.len(), 2);
    let turns: Vec<(String, String)> = roles_and_texts(&sent[1])[1..].to_vec();
    let turns: Vec<(&str, &str)> = turns
        .iter()
        .map(|(r, t)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        turns,
        vec![("user", "first question"), ("user", "second question")]
    );
    hermes_testkit::assert_request_invariants(&sent);
    server.stop().await;
}

#[tokio::test]
async fn no_key_refuses_a_non_loopback_address() {
    let server = Server::start(None).await;
    let state = hermes_gateway::api::ApiState::new(
        server.factory.clone(),
        server.store.clone(),
        hermes_gateway::api::ApiSettings::default(),
    );
    let err = hermes_gateway::api::serve(
        "0.0.0.0:0".parse().unwrap(),
        state,
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("API_SERVER_KEY"), "{text}");
    assert!(text.contains("0.0.0.0"), "{text}");
    server.stop().await;
}

#[tokio::test]
async fn client_leaving_a_non_streaming_request_interrupts_the_turn() {
    let server = Server::start(None).await;
    server.mock.push(stalling_answer("Partial"));
    let waiting = tokio::spawn(server.chat(user("slow question"), Some("gone-1")).send());
    server.wait_model_requests(1).await;
    // The client gives up: its connection closes with the answer still pending.
    waiting.abort();
    let _ = waiting.await;

    server.mock.push(MockResponse::text("Back again."));
    let mut freed = None;
    for _ in 0..400 {
        let r = server
            .chat(user("still there?"), Some("gone-1"))
            .send()
            .await
            .unwrap();
        if r.status() != StatusCode::CONFLICT {
            freed = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = freed.expect("the session was freed after the client left");
    assert_eq!(r.status(), StatusCode::OK);
    let sent = server.mock.requests();
    let turns: Vec<(String, String)> = roles_and_texts(&sent[1])[1..].to_vec();
    let turns: Vec<(&str, &str)> = turns
        .iter()
        .map(|(r, t)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        turns,
        vec![("user", "slow question"), ("user", "still there?")]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_session_continues_after_a_server_restart() {
    let server = Server::start(Some("sk-test")).await;
    server.mock.push(MockResponse::text("Noted: blue."));
    let r = server
        .chat(user("My favourite colour is blue."), Some("restart-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let server = server.restart().await;
    server.mock.push(MockResponse::text("Blue."));
    let r = server
        .chat(user("Which colour do I like?"), Some("restart-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let sent = server.mock.requests();
    assert_eq!(sent[0]["messages"][0], sent[1]["messages"][0]);
    let turns: Vec<(String, String)> = roles_and_texts(&sent[1])[1..].to_vec();
    let turns: Vec<(&str, &str)> = turns
        .iter()
        .map(|(r, t)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        turns,
        vec![
            ("user", "My favourite colour is blue."),
            ("assistant", "Noted: blue."),
            ("user", "Which colour do I like?"),
        ]
    );
    server.stop().await;
}
