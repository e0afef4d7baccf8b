//! Delivering one turn's reply from its [`AgentEvent`]s: streaming by editing one message,
//! tool progress lines, the typing indicator, final chunks and `MEDIA:` files
//! (FEATURES §1 Gateway; issue 7 part 5).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hermes_protocol::{AgentEvent, TurnOutcome};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::delivery::chunk::render_chunks;
use crate::delivery::media::{MediaPolicy, extract_media};
use crate::delivery::render::measure;
use crate::error::PlatformError;
use crate::platform::{ChatTarget, Markup, PlatformAdapter, PlatformLimits, SentMessage};

/// Smallest time between two edits of a streamed message (FEATURES §1 Gateway: ≥ 0.8 s).
pub const MIN_EDIT_INTERVAL: Duration = Duration::from_millis(800);
/// What a streamed message says while the answer it showed is abandoned: its model stream
/// failed partway and the retried attempt has not shown text yet
/// ([`AgentEvent::StreamRestarted`]). Also the final text of extra messages that the failed
/// attempt had filled.
pub const RESTART_NOTICE: &str = "↻ The answer was cut off; retrying…";
/// How often the typing indicator is refreshed while a turn runs (platforms show it for
/// about 5 s).
pub const TYPING_INTERVAL: Duration = Duration::from_secs(4);

/// `display.tool_progress`: which tool calls get a progress line in the chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolProgressMode {
    /// No progress lines.
    Off,
    /// A line only when the tool differs from the previous call's.
    New,
    /// A line for every call (the default).
    #[default]
    All,
    /// A line for every call, with a preview of its arguments.
    Verbose,
}

impl ToolProgressMode {
    /// Parses a `display.tool_progress` value (`off|new|all|verbose`, also `false`/`true`).
    ///
    /// # Errors
    /// A message naming the bad value and the accepted ones.
    pub fn parse(value: &str) -> Result<ToolProgressMode, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "off" | "false" | "none" => Ok(ToolProgressMode::Off),
            "new" => Ok(ToolProgressMode::New),
            "all" | "true" | "on" => Ok(ToolProgressMode::All),
            "verbose" => Ok(ToolProgressMode::Verbose),
            other => Err(format!(
                "display.tool_progress: `{other}` is not one of off, new, all, verbose"
            )),
        }
    }
}

/// How one reply is delivered.
#[derive(Debug, Clone)]
pub struct DeliveryOptions {
    /// Stream by editing one message (`gateway.streaming`); only on platforms with edits.
    pub streaming: bool,
    /// Time between edits; raised to [`MIN_EDIT_INTERVAL`] when smaller.
    pub edit_interval: Duration,
    /// Progress lines for tool calls.
    pub tool_progress: ToolProgressMode,
    /// Typing indicator refresh period ([`TYPING_INTERVAL`]); `None` sends none.
    pub typing_interval: Option<Duration>,
    /// Which files `MEDIA:<path>` tags may send (none by default).
    pub media: MediaPolicy,
}

impl Default for DeliveryOptions {
    fn default() -> Self {
        DeliveryOptions {
            streaming: false,
            edit_interval: MIN_EDIT_INTERVAL,
            tool_progress: ToolProgressMode::default(),
            typing_interval: Some(TYPING_INTERVAL),
            media: MediaPolicy::default(),
        }
    }
}

/// What a delivery did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeliveryReport {
    /// Messages sent (chunks, streamed messages, progress messages).
    pub sent: usize,
    /// Edits made.
    pub edits: usize,
    /// Files sent from `MEDIA:` tags.
    pub files: Vec<PathBuf>,
    /// The platform rejected formatted text and the plain-text fallback was used (C33: a
    /// last resort that is reported).
    pub plain_fallback: bool,
    /// Platform errors met on the way (the delivery went on where it could).
    pub errors: Vec<String>,
    /// How the turn ended; `None` when the event stream closed without `TurnFinished`.
    pub outcome: Option<TurnOutcome>,
}

/// Delivers one turn's reply to one chat from the turn's events.
pub struct StreamingReply {
    adapter: Arc<dyn PlatformAdapter>,
    target: ChatTarget,
    opts: DeliveryOptions,
    limits: PlatformLimits,
    streaming: bool,
    /// Source Markdown of the message being streamed.
    segment: String,
    message: Option<SentMessage>,
    /// Messages this segment already filled and left (it overflowed the length limit).
    overflowed: Vec<SentMessage>,
    shown: String,
    last_edit: Option<Instant>,
    dirty: bool,
    progress: Option<(SentMessage, String)>,
    last_tool: Option<String>,
    report: DeliveryReport,
}

impl StreamingReply {
    /// A delivery to `target` through `adapter`.
    pub fn new(
        adapter: Arc<dyn PlatformAdapter>,
        target: ChatTarget,
        opts: DeliveryOptions,
    ) -> StreamingReply {
        let limits = adapter.limits();
        let streaming = opts.streaming && limits.supports_edit;
        StreamingReply {
            adapter,
            target,
            opts,
            limits,
            streaming,
            segment: String::new(),
            message: None,
            overflowed: Vec::new(),
            shown: String::new(),
            last_edit: None,
            dirty: false,
            progress: None,
            last_tool: None,
            report: DeliveryReport::default(),
        }
    }

    fn interval(&self) -> Duration {
        self.opts.edit_interval.max(MIN_EDIT_INTERVAL)
    }

    /// Consumes events until `TurnFinished` (or the channel closes) and returns what was
    /// done. Platform errors are collected in the report, never raised.
    pub async fn run(mut self, mut events: UnboundedReceiver<AgentEvent>) -> DeliveryReport {
        let typing_every = self.opts.typing_interval;
        let far = Duration::from_secs(86_400 * 365);
        let mut next_typing = Instant::now();
        loop {
            let flush_at = match (self.dirty, self.last_edit) {
                (true, Some(t)) => t + self.interval(),
                (true, None) => Instant::now(),
                _ => Instant::now() + far,
            };
            let typing_at = if typing_every.is_some() {
                next_typing
            } else {
                Instant::now() + far
            };
            tokio::select! {
                event = events.recv() => match event {
                    Some(AgentEvent::TurnFinished { outcome, final_text, .. }) => {
                        self.finish(outcome, &final_text).await;
                        break;
                    }
                    Some(event) => self.handle(event).await,
                    None => {
                        self.close_segment().await;
                        break;
                    }
                },
                () = tokio::time::sleep_until(flush_at), if self.dirty => self.flush().await,
                () = tokio::time::sleep_until(typing_at), if typing_every.is_some() => {
                    if let Err(e) = self.adapter.typing(&self.target).await {
                        tracing::debug!(error = %e, "typing indicator failed");
                    }
                    next_typing = Instant::now() + typing_every.unwrap_or(far);
                }
            }
        }
        self.report
    }

    async fn handle(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } if self.streaming => {
                self.segment.push_str(&text);
                let due = self
                    .last_edit
                    .is_none_or(|t| Instant::now() >= t + self.interval());
                if self.message.is_none() || due {
                    self.flush().await;
                } else {
                    self.dirty = true;
                }
            }
            AgentEvent::StreamRestarted { .. } if self.streaming => self.restart().await,
            AgentEvent::ToolStarted {
                name, args_preview, ..
            } => {
                self.close_segment().await;
                self.tool_line(&name, &args_preview).await;
            }
            _ => {}
        }
    }

    /// The model call's stream failed after its text was streamed here and is being retried:
    /// the segment's text is dropped, the first message it filled shows [`RESTART_NOTICE`]
    /// until the retried answer's text replaces it (by edits, as usual), and any further
    /// message it filled keeps the notice. Nothing of the abandoned attempt stays visible,
    /// and the retried answer is not shown twice.
    async fn restart(&mut self) {
        self.segment.clear();
        self.dirty = false;
        let mut used = std::mem::take(&mut self.overflowed);
        used.extend(self.message.take());
        let notice = escape_line(RESTART_NOTICE, self.limits.markup);
        let mut used = used.into_iter();
        if let Some(first) = used.next() {
            self.message = Some(first);
            self.shown.clear();
            self.show(&notice).await;
        }
        for m in used {
            self.edit(&m, &notice).await;
        }
    }

    fn note_error(&mut self, what: &str, e: &PlatformError) {
        tracing::warn!(error = %e, "{what} failed");
        self.report.errors.push(format!("{what}: {e}"));
    }

    async fn send(&mut self, text: &str) -> Option<SentMessage> {
        match self.adapter.send(&self.target, text).await {
            Ok(m) => {
                self.report.sent += 1;
                Some(m)
            }
            Err(e) => {
                self.note_error("send", &e);
                None
            }
        }
    }

    async fn edit(&mut self, message: &SentMessage, text: &str) {
        match self.adapter.edit(&self.target, message, text).await {
            Ok(()) => self.report.edits += 1,
            Err(e) => self.note_error("edit", &e),
        }
        self.last_edit = Some(Instant::now());
    }

    /// Shows the current segment: the first send, or an edit; an overflowing segment is
    /// finished in its message and the rest continues in a new one.
    async fn flush(&mut self) {
        self.dirty = false;
        while let Some((head, rest)) = split_stream(&self.segment, &self.limits) {
            let text = render_chunks(&head, &self.limits).join("\n");
            self.show(&text).await;
            self.overflowed.extend(self.message.take());
            self.shown.clear();
            self.segment = rest;
        }
        let text = render_chunks(&self.segment, &self.limits)
            .into_iter()
            .next()
            .unwrap_or_default();
        self.show(&text).await;
    }

    async fn show(&mut self, text: &str) {
        if text.trim().is_empty() || text == self.shown {
            return;
        }
        match self.message.clone() {
            None => {
                self.message = self.send(text).await;
                self.last_edit = Some(Instant::now());
            }
            Some(m) => {
                if let Some(t) = self.last_edit {
                    tokio::time::sleep_until(t + self.interval()).await;
                }
                self.edit(&m, text).await;
            }
        }
        self.shown = text.to_string();
    }

    /// Gives the streamed message its final form and starts a fresh segment.
    async fn close_segment(&mut self) {
        if self.dirty || (!self.segment.is_empty() && self.message.is_none()) {
            self.flush().await;
        }
        self.segment.clear();
        self.message = None;
        self.overflowed.clear();
        self.shown.clear();
        self.dirty = false;
    }

    async fn tool_line(&mut self, name: &str, preview: &str) {
        let show = match self.opts.tool_progress {
            ToolProgressMode::Off => false,
            ToolProgressMode::New => self.last_tool.as_deref() != Some(name),
            ToolProgressMode::All | ToolProgressMode::Verbose => true,
        };
        self.last_tool = Some(name.to_string());
        if !show {
            return;
        }
        let line = if self.opts.tool_progress == ToolProgressMode::Verbose && !preview.is_empty() {
            format!("⚙ {name}: {preview}")
        } else {
            format!("⚙ {name}")
        };
        let line = escape_line(&line, self.limits.markup);
        if self.limits.supports_edit
            && let Some((message, text)) = self.progress.clone()
        {
            let joined = format!("{text}\n{line}");
            if measure(&joined, self.limits.length_unit) <= self.limits.max_message_len {
                self.edit(&message, &joined).await;
                self.progress = Some((message, joined));
                return;
            }
        }
        if let Some(m) = self.send(&line).await {
            self.progress = Some((m, line));
        }
    }

    async fn finish(&mut self, outcome: TurnOutcome, final_text: &str) {
        self.report.outcome = Some(outcome.clone());
        let (_, files) = extract_media(final_text, &self.opts.media);
        let answered = matches!(
            outcome,
            TurnOutcome::Completed | TurnOutcome::BudgetExhausted
        );
        if self.message.is_some() && answered {
            // The streamed message becomes the final answer (its not yet shown rest).
            let (text, _) = extract_media(&self.segment, &self.opts.media);
            let chunks = render_chunks(&text, &self.limits);
            let mut rest = chunks.into_iter();
            if let (Some(first), Some(m)) = (rest.next(), self.message.clone())
                && first != self.shown
            {
                if let Some(t) = self.last_edit {
                    tokio::time::sleep_until(t + self.interval()).await;
                }
                self.edit(&m, &first).await;
            }
            for chunk in rest {
                self.send(&chunk).await;
            }
        } else {
            self.close_segment().await;
            let (text, _) = extract_media(final_text, &self.opts.media);
            self.send_text(&text).await;
        }
        for file in files {
            match self.adapter.send_file(&self.target, &file, None).await {
                Ok(_) => self.report.files.push(file),
                Err(e) => self.note_error("send_file", &e),
            }
        }
    }

    /// Sends `markdown` as formatted chunks; when the platform rejects the formatting, the
    /// plain-text rendering is sent instead and the fallback is reported.
    async fn send_text(&mut self, markdown: &str) {
        let chunks = render_chunks(markdown, &self.limits);
        for (i, chunk) in chunks.iter().enumerate() {
            match self.adapter.send(&self.target, chunk).await {
                Ok(_) => self.report.sent += 1,
                Err(e @ PlatformError::Rejected { .. }) if self.limits.markup != Markup::Plain => {
                    self.note_error("send", &e);
                    self.report.plain_fallback = true;
                    let plain = PlatformLimits {
                        markup: Markup::Plain,
                        ..self.limits
                    };
                    let plain_chunks = render_chunks(markdown, &plain);
                    for p in plain_chunks.iter().skip(i.min(plain_chunks.len())) {
                        self.send(p).await;
                    }
                    return;
                }
                Err(e) => self.note_error("send", &e),
            }
        }
    }
}

/// One line of plain text escaped for `markup` (progress lines).
fn escape_line(text: &str, markup: Markup) -> String {
    match markup {
        Markup::TelegramMarkdownV2 => crate::delivery::render::escape_telegram(text),
        Markup::SlackMrkdwn => text
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;"),
        Markup::DiscordMarkdown => {
            let mut out = String::with_capacity(text.len());
            for c in text.chars() {
                if matches!(c, '\\' | '*' | '_' | '~' | '`' | '|') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
        Markup::Plain => text.to_string(),
    }
}

/// When `segment` no longer fits one message, splits its source into the part that still
/// fits (cut at the last fitting line break, else space, else char) and the rest; a rest
/// inside a code fence starts with the fence's opening line again.
fn split_stream(segment: &str, limits: &PlatformLimits) -> Option<(String, String)> {
    // `render_chunks` gives one chunk exactly when the formatted text fits the limit.
    let fits = |s: &str| render_chunks(s, limits).len() <= 1;
    if fits(segment) {
        return None;
    }
    let newlines: Vec<usize> = segment.match_indices('\n').map(|(i, _)| i).collect();
    let spaces: Vec<usize> = segment.match_indices(' ').map(|(i, _)| i).collect();
    let chars: Vec<usize> = segment.char_indices().map(|(i, _)| i).skip(1).collect();
    let cut = [newlines, spaces, chars]
        .into_iter()
        .find_map(|cands| last_fitting(&cands, |i| fits(&segment[..i])))?;
    let head = segment[..cut].to_string();
    let mut rest = segment[cut..].trim_start_matches([' ', '\n']).to_string();
    if let Some(opener) = open_fence(&head) {
        rest = format!("{opener}\n{rest}");
    }
    Some((head, rest))
}

/// The largest candidate (sorted ascending) for which `fits` holds, by binary search.
fn last_fitting(cands: &[usize], fits: impl Fn(usize) -> bool) -> Option<usize> {
    let (mut lo, mut hi) = (0usize, cands.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(cands[mid]) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo.checked_sub(1).map(|i| cands[i]).filter(|&c| c > 0)
}

/// The opening line of a code fence left open at the end of `text`.
fn open_fence(text: &str) -> Option<String> {
    let mut open: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            open = match open {
                Some(_) => None,
                None => Some(t.to_string()),
            };
        }
    }
    open
}
