//! Fault and case tests against the scripted stdio server (tests/fixtures/scripted_server.py):
//! cases C29, C31, C32; crash at start, crash mid-call with the breaker, mixed id types,
//! a 10 MB result through the result budget, a hung call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use hermes_mcp::naming::is_valid_name;
use hermes_mcp::server::ServerState;

fn skip_without_python() -> bool {
    if !have("python3") {
        eprintln!("skipped: python3 is missing (the scripted MCP server is a Python script)");
        return true;
    }
    false
}

async fn c29(variant: &str) {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut spec = scripted("demo", &["--noise", variant]);
    spec.connect_timeout = Duration::from_secs(20);
    // `hang: false`: start returns with the server ready well before the connect timeout.
    let m = tokio::time::timeout(Duration::from_secs(60), start(vec![spec], dir.path()))
        .await
        .expect("initialize hung");
    let s = m.server("demo").unwrap();
    assert_eq!(s.state(), ServerState::Ready);
    let info = s.server_info().await.unwrap();
    assert_eq!(info["name"], "demo");
    assert_eq!(s.ignored_lines(), 1);
    let log = std::fs::read_to_string(dir.path().join("logs/mcp-demo.log")).unwrap();
    assert!(
        log.contains("level=info"),
        "noise goes to the server log: {log}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn case_c29_log_line_before_initialize_response_is_skipped() {
    c29("A").await;
}

#[tokio::test]
async fn case_c29_log_text_on_the_response_line_is_recovered() {
    c29("B").await;
}

#[tokio::test]
async fn case_c31_dotted_and_non_ascii_names_are_sanitized_unique_and_dispatch_to_original() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = start(vec![scripted("gws", &["--weird-names"])], dir.path()).await;
    let tools = m.tools();
    let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    assert!(names.iter().all(|n| is_valid_name(n)), "{names:?}");
    let unique: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "names unique after sanitizing");
    assert!(names.contains(&"mcp__gws__calendar_updateEvent".to_string()));
    assert!(names.contains(&"mcp__gws__catalog_get-entity-facets".to_string()));
    let tool = tools
        .iter()
        .find(|t| t.spec().name == "mcp__gws__calendar_updateEvent")
        .unwrap();
    let out = tool
        .call(serde_json::json!({"text": "hi"}), &ctx(dir.path()))
        .await;
    assert_eq!(
        out.content, "calendar.updateEvent:hi",
        "dispatch uses the original name"
    );
    assert!(!out.is_error);
    m.shutdown().await;
}

#[tokio::test]
async fn case_c32_list_changed_after_a_call_refreshes_the_tool_list() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = start(vec![scripted("dap", &["--dap"])], dir.path()).await;
    let names = |m: &hermes_mcp::McpManager| -> Vec<String> {
        m.tools().iter().map(|t| t.spec().name).collect()
    };
    assert_eq!(names(&m), vec!["mcp__dap__debug"]);
    let gen0 = m.generation();
    let debug = m.tools().remove(0);
    let out = debug.call(serde_json::json!({}), &ctx(dir.path())).await;
    assert_eq!(out.content, "debug session started");
    let expected = vec![
        "mcp__dap__context",
        "mcp__dap__step",
        "mcp__dap__continue",
        "mcp__dap__breakpoint",
    ];
    assert!(
        eventually(|| names(&m) == expected).await,
        "got {:?}",
        names(&m)
    );
    assert!(m.generation() > gen0, "a cached tool list knows to rebuild");
    // The removed tool answers with a clear error.
    let gone = debug.call(serde_json::json!({}), &ctx(dir.path())).await;
    assert!(
        gone.is_error && gone.content.contains("no longer offered"),
        "{}",
        gone.content
    );
    m.shutdown().await;
}

#[tokio::test]
async fn crash_at_start_is_reported_and_other_servers_keep_working() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut missing = scripted("missing", &[]);
    if let hermes_mcp::config::Transport::Stdio { command, .. } = &mut missing.transport {
        *command = "/nonexistent/mcp-server".into();
    }
    let m = start(
        vec![
            scripted("bad", &["--crash-at-start"]),
            missing,
            scripted("good", &[]),
        ],
        dir.path(),
    )
    .await;
    assert!(matches!(
        m.server("bad").unwrap().state(),
        ServerState::Failed(_)
    ));
    assert!(
        matches!(m.server("missing").unwrap().state(), ServerState::Failed(e) if e.contains("cannot start"))
    );
    assert_eq!(m.server("good").unwrap().state(), ServerState::Ready);
    let names: Vec<String> = m.tools().iter().map(|t| t.spec().name).collect();
    assert!(names.contains(&"mcp__good__echo".to_string()));
    assert!(!names.iter().any(|n| n.starts_with("mcp__bad__")));
    let reports = m.reports();
    assert_eq!(reports.len(), 3);
    m.shutdown().await;
}

#[tokio::test]
async fn crash_mid_call_opens_the_breaker_after_three_failures() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = start(vec![scripted("s", &[])], dir.path()).await;
    let crash = m
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "mcp__s__crash")
        .unwrap();
    let c = ctx(dir.path());
    for i in 0..3 {
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            crash.call(serde_json::json!({}), &c),
        )
        .await
        .expect("a crashed server must not hang the call");
        assert!(out.is_error, "call {i}: {}", out.content);
        assert!(
            out.content.contains("MCP server `s` failed"),
            "call {i}: {}",
            out.content
        );
    }
    let fast = crash.call(serde_json::json!({}), &c).await;
    assert!(fast.is_error);
    assert!(fast.content.contains("circuit breaker"), "{}", fast.content);
    assert!(m.reports()[0].breaker_open);
    m.shutdown().await;
}

#[tokio::test]
async fn reconnects_after_a_crash() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = start(vec![scripted("s", &[])], dir.path()).await;
    let tools = m.tools();
    let get = |n: &str| tools.iter().find(|t| t.spec().name == n).unwrap().clone();
    let c = ctx(dir.path());
    assert!(
        get("mcp__s__crash")
            .call(serde_json::json!({}), &c)
            .await
            .is_error
    );
    let out = get("mcp__s__echo")
        .call(serde_json::json!({"text": "back"}), &c)
        .await;
    assert_eq!(out.content, "echo:back");
    m.shutdown().await;
}

#[tokio::test]
async fn server_requests_with_number_and_string_ids_are_answered_with_roots() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("my project");
    let mut spec = scripted("s", &[]);
    spec.roots = vec![root.clone()];
    let m = start(vec![spec], dir.path()).await;
    let get = |name: &str| {
        m.tools()
            .into_iter()
            .find(|t| t.spec().name == name)
            .unwrap()
    };
    let out = get("mcp__s__ask_roots")
        .call(serde_json::json!({}), &ctx(dir.path()))
        .await;
    assert!(!out.is_error, "{}", out.content);
    let v: serde_json::Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(v["ids"], serde_json::json!(["0", "r-1"]));
    // Only the configured folder (percent-encoded as a file URI), not the cwd.
    assert_eq!(
        v["roots"],
        serde_json::json!([format!("file://{}/my%20project", dir.path().display())])
    );
    let caps = get("mcp__s__client_caps")
        .call(serde_json::json!({}), &ctx(dir.path()))
        .await;
    assert!(caps.content.contains("roots"), "{}", caps.content);
    m.shutdown().await;
}

/// Issue 18 §5: without `roots:` nothing is offered — no `roots` capability, and a server
/// that asks anyway gets an empty list (never the working directory).
#[tokio::test]
async fn no_roots_are_offered_unless_configured() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = start(vec![scripted("s", &[])], dir.path()).await;
    let get = |name: &str| {
        m.tools()
            .into_iter()
            .find(|t| t.spec().name == name)
            .unwrap()
    };
    let caps = get("mcp__s__client_caps")
        .call(serde_json::json!({}), &ctx(dir.path()))
        .await;
    assert!(!caps.is_error, "{}", caps.content);
    let caps: serde_json::Value = serde_json::from_str(&caps.content).unwrap();
    assert!(caps.get("roots").is_none(), "{caps}");
    assert!(caps.get("elicitation").is_some(), "{caps}");
    let out = get("mcp__s__ask_roots")
        .call(serde_json::json!({}), &ctx(dir.path()))
        .await;
    let v: serde_json::Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(v["roots"], serde_json::json!([]), "{v}");
    m.shutdown().await;
}

#[tokio::test]
async fn ten_megabyte_result_arrives_and_goes_through_the_result_budget() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = start(vec![scripted("s", &[])], dir.path()).await;
    let big = m
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "mcp__s__big")
        .unwrap();
    let out = big.call(serde_json::json!({}), &ctx(dir.path())).await;
    assert!(
        !out.is_error,
        "{}",
        &out.content[..out.content.len().min(200)]
    );
    assert_eq!(out.content.len(), 10_000_000);
    let mut items = vec![hermes_tools::budget::BudgetItem::new(
        "call_1",
        "mcp__s__big",
        out.content,
    )];
    hermes_tools::budget::apply_result_budget(
        &mut items,
        hermes_tools::budget::ResultBudget::for_context(Some(200_000)),
        &dir.path().join("spill"),
    )
    .unwrap();
    assert!(items[0].spilled_to.is_some());
    assert!(items[0].content.len() < 10_000);
    m.shutdown().await;
}

#[tokio::test]
async fn a_hung_call_times_out_without_blocking_other_servers() {
    if skip_without_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut slow = scripted("slow", &[]);
    slow.call_timeout = Duration::from_secs(3);
    let m = start(vec![slow, scripted("fast", &[])], dir.path()).await;
    let tools = m.tools();
    let hang = tools
        .iter()
        .find(|t| t.spec().name == "mcp__slow__hang")
        .unwrap()
        .clone();
    let echo = tools
        .iter()
        .find(|t| t.spec().name == "mcp__fast__echo")
        .unwrap()
        .clone();
    let c = ctx(dir.path());
    let c2 = c.clone();
    let hung = tokio::spawn(async move { hang.call(serde_json::json!({}), &c2).await });
    let quick = echo.call(serde_json::json!({"text": "ok"}), &c).await;
    assert_eq!(quick.content, "echo:ok");
    assert!(
        !hung.is_finished(),
        "the other server answered while the hung call was pending"
    );
    let out = tokio::time::timeout(Duration::from_secs(60), hung)
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.is_error && out.content.contains("timed out after 3 s"),
        "{}",
        out.content
    );
    m.shutdown().await;
}
