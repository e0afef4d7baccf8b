//! Rendering checks: every screen is drawn into a fixed-width terminal emulator (vt100) and
//! compared or snapshotted as the user would see it.

use std::io::Write;
use std::sync::{Arc, Mutex};

use hermes_protocol::{AgentEvent, TurnOutcome, Usage};

use super::progress::{ToolProgress, spinner_line};
use super::status::{StatusBar, status_line};
use super::style::encode_line;
use super::*;
use crate::render::skin::Skin;

const ANSWER: &str = include_str!("testdata/answer.md");

/// Every write, kept separately so tests can check that no write splits an escape sequence.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Vec<u8>>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.push(buf.to_vec());
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn chunks(&self) -> Vec<Vec<u8>> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
    fn bytes(&self) -> Vec<u8> {
        self.chunks().concat()
    }
}

fn opts(width: usize, markdown: bool, progress: ToolProgress) -> RenderOptions {
    RenderOptions {
        quiet: false,
        show_reasoning: false,
        tool_progress: progress,
        markdown,
        color: markdown,
        live: false,
        width,
    }
}

/// A renderer whose stdout and stderr both go to one capture (like a terminal).
fn renderer(o: RenderOptions, skin: Skin) -> (Renderer, Capture) {
    let cap = Capture::default();
    let r = Renderer::with_writers(
        RenderMode::Stream,
        o,
        skin,
        Box::new(cap.clone()),
        Box::new(cap.clone()),
    );
    (r, cap)
}

/// What a `mode` renderer (60 columns, every tool line) writes to stdout for `events`;
/// stderr is dropped.
fn stdout_of(mode: RenderMode, events: &[AgentEvent]) -> String {
    let cap = Capture::default();
    let mut r = Renderer::with_writers(
        mode,
        opts(60, false, ToolProgress::All),
        Skin::builtin_default(),
        Box::new(cap.clone()),
        Box::new(std::io::sink()),
    );
    for e in events {
        r.handle(e);
    }
    String::from_utf8(cap.bytes()).unwrap()
}

/// The screen after `bytes`: (plain text without trailing blank lines, text with attributes).
fn screen(bytes: &[u8], width: usize) -> (String, Vec<u8>) {
    let mut p = vt100::Parser::new(300, u16::try_from(width).unwrap(), 0);
    p.process(
        &bytes
            .iter()
            .flat_map(|b| {
                // A terminal in raw-ish output mode: LF alone does not return the carriage.
                if *b == b'\n' {
                    vec![b'\r', b'\n']
                } else {
                    vec![*b]
                }
            })
            .collect::<Vec<u8>>(),
    );
    let text = p.screen().contents();
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    (lines[..end].join("\n"), p.screen().contents_formatted())
}

fn turn(pieces: &[&str]) -> Vec<AgentEvent> {
    let mut ev = vec![AgentEvent::TurnStarted {
        session_id: "s".into(),
    }];
    for p in pieces {
        ev.push(AgentEvent::TextDelta {
            text: (*p).to_string(),
        });
    }
    ev.push(AgentEvent::TurnFinished {
        outcome: TurnOutcome::Completed,
        final_text: pieces.concat(),
        usage: Usage::default(),
    });
    ev
}

fn render_events(events: &[AgentEvent], o: RenderOptions) -> Capture {
    let (mut r, cap) = renderer(o, Skin::builtin_default());
    for e in events {
        r.handle(e);
    }
    cap
}

/// Each write is whole lines of complete SGR sequences: no escape is ever cut in two.
fn assert_whole_escapes(chunk: &[u8]) {
    let s = String::from_utf8(chunk.to_vec()).expect("writes are UTF-8");
    let mut rest = s.as_str();
    while let Some(i) = rest.find('\x1b') {
        let after = &rest[i + 1..];
        assert!(after.starts_with('['), "bare ESC in {s:?}");
        let end = after
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or_else(|| panic!("unterminated escape in {s:?}"));
        assert!(
            after[1..end]
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';')
        );
        rest = &after[end + 1..];
    }
}

#[test]
fn markdown_answer_renders_as_expected() {
    let cap = render_events(&turn(&[ANSWER]), opts(60, true, ToolProgress::All));
    let (text, _) = screen(&cap.bytes(), 60);
    insta::assert_snapshot!("markdown_answer_w60", text);
    for line in text.lines() {
        assert!(
            style::width(line) <= 60,
            "line wider than the screen: {line:?}"
        );
    }
}

#[test]
fn markdown_wraps_to_a_narrow_screen() {
    let cap = render_events(&turn(&[ANSWER]), opts(36, true, ToolProgress::All));
    let (text, _) = screen(&cap.bytes(), 36);
    insta::assert_snapshot!("markdown_answer_w36", text);
}

#[test]
fn a_stream_split_at_every_boundary_gives_the_same_screen() {
    let width = 60;
    let whole = render_events(&turn(&[ANSWER]), opts(width, true, ToolProgress::All));
    let (_, expected) = screen(&whole.bytes(), width);
    let boundaries: Vec<usize> = (0..=ANSWER.len())
        .filter(|i| ANSWER.is_char_boundary(*i))
        .collect();
    for &i in &boundaries {
        let (a, b) = ANSWER.split_at(i);
        let cap = render_events(&turn(&[a, b]), opts(width, true, ToolProgress::All));
        let (_, got) = screen(&cap.bytes(), width);
        assert!(got == expected, "the screen differs when split at byte {i}");
        for chunk in cap.chunks() {
            assert_whole_escapes(&chunk);
        }
    }
    // And one character at a time, the way a slow model streams.
    let pieces: Vec<&str> = boundaries.windows(2).map(|w| &ANSWER[w[0]..w[1]]).collect();
    let cap = render_events(&turn(&pieces), opts(width, true, ToolProgress::All));
    let (_, got) = screen(&cap.bytes(), width);
    assert!(
        got == expected,
        "the screen differs when streamed char by char"
    );
}

#[test]
fn finished_blocks_show_before_the_answer_ends() {
    let (mut r, cap) = renderer(opts(60, true, ToolProgress::All), Skin::builtin_default());
    r.handle(&AgentEvent::TurnStarted {
        session_id: "s".into(),
    });
    r.handle(&AgentEvent::TextDelta {
        text: "# Title\n\nfirst paragraph **bo".into(),
    });
    let (text, _) = screen(&cap.bytes(), 60);
    assert_eq!(
        text, "Title\n\nfirst paragraph",
        "the heading is final, the open paragraph shows but for its open `**` (issue 20 item 2)"
    );
    r.handle(&AgentEvent::TextDelta {
        text: "ld** end\n\n```sh\necho hi\n".into(),
    });
    let (text, _) = screen(&cap.bytes(), 60);
    assert_eq!(text, "Title\n\nfirst paragraph bold end\n\n▎sh\n  echo hi");
}

#[test]
fn a_table_streams_row_by_row_and_wraps_long_cells() {
    // Issue 20 item 2: a table is not held until it ends; only the row being typed waits.
    let (mut r, cap) = renderer(opts(40, true, ToolProgress::All), Skin::builtin_default());
    r.handle(&AgentEvent::TurnStarted {
        session_id: "s".into(),
    });
    r.handle(&AgentEvent::TextDelta {
        text: "| tool | what it does |\n|---|---|\n| `patch` | edits a file in place |\n| `ter"
            .into(),
    });
    let (text, _) = screen(&cap.bytes(), 40);
    assert!(text.contains("patch"), "the finished row shows:\n{text}");
    assert!(!text.contains("ter"), "the row being typed waits:\n{text}");
    r.handle(&AgentEvent::TextDelta {
        text: "minal` | runs a shell command inside the sandbox, with a timeout |\n\nafter".into(),
    });
    r.handle(&AgentEvent::TurnFinished {
        outcome: TurnOutcome::Completed,
        final_text: String::new(),
        usage: Usage::default(),
    });
    let (text, _) = screen(&cap.bytes(), 40);
    // The long cell wraps inside its column; no word is cut off with `…`.
    assert!(!text.contains('…'), "{text}");
    for word in ["runs", "sandbox,", "timeout", "after"] {
        assert!(text.contains(word), "{word} missing:\n{text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
    // Streamed or whole, the same screen.
    let whole = render_events(
        &turn(&[
            "| tool | what it does |\n|---|---|\n| `patch` | edits a file in place |\n| `terminal` | runs a shell command inside the sandbox, with a timeout |\n\nafter",
        ]),
        opts(40, true, ToolProgress::All),
    );
    let (expected, _) = screen(&whole.bytes(), 40);
    assert_eq!(text, expected);
}

#[test]
fn without_markdown_the_text_passes_through_unchanged() {
    let cap = render_events(
        &turn(&["**a**\n", "- b"]),
        opts(60, false, ToolProgress::All),
    );
    assert_eq!(String::from_utf8(cap.bytes()).unwrap(), "**a**\n- b\n");
}

#[test]
fn model_text_cannot_inject_escapes() {
    let cap = render_events(
        &turn(&["hi \x1b]0;pwned\x07 there\n\n```\n\x1b[2Jcode\n```\n"]),
        opts(60, true, ToolProgress::All),
    );
    let bytes = String::from_utf8(cap.bytes()).unwrap();
    assert!(!bytes.contains("\x1b]"), "{bytes:?}");
    assert!(!bytes.contains("\x1b[2J"), "{bytes:?}");
    for chunk in cap.chunks() {
        assert_whole_escapes(&chunk);
    }
}

#[test]
fn answers_for_a_pipe_carry_no_terminal_controls() {
    // `chat -q | cat`: what `cat` prints must not drive the terminal either.
    let out = stdout_of(
        RenderMode::FinalOnly,
        &turn(&["title \x1b]0;pwned\x07 and \x1b]52;c;aGk=\x07 clip\r\n\tindented\u{9b}2J end\n"]),
    );
    assert_eq!(
        out,
        "title ]0;pwned and ]52;c;aGk= clip\n\tindented2J end\n"
    );
}

fn tool_events() -> Vec<AgentEvent> {
    let started = |id: &str, name: &str, args: &str| AgentEvent::ToolStarted {
        call_id: id.into(),
        name: name.into(),
        args_preview: args.into(),
        arguments: String::new(),
    };
    let finished = |id: &str, ok: bool, preview: &str, ms: u64| AgentEvent::ToolFinished {
        call_id: id.into(),
        ok,
        preview: preview.into(),
        duration_ms: ms,
    };
    vec![
        AgentEvent::TurnStarted {
            session_id: "s".into(),
        },
        AgentEvent::TextDelta {
            text: "Let me look.".into(),
        },
        started("1", "read_file", "src/main.rs"),
        finished("1", true, "fn main() {}", 20),
        started("2", "read_file", "src/lib.rs"),
        finished("2", true, "//! lib", 15),
        started(
            "3",
            "terminal",
            "cargo test --workspace --all-features -- --nocapture some_long_filter",
        ),
        AgentEvent::ToolProgress {
            call_id: "3".into(),
            message: "running 12 tests".into(),
        },
        finished("3", false, "exit status 101: 1 test failed", 12_345),
        started("4", "mcp__github__search_issues", "{\"q\":\"crash\"}"),
        finished("4", true, "3 issues", 95_000),
        AgentEvent::Status {
            message: "rate_limit error (429); retry 1/3 in 2.0s".into(),
        },
        AgentEvent::TextDelta {
            text: "One test fails.".into(),
        },
        AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed,
            final_text: "Let me look.One test fails.".into(),
            usage: Usage::default(),
        },
    ]
}

#[test]
fn tool_lines_in_each_progress_mode() {
    for (name, mode) in [
        ("off", ToolProgress::Off),
        ("new", ToolProgress::New),
        ("all", ToolProgress::All),
        ("verbose", ToolProgress::Verbose),
    ] {
        let cap = render_events(&tool_events(), opts(72, true, mode));
        let (text, _) = screen(&cap.bytes(), 72);
        insta::assert_snapshot!(format!("tool_lines_{name}"), text);
    }
}

#[test]
fn quiet_hides_progress_but_not_the_answer() {
    let mut o = opts(72, true, ToolProgress::Verbose);
    o.quiet = true;
    let cap = render_events(&tool_events(), o);
    let (text, _) = screen(&cap.bytes(), 72);
    assert_eq!(text, "Let me look.\nOne test fails.");
}

#[test]
fn reasoning_is_hidden_unless_asked_and_dimmed_when_shown() {
    let events = vec![
        AgentEvent::TurnStarted {
            session_id: "s".into(),
        },
        AgentEvent::ReasoningDelta {
            text: "the user wants a greeting".into(),
        },
        AgentEvent::TextDelta {
            text: "Hello!".into(),
        },
        AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed,
            final_text: "Hello!".into(),
            usage: Usage::default(),
        },
    ];
    let hidden = render_events(&events, opts(60, true, ToolProgress::All));
    assert_eq!(screen(&hidden.bytes(), 60).0, "Hello!");
    let mut o = opts(60, true, ToolProgress::All);
    o.show_reasoning = true;
    let shown = render_events(&events, o);
    assert_eq!(
        screen(&shown.bytes(), 60).0,
        "the user wants a greeting\nHello!"
    );
    let raw = String::from_utf8(shown.bytes()).unwrap();
    assert!(raw.contains("\x1b[2;38;2;"), "reasoning is dim: {raw:?}");
}

#[test]
fn status_messages_are_marked_by_kind() {
    let skin = Skin::builtin_default();
    let lines: Vec<String> = [
        "rate_limit error (HTTP 429); retry 1/3 in 2.0s",
        "auth error (401); trying the next API key of openrouter",
        "falling back to fallback provider anthropic (claude-sonnet-4)",
        "context compressed (threshold): 40 → 12 messages, ~90000 → ~21000 tokens",
        "warning: could not save a message yet (database is locked)",
        "tool list changed: 14 tools available",
    ]
    .iter()
    .flat_map(|m| progress::status_message(&skin, m, 60))
    .map(|l| encode_line(&l, false))
    .collect();
    insta::assert_snapshot!("status_messages", lines.join("\n"));
}

#[test]
fn failed_and_interrupted_turns_say_so() {
    let finish = |outcome| AgentEvent::TurnFinished {
        outcome,
        final_text: "provider unreachable".into(),
        usage: Usage::default(),
    };
    let cap = render_events(
        &[finish(TurnOutcome::Failed)],
        opts(60, true, ToolProgress::All),
    );
    assert_eq!(screen(&cap.bytes(), 60).0, "error: provider unreachable");
    let cap = render_events(
        &[finish(TurnOutcome::Interrupted)],
        opts(60, true, ToolProgress::All),
    );
    assert_eq!(screen(&cap.bytes(), 60).0, "· interrupted");
}

fn bar() -> StatusBar {
    StatusBar {
        model: "anthropic/claude-sonnet-4".into(),
        provider: "openrouter".into(),
        context_tokens: Some(24_600),
        context_window: Some(200_000),
        cost_usd: Some(0.0421),
        elapsed_ms: 8_340,
    }
}

#[test]
fn status_line_at_several_widths() {
    let skin = Skin::builtin_default();
    let mut out = Vec::new();
    for w in [100, 60, 40, 20] {
        out.push(format!(
            "{w:>3}: {}",
            encode_line(&status_line(&skin, &bar(), w), false)
        ));
    }
    let unknown = StatusBar {
        context_window: None,
        cost_usd: None,
        ..bar()
    };
    out.push(format!(
        "unk: {}",
        encode_line(&status_line(&skin, &unknown, 100), false)
    ));
    insta::assert_snapshot!("status_line", out.join("\n"));
}

#[test]
fn turn_summary_estimates_context_from_the_events() {
    let mut events = tool_events();
    if let Some(AgentEvent::TurnFinished { usage, .. }) = events.last_mut() {
        usage.input_tokens = 9_000;
    }
    let (mut r, _cap) = renderer(opts(72, true, ToolProgress::All), Skin::builtin_default());
    for e in &events {
        r.handle(e);
    }
    // Text, then a run of four tool calls, then more text: two model calls.
    let turn = r.last_turn();
    assert_eq!(turn.model_calls, 2);
    assert_eq!(turn.context_tokens(), Some(4_500));
}

/// Issue 20 item 5: 4,911 of 9,833 input tokens read from the cache are 9,833 tokens of
/// context, not 14,744: cached tokens are part of `input_tokens`.
#[test]
fn context_counts_cached_tokens_once() {
    let turn = TurnSummary {
        elapsed_ms: 1,
        usage: Usage {
            input_tokens: 9_833,
            cache_read_tokens: 4_911,
            cache_write_tokens: 100,
            ..Usage::default()
        },
        model_calls: 1,
    };
    assert_eq!(turn.context_tokens(), Some(9_833));
}

/// What one skin looks like: banner, prompt, spinner, tool lines, a status message, a
/// Markdown answer and the status line.
fn skin_card(skin: &Skin) -> String {
    let width = 64;
    let (mut r, cap) = renderer(opts(width, true, ToolProgress::All), skin.clone());
    let banner =
        crate::render::display::banner(skin, "gpt-5", "openai", "20260101_120000_abc123", false);
    let spinner = encode_line(&spinner_line(skin, 3, "thinking…", 2_500, width), false);
    for e in tool_events() {
        r.handle(&e);
    }
    r.handle(&AgentEvent::TurnStarted {
        session_id: "s".into(),
    });
    r.handle(&AgentEvent::TextDelta {
        text: "## Result\n\n- one `item`\n> quoted\n".into(),
    });
    r.handle(&AgentEvent::TurnFinished {
        outcome: TurnOutcome::Completed,
        final_text: String::new(),
        usage: Usage::default(),
    });
    let (body, _) = screen(&cap.bytes(), width);
    let status = encode_line(&status_line(skin, &bar(), width), false);
    format!(
        "skin: {} — {}\nbanner: {banner}\nprompt: {:?}\nspinner: {spinner}\n{body}\n{status}",
        skin.name, skin.description, skin.prompt_symbol
    )
}

#[test]
fn each_builtin_skin_renders() {
    let dir = tempfile::tempdir().unwrap();
    let mut headings = Vec::new();
    for name in Skin::builtin_names() {
        let (skin, warnings) = Skin::load(dir.path(), name).unwrap();
        assert!(warnings.is_empty(), "{name}: {warnings:?}");
        insta::assert_snapshot!(format!("skin_{name}"), skin_card(&skin));
        headings.push(skin.colors.md_heading);
    }
    headings.dedup();
    assert_eq!(
        headings.len(),
        3,
        "each built-in skin has its own heading color"
    );
}

#[test]
fn a_skin_switch_changes_the_next_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (mut r, cap) = renderer(opts(60, true, ToolProgress::All), Skin::builtin_default());
    let (mono, _) = Skin::load(dir.path(), "mono").unwrap();
    r.set_skin(mono);
    r.handle(&AgentEvent::ToolStarted {
        call_id: "1".into(),
        name: "patch".into(),
        args_preview: "a.rs".into(),
        arguments: String::new(),
    });
    r.handle(&AgentEvent::ToolFinished {
        call_id: "1".into(),
        ok: true,
        preview: String::new(),
        duration_ms: 1,
    });
    assert_eq!(screen(&cap.bytes(), 60).0, "- 🩹 patch a.rs  0.00s ✓");
}

#[test]
fn spinner_frames_cycle_and_show_elapsed_time() {
    let skin = Skin::builtin_default();
    let a = encode_line(&spinner_line(&skin, 0, "thinking…", 1_234, 40), false);
    let b = encode_line(&spinner_line(&skin, 1, "thinking…", 1_234, 40), false);
    assert_eq!(a, "⠋ thinking… 1.2s");
    assert_eq!(b, "⠙ thinking… 1.2s");
    let narrow = encode_line(
        &spinner_line(&skin, 0, "a very long tool label here", 0, 16),
        false,
    );
    assert!(style::width(&narrow) <= 16, "{narrow:?}");
}

/// A turn whose first model stream broke after "# Plan\n\nStep one is **to" and was
/// retried: the retried attempt streams the whole answer again.
fn restarted_turn() -> Vec<AgentEvent> {
    vec![
        AgentEvent::TurnStarted {
            session_id: "s".into(),
        },
        AgentEvent::TextDelta {
            text: "# Plan\n\nStep one is **to".into(),
        },
        AgentEvent::StreamRestarted {
            attempt: 2,
            reason: "the model stream ended before the response was complete".into(),
        },
        AgentEvent::Status {
            message: "network error, retrying in 2.0s (1/3)".into(),
        },
        AgentEvent::TextDelta {
            text: "# Plan\n\nStep one is **to measure**.\n".into(),
        },
        AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed,
            final_text: "# Plan\n\nStep one is **to measure**.\n".into(),
            usage: Usage::default(),
        },
    ]
}

#[test]
fn a_restarted_stream_draws_the_abandoned_part_once_then_the_whole_answer() {
    let cap = render_events(&restarted_turn(), opts(60, true, ToolProgress::All));
    let (text, _) = screen(&cap.bytes(), 60);
    insta::assert_snapshot!("stream_restarted_markdown", text);
    // What the failed attempt drew stays, ended before the notice; its held-back `**to` is
    // never drawn; the retried answer follows whole.
    assert_eq!(text.matches("Step one").count(), 2, "{text}");
    assert!(!text.contains("**"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let notice = lines
        .iter()
        .position(|l| l.starts_with("↻ the answer above"))
        .unwrap();
    assert_eq!(lines[notice - 1], "Step one is", "{text}");
    assert!(text.ends_with("Step one is to measure."), "{text}");
    for chunk in cap.chunks() {
        assert_whole_escapes(&chunk);
    }
}

#[test]
fn a_restarted_plain_stream_ends_the_partial_line_before_the_notice() {
    let cap = render_events(&restarted_turn(), opts(60, false, ToolProgress::All));
    let (text, _) = screen(&cap.bytes(), 60);
    insta::assert_snapshot!("stream_restarted_plain", text);
    let lines: Vec<&str> = text.lines().collect();
    let notice = lines
        .iter()
        .position(|l| l.starts_with("↻ the answer above"))
        .unwrap();
    assert_eq!(lines[notice - 1], "Step one is **to", "{text}");
}

#[test]
fn a_restart_notice_shows_even_when_quiet_but_not_in_final_only_mode() {
    let mut o = opts(60, false, ToolProgress::All);
    o.quiet = true;
    let cap = render_events(&restarted_turn(), o);
    let (text, _) = screen(&cap.bytes(), 60);
    assert!(text.contains("↻ the answer above was cut off"), "{text}");
    assert!(
        !text.contains("retrying"),
        "status lines stay hidden: {text}"
    );

    let out = stdout_of(RenderMode::FinalOnly, &restarted_turn());
    assert_eq!(out, "# Plan\n\nStep one is **to measure**.\n");
}

#[test]
fn json_mode_emits_the_restart_event() {
    let out = stdout_of(RenderMode::Json, &restarted_turn());
    let restart: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "stream_restarted")
        .collect();
    assert_eq!(restart.len(), 1, "{out}");
    assert_eq!(restart[0]["attempt"], 2);
}

#[test]
fn a_restart_before_anything_was_drawn_is_silent() {
    let mut events = restarted_turn();
    // The cut attempt only sent an open `**` span, which Markdown holds back.
    events[1] = AgentEvent::TextDelta {
        text: "**Step one is to".into(),
    };
    let cap = render_events(&events, opts(60, true, ToolProgress::All));
    let (text, _) = screen(&cap.bytes(), 60);
    assert!(!text.contains("cut off"), "{text}");
    assert_eq!(text.matches("Step one").count(), 1, "{text}");
}
