//! Streaming Markdown: text arrives in arbitrary pieces (a token may end inside `**`, a
//! fence or a UTF-8 character's neighbours) and is drawn as it arrives; what is on the screen
//! is never redrawn, so the final screen does not depend on where the stream was split, and no
//! escape sequence is ever cut in two.
//!
//! Finished blocks: the text up to the last newline is scanned for top-level blocks. Every
//! block but the last is finished (CommonMark never reopens a closed block). The last one is
//! finished too when it is a heading or a rule, or a paragraph, table or quote followed by a
//! blank line. A top-level fenced code block is drawn line by line while it streams ("code
//! mode"), with the same highlighter state a finished block would get.
//!
//! The open block (issue 20 item 2): a paragraph, list or quote still streaming is drawn word
//! by word ([`LiveBlock`]): its stable prefix is rendered and only what was not on the screen
//! yet is written. Greedy wrapping keeps every word where it was when more words follow, so
//! the prefix's lines are the finished block's lines. Held back, never for more than a line:
//! the word being typed, an opening delimiter that a later character could still close (`**`,
//! `` ` ``, `[`, `~~`, `<`), a line that may be a table's header row (it has a `|`) and a line
//! whose first word may still turn out to start a new block (`-`, `1.`, `#`, `>`, a fence).
//! A table is drawn row by row once its delimiter row has come (its column widths depend on
//! the header row only); the row being typed is held. An
//! opener held longer than a line is taken literally (escaped), so the screen and the text
//! agree from then on. Setext headings (`Title` over `---`) would reach back into a line
//! already drawn; their underline is read as its own block (a rule) instead.

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

use super::code::CodeBlock;
use super::markdown::{MdTheme, code_label_style, parser_options, render_doc};
use super::style::{Line, Style, encode_line, width};

/// Markdown arriving piece by piece, drawn as it arrives.
pub struct MarkdownStream {
    buf: String,
    theme: MdTheme,
    width: usize,
    started: bool,
    fence: Option<OpenFence>,
    live: Option<LiveBlock>,
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

/// Screen width of a stream, at least this many columns.
const MIN_WIDTH: usize = 8;

impl MarkdownStream {
    /// A stream drawn with `theme` for a screen `width` columns wide.
    pub fn new(theme: MdTheme, width: usize) -> MarkdownStream {
        MarkdownStream {
            buf: String::new(),
            theme,
            width: width.max(MIN_WIDTH),
            started: false,
            fence: None,
            live: None,
        }
    }

    /// Changes the screen width: blocks that start from now on are wrapped to `width`; the
    /// block being drawn keeps the width it started with (issue 20 item 3).
    pub fn set_width(&mut self, width: usize) {
        self.width = width.max(MIN_WIDTH);
    }

    /// Adds a piece of text; returns the terminal text (ANSI-styled) to write now. It may end
    /// in the middle of a screen line, which the next call or [`MarkdownStream::finish`]
    /// continues.
    pub fn push(&mut self, text: &str) -> String {
        self.buf.push_str(text);
        let mut out = String::new();
        loop {
            if self.fence.is_some() {
                let Some(nl) = self.buf.find('\n') else { break };
                let line: String = self.buf.drain(..=nl).collect();
                self.code_line(line.trim_end_matches(['\n', '\r']), &mut out);
                continue;
            }
            split_setext_underlines(&mut self.buf);
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
                self.commit(&piece, &mut out);
            }
            if kind != Kind::Fenced {
                break;
            }
            let Some(nl) = self.buf.find('\n') else { break };
            let opening: String = self.buf.drain(..=nl).collect();
            self.open_fence(opening.trim_end_matches(['\n', '\r']), &mut out);
        }
        if self.fence.is_none() {
            self.draw_live(&mut out);
        }
        out
    }

    /// Ends the stream; returns the rest of the text to write (ending the last line). The
    /// stream is empty afterwards.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        let rest = std::mem::take(&mut self.buf);
        if self.fence.is_some() {
            for line in rest.split_inclusive('\n') {
                self.code_line(line.trim_end_matches(['\n', '\r']), &mut out);
            }
        } else {
            self.commit(&rest, &mut out);
        }
        self.fence = None;
        self.started = false;
        out
    }

    /// Forgets the held-back tail without drawing it and starts over as a new stream (the
    /// answer it belonged to was abandoned: its model stream failed and is retried). Returns
    /// what ends the screen line a partly drawn block was on (`\n`, or nothing).
    pub fn discard(&mut self) -> String {
        self.buf.clear();
        self.fence = None;
        self.started = false;
        match self.live.take() {
            Some(_) => "\n".to_string(),
            None => String::new(),
        }
    }

    /// Draws `piece`, a run of finished blocks; the first one ends the block drawn live.
    fn commit(&mut self, piece: &str, out: &mut String) {
        if piece.trim().is_empty() {
            // Blank lines before the open block: it goes on.
            return;
        }
        let mut rest = piece;
        if let Some(mut live) = self.live.take() {
            let split = top_level_blocks(piece)
                .get(1)
                .map_or(piece.len(), |&(_, s)| line_start(piece, s));
            let lines = render_doc(&piece[..split], &self.theme, live.width);
            live.advance(&lines, out);
            out.push('\n');
            rest = &piece[split..];
        }
        self.emit_doc(rest, out);
    }

    fn emit_doc(&mut self, src: &str, out: &mut String) {
        let lines = render_doc(src, &self.theme, self.width);
        if lines.is_empty() {
            return;
        }
        if self.started {
            out.push('\n');
        }
        self.started = true;
        put_lines(out, &lines);
    }

    /// Draws what is stable of the open block (see the module docs).
    fn draw_live(&mut self, out: &mut String) {
        // Each round either draws and returns or escapes one opener (held too long).
        for _ in 0..32 {
            let scan = Scan::of(&self.buf);
            if !matches!(
                scan.first,
                Some(Top::Paragraph | Top::List | Top::Quote | Top::Table)
            ) {
                return;
            }
            let open_end = scan.second.is_none();
            let end = scan
                .second
                .map_or(self.buf.len(), |s| line_start(&self.buf, s));
            let width = self.live.as_ref().map_or(self.width, |l| l.width);
            let cut = if scan.first == Some(Top::Table) {
                // Whole rows only (a row's cells are final once its line is), and only once
                // the whole lines alone are a table (its delimiter row has ended).
                let rows = self.buf[..end].rfind('\n').map_or(0, |i| i + 1);
                let whole = Scan::of(&self.buf[..rows]).first == Some(Top::Table);
                Cut::At(if whole { rows } else { 0 })
            } else {
                stable_cut(&self.buf[..end], open_end, width, &scan)
            };
            match cut {
                Cut::At(0) => return,
                Cut::At(cut) => {
                    let lines = render_doc(&self.buf[..cut], &self.theme, width);
                    if lines.is_empty() {
                        return;
                    }
                    let live = match &mut self.live {
                        Some(live) => live,
                        None => {
                            if self.started {
                                out.push('\n');
                            }
                            self.started = true;
                            self.live.insert(LiveBlock {
                                width,
                                shown: Vec::new(),
                            })
                        }
                    };
                    live.advance(&lines, out);
                    return;
                }
                Cut::Escape(at) => escape_delimiter_run(&mut self.buf, at),
            }
        }
    }

    fn open_fence(&mut self, line: &str, out: &mut String) {
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
            out.push('\n');
        }
        self.started = true;
        put_lines(out, &header);
        self.fence = Some(OpenFence {
            ch,
            len,
            indent,
            block,
        });
    }

    fn code_line(&mut self, line: &str, out: &mut String) {
        let Some(f) = &mut self.fence else { return };
        let spaces = line.len() - line.trim_start_matches(' ').len();
        let body = &line[spaces..];
        let run = body.chars().take_while(|c| *c == f.ch).count();
        if spaces <= 3 && run >= f.len && body[run * f.ch.len_utf8()..].trim().is_empty() {
            self.fence = None;
            return;
        }
        let strip = spaces.min(f.indent);
        put_lines(out, &f.block.line(&line[strip..]));
    }
}

/// Appends `lines`, each ended with a newline.
fn put_lines(out: &mut String, lines: &[Line]) {
    for line in lines {
        out.push_str(&encode_line(line, true));
        out.push('\n');
    }
}

/// The open block as far as it is on the screen: every screen line begun, the last one being
/// the line the cursor is on (not ended yet).
struct LiveBlock {
    /// Columns the block is wrapped to (fixed when it started).
    width: usize,
    shown: Vec<Line>,
}

impl LiveBlock {
    /// Writes what `lines` (the block's rendering now) has beyond what is shown.
    fn advance(&mut self, lines: &[Line], out: &mut String) {
        if let Some(k) = self.shown.len().checked_sub(1) {
            if let Some(cur) = lines.get(k)
                && *cur != self.shown[k]
            {
                match strip_prefix(cur, &self.shown[k]) {
                    Some(rest) => out.push_str(&encode_line(&rest, true)),
                    // Not a continuation (cannot happen with the holding rules; kept safe):
                    // the line is drawn again below.
                    None => {
                        out.push('\n');
                        out.push_str(&encode_line(cur, true));
                    }
                }
                self.shown[k] = cur.clone();
            }
        } else if let Some(first) = lines.first() {
            out.push_str(&encode_line(first, true));
            self.shown.push(first.clone());
        }
        for line in lines.iter().skip(self.shown.len()) {
            out.push('\n');
            out.push_str(&encode_line(line, true));
            self.shown.push(line.clone());
        }
    }
}

/// The spans of `line` after `prefix`, when `line` starts with exactly `prefix` (same text in
/// the same styles).
fn strip_prefix(line: &Line, prefix: &Line) -> Option<Line> {
    let chars = |l: &Line| -> Vec<(char, Style)> {
        l.iter()
            .flat_map(|s| s.text.chars().map(move |c| (c, s.style)))
            .collect()
    };
    let whole = chars(line);
    let head = chars(prefix);
    if whole.len() < head.len() || whole[..head.len()] != head[..] {
        return None;
    }
    let mut rest: Line = Vec::new();
    for (c, style) in &whole[head.len()..] {
        match rest.last_mut() {
            Some(span) if span.style == *style => span.text.push(*c),
            _ => rest.push(super::style::Span {
                text: c.to_string(),
                style: *style,
            }),
        }
    }
    Some(rest)
}

/// Kinds of top-level block that can be drawn while they stream.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Top {
    Paragraph,
    List,
    Quote,
    /// Drawn row by row: its column widths come from the header row alone.
    Table,
    Other,
}

/// What one parse of the uncommitted text says about its open block.
struct Scan {
    /// The kind of the first top-level block.
    first: Option<Top>,
    /// Where the second top-level block starts (then the first one is finished).
    second: Option<usize>,
    /// Code blocks, HTML blocks and tables anywhere (nothing in them is drawn mid-line).
    opaque: Vec<Range<usize>>,
    /// Delimiters in the last run of inline text that later text could still turn into
    /// markup, as byte offsets.
    openers: Vec<usize>,
}

impl Scan {
    fn of(src: &str) -> Scan {
        Scan::with_lookahead(src, src)
    }

    /// Parses `src`, a prefix of `full`; delimiters are judged by their neighbours in `full`.
    fn with_lookahead(src: &str, full: &str) -> Scan {
        let mut scan = Scan {
            first: None,
            second: None,
            opaque: Vec::new(),
            openers: Vec::new(),
        };
        let mut depth = 0usize;
        let mut in_code = 0usize;
        fn top(scan: &mut Scan, kind: Top, at: usize) {
            if scan.first.is_none() {
                scan.first = Some(kind);
            } else if scan.second.is_none() {
                scan.second = Some(at);
            }
        }
        for (event, range) in Parser::new_ext(src, parser_options()).into_offset_iter() {
            match event {
                Event::Start(tag) => {
                    if depth == 0 {
                        let kind = match tag {
                            Tag::Paragraph => Top::Paragraph,
                            Tag::List(_) => Top::List,
                            Tag::BlockQuote(_) => Top::Quote,
                            Tag::Table(_) => Top::Table,
                            _ => Top::Other,
                        };
                        top(&mut scan, kind, range.start);
                    }
                    let block = !matches!(
                        tag,
                        Tag::Emphasis
                            | Tag::Strong
                            | Tag::Strikethrough
                            | Tag::Link { .. }
                            | Tag::Image { .. }
                            | Tag::Superscript
                            | Tag::Subscript
                    );
                    if block {
                        scan.openers.clear();
                    }
                    if matches!(tag, Tag::CodeBlock(_) | Tag::HtmlBlock | Tag::Table(_)) {
                        scan.opaque.push(range.clone());
                    }
                    if matches!(tag, Tag::CodeBlock(_)) {
                        in_code += 1;
                    }
                    depth += 1;
                }
                Event::End(end) => {
                    depth = depth.saturating_sub(1);
                    if matches!(end, pulldown_cmark::TagEnd::CodeBlock) {
                        in_code = in_code.saturating_sub(1);
                    }
                }
                Event::Rule | Event::Html(_) if depth == 0 => {
                    top(&mut scan, Top::Other, range.start);
                    scan.openers.clear();
                }
                Event::Text(_) if in_code == 0 => {
                    scan.openers.extend(openers_in(full, range));
                }
                _ => {}
            }
        }
        scan
    }

    fn in_opaque(&self, at: usize) -> bool {
        self.opaque
            .iter()
            .any(|r| r.start <= at && at < r.end.max(r.start + 1))
    }
}

/// Delimiters in `full[range]` (literal text of the parse) that could still open markup.
fn openers_in(full: &str, range: Range<usize>) -> Vec<usize> {
    let mut found = Vec::new();
    let Some(text) = full.get(range.clone()) else {
        return found;
    };
    let mut prev_was: Option<char> = full[..range.start].chars().next_back();
    for (i, c) in text.char_indices() {
        let at = range.start + i;
        let prev = prev_was;
        prev_was = Some(c);
        if prev == Some('\\') {
            continue;
        }
        let next = full[at + c.len_utf8()..].chars().next();
        let open = match c {
            '*' | '~' => next.is_none_or(|n| !n.is_whitespace()),
            '_' => {
                prev.is_none_or(|p| !p.is_alphanumeric()) && next.is_none_or(|n| !n.is_whitespace())
            }
            '`' => true,
            '[' => link_may_open(full, at),
            '<' => {
                next.is_none_or(|n| n.is_ascii_alphabetic())
                    && !full[at..].contains(['>', ' ', '\n'])
            }
            _ => false,
        };
        // A run counts once, at its first character.
        let continues_run = matches!(c, '*' | '~' | '_' | '`') && prev == Some(c);
        if open && !continues_run {
            found.push(at);
        }
    }
    found
}

/// Whether the literal `[` at `at` may still become a link: its `]` has not come yet, or
/// nothing after the `]` yet says it is not followed by `(` or `[`.
fn link_may_open(full: &str, at: usize) -> bool {
    match full[at..].find(']') {
        None => true,
        Some(j) => match full[at + j + 1..].chars().next() {
            None => true,
            Some(n) => n == '(' || n == '[',
        },
    }
}

enum Cut {
    /// Draw the block's text up to this byte offset.
    At(usize),
    /// The opener at this offset was held for more than a line: take it literally.
    Escape(usize),
}

/// How much of `block` (the open block's source, from the start of the uncommitted text) is
/// stable; `open_end` when it reaches the end of what has arrived (it may still grow).
fn stable_cut(block: &str, open_end: bool, width: usize, scan: &Scan) -> Cut {
    let mut cut = block.len();
    if open_end {
        let tail = block.rfind('\n').map_or(0, |i| i + 1);
        let partial = &block[tail..];
        if !partial.is_empty() {
            cut = if scan.in_opaque(tail) || undecided_line(partial, width) {
                tail
            } else {
                tail + partial_cut(partial)
            };
        }
        if cut == tail && tail > 0 {
            // The last whole line may be a table's header row until the next line shows it
            // is not (GFM: the delimiter row comes right after it).
            let prev = block[..tail - 1].rfind('\n').map_or(0, |i| i + 1);
            let line = &block[prev..tail];
            if line.contains('|') && width_of(line) <= width && !scan.in_opaque(prev) {
                cut = prev;
            }
        }
    }
    // Hold from the first open delimiter of the last inline run, at its word's start.
    for _ in 0..16 {
        if cut == 0 {
            break;
        }
        let scan = Scan::with_lookahead(&block[..cut], block);
        let Some(&at) = scan.openers.first() else {
            break;
        };
        let word = block[..at]
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        if width_of(&block[word..]) > width {
            return Cut::Escape(at);
        }
        if word >= cut {
            break;
        }
        cut = word;
    }
    Cut::At(cut)
}

/// Whether the unfinished last line `partial` may still start a block of its own, or be a
/// table row, so that none of it can be drawn yet: it has fewer than two whole words (its
/// first word may be a marker — `-`, `1.`, `#`, `>`, a fence — whose meaning depends on
/// what follows it), it is only marker characters (`- - -`, `|--`), or it has a `|` and fits
/// on a line.
fn undecided_line(partial: &str, width: usize) -> bool {
    let body = partial.trim_start();
    let only_markers = body
        .chars()
        .filter(|c| !c.is_whitespace())
        .all(|c| "-=*_:|+~`#>".contains(c));
    partial_cut(partial) == 0 || only_markers || (body.contains('|') && width_of(body) <= width)
}

/// Where the unfinished last line may be cut: after its last whole word (a word followed by
/// whitespace), provided at least two whole words come before the cut — a line cut after
/// its first word alone (`- ` of `- item`) could read as something else. 0 when it may not
/// be cut yet.
fn partial_cut(partial: &str) -> usize {
    let mut words = 0;
    let mut cut = 0;
    let mut in_word = false;
    for (i, c) in partial.char_indices() {
        if c.is_whitespace() {
            if in_word {
                words += 1;
                in_word = false;
            }
            if words >= 2 {
                cut = i + c.len_utf8();
            }
        } else {
            in_word = true;
        }
    }
    cut
}

fn width_of(s: &str) -> usize {
    s.split('\n').map(width).sum()
}

/// Makes the delimiter run at `at` literal text by escaping each of its characters.
fn escape_delimiter_run(buf: &mut String, at: usize) {
    let Some(c) = buf[at..].chars().next() else {
        return;
    };
    let run = if matches!(c, '*' | '~' | '_' | '`') {
        buf[at..].chars().take_while(|x| *x == c).count()
    } else {
        1
    };
    let escaped: String = std::iter::repeat_n(format!("\\{c}"), run).collect();
    buf.replace_range(at..at + run * c.len_utf8(), &escaped);
}

/// Reads the underline of a setext heading (`Title` over `---` or `===`) as a block of its
/// own by putting a blank line before it: a streamed line already on the screen as a
/// paragraph cannot become a heading afterwards. Only whole lines are looked at, so the
/// result does not depend on how the text was split.
fn split_setext_underlines(buf: &mut String) {
    let may_underline = |line: &str| {
        let t = line.trim();
        !t.is_empty() && (t.chars().all(|c| c == '-') || t.chars().all(|c| c == '='))
    };
    let complete = buf.rfind('\n').map_or("", |i| &buf[..i]);
    if !complete.lines().skip(1).any(may_underline) {
        return;
    }
    for _ in 0..16 {
        let Some(last_nl) = buf.rfind('\n') else {
            return;
        };
        let complete = &buf[..=last_nl];
        let mut underline = None;
        for (event, range) in Parser::new_ext(complete, parser_options()).into_offset_iter() {
            if let Event::Start(Tag::Heading { .. }) = event {
                let src = &complete[range.clone()];
                if src.trim_start().starts_with('#') {
                    continue;
                }
                let body = src.trim_end_matches(['\n', '\r']);
                if let Some(i) = body.rfind('\n') {
                    underline = Some(range.start + i + 1);
                    break;
                }
            }
        }
        let Some(at) = underline else { return };
        buf.insert(at, '\n');
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
