//! `web_search` over each backend against a loopback fake of its API: the request sent
//! (method, path, auth header, body or query) and the parsed results, the error statuses and
//! malformed bodies as tool errors naming the backend, and the tool hidden when no backend
//! is usable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hermes_protocol::HermesHome;
use hermes_protocol::config::WebConfig;
use hermes_tools::web::{
    ExaBackend, FirecrawlBackend, SearchBackend, SearxngBackend, TavilyBackend, WebSearchTool,
};
use hermes_tools::{Parallelism, Registry, Tool, ToolContext, ToolOutput, ToolsetSelection};
use serde_json::{Value, json};

/// One request the fake saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    uri: String,
    headers: HeaderMap,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

#[derive(Clone)]
struct Fake {
    status: u16,
    body: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn handle(State(fake): State<Fake>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    fake.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        uri: parts.uri.to_string(),
        headers: parts.headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let status = StatusCode::from_u16(fake.status).unwrap();
    let mut resp = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        fake.body.clone(),
    )
        .into_response();
    if fake.status == 429 {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, "17".parse().unwrap());
    }
    resp
}

/// A fake API answering every request with `status` and `body`; returns its base URL and
/// the requests it saw.
async fn fake_api(status: u16, body: &str) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let fake = Fake {
        status,
        body: body.to_string(),
        seen: Arc::new(Mutex::new(Vec::new())),
    };
    let seen = fake.seen.clone();
    let app = Router::new().fallback(handle).with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), seen)
}

fn ctx() -> ToolContext {
    let dir = std::env::temp_dir();
    ToolContext::for_tests(&dir, HermesHome::new(dir.join("hermes-web-test-home")))
}

async fn search(backend: Arc<dyn SearchBackend>, args: Value) -> ToolOutput {
    WebSearchTool::new(Ok(backend)).call(args, &ctx()).await
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Tavily,
    Exa,
    Firecrawl,
    Searxng,
}

fn backend(kind: Kind, base: &str) -> Arc<dyn SearchBackend> {
    match kind {
        Kind::Tavily => Arc::new(TavilyBackend::new("tvly-test", base)),
        Kind::Exa => Arc::new(ExaBackend::new("exa-test", base)),
        Kind::Firecrawl => Arc::new(FirecrawlBackend::new(Some("fc-test".into()), base)),
        Kind::Searxng => Arc::new(SearxngBackend::new(base)),
    }
}

const TAVILY_OK: &str = r#"{"query":"rust async","follow_up_questions":null,"answer":null,"images":[],
"results":[{"title":"Asynchronous Programming in Rust","url":"https://rust-lang.github.io/async-book/","content":"This book aims to be a comprehensive guide to async programming in Rust.","score":0.91,"raw_content":null},
{"title":"Tokio tutorial","url":"https://tokio.rs/tokio/tutorial","content":"Tokio is an asynchronous runtime.","score":0.85,"raw_content":null}],"response_time":1.02}"#;

#[tokio::test]
async fn tavily_request_and_results() {
    let (base, seen) = fake_api(200, TAVILY_OK).await;
    let out = search(
        backend(Kind::Tavily, &base),
        json!({"query": "rust async", "limit": 3}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        out.content,
        "Results for \"rust async\" (tavily):\n\n\
         1. Asynchronous Programming in Rust\n   https://rust-lang.github.io/async-book/\n   This book aims to be a comprehensive guide to async programming in Rust.\n\n\
         2. Tokio tutorial\n   https://tokio.rs/tokio/tutorial\n   Tokio is an asynchronous runtime.\n"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!((r.method.as_str(), r.uri.as_str()), ("POST", "/search"));
    assert_eq!(r.header("authorization"), Some("Bearer tvly-test"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json(),
        json!({"query": "rust async", "max_results": 3, "search_depth": "basic"})
    );
}

const EXA_OK: &str = r#"{"requestId":"b5947044c4b78efa9552a7c89b306d95","resolvedSearchType":"neural",
"results":[{"id":"https://doc.rust-lang.org/book/","title":"The Rust Programming Language","url":"https://doc.rust-lang.org/book/","publishedDate":"2024-05-01T00:00:00.000Z","author":null,"highlights":["Rust is fast.","Rust is reliable."],"highlightScores":[0.41,0.37]},
{"id":"https://blog.example/rust","title":"A blog","url":"https://blog.example/rust","text":"Full text of the blog post."}],
"costDollars":{"total":0.005}}"#;

#[tokio::test]
async fn exa_request_and_results() {
    let (base, seen) = fake_api(200, EXA_OK).await;
    let out = search(backend(Kind::Exa, &base), json!({"query": "rust book"})).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.starts_with("Results for \"rust book\" (exa):"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains(
            "1. The Rust Programming Language\n   https://doc.rust-lang.org/book/\n   Rust is fast. … Rust is reliable.\n"
        ),
        "{}",
        out.content
    );
    assert!(
        out.content
            .contains("2. A blog\n   https://blog.example/rust\n   Full text of the blog post.\n")
    );
    let seen = seen.lock().unwrap();
    let r = &seen[0];
    assert_eq!((r.method.as_str(), r.uri.as_str()), ("POST", "/search"));
    assert_eq!(r.header("x-api-key"), Some("exa-test"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.json(),
        json!({"query": "rust book", "numResults": 5, "type": "auto", "contents": {"highlights": true}})
    );
}

const FIRECRAWL_OK: &str = r#"{"success":true,"data":{"web":[
{"url":"https://www.firecrawl.dev/","title":"Firecrawl","description":"Turn websites into LLM-ready data.","position":1},
{"url":"https://github.com/mendableai/firecrawl","title":"mendableai/firecrawl","description":"The web data API for AI.","position":2}],
"images":[],"news":[]}}"#;

#[tokio::test]
async fn firecrawl_request_and_results() {
    let (base, seen) = fake_api(200, FIRECRAWL_OK).await;
    let out = search(
        backend(Kind::Firecrawl, &base),
        json!({"query": "firecrawl", "limit": 2}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains(
        "1. Firecrawl\n   https://www.firecrawl.dev/\n   Turn websites into LLM-ready data.\n"
    ));
    assert!(out.content.contains("2. mendableai/firecrawl\n"));
    let r = seen.lock().unwrap()[0].clone();
    assert_eq!((r.method.as_str(), r.uri.as_str()), ("POST", "/v2/search"));
    assert_eq!(r.header("authorization"), Some("Bearer fc-test"));
    assert_eq!(r.json(), json!({"query": "firecrawl", "limit": 2}));

    // A self-hosted instance without a key sends no Authorization header; the v1 shape
    // (`data` as an array) is read too.
    let (base, seen) = fake_api(
        200,
        r#"{"success":true,"data":[{"url":"https://a.example","title":"A","description":"d"}]}"#,
    )
    .await;
    let out = search(
        Arc::new(FirecrawlBackend::new(None, &format!("{base}/"))),
        json!({"query": "a"}),
    )
    .await;
    assert!(
        out.content.contains("1. A\n   https://a.example\n   d\n"),
        "{}",
        out.content
    );
    assert_eq!(seen.lock().unwrap()[0].header("authorization"), None);
}

const SEARXNG_OK: &str = r#"{"query":"rust async","number_of_results":0,"results":[
{"url":"https://tokio.rs/","title":"Tokio","content":"Build reliable network applications.","engine":"duckduckgo","score":1.5},
{"url":"https://async.rs/","title":"async-std","content":"Async version of the standard library.","engine":"bing","score":1.0},
{"url":"https://smol.rs/","title":"smol","content":"A small async runtime.","engine":"bing","score":0.5}],
"answers":[],"corrections":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}"#;

#[tokio::test]
async fn searxng_request_and_results() {
    let (base, seen) = fake_api(200, SEARXNG_OK).await;
    let out = search(
        backend(Kind::Searxng, &format!("{base}/search")),
        json!({"query": "rust async", "limit": 2}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("1. Tokio\n   https://tokio.rs/\n   Build reliable network applications.\n")
    );
    assert!(out.content.contains("2. async-std\n"));
    assert!(
        !out.content.contains("smol"),
        "limit applies: {}",
        out.content
    );
    let seen = seen.lock().unwrap();
    let r = &seen[0];
    assert_eq!(r.method, "GET");
    assert_eq!(r.uri, "/search?q=rust+async&format=json");
    assert_eq!(r.header("authorization"), None);
}

#[tokio::test]
async fn error_statuses_and_bad_bodies_are_tool_errors_naming_the_backend() {
    for kind in [Kind::Tavily, Kind::Exa, Kind::Firecrawl, Kind::Searxng] {
        let name = backend(kind, "http://127.0.0.1:1").name();
        let cases: [(u16, &str, &str); 5] = [
            (
                401,
                r#"{"detail":{"error":"Unauthorized"}}"#,
                "rejected (HTTP 401)",
            ),
            (
                429,
                r#"{"error":"slow down"}"#,
                "rate limited or out of credits (HTTP 429); try again later (Retry-After: 17)",
            ),
            (
                503,
                r#"{"error":"upstream overloaded"}"#,
                "HTTP 503: upstream overloaded",
            ),
            (
                200,
                "<html>not json</html>",
                "unexpected response (the body is not JSON",
            ),
            (200, r#"{"unexpected":true}"#, "unexpected response (no `"),
        ];
        for (status, body, expected) in cases {
            let (base, _) = fake_api(status, body).await;
            let out = search(backend(kind, &base), json!({"query": "q"})).await;
            assert!(out.is_error, "{name} {status}: {}", out.content);
            assert!(
                out.content.starts_with(&format!("{name}: ")),
                "{name} {status}: {}",
                out.content
            );
            let expected = if matches!(kind, Kind::Searxng) && status == 401 {
                "check web.searxng_url"
            } else {
                expected
            };
            assert!(
                out.content.contains(expected),
                "{name} {status}: {}",
                out.content
            );
        }
    }
    let (base, _) = fake_api(401, "{}").await;
    let out = search(backend(Kind::Tavily, &base), json!({"query": "q"})).await;
    assert_eq!(
        out.content,
        "tavily: the API key was rejected (HTTP 401); check TAVILY_API_KEY"
    );
    let (base, _) = fake_api(403, "Forbidden").await;
    let out = search(backend(Kind::Searxng, &base), json!({"query": "q"})).await;
    assert!(
        out.content.contains("add `json` to search.formats"),
        "{}",
        out.content
    );
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = search(
        backend(Kind::Exa, &format!("http://127.0.0.1:{dead}")),
        json!({"query": "q"}),
    )
    .await;
    assert!(
        out.content.starts_with("exa: request failed: "),
        "{}",
        out.content
    );
}

/// A backend (or a proxy in front of it) that answers with more than
/// `MAX_ANSWER_BYTES` is a clear error, not an unbounded read.
#[tokio::test]
async fn an_oversized_answer_is_refused_by_size() {
    let huge = format!(
        r#"{{"results":[],"pad":"{}"}}"#,
        "x".repeat(hermes_tools::web::backends::MAX_ANSWER_BYTES)
    );
    for kind in [Kind::Tavily, Kind::Searxng] {
        let (base, _) = fake_api(200, &huge).await;
        let out = search(backend(kind, &base), json!({"query": "q"})).await;
        assert!(out.is_error, "{}", out.content);
        assert!(
            out.content.contains("the answer is larger than 5 MiB"),
            "{}",
            out.content
        );
    }
}

#[tokio::test]
async fn bad_arguments_are_reported() {
    let (base, seen) = fake_api(200, TAVILY_OK).await;
    let out = search(backend(Kind::Tavily, &base), json!({"query": "  "})).await;
    assert!(out.is_error);
    assert!(out.content.contains("`query`"));
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn without_a_backend_the_tool_is_hidden_with_its_reason() {
    let tools = hermes_tools::web::tools(&WebConfig::default(), &BTreeMap::new()).unwrap();
    let mut registry = Registry::builtin();
    for t in tools {
        assert_eq!(t.parallelism(), Parallelism::Safe);
        registry.register(t).unwrap();
    }
    let set = registry
        .select(&ToolsetSelection::new(["web"], Vec::<String>::new()))
        .unwrap();
    assert_eq!(set.names(), vec!["web_extract"]);
    assert_eq!(set.unavailable().len(), 1);
    assert_eq!(set.unavailable()[0].0, "web_search");
    assert!(
        set.unavailable()[0]
            .1
            .contains("no search backend configured")
    );
    assert!(!registry.specs().iter().any(|s| s.name == "web_search"));

    let env: BTreeMap<String, String> =
        [("TAVILY_API_KEY".to_string(), "tvly-x".to_string())].into();
    let tools = hermes_tools::web::tools(&WebConfig::default(), &env).unwrap();
    assert!(tools.iter().all(|t| t.available().is_ok()));
    for preset in ["hermes-cli", "safe"] {
        let mut registry = Registry::builtin();
        for t in hermes_tools::web::tools(&WebConfig::default(), &env).unwrap() {
            registry.register(t).unwrap();
        }
        let set = registry
            .select(&ToolsetSelection::new([preset], Vec::<String>::new()))
            .unwrap();
        assert!(set.names().contains(&"web_search".to_string()), "{preset}");
        assert!(set.names().contains(&"web_extract".to_string()), "{preset}");
    }
}
