//! Tool calls for the embedded model (FEATURES §2, §14; case C13).
//!
//! The embedded model is prompted to answer with
//! `<tool_call>{"name": "…", "arguments": {…}}</tool_call>` blocks. [`ToolCallParser`] wraps
//! the crate's shared markup filter ([`crate::hermes_format::TagFilter`], which holds back
//! partial tags and strips every block from the visible text) and decides which blocks
//! become real [`ToolCall`]s: only those with valid JSON object arguments naming a tool
//! declared in the request (case C13: "accept only declared tool names with valid JSON
//! arguments"). Every other block is reported as a diagnostic and never run. Small models
//! often stop right after the JSON without `</tool_call>`; such an unterminated block is
//! accepted when its body alone is a complete, valid call.

use std::collections::HashSet;

use hermes_protocol::ToolCall;

use crate::hermes_format::{ParsedCall, TagFilter};

/// What the parser found once the generation is over.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedOutput {
    /// All visible text (tool-call blocks removed), exactly the concatenation of what
    /// [`ToolCallParser::push`] and [`ToolCallParser::finish`] returned.
    pub text: String,
    /// Accepted tool calls in the order they were written, ids `local_1`, `local_2`, ….
    pub tool_calls: Vec<ToolCall>,
    /// One line per rejected block (bad JSON, undeclared tool, unterminated block).
    pub diagnostics: Vec<String>,
}

/// Incremental `<tool_call>` parser for one generation.
#[derive(Debug, Clone)]
pub struct ToolCallParser {
    declared: HashSet<String>,
    filter: TagFilter,
    out: ParsedOutput,
}

impl ToolCallParser {
    /// A parser that accepts calls to the given tool names only. With no declared tools
    /// every block is rejected (stripped and diagnosed).
    pub fn new<I, S>(declared: I) -> ToolCallParser
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ToolCallParser {
            declared: declared.into_iter().map(Into::into).collect(),
            filter: TagFilter::new(),
            out: ParsedOutput::default(),
        }
    }

    /// Number of tool calls accepted so far.
    pub fn accepted_calls(&self) -> usize {
        self.out.tool_calls.len()
    }

    /// The most recently accepted call, if any.
    pub fn last_call(&self) -> Option<&ToolCall> {
        self.out.tool_calls.last()
    }

    /// Feeds the next piece of generated text; returns the visible text that can be
    /// shown now (possibly empty; never a partial tag).
    pub fn push(&mut self, chunk: &str) -> String {
        let visible = self.filter.push(chunk);
        self.collect_blocks();
        self.out.text.push_str(&visible);
        visible
    }

    /// Ends the generation: returns the last visible text (a held-back partial tag that
    /// never completed) and everything parsed.
    pub fn finish(mut self) -> (String, ParsedOutput) {
        let visible = self.filter.finish();
        self.collect_blocks();
        self.out.text.push_str(&visible);
        (visible, self.out)
    }

    fn collect_blocks(&mut self) {
        for block in self.filter.take_calls() {
            self.accept_block(&block);
        }
    }

    fn accept_block(&mut self, block: &ParsedCall) {
        // The shared filter rejects unterminated blocks; re-parse the body so a complete
        // call whose closing tag never came is still usable.
        let parsed = match parse_call_body(&block.raw) {
            Ok(call) => Ok(call),
            Err(why) => Err(block.error.clone().unwrap_or(why)),
        };
        match parsed {
            Ok((name, arguments)) if self.declared.contains(&name) => {
                let id = format!("local_{}", self.out.tool_calls.len() + 1);
                self.out.tool_calls.push(ToolCall::new(id, name, arguments));
            }
            Ok((name, _)) => self.out.diagnostics.push(format!(
                "the model called an undeclared tool `{name}`; the <tool_call> block was dropped"
            )),
            Err(why) => self.out.diagnostics.push(format!(
                "the model wrote an invalid <tool_call> block ({why}); it was dropped"
            )),
        }
    }
}

/// Parses one block body into `(name, argument JSON text)`.
///
/// Accepts `{"name": "t", "arguments": {...}}` (also `"parameters"`), arguments given as
/// a JSON string holding an object, and missing/null arguments (stored as `{}`, case C04).
fn parse_call_body(body: &str) -> Result<(String, String), String> {
    let value: serde_json::Value =
        serde_json::from_str(body.trim()).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = value
        .as_object()
        .ok_or_else(|| "not a JSON object".to_string())?;
    let name = obj
        .get("name")
        .and_then(serde_json::Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| "no \"name\" string".to_string())?
        .trim()
        .to_string();
    let args = obj.get("arguments").or_else(|| obj.get("parameters"));
    let arguments = match args {
        None | Some(serde_json::Value::Null) => "{}".to_string(),
        Some(serde_json::Value::Object(_)) => args.map(ToString::to_string).unwrap_or_default(),
        Some(serde_json::Value::String(s)) => match serde_json::from_str::<serde_json::Value>(s) {
            Ok(serde_json::Value::Object(_)) => s.clone(),
            _ if s.trim().is_empty() => "{}".to_string(),
            _ => return Err("\"arguments\" is not a JSON object".to_string()),
        },
        Some(_) => return Err("\"arguments\" is not a JSON object".to_string()),
    };
    Ok((name, arguments))
}
