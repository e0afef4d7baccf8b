//! Per-markup rendering of units, and the incremental chunk [`Builder`] that measures the
//! formatted text as it grows (so the chunker can cut at the last good boundary).
//!
//! Telegram MarkdownV2 rules follow the Bot API "MarkdownV2 style" section: outside
//! entities every one of `_*[]()~`>#+-=|{}.!` and `\` is escaped with `\`; inside `code`
//! and `pre` only `` ` `` and `\`; inside a link's `(…)` only `)` and `\`.
//! Slack `mrkdwn` escapes `&`, `<`, `>` as HTML entities (Slack "Formatting text" docs).

use crate::delivery::markdown::{Atom, AtomKind, BOLD, HEADING, ITALIC, LineHead, STRIKE, Unit};
use crate::platform::{LengthUnit, Markup};

const TELEGRAM_RESERVED: &str = "_*[]()~`>#+-=|{}.!\\";

/// Length of `s` in `unit`s.
pub(crate) fn measure(s: &str, unit: LengthUnit) -> usize {
    match unit {
        LengthUnit::Utf16 => s.encode_utf16().count(),
        LengthUnit::Chars => s.chars().count(),
    }
}

/// Escapes text outside entities for Telegram MarkdownV2.
pub(crate) fn escape_telegram(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if TELEGRAM_RESERVED.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn escape_telegram_code(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if c == '`' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn escape_telegram_url(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if c == ')' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn escape_slack(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn escape_discord(s: &str, line_start: bool) -> String {
    if s.starts_with("http://") || s.starts_with("https://") {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 4);
    for (i, c) in s.chars().enumerate() {
        let lead = line_start && i == 0 && matches!(c, '#' | '>' | '-' | '+');
        if lead || matches!(c, '\\' | '*' | '_' | '~' | '`' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The style bits a markup actually renders for `style`.
fn effective(markup: Markup, style: u8) -> u8 {
    let base = style & (BOLD | ITALIC | STRIKE);
    match markup {
        Markup::Plain => 0,
        Markup::DiscordMarkdown => base,
        Markup::TelegramMarkdownV2 | Markup::SlackMrkdwn => {
            if style & HEADING != 0 {
                base | BOLD
            } else {
                base
            }
        }
    }
}

fn delimiter(markup: Markup, bit: u8) -> &'static str {
    match (markup, bit) {
        (Markup::Plain, _) => "",
        (Markup::DiscordMarkdown, BOLD) => "**",
        (Markup::DiscordMarkdown, ITALIC) => "_",
        (Markup::DiscordMarkdown, _) => "~~",
        (_, BOLD) => "*",
        (_, ITALIC) => "_",
        _ => "~",
    }
}

/// Renders one atom (without styles) for `markup`.
pub(crate) fn atom_text(markup: Markup, atom: &AtomKind, line_start: bool) -> String {
    match (markup, atom) {
        (Markup::Plain, AtomKind::Word(w) | AtomKind::Code(w)) => w.clone(),
        (Markup::Plain, AtomKind::Link { text, url }) => {
            if text == url {
                url.clone()
            } else {
                format!("{text} ({url})")
            }
        }
        (Markup::TelegramMarkdownV2, AtomKind::Word(w)) => escape_telegram(w),
        (Markup::TelegramMarkdownV2, AtomKind::Code(c)) => {
            if c.is_empty() {
                String::new()
            } else {
                format!("`{}`", escape_telegram_code(c))
            }
        }
        (Markup::TelegramMarkdownV2, AtomKind::Link { text, url }) => {
            format!("[{}]({})", escape_telegram(text), escape_telegram_url(url))
        }
        (Markup::SlackMrkdwn, AtomKind::Word(w)) => escape_slack(w),
        (Markup::SlackMrkdwn, AtomKind::Code(c)) => format!("`{}`", escape_slack(c)),
        (Markup::SlackMrkdwn, AtomKind::Link { text, url }) => {
            let url = url.replace('|', "%7C").replace('>', "%3E");
            format!("<{url}|{}>", escape_slack(text))
        }
        (Markup::DiscordMarkdown, AtomKind::Word(w)) => escape_discord(w, line_start),
        (Markup::DiscordMarkdown, AtomKind::Code(c)) => {
            if c.contains('`') {
                format!("`` {c} ``")
            } else {
                format!("`{c}`")
            }
        }
        (Markup::DiscordMarkdown, AtomKind::Link { text, url }) => {
            format!("[{}]({url})", escape_discord(text, false))
        }
    }
}

fn line_prefix(markup: Markup, head: &LineHead) -> String {
    let pad = |n: usize| " ".repeat(n);
    match (markup, head) {
        (_, LineHead::Plain) => String::new(),
        (Markup::DiscordMarkdown, LineHead::Heading(level)) => {
            format!("{} ", "#".repeat(usize::from((*level).min(3))))
        }
        (_, LineHead::Heading(_)) => String::new(),
        (Markup::TelegramMarkdownV2 | Markup::SlackMrkdwn, LineHead::Bullet(n)) => {
            format!("{}• ", pad(*n))
        }
        (_, LineHead::Bullet(n)) => format!("{}- ", pad(*n)),
        (Markup::TelegramMarkdownV2, LineHead::Ordered(n, num)) => {
            format!("{}{num}\\. ", pad(*n))
        }
        (_, LineHead::Ordered(n, num)) => format!("{}{num}. ", pad(*n)),
        (Markup::TelegramMarkdownV2, LineHead::Quote) => ">".to_string(),
        (_, LineHead::Quote) => "> ".to_string(),
        (Markup::TelegramMarkdownV2 | Markup::SlackMrkdwn, LineHead::Rule) => {
            "──────────".to_string()
        }
        (_, LineHead::Rule) => "---".to_string(),
    }
}

fn fence_open(markup: Markup, info: &str) -> String {
    match markup {
        Markup::Plain => String::new(),
        Markup::SlackMrkdwn => "```".to_string(),
        _ => format!("```{info}"),
    }
}

fn code_line(markup: Markup, text: &str) -> String {
    match markup {
        Markup::TelegramMarkdownV2 => escape_telegram_code(text),
        Markup::SlackMrkdwn => escape_slack(text),
        Markup::Plain | Markup::DiscordMarkdown => text.to_string(),
    }
}

/// The ` (i/n)` chunk indicator; on its own line when the chunk ends with a code fence.
pub(crate) fn indicator(markup: Markup, i: usize, n: usize, own_line: bool) -> String {
    let sep = if own_line { "\n" } else { " " };
    match markup {
        Markup::TelegramMarkdownV2 => format!("{sep}\\({i}/{n}\\)"),
        _ => format!("{sep}({i}/{n})"),
    }
}

/// Where a chunk resumes: inside a fence (re-opened) and/or in the middle of a quote line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resume {
    /// Info string of the fence to re-open.
    pub(crate) fence: Option<String>,
    /// The line being continued is a block quote line.
    pub(crate) quote: bool,
}

/// A saved builder position (a possible chunk boundary).
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    bytes: usize,
    pub(crate) len: usize,
    stack: Vec<u8>,
    resume: Resume,
}

/// Formats units one by one, tracking the length in the platform's unit and what must be
/// appended to close the chunk (open styles, an open fence).
pub(crate) struct Builder {
    markup: Markup,
    unit: LengthUnit,
    out: String,
    len: usize,
    stack: Vec<u8>,
    fence: Option<String>,
    fence_first: bool,
    quote: bool,
    line_empty: bool,
}

impl Builder {
    /// A builder for a chunk that starts at `resume`.
    pub(crate) fn new(markup: Markup, unit: LengthUnit, resume: &Resume) -> Builder {
        let mut b = Builder {
            markup,
            unit,
            out: String::new(),
            len: 0,
            stack: Vec::new(),
            fence: None,
            fence_first: false,
            quote: false,
            line_empty: true,
        };
        if let Some(info) = &resume.fence {
            let open = fence_open(markup, info);
            b.push(&open);
            b.fence = Some(info.clone());
            b.fence_first = true;
        } else if resume.quote {
            let prefix = line_prefix(markup, &LineHead::Quote);
            b.push(&prefix);
            b.quote = true;
        }
        b
    }

    fn push(&mut self, s: &str) {
        self.len += measure(s, self.unit);
        self.out.push_str(s);
    }

    /// Current length in the platform's unit, without the closing text.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True when nothing but a re-opened fence or quote prefix was written.
    pub(crate) fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// What closing the chunk now would append.
    pub(crate) fn closing(&self) -> String {
        let mut s: String = self
            .stack
            .iter()
            .rev()
            .map(|b| delimiter(self.markup, *b))
            .collect();
        if self.fence.is_some() && self.markup != Markup::Plain {
            s.push_str("\n```");
        }
        s
    }

    /// Length of [`Builder::closing`].
    pub(crate) fn closing_len(&self) -> usize {
        measure(&self.closing(), self.unit)
    }

    /// Saves the position before the next unit.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            bytes: self.out.len(),
            len: self.len,
            stack: self.stack.clone(),
            resume: Resume {
                fence: self.fence.clone(),
                quote: self.quote,
            },
        }
    }

    /// Goes back to `mark`; returns where a chunk starting there resumes.
    pub(crate) fn rewind(&mut self, mark: &Mark) -> Resume {
        self.out.truncate(mark.bytes);
        self.len = mark.len;
        self.stack = mark.stack.clone();
        self.fence = mark.resume.fence.clone();
        mark.resume.clone()
    }

    /// Closes open styles and the fence; returns the text.
    pub(crate) fn finish(mut self) -> String {
        let closing = self.closing();
        self.push(&closing);
        self.out
    }

    fn close_styles(&mut self) {
        while let Some(b) = self.stack.pop() {
            let d = delimiter(self.markup, b);
            self.push(d);
        }
    }

    fn separator(&mut self, para: bool) {
        self.close_styles();
        if !self.out.is_empty() {
            self.push(if para { "\n\n" } else { "\n" });
        }
    }

    /// Formats one unit onto the chunk.
    pub(crate) fn apply(&mut self, unit: &Unit) {
        match unit {
            Unit::Line { head, para } => {
                self.separator(*para);
                let prefix = line_prefix(self.markup, head);
                self.push(&prefix);
                self.quote = *head == LineHead::Quote;
                self.line_empty = true;
            }
            Unit::Atom(atom, _) => self.atom(atom),
            Unit::Fence { info, para } => {
                self.separator(*para);
                let open = fence_open(self.markup, info);
                self.push(&open);
                self.fence = Some(info.clone());
                self.fence_first = true;
                self.quote = false;
            }
            Unit::Code { text, cont } => {
                let newline = if self.fence_first {
                    self.markup != Markup::Plain
                } else {
                    !cont
                };
                if newline {
                    self.push("\n");
                }
                self.fence_first = false;
                let line = code_line(self.markup, text);
                self.push(&line);
            }
            Unit::FenceEnd => {
                if self.markup != Markup::Plain {
                    self.push("\n```");
                }
                self.fence = None;
                self.fence_first = false;
            }
        }
    }

    fn atom(&mut self, atom: &Atom) {
        let want = effective(self.markup, atom.style);
        let keep = {
            let mut k = 0;
            while k < self.stack.len() && want & self.stack[k] != 0 {
                k += 1;
            }
            k
        };
        let mut closers = String::new();
        while self.stack.len() > keep {
            if let Some(b) = self.stack.pop() {
                closers.push_str(delimiter(self.markup, b));
            }
        }
        let mut openers = String::new();
        for bit in [BOLD, ITALIC, STRIKE] {
            if want & bit != 0 && !self.stack.contains(&bit) {
                self.stack.push(bit);
                openers.push_str(delimiter(self.markup, bit));
            }
        }
        self.push(&closers);
        if atom.space_before && !self.line_empty {
            self.push(" ");
        }
        self.push(&openers);
        let text = atom_text(self.markup, &atom.kind, self.line_empty);
        self.push(&text);
        self.line_empty = false;
    }
}

/// Renders units as one piece of text with no length limit (streaming previews, tests).
pub(crate) fn render_all(units: &[Unit], markup: Markup) -> String {
    let mut b = Builder::new(markup, LengthUnit::Chars, &Resume::default());
    for u in units {
        b.apply(u);
    }
    b.finish()
}
