//! The API server's SSE stream when the agent retries a model call whose stream broke after
//! text was already sent (`stream_restarted`): a retry repeating the same words leaves the
//! client's content exact; a retry with other words ends the stream with the
//! `stream_restarted` error, while the turn still completes and is stored.
#![cfg(feature = "api-server")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_common;

use std::sync::atomic::Ordering;

use api_common::{Server, sse_data};
use hermes_testkit::MockResponse;
use serde_json::{Value, json};

/// The first `n` SSE events of a streamed answer (no finish_reason, no `[DONE]`): the
/// stream ends early, which the agent retries.
fn cut(response: &MockResponse, n: usize) -> MockResponse {
    let body = String::from_utf8(response.body.to_vec()).unwrap();
    let head: String = body.split_inclusive("\n\n").take(n).collect();
    MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        head,
    )
}

/// Streams one request; returns (session id, every `data:` payload parsed, except `[DONE]`
/// which must be last).
async fn stream(server: &Server) -> (String, Vec<Value>) {
    let body = json!({"model": "hermes-agent", "stream": true,
        "messages": [{"role": "user", "content": "tell me"}]});
    let resp = server.chat(body, None).send().await.unwrap();
    assert_eq!(resp.status(), reqwest::StatusCode::OK);
    let session = resp.headers()["x-hermes-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let text = resp.text().await.unwrap();
    let mut data = sse_data(&text);
    assert_eq!(data.pop().as_deref(), Some("[DONE]"), "{text}");
    let values = data
        .iter()
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect();
    (session, values)
}

fn content(chunks: &[Value]) -> String {
    chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect()
}

#[tokio::test]
async fn a_retry_repeating_the_sent_text_continues_the_stream_without_repeating_it() {
    let server = Server::start(None).await;
    server.factory.max_retries.store(2, Ordering::SeqCst);
    let full = MockResponse::text("The answer is forty-two.");
    server.mock.push(cut(&full, 2));
    server.mock.push(full);
    let (session, chunks) = stream(&server).await;
    assert_eq!(content(&chunks), "The answer is forty-two.", "{chunks:?}");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop", "{chunks:?}");
    assert!(chunks.iter().all(|c| c.get("error").is_none()));
    assert_eq!(
        server.mock.requests().len(),
        2,
        "the cut stream was retried"
    );
    let stored = server.store.load_messages(&session).unwrap();
    assert_eq!(
        stored.last().unwrap().message.text(),
        "The answer is forty-two."
    );
    server.stop().await;
}

#[tokio::test]
async fn a_retry_with_other_words_ends_the_stream_with_an_error_and_the_answer_is_stored() {
    let server = Server::start(None).await;
    server.factory.max_retries.store(2, Ordering::SeqCst);
    server
        .mock
        .push(cut(&MockResponse::text("Hello there, my friend."), 2));
    server.mock.push(MockResponse::text("Goodbye for now."));
    let (session, chunks) = stream(&server).await;
    let sent = content(&chunks);
    assert!(
        !sent.is_empty() && "Hello there, my friend.".starts_with(&sent),
        "only the first attempt's text was sent: {sent:?}"
    );
    let last = chunks.last().unwrap();
    assert_eq!(last["error"]["code"], "stream_restarted", "{chunks:?}");
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("X-Hermes-Session-Id")
    );
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"][0]["finish_reason"].is_null()),
        "no finish chunk: {chunks:?}"
    );
    // Nothing acknowledged is lost: the turn ran to its end and its answer is stored.
    let stored = server.store.load_messages(&session).unwrap();
    assert_eq!(stored.last().unwrap().message.text(), "Goodbye for now.");
    server.stop().await;
}
