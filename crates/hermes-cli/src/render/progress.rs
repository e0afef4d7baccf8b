//! Progress lines (issue 9 item 4): the spinner shown while waiting, one line per tool call
//! and the agent's status messages (retries, compression, fallbacks, warnings), drawn with
//! the skin's colors, symbols and tool-line format.

use super::style::{Line, Span, Style, line_width, truncate, width, wrap};
use crate::render::skin::Skin;

/// `display.tool_progress` (Hermes key and values): which tool calls get a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolProgress {
    /// No tool lines.
    Off,
    /// A line only when the tool differs from the previous call's tool in this turn.
    New,
    /// A line for every call (the default).
    #[default]
    All,
    /// Every call with its whole argument preview, its result preview and the tool's own
    /// progress messages.
    Verbose,
}

impl ToolProgress {
    /// Parses `off|new|all|verbose` (case-insensitive; YAML's `false` reads as `off`).
    /// `None` gives the default, `all`. Errors name the key and the accepted values.
    pub fn parse(value: Option<&str>) -> Result<ToolProgress, String> {
        let Some(v) = value else {
            return Ok(ToolProgress::default());
        };
        match v.trim().to_ascii_lowercase().as_str() {
            "off" | "false" | "none" => Ok(ToolProgress::Off),
            "new" => Ok(ToolProgress::New),
            "all" | "true" => Ok(ToolProgress::All),
            "verbose" => Ok(ToolProgress::Verbose),
            other => Err(format!(
                "display.tool_progress: `{other}` is not one of off, new, all, verbose"
            )),
        }
    }
}

/// Longest argument preview in `new`/`all` mode, in columns.
const SHORT_ARGS: usize = 48;

/// Formats a duration given in milliseconds: `0.02s`, `12.5s`, `2m05s`.
pub fn format_duration(ms: u64) -> String {
    if ms < 10_000 {
        format!("{:.2}s", ms as f64 / 1000.0)
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        let s = ms / 1000;
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// One finished tool call, drawn with the skin's `tool_line` format on a screen `width`
/// columns wide. `ok` picks `✓` or `✗`. The argument preview is shortened to fit (to
/// [`SHORT_ARGS`] columns unless `verbose`).
pub fn tool_line(
    skin: &Skin,
    name: &str,
    args: &str,
    duration_ms: u64,
    ok: bool,
    verbose: bool,
    width: usize,
) -> Line {
    let c = &skin.colors;
    let status = if ok {
        Span::new("✓", Style::fg(c.ui_ok))
    } else {
        Span::new("✗", Style::fg(c.ui_error).bold())
    };
    let args = args.split_whitespace().collect::<Vec<_>>().join(" ");
    let fill = |args: &str| {
        fill_template(&skin.tool_line, |key| match key {
            "prefix" => Some(Span::new(&skin.tool_prefix, Style::fg(c.ui_accent))),
            "emoji" => Some(Span::plain(skin.tool_emoji(name))),
            "name" => Some(Span::new(name, Style::fg(c.ui_accent).bold())),
            "args" => Some(Span::plain(args)),
            "duration" => Some(Span::new(
                &format_duration(duration_ms),
                Style::fg(c.ui_dim),
            )),
            "status" => Some(status.clone()),
            _ => None,
        })
    };
    let without_args = line_width(&fill(""));
    let room = width.saturating_sub(without_args);
    let limit = if verbose { room } else { room.min(SHORT_ARGS) };
    fill(&truncate(&args, limit))
}

/// A `todo` call's preview split into its head (`3 items`) and one line per item, drawn
/// under the tool line (issue 20 item 10: the list, not its JSON). `None` for a preview
/// without items (a read).
pub fn todo_items(skin: &Skin, preview: &str, width: usize) -> Option<(String, Vec<Line>)> {
    let (head, items) = preview.split_once(": ")?;
    if !head.contains("item") {
        return None;
    }
    let lines = items
        .split(" · ")
        .map(|item| {
            let item = item.trim_end_matches('…');
            let (mark, text) = item.split_once(' ').unwrap_or(("☐", item));
            let style = match mark {
                "✓" => Style::fg(skin.colors.ui_ok),
                "▶" => Style::fg(skin.colors.ui_accent).bold(),
                _ => Style::fg(skin.colors.ui_dim),
            };
            vec![
                Span::new("    ", Style::default()),
                Span::new(mark, style),
                Span::plain(" "),
                Span::new(&truncate(text, width.saturating_sub(7)), Style::default()),
            ]
        })
        .collect();
    Some((head.to_string(), lines))
}

/// A result or error preview under a tool line (errors always, results in verbose mode).
pub fn tool_detail(skin: &Skin, preview: &str, ok: bool, width: usize) -> Line {
    let style = if ok {
        Style::fg(skin.colors.ui_dim)
    } else {
        Style::fg(skin.colors.ui_error)
    };
    let text = preview.split_whitespace().collect::<Vec<_>>().join(" ");
    let lead = "    └ ";
    vec![
        Span::new(lead, Style::fg(skin.colors.ui_dim)),
        Span::new(
            &truncate(&text, width.saturating_sub(width_of(lead))),
            style,
        ),
    ]
}

/// A progress message from running tool `tool` (verbose mode).
pub fn tool_message(skin: &Skin, tool: &str, message: &str, width: usize) -> Line {
    let text = if tool.is_empty() {
        format!("    · {message}")
    } else {
        format!("    · {tool}: {message}")
    };
    vec![Span::new(
        &truncate(&text, width),
        Style::fg(skin.colors.ui_dim),
    )]
}

/// An agent status message, marked by what it is about: `↻` retries and key rotation,
/// `⇢` fallbacks, `⇊` compression, `⚠` warnings, `·` anything else. Long messages wrap
/// (never cut: they explain failures) with the continuation indented under the text.
pub fn status_message(skin: &Skin, message: &str, width: usize) -> Vec<Line> {
    let c = &skin.colors;
    let lower = message.to_ascii_lowercase();
    let (mark, style) = if lower.starts_with("warning") {
        ("⚠", Style::fg(c.ui_warn))
    } else if lower.contains("fallback") || lower.contains("switching to") {
        ("⇢", Style::fg(c.ui_warn))
    } else if lower.contains("retry")
        || lower.contains("retrying")
        || lower.contains("next api key")
    {
        ("↻", Style::fg(c.ui_warn))
    } else if lower.contains("compress") {
        ("⇊", Style::fg(c.ui_label))
    } else {
        ("·", Style::fg(c.ui_dim))
    };
    let text = message.split_whitespace().collect::<Vec<_>>().join(" ");
    wrap(
        &[Span::new(&text, style)],
        width,
        &[Span::new(&format!("{mark} "), style)],
        &[Span::plain("  ")],
    )
}

/// The dim line drawn under an answer whose model stream failed partway and is retried
/// (`AgentEvent::StreamRestarted`): the text above it is abandoned, the whole answer follows.
pub fn restart_notice(skin: &Skin, width: usize) -> Vec<Line> {
    let style = Style::fg(skin.colors.ui_dim).dim();
    wrap(
        &[Span::new(
            "the answer above was cut off; it starts again below",
            style,
        )],
        width,
        &[Span::new("↻ ", style)],
        &[Span::plain("  ")],
    )
}

/// The spinner line: frame `tick` of the skin's frames, a label and the elapsed time in
/// milliseconds (`⠋ thinking… 3.2s`).
pub fn spinner_line(skin: &Skin, tick: usize, label: &str, elapsed_ms: u64, width: usize) -> Line {
    let frames = &skin.spinner_frames;
    let frame = frames
        .get(tick % frames.len().max(1))
        .map_or("*", String::as_str);
    let secs = format!(" {:.1}s", elapsed_ms as f64 / 1000.0);
    let room = width.saturating_sub(width_of(frame) + 1 + width_of(&secs));
    vec![
        Span::new(frame, Style::fg(skin.colors.ui_accent)),
        Span::plain(" "),
        Span::new(&truncate(label, room), Style::fg(skin.colors.ui_dim)),
        Span::new(&secs, Style::fg(skin.colors.ui_dim)),
    ]
}

fn width_of(s: &str) -> usize {
    width(s)
}

/// Fills `{key}` placeholders of `template` with spans from `value`; unknown keys and the
/// text between placeholders are kept as written (dim).
pub fn fill_template(template: &str, value: impl Fn(&str) -> Option<Span>) -> Line {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        if open > 0 {
            out.push(Span::plain(&rest[..open]));
        }
        let key = &rest[open + 1..close];
        match value(key) {
            Some(span) => out.push(span),
            None => out.push(Span::plain(&rest[open..=close])),
        }
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Span::plain(rest));
    }
    // Drop empty spans and trailing spaces (an empty last value leaves them behind).
    let mut line: Line = out.into_iter().filter(|s| !s.text.is_empty()).collect();
    while let Some(last) = line.last_mut() {
        let trimmed = last.text.trim_end().to_string();
        if trimmed.is_empty() {
            line.pop();
        } else {
            last.text = trimmed;
            break;
        }
    }
    line
}
