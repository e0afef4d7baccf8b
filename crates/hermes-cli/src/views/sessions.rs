//! Session rows and token totals (`hermes sessions list`, `/sessions`, `/resume`, `/usage`,
//! the summary line after `chat -q`).

use anyhow::Result;
use hermes_store::{SessionRecord, SessionStore, StoredMessage};
use unicode_width::UnicodeWidthStr;

/// Characters of a title shown in lists.
const TITLE_CHARS: usize = 60;

/// What a list shows as a session's title: its title, else the start of its first message;
/// on one line, control characters in caret notation.
pub fn shown_title(s: &SessionRecord) -> String {
    let title = s
        .title
        .clone()
        .or_else(|| s.preview.clone())
        .unwrap_or_else(|| "—".to_string());
    let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut short: String = one_line.chars().take(TITLE_CHARS).collect();
    if one_line.chars().count() > TITLE_CHARS {
        short.push('…');
    }
    // A stored title is anyone's text (a gateway user's first message, Python's `/title`):
    // its escape sequences are shown, never sent to the terminal.
    crate::render::style::visible_controls(&short, "")
}

/// One line describing a session (`hermes sessions show`).
pub fn session_line(s: &SessionRecord) -> String {
    format!(
        "{}  {}  {}  {} msgs  {}",
        s.id,
        s.started_at
            .with_timezone(&chrono::Local)
            .format("%Y-%m-%d %H:%M"),
        s.source,
        s.message_count,
        shown_title(s)
    )
}

/// Sessions as an aligned table (issue 20 item 6): a header, then one row per session with
/// its id, start time, source (`cli`, `cron`, `api_server`, a platform), message count and
/// title; every column as wide as its widest cell, so ids of any length line up. With
/// `numbered`, rows start with `1.`, `2.`, … (the `/resume` picker).
pub fn sessions_table(sessions: &[SessionRecord], numbered: bool) -> String {
    let rows: Vec<[String; 5]> = sessions
        .iter()
        .map(|s| {
            [
                s.id.clone(),
                s.started_at
                    .with_timezone(&chrono::Local)
                    .format("%Y-%m-%d %H:%M")
                    .to_string(),
                s.source.clone(),
                s.message_count.to_string(),
                shown_title(s),
            ]
        })
        .collect();
    let header = ["ID", "Started", "Source", "Msgs", "Title"];
    let mut widths = header.map(UnicodeWidthStr::width);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let num_width = rows.len().to_string().len() + 2;
    let line = |cells: [&str; 5], num: Option<usize>| {
        let mut out = String::new();
        if numbered {
            let n = num.map(|n| format!("{n}.")).unwrap_or_default();
            out.push_str(&format!("{n:<num_width$}"));
        }
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.width());
            if i == 3 {
                // Counts are right-aligned.
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                if i + 1 < cells.len() {
                    out.push_str(&" ".repeat(pad));
                }
            }
            if i + 1 < cells.len() {
                out.push_str("  ");
            }
        }
        out.trim_end().to_string()
    };
    let mut out = vec![line(header, None)];
    for (i, row) in rows.iter().enumerate() {
        out.push(line(
            [
                row[0].as_str(),
                row[1].as_str(),
                row[2].as_str(),
                row[3].as_str(),
                row[4].as_str(),
            ],
            Some(i + 1),
        ));
    }
    out.join("\n")
}

/// The newest `limit` sessions (optionally only from `source`) as a table, or a line saying
/// there are none.
pub fn recent_sessions_text(
    store: &SessionStore,
    limit: usize,
    source: Option<&str>,
) -> Result<String> {
    let sessions = recent_sessions(store, limit, source)?;
    if sessions.is_empty() {
        return Ok(match source {
            Some(s) => format!("no sessions from `{s}` yet"),
            None => "no sessions yet".to_string(),
        });
    }
    Ok(sessions_table(&sessions, false))
}

/// The newest `limit` sessions, optionally only those from `source`.
pub fn recent_sessions(
    store: &SessionStore,
    limit: usize,
    source: Option<&str>,
) -> Result<Vec<SessionRecord>> {
    let Some(source) = source else {
        return Ok(store.list_sessions(limit, 0)?);
    };
    // Filtered page by page, so a rare source still fills the list.
    let mut out = Vec::new();
    let page = 200;
    let mut offset = 0;
    loop {
        let batch = store.list_sessions(page, offset)?;
        let done = batch.len() < page;
        out.extend(batch.into_iter().filter(|s| s.source == source));
        if done || out.len() >= limit {
            break;
        }
        offset += page;
    }
    out.truncate(limit);
    Ok(out)
}

/// `text` on one line, at most `max` characters (`…` when cut).
fn short(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = one_line.chars().take(max).collect();
    if one_line.chars().count() > max {
        out.push('…');
    }
    out
}

/// The user and assistant messages of the active history with text, as (role label, text).
fn exchanges(store: &SessionStore, session_id: &str) -> Result<Vec<(&'static str, String)>> {
    Ok(store
        .load_messages(session_id)?
        .into_iter()
        .filter_map(|m| {
            let who = match m.message.role {
                hermes_protocol::Role::User => "you",
                hermes_protocol::Role::Assistant => "hermes",
                _ => return None,
            };
            let text = m.message.text();
            (!text.trim().is_empty()).then_some((who, text))
        })
        .collect())
}

/// Characters of a user message shown in [`turn_traces_text`].
const TURN_TEXT_CHARS: usize = 40;

/// `hermes sessions show <id> --traces` (issue 24 §1): one line per turn of the active
/// history — a user message and what followed it until the next one — with the local time
/// of the user message, its first words (at most 40 characters) and the trace id(s) the
/// turn's messages were stored with, so a turn can be found in the trace backend. A turn
/// stored without one shows `—`, and one closing line says why, once.
pub fn turn_traces_text(messages: &[StoredMessage]) -> String {
    struct Turn<'a> {
        first: &'a StoredMessage,
        trace_ids: Vec<&'a str>,
    }
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for m in messages {
        if m.message.role == hermes_protocol::Role::User {
            turns.push(Turn {
                first: m,
                trace_ids: Vec::new(),
            });
        }
        let (Some(turn), Some(id)) = (turns.last_mut(), m.trace_id.as_deref()) else {
            continue;
        };
        if !turn.trace_ids.contains(&id) {
            turn.trace_ids.push(id);
        }
    }
    if turns.is_empty() {
        return "no turns in this session yet".to_string();
    }
    let rows: Vec<(String, String, String)> = turns
        .iter()
        .map(|t| {
            let text = match short(&t.first.message.text(), TURN_TEXT_CHARS) {
                empty if empty.is_empty() => "(no text)".to_string(),
                text => text,
            };
            let ids = if t.trace_ids.is_empty() {
                "—".to_string()
            } else {
                t.trace_ids.join(", ")
            };
            (
                t.first
                    .timestamp
                    .with_timezone(&chrono::Local)
                    .format("%Y-%m-%d %H:%M:%S")
                    .to_string(),
                text,
                ids,
            )
        })
        .collect();
    let width = rows
        .iter()
        .map(|r| r.1.width())
        .max()
        .unwrap_or(0)
        .max("Message".len());
    let pad = |s: &str| format!("{s}{}", " ".repeat(width.saturating_sub(s.width())));
    let mut out = vec![format!("{:<19}  {}  Trace id", "Time", pad("Message"))];
    for (time, text, ids) in &rows {
        out.push(format!("{time}  {}  {ids}", pad(text)));
    }
    let untraced = turns.iter().filter(|t| t.trace_ids.is_empty()).count();
    if untraced == turns.len() {
        out.push(
            "no trace ids: trace export was off for these turns (set observability.otlp.endpoint \
             or OTEL_EXPORTER_OTLP_ENDPOINT to export and store them)"
                .to_string(),
        );
    } else if untraced > 0 {
        out.push(format!(
            "—: {untraced} of {} turns have no trace id (trace export was off when they ran, \
             or Python Hermes ran them)",
            turns.len()
        ));
    }
    out.join("\n")
}

/// `/history`: the conversation so far, one short paragraph per message.
pub fn history_text(store: &SessionStore, session_id: &str) -> String {
    match exchanges(store, session_id) {
        Ok(list) if list.is_empty() => "nothing said in this session yet".to_string(),
        Ok(list) => list
            .iter()
            .map(|(who, text)| format!("{who}: {}", short(text, 400)))
            .collect::<Vec<_>>()
            .join("\n\n"),
        Err(e) => format!("could not read the session: {e:#}"),
    }
}

/// After `/resume`: the title and the last `exchanges` user/assistant pairs, shortened, so
/// the user sees where the conversation was.
pub fn recap_text(store: &SessionStore, session_id: &str, last: usize) -> String {
    let Ok(list) = exchanges(store, session_id) else {
        return String::new();
    };
    let mut lines = Vec::new();
    if let Ok(Some(s)) = store.get_session(session_id) {
        lines.push(format!("── {} ──", shown_title(&s)));
    }
    let users = list.iter().filter(|(w, _)| *w == "you").count();
    let skip_users = users.saturating_sub(last);
    let mut seen = 0;
    for (who, text) in &list {
        if *who == "you" {
            seen += 1;
        }
        if seen > skip_users {
            lines.push(format!("{who}: {}", short(text, 200)));
        }
    }
    lines.join("\n")
}

/// `/usage` and the summary after `chat -q`: token totals of a session as stored.
pub fn usage_text(store: &SessionStore, session_id: &str) -> String {
    match store.get_session(session_id) {
        Ok(Some(s)) => format!(
            "session {}: {} input, {} output, {} cache read, {} cache write, {} reasoning tokens; {} messages; cost {}",
            s.id,
            s.input_tokens,
            s.output_tokens,
            s.cache_read_tokens,
            s.cache_write_tokens,
            s.reasoning_tokens,
            s.message_count,
            hermes_llm::pricing::format_provider_cost(&s.provider, s.cost_usd)
        ),
        Ok(None) => format!("session {session_id}: nothing sent yet"),
        Err(e) => format!("could not read usage: {e}"),
    }
}

/// The title the first message of a session gets (the agent's rule: its first non-empty
/// line, up to 60 characters), from the user's own text — used when the message sent was a
/// skill preface around that text (`-s`, `/<skill>`; issue 20 item 6).
pub fn title_from_text(text: &str) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?.trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    Some(title)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn record(id: &str, source: &str, msgs: u64, title: Option<&str>) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            source: source.into(),
            session_key: None,
            title: title.map(str::to_string),
            model: "m".into(),
            provider: "p".into(),
            system_prompt: String::new(),
            parent_session_id: None,
            started_at: chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap(),
            ended_at: None,
            end_reason: None,
            message_count: msgs,
            tool_call_count: 0,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
            cost_usd: None,
            cwd: None,
            history_version: 0,
            preview: None,
        }
    }

    fn stored(id: i64, message: hermes_protocol::Message, trace: Option<&str>) -> StoredMessage {
        StoredMessage {
            id,
            message,
            timestamp: chrono::DateTime::from_timestamp(1_767_225_600 + id, 0).unwrap(),
            active: true,
            trace_id: trace.map(str::to_string),
        }
    }

    #[test]
    fn turns_are_listed_with_their_trace_ids_and_a_missing_one_is_explained_once() {
        use hermes_protocol::Message;
        let a = "4bf92f3577b34da6a3ce929d0e0e4736";
        let b = "0af7651916cd43dd8448eb211c80319c";
        let messages = [
            stored(
                1,
                Message::user("What is the capital of France, and why is it Paris and not Lyon?"),
                Some(a),
            ),
            stored(2, Message::tool("c1", "read_file", "x"), Some(a)),
            stored(3, Message::assistant("Paris."), Some(a)),
            stored(4, Message::user("thanks"), None),
            stored(5, Message::assistant("welcome"), None),
            stored(6, Message::user("again"), Some(a)),
            // The turn went on in a later process (a redelivered message): both ids.
            stored(7, Message::assistant("done"), Some(b)),
        ];
        let text = turn_traces_text(&messages);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[0].starts_with("Time "), "{text}");
        assert!(
            lines[1].contains("What is the capital of France, and why i…"),
            "{text}"
        );
        assert!(lines[1].ends_with(a), "{text}");
        assert!(
            lines[2].contains("thanks") && lines[2].ends_with('—'),
            "{text}"
        );
        assert!(lines[3].ends_with(&format!("{a}, {b}")), "{text}");
        assert!(
            lines[4].starts_with("—: 1 of 3 turns have no trace id"),
            "{text}"
        );
        // Trace ids start in one column (counted in characters: `…` and `—` are one each).
        let col = |line: &str, what: &str| line[..line.find(what).unwrap()].chars().count();
        assert_eq!(col(lines[1], a), col(lines[3], a), "{text}");
        assert_eq!(col(lines[0], "Trace id"), col(lines[1], a), "{text}");
        assert_eq!(col(lines[2], "—"), col(lines[1], a), "{text}");

        let off = turn_traces_text(&[stored(1, Message::user("hi"), None)]);
        assert_eq!(
            off.matches("no trace ids: trace export was off").count(),
            1,
            "{off}"
        );
        assert!(!off.contains("—:"), "{off}");
        assert_eq!(turn_traces_text(&[]), "no turns in this session yet");
    }

    #[test]
    fn columns_line_up_whatever_the_id_length() {
        let table = sessions_table(
            &[
                record("20260101_000000_abcdef", "cli", 4, Some("hello there")),
                record("short", "telegram", 120, None),
            ],
            false,
        );
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("ID "), "{table}");
        let col = |l: &str, word: &str| l.find(word).unwrap();
        let source_col = col(lines[0], "Source");
        assert_eq!(col(lines[1], "cli"), source_col, "{table}");
        assert_eq!(col(lines[2], "telegram"), source_col, "{table}");
        // Message counts end in the same column.
        let msgs_end = col(lines[0], "Msgs") + "Msgs".len();
        assert_eq!(col(lines[1], " 4 ") + 2, msgs_end, "{table}");
        assert_eq!(col(lines[2], "120") + 3, msgs_end, "{table}");
        assert!(lines[2].ends_with('—'), "{table}");
    }
}
