//! Issue 18 §3 on the API server, with real clients on loopback: DNS-rebinding `Host`
//! values, browser cross-site requests without a key, non-JSON bodies, OpenAI-shaped 405 /
//! 413 / 409 / 429 with `Retry-After`, the session header on errors, SSE keep-alive
//! comments, the session slot freed before the final event, and silent connections.
#![cfg(feature = "api-server")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_common;

use std::time::Duration;

use api_common::*;
use hermes_testkit::MockResponse;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn user(text: &str) -> Value {
    json!({"model": "hermes-agent", "messages": [{"role": "user", "content": text}]})
}

fn addr(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

async fn error_of(resp: reqwest::Response) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let status = resp.status();
    let headers = resp.headers().clone();
    let v: Value = resp.json().await.expect("an OpenAI error object");
    let e = &v["error"];
    assert!(
        e["message"].is_string() && e["type"].is_string() && e["code"].is_string(),
        "not OpenAI-shaped: {v}"
    );
    (status, headers, v)
}

#[tokio::test]
async fn a_rebinding_host_is_refused_and_the_bound_names_served() {
    let server = Server::start(None).await;
    server.mock.push(MockResponse::text("never"));
    let port = addr(&server).rsplit_once(':').unwrap().1.to_string();
    let resp = server
        .chat(user("read my files"), None)
        .header("host", format!("evil.example:{port}"))
        .send()
        .await
        .unwrap();
    let (status, _, v) = error_of(resp).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(v["error"]["code"], "host_not_allowed");
    assert!(server.mock.captured().is_empty(), "no turn ran");
    for host in [format!("localhost:{port}"), addr(&server)] {
        let ok = server
            .req(reqwest::Method::GET, "/v1/models")
            .header("host", host.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), StatusCode::OK, "{host}");
    }
    server.stop().await;
}

#[tokio::test]
async fn configured_host_names_are_served() {
    let server = Server::start_tuned(None, |s| {
        s.allowed_hosts = vec!["hermes.lan".into()];
    })
    .await;
    let ok = server
        .req(reqwest::Method::GET, "/v1/models")
        .header("host", "hermes.lan")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn browser_cross_site_posts_are_refused_without_a_key() {
    let server = Server::start(None).await;
    server.mock.push(MockResponse::text("never"));
    // The simple request a web page can send with no preflight: text/plain, cross-site.
    let body = user("run a tool").to_string();
    let text_plain = server
        .req(reqwest::Method::POST, "/v1/chat/completions")
        .header("content-type", "text/plain")
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let (status, _, v) = error_of(text_plain).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{v}");
    // Same without browser headers (a bare script): still only JSON bodies.
    let plain = server
        .req(reqwest::Method::POST, "/v1/chat/completions")
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let (status, _, v) = error_of(plain).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(v["error"]["code"], "unsupported_media_type");
    // A JSON POST from a page of another site (after a preflight) is refused too.
    let json_cross = server
        .chat(user("run a tool"), None)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(json_cross.status(), StatusCode::FORBIDDEN);
    let fetch_site = server
        .chat(user("run a tool"), None)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(fetch_site.status(), StatusCode::FORBIDDEN);
    assert!(server.mock.captured().is_empty(), "no turn ran");
    server.stop().await;
}

#[tokio::test]
async fn allowed_origins_may_call() {
    let server = Server::start_tuned(None, |s| {
        s.cors_origins = vec!["https://app.example".into()];
    })
    .await;
    server.mock.push(MockResponse::text("hello app"));
    let resp = server
        .chat(user("hi"), None)
        .header("origin", "https://app.example")
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn method_and_size_errors_are_openai_shaped() {
    let server = Server::start_tuned(None, |s| s.limits.max_body_bytes = 1024).await;
    let resp = server
        .req(reqwest::Method::GET, "/v1/chat/completions")
        .send()
        .await
        .unwrap();
    let (status, _, v) = error_of(resp).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(v["error"]["code"], "method_not_allowed");
    let big = user(&"x".repeat(4096));
    let resp = server.chat(big, Some("big-1")).send().await.unwrap();
    let (status, _, v) = error_of(resp).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(v["error"]["code"], "body_too_large");
    // Chunked (no Content-Length): refused while reading.
    let chunks = futures::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(vec![b' '; 512])));
    let resp = server
        .req(reqwest::Method::POST, "/v1/chat/completions")
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    let (status, _, _) = error_of(resp).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    // Errors raised before a route ran carry the request's session, as route errors do.
    let port = addr(&server).rsplit_once(':').unwrap().1.to_string();
    let sid = "pre-route-1";
    let early = [
        (
            server.req(reqwest::Method::GET, "/v1/chat/completions"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            server.req(reqwest::Method::GET, "/v1/nowhere"),
            StatusCode::NOT_FOUND,
        ),
        (
            server.chat(user(&"x".repeat(4096)), None),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            server
                .req(reqwest::Method::POST, "/v1/chat/completions")
                .header("content-type", "text/plain")
                .body("{}"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            server
                .chat(user("hi"), None)
                .header("origin", "https://evil.example"),
            StatusCode::FORBIDDEN,
        ),
        (
            server
                .chat(user("hi"), None)
                .header("host", format!("evil.example:{port}")),
            StatusCode::MISDIRECTED_REQUEST,
        ),
    ];
    for (request, expected) in early {
        let resp = request
            .header("X-Hermes-Session-Id", sid)
            .send()
            .await
            .unwrap();
        let (status, headers, v) = error_of(resp).await;
        assert_eq!(status, expected, "{v}");
        assert_eq!(
            headers
                .get("x-hermes-session-id")
                .map(|h| h.to_str().unwrap()),
            Some(sid),
            "{status} lacks the session header"
        );
    }
    // An invalid session id is not echoed.
    let resp = server
        .req(reqwest::Method::GET, "/v1/nowhere")
        .header("X-Hermes-Session-Id", "bad id!")
        .send()
        .await
        .unwrap();
    assert!(resp.headers().get("x-hermes-session-id").is_none());
    server.stop().await;
    // The key check's 401.
    let keyed = Server::start(Some("test-key-1")).await;
    let resp = keyed
        .http
        .get(keyed.url("/v1/models"))
        .header("X-Hermes-Session-Id", sid)
        .send()
        .await
        .unwrap();
    let (status, headers, _) = error_of(resp).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers["x-hermes-session-id"], sid);
    keyed.stop().await;
}

/// A body sent too slowly (the head announces 100 bytes, 10 arrive, then silence) gets an
/// OpenAI-shaped 408 within the body timeout, and no turn runs.
#[tokio::test]
async fn a_slow_body_gets_an_openai_shaped_408() {
    let server = Server::start_tuned(None, |s| {
        s.limits.body_timeout = Duration::from_millis(500);
    })
    .await;
    server.mock.push(MockResponse::text("never"));
    let mut sock = tokio::net::TcpStream::connect(addr(&server)).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\nX-Hermes-Session-Id: slow-body-1\r\n\r\n{{\"model\":\"",
        addr(&server)
    );
    assert_eq!(head.rsplit("\r\n").next().unwrap().len(), 10);
    sock.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        // Read until the JSON body is complete (the connection may stay open).
        loop {
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            let text = String::from_utf8_lossy(&buf);
            if text.contains("\r\n\r\n") && text.trim_end().ends_with('}') {
                break;
            }
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
    .await
    .expect("a slow body is never answered");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        head.to_ascii_lowercase()
            .contains("x-hermes-session-id: slow-body-1"),
        "{head}"
    );
    let v: Value = serde_json::from_str(body.trim()).expect("a JSON body");
    assert!(
        v["error"]["message"].is_string() && v["error"]["code"].is_string(),
        "{v}"
    );
    assert!(server.mock.captured().is_empty(), "no turn ran");
    server.stop().await;
}

#[tokio::test]
async fn busy_and_capacity_answers_carry_retry_after_and_the_session() {
    let server = Server::start_with(None, 1).await;
    server.mock.push(stalling_answer("Working"));
    let _first = tokio::spawn(server.chat(user("long job"), Some("busy-2")).send());
    server.wait_model_requests(1).await;
    let busy = server
        .chat(user("again"), Some("busy-2"))
        .send()
        .await
        .unwrap();
    let (status, headers, v) = error_of(busy).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(v["error"]["code"], "session_busy");
    assert!(headers.get("retry-after").is_some());
    assert_eq!(headers["x-hermes-session-id"], "busy-2");
    let full = server.chat(user("other"), None).send().await.unwrap();
    let (status, headers, _) = error_of(full).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(headers.get("retry-after").is_some());
    server.stop().await;
}

#[tokio::test]
async fn streams_send_keepalive_comments_while_the_turn_runs() {
    let server = Server::start_tuned(None, |s| s.sse_keepalive = Duration::from_millis(100)).await;
    server
        .mock
        .push(MockResponse::text("late answer").with_delay(Duration::from_millis(700)));
    let mut body = user("slow");
    body["stream"] = json!(true);
    let text = server
        .chat(body, None)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains(": keepalive"), "{text}");
    assert!(
        sse_data(&text).last().is_some_and(|d| d == "[DONE]"),
        "{text}"
    );
    server.stop().await;
}

/// The slot is free when the client sees the answer: the next request on the session,
/// sent right after the final event, is served (never 409).
#[tokio::test]
async fn the_session_is_free_when_the_final_event_arrives() {
    let server = Server::start(None).await;
    for i in 0..5 {
        server.mock.push(MockResponse::text(&format!("answer {i}")));
        let mut body = user(&format!("question {i}"));
        body["stream"] = json!(true);
        let resp = server.chat(body, Some("quick-1")).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "round {i}");
        // Read until [DONE] only, then go again at once.
        let mut stream = resp.bytes_stream();
        let mut seen = String::new();
        use futures::StreamExt;
        while let Some(chunk) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if seen.contains("[DONE]") {
                break;
            }
        }
        assert!(seen.contains(r#""finish_reason":"stop""#), "{seen}");
    }
    server.stop().await;
}

#[tokio::test]
async fn silent_connections_are_closed_and_cannot_starve_the_server() {
    let server = Server::start_tuned(None, |s| {
        s.limits.header_timeout = Duration::from_millis(300);
        s.limits.max_connections = 16;
    })
    .await;
    let mut silent = Vec::new();
    for _ in 0..200 {
        silent.push(tokio::net::TcpStream::connect(addr(&server)).await.unwrap());
    }
    // A real client still gets served while 200 sockets say nothing.
    let health = tokio::time::timeout(
        Duration::from_secs(30),
        server.req(reqwest::Method::GET, "/health").send(),
    )
    .await
    .expect("the server is starved")
    .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    // The server hangs up on a silent socket (read returns EOF or a reset).
    let mut first = silent.remove(0);
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut all = Vec::new();
        let _ = first.read_to_end(&mut all).await;
    })
    .await
    .expect("a silent socket stays open");
    // A head sent too slowly (one byte, then silence) is cut as well.
    let mut slow = tokio::net::TcpStream::connect(addr(&server)).await.unwrap();
    slow.write_all(b"G").await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut all = Vec::new();
        let _ = slow.read_to_end(&mut all).await;
    })
    .await
    .expect("a slow head stays open");
    server.stop().await;
}

/// A client that sends requests and never reads the answers (its receive window full) has
/// its connection closed after the write timeout: such clients cannot hold every slot of
/// the connection cap, which would starve every other client for good.
#[tokio::test]
async fn clients_that_never_read_cannot_hold_the_connections() {
    let server = Server::start_tuned(None, |s| {
        s.limits.write_timeout = Duration::from_millis(300);
        s.limits.max_connections = 4;
    })
    .await;
    let head = format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", addr(&server));
    let pipelined = head.repeat(200_000);
    let mut stuck = Vec::new();
    for _ in 0..4 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut sock = socket
            .connect(addr(&server).parse().unwrap())
            .await
            .unwrap();
        // Requests until the server stops taking them (its answers fill both buffers).
        let _ = tokio::time::timeout(Duration::from_secs(2), sock.write_all(pipelined.as_bytes()))
            .await;
        stuck.push(sock);
    }
    let health = tokio::time::timeout(
        Duration::from_secs(30),
        server.req(reqwest::Method::GET, "/health").send(),
    )
    .await
    .expect("clients that never read hold every connection")
    .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    drop(stuck);
    server.stop().await;
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let server = Server::start_tuned(None, |s| {
        s.limits.header_timeout = Duration::from_millis(300);
    })
    .await;
    let mut sock = tokio::net::TcpStream::connect(addr(&server)).await.unwrap();
    let head = format!(
        "GET /health HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n\r\n",
        addr(&server)
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    let all = tokio::time::timeout(Duration::from_secs(30), async {
        let mut all = Vec::new();
        let _ = sock.read_to_end(&mut all).await;
        all
    })
    .await
    .expect("an idle keep-alive connection stays open");
    assert!(String::from_utf8_lossy(&all).starts_with("HTTP/1.1 200"));
    server.stop().await;
}

/// Issue 18 §4: a session whose turn runs in another process (a second handle on the same
/// state.db holding the store lease) is busy for the API too: 409 with Retry-After, and no
/// turn runs; once released, the session is served.
#[tokio::test]
async fn a_session_running_in_another_process_is_busy() {
    let server = Server::start(None).await;
    let other = hermes_store::SessionStore::open(server.store_path()).unwrap();
    let lease = match other
        .acquire_lease("shared-1", "webhook:other-process", Duration::from_secs(30))
        .unwrap()
    {
        hermes_store::LeaseAttempt::Acquired(l) => l,
        held => panic!("{held:?}"),
    };
    server.mock.push(MockResponse::text("served"));
    let busy = server
        .chat(user("hello"), Some("shared-1"))
        .send()
        .await
        .unwrap();
    let (status, headers, v) = error_of(busy).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(v["error"]["code"], "session_busy");
    assert!(headers.get("retry-after").is_some());
    assert!(server.mock.captured().is_empty(), "no turn ran");
    assert!(other.release_lease(&lease).unwrap());
    let ok = server
        .chat(user("hello"), Some("shared-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    // The API gave its own lease back when the turn ended: the other process may go.
    assert!(matches!(
        other
            .acquire_lease("shared-1", "webhook:other-process", Duration::from_secs(30))
            .unwrap(),
        hermes_store::LeaseAttempt::Acquired(_)
    ));
    server.stop().await;
}
