//! `web_extract` against hostile and broken servers: pages built to exhaust the converter
//! (deep nesting, one huge line, only scripts, unclosed tags), `Content-Type` lies,
//! compressed bodies, private addresses written in the odd forms a URL parser accepts,
//! credentials in URLs, and arguments of the wrong shape.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hermes_protocol::HermesHome;
use hermes_tools::web::WebExtractTool;
use hermes_tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

fn typed(content_type: &'static str, body: impl Into<axum::body::Body>) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body.into()).into_response()
}

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

fn ctx() -> ToolContext {
    let dir = std::env::temp_dir();
    ToolContext::for_tests(&dir, HermesHome::new(dir.join("hermes-web-hostile-home")))
}

async fn call(tool: &WebExtractTool, args: Value) -> ToolOutput {
    tokio::time::timeout(Duration::from_secs(120), tool.call(args, &ctx()))
        .await
        .expect("web_extract hung")
}

async fn one(base: &str, path: &str) -> ToolOutput {
    call(
        &WebExtractTool::new(true, 15_000),
        json!({ "urls": [format!("{base}{path}")] }),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_html_does_not_crash_the_process() {
    let deep = format!(
        "<html><body>{}<p>deep text</p>{}</body></html>",
        "<div>".repeat(200_000),
        "</div>".repeat(200_000)
    );
    let base = serve(Router::new().route(
        "/deep",
        get(move || {
            let d = deep.clone();
            async move { typed("text/html", d) }
        }),
    ))
    .await;
    let out = one(&base, "/deep").await;
    assert!(
        out.content.contains("deep text"),
        "{}",
        &out.content[..out.content.len().min(400)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_single_line_page_is_converted_and_capped() {
    let line = format!(
        "<html><body><p>{}</p></body></html>",
        "word ".repeat(900_000)
    );
    let base = serve(Router::new().route(
        "/line",
        get(move || {
            let l = line.clone();
            async move { typed("text/html", l) }
        }),
    ))
    .await;
    let started = std::time::Instant::now();
    let out = one(&base, "/line").await;
    eprintln!("huge line took {:?}", started.elapsed());
    assert!(!out.is_error, "{}", &out.content[..400]);
    assert!(
        out.content.contains("[… cut: the page has"),
        "{}",
        &out.content[out.content.len() - 200..]
    );
}

#[tokio::test]
async fn script_only_and_unclosed_pages() {
    let base = serve(
        Router::new()
            .route(
                "/scripts",
                get(|| async {
                    typed(
                        "text/html",
                        "<html><head><script>var a=1;</script></head><body><script>document.write('x')</script><noscript>enable js</noscript></body></html>",
                    )
                }),
            )
            .route(
                "/unclosed",
                get(|| async { typed("text/html", "<html><body><p>first<div><b>bold <i>both <table><tr><td>cell") }),
            ),
    )
    .await;
    let out = one(&base, "/scripts").await;
    assert!(
        out.content.contains("(the page has no readable text)"),
        "{}",
        out.content
    );
    let out = one(&base, "/unclosed").await;
    for part in ["first", "bold", "both", "cell"] {
        assert!(out.content.contains(part), "{part}: {}", out.content);
    }
}

#[tokio::test]
async fn binary_body_declared_as_html_is_refused() {
    let base = serve(Router::new().route(
        "/fake.html",
        get(|| async {
            let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
            png.extend((0..4000u32).map(|i| (i * 7 % 256) as u8));
            typed("text/html", png)
        }),
    ))
    .await;
    let out = one(&base, "/fake.html").await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("refused: the server calls it `text/html` but the body is binary data"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn meta_charset_utf16_on_an_ascii_page_reads_as_utf8() {
    let base = serve(Router::new().route(
        "/u16",
        get(|| async {
            typed(
                "text/html",
                "<html><head><meta charset=\"utf-16\"><title>T</title></head><body><p>plain ascii words</p></body></html>",
            )
        }),
    ))
    .await;
    let out = one(&base, "/u16").await;
    assert!(out.content.contains("plain ascii words"), "{}", out.content);
}

#[tokio::test]
async fn gzip_body_sent_unasked_is_refused_naming_the_encoding() {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(b"<html><body><p>compressed words</p></body></html>")
        .unwrap();
    let gz = enc.finish().unwrap();
    let base = serve(Router::new().route(
        "/gz",
        get(move || {
            let g = gz.clone();
            async move {
                (
                    [
                        (header::CONTENT_TYPE, "text/html"),
                        (header::CONTENT_ENCODING, "gzip"),
                    ],
                    g,
                )
                    .into_response()
            }
        }),
    ))
    .await;
    let out = one(&base, "/gz").await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content
            .contains("refused: the server sent a `gzip`-compressed body"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn odd_spellings_of_private_addresses_are_refused() {
    let tool = WebExtractTool::new(false, 15_000);
    let urls = [
        "http://0x7f000001/",
        "http://2130706433/",
        "http://127.1/",
        "http://0177.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[0:0:0:0:0:ffff:7f00:1]/",
        "http://0/",
        "http://user:pw@127.0.0.1/",
    ];
    for url in urls {
        let out = call(&tool, json!({ "urls": [url] })).await;
        assert!(out.is_error, "{url}: {}", out.content);
        assert!(out.content.contains("refused"), "{url}: {}", out.content);
    }
}

#[tokio::test]
async fn arguments_of_the_wrong_shape_are_clear_errors() {
    let tool = WebExtractTool::new(false, 15_000);
    let fifty: Vec<String> = (0..50).map(|i| format!("https://{i}.example/")).collect();
    for (args, want) in [
        (json!({"urls": {"a": "https://x.example/"}}), "array"),
        (json!({"urls": fifty}), "at most 5"),
        (json!({"urls": []}), "empty"),
        (json!({"urls": [null]}), "urls[0]"),
        (json!({}), "array"),
    ] {
        let out = call(&tool, args.clone()).await;
        assert!(out.is_error, "{args}");
        assert!(out.content.contains(want), "{args}: {}", out.content);
    }
}
