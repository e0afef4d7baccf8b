//! `hermes debug session <id> [--show-tokens] [--json]`: a session as the store keeps it.
//!
//! What the store keeps and what it does not (so nothing here is invented): every message
//! with its role, commit time (milliseconds), tool calls, tool result name and finish
//! reason; the session's system prompt; usage per model (`session_model_usage`). It keeps no
//! tool durations, no per-call request sizes and no failed model calls: tool timings are the
//! time from the assistant message that asked for a call to its result's commit (an upper
//! bound that includes the calls run before it), request sizes are estimated from the stored
//! system prompt and the active messages before each reply, and retries and errors come from
//! the WARN/ERROR lines of `HERMES_HOME/logs/errors.log` (and its rotated backups) that name
//! the session, or name no session and were logged while it ran.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use hermes_context::TokenEstimator;
use hermes_protocol::{Message, Role};
use hermes_store::{SessionRecord, StoredMessage};

use super::table::{Align, render};
use crate::assembly::app::App;

/// Characters of a message preview (after redaction).
const PREVIEW_CHARS: usize = 60;
/// Log lines shown at most (the newest).
const LOG_LINES_MAX: usize = 50;

/// One stored message as shown.
struct MessageRow {
    /// 1-based position in the session (all messages, inactive ones included).
    index: usize,
    id: i64,
    time: chrono::DateTime<chrono::Utc>,
    role: &'static str,
    active: bool,
    tool_calls: Vec<String>,
    tool_name: Option<String>,
    tool_call_id: Option<String>,
    finish_reason: Option<String>,
    preview: String,
    bytes: usize,
    tokens: u64,
}

/// One model call, reconstructed from a stored assistant message.
struct CallRow {
    /// 1-based call number among the active assistant messages.
    call: usize,
    /// [`MessageRow::index`] of the reply.
    message: usize,
    time: chrono::DateTime<chrono::Utc>,
    /// Messages sent besides the system prompt.
    request_messages: usize,
    request_bytes: usize,
    request_tokens: u64,
    reply_tokens: u64,
    finish_reason: Option<String>,
}

/// One tool call with its stored result.
struct ToolRow {
    name: String,
    call_id: String,
    called_in: usize,
    result_in: usize,
    elapsed_ms: i64,
}

/// One log line about the session.
struct LogEvent {
    kind: &'static str,
    /// `"session id"` or `"by time"` (see [`log_events`]).
    matched: &'static str,
    level: String,
    line: String,
}

/// The role's name as stored.
fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::System => "system",
    }
}

/// `text` redacted (the terminal's masking: the home's secrets and secret-looking tokens),
/// then on one line and cut to `max` characters. Redacting before cutting keeps a secret
/// from surviving as a prefix too short to be recognised.
fn preview(text: &str, max: usize) -> String {
    let masked = crate::masking::mask(text);
    let one_line = masked.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = one_line.chars().take(max).collect();
    if one_line.chars().count() > max {
        out.push('…');
    }
    out
}

/// Bytes of a message as hermes stores and sends it (its JSON text).
fn message_bytes(message: &Message) -> usize {
    serde_json::to_string(message).map(|s| s.len()).unwrap_or(0)
}

fn message_rows(messages: &[StoredMessage], estimator: &TokenEstimator) -> Vec<MessageRow> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let msg = &m.message;
            let text = msg.text();
            let shown = if !text.trim().is_empty() {
                text
            } else if let Some(call) = msg.tool_calls.first() {
                format!("{}({})", call.name, call.arguments)
            } else if msg.reasoning.is_some() {
                "(reasoning only)".to_string()
            } else {
                String::new()
            };
            MessageRow {
                index: i + 1,
                id: m.id,
                time: m.timestamp,
                role: role_name(msg.role),
                active: m.active,
                tool_calls: msg.tool_calls.iter().map(|c| c.name.clone()).collect(),
                tool_name: msg.tool_name.clone(),
                tool_call_id: msg.tool_call_id.clone(),
                finish_reason: msg.finish_reason.as_ref().map(|f| f.as_str().to_string()),
                preview: preview(&shown, PREVIEW_CHARS),
                bytes: message_bytes(msg),
                tokens: estimator.estimate_message(msg),
            }
        })
        .collect()
}

/// The model calls: one per active assistant message, its request being the stored system
/// prompt and the active messages before it (what the agent sent, tool schemas aside).
fn call_rows(
    system: &str,
    messages: &[StoredMessage],
    rows: &[MessageRow],
    estimator: &TokenEstimator,
) -> Vec<CallRow> {
    let active: Vec<(usize, &Message)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.active)
        .map(|(i, m)| (i, &m.message))
        .collect();
    let sent: Vec<Message> = active.iter().map(|(_, m)| (*m).clone()).collect();
    let mut calls = Vec::new();
    let mut bytes = system.len();
    for (j, (i, msg)) in active.iter().enumerate() {
        if msg.role == Role::Assistant {
            calls.push(CallRow {
                call: calls.len() + 1,
                message: rows[*i].index,
                time: rows[*i].time,
                request_messages: j,
                request_bytes: bytes,
                request_tokens: estimator.estimate_request(system, &sent[..j], &[]),
                reply_tokens: rows[*i].tokens,
                finish_reason: rows[*i].finish_reason.clone(),
            });
        }
        bytes += rows[*i].bytes;
    }
    calls
}

/// Each tool result paired with the assistant message that asked for it.
fn tool_rows(rows: &[MessageRow], messages: &[StoredMessage]) -> Vec<ToolRow> {
    let mut asked: HashMap<&str, (usize, chrono::DateTime<chrono::Utc>, &str)> = HashMap::new();
    let mut out = Vec::new();
    for (row, m) in rows.iter().zip(messages) {
        for call in &m.message.tool_calls {
            asked.insert(call.id.as_str(), (row.index, row.time, call.name.as_str()));
        }
        if let Some(id) = &row.tool_call_id
            && let Some((called_in, at, name)) = asked.get(id.as_str())
        {
            out.push(ToolRow {
                name: row.tool_name.clone().unwrap_or_else(|| name.to_string()),
                call_id: id.clone(),
                called_in: *called_in,
                result_in: row.index,
                elapsed_ms: (row.time - *at).num_milliseconds(),
            });
        }
    }
    out
}

/// `errors.log` and its rotated backups, oldest first.
fn error_logs(dir: &Path) -> Vec<PathBuf> {
    let base = crate::logfile::ERRORS_LOG;
    let mut files: Vec<PathBuf> = (1..=crate::logfile::BACKUPS)
        .rev()
        .map(|n| dir.join(format!("{base}.{n}")))
        .collect();
    files.push(dir.join(base));
    files.retain(|p| p.is_file());
    files
}

/// Seconds after a session's last stored message in which an unattributed log line is still
/// taken as the session's (a turn that failed after storing the user message logs then).
const LOG_WINDOW_AFTER_SECS: i64 = 60;

/// The WARN/ERROR lines of the logs about the session, the newest [`LOG_LINES_MAX`], each
/// classed as a retry or an error/warning: the lines that name `session_id` (a turn's span
/// carries it), and the lines naming no session whose time falls within `window` (marked
/// `by time`: not every model call logs inside its turn's span, and another process's
/// session running at the same time cannot be told apart from this one's).
fn log_events(
    files: &[PathBuf],
    session_id: &str,
    window: (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
) -> Vec<LogEvent> {
    let mut events: Vec<LogEvent> = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let at = words
                .next()
                .and_then(|w| chrono::DateTime::parse_from_rfc3339(w).ok())
                .map(|t| t.to_utc());
            let level = words.next().unwrap_or("").to_string();
            let matched = if line.contains(session_id) {
                "session id"
            } else if !line.contains("session=")
                && !line.contains("session_id=")
                && at.is_some_and(|t| t >= window.0 && t <= window.1)
            {
                "by time"
            } else {
                continue;
            };
            let kind = if line.to_ascii_lowercase().contains("retrying") {
                "retry"
            } else if level == "ERROR" {
                "error"
            } else {
                "warning"
            };
            events.push(LogEvent {
                kind,
                matched,
                level,
                line: crate::masking::mask(line),
            });
        }
    }
    let skip = events.len().saturating_sub(LOG_LINES_MAX);
    events.drain(..skip);
    events
}

fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.with_timezone(&chrono::Local)
        .format("%H:%M:%S%.3f")
        .to_string()
}

fn cost(c: Option<f64>) -> String {
    c.map(|c| format!("${c:.4}"))
        .unwrap_or_else(|| "—".to_string())
}

/// Runs `hermes debug session`; returns the exit code.
pub(super) fn run(profile: Option<&str>, key: &str, show_tokens: bool, json: bool) -> Result<i32> {
    let app = App::load(profile)?;
    let store = app.open_store()?;
    let Some(record) = store.find_session(key)? else {
        errln!("error: no session matches `{key}`");
        return Ok(1);
    };
    // Tolerant: a row another program wrote wrong is named, and the rest still shown.
    let mut messages = Vec::new();
    let mut unreadable = Vec::new();
    for row in store.load_all_messages_tolerant(&record.id)? {
        match row {
            Ok(m) => messages.push(m),
            Err(e) => unreadable.push(UnreadableRow::from(e)),
        }
    }
    let usage = store.usage_by_model(&record.id)?;
    let estimator = TokenEstimator::new();
    let rows = message_rows(&messages, &estimator);
    let calls = call_rows(&record.system_prompt, &messages, &rows, &estimator);
    let tools = tool_rows(&rows, &messages);
    let files = error_logs(&app.home.logs_dir());
    let last = messages
        .iter()
        .map(|m| m.timestamp)
        .chain(record.ended_at)
        .max()
        .unwrap_or(record.started_at);
    let window = (
        record.started_at - chrono::Duration::seconds(1),
        last + chrono::Duration::seconds(LOG_WINDOW_AFTER_SECS),
    );
    let events = log_events(&files, &record.id, window);
    let view = View {
        record: &record,
        rows: &rows,
        calls: &calls,
        tools: &tools,
        events: &events,
        log_files: &files,
        usage: &usage,
        unreadable: &unreadable,
        show_tokens,
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&view.json())?);
    } else {
        // Stored text is anyone's (a chat user's message, a model's reply or tool name, a
        // tool's output, a log line): its escape sequences are shown, not obeyed.
        outln!(
            "{}",
            crate::render::style::visible_controls(&view.text(), "")
        );
    }
    Ok(0)
}

/// Everything gathered about one session.
struct View<'a> {
    record: &'a SessionRecord,
    rows: &'a [MessageRow],
    calls: &'a [CallRow],
    tools: &'a [ToolRow],
    events: &'a [LogEvent],
    log_files: &'a [PathBuf],
    usage: &'a [hermes_store::ModelUsage],
    unreadable: &'a [UnreadableRow],
    show_tokens: bool,
}

/// A stored message row that cannot be decoded (its JSON columns broken, by another program
/// or by hand): shown with the reason instead of failing the whole command.
struct UnreadableRow {
    /// The message row id, when the error names one.
    id: Option<i64>,
    /// The column that failed to decode (`tool_calls`, `content_json`, …).
    column: Option<&'static str>,
    /// Why.
    detail: String,
}

impl From<hermes_store::StoreError> for UnreadableRow {
    fn from(e: hermes_store::StoreError) -> Self {
        match e {
            hermes_store::StoreError::Corrupt {
                what,
                message_id,
                detail,
                ..
            } => UnreadableRow {
                id: Some(message_id),
                column: Some(what),
                detail,
            },
            other => UnreadableRow {
                id: None,
                column: None,
                detail: other.to_string(),
            },
        }
    }
}

/// The note on tool timings, in both outputs.
const TOOL_TIMING_NOTE: &str = "tool durations are not stored; elapsed is the time from the \
    assistant message that asked for the call to its result being stored";
/// The note on request sizes, in both outputs.
const REQUEST_NOTE: &str = "estimated from the stored system prompt and the active messages \
    before each reply; tool schemas are not stored (see `hermes debug prompt`)";

impl View<'_> {
    fn json(&self) -> serde_json::Value {
        use serde_json::json;
        let r = self.record;
        let estimator = TokenEstimator::new();
        let messages: Vec<_> = self
            .rows
            .iter()
            .map(|m| {
                let mut v = json!({
                    "index": m.index,
                    "id": m.id,
                    "time": m.time.to_rfc3339(),
                    "role": m.role,
                    "active": m.active,
                    "tool_calls": m.tool_calls,
                    "tool_name": m.tool_name,
                    "tool_call_id": m.tool_call_id,
                    "finish_reason": m.finish_reason,
                    "preview": m.preview,
                    "bytes": m.bytes,
                });
                if self.show_tokens {
                    v["tokens"] = json!(m.tokens);
                }
                v
            })
            .collect();
        let calls: Vec<_> = self
            .calls
            .iter()
            .map(|c| {
                json!({
                    "call": c.call,
                    "message_index": c.message,
                    "time": c.time.to_rfc3339(),
                    "request_messages": c.request_messages,
                    "request_bytes": c.request_bytes,
                    "request_tokens": c.request_tokens,
                    "reply_tokens": c.reply_tokens,
                    "finish_reason": c.finish_reason,
                })
            })
            .collect();
        let tools: Vec<_> = self
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "call_id": t.call_id,
                    "called_in": t.called_in,
                    "result_in": t.result_in,
                    "elapsed_ms": t.elapsed_ms,
                })
            })
            .collect();
        let usage: Vec<_> = self
            .usage
            .iter()
            .map(|u| {
                json!({
                    "model": u.model,
                    "provider": u.provider,
                    "calls": u.calls,
                    "input_tokens": u.usage.input_tokens,
                    "output_tokens": u.usage.output_tokens,
                    "cache_read_tokens": u.usage.cache_read_tokens,
                    "cache_write_tokens": u.usage.cache_write_tokens,
                    "reasoning_tokens": u.usage.reasoning_tokens,
                    "cost_usd": u.cost_usd,
                })
            })
            .collect();
        json!({
            "session": {
                "id": r.id,
                "title": r.title,
                "source": r.source,
                "model": r.model,
                "provider": r.provider,
                "started_at": r.started_at.to_rfc3339(),
                "ended_at": r.ended_at.map(|t| t.to_rfc3339()),
                "end_reason": r.end_reason,
                "parent_session_id": r.parent_session_id,
                "system_prompt": {
                    "bytes": r.system_prompt.len(),
                    "tokens": estimator.estimate_text(&r.system_prompt),
                },
                "totals": {
                    "input_tokens": r.input_tokens,
                    "output_tokens": r.output_tokens,
                    "cache_read_tokens": r.cache_read_tokens,
                    "cache_write_tokens": r.cache_write_tokens,
                    "reasoning_tokens": r.reasoning_tokens,
                    "cost_usd": r.cost_usd,
                },
            },
            "messages": messages,
            "model_calls": {"note": REQUEST_NOTE, "calls": calls},
            "tool_timings": {"stored": false, "note": TOOL_TIMING_NOTE, "calls": tools},
            "log_events": {
                "files": self.log_files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "events": self.events.iter().map(|e| json!({"kind": e.kind, "matched": e.matched, "level": e.level, "line": e.line})).collect::<Vec<_>>(),
            },
            "usage_by_model": usage,
            "unreadable_messages": self.unreadable.iter().map(|u| json!({"id": u.id, "column": u.column, "detail": u.detail})).collect::<Vec<_>>(),
        })
    }

    fn text(&self) -> String {
        let r = self.record;
        let estimator = TokenEstimator::new();
        let mut out: Vec<String> = Vec::new();
        out.push(crate::views::sessions::session_line(r));
        let provider = if r.provider.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.provider)
        };
        out.push(format!(
            "model: {}{provider}   system prompt: {} bytes, {} tokens",
            r.model,
            r.system_prompt.len(),
            estimator.estimate_text(&r.system_prompt)
        ));
        if let Some(parent) = &r.parent_session_id {
            out.push(format!("parent session: {parent}"));
        }
        let inactive = self.rows.iter().filter(|m| !m.active).count();
        out.push(format!(
            "{} messages ({} inactive: undone, retried or compressed away); tokens are estimates (~4 chars each)",
            self.rows.len(),
            inactive
        ));

        out.push(String::new());
        out.push("Messages".to_string());
        let mut header = vec![
            ("#", Align::Right),
            ("time", Align::Left),
            ("role", Align::Left),
        ];
        if self.show_tokens {
            header.push(("tokens", Align::Right));
        }
        header.extend([("tools", Align::Left), ("preview", Align::Left)]);
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|m| {
                let mut role = m.role.to_string();
                if !m.active {
                    role.push_str(" (inactive)");
                }
                let mut tools = if !m.tool_calls.is_empty() {
                    format!("→ {}", m.tool_calls.join(", "))
                } else if let Some(name) = &m.tool_name {
                    format!("← {name}")
                } else {
                    String::new()
                };
                if let Some(f) = &m.finish_reason
                    && !matches!(f.as_str(), "stop" | "tool_calls")
                {
                    tools = format!("{tools} [{f}]").trim().to_string();
                }
                let mut row = vec![m.index.to_string(), time(m.time), role];
                if self.show_tokens {
                    row.push(m.tokens.to_string());
                }
                row.extend([tools, m.preview.clone()]);
                row
            })
            .collect();
        if self.rows.is_empty() {
            out.push("  no messages stored".to_string());
        } else {
            out.push(render(&header, &rows, 2));
        }
        if self.show_tokens {
            let total: u64 = self.rows.iter().map(|m| m.tokens).sum();
            out.push(format!("  messages total: {total} tokens"));
        }
        if !self.unreadable.is_empty() {
            out.push(format!(
                "  {} stored row(s) cannot be read and are not shown above:",
                self.unreadable.len()
            ));
            for u in self.unreadable {
                let id = u.id.map_or_else(|| "?".to_string(), |id| id.to_string());
                let column = u.column.map(|c| format!(" ({c})")).unwrap_or_default();
                out.push(format!("    message {id}{column}: {}", u.detail));
            }
        }

        out.push(String::new());
        out.push(format!("Model calls — {REQUEST_NOTE}"));
        if self.calls.is_empty() {
            out.push("  no assistant message stored".to_string());
        } else {
            let rows: Vec<Vec<String>> = self
                .calls
                .iter()
                .map(|c| {
                    vec![
                        c.call.to_string(),
                        c.message.to_string(),
                        time(c.time),
                        c.request_messages.to_string(),
                        c.request_bytes.to_string(),
                        c.request_tokens.to_string(),
                        c.reply_tokens.to_string(),
                        c.finish_reason.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            out.push(render(
                &[
                    ("call", Align::Right),
                    ("msg", Align::Right),
                    ("time", Align::Left),
                    ("messages", Align::Right),
                    ("bytes", Align::Right),
                    ("tokens", Align::Right),
                    ("reply tokens", Align::Right),
                    ("finish", Align::Left),
                ],
                &rows,
                2,
            ));
        }

        out.push(String::new());
        out.push(format!("Tool timings — {TOOL_TIMING_NOTE}"));
        if self.tools.is_empty() {
            out.push("  no tool calls".to_string());
        } else {
            let rows: Vec<Vec<String>> = self
                .tools
                .iter()
                .map(|t| {
                    vec![
                        t.name.clone(),
                        format!("#{}", t.called_in),
                        format!("#{}", t.result_in),
                        format!("{:.3}s", t.elapsed_ms as f64 / 1000.0),
                    ]
                })
                .collect();
            out.push(render(
                &[
                    ("tool", Align::Left),
                    ("called", Align::Right),
                    ("result", Align::Right),
                    ("elapsed", Align::Right),
                ],
                &rows,
                2,
            ));
        }

        out.push(String::new());
        out.push(
            "Retries and errors — failed calls are not stored; WARN/ERROR lines of errors.log naming this session, or naming none and logged while it ran"
                .to_string(),
        );
        if self.log_files.is_empty() {
            out.push("  no errors.log in the logs folder".to_string());
        } else if self.events.is_empty() {
            out.push("  none recorded".to_string());
        }
        for e in self.events {
            let by_time = if e.matched == "by time" {
                " (by time)"
            } else {
                ""
            };
            out.push(format!("  {}{by_time}: {}", e.kind, e.line));
        }

        out.push(String::new());
        out.push("Usage by model — as the provider reported it".to_string());
        if self.usage.is_empty() {
            out.push("  none recorded".to_string());
        } else {
            let rows: Vec<Vec<String>> = self
                .usage
                .iter()
                .map(|u| {
                    vec![
                        u.model.clone(),
                        u.provider.clone(),
                        u.calls.to_string(),
                        u.usage.input_tokens.to_string(),
                        u.usage.output_tokens.to_string(),
                        u.usage.cache_read_tokens.to_string(),
                        u.usage.cache_write_tokens.to_string(),
                        u.usage.reasoning_tokens.to_string(),
                        cost(u.cost_usd),
                    ]
                })
                .collect();
            out.push(render(
                &[
                    ("model", Align::Left),
                    ("provider", Align::Left),
                    ("calls", Align::Right),
                    ("input", Align::Right),
                    ("output", Align::Right),
                    ("cache read", Align::Right),
                    ("cache write", Align::Right),
                    ("reasoning", Align::Right),
                    ("cost", Align::Right),
                ],
                &rows,
                2,
            ));
        }
        out.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_redacted_before_they_are_cut() {
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        let shown = preview(&format!("my key is {key} ok"), 20);
        assert!(!shown.contains("abcdefghijklmnop"), "{shown}");
        assert!(shown.chars().count() <= 21, "{shown}");
        assert_eq!(preview("a\n  b", 10), "a b");
    }
}
