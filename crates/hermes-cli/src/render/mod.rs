//! Renders [`AgentEvent`]s for a terminal or a script (FEATURES §1 CLI, issue 9 items 3–6):
//! answer text on stdout — streamed Markdown on a color terminal, raw text otherwise — and
//! progress on stderr: a spinner with elapsed time while waiting (terminals only), one line
//! per tool call per `display.tool_progress`, reasoning dimmed or hidden per
//! `display.show_reasoning`, and status messages. `--json` writes one JSON object per line
//! instead (ARCHITECTURE §3). Only events are consumed; nothing here reaches into the agent.
//!
//! The folder owns everything drawn on the terminal: [`output`] (the `outln!` macro, stdout
//! that tolerates a closed pipe), [`skin`] (skin files), [`display`] (`display:` config, the
//! banner, status line), [`markdown`], [`code`], [`stream`], [`progress`], [`status`],
//! [`prompt`] and [`style`]. It depends on no other module of the CLI.

// `output` first: its `outln!` macro is used by the modules after it and the whole crate.
#[macro_use]
pub mod output;

pub mod code;
pub mod display;
pub mod markdown;
pub mod progress;
pub mod prompt;
pub mod resize;
pub mod skin;
pub mod status;
pub mod stream;
pub mod style;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use hermes_protocol::{AgentEvent, TurnOutcome, Usage};

use self::markdown::MdTheme;
use self::progress::ToolProgress;
use self::stream::MarkdownStream;
use self::style::{Line, Span, Style, encode, encode_line};
use crate::render::skin::Skin;

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderMode {
    /// JSONL on stdout, nothing else.
    Json,
    /// Answer text streamed to stdout as it arrives.
    Stream,
    /// Only the final answer on stdout, at the end (stdout is not a terminal).
    FinalOnly,
}

/// What the renderer may do with the output it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Hide tool and status lines (`-Q`).
    pub quiet: bool,
    /// Show reasoning text, dimmed (`display.show_reasoning` or `-v`).
    pub show_reasoning: bool,
    /// Which tool calls get a line.
    pub tool_progress: ToolProgress,
    /// Draw answer text as Markdown (stdout is a terminal and `NO_COLOR` is unset).
    pub markdown: bool,
    /// Use colors on progress lines (stderr is a terminal and `NO_COLOR` is unset).
    pub color: bool,
    /// Draw the spinner and the running tool's live line (stderr is a terminal).
    pub live: bool,
    /// Screen width in columns (lines are wrapped or shortened to it).
    pub width: usize,
}

/// Width used when neither stdout nor stderr is a terminal: lines are never cut in logs.
pub const NO_TERMINAL_WIDTH: usize = 4096;

impl RenderOptions {
    /// Options for this process's stdout/stderr: Markdown and colors only on terminals
    /// without `NO_COLOR` (<https://no-color.org>), the width of the terminal (else
    /// `COLUMNS`, else 80).
    pub fn detect(quiet: bool, show_reasoning: bool, tool_progress: ToolProgress) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let out_tty = std::io::stdout().is_terminal();
        let err_tty = std::io::stderr().is_terminal();
        RenderOptions {
            quiet,
            show_reasoning,
            tool_progress,
            markdown: out_tty && !no_color,
            color: err_tty && !no_color,
            live: err_tty,
            width: if out_tty || err_tty {
                terminal_width()
            } else {
                NO_TERMINAL_WIDTH
            },
        }
    }
}

/// Columns of the terminal on stdout (or stderr), else `COLUMNS`, else 80.
pub fn terminal_width() -> usize {
    for fd in [rustix::stdio::stdout(), rustix::stdio::stderr()] {
        if let Ok(ws) = rustix::termios::tcgetwinsize(fd)
            && ws.ws_col > 0
        {
            return usize::from(ws.ws_col);
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|c: &usize| *c > 0)
        .unwrap_or(80)
}

/// What the last turn cost, for the status line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnSummary {
    /// Wall time from `TurnStarted` to `TurnFinished`, in milliseconds.
    pub elapsed_ms: u64,
    /// Tokens used by all model calls of the turn.
    pub usage: Usage,
    /// Model calls the turn made, counted from the events: one, plus one per run of tool
    /// calls that followed model output.
    pub model_calls: u32,
}

impl TurnSummary {
    /// The prompt size of the turn's last model call in tokens: exact for a single call,
    /// otherwise the turn's prompt tokens divided by its calls (an estimate).
    ///
    /// `hermes-llm` normalizes every provider to the OpenAI convention: `input_tokens` is the
    /// whole prompt and `cache_read_tokens`/`cache_write_tokens` are parts of it (Anthropic's
    /// separate counts are summed into `input_tokens` by its stream parser), so the cached
    /// tokens are not added again (issue 20 item 5).
    pub fn context_tokens(&self) -> Option<u64> {
        let prompt = self.usage.input_tokens;
        (prompt > 0).then(|| prompt / u64::from(self.model_calls.max(1)))
    }
}

struct Live {
    label: String,
    since: Instant,
}

/// Writes events to stdout/stderr (or any two writers, for tests).
pub struct Renderer {
    mode: RenderMode,
    opts: RenderOptions,
    skin: Skin,
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    md: MarkdownStream,
    mid_line: bool,
    reasoning_mid_line: bool,
    /// Text or reasoning of the current model call was drawn (a restart then needs a notice).
    drawn_this_call: bool,
    tools: HashMap<String, (String, String)>,
    last_tool: Option<String>,
    after_model_output: bool,
    live: Option<Live>,
    live_drawn: bool,
    tick: usize,
    turn_started: Option<Instant>,
    summary: TurnSummary,
    /// Where the terminal's current width is read from (`None`: the width never changes).
    width_watch: Option<resize::WidthWatch>,
}

impl Renderer {
    /// A renderer on this process's stdout and stderr.
    pub fn new(mode: RenderMode, opts: RenderOptions, skin: Skin) -> Renderer {
        Renderer::with_writers(
            mode,
            opts,
            skin,
            Box::new(std::io::stdout()),
            Box::new(std::io::stderr()),
        )
    }

    /// A renderer writing answer text to `out` and progress to `err`.
    pub fn with_writers(
        mode: RenderMode,
        opts: RenderOptions,
        skin: Skin,
        out: Box<dyn Write + Send>,
        err: Box<dyn Write + Send>,
    ) -> Renderer {
        let md = MarkdownStream::new(MdTheme::from_skin(&skin), opts.width);
        Renderer {
            mode,
            opts,
            skin,
            out,
            err,
            md,
            mid_line: false,
            reasoning_mid_line: false,
            drawn_this_call: false,
            tools: HashMap::new(),
            last_tool: None,
            after_model_output: true,
            live: None,
            live_drawn: false,
            tick: 0,
            turn_started: None,
            summary: TurnSummary::default(),
            width_watch: None,
        }
    }

    /// Follows the terminal's width from `watch`: lines drawn after a resize are wrapped to
    /// the new width, Markdown from the next block on (issue 20 item 3).
    pub fn follow_width(&mut self, watch: resize::WidthWatch) {
        self.width_watch = Some(watch);
        self.check_width();
    }

    /// Takes a new width from the watch, if it changed.
    fn check_width(&mut self) {
        let Some(watch) = &self.width_watch else {
            return;
        };
        let now = watch.get();
        if now > 0 && now != self.opts.width {
            self.opts.width = now;
            self.md.set_width(now);
        }
    }

    /// Writes `text` as a warning line on the progress stream (an MCP server lost or back),
    /// shown even with `-Q`.
    pub fn warning_line(&mut self, text: &str) {
        let line = vec![Span::new(text, Style::fg(self.skin.colors.ui_warn))];
        self.progress_line(&line);
    }

    /// Picks `Stream` when stdout is a terminal, else `FinalOnly`; `Json` when asked.
    pub fn auto_mode(json: bool) -> RenderMode {
        if json {
            RenderMode::Json
        } else if std::io::stdout().is_terminal() {
            RenderMode::Stream
        } else {
            RenderMode::FinalOnly
        }
    }

    /// The skin in use.
    pub fn skin(&self) -> &Skin {
        &self.skin
    }

    /// Switches the skin (takes effect from the next line drawn).
    pub fn set_skin(&mut self, skin: Skin) {
        self.skin = skin;
    }

    /// What the last finished turn took.
    pub fn last_turn(&self) -> TurnSummary {
        self.summary
    }

    /// The screen width in columns.
    pub fn width(&self) -> usize {
        self.opts.width
    }

    /// True when progress lines are colored.
    pub fn color(&self) -> bool {
        self.opts.color
    }

    /// Redraws the spinner or the running tool's line (call every 100 ms while a turn runs).
    pub fn tick(&mut self) {
        self.check_width();
        self.tick = self.tick.wrapping_add(1);
        if !self.opts.live || self.opts.quiet || self.mode != RenderMode::Stream {
            return;
        }
        let Some(live) = &self.live else { return };
        let elapsed = u64::try_from(live.since.elapsed().as_millis()).unwrap_or(u64::MAX);
        let line = progress::spinner_line(
            &self.skin,
            self.tick,
            &live.label,
            elapsed,
            self.opts.width.saturating_sub(1),
        );
        let text = encode_line(&line, self.opts.color);
        let _ = write!(self.err, "\r\x1b[2K{text}");
        let _ = self.err.flush();
        self.live_drawn = true;
    }

    /// Shows the spinner with `label` until the next event draws something or the op ends:
    /// for a control op that may take a while without telling anything, such as `/new` or
    /// `/resume` while the session left is reviewed for memory and skills (issue 20).
    pub fn wait_with(&mut self, label: &str) {
        self.set_live(label.to_string());
    }

    /// Clears the spinner and flushes held text before something else talks to the user
    /// (an approval question); the spinner comes back with the next tool or model event.
    pub fn pause_live(&mut self) {
        self.end_text_line();
        self.live = None;
    }

    /// Writes a line on the progress stream (stderr), clearing the live line first.
    pub fn progress_line(&mut self, line: &Line) {
        self.end_text_line();
        let text = encode(std::slice::from_ref(line), self.opts.color);
        let _ = write!(self.err, "{text}");
        let _ = self.err.flush();
    }

    fn clear_live(&mut self) {
        if self.live_drawn {
            let _ = write!(self.err, "\r\x1b[2K");
            let _ = self.err.flush();
            self.live_drawn = false;
        }
    }

    fn set_live(&mut self, label: String) {
        self.live = Some(Live {
            label,
            since: Instant::now(),
        });
    }

    fn thinking_label(&self) -> String {
        let verbs = &self.skin.thinking_verbs;
        let verb = verbs
            .get(self.summary.model_calls as usize % verbs.len().max(1))
            .map_or("thinking", String::as_str);
        format!("{verb}…")
    }

    /// Flushes held Markdown and ends a partial text or reasoning line.
    fn end_text_line(&mut self) {
        self.clear_live();
        let text = self.md.finish();
        if !text.is_empty() && self.reasoning_mid_line {
            self.write_out("\n");
            self.reasoning_mid_line = false;
        }
        self.write_out(&text);
        if self.mid_line || self.reasoning_mid_line {
            self.write_out("\n");
            self.mid_line = false;
            self.reasoning_mid_line = false;
        }
    }

    fn write_out(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    fn status_line(&mut self, line: Line) {
        if self.opts.quiet {
            return;
        }
        self.progress_line(&line);
    }

    fn text(&mut self, text: &str) {
        if self.mode != RenderMode::Stream || text.is_empty() {
            return;
        }
        if self.opts.markdown {
            // The spinner stays until something is drawn (a held-back first word keeps it).
            let drawn = self.md.push(text);
            if drawn.is_empty() {
                return;
            }
            self.clear_live();
            self.live = None;
            if self.reasoning_mid_line {
                self.write_out("\n");
                self.reasoning_mid_line = false;
            }
            self.drawn_this_call = true;
            self.write_out(&drawn);
            return;
        }
        self.clear_live();
        self.live = None;
        if self.reasoning_mid_line {
            self.write_out("\n");
            self.reasoning_mid_line = false;
        }
        self.write_out(text);
        self.drawn_this_call = true;
        self.mid_line = !text.ends_with('\n');
    }

    fn reasoning(&mut self, text: &str) {
        if !self.opts.show_reasoning || self.mode != RenderMode::Stream || text.is_empty() {
            return;
        }
        self.clear_live();
        self.live = None;
        let dim = Style::fg(self.skin.colors.ui_dim).dim();
        let mut out = String::new();
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let line = vec![Span::new(part, dim)];
            out.push_str(&encode_line(&line, self.opts.markdown));
        }
        self.write_out(&out);
        self.drawn_this_call = true;
        self.reasoning_mid_line = !text.ends_with('\n');
    }

    /// The model stream failed after text was shown and is retried: the held-back Markdown
    /// tail is dropped (never drawn), the partial line is ended and a dim notice separates
    /// the abandoned text from the retried answer, which is then drawn whole. Shown even
    /// with `-Q`: without it the repeated text would read as one garbled answer. When
    /// nothing of the call was drawn yet (all of it held back, or `FinalOnly` mode), the
    /// restart is silent.
    fn restart(&mut self) {
        if self.mode != RenderMode::Stream {
            return;
        }
        let line_end = self.md.discard();
        if !std::mem::take(&mut self.drawn_this_call) {
            return;
        }
        self.clear_live();
        self.write_out(&line_end);
        if self.mid_line || self.reasoning_mid_line {
            self.write_out("\n");
            self.mid_line = false;
            self.reasoning_mid_line = false;
        }
        let lines = progress::restart_notice(&self.skin, self.opts.width);
        let text = encode(&lines, self.opts.color);
        let _ = write!(self.err, "{text}");
        let _ = self.err.flush();
        let label = self.thinking_label();
        self.set_live(label);
    }

    /// Shows one event.
    pub fn handle(&mut self, event: &AgentEvent) {
        self.check_width();
        if self.mode == RenderMode::Json {
            if let Ok(line) = serde_json::to_string(event) {
                self.write_out(&format!("{line}\n"));
            }
            return;
        }
        let width = self.opts.width;
        match event {
            AgentEvent::TurnStarted { .. } => {
                self.turn_started = Some(Instant::now());
                self.summary = TurnSummary {
                    model_calls: 1,
                    ..TurnSummary::default()
                };
                self.last_tool = None;
                self.after_model_output = false;
                self.drawn_this_call = false;
                let label = self.thinking_label();
                self.set_live(label);
            }
            AgentEvent::TextDelta { text } => {
                self.after_model_output = true;
                self.text(text);
            }
            AgentEvent::ReasoningDelta { text } => {
                self.after_model_output = true;
                self.reasoning(text);
            }
            AgentEvent::ToolStarted {
                call_id,
                name,
                args_preview,
                ..
            } => {
                if self.after_model_output {
                    self.summary.model_calls += 1;
                    self.after_model_output = false;
                }
                self.end_text_line();
                self.drawn_this_call = false;
                self.tools
                    .insert(call_id.clone(), (name.clone(), args_preview.clone()));
                let emoji = self.skin.tool_emoji(name).to_string();
                self.set_live(format!("{emoji} {name} {args_preview}"));
            }
            AgentEvent::ToolProgress { call_id, message } => {
                if self.opts.tool_progress == ToolProgress::Verbose {
                    let tool = self.tools.get(call_id).map_or("", |(n, _)| n.as_str());
                    let line = progress::tool_message(&self.skin, tool, message, width);
                    self.status_line(line);
                } else if let Some(live) = &mut self.live {
                    live.label = message.clone();
                }
            }
            AgentEvent::ToolFinished {
                call_id,
                ok,
                preview,
                duration_ms,
            } => {
                let (name, args) = self.tools.remove(call_id).unwrap_or_default();
                let mode = self.opts.tool_progress;
                let repeated = self.last_tool.as_deref() == Some(name.as_str());
                self.last_tool = Some(name.clone());
                let show = match mode {
                    ToolProgress::Off => false,
                    ToolProgress::New => !repeated || !ok,
                    ToolProgress::All | ToolProgress::Verbose => true,
                };
                if show {
                    let verbose = mode == ToolProgress::Verbose;
                    let todo = (name == "todo")
                        .then(|| progress::todo_items(&self.skin, &args, width))
                        .flatten();
                    let shown_args = todo.as_ref().map_or(args.as_str(), |(head, _)| head);
                    let line = progress::tool_line(
                        &self.skin,
                        &name,
                        shown_args,
                        *duration_ms,
                        *ok,
                        verbose || name == "clarify",
                        width,
                    );
                    self.status_line(line);
                    for item in todo.map(|(_, items)| items).unwrap_or_default() {
                        self.status_line(item);
                    }
                    if !ok || verbose {
                        let detail = progress::tool_detail(&self.skin, preview, *ok, width);
                        self.status_line(detail);
                    }
                }
                if self.tools.is_empty() {
                    let label = self.thinking_label();
                    self.set_live(label);
                }
            }
            AgentEvent::StreamRestarted { .. } => self.restart(),
            AgentEvent::Status { message } => {
                for line in progress::status_message(&self.skin, message, width) {
                    self.status_line(line);
                }
            }
            AgentEvent::TurnFinished {
                outcome,
                final_text,
                usage,
            } => {
                self.live = None;
                self.end_text_line();
                self.summary.usage = *usage;
                self.summary.elapsed_ms = self.turn_started.take().map_or(0, |t| {
                    u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
                });
                match (outcome, self.mode) {
                    (TurnOutcome::Failed, _) => {
                        let line = vec![Span::new(
                            &format!("error: {final_text}"),
                            Style::fg(self.skin.colors.ui_error),
                        )];
                        self.progress_line(&line);
                    }
                    (TurnOutcome::Interrupted, _) => {
                        for line in progress::status_message(&self.skin, "interrupted", width) {
                            self.status_line(line);
                        }
                    }
                    (_, RenderMode::FinalOnly) => {
                        let text = style::plain_text(final_text);
                        self.write_out(&format!("{}\n", text.trim_end()));
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
