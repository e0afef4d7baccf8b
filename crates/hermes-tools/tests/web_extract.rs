//! `web_extract` against loopback servers: readable HTML (snapshot), pass-through types,
//! binary refusal, the 15,000-char cap on a multi-byte page, the download cap, redirects,
//! a mixed batch in call order, and the default address policy (loopback and metadata
//! addresses refused without a connection).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hermes_protocol::HermesHome;
use hermes_tools::web::{MAX_URLS, WebExtractTool};
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::json;

const ARTICLE: &str = include_str!("data/web_article.html");

fn typed(content_type: &'static str, body: impl Into<axum::body::Body>) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body.into()).into_response()
}

/// A loopback server with the test pages; returns its base URL.
async fn pages() -> String {
    let multibyte: String = "日本語のテキスト—é".chars().cycle().take(20_000).collect();
    let app = Router::new()
        .route(
            "/article",
            get(|| async { typed("text/html; charset=utf-8", ARTICLE) }),
        )
        .route("/", get(|| async { typed("text/plain", "the root\n") }))
        .route(
            "/plain",
            get(|| async { typed("text/plain", "just text\n") }),
        )
        .route(
            "/notes.md",
            get(|| async { typed("text/markdown", "# Notes\n\n- a\n- b\n") }),
        )
        .route(
            "/data.json",
            get(|| async { typed("application/json", r#"{"ok":true,"n":[1,2]}"#) }),
        )
        .route(
            "/chart.png",
            get(|| async { typed("image/png", b"\x89PNG\r\n\x1a\n\0\0\0".to_vec()) }),
        )
        .route(
            "/untyped",
            get(|| async {
                Response::new(axum::body::Body::from(
                    "<!doctype html><html><body><h2>Untyped</h2><p>sniffed</p></body></html>",
                ))
            }),
        )
        .route(
            "/multibyte",
            get(move || {
                let text = multibyte.clone();
                async move { typed("text/plain; charset=utf-8", text) }
            }),
        )
        .route(
            "/huge",
            get(|| async { typed("text/plain", "x".repeat(6 * 1024 * 1024)) }),
        )
        .route(
            "/latin1",
            get(|| async {
                typed(
                    "text/html; charset=iso-8859-1",
                    b"<html><body><p>caf\xe9 cr\xe8me</p></body></html>".to_vec(),
                )
            }),
        )
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/moved",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/article")]) }),
        )
        .route(
            "/loop",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }),
        )
        .route(
            "/to-file",
            get(|| async {
                (
                    StatusCode::FOUND,
                    [(header::LOCATION, "file:///etc/passwd")],
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

fn ctx() -> ToolContext {
    let dir = std::env::temp_dir();
    ToolContext::for_tests(&dir, HermesHome::new(dir.join("hermes-web-test-home")))
}

/// A tool allowed to reach the loopback test server, with the default 15,000-char cap.
fn local_tool() -> WebExtractTool {
    WebExtractTool::new(true, 15_000)
}

async fn extract(tool: &WebExtractTool, urls: &[String]) -> ToolOutput {
    tool.call(json!({ "urls": urls }), &ctx()).await
}

#[test]
fn schema_and_planner_class() {
    let tool = local_tool();
    let spec = tool.spec();
    assert_eq!(spec.name, "web_extract");
    assert_eq!(spec.parameters["required"], json!(["urls"]));
    assert_eq!(spec.parameters["properties"]["urls"]["type"], "array");
    assert_eq!(spec.parameters["properties"]["urls"]["maxItems"], MAX_URLS);
    assert_eq!(tool.toolset(), "web");
    assert_eq!(tool.parallelism(), Parallelism::Safe);
    assert!(tool.available().is_ok());
}

#[tokio::test]
async fn html_page_becomes_readable_text() {
    let base = pages().await;
    let out = extract(&local_tool(), &[format!("{base}/article")]).await;
    assert!(!out.is_error, "{}", out.content);
    let text = out.content.replace(&base, "http://127.0.0.1:PORT");
    insta::assert_snapshot!(text);
}

#[tokio::test]
async fn text_markdown_and_json_pass_through_and_binary_is_refused() {
    let base = pages().await;
    let urls: Vec<String> = [
        "/plain",
        "/notes.md",
        "/data.json",
        "/chart.png",
        "/untyped",
    ]
    .iter()
    .map(|p| format!("{base}{p}"))
    .collect();
    let out = extract(&local_tool(), &urls).await;
    assert!(!out.is_error, "{}", out.content);
    let c = &out.content;
    assert!(
        c.contains(&format!("--- [1/5] {base}/plain ---\n\njust text")),
        "{c}"
    );
    assert!(c.contains("# Notes\n\n- a\n- b"), "{c}");
    assert!(c.contains(r#"{"ok":true,"n":[1,2]}"#), "{c}");
    assert!(
        c.contains(&format!(
            "--- [4/5] {base}/chart.png ---\nerror: refused: `image/png` is not a text page"
        )),
        "{c}"
    );
    assert!(c.contains("## Untyped\n\nsniffed"), "{c}");
}

#[tokio::test]
async fn multibyte_page_is_cut_at_15000_chars_on_a_char_boundary() {
    let base = pages().await;
    let out = extract(&local_tool(), &[format!("{base}/multibyte")]).await;
    assert!(!out.is_error, "{}", out.content);
    let header = format!("--- [1/1] {base}/multibyte ---\n\n");
    let body = out.content.strip_prefix(&header).expect("entry header");
    let marker = "\n\n[… cut: the page has 20,000 chars; the first 15,000 are shown]";
    let kept = body.strip_suffix(marker).expect("cut marker at the end");
    assert_eq!(kept.chars().count(), 15_000);
    let expected: String = "日本語のテキスト—é".chars().cycle().take(15_000).collect();
    assert_eq!(kept, expected);
}

#[tokio::test]
async fn configured_char_limit_applies() {
    let base = pages().await;
    let out = extract(
        &WebExtractTool::new(true, 1_000),
        &[format!("{base}/multibyte")],
    )
    .await;
    assert!(
        out.content
            .ends_with("[… cut: the page has 20,000 chars; the first 1,000 are shown]"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn download_stops_at_the_byte_cap() {
    let base = pages().await;
    let out = extract(
        &WebExtractTool::new(true, 15_000),
        &[format!("{base}/huge")],
    )
    .await;
    assert!(!out.is_error, "{}", &out.content[..200]);
    assert!(out.content.contains("note: the download stopped at 5 MiB"));
    assert!(out.content.contains("the page has 5,242,880 chars"));
}

#[tokio::test]
async fn redirects_are_followed_bounded_and_checked() {
    let base = pages().await;
    let urls = vec![
        format!("{base}/moved"),
        format!("{base}/loop"),
        format!("{base}/to-file"),
    ];
    let out = extract(&local_tool(), &urls).await;
    let c = &out.content;
    assert!(
        c.contains(&format!(
            "redirected to: {base}/article\ntitle: Tide Tables"
        )),
        "{c}"
    );
    assert!(
        c.contains("error: redirect not followed: more than 5 redirects"),
        "{c}"
    );
    assert!(
        c.contains("only http and https URLs can be fetched (got `file:`)"),
        "{c}"
    );
}

#[tokio::test]
async fn mixed_batch_keeps_call_order_and_reports_each_failure() {
    let base = pages().await;
    // A port that was just free: nothing listens there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let urls = vec![
        format!("{base}/missing"),
        format!("{base}/plain"),
        "not a url".to_string(),
        format!("http://127.0.0.1:{closed}/"),
        format!("{base}/article"),
    ];
    let out = extract(&local_tool(), &urls).await;
    assert!(!out.is_error, "one success makes the call a success");
    let entries: Vec<&str> = out.content.split("\n\n--- [").collect();
    assert_eq!(entries.len(), 5, "{}", out.content);
    assert!(entries[0].starts_with(&format!(
        "--- [1/5] {base}/missing ---\nerror: HTTP 404 Not Found"
    )));
    assert!(entries[1].starts_with(&format!("2/5] {base}/plain ---\n\njust text")));
    assert!(entries[2].starts_with("3/5] not a url ---\nerror: not a valid URL"));
    assert!(entries[3].starts_with(&format!(
        "4/5] http://127.0.0.1:{closed}/ ---\nerror: could not connect"
    )));
    assert!(entries[4].contains("# Reading a tide table"));

    let all_bad = extract(&local_tool(), &[format!("{base}/missing")]).await;
    assert!(all_bad.is_error);
}

/// A listener that only counts the connections it accepts.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((_sock, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, count)
}

#[tokio::test]
async fn default_policy_refuses_loopback_and_metadata_without_connecting() {
    let (port, count) = counting_listener().await;
    let tool = WebExtractTool::new(false, 15_000);
    let urls = vec![
        format!("http://127.0.0.1:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://localhost:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        "http://[fd00:ec2::254]/latest/".to_string(),
    ];
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), extract(&tool, &urls))
        .await
        .expect("refusals are immediate");
    assert!(out.is_error, "{}", out.content);
    let c = &out.content;
    assert!(
        c.contains("error: refused: 127.0.0.1 is a loopback address (127.0.0.1)"),
        "{c}"
    );
    assert!(
        c.contains("error: refused: 169.254.169.254 is a cloud metadata address"),
        "{c}"
    );
    assert!(
        c.contains("error: refused: localhost is a loopback address"),
        "{c}"
    );
    assert!(
        c.contains("error: refused: [::ffff:7f00:1] is a loopback address"),
        "{c}"
    );
    assert!(
        c.contains("error: refused: [fd00:ec2::254] is a unique-local address"),
        "{c}"
    );
    assert_eq!(
        c.matches("set web.allow_private_urls: true").count(),
        5,
        "{c}"
    );
    assert_eq!(count.load(Ordering::SeqCst), 0, "no connection was made");

    // The same server is reachable once private URLs are allowed.
    let open = WebExtractTool::new(true, 15_000);
    let url = [format!("http://127.0.0.1:{port}/")];
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), extract(&open, &url)).await;
    assert!(count.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn cancelled_call_returns_promptly() {
    let (port, _count) = counting_listener().await; // accepts, never answers
    let tool = local_tool();
    let ctx = ctx();
    let cancel = ctx.cancel.clone();
    let call = tool.call(json!({"urls": [format!("http://127.0.0.1:{port}/")]}), &ctx);
    cancel.cancel();
    let out = tokio::time::timeout(std::time::Duration::from_secs(10), call)
        .await
        .expect("cancel stops the call");
    assert!(out.is_error);
    assert_eq!(out.content, "cancelled by user");
}

#[tokio::test]
async fn legacy_charsets_are_decoded() {
    let base = pages().await;
    let out = extract(&local_tool(), &[format!("{base}/latin1")]).await;
    assert!(out.content.ends_with("\n\ncafé crème"), "{}", out.content);
}

#[tokio::test]
async fn a_normalized_url_is_not_reported_as_a_redirect() {
    let base = pages().await; // no trailing slash; the URL parser adds one
    let out = extract(&local_tool(), std::slice::from_ref(&base)).await;
    assert_eq!(out.content, format!("--- [1/1] {base} ---\n\nthe root"));
}
