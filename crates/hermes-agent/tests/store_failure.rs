//! A message that cannot be stored fails loudly (issue 17): the turn ends as `Failed` with
//! a line naming `state.db` and the cause, never as a normal answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{Harness, final_text};
use hermes_agent::STORE_FAILED_PREFIX;
use hermes_protocol::{ToolSpec, TurnOutcome};
use hermes_testkit::MockResponse;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

/// Makes every later insert into `messages` fail, through a second connection as another
/// program (or a broken disk) would: the store's own connection stays open and healthy.
fn break_message_writes(db: &Path) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute_batch(
        "CREATE TRIGGER test_no_messages BEFORE INSERT ON messages \
         BEGIN SELECT RAISE(ABORT, 'simulated write failure'); END;",
    )
    .unwrap();
}

/// A tool that breaks the store's message writes while the turn runs.
struct BreakStore {
    db: PathBuf,
}

#[async_trait::async_trait]
impl Tool for BreakStore {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "break_store".into(),
            description: "Test tool.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "test"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        break_message_writes(&self.db);
        ToolOutput::ok("broken")
    }
}

#[tokio::test]
async fn a_store_failure_mid_turn_ends_the_turn_with_an_error_naming_state_db() {
    let mut h = Harness::new().await;
    let db = h.home.home().state_db();
    h.deps.tools.push(Arc::new(BreakStore { db: db.clone() }));
    h.mock
        .push(MockResponse::tool_calls(&[("call_1", "break_store", "{}")]));
    h.mock.push(MockResponse::text("must never be asked for"));
    let mut agent = h.agent().await;
    let sid = agent.session_id().to_string();

    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    let text = final_text(&events);
    assert!(text.starts_with(STORE_FAILED_PREFIX), "{text}");
    assert!(text.contains("state.db"), "names the file: {text}");
    assert!(
        text.contains("simulated write failure"),
        "names the cause: {text}"
    );
    assert!(!text.contains('\n'), "one line: {text}");
    assert_eq!(
        h.mock.requests().len(),
        1,
        "no model call after the tool result could not be stored"
    );
    // What was stored before the failure is still there; the tool result is not.
    let stored: Vec<String> = h
        .store
        .load_messages(&sid)
        .unwrap()
        .iter()
        .map(|m| format!("{:?}", m.message.role))
        .collect();
    assert_eq!(
        stored.len(),
        2,
        "user message and tool-call reply: {stored:?}"
    );
}

#[tokio::test]
async fn a_user_message_that_cannot_be_stored_fails_the_turn_before_any_model_call() {
    let h = Harness::new().await;
    let mut agent = h.agent().await;
    break_message_writes(&h.home.home().state_db());

    let (outcome, events) = h.turn(&mut agent, "hello").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    let text = final_text(&events);
    assert!(text.starts_with(STORE_FAILED_PREFIX), "{text}");
    assert!(text.contains("state.db"), "{text}");
    assert!(h.mock.requests().is_empty(), "the model was not called");

    // Once the store works again, the next turn runs normally and the failed input was not
    // kept to be written twice.
    let conn = rusqlite::Connection::open(h.home.home().state_db()).unwrap();
    conn.execute_batch("DROP TRIGGER test_no_messages").unwrap();
    h.mock.push(MockResponse::text("hi"));
    let (outcome, _) = h.turn(&mut agent, "hello again").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let sid = agent.session_id().to_string();
    let texts: Vec<String> = h
        .store
        .load_messages(&sid)
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect();
    assert_eq!(texts, vec!["hello again".to_string(), "hi".to_string()]);
}
