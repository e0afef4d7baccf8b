//! Optimistic concurrency (issue 7 item 4): a turn never writes over a history that another
//! agent or process changed while it ran (`/undo`, `/new`, compression) — the check happens
//! on every commit, not only before the turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{Harness, final_text};
use hermes_agent::HISTORY_CHANGED_TEXT;
use hermes_protocol::{ToolSpec, TurnOutcome};
use hermes_store::SessionStore;
use hermes_testkit::MockResponse;
use hermes_tools::{Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

/// What "another process" does to the session while the tool runs.
#[derive(Clone, Copy)]
enum Elsewhere {
    /// `/undo` of every turn (deactivate from the first message).
    UndoAll,
    /// `/new` (the session is ended).
    NewSession,
}

/// A tool that changes the session through a second store connection, as another process
/// would, and then reports success.
struct ChangeElsewhere {
    db: std::path::PathBuf,
    session: Arc<Mutex<String>>,
    what: Elsewhere,
}

#[async_trait::async_trait]
impl Tool for ChangeElsewhere {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "change_elsewhere".into(),
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
        let other = SessionStore::open(&self.db).unwrap();
        let sid = self.session.lock().unwrap().clone();
        match self.what {
            Elsewhere::UndoAll => {
                let first = other.load_messages(&sid).unwrap()[0].id;
                other.deactivate_messages_from(&sid, first).unwrap();
            }
            Elsewhere::NewSession => other.end_session(&sid, "user_reset").unwrap(),
        }
        ToolOutput::ok("changed")
    }
}

async fn harness(what: Elsewhere) -> (Harness, Arc<Mutex<String>>) {
    let mut h = Harness::new().await;
    let session = Arc::new(Mutex::new(String::new()));
    h.deps.tools.push(Arc::new(ChangeElsewhere {
        db: h.home.home().state_db(),
        session: session.clone(),
        what,
    }));
    (h, session)
}

fn stored_texts(h: &Harness, sid: &str) -> Vec<String> {
    h.store
        .load_messages(sid)
        .unwrap()
        .iter()
        .map(|m| m.message.text())
        .collect()
}

#[tokio::test]
async fn an_undo_elsewhere_during_the_turn_stops_it_without_writing_over_the_history() {
    let (h, session) = harness(Elsewhere::UndoAll).await;
    h.mock.push(MockResponse::text("a"));
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "change_elsewhere",
        "{}",
    )]));
    h.mock.push(MockResponse::text("must never be asked for"));
    let mut agent = h.agent().await;
    *session.lock().unwrap() = agent.session_id().to_string();
    let sid = agent.session_id().to_string();
    h.turn(&mut agent, "one").await;

    let (outcome, events) = h.turn(&mut agent, "two").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    assert_eq!(final_text(&events), HISTORY_CHANGED_TEXT);
    // The undo wins: no tool result, no later message was appended after it.
    assert_eq!(stored_texts(&h, &sid), Vec::<String>::new());
    assert!(
        agent.history().is_empty(),
        "the agent reloaded what is stored"
    );
    assert_eq!(
        agent.history_version(),
        h.store.get_session(&sid).unwrap().unwrap().history_version
    );
    assert_eq!(
        h.mock.requests().len(),
        2,
        "no model call after the conflict"
    );

    // The next turn continues on the stored history.
    h.mock.clear_queue();
    h.mock.push(MockResponse::text("c"));
    let (outcome, _) = h.turn(&mut agent, "three").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(stored_texts(&h, &sid), vec!["three", "c"]);
    let last = h.checked_requests().pop().unwrap();
    assert_eq!(common::roles(&last), vec!["system", "user"]);
}

#[tokio::test]
async fn a_new_session_elsewhere_during_the_turn_stops_it() {
    let (h, session) = harness(Elsewhere::NewSession).await;
    h.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "change_elsewhere",
        "{}",
    )]));
    h.mock.push(MockResponse::text("must never be asked for"));
    let mut agent = h.agent().await;
    *session.lock().unwrap() = agent.session_id().to_string();
    let sid = agent.session_id().to_string();
    let (outcome, events) = h.turn(&mut agent, "clean up").await;
    assert_eq!(outcome, TurnOutcome::Failed);
    assert_eq!(final_text(&events), HISTORY_CHANGED_TEXT);
    // The user's message and the tool call were saved before the reset; the result of a
    // tool that ran after it was not appended to the ended session.
    let stored = h.store.load_messages(&sid).unwrap();
    assert_eq!(stored.len(), 2);
    assert!(
        stored
            .iter()
            .all(|m| m.message.role != hermes_protocol::Role::Tool)
    );
}

#[tokio::test]
async fn an_undo_elsewhere_between_turns_is_picked_up_before_the_next_message() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("a"));
    h.mock.push(MockResponse::text("b"));
    h.mock.push(MockResponse::text("c"));
    let mut agent = h.agent().await;
    let sid = agent.session_id().to_string();
    h.turn(&mut agent, "one").await;
    h.turn(&mut agent, "two").await;
    // Another process undoes "two".
    let other = SessionStore::open(h.home.home().state_db()).unwrap();
    let rows = other.load_messages(&sid).unwrap();
    other.deactivate_messages_from(&sid, rows[2].id).unwrap();
    let (outcome, _) = h.turn(&mut agent, "three").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(stored_texts(&h, &sid), vec!["one", "a", "three", "c"]);
    let last = h.checked_requests().pop().unwrap();
    assert_eq!(
        common::roles(&last),
        vec!["system", "user", "assistant", "user"]
    );
}
