//! Declarative tools end to end (issue 26 item 4): `hermes tools check` names each problem
//! with file, line and column and exits 1, or prints one summary line and exits 0; `hermes
//! tools test` calls a tool on a loopback service (arguments validated first); `hermes tools
//! list` and `hermes doctor` show its health; the key from `.env` in its header reaches the
//! service but neither the output nor the log files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use common::{Env, stderr, stdout};
use serde_json::json;

const SECRET: &str = "stk-9f8e7d6c5b4a3210-secret";

/// A stock service on loopback: `/stock/{sku}` answers when the Authorization header holds
/// the key, `/health` says ok while `up`.
async fn service() -> (String, Arc<AtomicBool>) {
    let up = Arc::new(AtomicBool::new(true));
    let app = Router::new()
        .route(
            "/health",
            get(|State(up): State<Arc<AtomicBool>>| async move {
                if up.load(Ordering::SeqCst) {
                    (StatusCode::OK, axum::Json(json!({"status": "ok"})))
                } else {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        axum::Json(json!({"status": "down"})),
                    )
                }
            }),
        )
        .route(
            "/stock/{sku}",
            get(
                |UrlPath(sku): UrlPath<String>, headers: HeaderMap| async move {
                    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
                    if auth != Some(&format!("Bearer {SECRET}")) {
                        return (StatusCode::UNAUTHORIZED, "no key").into_response();
                    }
                    axum::Json(json!({"in_stock": true, "quantity": 7, "sku": sku})).into_response()
                },
            ),
        )
        .with_state(up.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), up)
}

fn tool_file(base: &str, default: &str) -> String {
    format!(
        r#"name: stock_checker
description: Live stock of a product by SKU.
version: "1.2.0"
input_schema:
  type: object
  properties:
    sku: {{type: string, minLength: 3}}
    timeout_ms: {{type: integer, default: {default}}}
  required: [sku]
output_schema:
  type: object
  properties:
    in_stock: {{type: boolean}}
    quantity: {{type: integer, minimum: 0}}
endpoint:
  url: "{base}/stock/{{sku}}"
  headers:
    Authorization: "Bearer ${{STOCK_API_KEY}}"
timeout_ms: 3000
health_endpoint: {base}/health
"#
    )
}

async fn env_with_tool(base: &str, default: &str) -> Env {
    let env = Env::with_config("web:\n  allow_private_urls: true\n").await;
    let tools = env.home.home().tools_dir();
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("stock_checker.yaml"), tool_file(base, default)).unwrap();
    std::fs::write(
        env.home.home().env_file(),
        format!("STOCK_API_KEY={SECRET}\n"),
    )
    .unwrap();
    env
}

/// Every file under HERMES_HOME/logs, concatenated.
fn all_logs(env: &Env) -> String {
    let mut out = String::new();
    if let Ok(entries) = std::fs::read_dir(env.home.home().logs_dir()) {
        for e in entries.flatten() {
            out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    out
}

#[tokio::test]
async fn tools_check_names_file_line_and_column_and_exits_1() {
    let (base, _up) = service().await;
    let env = env_with_tool(&base, "\"1000\"").await;
    let out = env.run(&["tools", "check"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let file = env.home.home().tools_dir().join("stock_checker.yaml");
    let expected = format!(
        "{}:8:33: input_schema.properties.timeout_ms.default: default \"1000\" does not match its schema",
        file.display()
    );
    assert!(text.contains(&expected), "{text}");
    assert!(
        text.contains("1 problem(s) in 1 of 1 tool file(s)"),
        "{text}"
    );
    // The broken tool is left out of sessions, and `tools list` says so.
    let list = stdout(&env.run_ok(&["tools", "list"]).await);
    assert!(!list.contains("stock_checker"), "{list}");
    assert!(
        list.contains("1 problem(s) in HERMES_HOME/tools/*.yaml"),
        "{list}"
    );
}

#[tokio::test]
async fn a_valid_tool_is_checked_tested_listed_and_its_key_never_shown() {
    let (base, up) = service().await;
    let env = env_with_tool(&base, "1000").await;
    let out = env.run(&["tools", "check"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!(
            "1 declarative tool(s) OK in {}: stock_checker",
            env.home.home().tools_dir().display()
        )
    );

    let out = env
        .run(&["tools", "test", "stock_checker", r#"{"sku": "A-100"}"#])
        .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains(r#""quantity":7"#), "{text}");
    assert!(stderr(&out).contains("health: healthy"), "{}", stderr(&out));

    // Arguments are validated before anything is sent.
    let out = env
        .run(&["tools", "test", "stock_checker", r#"{"sku": "A"}"#])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("- /sku: the value is shorter than 3 characters"),
        "{}",
        stdout(&out)
    );

    let list = stdout(&env.run_ok(&["tools", "list"]).await);
    let line = list
        .lines()
        .find(|l| l.contains("stock_checker"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        line.contains(" on") && line.ends_with("· healthy"),
        "{list}"
    );

    up.store(false, Ordering::SeqCst);
    let list = stdout(&env.run_ok(&["tools", "list"]).await);
    assert!(
        list.contains(
            "unhealthy: health endpoint answered HTTP 503 (hidden from the model until healthy)"
        ),
        "{list}"
    );
    let doctor = stdout(&env.run(&["doctor"]).await);
    assert!(
        doctor.contains("warn  tool stock_checker: unhealthy: health endpoint answered HTTP 503"),
        "{doctor}"
    );
    let out = env
        .run(&["tools", "test", "stock_checker", r#"{"sku": "A-100"}"#])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("`stock_checker` is unavailable right now"),
        "{}",
        stdout(&out)
    );

    for text in [stdout(&out), stderr(&out), list, doctor, all_logs(&env)] {
        assert!(!text.contains(SECRET), "{text}");
    }
}

#[tokio::test]
async fn tools_test_of_an_unknown_tool_is_a_usage_error() {
    let env = Env::new().await;
    let out = env.run(&["tools", "test", "nope"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no declarative tool `nope`"),
        "{}",
        stderr(&out)
    );
    let out = env.run(&["tools", "check"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("has no *.yaml files"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn a_session_offers_the_tool_and_the_model_gets_its_answer_without_the_key() {
    let (base, _up) = service().await;
    let env = env_with_tool(&base, "1000").await;
    env.mock.push(hermes_testkit::MockResponse::tool_calls(&[
        ("call_1", "stock_checker", r#"{"sku": "A-100"}"#),
        // Validated like every tool: too short a SKU is refused by name.
        ("call_2", "stock_checker", r#"{"sku": "A"}"#),
    ]));
    env.mock
        .push(hermes_testkit::MockResponse::text("7 in stock."));
    let out = env
        .run(&["chat", "-q", "how many A-100 are in stock?"])
        .await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "7 in stock.");

    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    hermes_testkit::assert_request_invariants(&requests);
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"stock_checker"), "{tools:?}");
    let results: Vec<&str> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        results[0].starts_with("[`stock_checker` answered from 127.0.0.1: outside data"),
        "{}",
        results[0]
    );
    assert!(results[0].contains(r#""quantity":7"#), "{}", results[0]);
    assert!(
        results[1].contains("- /sku: the value is shorter than 3 characters"),
        "{}",
        results[1]
    );
    let all = serde_json::to_string(&requests).unwrap();
    assert!(!all.contains(SECRET), "the key never reaches the model");
    let db = std::fs::read(env.home.home().state_db()).unwrap_or_default();
    assert!(
        !String::from_utf8_lossy(&db).contains(SECRET),
        "nor the session store"
    );
}

#[tokio::test]
async fn escape_sequences_from_a_tool_file_or_its_service_are_shown_in_caret_notation() {
    let app = Router::new().route(
        "/say",
        get(|| async { "\u{1b}[2J\u{1b}]0;owned\u{7}cleared\rover" }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let env = Env::with_config("web:\n  allow_private_urls: true\n").await;
    let tools = env.home.home().tools_dir();
    std::fs::create_dir_all(&tools).unwrap();
    let valid = format!(
        "name: say\ndescription: Says something.\nversion: \"1\"\ninput_schema: {{type: object}}\nendpoint: {{url: \"{base}/say\"}}\n"
    );
    std::fs::write(tools.join("say.yaml"), &valid).unwrap();

    let out = env.run(&["tools", "test", "say"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    assert!(text.contains("^[[2J^[]0;owned^Gcleared^Mover"), "{text:?}");

    // A key written with YAML escapes: named in the problem, not sent to the terminal.
    std::fs::write(
        tools.join("say.yaml"),
        format!("{valid}\"\\e]0;owned\\a\\e[2J\": 1\n"),
    )
    .unwrap();
    let out = env.run(&["tools", "check"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(
        text.contains("say.yaml:6:1: ^[]0;owned^G^[[2J: unknown key `^[]0;owned^G^[[2J`"),
        "{text:?}"
    );
}

#[tokio::test]
async fn a_tool_file_named_like_session_search_is_refused_by_check_as_by_sessions() {
    let env = Env::new().await;
    let tools = env.home.home().tools_dir();
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("session_search.yaml"),
        "name: session_search\ndescription: Searches.\nversion: \"1\"\ninput_schema: {type: object}\nendpoint: {url: \"https://api.example.com/s\"}\n",
    )
    .unwrap();
    let out = env.run(&["tools", "check"]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "session_search.yaml:1:1: name: `session_search` is the name of a built-in tool"
        ),
        "{text}"
    );
    let out = env.run(&["tools", "test", "session_search"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("has problems"), "{}", stderr(&out));
}
