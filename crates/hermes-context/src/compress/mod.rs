//! Context compression (FEATURES §9; ARCHITECTURE §2 step 3a): deciding when a history is too
//! long, cutting it into head / middle / tail, shaping the summarizer's input and putting the
//! summary back in place of the middle.
//!
//! This module never calls a model: the agent sends [`CompressionPlan::summary_request`] to
//! the session's model (tool-less, with [`SUMMARY_SYSTEM_PROMPT`]) and hands the answer to
//! [`CompressionPlan::apply`]. When that call fails the agent uses
//! [`ContextCompressor::prune_only`], which keeps every message (case C17).

mod boundary;
mod shrink;

use std::collections::VecDeque;

use hermes_protocol::{Message, Role};

pub use boundary::{Split, split};
pub use shrink::{prune_tool_output, shrink_json_arguments, shrink_tool_call_arguments};

use crate::TokenEstimator;

/// System prompt of the summarizer call (goal, constraints, completed actions, active state,
/// decisions, open questions, relevant files, remaining work).
pub const SUMMARY_SYSTEM_PROMPT: &str = include_str!("../../prompts/compress_summary.md");
/// First line of every summary message; also how a previous summary is recognized.
pub const SUMMARY_HEADER: &str = include_str!("../../prompts/compress_summary_header.md");
const REQUEST_TEMPLATE: &str = include_str!("../../prompts/compress_request.md");
const PREVIOUS_TEMPLATE: &str = include_str!("../../prompts/compress_previous.md");
const FOCUS_TEMPLATE: &str = include_str!("../../prompts/compress_focus.md");

/// Fraction of the effective window the threshold never falls below (FEATURES §9).
pub const THRESHOLD_RATIO: f64 = 0.5;
/// Fraction of the effective window the threshold never exceeds (FEATURES §9).
pub const THRESHOLD_CAP_RATIO: f64 = 0.85;
/// Floor of the threshold in tokens, unless above [`THRESHOLD_CAP_RATIO`] of the window.
pub const THRESHOLD_FLOOR_TOKENS: u64 = 64_000;
/// A compression saving less than this fraction of the tokens counts as ineffective; two in a
/// row stop automatic compression (anti-thrash, FEATURES §9).
pub const MIN_SAVINGS_RATIO: f64 = 0.10;

/// Compression threshold in tokens (`numeric_policies.json` `compression_threshold_tokens`):
/// with `eff = context_window − max_output_tokens` (saturating at 0),
/// `min(max(0.5·eff, 64,000), 0.85·eff)`.
pub fn compression_threshold(context_window: u64, max_output_tokens: u64) -> u64 {
    compression_threshold_at(THRESHOLD_RATIO, context_window, max_output_tokens)
}

/// [`compression_threshold`] with `ratio` in place of [`THRESHOLD_RATIO`]
/// (`compression.threshold` in `config.yaml`, Python Hermes' key for the same fraction):
/// `min(max(ratio·eff, 64,000), max(0.85, ratio)·eff)`, so a ratio above 0.85 raises the cap
/// with it. A ratio outside `(0, 1]` is taken as [`THRESHOLD_RATIO`].
pub fn compression_threshold_at(ratio: f64, context_window: u64, max_output_tokens: u64) -> u64 {
    let ratio = if ratio > 0.0 && ratio <= 1.0 {
        ratio
    } else {
        THRESHOLD_RATIO
    };
    let eff = context_window.saturating_sub(max_output_tokens) as f64;
    let lower = (ratio * eff).max(THRESHOLD_FLOOR_TOKENS as f64);
    lower.min(THRESHOLD_CAP_RATIO.max(ratio) * eff).floor() as u64
}

/// Tunables of the compressor (`config.yaml` `compression:`, FEATURES §13).
#[derive(Debug, Clone, PartialEq)]
pub struct CompressionConfig {
    /// Messages kept verbatim at the start (`protect_first_n`, default 3).
    pub protect_first_n: usize,
    /// Most messages kept verbatim at the end (`protect_last_n`, default 20).
    pub protect_last_n: usize,
    /// Characters a tool output outside the tail keeps when pruned (default 1,500).
    pub prune_keep_chars: usize,
    /// Longest string leaf of tool-call arguments outside the tail (default 500 chars).
    pub arg_leaf_chars: usize,
    /// Longest rendering of one message in the summarizer transcript (default 4,000 chars);
    /// halved (down to 200) while the transcript exceeds `transcript_max_chars`.
    pub transcript_message_chars: usize,
    /// Target size of the whole summarizer transcript in characters (default 200,000).
    pub transcript_max_chars: usize,
    /// Fraction of the usable window at which automatic compression starts
    /// (`compression.threshold`, default [`THRESHOLD_RATIO`]; see
    /// [`compression_threshold_at`]).
    pub threshold_ratio: f64,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig {
            protect_first_n: 3,
            protect_last_n: 20,
            prune_keep_chars: 1_500,
            arg_leaf_chars: 500,
            transcript_message_chars: 4_000,
            transcript_max_chars: 200_000,
            threshold_ratio: THRESHOLD_RATIO,
        }
    }
}

/// A planned compression of one history: `head` and `tail` stay (head tool outputs pruned),
/// `middle` is to be replaced by one summary message.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressionPlan {
    /// Protected first messages (pruned tool outputs and shrunk arguments).
    pub head: Vec<Message>,
    /// The messages to summarize (pruned; a previous summary among them is also in
    /// `previous_summary`).
    pub middle: Vec<Message>,
    /// Protected last messages, verbatim.
    pub tail: Vec<Message>,
    /// The body of the summary written at the previous compression, if the middle holds one.
    pub previous_summary: Option<String>,
    /// Estimated tokens of the whole history before compression.
    pub tokens_before: u64,
    transcript_message_chars: usize,
    transcript_max_chars: usize,
}

impl CompressionPlan {
    /// The user message for the summarizer: the previous summary (if any), the optional focus
    /// and a transcript of the middle. Every piece of text passes through `redact` (use
    /// `hermes_llm::redact_secrets`) before it is included, so secrets never reach the
    /// summarizer; tool-call arguments are rendered after [`shrink_json_arguments`].
    pub fn summary_request(&self, focus: Option<&str>, redact: &dyn Fn(&str) -> String) -> String {
        let mut cap = self.transcript_message_chars.max(1);
        let transcript = loop {
            let text = render_transcript(&self.middle, cap, redact);
            if text.chars().count() <= self.transcript_max_chars || cap <= 200 {
                break text;
            }
            cap /= 2;
        };
        let previous = self
            .previous_summary
            .as_deref()
            .map(|s| PREVIOUS_TEMPLATE.replace("{summary}", &redact(s)))
            .unwrap_or_default();
        let focus = focus
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(|f| FOCUS_TEMPLATE.trim_end().replace("{focus}", &redact(f)))
            .unwrap_or_default();
        REQUEST_TEMPLATE
            .replace("{previous}", &previous)
            .replace("{count}", &self.middle.len().to_string())
            .replace("{focus}", &focus)
            .replace("{transcript}", &transcript)
            .trim()
            .to_string()
    }

    /// The compressed history: head, one summary message (header + `summary`), tail. The
    /// summary's role avoids two messages of one role in a row where it can (user, else
    /// assistant). Tool pairs stay intact because the cut points are valid boundaries.
    pub fn apply(&self, summary: &str) -> Vec<Message> {
        let text = format!("{}\n\n{}", SUMMARY_HEADER.trim(), summary.trim());
        let prev = self.head.last().map(|m| m.role);
        let next = self.tail.first().map(|m| m.role);
        let touches = |r: Role| prev == Some(r) || next == Some(r);
        let message = if !touches(Role::User) || touches(Role::Assistant) {
            Message::user(text)
        } else {
            Message::assistant(text)
        };
        let mut out = self.head.clone();
        out.push(message);
        out.extend(self.tail.iter().cloned());
        out
    }
}

/// Plans compressions and remembers how well the recent ones worked (anti-thrash).
#[derive(Debug, Clone, Default)]
pub struct ContextCompressor {
    config: CompressionConfig,
    estimator: TokenEstimator,
    /// Savings ratios of the last two compressions, oldest first.
    recent_savings: VecDeque<f64>,
}

impl ContextCompressor {
    /// A compressor with these tunables.
    pub fn new(config: CompressionConfig) -> ContextCompressor {
        ContextCompressor {
            config,
            estimator: TokenEstimator::new(),
            recent_savings: VecDeque::new(),
        }
    }

    /// The tunables.
    pub fn config(&self) -> &CompressionConfig {
        &self.config
    }

    /// True when `estimated_tokens` (a preflight estimate of the whole request) exceeds
    /// `threshold` and automatic compression is not paused by [`Self::is_thrashing`].
    pub fn should_compress(&self, estimated_tokens: u64, threshold: u64) -> bool {
        estimated_tokens > threshold && !self.is_thrashing()
    }

    /// True when each of the last two compressions saved less than [`MIN_SAVINGS_RATIO`] of
    /// the tokens: automatic compression pauses (a manual `/compress` still runs).
    pub fn is_thrashing(&self) -> bool {
        self.recent_savings.len() >= 2 && self.recent_savings.iter().all(|s| *s < MIN_SAVINGS_RATIO)
    }

    /// Records a finished compression (token estimates before and after) for anti-thrash.
    pub fn record(&mut self, tokens_before: u64, tokens_after: u64) {
        let saved = if tokens_before == 0 {
            0.0
        } else {
            tokens_before.saturating_sub(tokens_after) as f64 / tokens_before as f64
        };
        self.recent_savings.push_back(saved);
        while self.recent_savings.len() > 2 {
            self.recent_savings.pop_front();
        }
    }

    /// Estimated tokens of `messages`.
    pub fn estimate(&self, messages: &[Message]) -> u64 {
        self.estimator.estimate_messages(messages)
    }

    /// Plans a compression of `history` (which should already be repaired, so that tool
    /// results follow their calls). The tail is limited to `tail_budget_tokens`. Returns
    /// `None` when the middle would be empty (nothing to summarize).
    pub fn plan(&self, history: &[Message], tail_budget_tokens: u64) -> Option<CompressionPlan> {
        let cut = split(
            history,
            self.config.protect_first_n,
            self.config.protect_last_n,
            tail_budget_tokens,
            &self.estimator,
        );
        if cut.tail_start <= cut.head_end {
            return None;
        }
        let pruned = |range: &[Message]| -> Vec<Message> {
            range.iter().cloned().map(|m| self.shrink(m)).collect()
        };
        let middle = pruned(&history[cut.head_end..cut.tail_start]);
        let previous_summary = middle.iter().rev().find_map(summary_body);
        Some(CompressionPlan {
            head: pruned(&history[..cut.head_end]),
            middle,
            tail: history[cut.tail_start..].to_vec(),
            previous_summary,
            tokens_before: self.estimator.estimate_messages(history),
            transcript_message_chars: self.config.transcript_message_chars,
            transcript_max_chars: self.config.transcript_max_chars,
        })
    }

    /// The deterministic fallback when no summary can be written (case C17): every message
    /// stays, in order; only tool outputs and tool-call arguments before the protected tail
    /// are shortened (their full text stays in the store).
    pub fn prune_only(&self, history: &[Message], tail_budget_tokens: u64) -> Vec<Message> {
        let cut = split(
            history,
            self.config.protect_first_n,
            self.config.protect_last_n,
            tail_budget_tokens,
            &self.estimator,
        );
        history
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if i < cut.tail_start {
                    self.shrink(m.clone())
                } else {
                    m.clone()
                }
            })
            .collect()
    }

    fn shrink(&self, mut m: Message) -> Message {
        prune_tool_output(&mut m, self.config.prune_keep_chars);
        shrink_tool_call_arguments(&mut m, self.config.arg_leaf_chars);
        m
    }
}

/// The summary text of a message written by [`CompressionPlan::apply`], without its header.
pub fn summary_body(message: &Message) -> Option<String> {
    let text = message.text();
    let rest = text.strip_prefix(SUMMARY_HEADER.trim())?;
    Some(rest.trim().to_string())
}

fn cap_chars(text: &str, cap: usize) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text.to_string();
    }
    let head: String = text.chars().take(cap / 2).collect();
    let tail: String = text.chars().skip(total - cap / 2).collect();
    format!("{head}\n[… {} characters …]\n{tail}", total - 2 * (cap / 2))
}

fn render_transcript(middle: &[Message], cap: usize, redact: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    for m in middle {
        let label = match m.role {
            Role::System => "system".to_string(),
            Role::User => "user".to_string(),
            Role::Assistant => "assistant".to_string(),
            Role::Tool => format!("tool result ({})", m.tool_name.as_deref().unwrap_or("?")),
        };
        out.push_str(&format!("[{label}]\n"));
        let text = m.text();
        if !text.trim().is_empty() {
            out.push_str(&redact(&cap_chars(&text, cap)));
            out.push('\n');
        }
        for call in &m.tool_calls {
            let args = shrink_json_arguments(&call.arguments, cap.min(500))
                .unwrap_or_else(|| call.arguments.clone());
            out.push_str(&format!(
                "→ calls {}({})\n",
                call.name,
                redact(&cap_chars(&args, cap))
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
