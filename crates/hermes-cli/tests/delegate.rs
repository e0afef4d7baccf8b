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
}
