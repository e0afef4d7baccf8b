//! Provider faults as the user of `hermes chat -q` sees them (issue 6 part 4): a storm of
//! 5xx answers, a connection dropped mid-stream, a stream cut off before its end and a chunk
//! that is not JSON. Each ends with the right exit code and one clear line on stderr (or the
//! answer after a retry), never a panic or a hang, and leaves a session that `-c` resumes.
//! `agent.api_max_retries` keeps the retry budget (and its 2 s backoff) small.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::{MockResponse, RawFault, RawHttpServer};

fn error(status: u16) -> MockResponse {
    MockResponse::from_bytes(
        status,
        vec![("content-type".into(), "application/json".into())],
        format!(r#"{{"error":{{"message":"upstream failure {status}"}}}}"#),
    )
}

fn assert_no_panic(out: &std::process::Output) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{err}");
}

#[tokio::test]
async fn server_error_storm_exits_1_with_the_provider_message() {
    let env = Env::with_config("agent:\n  api_max_retries: 0\n").await;
    for status in [500, 502, 503] {
        env.mock.push(error(status));
    }
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.starts_with("error: The model call failed")
                && l.contains("upstream failure 500")),
        "{err}"
    );
    assert_eq!(stdout(&out), "", "no answer on stdout");
    assert_eq!(env.mock.requests().len(), 1, "no retry with a budget of 0");

    // The session is intact: -c continues it once the provider is back.
    env.mock.clear_queue();
    env.mock.push(MockResponse::text("working again"));
    let out = env.run(&["-c", "chat", "-q", "hello again"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("working again"));
    hermes_testkit::assert_request_invariants(&env.mock.requests());
}

#[tokio::test]
async fn dropped_connection_exits_1_with_a_network_error() {
    let env = Env::new().await;
    let raw = RawHttpServer::start(RawFault::CutBody {
        body: MockResponse::text("never finished")
            .first_sse_events(2)
            .into_bytes()
            .into(),
    })
    .await;
    let config = format!(
        "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\nagent:\n  api_max_retries: 0\n",
        raw.base_url()
    );
    std::fs::write(env.home.home().config_file(), config).unwrap();
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.starts_with("error: The model call failed: network error")),
        "{err}"
    );
    // The chat request, plus any metadata lookups the client makes first (context length).
    assert!(raw.connections() >= 1);
}

#[tokio::test]
async fn stream_cut_short_is_retried_and_answered() {
    let env = Env::with_config("agent:\n  api_max_retries: 1\n").await;
    let full = MockResponse::text("the whole answer");
    env.mock.push(MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        full.first_sse_events(2),
    ));
    env.mock.push(full);
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert_no_panic(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "the whole answer");
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.contains("network error, retrying in") && l.contains("(1/1)")),
        "the retry is shown: {err}"
    );
}

#[tokio::test]
async fn chunk_that_is_not_json_is_reported_and_the_rest_answered() {
    let env = Env::new().await;
    let full = String::from_utf8(MockResponse::text("abcdef").body.to_vec()).unwrap();
    let mut events: Vec<&str> = full.split_inclusive("\n\n").collect();
    events.insert(2, "data: {\"choices\": [{\"delta\": \n\n");
    env.mock.push(MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        events.concat(),
    ));
    let out = env.run(&["chat", "-q", "hello"]).await;
    assert_no_panic(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "abcdef");
    assert!(stderr(&out).contains("not JSON"), "{}", stderr(&out));
}

/// Issue 20 item 10: "Connection refused" is not a timeout. Against a base_url nothing listens
/// on, `chat -q` answers at once with one friendly line naming the address (no retry lines,
/// no raw socket error) and exits 1; the default retry budget (3) is not spent.
#[tokio::test]
async fn chat_q_against_a_dead_base_url_prints_one_friendly_line_and_exits_1() {
    let env = Env::new().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let config = format!("model:\n  provider: custom\n  base_url: {base}\n  default: mock-model\n");
    std::fs::write(env.home.home().config_file(), config).unwrap();
    let started = std::time::Instant::now();
    let out = env.run(&["chat", "-q", "hello"]).await;
    let took = started.elapsed();
    assert_no_panic(&out);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        took < std::time::Duration::from_secs(10),
        "a refused connection is not retried with backoff: took {took:?}\n{err}"
    );
    // The session summary (id, tokens) is the other line; everything else is the problem.
    let problem: Vec<&str> = err
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("session "))
        .collect();
    assert_eq!(
        problem.len(),
        1,
        "exactly one line about the failure:\n{err}"
    );
    let line = problem[0];
    assert!(line.starts_with("error: "), "{line}");
    assert!(line.contains("connection refused"), "{line}");
    assert!(line.contains(&base), "names the address: {line}");
    assert!(!line.contains("os error"), "no raw socket error: {line}");
    assert_eq!(stdout(&out), "", "no answer on stdout");
}
