//! The tool contract of seed 004 §3 through the turn (issue 26 item 4): a call whose
//! arguments break the tool's schema (after coercion) is answered by one error result naming
//! each field, for a built-in and for any other tool alike, and nothing runs; a tool that is
//! unhealthy without a fallback is left out of the request's tools and a call naming it is
//! answered at once; it is offered again once healthy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Harness, tool_messages};
use hermes_protocol::ToolSpec;
use hermes_testkit::MockResponse;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolHealth, ToolOutput};
use serde_json::{Value, json};

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn arguments_that_break_the_schema_get_one_error_naming_each_field() {
    let h = Harness::new().await;
    std::fs::write(h.path("notes.txt"), "hello\n").unwrap();
    h.mock.push(MockResponse::tool_calls(&[
        ("c1", "read_file", r#"{"offset": "ten"}"#),
        ("c2", "skills_list", r#"{"category": 5}"#),
        // Coerced first ("2" → 2), then valid: this one runs.
        ("c3", "read_file", r#"{"path": "notes.txt", "offset": "1"}"#),
    ]));
    h.mock.push(MockResponse::text("done"));
    let mut agent = h.agent().await;
    h.turn(&mut agent, "read it").await;

    let requests = h.checked_requests();
    let results = tool_messages(&requests[1]);
    let (_, read) = &results[0];
    assert!(
        read.starts_with("`read_file` was not run: its arguments do not match its schema."),
        "{read}"
    );
    assert!(read.contains("- /path: required, but missing"), "{read}");
    assert!(
        read.contains(r#"- /offset: the value is not of type "integer" (got string "ten")"#),
        "{read}"
    );
    let (_, skills) = &results[1];
    assert!(
        skills.starts_with("`skills_list` was not run: its arguments do not match its schema."),
        "{skills}"
    );
    assert!(
        skills.contains(r#"- /category: the value is not of type "string" (got integer 5)"#),
        "{skills}"
    );
    assert_eq!(h.counting.count(), 0, "a refused call never runs");
    assert!(results[2].1.contains("hello"), "{}", results[2].1);
}

/// A tool whose health the test sets.
struct Flaky {
    healthy: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Tool for Flaky {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "stock_checker".into(),
            description: "Stock of a SKU.".into(),
            parameters: json!({"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}),
        }
    }
    fn toolset(&self) -> &'static str {
        "declarative"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    fn health(&self) -> ToolHealth {
        if self.healthy.load(Ordering::SeqCst) {
            ToolHealth::Healthy
        } else {
            ToolHealth::Unhealthy {
                reason: "health endpoint answered HTTP 503".into(),
                fallback: false,
            }
        }
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::SeqCst);
        ToolOutput::ok("in stock: 3")
    }
}

#[tokio::test]
async fn an_unhealthy_tool_without_fallback_is_hidden_and_answered_at_once() {
    let mut h = Harness::new().await;
    let healthy = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    h.deps.tools.push(Arc::new(Flaky {
        healthy: healthy.clone(),
        calls: calls.clone(),
    }));
    let mut agent = h.agent().await;

    h.mock.push(MockResponse::tool_calls(&[(
        "c1",
        "stock_checker",
        r#"{"sku": "A-1"}"#,
    )]));
    h.mock.push(MockResponse::text("3 in stock"));
    h.turn(&mut agent, "stock?").await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    healthy.store(false, Ordering::SeqCst);
    h.mock.push(MockResponse::tool_calls(&[(
        "c2",
        "stock_checker",
        r#"{"sku": "A-1"}"#,
    )]));
    h.mock.push(MockResponse::text("it is down"));
    h.turn(&mut agent, "stock again?").await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not run while unhealthy");

    healthy.store(true, Ordering::SeqCst);
    h.mock.push(MockResponse::text("back"));
    h.turn(&mut agent, "and now?").await;

    // Not `checked_requests`: hiding a tool changes the tool list on purpose.
    let requests = h.mock.requests();
    assert!(tool_names(&requests[0]).contains(&"stock_checker".to_string()));
    assert!(!tool_names(&requests[2]).contains(&"stock_checker".to_string()));
    assert!(!tool_names(&requests[3]).contains(&"stock_checker".to_string()));
    let refused = tool_messages(&requests[3]);
    let (_, text) = refused.last().unwrap();
    assert!(
        text.contains(
            "`stock_checker` is unavailable right now (health endpoint answered HTTP 503)"
        ),
        "{text}"
    );
    assert!(tool_names(&requests[4]).contains(&"stock_checker".to_string()));
    // The other tools keep their order.
    let without = |r: &Value| {
        tool_names(r)
            .into_iter()
            .filter(|n| n != "stock_checker")
            .collect::<Vec<_>>()
    };
    assert_eq!(without(&requests[0]), without(&requests[2]));
}
