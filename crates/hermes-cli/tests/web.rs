//! The `web` toolset end to end: a mock model calls `web_extract` on a loopback page and the
//! next request carries the page's text; `hermes tools list` shows `web_search` hidden with
//! its reason until a backend key is set; a bad `web.backend` is an error naming the key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PAGE: &str = "<!doctype html><html><head><title>Lighthouse log</title></head><body>\
<nav><a href=\"/\">Home</a></nav><main><h1>Keeper's note</h1>\
<p>The lamp was lit at <strong>18:42</strong> on the night of the storm.</p></main>\
<footer>footer text</footer></body></html>";

/// Serves `PAGE` as text/html to every connection on a loopback port; returns the URL.
async fn page_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    PAGE.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(PAGE.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/log")
}

#[tokio::test]
async fn model_reads_a_page_with_web_extract() {
    let env = Env::with_config("web:\n  allow_private_urls: true\n").await;
    let url = page_server().await;
    let args = serde_json::json!({ "urls": url }).to_string(); // a bare string: coerced
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "web_extract",
        &args,
    )]));
    env.mock
        .push(MockResponse::text("The lamp was lit at 18:42."));
    let out = env.run(&["chat", "-q", "when was the lamp lit?"]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "The lamp was lit at 18:42.");

    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    hermes_testkit::assert_request_invariants(&requests);
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"web_extract"), "{tools:?}");
    assert!(
        !tools.contains(&"web_search"),
        "no backend: hidden: {tools:?}"
    );
    let system = requests[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        system.contains("`web_extract`"),
        "guidance for the present tool"
    );
    assert!(
        !system.contains("`web_search`"),
        "no guidance for the hidden tool"
    );

    let messages = requests[1]["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result in the second request");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with(&format!("--- [1/1] {url} ---\ntitle: Lighthouse log\n")),
        "{content}"
    );
    assert!(content.contains("# Keeper's note"), "{content}");
    assert!(
        content.contains("The lamp was lit at **18:42** on the night of the storm."),
        "{content}"
    );
    assert!(
        !content.contains("footer text") && !content.contains("Home"),
        "{content}"
    );
}

#[tokio::test]
async fn without_allow_private_urls_a_loopback_page_is_refused() {
    let env = Env::new().await;
    let url = page_server().await;
    let args = serde_json::json!({ "urls": [url] }).to_string();
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "web_extract",
        &args,
    )]));
    env.mock.push(MockResponse::text("I could not read it."));
    let out = env.run(&["chat", "-q", "read it"]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = env.mock.requests();
    let tool = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        tool.contains("refused: 127.0.0.1 is a loopback address"),
        "{tool}"
    );
    assert!(tool.contains("web.allow_private_urls"), "{tool}");
}

#[tokio::test]
async fn tools_list_shows_why_web_search_is_hidden() {
    let env = Env::new().await;
    let out = env.run(&["tools", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"))
            .to_string()
    };
    assert!(line(&text, "web_extract").contains(" on"), "{text}");
    let search = line(&text, "web_search");
    assert!(
        search.contains("hidden: no search backend configured: set web.backend"),
        "{search}"
    );

    std::fs::write(env.home.home().env_file(), "TAVILY_API_KEY=tvly-test\n").unwrap();
    let out = env.run(&["tools", "list"]).await;
    assert!(
        line(&stdout(&out), "web_search").contains(" on"),
        "{}",
        stdout(&out)
    );
    let doctor = stdout(&env.run(&["doctor"]).await);
    assert!(
        doctor
            .contains("web: web_search through tavily; web_extract fetches public addresses only"),
        "{doctor}"
    );

    let exa_missing = Env::with_config("web:\n  backend: exa\n").await;
    let out = exa_missing.run(&["tools", "list"]).await;
    assert!(
        line(&stdout(&out), "web_search")
            .contains("hidden: web.backend is exa but EXA_API_KEY is not set"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn an_unknown_backend_is_an_error_naming_the_key() {
    let env = Env::with_config("web:\n  backend: altavista\n").await;
    let out = env.run(&["chat", "-q", "hi"]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("web.backend: `altavista` is not a search backend"),
        "{err}"
    );
    assert!(err.contains("firecrawl, tavily, exa, searxng"), "{err}");
    assert!(err.contains("config.yaml"), "{err}");

    let doctor = env.run(&["doctor"]).await;
    assert_eq!(doctor.status.code(), Some(1));
    let report = stdout(&doctor);
    assert!(
        report.contains("config.yaml: web.backend: `altavista`"),
        "{report}"
    );

    let check = env.run(&["config", "check"]).await;
    assert_eq!(check.status.code(), Some(1));
    assert!(
        stderr(&check).contains("web.backend: `altavista`"),
        "{}",
        stderr(&check)
    );
}
