//! Streaming Markdown: text arrives in arbitrary pieces (a token may end inside `**`, a
//! fence or a UTF-8 character's neighbours); finished blocks are drawn once and never
//! redrawn, the unfinished tail is held back. No flicker, no half-written escape sequence,
//! and the final screen does not depend on where the stream was split.
//!
//! Commit rule: the text up to the last newline is scanned for top-level blocks. Every block
//! but the last is finished (CommonMark never reopens a closed block). The last one is finished
//! too when it is a heading or a rule, or a paragraph, table or quote followed by a blank
//! line. A top-level fenced code block is drawn line by line while it streams ("code mode"),
//! with the same highlighter state a finished block would get.

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

use super::code::CodeBlock;
use super::markdown::{MdTheme, code_label_style, parser_options, render_doc};
use super::style::Line;

/// Markdown arriving piece by piece, drawn block by block.
pub struct MarkdownStream {
    buf: String,
    theme: MdTheme,
    width: usize,
    started: bool,
    fence: Option<OpenFence>,
}

struct OpenFence {
    ch: char,
    len: usize,
    indent: usize,
    block: CodeBlock,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Fenced,
    ClosedByItself,
    ClosedByBlankLine,
    Other,
}

impl MarkdownStream {
    /// A stream drawn with `theme` for a screen `width` columns wide.
    pub fn new(theme: MdTheme, width: usize) -> MarkdownStream {
        MarkdownStream {
            buf: String::new(),
            theme,
            width: width.max(8),
            started: false,
            fence: None,
        }
    }

    /// Adds a piece of text; returns the screen lines that are now final.
    pub fn push(&mut self, text: &str) -> Vec<Line> {
        self.buf.push_str(text);
        let mut out = Vec::new();
        loop {
            if self.fence.is_some() {
                let Some(nl) = self.buf.find('\n') else { break };
                let line: String = self.buf.drain(..=nl).collect();
                self.code_line(line.trim_end_matches(['\n', '\r']), &mut out);
                continue;
            }
            let Some(last_nl) = self.buf.rfind('\n') else {
                break;
            };
            let complete = &self.buf[..=last_nl];
            let blocks = top_level_blocks(complete);
            let Some(&(kind, start)) = blocks.last() else {
                break;
            };
            let start = line_start(complete, start);
            let commit_end = match kind {
                Kind::Fenced | Kind::Other => start,
                Kind::ClosedByItself => complete.len(),
                Kind::ClosedByBlankLine if ends_with_blank_line(complete) => complete.len(),
                Kind::ClosedByBlankLine => start,
            };
            if commit_end > 0 {
                let piece: String = self.buf.drain(..commit_end).collect();
                self.emit_doc(&piece, &mut out);
            }
            if kind != Kind::Fenced {
                break;
            }
            let Some(nl) = self.buf.find('\n') else { break };
            let opening: String = self.buf.drain(..=nl).collect();
            self.open_fence(opening.trim_end_matches(['\n', '\r']), &mut out);
        }
        out
    }

    /// Ends the stream; returns the remaining lines. The stream is empty afterwards.
    pub fn finish(&mut self) -> Vec<Line> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.buf);
        if self.fence.is_some() {
            for line in rest.split_inclusive('\n') {
                self.code_line(line.trim_end_matches(['\n', '\r']), &mut out);
            }
        } else {
            self.emit_doc(&rest, &mut out);
        }
        self.fence = None;
        self.started = false;
        out
    }

    /// Forgets the held-back tail without drawing it and starts over as a new stream (the
    /// answer it belonged to was abandoned: its model stream failed and is retried).
    pub fn discard(&mut self) {
        self.buf.clear();
        self.fence = None;
        self.started = false;
    }

    fn emit_doc(&mut self, src: &str, out: &mut Vec<Line>) {
        let lines = render_doc(src, &self.theme, self.width);
        if lines.is_empty() {
            return;
        }
        if self.started {
            out.push(Vec::new());
        }
        self.started = true;
        out.extend(lines);
    }

    fn open_fence(&mut self, line: &str, out: &mut Vec<Line>) {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        let ch = rest.chars().next().unwrap_or('`');
        let len = rest.chars().take_while(|c| *c == ch).count();
        let info = &rest[len * ch.len_utf8()..];
        let lang = info.split_whitespace().next().unwrap_or("");
        let (block, header) = CodeBlock::start(
            lang,
            &self.theme.code_theme,
            self.width,
            code_label_style(&self.theme),
        );
        if self.started {
            out.push(Vec::new());
        }
        self.started = true;
        out.extend(header);
        self.fence = Some(OpenFence {
            ch,
            len,
            indent,
            block,
        });
    }

    fn code_line(&mut self, line: &str, out: &mut Vec<Line>) {
        let Some(f) = &mut self.fence else { return };
        let spaces = line.len() - line.trim_start_matches(' ').len();
        let body = &line[spaces..];
        let run = body.chars().take_while(|c| *c == f.ch).count();
        if spaces <= 3 && run >= f.len && body[run * f.ch.len_utf8()..].trim().is_empty() {
            self.fence = None;
            return;
        }
        let strip = spaces.min(f.indent);
        out.extend(f.block.line(&line[strip..]));
    }
}

/// Top-level blocks of `src` as (kind, start byte offset).
fn top_level_blocks(src: &str) -> Vec<(Kind, usize)> {
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(src, parser_options()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let kind = match tag {
                        Tag::CodeBlock(CodeBlockKind::Fenced(_)) => Kind::Fenced,
                        Tag::Heading { .. } => Kind::ClosedByItself,
                        Tag::Paragraph | Tag::Table(_) | Tag::BlockQuote(_) => {
                            Kind::ClosedByBlankLine
                        }
                        _ => Kind::Other,
                    };
                    blocks.push((kind, range.start));
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Rule if depth == 0 => blocks.push((Kind::ClosedByItself, range.start)),
            Event::Html(_) if depth == 0 => blocks.push((Kind::Other, range.start)),
            _ => {}
        }
    }
    blocks
}

/// The start of the line holding byte `at`.
fn line_start(src: &str, at: usize) -> usize {
    src[..at.min(src.len())].rfind('\n').map_or(0, |i| i + 1)
}

/// True when the last line of `complete` (which ends with `\n`) is blank.
fn ends_with_blank_line(complete: &str) -> bool {
    let body = &complete[..complete.len() - 1];
    let last = body.rfind('\n').map_or(body, |i| &body[i + 1..]);
    !body.is_empty() && last.trim().is_empty()
}
