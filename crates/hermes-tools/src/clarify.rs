//! The `clarify` tool (FEATURES §4; issue 4 item 8): the model asks the user a question,
//! optionally with up to [`MAX_CHOICES`] answers to pick from.
//!
//! Who answers is a [`Clarifier`] given by the front end (the REPL asks on the terminal, the
//! same way it asks for approvals). Without one — cron, the gateway, `chat -q` without a
//! terminal — the tool answers at once with a notice telling the model to proceed on its
//! best judgement. Cron runs are not offered the tool at all (FEATURES §1 Cron).

use std::sync::Arc;

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};

use crate::tool::{Parallelism, Tool, ToolContext, ToolOutput};

/// Most choices one question may offer (Hermes' `clarify` schema).
pub const MAX_CHOICES: usize = 4;

/// The notice returned where nobody can answer (model-visible;
/// `prompts/clarify_headless.md`).
pub const HEADLESS_NOTICE: &str = include_str!("../prompts/clarify_headless.md");

/// One question for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClarifyRequest {
    /// The question text.
    pub question: String,
    /// Offered answers (0 to [`MAX_CHOICES`]); the user may still answer freely.
    pub choices: Vec<String>,
}

/// Puts a [`ClarifyRequest`] to the user (implemented by the REPL in hermes-cli).
#[async_trait::async_trait]
pub trait Clarifier: Send + Sync {
    /// The user's answer (a chosen choice's text or free text); `None` when nobody answered
    /// (input closed, the user skipped) — the tool then tells the model to proceed.
    async fn ask(&self, request: &ClarifyRequest) -> Option<String>;
}

/// The `clarify` tool, with or without someone to ask.
#[derive(Clone, Default)]
pub struct ClarifyTool {
    clarifier: Option<Arc<dyn Clarifier>>,
}

impl std::fmt::Debug for ClarifyTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClarifyTool")
            .field("interactive", &self.clarifier.is_some())
            .finish()
    }
}

impl ClarifyTool {
    /// A tool that asks `clarifier`.
    pub fn new(clarifier: Arc<dyn Clarifier>) -> ClarifyTool {
        ClarifyTool {
            clarifier: Some(clarifier),
        }
    }

    /// A tool with nobody to ask: every call returns [`HEADLESS_NOTICE`].
    pub fn headless() -> ClarifyTool {
        ClarifyTool { clarifier: None }
    }

    /// Checks the arguments: a non-empty `question` string and at most [`MAX_CHOICES`]
    /// non-empty string `choices`.
    ///
    /// # Errors
    /// A message naming the bad argument.
    pub fn parse_request(args: &Value) -> Result<ClarifyRequest, String> {
        let question = match args.get("question") {
            Some(Value::String(q)) if !q.trim().is_empty() => q.trim().to_string(),
            _ => return Err("`question` must be a non-empty string".to_string()),
        };
        let choices = match args.get("choices") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
                        _ => return Err(format!("choices[{i}] must be a non-empty string")),
                    }
                }
                out
            }
            Some(_) => return Err("`choices` must be an array of strings".to_string()),
        };
        if choices.len() > MAX_CHOICES {
            return Err(format!(
                "at most {MAX_CHOICES} choices, got {}; shorten the list",
                choices.len()
            ));
        }
        Ok(ClarifyRequest { question, choices })
    }
}

#[async_trait::async_trait]
impl Tool for ClarifyTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "clarify".to_string(),
            description: include_str!("../prompts/clarify_description.md")
                .trim()
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question for the user."},
                    "choices": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_CHOICES,
                        "description": "Optional answers to pick from (up to 4).",
                    },
                },
                "required": ["question"],
            }),
        }
    }

    fn toolset(&self) -> &'static str {
        "clarify"
    }

    fn parallelism(&self) -> Parallelism {
        // Waits for a person: never beside other calls (FEATURES §3).
        Parallelism::Never
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let request = match ClarifyTool::parse_request(&args) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(format!("clarify: {e}")),
        };
        let Some(clarifier) = &self.clarifier else {
            return ToolOutput::ok(HEADLESS_NOTICE.trim());
        };
        let answer = tokio::select! {
            a = clarifier.ask(&request) => a,
            () = ctx.cancel.cancelled() => return ToolOutput::error("clarify: interrupted before the user answered"),
        };
        match answer
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
        {
            Some(answer) => ToolOutput::ok(
                json!({
                    "question": request.question,
                    "choices_offered": request.choices,
                    "user_response": answer,
                })
                .to_string(),
            ),
            None => ToolOutput::ok(include_str!("../prompts/clarify_no_answer.md").trim()),
        }
    }
}
