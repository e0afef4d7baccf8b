#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `delegate_task` through the binary (FEATURES §4): offered by default, configured from
//! `delegation:`, progress on stderr, and `hermes -c` / `sessions list` keep to the
//! conversation, not its subagents.

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

#[tokio::test]
async fn a_subagent_runs_and_continue_picks_the_parent() {
    let env = Env::with_config("delegation:\n  max_iterations: 1\n  model: mock-small\n").await;
    env.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        r#"{"goal": "List the files", "toolsets": ["file"]}"#,
    )]));
    env.mock.push(MockResponse::tool_calls(&[(
        "c1",
        "search_files",
        r#"{"pattern": "zzz-not-here"}"#,
    )]));
    env.mock.push(MockResponse::text("No files match."));
    env.mock
        .push(MockResponse::text("The subagent found nothing."));
    env.mock.push(MockResponse::text("Still nothing."));
    let out = env.run_ok(&["chat", "-q", "look around"]).await;
    assert_eq!(stdout(&out).trim(), "The subagent found nothing.");
    let progress = stderr(&out);
    assert!(
        progress
            .lines()
            .any(|l| l.contains("search_files") && l.contains("[subagent 1] zzz-not-here")),
        "{progress}"
    );

    let requests = env.mock.requests();
    let parent_tools = requests[0]["tools"].to_string();
    assert!(parent_tools.contains("delegate_task"), "{parent_tools}");
    // `delegation.model` goes to the same provider; only the file tools were asked for.
    let child = &requests[1];
    assert_eq!(child["model"], "mock-small");
    let child_tools = child["tools"].to_string();
    assert!(child_tools.contains("search_files"), "{child_tools}");
    assert!(!child_tools.contains("terminal"), "{child_tools}");
    // A budget of one step: the second child call is the tool-less summary.
    assert_eq!(requests[2]["tool_choice"], "none");
    assert_eq!(requests[3]["model"], "mock-model");
    let result = requests[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        result.contains("\"status\":\"budget_exhausted\""),
        "{result}"
    );
    assert!(result.contains("No files match."), "{result}");

    // `-c` continues the conversation, not the subagent's session.
    env.run_ok(&["-c", "chat", "-q", "anything else?"]).await;
    let requests = env.mock.requests();
    let texts = requests[4]["messages"].to_string();
    assert!(texts.contains("look around"), "{texts}");
    let listed = stdout(&env.run_ok(&["sessions", "list"]).await);
    assert!(!listed.contains("List the files"), "{listed}");
    assert_eq!(listed.lines().count(), 2, "header and one row: {listed}");

    // `sessions show` links the two; `sessions search` marks the subagent's hits.
    let parent_id = listed
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let child_id = result
        .split("\"session_id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_string();
    let shown = stdout(&env.run_ok(&["sessions", "show", &parent_id]).await);
    assert!(shown.contains(&format!("subagent: {child_id}")), "{shown}");
    let shown = stdout(&env.run_ok(&["sessions", "show", &child_id]).await);
    assert!(
        shown.contains(&format!("subagent of: {parent_id}")),
        "{shown}"
    );
    let found = stdout(&env.run_ok(&["sessions", "search", "zzz-not-here"]).await);
    assert!(
        found.contains(&format!("{child_id} (subagent of {parent_id})")),
        "{found}"
    );
}

#[tokio::test]
async fn delegation_provider_sends_subagents_to_another_endpoint() {
    let other = hermes_testkit::MockProvider::start().await;
    let env = Env::with_config(&format!(
        "delegation:\n  provider: custom\n  base_url: {}\n  model: helper-model\n  api_key: sk-helper-key\n",
        other.base_url()
    ))
    .await;
    env.mock.push(MockResponse::tool_calls(&[(
        "d1",
        "delegate_task",
        r#"{"goal": "Say hello"}"#,
    )]));
    other.push(MockResponse::text("hello from the helper"));
    env.mock.push(MockResponse::text("The helper said hello."));
    let out = env.run_ok(&["chat", "-q", "ask the helper"]).await;
    assert_eq!(stdout(&out).trim(), "The helper said hello.");
    let child = other.requests();
    assert_eq!(child.len(), 1);
    assert_eq!(child[0]["model"], "helper-model");
    // `delegation.api_key` is the subagents' key on that endpoint.
    assert_eq!(
        other.captured()[0].header("authorization"),
        Some("Bearer sk-helper-key")
    );
    let parent = env.mock.requests();
    assert_eq!(parent.len(), 2);
    assert!(
        parent[1]["messages"]
            .to_string()
            .contains("hello from the helper")
    );
}
