//! Chat commands come from the registry shared with the REPL: unknown, misused and
//! terminal-only commands get a clear reply and never reach the agent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_testkit::MockResponse;

#[tokio::test]
async fn unknown_and_misused_commands_are_answered_without_the_agent() {
    let h = Harness::new().await;
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    for text in ["/frob now", "/undo x", "/quit", "/new please"] {
        gw.handle(dm("5", text)).await;
    }
    idle(&gw).await;
    assert_eq!(
        adapter.texts(),
        vec![
            "Unknown command /frob. /help lists the commands.".to_string(),
            "/undo: expected a whole number of 1 or more, got \"x\" (usage: /undo [N])".to_string(),
            "/quit is not available here; it works in the terminal (hermes). /help lists what works here.".to_string(),
            "/new: takes no argument, got \"please\" (usage: /new)".to_string(),
        ]
    );
    assert!(h.mock.requests().is_empty(), "no command reached the model");
    assert!(
        h.store
            .latest_session_for_key("agent:main:telegram:dm:5")
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_skill_name_loads_the_skill_into_the_message() {
    let h = Harness::new().await;
    let skill = h.home.home().skills_dir().join("deploy-app");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy-app\ndescription: Ship it\n---\nRun the deploy script.\n",
    )
    .unwrap();
    h.mock.push(MockResponse::text("deployed"));
    let (adapter, _inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    gw.handle(dm("5", "/deploy-app to staging")).await;
    idle(&gw).await;
    assert_eq!(adapter.texts(), vec!["deployed"]);
    let users = request_users(&h.mock.requests()[0]);
    let last = users.last().unwrap();
    assert!(last.contains("Run the deploy script."), "{last}");
    assert!(last.contains("to staging"), "{last}");
}
