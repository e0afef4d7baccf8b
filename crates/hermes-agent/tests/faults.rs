//! Fault injection through the turn (issue 6 part 4): a stream cut off cleanly or by a
//! dropped connection, a stream that stalls longer than the read timeout, a chunk that is not
//! JSON, a storm of 5xx answers and slow-loris response headers. Each ends in the error class
//! the recovery policy expects, a retry or a clear message, never a panic or a hang (every
//! turn is bounded by the harness's 60 s hang detector).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Harness, final_text};
use hermes_agent::Agent;
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::{AgentEvent, TurnOutcome};
use hermes_testkit::{MockResponse, RawFault, RawHttpServer};

/// Read timeout of the client under test (it also bounds the wait for the response head).
const TIMEOUT: Duration = Duration::from_millis(800);

/// An agent on `base_url` whose client gives up after [`TIMEOUT`] of silence.
async fn agent_on(h: &Harness, base_url: &str) -> Agent {
    let mut config = OpenAiChatConfig::new(base_url.to_string(), "mock-model");
    config.timeouts.stream_idle = TIMEOUT;
    let mut deps = h.deps.clone();
    deps.client = std::sync::Arc::new(OpenAiChatClient::new(config).unwrap());
    Agent::start(deps, h.opts.clone(), None).await.unwrap()
}

fn statuses(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Status { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn error(status: u16) -> MockResponse {
    MockResponse::from_bytes(
        status,
        vec![("content-type".into(), "application/json".into())],
        format!(r#"{{"error":{{"message":"upstream failure {status}"}}}}"#),
    )
}

/// The stored history is a valid conversation after the turn.
fn assert_history_valid(h: &Harness, agent: &Agent) {
    let stored: Vec<_> = h
        .store
        .load_messages(agent.session_id())
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    hermes_agent::validate_tool_pairs(&stored).unwrap();
}

#[tokio::test]
async fn stream_ending_early_is_retried_and_nothing_partial_is_kept() {
    let h = Harness::new().await;
    let mut agent = agent_on(&h, &h.mock.base_url()).await;
    let full = MockResponse::text("the complete answer");
    h.mock.push(MockResponse::sse(full.first_sse_events(2)));
    h.mock.push(full);
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "the complete answer");
    let st = statuses(&events);
    assert!(
        st.iter()
            .any(|s| s.starts_with("network error, retrying in") && s.ends_with("(1/3)")),
        "{st:?}"
    );
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert_eq!(stored.len(), 2, "user + the one complete answer");
    assert_eq!(stored[1].message.text(), "the complete answer");
}

#[tokio::test]
async fn tool_call_cut_off_mid_arguments_is_never_executed() {
    let h = Harness::new().await;
    let mut agent = agent_on(&h, &h.mock.base_url()).await;
    let call = MockResponse::tool_calls(&[("call_1", "skills_list", r#"{"category":"dev"}"#)]);
    // Role chunk and the first half of the arguments only.
    h.mock.push(MockResponse::sse(call.first_sse_events(2)));
    h.mock.push(call);
    h.mock.push(MockResponse::text("done"));
    let (outcome, events) = h.turn(&mut agent, "list skills").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "done");
    assert_eq!(h.counting.count(), 1, "only the complete call ran");
    assert_eq!(
        h.counting.last_args.lock().unwrap().clone().unwrap()["category"],
        "dev"
    );
    h.checked_requests();
    assert_history_valid(&h, &agent);
}

#[tokio::test]
async fn connection_dropped_mid_body_fails_with_a_network_error_after_the_retries() {
    let h = Harness::new().await;
    let full = MockResponse::text("never finished");
    let raw = RawHttpServer::start(RawFault::CutBody {
        body: full.first_sse_events(2).into_bytes().into(),
    })
    .await;
    let mut agent = agent_on(&h, &raw.base_url()).await;
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    let text = final_text(&events);
    assert!(text.starts_with("The model call failed"), "{text}");
    let st = statuses(&events);
    assert_eq!(
        st.iter()
            .filter(|s| s.starts_with("network error, retrying in"))
            .count(),
        3,
        "three retries of a timeout-class error: {st:?}"
    );
    assert_eq!(raw.connections(), 4, "one try and three retries");
    assert_history_valid(&h, &agent);
}

#[tokio::test]
async fn stalled_stream_times_out_and_the_retry_answers() {
    let h = Harness::new().await;
    let mut agent = agent_on(&h, &h.mock.base_url()).await;
    let full = MockResponse::text("after the stall");
    // Two events, then silence on an open connection.
    h.mock
        .push(MockResponse::sse(full.first_sse_events(2)).hang());
    h.mock.push(full);
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "after the stall");
    let st = statuses(&events);
    assert!(
        st.iter()
            .any(|s| s.starts_with("no data from the provider, retrying in")),
        "{st:?}"
    );
    assert_eq!(h.mock.requests().len(), 2);
}

#[tokio::test]
async fn malformed_json_chunk_is_skipped_with_a_diagnostic() {
    let h = Harness::new().await;
    let mut agent = agent_on(&h, &h.mock.base_url()).await;
    let full = String::from_utf8(MockResponse::text("abcdef").body.to_vec()).unwrap();
    let mut events_text: Vec<&str> = full.split_inclusive("\n\n").collect();
    events_text.insert(
        2,
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bro\n\n",
    );
    h.mock.push(MockResponse::sse(events_text.concat()));
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "abcdef");
    let st = statuses(&events);
    assert!(
        st.iter().any(|s| s.contains("not JSON")),
        "the skipped chunk is reported: {st:?}"
    );
    assert_eq!(h.mock.requests().len(), 1, "no retry for a skipped chunk");
}

#[tokio::test]
async fn storm_of_server_errors_stops_after_the_retries_and_the_next_turn_recovers() {
    let h = Harness::new().await;
    let mut agent = agent_on(&h, &h.mock.base_url()).await;
    for status in [500, 502, 503, 500, 502, 503, 500, 502] {
        h.mock.push(error(status));
    }
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    let text = final_text(&events);
    assert!(text.starts_with("The model call failed"), "{text}");
    assert!(text.contains("upstream failure"), "{text}");
    assert_eq!(h.mock.requests().len(), 4, "one try and three retries");
    let st = statuses(&events);
    assert_eq!(
        st.iter().filter(|s| s.contains("retry")).count(),
        3,
        "{st:?}"
    );

    // The next turn starts with a fresh retry budget: three errors, then an answer.
    h.mock.clear_queue();
    for status in [503, 500, 502] {
        h.mock.push(error(status));
    }
    h.mock.push(MockResponse::text("back to normal"));
    let (outcome, events) = h.turn(&mut agent, "again").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(final_text(&events), "back to normal");
    assert_eq!(h.mock.pending(), 0);
    h.checked_requests();
    assert_history_valid(&h, &agent);
}

#[tokio::test]
async fn slow_loris_headers_hit_the_read_timeout() {
    let h = Harness::new().await;
    let raw = RawHttpServer::start(RawFault::SlowHeaders {
        interval: Duration::from_millis(100),
    })
    .await;
    let mut agent = agent_on(&h, &raw.base_url()).await;
    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    // The silence limit also bounds the wait for the complete response head.
    let text = final_text(&events);
    assert!(text.contains("model.stream_idle_timeout"), "{text}");
    let st = statuses(&events);
    assert_eq!(
        st.iter()
            .filter(|s| s.starts_with("no data from the provider, retrying in"))
            .count(),
        3,
        "{st:?}"
    );
    assert_eq!(raw.connections(), 4);
    assert_history_valid(&h, &agent);
}

/// A `tool_finished` event is an acknowledgement: by the time it is sent, the result is in
/// the store (a crash right after it must not lose the result; found by the crash suite).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_finished_is_sent_after_the_result_is_committed() {
    let h = Harness::new().await;
    let mut agent = agent_on(&h, &h.mock.base_url()).await;
    let session = agent.session_id().to_string();
    h.mock.push(MockResponse::tool_calls(&[
        ("call_1", "skills_list", "{}"),
        ("call_2", "skills_list", r#"{"category":"x"}"#),
    ]));
    h.mock.push(MockResponse::text("listed"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let turn = tokio::spawn(async move {
        let outcome = agent
            .run_turn("list", &tx, tokio_util::sync::CancellationToken::new())
            .await;
        (agent, outcome)
    });
    let mut finished = 0;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("turn hung")
    {
        if let AgentEvent::ToolFinished { call_id, .. } = event {
            let stored = h.store.load_messages(&session).unwrap();
            assert!(
                stored
                    .iter()
                    .any(|m| m.message.tool_call_id.as_deref() == Some(call_id.as_str())),
                "{call_id} reported finished before its result was stored"
            );
            finished += 1;
        }
    }
    let (_agent, outcome) = turn.await.unwrap();
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(finished, 2);
}
