//! The `clarify` tool: asks a [`Clarifier`] when there is one, else returns the notice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use hermes_tools::{Approval, Clarifier, ClarifyRequest, ClarifyTool, Tool};
use serde_json::{Value, json};

struct Scripted {
    answer: Option<String>,
    asked: Mutex<Vec<ClarifyRequest>>,
}

#[async_trait::async_trait]
impl Clarifier for Scripted {
    async fn ask(&self, request: &ClarifyRequest) -> Option<String> {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

async fn call(tool: &ClarifyTool, args: Value) -> (String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let out = tool
        .call(args, &common::ctx(dir.path(), Approval::Deny))
        .await;
    (out.content, out.is_error)
}

#[tokio::test]
async fn interactive_clarify_returns_the_users_answer() {
    let user = Arc::new(Scripted {
        answer: Some("Postgres".to_string()),
        asked: Mutex::new(Vec::new()),
    });
    let tool = ClarifyTool::new(user.clone());
    let (text, err) = call(
        &tool,
        json!({"question": "Which database?", "choices": ["SQLite", "Postgres"]}),
    )
    .await;
    assert!(!err);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["user_response"], "Postgres");
    assert_eq!(v["choices_offered"], json!(["SQLite", "Postgres"]));
    assert_eq!(user.asked.lock().unwrap()[0].question, "Which database?");
}

#[tokio::test]
async fn headless_and_unanswered_tell_the_model_to_proceed() {
    let (text, err) = call(&ClarifyTool::headless(), json!({"question": "Which?"})).await;
    assert!(!err);
    assert!(text.contains("best judgement"), "{text}");

    let silent = ClarifyTool::new(Arc::new(Scripted {
        answer: None,
        asked: Mutex::new(Vec::new()),
    }));
    let (text, err) = call(&silent, json!({"question": "Which?"})).await;
    assert!(!err);
    assert!(text.contains("did not answer"), "{text}");
}

#[tokio::test]
async fn bad_arguments_are_refused_before_asking() {
    let user = Arc::new(Scripted {
        answer: Some("x".to_string()),
        asked: Mutex::new(Vec::new()),
    });
    let tool = ClarifyTool::new(user.clone());
    for (args, needle) in [
        (json!({}), "`question` must be a non-empty string"),
        (
            json!({"question": "  "}),
            "`question` must be a non-empty string",
        ),
        (
            json!({"question": "q", "choices": ["a", "b", "c", "d", "e"]}),
            "at most 4 choices, got 5",
        ),
        (json!({"question": "q", "choices": ["a", 3]}), "choices[1]"),
        (json!({"question": "q", "choices": "a"}), "must be an array"),
    ] {
        let (text, err) = call(&tool, args).await;
        assert!(err, "{text}");
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
    assert!(user.asked.lock().unwrap().is_empty());
}

#[test]
fn clarify_is_offered_but_not_to_cron_style_selections() {
    let r = hermes_tools::Registry::builtin();
    let cli = r
        .select(&hermes_tools::ToolsetSelection::default())
        .unwrap();
    assert!(cli.names().contains(&"clarify".to_string()));
    // Cron selects files and terminal only (hermes-cron's toolset).
    let cron = r
        .select(&hermes_tools::ToolsetSelection::parse("file,terminal"))
        .unwrap();
    assert!(!cron.names().contains(&"clarify".to_string()));
}
